"""What one claim costs an annotator who is ahead of the others in a double-judged round
(a known limit, measured: docs/performance.md, "Judging cost as a project grows").

The claim (`annotate.judgments._FREE_TASK_SQL`, run here as the product runs it) takes the
first task in queue order that still needs a judgment and that the annotator has not
taken. With one judgment per task, a task leaves the free index once taken, so the claim
reads a few rows whatever the project's size (bench/judging_scale.py). With two or more,
a task the annotator judged stays free until the others judge it too, and the claim walks
past every such task: its cost grows with how far the annotator is ahead.

This builds the two tables the claim reads (the columns it uses, the product's partial
index and unique constraint) in a scratch database, with ``--tasks`` tasks at overlap 2,
and for each lead K (the first K tasks judged by annotator 1 alone) times the claim of
annotator 1 (ahead by K) and of annotator 2 (behind), and reads the buffers from EXPLAIN
(ANALYZE, BUFFERS).

    .venv/bin/python bench/claim_walk.py [--tasks 220000] [--leads 0 2000 20000 200000]
"""

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SCRATCH = "sasc_claim_walk"


def main():
    import psycopg

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from annotate.judgments import _FREE_TASK_SQL

    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=220_000)
    parser.add_argument("--leads", type=int, nargs="+", default=[0, 2_000, 20_000, 200_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    if max(args.leads) > args.tasks:
        parser.error(f"a lead of {max(args.leads):,} needs at least that many --tasks")
    with psycopg.connect(args.server, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {SCRATCH}")
        admin.execute(f"CREATE DATABASE {SCRATCH}")
    url = args.server.rsplit("/", 1)[0] + f"/{SCRATCH}"
    sql = _FREE_TASK_SQL.format(lock="FOR UPDATE OF t SKIP LOCKED")
    try:
        # Client-side binding, as Django's psycopg backend runs it (no server-side
        # prepared statements, so each claim gets a plan for its own values).
        with psycopg.connect(url, autocommit=True, cursor_factory=psycopg.ClientCursor) as db:
            db.execute(
                "CREATE TABLE annotate_task (id bigserial PRIMARY KEY, project_id int,"
                " round_id int, topic_id int, persona_id int, position int, claimed int,"
                " required int)"
            )
            db.execute(
                "CREATE TABLE annotate_assignment (id bigserial PRIMARY KEY, task_id bigint,"
                " annotator_id int, status text)"
            )
            db.execute(
                "INSERT INTO annotate_task (project_id, round_id, topic_id, persona_id,"
                " position, claimed, required) SELECT 1, 1, 1 + g / 20000, 1, g, 0, 2"
                " FROM generate_series(0, %s) g",
                (args.tasks - 1,),
            )
            db.execute(
                "CREATE INDEX task_free_in_order ON annotate_task (project_id, round_id,"
                " topic_id, persona_id, position, id) WHERE claimed < required"
            )
            db.execute(
                "CREATE UNIQUE INDEX assignment_unique ON annotate_assignment"
                " (task_id, annotator_id)"
            )
            print(f"{args.tasks:,} tasks at overlap 2 ({SCRATCH}); claim: median of {args.repeat}")
            heads = ("lead", "ahead: ms", "buffers", "behind: ms", "buffers")
            print("  ".join(f"{h:>{w}}" for h, w in zip(heads, (8, 10, 8, 10, 8), strict=True)))
            done = 0
            for lead in sorted(args.leads):
                with db.transaction():
                    db.execute(
                        "UPDATE annotate_task SET claimed = 1 WHERE id > %s AND id <= %s",
                        (done, lead),
                    )
                    db.execute(
                        "INSERT INTO annotate_assignment (task_id, annotator_id, status)"
                        " SELECT id, 1, 'done' FROM annotate_task WHERE id > %s AND id <= %s",
                        (done, lead),
                    )
                done = lead
                db.execute("VACUUM ANALYZE annotate_task")
                db.execute("VACUUM ANALYZE annotate_assignment")
                row = [f"{lead:>8,}"]
                for user in (1, 2):
                    params = {"project": 1, "round": 1, "user": user, "expired": "expired"}
                    times = []
                    for _ in range(args.repeat):
                        with db.transaction():
                            started = time.perf_counter()
                            db.execute(sql, params).fetchone()
                            times.append(1000 * (time.perf_counter() - started))
                    with db.transaction():
                        plan = db.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params).fetchall()
                    first = next(line for (line,) in plan if "Buffers:" in line)
                    buffers = sum(int(n) for n in re.findall(r"(?:hit|read)=(\d+)", first))
                    row += [f"{statistics.median(times):>10.2f}", f"{buffers:>8,}"]
                print("  ".join(row))
    finally:
        with psycopg.connect(args.server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {SCRATCH}")


if __name__ == "__main__":
    main()
