"""sasc beside Turkle, like for like (issue 36 item 3): judging at saturation, interleaved.

Both applications get the same server shape as bench/judging_load.py (gunicorn, gthread,
2 workers x 4 threads, keep-alive 75 s), PostgreSQL with persistent connections
(CONN_MAX_AGE 60 and health checks, sasc's settings), DEBUG off, the same task count (one
task per message of about 2 KB, the same texts, one annotator per task), 40 users with no
think time. Turkle's loop (bench/turkle_locustfile.py): accept the next task -> task page ->
submit with the CSRF token; sasc's (bench/locustfile.py): its one-request judging loop.

Each system's data is set up once per task count in a template database; every run gets a
fresh copy (CREATE DATABASE ... TEMPLATE). Runs are interleaved (Turkle, sasc, Turkle, sasc,
...) so that whatever else loads the machine falls on both. Per run, over the measured
window only (after the logins and a warm-up):
  - stored tasks/s: rows stored in the database (Turkle: completed assignments; sasc:
    judgments), counted by SQL at the window's two ends;
  - server CPU s per task: utime + stime from /proc of the gunicorn master and workers, and
    separately of the PostgreSQL backends whose process title names the run's database;
  - tuples read (tup_returned + tup_fetched) and commits per task, from pg_stat_database;
then the integrity check: no task assigned twice, no acknowledged submit missing.

    .venv/bin/python bench/turkle_compare.py --turkle-dir /tmp/turkle-src \\
        --turkle-python /tmp/turkle-venv/bin/python [--tasks 20000] [--pairs 3]
        [--seconds 90] [--warmup 15] [--small-tasks 2000] [--small-seconds 15]

--turkle-dir is a Turkle checkout (its turkle_site settings are used, overridden by a
settings module this script writes to a temporary folder); --turkle-python a Python with
Turkle's requirements, gunicorn and psycopg. Databases are named turkle_cmp_<token>_*; all
are dropped at the end unless --keep-templates.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
import judging_load  # noqa: E402

ROOT = judging_load.ROOT
ADMIN_URL = judging_load.ADMIN_URL
# Every name this run makes (databases, locust's CSV files) carries its own token: two runs at
# once (another session's copy, say) must not drop each other's templates or overwrite each
# other's statistics.
PREFIX = f"turkle_cmp_{uuid.uuid4().hex[:6]}"
LOGIN_SECONDS = 30  # 40 logins hash 40 passwords: done before the warm-up starts
TICKS = os.sysconf("SC_CLK_TCK")


# --- /proc (pure helpers, tested in tests/test_bench_turkle_compare.py) ----------------------


def stat_fields(stat: str) -> tuple[int, int]:
    """(parent pid, utime + stime in clock ticks) from the text of /proc/<pid>/stat.

    The command name (field 2) is in parentheses and may hold spaces and parentheses: the
    fields are counted from the last ')'."""
    rest = stat.rsplit(")", 1)[1].split()
    # rest[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
    return int(rest[1]), int(rest[11]) + int(rest[12])


def names_database(cmdline: bytes, database: str) -> bool:
    """Whether a process's cmdline is a PostgreSQL backend's title for ``database``
    ("postgres: 15/main: user database 127.0.0.1(5432) idle")."""
    title = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()
    return title.startswith("postgres:") and f" {database} " in f" {title} "


def descendants(parents: dict[int, int], root: int) -> set[int]:
    """``root`` and every process below it, from a pid -> parent pid map."""
    found, todo = {root}, [root]
    while todo:
        pid = todo.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                found.add(child)
                todo.append(child)
    return found


def cpu_delta(before: dict[int, int], after: dict[int, int]) -> int:
    """Ticks spent between two samples (pid -> ticks) by the processes alive at the second;
    a process born in between counts whole. (One that ended in between is missed: with
    persistent connections neither gunicorn's workers nor the backends end.)"""
    return sum(ticks - before.get(pid, 0) for pid, ticks in after.items())


def processes() -> dict[int, tuple[int, int, bytes]]:
    """pid -> (parent pid, cpu ticks, cmdline) of every process readable in /proc."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid, ticks = stat_fields((entry / "stat").read_text())
                cmdline = (entry / "cmdline").read_bytes()
            except (OSError, IndexError, ValueError):
                continue
            table[int(entry.name)] = (ppid, ticks, cmdline)
    return table


def cpu_sample(master: int, database: str) -> tuple[dict[int, int], dict[int, int]]:
    """Ticks of gunicorn (master + workers) and of the database's backends, by pid."""
    table = processes()
    web = descendants({pid: row[0] for pid, row in table.items()}, master)
    backends = {pid for pid, row in table.items() if names_database(row[2], database)}
    return (
        {pid: table[pid][1] for pid in web if pid in table},
        {pid: table[pid][1] for pid in backends},
    )


# --- set-up ---------------------------------------------------------------------------------


def db_url(database: str) -> str:
    return ADMIN_URL.rsplit("/", 1)[0] + f"/{database}"


def turkle_settings(folder: Path) -> None:
    """Write turkle_bench_settings.py: Turkle's own settings, then PostgreSQL with persistent
    connections (the same options as sasc's) and DEBUG off."""
    url = urllib.parse.urlparse(ADMIN_URL)
    database = {
        "ENGINE": "django.db.backends.postgresql",
        "USER": url.username or "postgres",
        "PASSWORD": url.password or "",
        "HOST": url.hostname or "127.0.0.1",
        "PORT": str(url.port or 5432),
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
    }
    (folder / "turkle_bench_settings.py").write_text(
        "import os\n"
        "from turkle_site.settings import *  # noqa\n"
        "DEBUG = False\n"
        f"DATABASES = {{'default': {{**{database!r}, 'NAME': os.environ['TURKLE_BENCH_DB']}}}}\n"
        "# read by the task page; Turkle's settings of some versions leave it out\n"
        "TURKLE_AUTO_ACCEPT_DEFAULT = globals().get('TURKLE_AUTO_ACCEPT_DEFAULT', False)\n"
    )


TURKLE_SETUP = """
import json, sys
import django
django.setup()
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from django.core.management import call_command
from turkle.models import Batch, Project, Task
call_command('migrate', verbosity=0)
bodies = json.load(open(sys.argv[1]))[:int(sys.argv[2])]
admin = User.objects.create_superuser('admin', 'admin@example.org', 'admin-pw')
password = make_password('bench-pw')
User.objects.bulk_create([User(username=f'bench{i:02d}', password=password)
                          for i in range(40)])
template = ('<p>${text}</p>'
            '<label><input type="radio" name="relevance" value="1"> relevant</label>'
            '<label><input type="radio" name="relevance" value="0"> not relevant</label>'
            '<input type="submit" value="Submit">')
project = Project(name='bench', html_template=template, login_required=True,
                  assignments_per_task=1, created_by=admin, updated_by=admin)
project.process_template()
project.save()
batch = Batch.objects.create(project=project, name='bench', filename='bench.csv',
                             assignments_per_task=1, login_required=True, created_by=admin)
Task.objects.bulk_create([Task(batch=batch, input_csv_fields={'text': b}) for b in bodies],
                         batch_size=2000)
print(json.dumps({'batch': batch.id, 'tasks': Task.objects.filter(batch=batch).count()}))
"""


class Turkle:
    name = "Turkle"
    locustfile = "bench/turkle_locustfile.py"
    stored_sql = "select count(*) from turkle_taskassignment where completed"

    def __init__(self, directory: Path, python: Path, iframe: bool):
        self.directory, self.python, self.iframe = directory, python, iframe
        self.settings = Path(tempfile.mkdtemp(prefix="turkle-bench-settings-"))
        turkle_settings(self.settings)
        self.batch: dict[int, int] = {}

    def env(self, database: str) -> dict:
        return {
            **os.environ,
            "PYTHONPATH": f"{self.settings}{os.pathsep}{self.directory}",
            "DJANGO_SETTINGS_MODULE": "turkle_bench_settings",
            "TURKLE_BENCH_DB": database,
            "TURKLE_IFRAME": "1" if self.iframe else "0",
        }

    def setup(self, database: str, n_tasks: int, bodies: Path) -> None:
        out = subprocess.run(
            [str(self.python), "-c", TURKLE_SETUP, str(bodies), str(n_tasks)],
            cwd=self.directory,
            env=self.env(database),
            text=True,
            capture_output=True,
        )
        if out.returncode:
            raise RuntimeError(f"Turkle's set-up failed:\n{out.stderr}")
        made = json.loads(out.stdout.strip().splitlines()[-1])
        assert made["tasks"] == n_tasks, made
        self.batch[n_tasks] = made["batch"]
        subprocess.run(["psql", db_url(database), "-qc", "ANALYZE"], check=True)

    def start(self, database: str, n_tasks: int, port: int) -> tuple[subprocess.Popen, dict]:
        env = {**self.env(database), "TURKLE_BATCH": str(self.batch[n_tasks])}
        gunicorn = str(self.python.parent / "gunicorn")
        web = judging_load.serve([gunicorn, "turkle_site.wsgi"], port, cwd=self.directory, env=env)
        return web, env

    @staticmethod
    def check(conn: psycopg.Connection, rows: dict) -> dict:
        one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        submits = rows.get("submit", {})
        return {
            "stored": one("select count(*) from turkle_taskassignment where completed"),
            "acknowledged": int(submits.get("Request Count", 0))
            - int(submits.get("Failure Count", 0)),
            "assigned twice": one(
                "select count(*) from (select task_id from turkle_taskassignment"
                " group by task_id having count(*) > 1) d"
            ),
            "completed, task left open": one(
                "select count(*) from turkle_taskassignment a join turkle_task t"
                " on t.id = a.task_id where a.completed and not t.completed"
            ),
            "accepts refused": int(rows.get("accept next task", {}).get("Failure Count", 0)),
            "open tasks left": one("select count(*) from turkle_task where not completed"),
        }


class Sasc:
    """sasc served from ``root`` (this checkout, or another one to compare builds)."""

    locustfile = "bench/locustfile.py"
    stored_sql = "select count(*) from annotate_judgment"

    def __init__(self, root: Path = ROOT, name: str = "sasc"):
        self.root, self.name = root, name

    @staticmethod
    def setup(database: str, n_tasks: int, bodies: Path) -> None:
        judging_load.setup(db_url(database), n_tasks)

    def start(self, database: str, n_tasks: int, port: int) -> tuple[subprocess.Popen, dict]:
        env = {
            **os.environ,
            "DATABASE_URL": db_url(database),
            "SASC_PACE": "0",
            "SASC_MODE": "judge",
            "SASC_PROJECT": "bench",
            "GUNICORN_ACCESS_LOG": "",
        }
        gunicorn = str(Path(sys.executable).parent / "gunicorn")
        web = judging_load.serve(
            [gunicorn, "config.wsgi"], port, cwd=self.root, env=env, config="config/gunicorn.py"
        )
        return web, env

    @staticmethod
    def check(conn: psycopg.Connection, rows: dict) -> dict:
        one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        submits = rows.get("submit + next task", {})
        return {
            "stored": one("select count(*) from annotate_judgment"),
            "acknowledged": int(submits.get("Request Count", 0))
            - int(submits.get("Failure Count", 0)),
            "assigned twice": one(
                "select count(*) from (select task_id, annotator_id from annotate_judgment"
                " group by 1, 2 having count(*) > 1) d"
            ),
            "tasks over overlap": one(
                "select count(*) from (select t.id from annotate_task t join annotate_judgment"
                " j on j.task_id = t.id group by t.id, t.required"
                " having count(*) > t.required) o"
            ),
            "open tasks left": one(
                "select count(*) from annotate_task t where t.judged < t.required"
            ),
        }


# --- one run ----------------------------------------------------------------------------------


def wait_listening(port: int, web: subprocess.Popen, seconds: float = 60) -> None:
    import socket

    deadline = time.time() + seconds
    while time.time() < deadline:
        if web.poll() is not None:
            raise RuntimeError(f"gunicorn ended with {web.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {port}")


def stop(process: subprocess.Popen) -> None:
    """Terminate; kill after 40 s (gunicorn finishes its requests in flight first, and
    Turkle's accepts took up to 50 s at 20,000 tasks)."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(40)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def pg_counters(conn: psycopg.Connection, database: str) -> tuple[int, int]:
    return conn.execute(
        "select tup_returned + tup_fetched, xact_commit from pg_stat_database where datname = %s",
        [database],
    ).fetchone()


def run(system, template: str, n_tasks: int, warmup: int, seconds: int) -> dict:
    database = f"{PREFIX}_run_{uuid.uuid4().hex[:8]}"
    judging_load.psql(f"CREATE DATABASE {database} TEMPLATE {template}")
    port = judging_load.free_port()
    web = load = None
    try:
        web, env = system.start(database, n_tasks, port)
        wait_listening(port, web)
        start_at = time.time() + LOGIN_SECONDS
        env["SASC_START_AT"] = str(start_at)
        prefix = Path(tempfile.gettempdir()) / database
        load = judging_load.locust_start(
            system.locustfile, port, LOGIN_SECONDS + warmup + seconds + 5, prefix, env
        )
        with psycopg.connect(db_url(database), autocommit=True) as conn:
            time.sleep(max(0.0, start_at + warmup - time.time()))
            web0, pg0 = cpu_sample(web.pid, database)
            stored0 = conn.execute(system.stored_sql).fetchone()[0]
            tuples0, commits0 = pg_counters(conn, database)
            t0 = time.time()
            time.sleep(max(0.0, t0 + seconds - time.time()))
            stored1 = conn.execute(system.stored_sql).fetchone()[0]
            t1 = time.time()
            web1, pg1 = cpu_sample(web.pid, database)
            load.wait(120)
            time.sleep(1.5)  # let the last statistics reach pg_stat_database
            tuples1, commits1 = pg_counters(conn, database)
            rows = judging_load.locust_rows(prefix)
            stop(web)
            web = None
            checked = system.check(conn, rows)
        stored = stored1 - stored0
        per = max(stored, 1)
        return {
            "system": system.name,
            "tasks": n_tasks,
            "stored": stored,
            "tasks/s": stored / (t1 - t0),
            "web cpu/task": cpu_delta(web0, web1) / TICKS / per,
            "db cpu/task": cpu_delta(pg0, pg1) / TICKS / per,
            "backends": len(pg1),
            # These two run to the end of the load, past the window: per stored row overall.
            "tuples/task": (tuples1 - tuples0) / max(checked["stored"] - stored0, 1),
            "commits/task": (commits1 - commits0) / max(checked["stored"] - stored0, 1),
            "locust": {
                name: {k: row[k] for k in ("Request Count", "Failure Count", "50%", "95%")}
                for name, row in rows.items()
            },
            "check": checked,
        }
    finally:
        for process in (load, web):
            if process is not None:
                stop(process)
        judging_load.psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def line(r: dict) -> str:
    check = r["check"]
    flags = ", ".join(f"{k} {v}" for k, v in check.items())
    return (
        f"{r['system']:<7} {r['tasks']:>6} tasks  {r['tasks/s']:6.1f} tasks/s  "
        f"cpu/task web {r['web cpu/task']:.4f} s + db {r['db cpu/task']:.4f} s "
        f"({r['backends']} backends)  tuples/task {r['tuples/task']:,.0f}  "
        f"commits/task {r['commits/task']:.1f}\n        {flags}"
    )


def ratios(turkle: dict, sasc: dict) -> str:
    """sasc / Turkle from the same pair: tasks/s, and CPU per task (web; web + database)."""
    web = sasc["web cpu/task"] / turkle["web cpu/task"]
    both = (sasc["web cpu/task"] + sasc["db cpu/task"]) / (
        turkle["web cpu/task"] + turkle["db cpu/task"]
    )
    return (
        f"sasc/Turkle tasks/s {sasc['tasks/s'] / max(turkle['tasks/s'], 1e-9):.1f}x;"
        f" CPU per task web {web:.2f}x, web + database {both:.2f}x"
    )


def ok(r: dict) -> bool:
    c = r["check"]
    lost = c["acknowledged"] > c["stored"]
    return (
        not lost
        and c["assigned twice"] == 0
        and not c.get("tasks over overlap")
        and not (c.get("completed, task left open"))
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--turkle-dir", type=Path, required=True)
    parser.add_argument("--turkle-python", type=Path, required=True)
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=90, help="measured window")
    parser.add_argument("--warmup", type=int, default=15, help="after the logins")
    parser.add_argument("--small-tasks", type=int, default=2000, help="0: no small pair")
    parser.add_argument(
        "--small-seconds", type=int, default=15, help="short: sasc must not run out of tasks"
    )
    parser.add_argument("--turkle-iframe", action="store_true", help="also load the iframe")
    parser.add_argument("--keep-templates", action="store_true")
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    args = parser.parse_args()
    turkle = Turkle(args.turkle_dir.resolve(), args.turkle_python.absolute(), args.turkle_iframe)
    systems = [turkle, Sasc()]
    sizes = [args.tasks] + ([args.small_tasks] if args.small_tasks else [])
    templates: dict[tuple[str, int], str] = {}
    results = []
    bodies = Path(tempfile.gettempdir()) / f"{PREFIX}-bodies.json"
    try:
        # sasc first: its set-up writes the messages; Turkle's tasks get the same texts in the
        # same order (sasc repeats the bodies of the test sample, cut to 2,000 characters).
        for n in sizes:
            for system in (systems[1], systems[0]):
                template = f"{PREFIX}_{system.name.lower()}_{n}"
                judging_load.psql(f"DROP DATABASE IF EXISTS {template} WITH (FORCE)")
                judging_load.psql(f"CREATE DATABASE {template}")
                templates[system.name, n] = template
                began = time.time()
                if system is turkle and not bodies.exists():
                    with psycopg.connect(db_url(templates["sasc", n])) as conn:
                        texts = conn.execute(
                            "select body from annotate_document where docid like 'synthetic/%'"
                            " order by id"
                        ).fetchall()
                    bodies.write_text(json.dumps([t for (t,) in texts]))
                system.setup(template, n, bodies)
                print(f"set-up {system.name}, {n} tasks: {time.time() - began:.0f} s", flush=True)
        print(
            f"40 users, no think time, gunicorn {judging_load.WORKERS}x{judging_load.THREADS}"
            f" gthread, PostgreSQL (CONN_MAX_AGE 60); {args.warmup} s warm-up,"
            f" {args.seconds} s measured",
            flush=True,
        )
        for pair in range(args.pairs):
            pair_runs = []
            for system in systems:
                r = run(
                    system,
                    templates[system.name, args.tasks],
                    args.tasks,
                    args.warmup,
                    args.seconds,
                )
                r["pair"] = pair + 1
                print(line(r), flush=True)
                pair_runs.append(r)
                results.append(r)
            print(f"pair {pair + 1}: {ratios(*pair_runs)}", flush=True)
        if args.small_tasks:
            for system in systems:
                r = run(
                    system,
                    templates[system.name, args.small_tasks],
                    args.small_tasks,
                    5,
                    args.small_seconds,
                )
                r["pair"] = "small"
                print(line(r), flush=True)
                results.append(r)
        bad = [r for r in results if not ok(r)]
        print("integrity:", "held in every run" if not bad else f"FAILED in {len(bad)} runs")
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    finally:
        bodies.unlink(missing_ok=True)
        if not args.keep_templates:
            for template in templates.values():
                judging_load.psql(f"DROP DATABASE IF EXISTS {template} WITH (FORCE)")


if __name__ == "__main__":
    main()
