"""SQLite under everyday use: annotators judging while the worker imports and indexes.

The quickstart's stack, for real: a throwaway SASC_VAR_DIR with the SQLite default, gunicorn
(1 worker x 8 threads, as ``make demo`` runs it) and one Celery worker on the filesystem
broker. The collection is the first half of CACM, indexed; one project has plenty of plain
tasks, another runs active learning (RDS down BM25, then CAL in batches of 5, budget 60), so
the worker retrains as judgments arrive. Then, for ``--seconds``:

- ``--annotators`` annotators (half on each project) log in, judge with about a second of
  think time and log in again every 20 s (a login writes the session and last_login);
- the lead uploads the second half of CACM through the import page at 3 s and asks for an
  index build at 4 s, so the worker imports, rebuilds Lucene and TF-IDF and retrains while
  the judgments keep coming; the lead's job pages are polled meanwhile.

Afterwards it waits (up to 120 s) for every job to end, and prints requests by name and
status, p50/p95 latency, 5xx and "database is locked" counts in the responses and in both
logs, worker tracebacks, the jobs' final states, the plans' states and any ``*.tmp-*``
folder left in the index directory. Exit status 1 if anything failed.

    .venv/bin/python bench/sqlite_contention.py [--seconds 60] [--annotators 8] [--keep]
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import requests

from config.celery import worker_command

ROOT = Path(__file__).resolve().parents[1]
CACM = Path(os.environ.get("SASC_CACM", "/work/shared/data/cacm"))
BIN = Path(sys.executable).parent
TASK = re.compile(r'data-task-id="(\d+)" data-key="([0-9a-f]+)"')
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
PASSWORD = "bench-pw-1234"

SETUP = """
import django, os, sys
os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')
django.setup()
from django.core.management import call_command
call_command('migrate', verbosity=0)
call_command('collectstatic', interactive=False, verbosity=0)
from annotate import projects, roles, services
from annotate.models import Collection, Document, Persona, Topic
from ranking.learning_plans import learning_plan_create
from ranking.services import index_recorded
half, queries, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
services.roles_ensure()
c = Collection.objects.create(name='CACM', slug='cacm', kind=Collection.Kind.SMART)
services.import_run(collection=c, fmt='smart', path=half)
services.import_run(collection=c, fmt='topics-smart', path=queries)
index_recorded(collection=c)
c.refresh_from_db()
services.user_create(username='lead', password='{pw}', role_names=[roles.LEAD])
users = [services.user_create(username=f'annotator{{i}}', password='{pw}',
                              role_names=[roles.ANNOTATOR]) for i in range(n)]
