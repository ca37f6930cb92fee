"""Jobs end visibly (issue 21): a failure is recorded with its reason and shown on the job's
page and the lead's dashboard; a job whose worker died is marked failed after its heartbeat
stops; index builds leave no temporary folders behind."""

import os
import subprocess
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotate import jobs
from annotate.models import Job
from tests.factories import ProjectFactory
from tests.waitkit import until


def test_a_job_whose_heartbeat_stopped_is_failed_saying_its_worker_died(collection):
    now = timezone.now()
    dead = Job.objects.create(
        kind=Job.Kind.INDEX,
        collection=collection,
        status=Job.Status.RUNNING,
        message="Waiting for a worker to build the index",
        started_at=now - timedelta(minutes=10),
        heartbeat_at=now - timedelta(seconds=jobs.STALE_SECONDS + 5),
    )
    alive = Job.objects.create(
        kind=Job.Kind.IMPORT,
        collection=collection,
        status=Job.Status.RUNNING,
        started_at=now - timedelta(minutes=10),
        heartbeat_at=now - timedelta(seconds=5),
    )
    queued = Job.objects.create(kind=Job.Kind.INDEX, collection=collection)
    assert jobs.jobs_fail_stale() == 1
    dead.refresh_from_db()
    assert dead.status == Job.Status.FAILED and dead.finished_at is not None
    assert "the worker running this job stopped answering" in dead.message
    for job in (alive, queued):
        status = job.status
        job.refresh_from_db()
        assert job.status == status
    assert jobs.jobs_fail_stale() == 0  # once


def test_the_job_page_shows_a_dead_workers_job_as_failed_with_the_reason(login, users, collection):
    job = Job.objects.create(
        kind=Job.Kind.INDEX,
        collection=collection,
        status=Job.Status.RUNNING,
        message="Waiting for a worker to build the index",
        started_at=timezone.now() - timedelta(hours=1),
        heartbeat_at=timezone.now() - timedelta(hours=1),
    )
    html = login(users["lead"]).get(reverse("job-detail", args=[job.pk])).content.decode()
    assert '<strong class="error">Failed</strong>' in html
    assert "stopped answering" in html and "Waiting for a worker" not in html
    assert "hx-trigger" not in html  # a finished job is not polled


def test_an_exception_in_a_running_job_fails_it_with_its_reason(collection):
    job = Job.objects.create(kind=Job.Kind.IMPORT, collection=collection)
    job = jobs.job_start(job_id=job.pk)
    with pytest.raises(ValueError), jobs.job_running(job):
        raise ValueError("the file vanished")
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert job.message == "Failed: ValueError: the file vanished"


def test_a_running_job_keeps_its_heartbeat(transactional_db, collection, monkeypatch):
    monkeypatch.setattr(jobs, "HEARTBEAT_SECONDS", 0.05)
    job = jobs.job_start(job_id=Job.objects.create(kind=Job.Kind.INDEX).pk)
    first = job.heartbeat_at
    with jobs.job_running(job):
        until(
            lambda: Job.objects.get(pk=job.pk).heartbeat_at > first, 10, "a heartbeat after start"
        )
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING  # the block recorded no outcome: still its own
    assert job.heartbeat_at > first


def test_the_dashboard_names_failed_jobs_until_one_of_the_same_kind_succeeds(
    login, users, collection
):
    project = ProjectFactory(collection=collection, annotators=[users["annotator"]])
    failed = Job.objects.create(
        kind=Job.Kind.INDEX,
        collection=collection,
        status=Job.Status.FAILED,
        message="Index build failed: OSError: No space left on device",
    )
    client = login(users["lead"])
    url = reverse("judging-dashboard", args=[project.slug])
    html = client.get(url).content.decode()
    assert "Failed jobs on" in html
    assert reverse("job-detail", args=[failed.pk]) in html
    assert "No space left on device" in html
    Job.objects.create(kind=Job.Kind.INDEX, collection=collection, status=Job.Status.SUCCEEDED)
    assert "Failed jobs on" not in client.get(url).content.decode()


@pytest.mark.lucene
def test_a_failed_index_build_fails_its_job_and_removes_its_temporary_folder(
    sample_collection, settings, monkeypatch
):
    from core import features
    from ranking import services

    def broken(*args, **kwargs):
        raise MemoryError("TF-IDF too large")

    monkeypatch.setattr(features, "build_tfidf", broken)
    job = services.job_index_create(collection=sample_collection)
    with pytest.raises(MemoryError):
        services.job_index_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert job.message == "Index build failed: MemoryError: TF-IDF too large"
    base = settings.SASC_INDEX_DIR / str(sample_collection.pk)
    assert not list(base.glob("*.tmp-*"))


