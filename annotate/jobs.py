"""Background jobs: their lifecycle (queued, running, finished, progress) and how services
queue work for a worker.

A service names the Celery entry point it queues (``queue_on_commit("ranking.tasks.pool_task",
job.pk)``) instead of importing it: entry points sit above the services they call, so an
import would point up. Every app imports its ``tasks`` module when Django starts
(``AppConfig.ready``), so the names are registered in the web process, the worker and the
commands alike.

A running job proves it is alive: ``job_running`` keeps a heartbeat on its row (a short
write every ``HEARTBEAT_SECONDS`` from a thread of its own), and a running job whose
heartbeat is older than ``STALE_SECONDS`` (``SASC_JOB_STALE_SECONDS``) lost its worker
(killed, out of memory, its host gone). ``jobs_requeue_stale`` queues such a job again, up to
``REQUEUES`` times, so another worker (another host's) finishes it; past that,
``jobs_fail_stale`` marks it failed, saying so. Both run when a worker starts, every
``STALE_SECONDS / 4`` in every worker (``jobs_sweep_forever``) and whenever a job is shown, so
no page says "Running" for a job nobody runs.
Every write here is one short statement or transaction: on SQLite a web request waits for
the worker's write lock, never for its work.
"""

import logging
import threading
import time
from contextlib import contextmanager
from datetime import timedelta

from django.db import OperationalError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from annotate.models import Job

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 10
STALE_SECONDS = 120  # twelve missed heartbeats: the worker is gone, not merely busy
REQUEUES = 2  # a job that killed its worker twice is failed, not retried for ever


def stale_seconds() -> int:
    """The heartbeat age past which a running job's worker is taken for dead."""
    from django.conf import settings

    return getattr(settings, "SASC_JOB_STALE_SECONDS", STALE_SECONDS)


def job_queue(*, kind: str, task: str, collection, user, message: str, params=None) -> Job:
    """Record a job of ``kind`` waiting for a worker (``message`` shows meanwhile) and queue
    the Celery task named ``task`` with its id once the transaction commits."""
    # The task is named in the job so that a job whose worker died can be queued again.
    job = Job.objects.create(
        kind=kind,
        collection=collection,
        created_by=user,
        params={**(params or {}), "task": task},
        message=message,
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
    """Write progress at most once a second, in its own short statement.

    The caller must not be reading from a cursor of the same connection when it calls: on
    SQLite a write under an open read cannot take the write lock once another connection
    has committed ("database is locked" at once, whatever the busy timeout). Long jobs read
    in chunks (``annotate.selectors.collection_index_documents``) and report between them.
    """

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
        _write(
            self.job.pk,
            progress_done=self.job.progress_done,
            progress_total=self.job.progress_total,
            heartbeat_at=timezone.now(),
        )


def _write(pk: int, *, attempts: int = 1, **fields) -> None:
    """Update a job's row in one statement; retry ``attempts`` times when locked."""
    for attempt in range(attempts):
        try:
            Job.objects.filter(pk=pk).update(**fields)
            return
        except OperationalError:
            if attempt == attempts - 1:
                raise
            time.sleep(min(5.0, 0.5 * 2**attempt))


def job_start(*, job_id: int) -> Job | None:
    """Mark a queued job running; return None if it already finished (a redelivered task)."""
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        if job.is_finished:
            return None
        job.status = Job.Status.RUNNING
        job.started_at = job.heartbeat_at = timezone.now()
        job.message = "Started"
        job.save(update_fields=["status", "started_at", "heartbeat_at", "message"])
    return job


@contextmanager
def job_running(job: Job):
    """Keep the job's heartbeat while the block runs, and make sure it ends recorded: an
    exception that escapes the block finishes the job as failed with its reason (unless
    the block recorded an outcome already), then propagates."""
    stop = threading.Event()

    def beat():
        try:
            while not stop.wait(HEARTBEAT_SECONDS):
                try:
                    _write(job.pk, heartbeat_at=timezone.now())
                except OperationalError as exc:  # busy for a moment: the next beat will do
                    logger.warning("job %s: heartbeat not written: %s", job.pk, exc)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=beat, name=f"job-{job.pk}-heartbeat", daemon=True)
    thread.start()
    try:
        yield job
    except BaseException as exc:
        if not job.is_finished:
            job_finish(job=job, ok=False, message=f"Failed: {type(exc).__name__}: {exc}")
        raise
    finally:
        stop.set()
        thread.join()