persona = Persona.objects.create(name='Bench persona')
topics = list(c.topics.order_by('number')[:10])
plain = projects.project_create(name='bench', collection=c, personas=[persona],
                                topics=topics, annotators=users[: n // 2], overlap=1)
docs = list(c.documents.order_by('id')[:300])
for t in topics:
    projects.project_tasks_add(project=plain, round_=plain.rounds.get(), topic=t,
                               persona=persona, documents=docs)
topic = c.topics.get(number='10')
al = projects.project_create(name='bench-al', collection=c, personas=[persona],
                             topics=[topic], annotators=users[n // 2:])
learning_plan_create(project=al, topic=topic, budget=60, seed_mode='rds',
                     candidates='collection', batch_size=5)
print(c.pk)
"""

REPORT = """
import django, os, json
os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')
django.setup()
from annotate.models import Job, Judgment
from ranking.models import LearningPlan
print(json.dumps({
    'jobs': [[j.pk, j.kind, j.status, j.message[:160]] for j in Job.objects.order_by('pk')],
    'plans': [[p.pk, p.status, p.status_message[:160], p.models.count(),
               sorted({getattr(m, 'index_version', None) or 0 for m in p.models.all()})]
              for p in LearningPlan.objects.all()],
    'judgments': Judgment.objects.count(),
}))
"""


def split_cacm(target: Path) -> tuple[Path, Path]:
    """The CACM documents in two files: records 1-1600 and the rest."""
    text = (CACM / "cacm.all").read_text(encoding="latin-1")
    records = re.split(r"(?m)^(?=\.I )", text)
    records = [r for r in records if r.strip()]
    first, second = target / "cacm-1.all", target / "cacm-2.all"
    first.write_text("".join(records[:1600]), encoding="latin-1")
    second.write_text("".join(records[1600:]), encoding="latin-1")
    return first, second


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Recorder:
    """Every request's name, status, latency, and whether the answer said 'locked'."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rows: list[tuple[str, int, float]] = []
        self.locked = 0
        self.errors: list[str] = []

    def call(self, session: requests.Session, name: str, method: str, url: str, **kw):
        started = time.perf_counter()
        try:
            r = session.request(method, url, timeout=120, **kw)
        except requests.RequestException as exc:
            with self.lock:
                self.rows.append((name, 0, time.perf_counter() - started))
                self.errors.append(f"{name}: {type(exc).__name__}: {exc}")
            return None
        elapsed = time.perf_counter() - started
        with self.lock:
            self.rows.append((name, r.status_code, elapsed))
            if "locked" in r.text.lower() and r.status_code >= 400:
                self.locked += 1
            if r.status_code >= 500:
                self.errors.append(f"{name}: {r.status_code} {r.text[:120]!r}")
        return r


def login(rec: Recorder, base: str, username: str) -> requests.Session:
    s = requests.Session()
    page = rec.call(s, "login page", "GET", f"{base}/accounts/login/")
    token = CSRF.search(page.text).group(1) if page is not None and page.ok else ""
    rec.call(
        s,
        "login",
        "POST",
        f"{base}/accounts/login/",
        data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base}/accounts/login/"},
    )
    return s


def annotator(rec: Recorder, base: str, username: str, project: str, until: float) -> None:
    rnd = random.Random(username)
    s, logged_in_at = login(rec, base, username), time.monotonic()
    queue: list[tuple[str, str]] = []
    while time.monotonic() < until:
        if time.monotonic() - logged_in_at > 20:
            s, logged_in_at, queue = login(rec, base, username), time.monotonic(), []
        if not queue:  # what the judging page does: claim a task to show
            r = rec.call(
                s,
                "claim next",
                "POST",
                f"{base}/annotate/{project}/judge/next/",
                headers={
                    "X-Requested-With": "fetch",
                    "X-CSRFToken": s.cookies.get("csrftoken", ""),
                    "Referer": f"{base}/annotate/{project}/judge/",
                },
            )
            queue = TASK.findall(r.text) if r is not None and r.status_code == 200 else []
            if not queue:
                time.sleep(1.0)
                continue
        task_id, key = queue.pop(0)
        time.sleep(rnd.uniform(0.5, 1.5))  # reading the document
        r = rec.call(
            s,
            "submit + next",
            "POST",
            f"{base}/annotate/{project}/judge/{task_id}/",
            data={
                "relevance": rnd.choice("0012"),
                "persona_sensitive": "no",
                "personal_sensitive": "no",
                "comment": "",
                "active_seconds": "5.0",
                "started_at": "2026-11-21T10:00:00+00:00",
                "held": [t for t, _ in queue],
            },
            headers={
                "Idempotency-Key": key,
                "X-Requested-With": "fetch",
                "X-CSRFToken": s.cookies.get("csrftoken", ""),
                "Referer": f"{base}/annotate/{project}/judge/",
            },
        )
        if r is None or r.status_code != 200:
            queue = []
        else:
            queue.extend(TASK.findall(r.text))


def lead(rec: Recorder, base: str, collection_pk: str, second: Path, until: float) -> None:
    s = login(rec, base, "lead")
    time.sleep(3)
    page = rec.call(s, "import page", "GET", f"{base}/import/")
    token = CSRF.search(page.text).group(1) if page is not None and page.ok else ""
    with open(second, "rb") as fh:
        r = rec.call(
            s,
            "import upload",
            "POST",
            f"{base}/import/",
            data={
                "collection": collection_pk,
                "format": "smart",
                "new_kind": "smart",
                "csrfmiddlewaretoken": token,
            },
            files={"file": ("cacm-2.all", fh)},
            headers={"Referer": f"{base}/import/"},
        )
    if r is None or "/jobs/" not in r.url:
        rec.errors.append(f"import upload refused: {r.text[:300] if r is not None else ''}")
    time.sleep(1)
    page = rec.call(s, "collection page", "GET", f"{base}/collections/cacm/")
    token = CSRF.search(page.text).group(1) if page is not None and page.ok else token
    rec.call(
        s,
        "index build",
        "POST",
        f"{base}/collections/cacm/index/",
        data={"csrfmiddlewaretoken": token},
        headers={"Referer": f"{base}/collections/cacm/"},
    )
    while time.monotonic() < until:
        rec.call(s, "job page", "GET", f"{base}/jobs/1/")
        time.sleep(2)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))] if ordered else 0.0


