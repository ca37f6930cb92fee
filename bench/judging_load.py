"""Load test of judging: 40 annotators on gunicorn (2 workers x 4 threads) + PostgreSQL.

Phases, each with 40 logged-in users and its own fresh data:
  1. baseline: GET /health/ (Django, session, one SELECT 1) at the paced rate: the floor of
     this stack's latency on this machine;
  2. saturation: every annotator submits and gets the next task with no think time;
  3. realistic pace: one judgment every 5 s per annotator (8 judgments/s in all), each
     annotator's first one at a random moment of the first 5 s.
Each phase prints the latency locust saw and the time gunicorn spent (its access log).
After each judging phase the database is checked with SQL: one row per acknowledged
submit, no duplicate (task, annotator), no task over its overlap.

    .venv/bin/python bench/judging_load.py [--seconds 150] [--tasks 20000]
        [--phases baseline saturation paced] [--workers 2] [--threads 4] [--keep-db]
Needs PostgreSQL (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres
as the admin connection; a throwaway database is created and dropped).
"""

import argparse
import csv
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKERS, THREADS, KEEP_DB = 2, 4, False  # set from the command line
ADMIN_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")


def psql(sql: str) -> None:
    subprocess.run(["psql", ADMIN_URL, "-qc", sql], check=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup(db_url: str, n_tasks: int) -> None:
    """Create 40 annotators and a project of n_tasks single-annotator tasks (~2 KB each)."""
    env = {**os.environ, "DATABASE_URL": db_url}
    code = f"""
import django, os
os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')
django.setup()
from django.core.management import call_command
call_command('migrate', verbosity=0)
call_command('collectstatic', interactive=False, verbosity=0)  # pages name hashed files
from django.contrib.auth.hashers import make_password
from annotate import projects, roles, services
from annotate.models import Collection, Document, Persona, Topic, Task
from tests.conftest import SAMPLE
c = Collection.objects.create(name='bench', slug='bench')
services.import_run(collection=c, fmt='emails', path=SAMPLE)
bodies = [d.body[:2000] for d in c.documents.all() if len(d.body) > 500]
docs = [Document(collection=c, docid=f'synthetic/{{i}}', subject=f'message {{i}}',
                 from_header='a@example.org', body=bodies[i % len(bodies)],
                 content_hash=f'h{{i}}') for i in range({n_tasks})]
Document.objects.bulk_create(docs)
docs = list(c.documents.filter(docid__startswith='synthetic/').order_by('id'))
users = [services.user_create(username=f'bench{{i:02d}}', password='bench-pw',
                              role_names=[roles.ANNOTATOR]) for i in range(40)]
persona = Persona.objects.create(name='Bench persona')
topics = [Topic.objects.create(collection=c, number=str(n), title=f'topic {{n}}')
          for n in range(1, 11)]
p = projects.project_create(name='bench', collection=c, personas=[persona], topics=topics,
                            annotators=users, overlap=1)
per = len(docs) // len(topics)
for i, t in enumerate(topics):
    projects.project_tasks_add(project=p, round_=p.rounds.get(), topic=t, persona=persona,
                               documents=docs[i * per:(i + 1) * per])
print(Task.objects.count(), 'tasks')
"""
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)
    # Fresh planner statistics, as autovacuum would leave them a minute after a bulk load:
    # with none, PostgreSQL took the message's "judged in another round" lookup through
    # every task of the project (115,000 rows per judgment at 20,000 tasks instead of 24,000).
    subprocess.run(["psql", db_url, "-qc", "ANALYZE"], check=True)


def check(db_url: str) -> dict:
    code = """
import django, os, json
os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')
django.setup()
from django.db import connection
with connection.cursor() as c:
    c.execute('select count(*) from annotate_judgment'); judgments = c.fetchone()[0]
    c.execute('select count(*) from (select task_id, annotator_id from annotate_judgment '
              'group by 1, 2 having count(*) > 1) d'); dup = c.fetchone()[0]
    c.execute('select count(*) from (select t.id from annotate_task t join annotate_judgment j '
              'on j.task_id = t.id group by t.id, t.required having count(*) > t.required) o')
    over = c.fetchone()[0]
print(json.dumps({'judgments': judgments, 'duplicates': dup, 'over_overlap': over}))
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        check=True,
        text=True,
        capture_output=True,
        env={**os.environ, "DATABASE_URL": db_url},
    )
    import json

    return json.loads(out.stdout.strip().splitlines()[-1])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))]


def server_times(access_log: Path, mode: str) -> list[float]:
    """Milliseconds gunicorn spent on each measured request, from its access log."""
    measured = re.compile(r"/health/$" if mode == "health" else r"/judge/\d+/$")
    times = []
    if access_log.exists():
        for line in access_log.read_text().splitlines():
            *_, path, status, micros = line.split()
            if measured.search(path) and status == "200":
                times.append(int(micros) / 1000)
    return times


def serve(
    app: list[str],
    port: int,
    *,
    cwd: Path,
    env: dict,
    access_log: Path | None = None,
    config: str | None = None,
    workers: int | None = None,
    threads: int | None = None,
) -> subprocess.Popen:
    """Start gunicorn (``app`` = its executable and WSGI module) in sasc's deployment shape:
    gthread, WORKERS x THREADS, idle keep-alive 75 s (config/gunicorn.py's, repeated on the
    command line so that another application served this way, Turkle, gets the same)."""
    argv = [
        *app,
        "--worker-class",
        "gthread",
        "--workers",
        str(workers or WORKERS),
        "--threads",
        str(threads or THREADS),
        "--keep-alive",
        "75",
        "--bind",
        f"127.0.0.1:{port}",
        "--log-level",
        "warning",
    ]
    if config:
        argv[len(app) : len(app)] = ["-c", config]
    if access_log is not None:
        # Server-side time of each request (microseconds), to tell the server's share of
        # the latency from the load generator's.
        argv += ["--access-logfile", str(access_log)]
        argv += ["--access-logformat", "%(t)s %(U)s %(s)s %(D)s"]
    return subprocess.Popen(argv, cwd=cwd, env=env)


def locust_start(
    locustfile: str, port: int, run_seconds: int, prefix: Path, env: dict
) -> subprocess.Popen:
    """Run 40 locust users headless against 127.0.0.1:port; summary CSVs at ``prefix``."""
    return subprocess.Popen(
        [
            str(Path(sys.executable).parent / "locust"),
            "-f",
            locustfile,
            "--headless",
            "-u",
            "40",
            "-r",
            "40",
            "--run-time",
            f"{run_seconds}s",
            "--host",
            f"http://127.0.0.1:{port}",
            "--csv",
            str(prefix),
            "--only-summary",
            "--reset-stats",
            "--loglevel",
            "ERROR",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def locust_rows(prefix: Path) -> dict[str, dict]:
    """Locust's summary rows by request name."""
    with open(f"{prefix}_stats.csv") as fh:
        return {r["Name"]: r for r in csv.DictReader(fh)}


