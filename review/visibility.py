"""What a searcher may see of a published collection, and the ranking over it (issue 14).

The visible set of a publication: documents released by a decision in force, and documents
the persona's newest classifier puts below the band that no decision in force withholds.
Nothing else exists for a searcher: their ranking (``core.visible``) is computed over the
visible set alone, with document frequencies, document count and lengths of that set, so the
candidates, their number, every score and the time a query takes are the same whatever the
hidden documents hold. Documents in the band are found for the archivist by another path
(``review.services.review_requests_create``, in the worker), never in the searcher's request.

The set is a function of (index version, classifier version, band, decisions, today). Each
process keeps one view per publication, keyed by those: a search first reads the key (two
indexed queries), and rebuilds the view when it changed, so a decision or a new classifier
version is in force from the next search on (timings in ``docs/protection.md``).
"""

import threading
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import NamedTuple

from django.utils import timezone

from annotate.models import Collection
from core import lucene
from core.visible import Hit, Postings, VisibleIndex
from ranking.classifier import sensitivity_scores
from ranking.models import SensitivityModel
from ranking.services import IndexNotReady, index_paths
from review.models import Decision, Publication, Redaction
from review.redaction import holders_forget, redacted_rows
from review.selectors import decisions_in_force_kinds

_lock = threading.Lock()
_views: dict[int, "VisibleView"] = {}


@dataclass(frozen=True)
class VisibleView:
    key: "ViewKey"
    index: VisibleIndex
    docids: frozenset[str]
    postings: Postings  # the whole index version's, for the archivist's requests
    redacted: frozenset[str] = frozenset()  # visible documents a searcher reads redacted

    def search(self, query: str, k: int) -> list[Hit]:
        """The top ``k`` visible documents for a searcher's query, best first."""
        return self.index.search(lucene.analyze(" ".join(query.split())), k)


@lru_cache(maxsize=4)
def _postings(path: str) -> Postings:
    return Postings.load(path)


def postings_at(path) -> Postings:
    """The postings saved at ``path``, loaded once per process."""
    return _postings(str(path))


class ViewKey(NamedTuple):
    """What a publication's visible set is built from: a view is rebuilt when it changes."""

    collection: int
    index_version: int | None
    persona: int
    model: tuple | None  # (version, path) of the persona's newest classifier
    band_low: float
    newest_decision: int | None
    newest_redaction: int | None
    day: date


def _key(publication: Publication) -> ViewKey:
    collection = publication.collection
    model = (
        SensitivityModel.objects.filter(collection=collection, persona=publication.persona)
        .order_by("-version")
        .values_list("version", "path")
        .first()
    )
    last = (
        Decision.objects.filter(persona=publication.persona, document__collection=collection)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    redacted = (
        Redaction.objects.filter(persona=publication.persona, document__collection=collection)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    return ViewKey(
        collection.pk,
        collection.indexed_version,
        publication.persona_id,
        model,
        publication.band_low,
        last,
        redacted,
        timezone.localdate(),
    )


def decided(*, publication: Publication, today: date) -> tuple[set[int], set[int]]:
    """Document ids released and withheld by the decisions in force for the publication's
    persona (``selectors.decision_in_force``: a reopening or an expired withholding leaves
    the document to the classifier)."""
    kinds = decisions_in_force_kinds(
        persona=publication.persona, collection=publication.collection, today=today
    )
    released = {d for d, kind in kinds.items() if kind == Decision.Kind.RELEASE}
    withheld = {d for d, kind in kinds.items() if kind == Decision.Kind.WITHHOLD}
    return released, withheld


def visible_docids(*, publication: Publication, p: dict[str, float], today: date) -> set[str]:
    """The docids a searcher may see: released, or below the band and not withheld."""
    from annotate.models import Document

    released, withheld = decided(publication=publication, today=today)
    ids = Document.objects.filter(collection=publication.collection)
    return {
        docid
        for pk, docid in ids.values_list("pk", "docid").iterator()
        if pk in released or (pk not in withheld and docid in p and p[docid] < publication.band_low)
    }


def view(publication: Publication) -> VisibleView:
    """This process's view of the publication's visible set, rebuilt when its key changed."""
    collection: Collection = publication.collection
    if collection.indexed_version is None:
        raise IndexNotReady(collection)
    key = _key(publication)
    current = _views.get(publication.pk)
    if current is not None and current.key == key:
        return current
    path = index_paths(collection=collection).postings
    if not path.exists():
        raise IndexNotReady(collection)
    postings = _postings(str(path))
    p, _version = sensitivity_scores(collection=collection, persona=publication.persona)
    docids = visible_docids(publication=publication, p=p, today=key.day)
    rows = postings.rows(docids)  # documents imported after the index version: not yet
    shown = frozenset(postings.docids[r] for r in rows.tolist())
    # A redacted copy is searched as it reads (issue 20): its row holds the redacted text's
    # terms, so redacted words are in none of the visible statistics.
    redacted = redacted_rows(
        persona=publication.persona,
        collection=collection,
        docids=shown,
        today=key.day,
        analyze=lucene.analyze,
    )
    searched = postings.replaced(redacted)
    fresh = VisibleView(key, VisibleIndex(searched, rows), shown, postings, frozenset(redacted))
    with _lock:
        _views[publication.pk] = fresh
    return fresh


def forget() -> None:
    """Drop every cached view (tests; an index version removed)."""
    with _lock:
        _views.clear()
    _postings.cache_clear()
    holders_forget()
