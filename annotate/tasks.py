"""Celery entry points of the annotate app: take ids, call a service."""

from celery import shared_task

from annotate import services


@shared_task(acks_late=True)
def import_run(job_id: int) -> None:
    """Run one import job (idempotent: a finished job is not run again)."""
    services.job_import_run(job_id=job_id)