def job_finish(*, job: Job, ok: bool, message: str, report: dict | None = None) -> None:
    """Record how a job ended, with its message and report (progress shown complete).

    Retried for a while when the database is busy: a job whose outcome is lost would show
    "Running" until the stale sweep finds it."""
    job.status = Job.Status.SUCCEEDED if ok else Job.Status.FAILED
    job.message = message
    job.report = report or {}
    job.finished_at = timezone.now()
    if job.progress_total:
        job.progress_done = job.progress_total
    _write(
        job.pk,
        attempts=6,
        status=job.status,
        message=job.message,
        report=job.report,
        finished_at=job.finished_at,
        progress_done=job.progress_done,
    )


def jobs_requeue_stale(*, now=None) -> int:
    """Queue again every running job whose heartbeat stopped ``stale_seconds()`` ago (its
    worker died with it) and that names its task, at most ``REQUEUES`` times; return how
    many. The job goes back to "queued", saying why; its task is idempotent (an import skips
    what it stored, an index build starts again in a new temporary folder). The update is
    conditional on the heartbeat still being old, so two sweeping processes queue it once.
    The message goes to the broker after the commit; a broker out of reach is logged, and
    the job then waits, queued, for the lead to start it again. A worker that is alive but
    cut from the database longer than ``stale_seconds()`` is taken for dead: its job may
    then run twice, which its idempotence makes safe."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=stale_seconds())
    stale = (
        Job.objects.filter(status=Job.Status.RUNNING, params__has_key="task")
        .filter(Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff))
        .values_list("pk", flat=True)
    )
    queued = 0
    for pk in list(stale):
        with transaction.atomic():
            job = (
                Job.objects.select_for_update(skip_locked=True)
                .filter(Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True))
                .filter(pk=pk, status=Job.Status.RUNNING)
                .first()
            )
            if job is None or job.params.get("requeued", 0) >= REQUEUES:
                continue
            beat = job.heartbeat_at or job.started_at
            job.params = {**job.params, "requeued": job.params.get("requeued", 0) + 1}
            job.status = Job.Status.QUEUED
            job.heartbeat_at = now  # the next sweep waits for a whole stale period again
            job.message = (
                f"Queued again: the worker running it stopped answering "
                f"(last heartbeat {beat:%Y-%m-%d %H:%M:%S} UTC)"
            )
            job.save(update_fields=["params", "status", "heartbeat_at", "message"])
            queue_on_commit(job.params["task"], job.pk, robust=True)
            queued += 1
            logger.warning("job %s: its worker stopped answering; queued again", job.pk)
    return queued


def jobs_sweep_forever(stop: threading.Event) -> None:
    """Every quarter of ``stale_seconds()`` until ``stop`` is set, queue again or fail the
    jobs whose worker died (``jobs_fail_stale``); a worker runs this in a thread, so a job
    lost with another host is finished by this one without anyone looking at it."""
    try:
        while not stop.wait(stale_seconds() / 4):
            try:
                jobs_fail_stale()
            except Exception:  # the database out of reach for a while: the next round
                logger.exception("could not sweep the jobs whose worker died")
    finally:
        connection.close()


def jobs_fail_stale(*, now=None) -> int:
    """Queue again the running jobs whose heartbeat stopped (``jobs_requeue_stale``), and
    mark failed the rest of them (their task unknown, or queued again too often), saying so;
    return how many were failed. The lead starts a failed one again (an import, an index
    build and a training are idempotent)."""
    now = now or timezone.now()
    jobs_requeue_stale(now=now)
    cutoff = now - timedelta(seconds=stale_seconds())
    stale = Job.objects.filter(status=Job.Status.RUNNING).filter(
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
    )
    changed = 0
    for pk, beat, started in stale.values_list("pk", "heartbeat_at", "started_at"):
        beat = beat or started
        changed += Job.objects.filter(
            Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True),
            pk=pk,
            status=Job.Status.RUNNING,
        ).update(
            status=Job.Status.FAILED,
            finished_at=now,
            message=(
                f"Failed: the worker running this job stopped answering "
                f"(last heartbeat {beat:%Y-%m-%d %H:%M:%S} UTC); start it again"
            ),
        )
    return changed


def jobs_failed_unresolved(*, collection, limit: int = 5) -> list[Job]:
    """The collection's failed jobs that no later job of the same kind succeeded after,
    newest first: what the lead's dashboard warns about. Jobs whose worker died are marked
    failed first (``jobs_fail_stale``), so they are counted."""
    jobs_fail_stale()
    failed = []
    later_ok: dict[str, object] = {}
    for job in Job.objects.filter(collection=collection).order_by("-created_at")[:200]:
        if job.status == Job.Status.SUCCEEDED:
            later_ok.setdefault(job.kind, job.created_at)
        elif job.status == Job.Status.FAILED and job.kind not in later_ok:
            failed.append(job)
    return failed[:limit]
