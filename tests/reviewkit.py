"""A published collection with stored classifier scores set by hand, for the review tests."""

from datetime import timedelta

import joblib
import pytest
from django.urls import reverse
from django.utils import timezone

from annotate.models import Persona
from ranking import classifier
from ranking.models import SensitivityModel
from ranking.services import index_build
from review import services, visibility
from review.models import Publication, ReviewRequest, SearchLog

# everyday words for synthetic mail bodies
FILLER = [
    "report",
    "meeting",
    "schedule",
    "budget",
    "lunch",
    "agenda",
    "minutes",
    "travel",
    "office",
    "notes",
]


def store_scores(collection, persona, docids, scores, path, *, source="test"):
    """Store P(sensitive) set by hand as the persona's classifier, version 1, the way
    training stores it (docids and scores in a joblib file beside a SensitivityModel row), and
    drop this process's caches of stored scores and visible sets."""
    joblib.dump({"docids": list(docids), "scores": scores}, path)
    model = SensitivityModel.objects.create(
        collection=collection,
        persona=persona,
        version=1,
        source=source,
        report={},
        path=str(path),
        trained_at=timezone.now(),
        seconds=0.1,
    )
    classifier._stored.cache_clear()
    visibility.forget()
    return model


def make_review_requests() -> None:
    """Do what the worker does after a searcher's response: the searches' review requests."""
    for pk in SearchLog.objects.values_list("pk", flat=True):
        services.review_requests_create(search_id=pk)


def searcher_search(client, collection, query: str, *, follow: bool = True):
    """Search as a searcher's browser does (POST, then the results page), then do what the
    worker does after the response: make the search's review requests."""
    before = SearchLog.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    response = client.post(
        reverse("searcher-search", args=[collection.slug]), {"q": query}, follow=follow
    )
    for search in SearchLog.objects.filter(pk__gt=before):
        services.review_requests_create(search_id=search.pk)
    return response


def review_requests_pending(persona, searcher, docs_queries):
    """Pending review requests, as searches would have made them: (doc, query) pairs."""
    t0 = timezone.now() - timedelta(minutes=30)
    for n, (doc, query) in enumerate(docs_queries):
        search = SearchLog.objects.create(
            searcher=searcher,
            collection=doc.collection,
            persona=persona,
            query=query,
            shown=[],
            created_at=t0 + timedelta(minutes=n),
        )
        ReviewRequest.objects.create(
            search=search,
            document=doc,
            persona=persona,
            rank=0,
            p_sensitive=0.5,
            requested_at=t0 + timedelta(minutes=n),
        )


@pytest.fixture
def published(sample_collection, tmp_path):
    """The sample mail published for a persona whose stored classifier scores are set by
    hand: messages about linux are sensitive (0.95), about spam uncertain (0.5), the rest
    safe (0.05)."""
    c = sample_collection
    index_build(collection_id=c.pk)
    c.refresh_from_db()
    persona = Persona.objects.create(name="Donor")
    docs = list(c.documents.order_by("id"))
    scores, kinds = [], {}
    for d in docs:
        text = f"{d.subject} {d.body}".lower()
        kind = "sensitive" if "linux" in text else "uncertain" if "razor" in text else "safe"
        kinds[d.pk] = kind
        scores.append({"sensitive": 0.95, "uncertain": 0.5, "safe": 0.05}[kind])
    store_scores(c, persona, [d.docid for d in docs], scores, tmp_path / "model.joblib")
    Publication.objects.create(collection=c, persona=persona, published=True, band_low=0.2)
    return c, persona, docs, kinds


def with_a_quoting_copy(published, line: str, quoted: str):
    """Two safe (visible) documents of ``published``: one with ``line`` before its body, and
    a reply quoting ``quoted`` after its own; the index rebuilt (issue 20's copies)."""
    c, _persona, docs, kinds = published
    doc, quote = [d for d in docs if kinds[d.pk] == "safe"][:2]
    doc.body = f"{line}\n{doc.body}"
    quote.body = f"{quote.body}\n> {quoted}"
    for d in (doc, quote):
        d.save(update_fields=["body"])
    index_build(collection_id=c.pk, force=True)
    c.refresh_from_db()
    return doc, quote
