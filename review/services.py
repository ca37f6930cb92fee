"""Protected search and the archivist's decisions (docs/domain.md §9).

Withholding is absolute (G7): a search splits the ranking before anything is rendered. A
document reaches the searcher only if an archivist released it for the persona, or the
persona's classifier puts it below the publication's band and no decision withholds it.
Documents in the band become review requests; documents above it, and withheld ones, are
dropped without a trace in the response (no count, snippet or notice that depends on them).
Every search, every document shown, every view and every decision writes an audit row in
the same transaction (G9).
"""

import logging
import math
from dataclasses import dataclass

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotate.jobs import queue_on_commit
from annotate.models import Collection, Document, Persona
from annotate.selectors import document_text
from core import lucene
from ranking.classifier import sensitivity_scores
from ranking.services import near_duplicate_groups
from review import redaction, selectors, visibility
from review.audit import audit  # noqa: F401 (the writer; callers use services.audit)
from review.models import AuditEvent, Decision, Publication, ReviewRequest, SearchLog
from review.selectors import decisions_in_force_kinds

logger = logging.getLogger(__name__)


class NotPublished(Exception):
    """The collection is not open to searchers."""


@dataclass
class SearchOutcome:
    search: SearchLog
    shown: list[Document]
    scores: list[float]
    notice: object  # selectors.SearchNotice or None: the same whatever is pending

    def groups(self) -> list[tuple[Document, list[Document]]]:
        """The shown documents as the results page lists them: each group's head (best
        ranked) with the near-duplicates collapsed under it, in rank order."""
        by_docid = {d.docid: d for d in self.shown}
        alone = {d.docid for d in self.shown if getattr(d, "redacted", False)}
        groups = groups_of(self.search.collection, [d.docid for d in self.shown], alone)
        return [(by_docid[g[0]], [by_docid[x] for x in g[1:]]) for g in groups]


def groups_of(collection: Collection, docids: list[str], alone) -> list[list[str]]:
    """``docids`` (ranked) in near-duplicate groups, each led by its best ranked member, in
    rank order; a document of ``alone`` (a redacted copy) is a group of its own: the
    near-duplicates are found on the original texts, so grouping a redacted copy would tell
    which redacted values are equal, in the groups and in how many results fit (issue 31)."""
    groups = near_duplicate_groups(
        collection=collection, docids=[d for d in docids if d not in alone]
    )
    heads = {g[0]: g for g in groups}
    return [[d] if d in alone else heads[d] for d in docids if d in alone or d in heads]


def _publication(collection: Collection) -> Publication:
    publication = (
        Publication.objects.filter(collection=collection, published=True)
        .select_related("collection", "persona")
        .first()
    )
    if publication is None or collection.indexed_version is None:
        raise NotPublished(collection.slug)
    return publication


def search_protected(*, user, collection: Collection, query: str) -> SearchOutcome:
    """Rank the documents this searcher may see (``review.visibility``), log the search and
    everything shown, and ask the worker to find what the archivist should review for it.

    Nothing in the outcome depends on a hidden document: the ranking is computed over the
    visible set alone, and the review requests are made after the response, elsewhere."""
    publication = _publication(collection)
    persona = publication.persona
    view = visibility.view(publication)
    # Room for near-duplicates: the first review_k groups are shown, each head with the
    # near-duplicates it collapses (among visible documents only: ``near_duplicate_groups``).
    k = publication.review_k
    hits = view.search(query, 2 * k)
    groups = groups_of(collection, [h.docid for h in hits], view.redacted)[:k]
    kept = {docid for group in groups for docid in group}
    hits = [h for h in hits if h.docid in kept]
    by_docid = {
        d.docid: d
        for d in Document.objects.filter(collection=collection, docid__in=[h.docid for h in hits])
    }
    shown = [by_docid[h.docid] for h in hits]
    scores = [h.score for h in hits]
    with transaction.atomic():
        search = SearchLog.objects.create(
            searcher=user,
            collection=collection,
            persona=persona,
            query=query[:2000],
            shown=[d.pk for d in shown],
            created_at=timezone.now(),
        )
        audit(
            user=user,
            action="search",
            collection=collection,
            query=query[:2000],
            search=search.pk,
            shown=[d.pk for d in shown],
            classifier=view.key.model[0] if view.key.model else None,
        )
        queue_on_commit("review.tasks.review_requests_task", search.pk, robust=True)
    shown = redaction.searcher_copies(persona=persona, documents=shown)
    return SearchOutcome(search, shown, scores, selectors.search_notice(publication=publication))