def run_phase(label: str, mode: str, pace: float, seconds: int, n_tasks: int) -> None:
    db = f"sasc_bench_{uuid.uuid4().hex[:8]}"
    psql(f"CREATE DATABASE {db}")
    db_url = ADMIN_URL.rsplit("/", 1)[0] + f"/{db}"
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "SASC_PACE": str(pace),
        "SASC_MODE": mode,
        "SASC_PROJECT": "bench",
        "GUNICORN_ACCESS_LOG": "",
    }
    access_log = Path(f"/tmp/sasc-bench-{mode}-{pace:g}-access.log")
    access_log.unlink(missing_ok=True)
    web = None
    try:
        setup(db_url, n_tasks)
        web = serve(
            [str(Path(sys.executable).parent / "gunicorn"), "config.wsgi"],
            port,
            cwd=ROOT,
            env=env,
            access_log=access_log,
            config="config/gunicorn.py",
        )
        time.sleep(3)
        env["SASC_START_AT"] = str(time.time() + 30)  # logins done before measuring
        prefix = Path(f"/tmp/sasc-bench-{label.split()[0]}")
        # The first 30 s: logins, not measured.
        locust_start("bench/locustfile.py", port, seconds + 30, prefix, env).wait()
        rows = locust_rows(prefix)
        name = "baseline GET /health/" if mode == "health" else "submit + next task"
        r = rows[name]
        n, fails = int(r["Request Count"]), int(r["Failure Count"])
        print(
            f"{label:<34} {n:>6} req  {float(r['Requests/s']):6.1f}/s  "
            f"p50 {float(r['50%']):5.0f} ms  p95 {float(r['95%']):5.0f} ms  "
            f"p99 {float(r['99%']):5.0f} ms  errors {fails}"
        )
        served = server_times(access_log, mode)
        if served:
            print(
                f"{'':<34} server side: p50 {percentile(served, 50):5.0f} ms  "
                f"p95 {percentile(served, 95):5.0f} ms  p99 {percentile(served, 99):5.0f} ms"
            )
        if mode == "judge":
            db_check = check(db_url)
            # Requests cut off by the end of the run may have committed without being counted.
            print(
                f"{'':<34} SQL: {db_check['judgments']} judgments stored for {n - fails} "
                f"acknowledged submits; duplicates {db_check['duplicates']}; "
                f"tasks over overlap {db_check['over_overlap']}"
            )
    finally:
        if web is not None:
            web.terminate()
            web.wait(20)
        if KEEP_DB:
            print(f"{'':<34} database kept: {db_url}")
        else:
            psql(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=150)
    parser.add_argument("--tasks", type=int, default=20000, help="enough not to run out")
    parser.add_argument("--phases", nargs="+", default=["baseline", "saturation", "paced"])
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=4, help="threads per worker")
    parser.add_argument("--keep-db", action="store_true", help="keep each phase's database")
    args = parser.parse_args()
    global WORKERS, THREADS, KEEP_DB
    WORKERS, THREADS, KEEP_DB = args.workers, args.threads, args.keep_db
    print(f"40 annotators, gunicorn {WORKERS} workers x {THREADS} threads, PostgreSQL, locust")
    if "baseline" in args.phases:
        run_phase("baseline GET /health/, paced", "health", 5, args.seconds, 100)
    if "saturation" in args.phases:
        run_phase("saturation (no think time)", "judge", 0, args.seconds, args.tasks)
    if "paced" in args.phases:
        run_phase("paced (1 judgment / 5 s / user)", "judge", 5, args.seconds, args.tasks)


if __name__ == "__main__":
    main()
