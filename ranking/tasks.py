"""Celery entry points of the ranking app: take ids, call a service."""

import logging
import threading

from celery import shared_task
from celery.signals import worker_ready

from ranking import pooling, services


@shared_task(acks_late=True)
def index_build_task(job_id: int) -> None:
    """Build a collection's index and features (idempotent per collection version)."""
    services.job_index_run(job_id=job_id)


@shared_task(acks_late=True)
def pool_task(job_id: int) -> None:
    """Pool a project's topics with twelve systems (idempotent: a finished job is not rerun,
    and rerunning the pool adds no task twice)."""
    pooling.job_pool_run(job_id=job_id)


@shared_task(acks_late=True, bind=True, max_retries=8)
def learning_step_task(self, plan_id: int, judgment_id: int | None = None) -> None:
    """Bring an active-learning plan up to date: seed, retrain when due, top the queue up
    (idempotent: one model version per set of judgments and index version, the queue filled
    once; ``judgment_id``: the judgment that asked, no retrain when a model saw it). An index
    replaced mid-step, or a database busy beyond its timeout, is retried in a few seconds;
    any other failure is shown on the plan, then raised for the log."""
    from django.db import OperationalError

    from ranking.learning_state import IndexChanged
    from ranking.learning_step import learning_step, learning_step_failed

    try:
        learning_step(plan_id=plan_id, judgment_id=judgment_id)
    except (IndexChanged, OperationalError) as exc:
        if self.request.called_directly or self.request.is_eager:
            raise
        logging.getLogger(__name__).warning("plan %s: step retried: %s", plan_id, exc)
        raise self.retry(exc=exc, countdown=min(60, 2 ** (self.request.retries + 1))) from exc
    except Exception as exc:
        learning_step_failed(plan_id=plan_id, error=exc)
        raise


@worker_ready.connect
def _recover_learning(sender=None, **kwargs) -> None:
    """A worker starting re-asks every unfinished plan: a step lost with a killed worker
    or an unreachable broker is run again (and finds nothing to do if it was not lost).
    It also queues again (or marks failed) the jobs whose worker died
    (``annotate.jobs.jobs_fail_stale``), keeps doing so in a thread while it runs (so a job
    lost with another host is finished here), and removes the temporary folders of index
    builds that were killed."""
    from annotate.jobs import jobs_fail_stale, jobs_sweep_forever
    from ranking.learning_plans import learning_sweep
    from ranking.services import index_temporaries_sweep

    for what, sweep in (
        ("nudge the active-learning plans", learning_sweep),
        ("fail the jobs whose worker died", jobs_fail_stale),
        ("sweep the temporary index folders", index_temporaries_sweep),
    ):
        try:
            sweep()
        except Exception:  # a worker must start even if the database is not up yet
            logging.getLogger(__name__).exception("could not %s", what)
    threading.Thread(
        target=jobs_sweep_forever, args=(_SWEEP_STOP,), name="jobs-sweep", daemon=True
    ).start()


_SWEEP_STOP = threading.Event()


@shared_task(acks_late=True)
def sensitivity_train_task(job_id: int) -> None:
    """Train a persona's sensitivity classifier (a finished job is not run again)."""
    from ranking.classifier import job_sensitivity_run

    job_sensitivity_run(job_id=job_id)
