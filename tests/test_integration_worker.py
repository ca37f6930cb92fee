"""End to end on the real services: PostgreSQL, Redis and a Celery worker process.

Runs when DATABASE_URL points at PostgreSQL and REDIS_URL at Redis (``.ci/run`` sets both);
skipped otherwise, because the quickstart's SQLite and folder broker are not shared with a
separate worker process in the same way.
"""

import os
from pathlib import Path

import pytest
from django.conf import settings

from annotate import services
from annotate.models import Collection, Job
from core import lucene
from ranking.services import index_paths
from tests.conftest import SAMPLE
from tests.waitkit import until
from tests.workerkit import Worker

pytestmark = [
    pytest.mark.integration,
    pytest.mark.needs_postgres("a worker process shares the test database"),
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL"), reason="needs REDIS_URL (Redis): see .ci/run"
    ),
]
ROOT = Path(__file__).parents[1]


@pytest.fixture
def worker(worker_env, tmp_path):
    """Start a real Celery worker on the test database; stop it after the test."""
    w = Worker(tmp_path / "worker.log", worker_env).start()
    yield w.proc
    w.stop()


def _wait(job: Job, timeout: float) -> Job:
    def finished():
        job.refresh_from_db()
        return job.is_finished

    until(finished, timeout, lambda: f"{job} to finish (its message: {job.message})")
    return job


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