def report_state(env: dict) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", REPORT], cwd=ROOT, env=env, text=True, capture_output=True
    )
    if out.returncode:
        return {"jobs": [], "plans": [], "judgments": -1, "error": out.stderr[-2000:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--annotators", type=int, default=8)
    parser.add_argument("--keep", action="store_true", help="keep the var folder and logs")
    args = parser.parse_args()

    var = Path(tempfile.mkdtemp(prefix="sasc-sqlite-bench-"))
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "CACHE_URL")
    }
    env.update(SASC_VAR_DIR=str(var), DJANGO_SETTINGS_MODULE="config.settings")
    env.update(SASC_WARM_LUCENE="1", SECRET_KEY="bench-only-" + "x" * 40, DEBUG="0")
    first, second = split_cacm(var)
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", SETUP.format(pw=PASSWORD), first, CACM / "query.text"]
        + [str(args.annotators)],
        cwd=ROOT,
        env=env,
        text=True,
        capture_output=True,
    )
    if out.returncode:
        print(out.stderr[-4000:])
        return 2
    collection_pk = out.stdout.strip().splitlines()[-1]
    print(
        "set-up (1600 CACM documents indexed, users, projects): "
        f"{time.perf_counter() - started:.0f} s"
    )

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    web_log, worker_log = var / "web.log", var / "worker.log"
    procs = []
    with open(web_log, "w") as wl, open(worker_log, "w") as kl:
        procs.append(
            subprocess.Popen(
                [str(BIN / "gunicorn"), "config.wsgi", "-c", "config/gunicorn.py"]
                + ["--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", "8"],
                cwd=ROOT,
                env=env,
                stdout=wl,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        procs.append(
            subprocess.Popen(
                worker_command(BIN),
                cwd=ROOT,
                env=env,
                stdout=kl,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    try:
        for _ in range(120):
            try:
                requests.get(f"{base}/health/", timeout=2)
                break
            except requests.RequestException:
                time.sleep(0.5)
        rec = Recorder()
        until = time.monotonic() + args.seconds
        threads = [
            threading.Thread(
                target=annotator,
                args=(
                    rec,
                    base,
                    f"annotator{i}",
                    "bench" if i < args.annotators // 2 else "bench-al",
                )
                + (until,),
            )
            for i in range(args.annotators)
        ]
        threads.append(
            threading.Thread(target=lead, args=(rec, base, collection_pk, second, until))
        )
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # Let the worker finish what it was given; a job that never ends is a finding.
        deadline = time.monotonic() + 120
        state = report_state(env)
        while time.monotonic() < deadline and any(
            j[2] in ("queued", "running") for j in state["jobs"]
        ):
            time.sleep(3)
            state = report_state(env)
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)

    by_name: dict[str, list[float]] = defaultdict(list)
    statuses: Counter = Counter()
    for name, status, elapsed in rec.rows:
        by_name[name].append(elapsed * 1000)
        statuses[(name, status)] += 1
    print(f"\n{args.annotators} annotators, {args.seconds} s, SQLite, gunicorn 1x8, one worker")
    print(f"{'request':<16} {'status':>6} {'count':>6}")
    for (name, status), n in sorted(statuses.items()):
        print(f"{name:<16} {status:>6} {n:>6}")
    print(f"\n{'request':<16} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for name, values in sorted(by_name.items()):
        print(
            f"{name:<16} {percentile(values, 50):8.0f} {percentile(values, 95):8.0f} "
            f"{max(values):8.0f}"
        )
    all_ms = [e * 1000 for _, _, e in rec.rows]
    print(f"{'all':<16} {percentile(all_ms, 50):8.0f} {percentile(all_ms, 95):8.0f}")
    web_text, worker_text = web_log.read_text(), worker_log.read_text()
    fivexx = sum(n for (_, status), n in statuses.items() if status >= 500 or status == 0)
    locked_logs = web_text.count("database is locked") + worker_text.count("database is locked")
    tracebacks = worker_text.count("Traceback (most recent call last)")
    index_errors = worker_text.count("IndexError")
    leftovers = sorted(str(p) for p in (var / "indexes").rglob("*.tmp-*"))
    print(f"\n5xx or no answer: {fivexx}; answers saying locked: {rec.locked}")
    web_locked = web_text.count("database is locked")
    print(
        f"'database is locked' in the logs: {locked_logs} (web {web_locked}, "
        f"worker {locked_logs - web_locked})"
    )
    print(f"worker tracebacks: {tracebacks} (IndexError {index_errors})")
    print(f"judgments stored: {state['judgments']}")
    unfinished = [j for j in state["jobs"] if j[2] in ("queued", "running")]
    print("jobs:")
    for pk, kind, status, message in state["jobs"]:
        print(f"  #{pk} {kind:<8} {status:<10} {message}")
    print("learning plans:")
    for pk, status, message, versions, indexes in state["plans"]:
        # Index versions the models were trained on (0: not recorded, before issue 21).
        print(f"  #{pk} {status:<9} {versions} model versions (index {indexes}); {message}")
    print(f"temporary index folders left: {leftovers or 'none'}")
    for line in rec.errors[:10]:
        print("  error:", line)
    failed = fivexx or rec.locked or locked_logs or unfinished or leftovers or index_errors
    if args.keep:
        print(f"kept: {var}")
    else:
        shutil.rmtree(var, ignore_errors=True)
    print("FAIL" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
