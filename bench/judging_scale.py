"""Judging cost as a project grows (issue 36 item 1): sasc alone at 2,000, 20,000 and
200,000 open tasks, interleaved, on PostgreSQL through gunicorn.

The workload and the figures are bench/turkle_compare.py's (40 annotators with no think
time on gunicorn 2 x 4 gthread, persistent database connections; per run over the measured
window: stored judgments/s counted by SQL, server CPU per judgment from /proc for gunicorn
and for the database's backends, tuples read and commits per judgment from
pg_stat_database, then the integrity check). Each size is set up once in a template
database and every run judges a fresh copy, so each size starts with all its tasks open;
runs go 2,000, 20,000, 200,000, 2,000, ... so whatever else loads the machine falls on
every size. The window is short because 40 annotators use up 2,000 tasks in about 30 s.

    .venv/bin/python bench/judging_scale.py [--sizes 2000 20000 200000] [--rounds 3]
        [--seconds 15] [--warmup 5] [--keep-templates] [--baseline DIR]

--baseline DIR: another checkout of sasc (say `git worktree add --detach /tmp/old <commit>`,
with the same .venv) served in turn with this one, run for run, on copies of the same
templates: the build before a change, measured in the same run.

Figures per size are medians over the rounds. Target: judgments/s at 200,000 within 10%
of 2,000; tuples per judgment flat.
"""

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import judging_load  # noqa: E402
import turkle_compare  # noqa: E402

PREFIX = "sasc_scale"


def databases(prefix: str) -> set[str]:
    import psycopg

    with psycopg.connect(judging_load.ADMIN_URL, autocommit=True) as c:
        rows = c.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [prefix + "%"])
        return {name for (name,) in rows}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000, 200000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=15, help="measured window")
    parser.add_argument("--warmup", type=int, default=5, help="after the logins")
    parser.add_argument(
        "--keep-templates", action="store_true", help="keep (and reuse) the set-up databases"
    )
    parser.add_argument("--baseline", type=Path, help="another sasc checkout, run in turn")
    args = parser.parse_args()
    systems = [turkle_compare.Sasc()]
    if args.baseline:
        systems.append(turkle_compare.Sasc(args.baseline.resolve(), "base"))
    sasc = systems[0]
    templates = {n: f"{PREFIX}_{n}" for n in args.sizes}
    existing = databases(PREFIX) if args.keep_templates else set()
    results: dict[tuple[str, int], list[dict]] = {
        (system.name, n): [] for system in systems for n in args.sizes
    }
    try:
        for n, template in templates.items():
            if template in existing:
                print(f"set-up {n} tasks: kept from an earlier run ({template})", flush=True)
                continue
            judging_load.psql(f"DROP DATABASE IF EXISTS {template} WITH (FORCE)")
            judging_load.psql(f"CREATE DATABASE {template}")
            began = time.time()
            sasc.setup(template, n, None)
            # As autovacuum would have by then: a bulk-loaded table has no statistics yet, and
            # its rows no hint bits (every copy's first readers would write them).
            subprocess.run(
                ["psql", turkle_compare.db_url(template), "-qc", "VACUUM (ANALYZE)"], check=True
            )
            print(f"set-up {n} tasks: {time.time() - began:.0f} s", flush=True)
        print(
            f"40 users, no think time, gunicorn {judging_load.WORKERS}x{judging_load.THREADS}"
            f" gthread, PostgreSQL; {args.warmup} s warm-up, {args.seconds} s measured",
            flush=True,
        )
        for round_ in range(args.rounds):
            for n in args.sizes:
                for system in systems:
                    r = turkle_compare.run(system, templates[n], n, args.warmup, args.seconds)
                    results[system.name, n].append(r)
                    print(f"round {round_ + 1}: " + turkle_compare.line(r), flush=True)
        bad = [r for rs in results.values() for r in rs if not turkle_compare.ok(r)]
        print("integrity:", "held in every run" if not bad else f"FAILED in {len(bad)} runs")
        print(
            f"{'build':<6} {'tasks':>8} {'judgments/s':>12} {'vs first':>9} {'tuples/j':>9} "
            f"{'commits/j':>10} {'web cpu/j':>10} {'db cpu/j':>9}"
        )
        for system in systems:
            first = results[system.name, args.sizes[0]]
            base = statistics.median(r["tasks/s"] for r in first)
            for n in args.sizes:
                rs = results[system.name, n]
                median = lambda key, rs=rs: statistics.median(r[key] for r in rs)  # noqa: E731
                print(
                    f"{system.name:<6} {n:>8,} {median('tasks/s'):12.1f} "
                    f"{median('tasks/s') / base:9.2f} "
                    f"{median('tuples/task'):9,.0f} {median('commits/task'):10.1f} "
                    f"{median('web cpu/task') * 1000:8.1f}ms "
                    f"{median('db cpu/task') * 1000:7.1f}ms"
                )
    finally:
        if not args.keep_templates:
            for template in templates.values():
                judging_load.psql(f"DROP DATABASE IF EXISTS {template} WITH (FORCE)")


if __name__ == "__main__":
    main()
