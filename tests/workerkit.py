"""A real Celery worker process for the integration tests, on the test database."""

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from config.celery import QUEUES, worker_command
from tests.waitkit import until

ROOT = Path(__file__).parents[1]


def _database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class Worker:
    """A real Celery worker process on the test database, in its own process group, serving
    ``queues`` (both unless told: tests/test_queues.py starts one per queue); with
    ``hold_training_ms``, each retrain waits that long between training and recording its
    version (``tests/slowworker.py``), so a test can kill the worker mid-retrain."""

    def __init__(
        self,
        log: Path,
        env: dict,
        *,
        hold_training_ms: int = 0,
        queues: tuple[str, ...] = QUEUES,
    ):
        self.log, self.env, self.proc = log, env, None
        self.hold_training_ms = hold_training_ms
        self.queues = queues

    def command(self) -> list[str]:
        celery = worker_command(Path(sys.executable).parent, queues=self.queues)
        celery += ["-n", f"{'-'.join(self.queues)}-{os.getpid()}@%h"]
        if not self.hold_training_ms:
            return celery
        return [sys.executable, "-m", "tests.slowworker", str(self.hold_training_ms), *celery[1:]]

    def start(self) -> "Worker":
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(
                self.command(),
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: the pool child goes with it
            )
        return self

    def kill(self) -> None:
        """SIGKILL the whole group (the main process and its pool child), as a crash would."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.proc.returncode not in (0, -15):
            print(self.log.read_text()[-5000:])


@pytest.fixture
def worker_env(transactional_db, settings, tmp_path):
    """The environment a worker on the test database needs (Redis flushed)."""
    import redis

    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    shared = tmp_path / "shared"
    settings.SASC_INDEX_DIR = shared / "indexes"
    settings.SASC_UPLOAD_DIR = shared / "uploads"
    return {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "CELERY_BROKER_URL": os.environ["REDIS_URL"],
        "SASC_INDEX_DIR": str(settings.SASC_INDEX_DIR),
        "SASC_UPLOAD_DIR": str(settings.SASC_UPLOAD_DIR),
    }


def wait_for(what, condition, timeout=90.0):
    """Poll ``condition`` until it is truthy (its value) or fail naming ``what``
    (``tests.waitkit.until`` with the worker tests' order of arguments and timeout)."""
    return until(condition, timeout, what)


def worker_idle(url: str) -> bool:
    """Whether nothing is in flight: no task message queued in the Redis broker at ``url``,
    and the live worker runs none and holds none reserved (it answers Celery's ``inspect``).
    A task that sends another does so while it runs, so the new message is queued before
    the worker is idle. A message a SIGKILLed worker held is in flight to nobody: it stays
    in kombu's ``unacked`` set until the visibility timeout (an hour), so that set is not
    read. Asked twice in a row, to step over a message between the queue and the worker."""
    import redis
    from django.conf import settings

    from config.celery import app

    r = redis.Redis.from_url(url)
    queues = {settings.CELERY_TASK_DEFAULT_QUEUE}
    queues |= {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()}
    # kombu keeps a queue's messages of priority n > 0 under "<queue>\x06\x16<n>"
    keys = [*queues, *(f"{q}\x06\x16{n}" for q in queues for n in range(1, 10))]

    def idle_once() -> bool:
        if any(r.llen(k) for k in keys):
            return False
        with app.connection_for_write(url) as conn:
            inspect = app.control.inspect(timeout=5.0, connection=conn, limit=1)
            active, reserved = inspect.active(), inspect.reserved()
        return bool(active and reserved) and not any([*active.values(), *reserved.values()])

    return idle_once() and idle_once()


def worker_settled(url: str, timeout: float = 60.0) -> None:
    """Wait until the worker has nothing in flight (``worker_idle``): a redelivered or
    duplicate task has then run, and whatever it would have written is in the database."""
    until(lambda: worker_idle(url), timeout, "the worker to finish every task in flight")


def judgments_checksum() -> str:
    """Every judgment's identity and answers, hashed: equal before and after a fault."""
    from annotate.models import Judgment

    rows = Judgment.objects.order_by("id").values_list(
        "id", "task_id", "annotator_id", "relevance", "persona_sensitive", "version", "comment"
    )
    return hashlib.sha256(repr(list(rows)).encode()).hexdigest()
