"""Celery entry points of the ranking app: take ids, call a service."""

from celery import shared_task

from annotate import services


@shared_task(acks_late=True)
def index_build_task(job_id: int) -> None:
    """Build a collection's index and features (idempotent per collection version)."""
    services.job_index_run(job_id=job_id)


@shared_task(acks_late=True)
def pool_task(job_id: int) -> None:
    """Pool a project's topics with twelve systems (idempotent: a finished job is not rerun,
    and rerunning the pool adds no task twice)."""
    services.job_pool_run(job_id=job_id)
