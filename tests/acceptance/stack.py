"""The deployment stack for the acceptance scenarios: gunicorn (2 workers x 4 threads) and a
Celery worker on loopback, on the test database (PostgreSQL) and Redis, driven over HTTP like
browsers and API clients; faults are injected into the real processes."""

import math
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from tests.workerkit import ROOT

BIN = Path(sys.executable).parent
RESULTS: list[dict] = []  # one per scenario, printed at the end of the run (conftest)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_collected = False


def _collect_static_once(env: dict) -> None:
    """gunicorn serves hashed static files (whitenoise's manifest): collect them first."""
    global _collected
    if not _collected:
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
            cwd=ROOT,
            env=env,
            check=True,
        )
        _collected = True


class Web:
    """gunicorn serving config.wsgi with the deployment's worker class and sizes."""

    def __init__(self, env: dict, log: Path, *, workers: int = 2, threads: int = 4):
        self.env, self.log, self.workers, self.threads = env, log, workers, threads
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None

    def start(self) -> "Web":
        _collect_static_once(self.env)
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(
                [
                    str(BIN / "gunicorn"),
                    "config.wsgi",
                    "-c",
                    "config/gunicorn.py",
                    "--bind",
                    f"127.0.0.1:{self.port}",
                    "--workers",
                    str(self.workers),
                    "--threads",
                    str(self.threads),
                ],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if requests.get(self.url + "/health/", timeout=2).status_code < 500:
                    return self
            except (requests.ConnectionError, requests.Timeout):  # still starting
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(self.log.read_text()[-3000:])
            time.sleep(0.2)
        raise RuntimeError("gunicorn did not answer within 60 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()


class Browser(requests.Session):
    """One user's HTTP session, logged in with Django's ``force_login`` (the tests hash
    passwords with MD5, which the server's settings rightly refuse); sends the CSRF token."""

    def __init__(self, web: Web, user):
        from django.conf import settings
        from django.test import Client

        super().__init__()
        self.base = web.url
        client = Client()
        client.force_login(user)  # a session row in the shared database
        name = settings.SESSION_COOKIE_NAME
        self.cookies.set(name, client.cookies[name].value)
        r = self.get(self.base + "/", timeout=30)  # sets the CSRF cookie
        assert r.status_code == 200 and "csrftoken" in self.cookies, f"session of {user}"

    def request(self, method, url, **kwargs):
        if url.startswith("/"):
            url = self.base + url
        headers = kwargs.pop("headers", None) or {}
        if method.upper() not in ("GET", "HEAD") and "csrftoken" in self.cookies:
            headers.setdefault("X-CSRFToken", self.cookies["csrftoken"])
            headers.setdefault("Referer", self.base + "/")
        kwargs.setdefault("timeout", 60)
        return super().request(method, url, headers=headers, **kwargs)


@dataclass
class Figures:
    """What a scenario prints: requests, errors, latency, rows checked, pass or fail."""

    scenario: str
    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    transport_errors: int = 0
    notes: dict = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, response: requests.Response | None, seconds: float) -> None:
        with self.lock:
            if response is None:
                self.transport_errors += 1
                return
            self.latencies.append(seconds)
            self.statuses[response.status_code] = self.statuses.get(response.status_code, 0) + 1

    def timed(self, call, *args, **kwargs):
        started = time.perf_counter()
        try:
            response = call(*args, **kwargs)
        except requests.RequestException:
            self.record(None, time.perf_counter() - started)
            raise
        self.record(response, time.perf_counter() - started)
        return response

    @property
    def server_errors(self) -> int:
        return sum(n for code, n in self.statuses.items() if code >= 500)

    def line(self, passed: bool) -> str:
        lat = sorted(self.latencies)
        p = (
            f"p50 {statistics.median(lat) * 1000:.0f} ms, "
            f"p95 {lat[max(0, math.ceil(0.95 * len(lat)) - 1)] * 1000:.0f} ms"
            if lat
            else "no timed requests"
        )
        notes = ", ".join(f"{k} {v}" for k, v in self.notes.items())
        return (
            f"{self.scenario}: {sum(self.statuses.values())} requests "
            f"({', '.join(f'{c}: {n}' for c, n in sorted(self.statuses.items()))}), "
            f"{self.server_errors} 5xx, {self.transport_errors} transport errors, {p}; {notes} "
            f"-> {'PASS' if passed else 'FAIL'}"
        )

    def done(self, passed: bool) -> None:
        line = self.line(passed)
        RESULTS.append({"scenario": self.scenario, "passed": passed, "line": line})
        print("\n" + line)


def report(scenario: str, passed: bool, figures: str) -> None:
    """A scenario checked in-process (T7, T8, T9, T12) prints its line like the others."""
    line = f"{scenario}: {figures} -> {'PASS' if passed else 'FAIL'}"
    RESULTS.append({"scenario": scenario, "passed": passed, "line": line})
    print("\n" + line)


def run_threads(target, args_list, timeout: float = 300) -> list[Exception]:
    errors: list[Exception] = []

    def wrap(*args):
        try:
            target(*args)
        except Exception as exc:  # noqa: BLE001 - surfaced to the scenario
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=a) for a in args_list]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    return errors
