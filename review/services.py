"""Protected search and the archivist's decisions (DOMAIN.md section 9).

Withholding is absolute (G7): a search splits the ranking before anything is rendered. A
document reaches the searcher only if an archivist released it for the persona, or the
persona's classifier puts it below the publication's band and no decision withholds it.
Documents in the band become review requests; documents above it, and withheld ones, are
dropped without a trace in the response (no count, snippet or notice that depends on them).
Every search, every document shown, every view and every decision writes an audit row in
the same transaction (G9).
"""

import logging
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

from django.db import transaction
from django.utils import timezone

from annotate.models import Collection, Document, Persona, SensitivityModel
from review import routing
from review.models import AuditEvent, Decision, Publication, ReviewRequest, SearchLog

logger = logging.getLogger(__name__)
CANDIDATES = 100


class NotPublished(Exception):
    """The collection is not open to searchers."""


def audit(*, user, action: str, collection=None, document=None, **detail) -> AuditEvent:
    """Append one row to the audit log (call inside the transaction of what it records)."""
    return AuditEvent.objects.create(
        user=user,
        action=action,
        collection=collection,
        document=document,
        detail=detail,
        at=timezone.now(),
    )


@dataclass(frozen=True)
class StoredScores:
    """A classifier version as the routing and the review page read it."""

    p: dict[str, float]  # docid -> P(sensitive)
    row: dict[str, int]
    names: list[str]
    contribution_index: object = None  # numpy arrays, absent in files without them
    contribution_value: object = None

    def contributions(self, docid: str) -> tuple[list, list]:
        """The features pushing this document towards sensitive and towards not sensitive,
        strongest first, as (name, weight x value)."""
        if self.contribution_index is None or docid not in self.row:
            return [], []
        index = self.contribution_index[self.row[docid]]
        value = self.contribution_value[self.row[docid]]
        pairs = [(self.names[i], float(v)) for i, v in zip(index, value, strict=True) if i >= 0]
        return [x for x in pairs if x[1] > 0], [x for x in pairs if x[1] < 0]


@lru_cache(maxsize=16)
def _stored(path: str) -> StoredScores:
    import joblib

    stored = joblib.load(path)
    featurizer = stored.get("featurizer")
    return StoredScores(
        p=dict(zip(stored["docids"], map(float, stored["scores"]), strict=True)),
        row={docid: i for i, docid in enumerate(stored["docids"])},
        names=list(featurizer.names) if featurizer is not None else [],
        contribution_index=stored.get("contribution_index"),
        contribution_value=stored.get("contribution_value"),
    )


def stored_scores(*, collection: Collection, persona: Persona):
    """The persona's newest classifier version and its stored scores (None, None if none)."""
    model = (
        SensitivityModel.objects.filter(collection=collection, persona=persona)
        .order_by("-version")
        .first()
    )
    return (model, _stored(model.path)) if model is not None else (None, None)


def sensitivity_scores(*, collection: Collection, persona: Persona) -> tuple[dict, int | None]:
    """P(sensitive) per docid from the persona's newest classifier, and its version
    (empty and None when none was trained: then every document needs review)."""
    model, stored = stored_scores(collection=collection, persona=persona)
    return (stored.p, model.version) if model is not None else ({}, None)


def current_decisions(*, persona: Persona, document_ids) -> dict[int, Decision]:
    """The decision in force per document (the latest; None-like when reopened)."""
    out: dict[int, Decision] = {}
    for d in Decision.objects.filter(persona=persona, document_id__in=list(document_ids)).order_by(
        "decided_at", "id"
    ):
        out[d.document_id] = d
    return {k: v for k, v in out.items() if v.kind != Decision.Kind.REOPEN}


def _withheld(decision: Decision | None, today: date) -> bool:
    return (
        decision is not None
        and decision.kind == Decision.Kind.WITHHOLD
        and (decision.until is None or decision.until > today)
    )


@dataclass
class SearchOutcome:
    search: SearchLog
    shown: list[Document]
    scores: list[float]
    notice: bool


