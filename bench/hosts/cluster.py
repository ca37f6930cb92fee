"""Hosts on one machine: network namespaces joined by two bridges, and the processes in them.

    front 10.231.1.0/24   load balancer .10, application hosts .11 (A) and .12 (B)
    back  10.231.2.0/24   database host .2 (PostgreSQL, Redis), application hosts .11, .12

The driver (this process, in the machine's own namespace) is the operator and the clients:
it holds .1 on both bridges. An application host reaches the database host only at
10.231.2.2 and is reached only at its front address; nothing listens on 127.0.0.1 of the
machine. Every namespace, link, process and folder made here is recorded in ``Cluster`` and
removed by ``Cluster.stop`` (also on SIGINT/SIGTERM, see ``bench/hosts/run.py``); a driver
killed with SIGKILL takes its processes with it (``setpriv --pdeathsig KILL``) and leaves
namespaces and folders that the next run sweeps (``sweep_leftovers``).
"""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PG_BIN = Path("/usr/lib/postgresql/15/bin")
PREFIX = "sasch"  # namespaces, links and folders of this harness start with it
FRONT, BACK = "10.231.1", "10.231.2"
PG_TIMEOUTS = "connect_timeout=3&tcp_user_timeout=5000"
SECRET_KEY = "hosts-harness-" + "k" * 40  # the same on every host: sessions are signed


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=check, capture_output=True, text=True)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _owner(name: str) -> int:
    """The driver's process id in a name this harness made (``sasch<pid>...``)."""
    digits = re.match(r"\d+", name[len(PREFIX) :])
    return int(digits.group()) if digits else 0


def live_runs() -> set[int]:
    """The process ids of drivers running now (their namespaces exist and they are alive):
    the address ranges are fixed, so only one run at a time."""
    names = [line.split()[0] for line in sh("ip", "netns", "list").stdout.splitlines() if line]
    return {_owner(n) for n in names if n.startswith(PREFIX) and _alive(_owner(n))} - {os.getpid()}


