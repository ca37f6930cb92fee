"""End to end on the real services: PostgreSQL, Redis and a Celery worker process.

Runs when DATABASE_URL points at PostgreSQL and REDIS_URL at Redis (``.ci/run`` sets both);
skipped otherwise, because the quickstart's SQLite and folder broker are not shared with a
separate worker process in the same way.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from annotate import services
from annotate.models import Collection, Job
from ranking import lucene
from ranking.services import index_paths
from tests.conftest import SAMPLE

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))
        or not os.environ.get("REDIS_URL"),
        reason="needs DATABASE_URL (PostgreSQL) and REDIS_URL (Redis): see .ci/run",
    ),
]
ROOT = Path(__file__).parents[1]


def _database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@pytest.fixture
def worker(transactional_db, settings, tmp_path):
    """Start a real Celery worker on the test database; stop it after the test."""
    import redis

    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    shared = tmp_path / "shared"
    settings.SASC_INDEX_DIR = shared / "indexes"
    settings.SASC_UPLOAD_DIR = shared / "uploads"
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "CELERY_BROKER_URL": os.environ["REDIS_URL"],
        "SASC_INDEX_DIR": str(settings.SASC_INDEX_DIR),
        "SASC_UPLOAD_DIR": str(settings.SASC_UPLOAD_DIR),
    }
    with open(tmp_path / "worker.log", "w") as log:
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "celery"),
                "-A",
                "config",
                "worker",
                "-Q",
                "default,ranking",
                "--concurrency",
                "1",
                "--loglevel",
                "INFO",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the pool child goes with it
        )
        yield proc
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if proc.returncode not in (0, -15):
        print((tmp_path / "worker.log").read_text()[-5000:])


def _wait(job: Job, timeout: float) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.is_finished:
            return job
        time.sleep(0.5)
    raise AssertionError(f"{job} did not finish in {timeout} s: {job.message}")


def test_import_then_index_run_in_the_worker(worker):
    collection = Collection.objects.create(name="Worker", slug="worker")
    job = services.job_import_create(
        collection=collection, fmt="emails", path=SAMPLE, label="sample"
    )
    job = _wait(job, 90)
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert job.report["created"] == len(list(SAMPLE.glob("*.eml")))
    assert collection.documents.count() == job.report["created"]

    index_job = Job.objects.get(kind=Job.Kind.INDEX, collection=collection)
    index_job = _wait(index_job, 180)
    assert index_job.status == Job.Status.SUCCEEDED, index_job.message
    collection.refresh_from_db()
    assert collection.index_is_current
    hits = lucene.search(index_paths(collection=collection).lucene, "razor", k=5)
    assert hits and all(collection.documents.filter(docid=h.docid).exists() for h in hits)

    # A redelivered task finds its job finished and changes nothing.
    before = collection.documents.count()
    services.job_import_run(job_id=job.pk)
    assert collection.documents.count() == before
    assert Path(settings.SASC_INDEX_DIR, str(collection.pk)).exists()
