"""Celery entry points of the review app: take ids, call a service."""

from celery import shared_task


@shared_task(acks_late=True)
def review_requests_task(search_id: int) -> None:
    """Find what the archivist should be asked about for one search (idempotent)."""
    from review.services import review_requests_create

    review_requests_create(search_id=search_id)


@shared_task(acks_late=True)
def exposure_task(exposure_id: int) -> None:
    """Compute a document's exposing queries (idempotent: a ready one is left alone)."""
    from review.exposure import exposure_compute

    exposure_compute(exposure_id=exposure_id)