def search_protected(*, user, collection: Collection, query: str) -> SearchOutcome:
    """Rank with BM25, split into what the searcher sees now and what the archivist is
    asked about, log the search and everything shown."""
    from ranking.services import collection_ranked_documents

    publication = Publication.objects.filter(collection=collection, published=True).first()
    if publication is None or collection.indexed_version is None:
        raise NotPublished(collection.slug)
    persona = publication.persona
    ranked = collection_ranked_documents(
        collection=collection, query=query, documents=Document.objects.all(), k=CANDIDATES
    )
    p, version = sensitivity_scores(collection=collection, persona=persona)
    decisions = current_decisions(persona=persona, document_ids=[d.pk for d, _s in ranked])
    today = timezone.localdate()
    decided = {}
    for doc_id, decision in decisions.items():
        if _withheld(decision, today):
            decided[doc_id] = routing.WITHHELD
        elif decision.kind == Decision.Kind.RELEASE:
            decided[doc_id] = routing.RELEASED
    where = routing.split(
        [d.pk for d, _s in ranked],
        {d.pk: p[d.docid] for d, _s in ranked if d.docid in p},
        decided,
        band_low=publication.band_low,
        band_high=publication.band_high,
        k=publication.review_k,
        most_uncertain=publication.most_uncertain,
    )
    shown = [ranked[i][0] for i in where.shown]
    scores = [ranked[i][1] for i in where.shown]
    review = [(i, ranked[i][0]) for i in where.review]
    now = timezone.now()
    with transaction.atomic():
        search = SearchLog.objects.create(
            searcher=user,
            collection=collection,
            persona=persona,
            query=query[:2000],
            shown=[d.pk for d in shown],
            created_at=now,
        )
        ReviewRequest.objects.bulk_create(
            [
                ReviewRequest(
                    search=search,
                    document=doc,
                    persona=persona,
                    rank=rank,
                    p_sensitive=p.get(doc.docid, 0.5),
                    requested_at=now,
                )
                for rank, doc in review
            ]
        )
        audit(
            user=user,
            action="search",
            collection=collection,
            query=query[:2000],
            search=search.pk,
            shown=[d.pk for d in shown],
            review_requests=len(review),
            classifier=version,
        )
    return SearchOutcome(search, shown, scores, publication.show_pending_notice)


def released_for(*, user, search: SearchLog, already: set[int]) -> list[tuple[Document, float]]:
    """Documents of this search that an archivist released since, with the seconds the
    searcher waited; each is logged as shown (G9). ``already``: ids the page holds."""
    requests = (
        ReviewRequest.objects.filter(search=search, status=ReviewRequest.Status.RELEASED)
        .exclude(document_id__in=already)
        .select_related("document")
        .order_by("rank")
    )
    decisions = current_decisions(
        persona=search.persona, document_ids=[r.document_id for r in requests]
    )
    out = []
    for r in requests:
        decision = decisions.get(r.document_id)
        if decision is None or decision.kind != Decision.Kind.RELEASE:
            continue  # reopened or withheld since
        out.append((r.document, (r.decided_at - r.requested_at).total_seconds()))
    if out:
        with transaction.atomic():
            audit(
                user=user,
                action="shown-after-review",
                collection=search.collection,
                search=search.pk,
                shown=[d.pk for d, _w in out],
            )
    return out


def searcher_document(*, user, collection: Collection, document_id: int) -> Document | None:
    """The document if this searcher was shown it and no decision withholds it now; the
    view is logged. None otherwise, with nothing said about why."""
    publication = Publication.objects.filter(collection=collection, published=True).first()
    if publication is None:
        return None
    searches = SearchLog.objects.filter(searcher=user, collection=collection)
    shown = any(document_id in s for s in searches.values_list("shown", flat=True).iterator())
    released = ReviewRequest.objects.filter(
        search__in=searches, document_id=document_id, status=ReviewRequest.Status.RELEASED
    ).exists()
    if not (shown or released):
        return None
    decision = current_decisions(persona=publication.persona, document_ids=[document_id]).get(
        document_id
    )
    if _withheld(decision, timezone.localdate()):
        return None
    if released and not shown and (decision is None or decision.kind != Decision.Kind.RELEASE):
        return None
    doc = Document.objects.filter(pk=document_id, collection=collection).first()
    if doc is not None:
        with transaction.atomic():
            audit(user=user, action="view", collection=collection, document=doc, role="searcher")
    return doc


