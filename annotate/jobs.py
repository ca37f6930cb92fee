"""Background jobs: their lifecycle (queued, running, finished, progress) and how services
queue work for a worker.

A service names the Celery entry point it queues (``queue_on_commit("ranking.tasks.pool_task",
job.pk)``) instead of importing it: entry points sit above the services they call, so an
import would point up. Every app imports its ``tasks`` module when Django starts
(``AppConfig.ready``), so the names are registered in the web process, the worker and the
commands alike.
"""

import time

from django.db import transaction
from django.utils import timezone

from annotate.models import Job


def job_queue(*, kind: str, task: str, collection, user, message: str, params=None) -> Job:
    """Record a job of ``kind`` waiting for a worker (``message`` shows meanwhile) and queue
    the Celery task named ``task`` with its id once the transaction commits."""
    job = Job.objects.create(
        kind=kind, collection=collection, created_by=user, params=params or {}, message=message
    )
    queue_on_commit(task, job.pk)
    return job


def queue_on_commit(task: str, *args, robust: bool = False) -> None:
    """Queue the Celery task named ``task`` with ``args`` once the transaction commits (at
    once outside a transaction). The name is looked up now, so a wrong one fails inside the
    caller's transaction (``celery.exceptions.NotRegistered``) rather than after it.
    ``robust``: a broker that cannot be reached is logged, not raised, so the committed work
    stands and a sweep finds it later."""
    entry = _registered(task)
    transaction.on_commit(lambda: entry.delay(*args), robust=robust)


def queue(task: str, *args) -> None:
    """Queue the Celery task named ``task`` now (eager when Celery is configured so)."""
    _registered(task).delay(*args)


def _registered(task: str):
    from celery import current_app

    return current_app.tasks[task]


class JobProgress:
    """Write progress at most once a second, in its own short transaction."""

    def __init__(self, job: Job, total: int = 0):
        self.job = job
        self.total = total
        self.last = 0.0

    def __call__(self, done: int, total: int | None = None) -> None:
        now = time.monotonic()
        if now - self.last < 1.0:
            return
        self.last = now
        self.job.progress_done = done
        self.job.progress_total = total if total is not None else self.total
        Job.objects.filter(pk=self.job.pk).update(
            progress_done=self.job.progress_done, progress_total=self.job.progress_total
        )


def job_start(*, job_id: int) -> Job | None:
    """Mark a queued job running; return None if it already finished (a redelivered task)."""
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        if job.is_finished:
            return None
        job.status = Job.Status.RUNNING
        job.started_at = timezone.now()
        job.save(update_fields=["status", "started_at"])
    return job


def job_finish(*, job: Job, ok: bool, message: str, report: dict | None = None) -> None:
    """Record how a job ended, with its message and report (progress shown complete)."""
    job.status = Job.Status.SUCCEEDED if ok else Job.Status.FAILED
    job.message = message
    job.report = report or {}
    job.finished_at = timezone.now()
    if job.progress_total:
        job.progress_done = job.progress_total
    job.save(update_fields=["status", "message", "report", "finished_at", "progress_done"])
