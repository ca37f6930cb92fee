"""What one claim costs an annotator who is ahead of the others in a double-judged round,
with the claim frontier and without it (docs/performance.md, "Double-judged rounds").

The claim takes the first task in queue order that still needs a judgment and that the
annotator has not taken. With one judgment per task, a task leaves the free index once
taken, so the claim reads a few rows whatever the project's size (bench/judging_scale.py).
With two or more, a task the annotator judged stays free until the others judge it too.
The claim used to walk past every such task (its cost grew with how far the annotator was
ahead); it now starts at the annotator's frontier (``annotate.models.ClaimFrontier``).

This builds the three tables the claim reads (the columns it uses, the product's partial
index, unique constraints) in a scratch database, with ``--tasks`` tasks at overlap 2, and
for each lead K (the first K tasks judged by annotator 1 alone) times, in the same run:
the walk from the round's start (the claim as it was, and what the first claim after the
frontier is lowered to the start costs: `_FREE_TASK_SQL` from the lowest key) for
annotator 1 (ahead by K) and annotator 2 (behind); and the product's claim of the round
(`annotate.judgments._free_task_in_round`: the round's lock, the frontier, the pick) for
each annotator once its frontier is set. Each timed claim is rolled back. Index reads (index
scans plus the rows they fetched) come from pg_stat_xact_user_tables.

    .venv/bin/python bench/claim_walk.py [--tasks 220000] [--leads 0 2000 20000 200000]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SCRATCH = "sasc_claim_walk"


def main():
    import psycopg

    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=220_000)
    parser.add_argument("--leads", type=int, nargs="+", default=[0, 2_000, 20_000, 200_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    if max(args.leads) > args.tasks:
        parser.error(f"a lead of {max(args.leads):,} needs at least that many --tasks")
    url = args.server.rsplit("/", 1)[0] + f"/{SCRATCH}"
    # Django's connection is pointed at the scratch database so the claim takes the
    # round's lock as it does on PostgreSQL (the claim runs on the bench's own cursor).
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from annotate.judgments import _FREE_TASK_SQL, _START, _free_task_in_round

    with psycopg.connect(args.server, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {SCRATCH}")
        admin.execute(f"CREATE DATABASE {SCRATCH}")
    lock = "FOR UPDATE OF t SKIP LOCKED"
    walk = _FREE_TASK_SQL.format(lock=lock)
    try:
        # Client-side binding, as Django's psycopg backend runs it (no server-side
        # prepared statements, so each claim gets a plan for its own values).
        with psycopg.connect(url, autocommit=True, cursor_factory=psycopg.ClientCursor) as db:
            build(db, args.tasks)
            print(f"{args.tasks:,} tasks at overlap 2 ({SCRATCH}); claim: median of {args.repeat}")
            heads = (
                "lead",
                "walk ahead: ms",
                "idx reads",
                "walk behind: ms",
                "idx reads",
                "frontier ahead: ms",
                "idx reads",
                "frontier behind: ms",
                "idx reads",
            )
            widths = (8, 14, 9, 15, 9, 18, 9, 19, 9)
            print("  ".join(f"{h:>{w}}" for h, w in zip(heads, widths, strict=True)))
            done = 0
            for lead in sorted(args.leads):
                with db.transaction():
                    db.execute(
                        "UPDATE annotate_task SET claimed = 1 WHERE id > %s AND id <= %s",
                        (done, lead),
                    )
                    db.execute(
                        "INSERT INTO annotate_assignment (task_id, annotator_id, status)"
                        " SELECT id, 1, 'submitted' FROM annotate_task"
                        " WHERE id > %s AND id <= %s",
                        (done, lead),
                    )
                done = lead
                db.execute("VACUUM ANALYZE annotate_task")
                db.execute("VACUUM ANALYZE annotate_assignment")
                db.execute("DELETE FROM annotate_claimfrontier")
                row = [f"{lead:>8,}"]
                for user in (1, 2):
                    params = claim_params(user, _START)
                    row += timed(db, args.repeat, lambda c, p=params: c.execute(walk, p))
                # Each one's first claim sets its frontier (committed), then its claims.
                for user in (1, 2):
                    with db.transaction(), db.cursor() as cursor:
                        _free_task_in_round(cursor, claim_params(user, _START), lock)
                    row += timed(
                        db,
                        args.repeat,
                        lambda c, u=user: _free_task_in_round(c, claim_params(u, _START), lock),
                    )
                print("  ".join(f"{v:>{w}}" for v, w in zip(row, widths, strict=True)))
    finally:
        with psycopg.connect(args.server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {SCRATCH}")


def build(db, tasks: int) -> None:
    db.execute(
        "CREATE TABLE annotate_task (id bigserial PRIMARY KEY, project_id int,"
        " round_id int, topic_id int, persona_id int, position int, claimed int,"
        " required int)"
    )
    db.execute(
        "CREATE TABLE annotate_assignment (id bigserial PRIMARY KEY, task_id bigint,"
        " annotator_id int, status text, leased_at timestamptz, expires_at timestamptz,"
        " skip_reason text)"
    )
    db.execute(
        "CREATE TABLE annotate_claimfrontier (id bigserial PRIMARY KEY, round_id int,"
        " annotator_id int, at_topic bigint, at_persona bigint, at_position bigint,"
        " at_task bigint)"
    )
    db.execute(
        "INSERT INTO annotate_task (project_id, round_id, topic_id, persona_id,"
        " position, claimed, required) SELECT 1, 1, 1 + g / 20000, 1, g, 0, 2"
        " FROM generate_series(0, %s) g",
        (tasks - 1,),
    )
    db.execute(
        "CREATE INDEX task_free_in_order ON annotate_task (project_id, round_id,"
        " topic_id, persona_id, position, id) WHERE claimed < required"
    )
    db.execute(
        "CREATE UNIQUE INDEX assignment_unique ON annotate_assignment (task_id, annotator_id)"
    )
    # The index Django gives the foreign key (without it the planner reads the whole
    # table for the claim of an annotator with no assignments yet).
    db.execute("CREATE INDEX assignment_annotator ON annotate_assignment (annotator_id)")
    db.execute(
        "CREATE UNIQUE INDEX claim_frontier_unique ON annotate_claimfrontier"
        " (round_id, annotator_id)"
    )


def claim_params(user: int, key) -> dict:
    return {
        "project": 1,
        "round": 1,
        "user": user,
        "expired": "expired",
        **dict(zip(("topic", "persona", "position", "task"), key, strict=True)),
    }


def timed(db, repeat: int, claim) -> list[str]:
    """Median ms of ``claim(cursor)`` over ``repeat`` rolled-back transactions, and the
    index scans and rows fetched by them in the last one (pg_stat_xact_user_tables)."""
    times, reads = [], 0
    for _ in range(repeat):
        with db.transaction(force_rollback=True), db.cursor() as cursor:
            before = index_reads(cursor)
            started = time.perf_counter()
            claim(cursor)
            times.append(1000 * (time.perf_counter() - started))
            reads = index_reads(cursor) - before
    return [f"{statistics.median(times):.2f}", f"{reads:,}"]


def index_reads(cursor) -> int:
    cursor.execute(
        "SELECT COALESCE(SUM(idx_scan + idx_tup_fetch), 0) FROM pg_stat_xact_user_tables"
        " WHERE relname IN ('annotate_task', 'annotate_assignment')"
    )
    return cursor.fetchone()[0]


if __name__ == "__main__":
    main()