def review_requests_create(*, search_id: int) -> int:
    """Ask the archivist about the uncertain documents a search would have surfaced (run by
    the worker after the searcher's response; idempotent). Returns the requests made.

    A document inside the band (or without a score) and without a decision in force is asked
    about when, scored under the visible set's statistics (``core.visible.outside_scores``),
    it would rank among the first ``review_k`` of the searcher's visible ranking; its rank is
    its place there. Whether a document is asked about, and where a release appears, is then
    a function of that document and the visible set alone: no other hidden document (withheld,
    predicted sensitive, or another uncertain one) can push it out, so a release tells the
    searcher nothing about them (issue 14). At most ``review_k`` are asked per search (the
    best scoring of those that qualify), and with ``most_uncertain`` set the n nearest
    P = 0.5 of those: choices among pending uncertain documents only (docs/protection.md)."""
    from core.visible import Postings, outside_scores

    search = SearchLog.objects.select_related("collection", "persona").get(pk=search_id)
    if ReviewRequest.objects.filter(search=search).exists():
        return 0
    collection, persona = search.collection, search.persona
    publication = (
        Publication.objects.filter(collection=collection, persona=persona)
        .select_related("collection", "persona")
        .first()
    )
    if publication is None or collection.indexed_version is None:
        return 0
    view = visibility.view(publication)
    terms = lucene.analyze(" ".join(search.query.split()))
    k = publication.review_k
    hits = view.index.search(terms, k)
    floor = hits[-1].score if len(hits) >= k else -math.inf
    postings = view.postings
    cols = [c for c in (postings.column(t) for t in set(terms)) if c is not None]
    if not cols:
        return 0
    matching = np.unique(postings.counts[:, cols].tocoo().row)
    p, _version = sensitivity_scores(collection=collection, persona=persona)
    released, withheld = visibility.decided(publication=publication, today=timezone.localdate())
    pks = dict(
        Document.objects.filter(
            collection=collection, docid__in=[postings.docids[r] for r in matching.tolist()]
        ).values_list("docid", "pk")
    )

    def uncertain(docid: str) -> bool:
        pk = pks.get(docid)
        if pk is None or pk in released or pk in withheld:
            return False
        return docid not in p or publication.band_low <= p[docid] < publication.band_high

    rows = [r for r in matching.tolist() if uncertain(postings.docids[r])]
    # An uncertain document is scored as a searcher would read it once released: a value
    # redacted in force (its own or elsewhere in the collection) is no term of it, so a
    # query for a redacted value never brings a document holding it to a searcher through
    # a release (issue 31).
    redacted = redaction.redacted_rows(
        persona=persona,
        collection=collection,
        docids={postings.docids[r] for r in rows},
        today=timezone.localdate(),
        analyze=lucene.analyze,
    )
    plain = [r for r in rows if postings.docids[r] not in redacted]
    scored = list(
        zip(
            [postings.docids[r] for r in plain],
            outside_scores(view.index, postings, plain, terms).tolist(),
            strict=True,
        )
    )
    if redacted:
        shown = Postings.build(sorted(redacted.items()))
        scored += zip(
            shown.docids,
            outside_scores(view.index, shown, range(len(shown.docids)), terms).tolist(),
            strict=True,
        )
    qualified = []
    for docid, score in scored:
        if score > 0 and score > floor:
            qualified.append((-score, docid))
    # at most k per search (the archivist's effort): the k best of those that qualify
    asked = sorted(
        (sum(1 for h in hits if h.score > -negative), docid)
        for negative, docid in sorted(qualified)[:k]
    )
    if publication.most_uncertain is not None and len(asked) > publication.most_uncertain:
        nearest = sorted(asked, key=lambda a: (abs(p.get(a[1], 0.5) - 0.5), a))
        asked = sorted(nearest[: publication.most_uncertain])
    now = timezone.now()
    with transaction.atomic():
        SearchLog.objects.select_for_update().get(pk=search.pk)
        if ReviewRequest.objects.filter(search=search).exists():
            return 0
        made = ReviewRequest.objects.bulk_create(
            [
                ReviewRequest(
                    search=search,
                    document_id=pks[docid],
                    persona=persona,
                    rank=rank,
                    p_sensitive=p.get(docid, 0.5),
                    requested_at=now,
                )
                for rank, docid in asked
            ]
        )
    return len(made)


