"""Reads for the searcher and archivist pages."""

from django.db.models import Count, Min

from review.models import Decision, ReviewRequest, SearchLog


def review_queue(*, limit: int = 100) -> list[dict]:
    """Pending documents, one row per (persona, document): the searchers waiting longest
    first, then the most uncertain (P(sensitive) nearest 0.5)."""
    rows = (
        ReviewRequest.objects.filter(status=ReviewRequest.Status.PENDING)
        .values("persona_id", "document_id")
        .annotate(first=Min("requested_at"), searches=Count("search", distinct=True))
        .order_by("first")[: limit * 2]
    )
    out = []
    for row in rows:
        sample = (
            ReviewRequest.objects.filter(
                persona_id=row["persona_id"],
                document_id=row["document_id"],
                status=ReviewRequest.Status.PENDING,
            )
            .select_related("document", "persona", "search")
            .order_by("requested_at")
            .first()
        )
        out.append({**row, "request": sample, "uncertainty": abs(sample.p_sensitive - 0.5)})
    out.sort(key=lambda r: (r["first"], r["uncertainty"]))
    return out[:limit]


def exposing_queries(*, document, persona, limit: int = 10) -> list[str]:
    """Logged queries whose review requests or results put this document in front of a
    searcher (the query log side of reverse search, DOMAIN.md section 10)."""
    queries = list(
        ReviewRequest.objects.filter(document=document, persona=persona)
        .values_list("search__query", flat=True)
        .distinct()[:limit]
    )
    for query, shown in SearchLog.objects.filter(
        collection=document.collection, persona=persona
    ).values_list("query", "shown")[:2000]:
        if document.pk in shown and query not in queries:
            queries.append(query)
        if len(queries) >= limit:
            break
    return queries


def decisions_on(*, document, persona) -> list[Decision]:
    """Earlier decisions on this document and on its duplicates (same content hash)."""
    return list(
        Decision.objects.filter(
            persona=persona,
            document__collection=document.collection,
            document__content_hash=document.content_hash,
        )
        .select_related("decided_by", "document")
        .order_by("-decided_at")[:20]
    )
