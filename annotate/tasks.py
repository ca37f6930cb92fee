"""Celery entry points of the annotate app: take ids, call a service."""

from celery import shared_task

from annotate import entities, services


@shared_task(acks_late=True)
def import_run(job_id: int) -> None:
    """Run one import job (idempotent: a finished job is not run again)."""
    services.job_import_run(job_id=job_id)


@shared_task(acks_late=True)
def entities_detect_task(collection_id: int) -> None:
    """Recompute a collection's sensitive entities (idempotent: the rows are replaced)."""
    entities.collection_entities_detect(collection_id=collection_id)