def search_results(*, user, collection: Collection, search_id: int) -> SearchOutcome | None:
    """A logged search of this searcher, as its results page shows it again: the documents
    it showed that are still visible now (nothing is logged: it was when they were shown)."""
    publication = _publication(collection)
    search = SearchLog.objects.filter(pk=search_id, searcher=user, collection=collection).first()
    if search is None:
        return None
    view = visibility.view(publication)
    docs = Document.objects.in_bulk(search.shown)
    shown = [docs[pk] for pk in search.shown if pk in docs and docs[pk].docid in view.docids]
    shown = redaction.searcher_copies(persona=publication.persona, documents=shown)
    return SearchOutcome(search, shown, [], selectors.search_notice(publication=publication))


def released_for(*, user, search: SearchLog, already: set[int]) -> list[tuple[Document, float]]:
    """Documents of this search that an archivist released since (and not withheld again),
    with the seconds the searcher waited, in the order of their places; ``already``: ids the
    page shows among its first results. The page polls and replaces its released list with
    this, so a reload shows them too; each is logged as shown once per search (G9)."""
    requests = (
        ReviewRequest.objects.filter(search=search, status=ReviewRequest.Status.RELEASED)
        .exclude(document_id__in=already)
        .select_related("document")
        .order_by("rank", "document__docid")
    )
    in_force = decisions_in_force_kinds(
        persona=search.persona,
        document_ids=[r.document_id for r in requests],
        today=timezone.localdate(),
    )
    out = []
    for r in requests:
        if in_force.get(r.document_id) != Decision.Kind.RELEASE:
            continue  # reopened or withheld since
        out.append((r.document, (r.decided_at - r.requested_at).total_seconds()))
    logged = {
        pk
        for shown in AuditEvent.objects.filter(
            action="shown-after-review", user=user, detail__search=search.pk
        ).values_list("detail__shown", flat=True)
        for pk in shown or []
    }
    copies = redaction.searcher_copies(persona=search.persona, documents=[d for d, _w in out])
    # A request made before a redaction still names the query that asked it; a document is
    # listed only if, as the searcher reads it now, it answers that query (else a search for
    # a value redacted since would learn which documents hold it).
    terms = set(lucene.analyze(" ".join(search.query.split())))
    out = [
        (c, w)
        for c, (_d, w) in zip(copies, out, strict=True)
        if not getattr(c, "redacted", False) or terms & set(lucene.analyze(_shown_text(c)))
    ]
    new = [d.pk for d, _w in out if d.pk not in logged]
    if new:
        with transaction.atomic():
            audit(
                user=user,
                action="shown-after-review",
                collection=search.collection,
                search=search.pk,
                shown=new,
            )
    return out


def _shown_text(doc: Document) -> str:
    """The text a searcher's copy is indexed by: subject, body and its attachments' text."""
    attachments = getattr(doc, "shown_attachments", None)
    if attachments is None:
        attachments = list(doc.attachments.all())
    return document_text(doc.subject, doc.body, [a.text for a in attachments if a.is_text])


def searcher_document(*, user, collection: Collection, document_id: int) -> Document | None:
    """The document if this searcher was shown it (or it was released for one of their
    searches) and it is visible now, under the current classifier, band and decisions; the
    view is logged. None otherwise, with nothing said about why."""
    try:
        publication = _publication(collection)
    except NotPublished:
        return None
    # The same work whether or not the id exists: the view is read first, every time (a
    # searcher timing 404s must not learn which ids exist, hidden ones included).
    view = visibility.view(publication)
    doc = Document.objects.filter(pk=document_id, collection=collection).first()
    searches = SearchLog.objects.filter(searcher=user, collection=collection)
    shown = any(document_id in s for s in searches.values_list("shown", flat=True).iterator())
    released = ReviewRequest.objects.filter(
        search__in=searches, document_id=document_id, status=ReviewRequest.Status.RELEASED
    ).exists()
    visible = doc is not None and doc.docid in view.docids
    if not ((shown or released) and visible):
        return None
    with transaction.atomic():
        audit(user=user, action="view", collection=collection, document=doc, role="searcher")
    return redaction.searcher_copies(persona=publication.persona, documents=[doc])[0]