def sweep_leftovers() -> list[str]:
    """Remove the namespaces, links and temporary folders of earlier runs whose driver is
    gone (killed with SIGKILL, where no cleanup can run); return what was removed."""
    removed = []
    for line in sh("ip", "netns", "list").stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        if name.startswith(PREFIX) and not _alive(_owner(name)):
            sh("ip", "netns", "del", name, check=False)
            removed.append(f"netns {name}")
    for line in sh("ip", "-o", "link", "show").stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name.startswith(PREFIX) and not _alive(_owner(name)):
            sh("ip", "link", "del", name, check=False)
            removed.append(f"link {name}")
    for path in Path(tempfile.gettempdir()).glob(f"{PREFIX}-*"):
        pid = path.name.split("-")[1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(f"folder {path}")
    return removed


@dataclass
class Proc:
    name: str
    host: "Host"
    argv: list[str]
    env: dict
    popen: subprocess.Popen | None = None

    @property
    def log(self) -> Path:
        return self.host.cluster.tmp / "logs" / f"{self.host.name}-{self.name}.log"

    def start(self, *, user: str | None = None) -> "Proc":
        drop = ["--reuid", user, "--regid", user, "--init-groups"] if user else []
        argv = ["ip", "netns", "exec", self.host.ns, "setpriv", *drop, "--pdeathsig", "KILL"]
        with open(self.log, "a") as log:
            self.popen = subprocess.Popen(
                [*argv, "--", *self.argv],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: its children go with it
            )
        return self

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal_group(self, sig: int) -> None:
        if self.popen is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, sig)

    def kill(self) -> None:
        """SIGKILL the process and its children at once, as a host that loses power."""
        self.signal_group(signal.SIGKILL)
        if self.popen is not None:
            self.popen.wait()

    def stop(self, timeout: float = 20) -> None:
        if not self.running():
            self.signal_group(signal.SIGKILL)  # children left by a dead leader
            return
        self.signal_group(signal.SIGTERM)
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        self.signal_group(signal.SIGKILL)

    def tail(self, n: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""


@dataclass
class Host:
    cluster: "Cluster"
    name: str  # db, lb, a, b
    front: str | None
    back: str | None
    procs: dict[str, Proc] = field(default_factory=dict)

    @property
    def ns(self) -> str:
        return f"{PREFIX}{self.cluster.run_id}-{self.name}"

    def link(self, net: str) -> str:
        """The machine-side end of this host's veth on ``net`` (front or back)."""
        return f"{PREFIX}{self.cluster.run_id}{self.name}{net[0]}"[:15]

    def ip(self, *args: str, check: bool = True):
        return sh("ip", "netns", "exec", self.ns, "ip", *args, check=check)

    def run(self, name: str, argv: list[str], env: dict, *, user: str | None = None) -> Proc:
        proc = Proc(name, self, argv, env).start(user=user)
        self.procs[name] = proc
        return proc


class Cluster:
    """The namespaces, the bridges, and what runs on each host; ``stop`` undoes all of it."""

    def __init__(self, *, workers_per_host: int = 1, gunicorn_workers: int = 2):
        self.run_id = str(os.getpid())
        self.tmp = Path(tempfile.mkdtemp(prefix=f"{PREFIX}-{self.run_id}-"))
        self.tmp.chmod(0o755)  # the postgres user walks into its data folder
        (self.tmp / "logs").mkdir()
        # The index and upload folders: one path, the same on every host, as an NFS export
        # or a shared volume mounted at /srv/sasc on each would be (docs/deploy.md).
        self.shared = self.tmp / "shared"
        (self.shared / "indexes").mkdir(parents=True)
        (self.shared / "uploads").mkdir(parents=True)
        self.bridges = [f"{PREFIX}{self.run_id}F"[:15], f"{PREFIX}{self.run_id}B"[:15]]
        self.db = Host(self, "db", None, f"{BACK}.2")
        self.lb = Host(self, "lb", f"{FRONT}.10", None)
        self.a = Host(self, "a", f"{FRONT}.11", f"{BACK}.11")
        self.b = Host(self, "b", f"{FRONT}.12", f"{BACK}.12")
        self.hosts = [self.db, self.lb, self.a, self.b]
        self.apps = [self.a, self.b]
        self.workers_per_host = workers_per_host
        self.gunicorn_workers = gunicorn_workers
        self.broken: str = ""  # a deliberately broken build (bench/hosts/broken.py)
        self.made_netns: list[str] = []
        self.made_links: list[str] = []

    # --- network --------------------------------------------------------------------------
    def network_up(self) -> None:
        for bridge, prefix in zip(self.bridges, (FRONT, BACK), strict=True):
            sh("ip", "link", "add", bridge, "type", "bridge")
            self.made_links.append(bridge)
            sh("ip", "addr", "add", f"{prefix}.1/24", "dev", bridge)
            sh("ip", "link", "set", bridge, "up")
        for host in self.hosts:
            sh("ip", "netns", "add", host.ns)
            self.made_netns.append(host.ns)
            host.ip("link", "set", "lo", "up")
            for net, addr, bridge in (
                ("front", host.front, self.bridges[0]),
                ("back", host.back, self.bridges[1]),
            ):
                if addr is None:
                    continue
                outer, inner = host.link(net), f"{net}0"
                sh("ip", "link", "add", outer, "type", "veth", "peer", "name", f"{outer}x")
                self.made_links.append(outer)
                sh("ip", "link", "set", f"{outer}x", "netns", host.ns)
                host.ip("link", "set", f"{outer}x", "name", inner)
                host.ip("addr", "add", f"{addr}/24", "dev", inner)
                host.ip("link", "set", inner, "up")
                sh("ip", "link", "set", outer, "master", bridge)
                sh("ip", "link", "set", outer, "up")

    def cut(self, host: Host, net: str = "back") -> None:
        """Take the machine-side end of the host's veth down: its cable is pulled (packets
        are dropped silently, as on a dead switch port; the host's own end stays up)."""
        sh("ip", "link", "set", host.link(net), "down")

    def mend(self, host: Host, net: str = "back") -> None:
        sh("ip", "link", "set", host.link(net), "up")

    # --- services ---------------------------------------------------------------------------
    def app_env(self, host: Host) -> dict:
        var = self.tmp / f"var-{host.name}"
        var.mkdir(exist_ok=True)
        db = self.db.back
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SASC_", "DATABASE_", "REDIS_", "CELERY_", "CACHE_", "GUNICORN_"))
        }
        return {
            **env,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "SECRET_KEY": SECRET_KEY,
            # A host cut from the database must answer an error in seconds, not wait for TCP
            # to give up (minutes): connect_timeout for new connections, tcp_user_timeout
            # (ms) for a query sent on an open one that nobody acknowledges
            "DATABASE_URL": f"postgres://postgres@{db}:5432/sasc?{PG_TIMEOUTS}",
            "REDIS_URL": f"redis://{db}:6379/0",
            "CELERY_BROKER_URL": f"redis://{db}:6379/0",
            "CACHE_URL": f"redis://{db}:6379/1?socket_timeout=3&socket_connect_timeout=3",
            "ALLOWED_HOSTS": ",".join(h.front for h in (self.lb, self.a, self.b)),
            "CSRF_TRUSTED_ORIGINS": ",".join(f"http://{h.front}" for h in (self.lb,)),
            "SASC_TRUSTED_PROXIES": self.lb.front,
            "SASC_VAR_DIR": str(var),
            "SASC_INDEX_DIR": str(self.shared / "indexes"),
            "SASC_UPLOAD_DIR": str(self.shared / "uploads"),
            "SASC_JVM_HEAP": "512m",
            # a dead host's job is queued again after 45 s without a heartbeat, not 120 s
            "SASC_JOB_STALE_SECONDS": "45",
            "GUNICORN_WORKERS": str(self.gunicorn_workers),
            "GUNICORN_THREADS": "4",
            "SASC_HOSTS_BROKEN": self.broken,
            "PYTHONPATH": str(ROOT),
        }

    def database_up(self) -> None:
        data = self.tmp / "pg"
        data.mkdir()
        shutil.chown(data, "postgres", "postgres")
        sh(
            "setpriv",
            "--reuid",
            "postgres",
            "--regid",
            "postgres",
            "--init-groups",
            "--",
            str(PG_BIN / "initdb"),
            "-D",
            str(data),
            "--auth=trust",
            "-U",
            "postgres",
            "--no-sync",
        )
        with open(data / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {FRONT}.0/16 trust\n")
        self.db.run(
            "postgres",
            [
                str(PG_BIN / "postgres"),
                "-D",
                str(data),
                "-c",
                f"listen_addresses={self.db.back}",
                "-c",
                f"unix_socket_directories={data}",
                "-c",
                "max_connections=300",
                "-c",
                "fsync=off",  # a throwaway cluster; no scenario kills the database host
                "-c",
                "shared_buffers=256MB",
            ],
            {"PATH": os.environ["PATH"], "LANG": "C.UTF-8"},
            user="postgres",
        )
        redis_dir = self.tmp / "redis"
        redis_dir.mkdir()
        self.db.run(
            "redis",
            [
                "redis-server",
                "--bind",
                self.db.back,
                "--port",
                "6379",
                "--protected-mode",
                "no",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(redis_dir),
            ],
            {"PATH": os.environ["PATH"]},
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready = sh(
                str(PG_BIN / "pg_isready"), "-h", self.db.back, "-U", "postgres", check=False
            )
            if ready.returncode == 0:
                break
            time.sleep(0.3)
        else:
            raise RuntimeError("PostgreSQL did not start:\n" + self.db.procs["postgres"].tail())
        sh("psql", "-h", self.db.back, "-U", "postgres", "-qc", "CREATE DATABASE sasc")

    def manage(self, *args: str) -> None:
        """Run ``manage.py`` on host A (migrations, collectstatic) and fail with its output."""
        env = self.app_env(self.a)
        done = subprocess.run(
            ["ip", "netns", "exec", self.a.ns, str(BIN / "python"), "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)}: {done.stdout}{done.stderr}")

    def queues(self) -> str:
        """The queues a worker serves: every queue of ``settings.CELERY_TASK_ROUTES`` and the
        default queue, read now, so the harness follows whatever the routes are today."""
        code = (
            "import django; django.setup(); from django.conf import settings; "
            "q = {r['queue'] for r in settings.CELERY_TASK_ROUTES.values()}; "
            "q.add(settings.CELERY_TASK_DEFAULT_QUEUE); print(','.join(sorted(q)))"
        )
        done = subprocess.run(
            [str(BIN / "python"), "-c", code],
            cwd=ROOT,
            env=self.app_env(self.a),
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip().splitlines()[-1]

    def app_up(self, host: Host) -> None:
        env = self.app_env(host)
        # python -m gunicorn / celery; a broken build goes through bench/hosts/broken.py,
        # which patches the code in the process and then runs the same main.
        python = [str(BIN / "python"), "-m"] + (["bench.hosts.broken"] if self.broken else [])
        collected = Path(env["SASC_VAR_DIR"]) / "static" / "staticfiles.json"
        if not collected.exists():
            subprocess.run(
                ["ip", "netns", "exec", host.ns, str(BIN / "python"), "manage.py"]
                + ["collectstatic", "--noinput", "-v", "0"],
                cwd=ROOT,
                env=env,
                check=True,
            )
        host.run(
            "web",
            [
                *python,
                "gunicorn",
                "config.wsgi",
                "-c",
                "config/gunicorn.py",
                "--bind",
                f"{host.front}:8000",
            ],
            env,
        )
        for n in range(self.workers_per_host):
            host.run(
                f"worker{n}",
                [
                    *python,
                    "celery",
                    "-A",
                    "config",
                    "worker",
                    "-Q",
                    self._queues,
                    "--concurrency",
                    "1",
                    "--loglevel",
                    "INFO",
                    "-n",
                    f"w{n}@{host.name}",
                    "--without-mingle",
                    "--without-gossip",
                ],
                env,
            )
        self.wait_http(f"http://{host.front}:8000/health/", host.procs["web"])

    def app_kill(self, host: Host) -> None:
        """SIGKILL everything the host runs (web and workers) at once."""
        for proc in host.procs.values():
            proc.signal_group(signal.SIGKILL)
        for proc in host.procs.values():
            proc.kill()

    def balancer_up(self) -> None:
        conf = self.tmp / "nginx"
        (conf / "tmp").mkdir(parents=True)
        servers = "\n".join(
            f"    server {h.front}:8000 max_fails=1 fail_timeout=5s;" for h in self.apps
        )
        (conf / "nginx.conf").write_text(
            f"""
user root;
worker_processes 1;
pid {conf}/nginx.pid;
error_log {conf}/error.log warn;
events {{ worker_connections 2048; }}
http {{
  access_log off;
  client_body_temp_path {conf}/tmp/body;
  proxy_temp_path {conf}/tmp/proxy;
  fastcgi_temp_path {conf}/tmp/fastcgi;
  uwsgi_temp_path {conf}/tmp/uwsgi;
  scgi_temp_path {conf}/tmp/scgi;
  client_max_body_size 60m;
  upstream sasc {{
{servers}
    keepalive 32;
    keepalive_timeout 60s;
  }}
  server {{
    listen {self.lb.front}:80;
    location / {{
      proxy_pass http://sasc;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_connect_timeout 2s;
      proxy_read_timeout 60s;
      # the default: a request is retried on the other host only if it is idempotent or
      # was never sent (a POST the dead host may have stored is not sent twice)
      proxy_next_upstream error timeout;
    }}
  }}
}}
"""
        )
        self.lb.run(
            "nginx",
            ["nginx", "-c", str(conf / "nginx.conf"), "-p", str(conf), "-g", "daemon off;"],
            {"PATH": os.environ["PATH"]},
        )
        self.wait_http(f"http://{self.lb.front}/health/", self.lb.procs["nginx"])

    def wait_http(self, url: str, proc: Proc, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if requests.get(url, timeout=2).status_code < 500:
                    return
            except requests.RequestException:
                pass
            if not proc.running():
                raise RuntimeError(f"{proc.host.name} {proc.name} exited:\n{proc.tail()}")
            time.sleep(0.3)
        raise RuntimeError(f"{url} did not answer within {timeout} s:\n{proc.tail()}")

    def start(self) -> None:
        self.network_up()
        self.database_up()
        self.manage("migrate", "--noinput", "-v", "0")
        self._queues = self.queues()
        for host in self.apps:
            self.app_up(host)
        self.balancer_up()

    def stop(self) -> list[str]:
        """Stop every process, delete every namespace and link, remove the folder; return
        what could not be removed (nothing, normally)."""
        for host in reversed(self.hosts):
            for proc in host.procs.values():
                proc.stop(timeout=10)
        left = []
        for ns in self.made_netns:
            if sh("ip", "netns", "del", ns, check=False).returncode:
                left.append(f"netns {ns}")
        for link in self.made_links:
            sh("ip", "link", "del", link, check=False)  # veths went with their namespace
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.tmp.exists():
            left.append(str(self.tmp))
        names = sh("ip", "netns", "list").stdout
        left += [f"netns {ns}" for ns in self.made_netns if ns in names]
        links = sh("ip", "-o", "link", "show").stdout
        left += [f"link {link}" for link in self.made_links if f" {link}:" in links]
        return left