def test_the_temporary_folders_of_killed_builds_are_swept(collection, settings):
    from ranking.services import _tmp_suffix, index_temporaries_sweep

    base = settings.SASC_INDEX_DIR / str(collection.pk)
    proc = subprocess.Popen(["true"])
    proc.wait()  # a pid that no longer runs
    killed = base / f"v3.tmp-{proc.pid}"  # the name builds used before the host was added
    killed_here = base / f"v4.tmp-{os.uname().nodename}-{proc.pid}"
    running = base / f"v5{_tmp_suffix().replace(str(os.getpid()), str(os.getppid()))}"
    elsewhere = base / f"v6.tmp-another-machine-{proc.pid}"
    for path in (killed, killed_here, running, elsewhere):
        (path / "lucene").mkdir(parents=True)
    assert index_temporaries_sweep(collection=collection) == 2
    assert not killed.exists() and not killed_here.exists()
    assert running.exists() and elsewhere.exists()  # a live build; another machine's
    old = timezone.now().timestamp() - 7200
    os.utime(elsewhere, (old, old))
    assert index_temporaries_sweep(collection=collection) == 1
    assert not elsewhere.exists()


def test_a_job_whose_worker_died_is_queued_again_for_another_worker(
    collection, django_capture_on_commit_callbacks
):
    """The task message is sent after the commit: captured here, not sent."""
    now = timezone.now()
    dead = Job.objects.create(
        kind=Job.Kind.IMPORT,
        collection=collection,
        status=Job.Status.RUNNING,
        params={"path": "x", "task": "annotate.tasks.import_run"},
        started_at=now - timedelta(minutes=10),
        heartbeat_at=now - timedelta(seconds=jobs.STALE_SECONDS + 5),
    )
    with django_capture_on_commit_callbacks() as sent:
        assert jobs.jobs_fail_stale() == 0  # queued again, not failed
        assert jobs.jobs_requeue_stale() == 0  # once: its heartbeat is fresh again
    dead.refresh_from_db()
    assert dead.status == Job.Status.QUEUED and "Queued again" in dead.message
    assert dead.params["requeued"] == 1 and len(sent) == 1
    # the task never comes back (its worker dies each time): failed after REQUEUES tries
    for n in range(1, jobs.REQUEUES + 1):
        Job.objects.filter(pk=dead.pk).update(
            status=Job.Status.RUNNING, heartbeat_at=now - timedelta(seconds=jobs.STALE_SECONDS + 5)
        )
        with django_capture_on_commit_callbacks() as sent:
            assert jobs.jobs_fail_stale() == (1 if n == jobs.REQUEUES else 0)
        assert len(sent) == (0 if n == jobs.REQUEUES else 1)
    dead.refresh_from_db()
    assert dead.status == Job.Status.FAILED and dead.params["requeued"] == jobs.REQUEUES


def test_an_import_that_stored_rows_and_refused_others_finished_with_errors(
    login, users, collection, tmp_path
):
    """A qrels file with one good line and one unknown document: the good judgment is
    stored, so the job's page says "Finished with errors", not "Failed" (which read as
    nothing stored); an import that stored nothing still says "Failed"."""
    from annotate import services
    from annotate.models import Document, Topic
    from tests.conftest import SAMPLE

    services.import_run(collection=collection, fmt="emails", path=SAMPLE)
    Topic.objects.create(collection=collection, number="7", title="t")
    docid = Document.objects.filter(collection=collection).values_list("docid", flat=True)[0]
    lead = login(users["lead"])

    def job_page(name: str, lines: str) -> str:
        path = tmp_path / name
        path.write_text(lines)
        job = Job.objects.create(kind=Job.Kind.IMPORT, collection=collection)
        report = services.import_run(collection=collection, fmt="qrels-trec", path=path)
        jobs.job_finish(job=job, ok=report.ok, message=report.summary(), report=report.as_dict())
        return lead.get(reverse("job-detail", args=[job.pk])).content.decode()

    html = job_page("a.txt", f"7 0 {docid} 1\n7 0 no-such-message 1\n")
    assert '<strong class="error">Finished with errors</strong>' in html
    assert "1 created" in html and "1 error" in html
    html = job_page("b.txt", "7 0 no-such-message 2\n")
    assert '<strong class="error">Failed</strong>' in html and "0 created" in html