def review_group_viewed(*, archivist, items: list[tuple[Persona, Document]]) -> None:
    """Record that the archivist was shown these queued documents in full on the group page
    (one ``view`` row each, as opening them one at a time writes)."""
    with transaction.atomic():
        for _persona, document in items:
            audit(
                user=archivist,
                action="view",
                collection=document.collection,
                document=document,
                role="archivist",
                via="group",
            )


def review_item_viewed(*, archivist, document: Document) -> None:
    """Record that the archivist opened a queued document on its review page (``view``)."""
    with transaction.atomic():
        audit(
            user=archivist,
            action="view",
            collection=document.collection,
            document=document,
            role="archivist",
        )


# --- The lead's publish page (issue 33): the band over the whole collection --------------


class BandError(ValueError):
    """A band the publication cannot take; the message names the field."""


@dataclass(frozen=True)
class BandInputs:
    """What ``core.routing.band_preview`` and ``band_rule`` need of a publication: the
    persona's newest classifier's P per docid, and the docids decided or left unscored."""

    inputs: object  # ranking.classifier.PublishInputs
    released: frozenset[str]
    withheld: frozenset[str]
    unscored: frozenset[str]

    def preview_args(self) -> dict:
        return {
            "seconds_per_decision": self.inputs.seconds_per_decision,
            "released": self.released,
            "withheld": self.withheld,
            "unscored": self.unscored,
        }


def band_inputs(*, publication: Publication) -> BandInputs:
    """The publication's classifier scores, and its decisions in force today (mapped to
    docids) and unscored documents, for the band preview."""
    from ranking.classifier import publish_inputs

    inputs = publish_inputs(collection=publication.collection, persona=publication.persona)
    released, withheld = visibility.decided(publication=publication, today=timezone.localdate())
    rows = Document.objects.filter(collection=publication.collection).values_list("pk", "docid")
    docids = dict(rows.iterator())
    return BandInputs(
        inputs=inputs,
        released=frozenset(docids[pk] for pk in released if pk in docids),
        withheld=frozenset(docids[pk] for pk in withheld if pk in docids),
        unscored=frozenset(d for d in docids.values() if d not in inputs.p),
    )


def band_parse(low, high) -> tuple[float, float]:
    """The band's edges from a form, checked: ``0 <= low <= high <= 1``; the error names the
    field that is wrong."""
    values = []
    for field, raw in (("Low", low), ("High", high)):
        text = str(raw if raw is not None else "").strip()
        try:
            value = float(text)
        except ValueError:
            raise BandError(f"{field}: {text[:20]!r} is not a number between 0 and 1.") from None
        if not math.isfinite(value) or not 0 <= value <= 1:
            raise BandError(f"{field}: {text[:20]} is not between 0 and 1.")
        values.append(value)
    if values[0] > values[1]:
        raise BandError(
            f"Low: {values[0]:g} is above High ({values[1]:g}); the band needs low <= high."
        )
    return values[0], values[1]


def publication_band_set(
    *, publication: Publication, user, low: float, high: float, published: bool, why: str = ""
) -> Publication:
    """Save the publication's band (and whether it is open to searchers), with an audit row
    holding the old and new values in the same transaction. Searchers see the new visible
    set from their next search (``visibility``'s key holds the band)."""
    low, high = band_parse(low, high)
    with transaction.atomic():
        locked = Publication.objects.select_for_update().get(pk=publication.pk)
        old = (locked.band_low, locked.band_high, locked.published)
        if old == (low, high, published):
            return locked
        locked.band_low, locked.band_high, locked.published = low, high, published
        locked.save(update_fields=["band_low", "band_high", "published", "updated_at"])
        audit(
            user=user,
            action="band-change",
            collection=locked.collection,
            persona=locked.persona_id,
            old={"low": old[0], "high": old[1], "published": old[2]},
            new={"low": low, "high": high, "published": published},
            why=why,
        )
    return locked


# The rule the publish page suggests and the demo's day one applies (core.routing.band_rule;
# docs/publishing.md): the widest visible set expected to hold at most 1% sensitive, then
# a review band of at most one archivist-day (8 hours at the measured seconds a decision).
BAND_RULE = {"max_sensitive_share": 0.01, "max_review_hours": 8.0}


def band_suggested(*, inputs: BandInputs):
    """``core.routing.band_rule`` at ``BAND_RULE`` over the publication's inputs (None when
    no classifier is trained)."""
    from core.routing import band_rule

    if inputs.inputs.version is None:
        return None
    return band_rule(inputs.inputs.p, **BAND_RULE, **inputs.preview_args())
