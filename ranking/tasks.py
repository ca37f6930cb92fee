"""Celery entry points of the ranking app: take ids, call a service."""

import logging

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


@shared_task(acks_late=True)
def learning_step_task(plan_id: int) -> None:
    """Bring an active-learning plan up to date: seed, retrain when due, top the queue up
    (idempotent: one model version per set of judgments, the queue filled once)."""
    from ranking.learning import learning_step

    learning_step(plan_id=plan_id)


@worker_ready.connect
def _recover_learning(sender=None, **kwargs) -> None:
    """A worker starting re-asks every unfinished plan: a step lost with a killed worker
    or an unreachable broker is run again (and finds nothing to do if it was not lost)."""
    from ranking.learning import learning_sweep

    try:
        learning_sweep()
    except Exception:  # a worker must start even if the database is not up yet
        logging.getLogger(__name__).exception("could not nudge the active-learning plans")


@shared_task(acks_late=True)
def sensitivity_train_task(job_id: int) -> None:
    """Train a persona's sensitivity classifier (a finished job is not run again)."""
    from ranking.classifier import job_sensitivity_run

    job_sensitivity_run(job_id=job_id)