class DecisionError(ValueError):
    """A decision that cannot be recorded; the message says why."""


def review_decide(
    *,
    archivist,
    persona: Persona,
    document: Document,
    kind: str,
    until: date | None = None,
    note: str = "",
) -> Decision:
    """Record a decision, resolve every pending request for the document and persona, and
    ask for a retrain after ``retrain_every`` new decisions."""
    if kind not in (Decision.Kind.RELEASE, Decision.Kind.WITHHOLD, Decision.Kind.NOT_RELEVANT):
        raise DecisionError("decide release, withhold or not relevant")
    if until is not None and kind != Decision.Kind.WITHHOLD:
        raise DecisionError("only a withholding can have an end date")
    if until is not None and until <= timezone.localdate():
        raise DecisionError("a withholding must end after today")
    if len(note) > 10_000:
        raise DecisionError("the note is longer than 10,000 characters")
    now = timezone.now()
    p, _version = sensitivity_scores(collection=document.collection, persona=persona)
    status = {
        Decision.Kind.RELEASE: ReviewRequest.Status.RELEASED,
        Decision.Kind.WITHHOLD: ReviewRequest.Status.WITHHELD,
        Decision.Kind.NOT_RELEVANT: ReviewRequest.Status.NOT_RELEVANT,
    }[kind]
    with transaction.atomic():
        decision = Decision.objects.create(
            persona=persona,
            document=document,
            kind=kind,
            until=until,
            note=note,
            decided_by=archivist,
            decided_at=now,
            p_sensitive=p.get(document.docid),
        )
        resolved = ReviewRequest.objects.filter(
            persona=persona, document=document, status=ReviewRequest.Status.PENDING
        ).update(status=status, decided_at=now)
        audit(
            user=archivist,
            action="decision",
            collection=document.collection,
            document=document,
            kind=kind,
            until=until.isoformat() if until else None,
            persona=persona.pk,
            requests=resolved,
        )
        _retrain_when_due(archivist, persona, document.collection)
    return decision


def review_reopen(*, lead, persona: Persona, document: Document, note: str = "") -> Decision:
    """A lead takes back the decision in force on a document: it is routed by the classifier
    again, and asked about when it is uncertain."""
    current = current_decisions(persona=persona, document_ids=[document.pk]).get(document.pk)
    if current is None:
        raise DecisionError("there is no decision in force on this document to reopen")
    if len(note) > 10_000:
        raise DecisionError("the note is longer than 10,000 characters")
    p, _version = sensitivity_scores(collection=document.collection, persona=persona)
    with transaction.atomic():
        decision = Decision.objects.create(
            persona=persona,
            document=document,
            kind=Decision.Kind.REOPEN,
            note=note,
            decided_by=lead,
            decided_at=timezone.now(),
            p_sensitive=p.get(document.docid),
        )
        audit(
            user=lead,
            action="reopen",
            collection=document.collection,
            document=document,
            persona=persona.pk,
            reopened=current.kind,
        )
    return decision


def _retrain_when_due(user, persona: Persona, collection: Collection) -> None:
    publication = Publication.objects.filter(collection=collection, persona=persona).first()
    if publication is None:
        return
    last = (
        SensitivityModel.objects.filter(collection=collection, persona=persona)
        .order_by("-version")
        .values_list("trained_at", flat=True)
        .first()
    )
    decisions = Decision.objects.filter(persona=persona, document__collection=collection)
    if last is not None:
        decisions = decisions.filter(decided_at__gt=last)
    if decisions.count() >= publication.retrain_every:
        from annotate.models import Job
        from ranking.classifier import job_sensitivity_create

        busy = Job.objects.filter(
            kind=Job.Kind.SENSITIVITY,
            collection=collection,
            status__in=[Job.Status.QUEUED, Job.Status.RUNNING],
        ).exists()
        if not busy:
            job_sensitivity_create(
                collection=collection, persona=persona, source="decisions", user=user
            )
