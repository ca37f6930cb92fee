"""Reads for the searcher, archivist and lead pages."""

import statistics
from dataclasses import dataclass

from django.db.models import Count, F, Min, OuterRef, Q, Subquery
from django.db.models.functions import Abs
from django.utils import timezone

from annotate.models import Collection, Document, Persona
from review.models import (
    AuditEvent,
    Decision,
    Publication,
    Redaction,
    RedactionReason,
    ReleaseAudit,
    ReviewRequest,
    SearchLog,
)
from review.redaction import redaction_in_force

# --- The decision in force: one definition -----------------------------------------------
# A document's decision for a persona is its latest (by decided_at, then id). It is in force
# unless it is a reopening (the document goes back to the classifier) or a withholding whose
# last day has come (``until``: it is asked about again). Routing, the searcher's released
# list, reopening, the decisions page and the classifier's labels all read it from here.


def decision_in_force(kind: str, until, today) -> bool:
    """Whether a document's latest decision (``kind``, ``until``) holds on ``today``."""
    if kind == Decision.Kind.REOPEN:
        return False
    return not (kind == Decision.Kind.WITHHOLD and until is not None and until <= today)


def decisions_in_force_kinds(
    *, persona, today, collection=None, document_ids=None
) -> dict[int, str]:
    """``{document id: kind}`` of the decisions in force for ``persona`` over a collection
    or some documents (release, withhold or not relevant)."""
    decisions = Decision.objects.filter(persona=persona)
    if collection is not None:
        decisions = decisions.filter(document__collection=collection)
    if document_ids is not None:
        decisions = decisions.filter(document_id__in=list(document_ids))
    latest: dict[int, tuple[str, object]] = {}
    for doc_id, kind, until in (
        decisions.order_by("decided_at", "id")
        .values_list("document_id", "kind", "until")
        .iterator()
    ):
        latest[doc_id] = (kind, until)
    return {d: k for d, (k, until) in latest.items() if decision_in_force(k, until, today)}


def decision_labels(*, collection, persona) -> dict[int, int]:
    """The classifier's ``decisions`` labels: the annotations and imported labels, overridden
    by the decisions in force (withhold: sensitive; release: not; not relevant: no label)."""

    from ranking.classifier import sensitivity_labels

    labels: dict[int, int] = {}
    for base in ("annotations", "reference"):
        labels.update(sensitivity_labels(collection=collection, persona=persona, source=base))
    in_force = decisions_in_force_kinds(
        persona=persona, collection=collection, today=timezone.localdate()
    )
    for doc, kind in in_force.items():
        if kind in (Decision.Kind.WITHHOLD, Decision.Kind.RELEASE):
            labels[doc] = int(kind == Decision.Kind.WITHHOLD)
    return labels


def pending_reviews(*, collection, persona) -> dict[str, int]:
    """How the archivists' queue stands (documents waiting), for a classifier's report."""
    pending = ReviewRequest.objects.filter(
        persona=persona, document__collection=collection, status=ReviewRequest.Status.PENDING
    )
    return {"pending_reviews": pending.values("document_id").distinct().count()}


def decision_seconds(
    *, collection, recent: int = 200, minimum: int = 10
) -> tuple[float, int] | None:
    """The archivists' median seconds per decision on ``collection`` over its ``recent``
    newest measured decisions (``core.routing.seconds_per_decision``: gaps between an
    archivist's consecutive decisions, pauses left out), and how many; None under
    ``minimum`` (the publish page then uses ``ranking.classifier``'s default)."""
    import statistics

    from core.routing import seconds_per_decision

    rows = (
        Decision.objects.filter(document__collection=collection)
        .exclude(kind=Decision.Kind.REOPEN)
        .order_by("-decided_at", "-id")
        .values_list("decided_by_id", "decided_at")[: 10 * recent]
    )
    values = seconds_per_decision((who, at.timestamp()) for who, at in rows)[-recent:]
    if len(values) < minimum:
        return None
    return float(statistics.median(values)), len(values)


@dataclass(frozen=True)
class SearchNotice:
    """What a searcher is told about review. A function of the publication's settings and
    the deployment's ``SASC_REVIEW_WAIT`` alone: never of what is pending, withheld or
    hidden (how many documents wait, or whether any do, is itself information about hidden
    documents), so it reads the same after every search (docs/protection.md)."""

    wait: str  # "within a working day": the deployment's typical wait for a review


def search_notice(*, publication) -> SearchNotice | None:
    """The review notice searchers of ``publication`` see (None: the lead turned it off;
    ``publication=None``: the notice of the search home page, for every collection)."""
    from django.conf import settings

    if publication is not None and not publication.show_pending_notice:
        return None
    return SearchNotice(wait=settings.SASC_REVIEW_WAIT)


def collections_published():
    """The collections open for search, by name (what a searcher may know of them: names
    and descriptions, no counts)."""
    from annotate.models import Collection

    return Collection.objects.filter(publication__published=True).order_by("name")


def review_queue_summary() -> dict[str, int]:
    """For the archivist's home page: documents waiting (one per persona and document) and
    the searches waiting on them."""
    pending = ReviewRequest.objects.filter(status=ReviewRequest.Status.PENDING)
    return {
        "documents": pending.values("persona_id", "document_id").distinct().count(),
        "searches": pending.values("search_id").distinct().count(),
    }


QUEUE_ORDERS = {
    "waiting": ("Searchers waiting longest first, then most uncertain", ("first", "uncertainty")),
    "uncertain": ("Most uncertain first, then waiting longest", ("uncertainty", "first")),
    "searches": ("Most searches waiting first, then waiting longest", ("-searches", "first")),
}


def review_queue(
    *, order: str = "waiting", limit: int = 100, pairs: list[tuple[int, int]] | None = None
) -> list[dict]:
    """Pending documents, one row per (persona, document), in one of ``QUEUE_ORDERS``
    (uncertainty: the distance of P(sensitive) from 0.5, the least over its requests);
    with ``pairs``, only those (persona id, document id) that are still pending."""
    keys = QUEUE_ORDERS.get(order, QUEUE_ORDERS["waiting"])[1]
    pending = ReviewRequest.objects.filter(status=ReviewRequest.Status.PENDING)
    if pairs is not None:
        wanted = Q(pk__in=[])
        for persona_id, document_id in pairs:
            wanted |= Q(persona_id=persona_id, document_id=document_id)
        pending = pending.filter(wanted)
    rows = list(
        pending.values("persona_id", "document_id")
        .annotate(
            first=Min("requested_at"),
            searches=Count("search", distinct=True),
            uncertainty=Min(Abs(F("p_sensitive") - 0.5)),
        )
        .order_by(*keys, "document_id", "persona_id")[:limit]
    )
    first_request = {}
    for r in (
        pending.filter(document_id__in={row["document_id"] for row in rows})
        .select_related("document", "persona", "search")
        .order_by("-requested_at", "-id")
    ):
        first_request[(r.persona_id, r.document_id)] = r  # the earliest one wins
    for row in rows:
        row["request"] = first_request[(row["persona_id"], row["document_id"])]
    return rows


@dataclass
class QueueItem:
    """One queued (persona, document) as the archivist's queue shows it."""

    persona_id: int
    document: object  # annotate.models.Document
    persona_name: str
    searches: int  # searches waiting on it
    queries: list[str]  # the distinct queries of those searches, oldest first
    first: object  # when the first of them asked
    p: float | None  # P(sensitive) of the current classifier; None: not scored by it
    version: int | None  # the current classifier's version; None: none trained yet
    band: tuple[float, float] | None  # the publication's band, when published
    snippet: str
    sender: str
    participants: list[str]
    cluster: str | None = None  # the near-duplicate cluster (``core.neardup``), if any
    thread_key: str = ""  # the importer's thread (Message-ID / References), if it gave one

    @property
    def waited_seconds(self) -> float:
        """How long the first search has waited (the queue says "under a minute" below 60)."""
        return (timezone.now() - self.first).total_seconds()


def _participants(document) -> list[str]:
    addresses = document.addresses or {}
    found = [addresses.get("from") or ""]
    found += [a for key in ("to", "cc") for a in addresses.get(key) or []]
    return [a.lower() for a in found if a]


def review_queue_threads(
    *, order: str = "waiting", limit: int = 200, pairs: list[tuple[int, int]] | None = None
) -> list:
    """The review queue (``review_queue``) as the archivist reads it: each item with its
    sender, date, a snippet, the queries waiting on it and the current classifier's view,
    grouped by thread and near-duplicate cluster (``core.queue_groups``), groups in the order
    of their first item; with ``pairs``, only those still pending."""
    from core.queue_groups import body_snippet, threads_group
    from ranking.classifier import stored_scores
    from ranking.services import collection_near_duplicates
    from review.models import Publication

    rows = review_queue(order=order, limit=limit, pairs=pairs)
    queries: dict[tuple[int, int], list[str]] = {}
    for persona_id, document_id, query in (
        ReviewRequest.objects.filter(
            status=ReviewRequest.Status.PENDING,
            document_id__in={r["document_id"] for r in rows},
        )
        .order_by("requested_at", "id")
        .values_list("persona_id", "document_id", "search__query")
    ):
        seen = queries.setdefault((persona_id, document_id), [])
        if query not in seen:
            seen.append(query)
    bands = {
        (p.collection_id, p.persona_id): (p.band_low, p.band_high)
        for p in Publication.objects.all()
    }
    scores: dict[tuple[int, int], tuple] = {}  # (collection, persona) -> (model, stored)
    near: dict[int, object] = {}  # collection -> its near-duplicate index (or None)
    items = []
    for row in rows:
        request = row["request"]
        doc, persona = request.document, request.persona
        key = (doc.collection_id, persona.pk)
        if key not in scores:
            scores[key] = stored_scores(collection=doc.collection, persona=persona)
        model, stored = scores[key]
        if doc.collection_id not in near:
            near[doc.collection_id] = collection_near_duplicates(collection=doc.collection)
        cluster = near[doc.collection_id].cluster_of(doc.docid) if near[doc.collection_id] else None
        people = _participants(doc)
        items.append(
            QueueItem(
                persona_id=persona.pk,
                document=doc,
                persona_name=persona.name,
                searches=row["searches"],
                queries=queries.get((persona.pk, doc.pk), []),
                first=row["first"],
                p=stored.p.get(doc.docid) if stored else None,
                version=model.version if model else None,
                band=bands.get(key),
                snippet=body_snippet(doc.body),
                sender=doc.from_header or (people[0] if people else ""),
                participants=people,
                cluster=f"{doc.collection_id}:{cluster}" if cluster else None,
                thread_key=f"{doc.collection_id}:{key}" if (key := _thread_key(doc)) else "",
            )
        )
    return threads_group(
        items,
        subject=lambda i: i.document.subject,
        participants=lambda i: i.participants,
        thread=lambda i: i.thread_key,
        cluster=lambda i: i.cluster,
    )


def _thread_key(document) -> str:
    # The importers of real mail formats store a thread key (Message-ID / In-Reply-To /
    # References) on the document; collections imported before that have none.
    return getattr(document, "thread_key", "") or ""


def decisions_in_force(*, kind: str = "", limit: int = 200) -> list[Decision]:
    """The decisions in force (``decision_in_force``) over every persona and document, newest
    first: each (persona, document)'s latest decision by (decided_at, id), unless it is a
    reopening or a withholding whose last day has come."""

    latest = (
        Decision.objects.filter(
            persona_id=OuterRef("persona_id"), document_id=OuterRef("document_id")
        )
        .order_by("-decided_at", "-id")
        .values("id")[:1]
    )
    decisions = (
        Decision.objects.annotate(latest=Subquery(latest))
        .filter(id=F("latest"))
        .exclude(kind=Decision.Kind.REOPEN)
        .exclude(kind=Decision.Kind.WITHHOLD, until__lte=timezone.localdate())
    )
    if kind:
        decisions = decisions.filter(kind=kind)
    return list(
        decisions.select_related("persona", "document", "decided_by").order_by("-decided_at")[
            :limit
        ]
    )


def exposing_queries(*, document, persona, limit: int = 10) -> list[str]:
    """Logged queries whose review requests or results put this document in front of a
    searcher (the query log side of reverse search, docs/domain.md §10)."""
    # Each query once (a model's default ordering would make DISTINCT keep repeats).
    queries = list(
        ReviewRequest.objects.filter(document=document, persona=persona)
        .order_by("search__query")
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


def decisions_on(*, document, persona, threshold: float | None = None) -> list[Decision]:
    """Earlier decisions on this document, on its exact duplicates (same content hash) and on
    its near-duplicates (word-shingle resemblance at least ``threshold``, by default
    ``core.neardup.THRESHOLD``: the collection's MinHash/LSH index), newest first; each
    carries ``similarity`` (1.0 for the document itself and exact duplicates)."""
    from core import neardup
    from ranking.services import near_duplicates

    similar = dict(
        near_duplicates(
            collection=document.collection,
            docid=document.docid,
            threshold=neardup.THRESHOLD if threshold is None else threshold,
        )
    )
    decisions = list(
        Decision.objects.filter(persona=persona, document__collection=document.collection)
        .filter(
            Q(document__content_hash=document.content_hash) | Q(document__docid__in=list(similar))
        )
        .select_related("decided_by", "document")
        .order_by("-decided_at")[:20]
    )
    for d in decisions:
        exact = d.document.content_hash == document.content_hash
        d.similarity = 1.0 if exact else similar.get(d.document.docid, 0.0)
        d.same_document = d.document_id == document.pk
    return decisions


@dataclass
class SessionMeasures:
    """One searcher's search, measured (docs/domain.md §7, O-CS-DCG)."""

    search: SearchLog
    relevance_from: str  # "qrels of topic N", "judgments of topic N", or "none"
    shown: int  # documents shown at once
    requests: int  # review requests it made
    reviewed: int  # of those, decided
    released: int
    pending: int
    sensitive_shown: int  # shown at once or after release, and sensitive as now known
    waited: list[float]  # seconds from the search to each release
    waiting: float | None  # seconds the oldest still pending request has waited
    o_cs_dcg: float | None  # None without relevance evidence

    @property
    def mean_wait(self) -> float | None:
        return sum(self.waited) / len(self.waited) if self.waited else None


def loop_sessions(
    *,
    collection,
    k: int = 10,
    effort: float = 0.1,
    cost: float = 12.0,
    limit: int = 200,
) -> tuple[list[SessionMeasures], dict]:
    """The newest ``limit`` searches of a published collection, each measured, and the
    totals over them.

    Relevance comes from explicit judgments only, of the collection's topic whose title is
    the query (case and spacing aside): its imported qrels, then the annotation projects'
    final labels (their rule and adjudications) for documents the qrels lack. A search with
    no such topic, or a topic with neither, has no relevance evidence: it is counted, not
    measured (a release or an open is not evidence of relevance: the measure would reward
    its own outcome). Sensitivity is what is known now: the persona's labels with the
    archivists' decisions in force (``ranking.classifier``, source ``decisions``); a
    document released for a search and known sensitive now is charged as shown."""

    from annotate.labels import final_labels
    from core import measures
    from ranking.services import reference_qrels
    from review.models import Publication

    publication = Publication.objects.filter(collection=collection).first()
    if publication is None:
        return [], {}
    persona = publication.persona
    searches = list(
        SearchLog.objects.filter(collection=collection, persona=persona)
        .select_related("searcher")
        .order_by("-created_at", "-id")[:limit]
    )
    requests: dict[int, list] = {}
    for r in ReviewRequest.objects.filter(search__in=searches).order_by("rank"):
        requests.setdefault(r.search_id, []).append(r)
    sensitive = {
        doc
        for doc, label in decision_labels(collection=collection, persona=persona).items()
        if label
    }
    topics = {" ".join(t.title.lower().split()): t.number for t in collection.topics.all()}
    qrels = reference_qrels(collection=collection) if topics else {}
    judged: dict[str, dict[str, int]] = {}
    for project in collection.projects.all() if topics else []:
        for (number, docid), (grade, _rule) in final_labels(project).relevance.items():
            judged.setdefault(number, {}).setdefault(docid, grade)
    docids = dict(
        collection.documents.filter(
            pk__in={pk for s in searches for pk in s.shown}
            | {r.document_id for rs in requests.values() for r in rs}
        ).values_list("pk", "docid")
    )
    truth = dict.fromkeys(sensitive, True)
    now = timezone.now()
    rows = []
    for s in searches:
        mine = requests.get(s.pk, [])
        decided = [r for r in mine if r.status != ReviewRequest.Status.PENDING]
        released = [r for r in mine if r.status == ReviewRequest.Status.RELEASED]
        session_docs = list(s.shown) + [r.document_id for r in mine]
        number = topics.get(" ".join(s.query.lower().split()))
        evidence = {**judged.get(number, {}), **qrels.get(number, {})}
        relevance = {pk: evidence.get(docids.get(pk), 0) for pk in session_docs}
        if number in qrels:
            source = f"qrels of topic {number}"
        elif evidence:
            source = f"judgments of topic {number}"
        else:
            source = "none"
        shown_after = [r.document_id for r in released]
        rows.append(
            SessionMeasures(
                search=s,
                relevance_from=source,
                shown=len(s.shown),
                requests=len(mine),
                reviewed=len(decided),
                released=len(released),
                pending=len(mine) - len(decided),
                sensitive_shown=sum(1 for pk in list(s.shown) + shown_after if pk in sensitive),
                waited=[(r.decided_at - r.requested_at).total_seconds() for r in released],
                waiting=max(
                    ((now - r.requested_at).total_seconds() for r in mine if r.decided_at is None),
                    default=None,
                ),
                o_cs_dcg=measures.o_cs_dcg(
                    list(s.shown),
                    [r.document_id for r in decided],
                    relevance,
                    truth,
                    effort=effort,
                    k=k,
                    cost=cost,
                    released=set(shown_after),
                )
                if source != "none"
                else None,
            )
        )
    waits = [w for r in rows for w in r.waited]
    measured = [r.o_cs_dcg for r in rows if r.o_cs_dcg is not None]
    totals = {
        "sessions": len(rows),
        # The page measures the newest ``limit`` searches and says of how many in all, so
        # its "Searches" never reads as the collection's total when it is not.
        "searches_all": SearchLog.objects.filter(collection=collection, persona=persona).count(),
        "measured": len(measured),
        "o_cs_dcg_mean": sum(measured) / len(measured) if measured else None,
        "shown": sum(r.shown for r in rows),
        "requests": sum(r.requests for r in rows),
        "reviewed": sum(r.reviewed for r in rows),
        "released": sum(r.released for r in rows),
        "pending": sum(r.pending for r in rows),
        "sensitive_shown": sum(r.sensitive_shown for r in rows),
        "wait_median": statistics.median(waits) if waits else None,
        "wait_max": max(waits) if waits else None,
    }
    return rows, totals


def redacted_collections() -> list[tuple]:
    """``(collection, persona)`` of every pair with a redaction version, by collection name."""
    pairs = Redaction.objects.values_list("document__collection", "persona").distinct().order_by()
    collections = Collection.objects.in_bulk({c for c, _p in pairs})
    personas = Persona.objects.in_bulk({p for _c, p in pairs})
    return sorted(
        ((collections[c], personas[p]) for c, p in set(pairs)),
        key=lambda cp: (cp[0].name, cp[1].name),
    )


def redactions_recent(*, limit: int = 200) -> list[dict]:
    """Redacted documents (persona, document), the most recently changed first, each with
    every version newest first and whether the newest is in force today."""
    today = timezone.localdate()
    groups: dict[tuple[int, int], list] = {}
    for r in (
        Redaction.objects.select_related("persona", "document__collection", "made_by")
        .order_by("-made_at", "-id")
        .iterator()
    ):
        groups.setdefault((r.persona_id, r.document_id), []).append(r)
        if len(groups) > limit:
            groups.popitem()
            break
    return [
        {
            "persona": versions[0].persona,
            "document": versions[0].document,
            "versions": versions,
            "in_force": redaction_in_force(versions[0], today),
        }
        for versions in groups.values()
    ]


# --- What the pages look up ----------------------------------------------------------------


def collection_published(*, slug: str) -> Collection | None:
    """The collection open for search under this slug (None: none, or not open)."""
    return Collection.objects.filter(slug=slug, publication__published=True).first()


def collection_with_publication(*, slug: str) -> Collection | None:
    """The collection under this slug if it has a publication (open for search or not)."""
    return Collection.objects.filter(slug=slug, publication__isnull=False).first()


def collections_with_publication():
    """The collections with a publication (open for search or not), by name."""
    return Collection.objects.filter(publication__isnull=False).order_by("name")


def search_of(*, user, collection, search_id: int) -> SearchLog | None:
    """One of this searcher's own searches of the collection."""
    return SearchLog.objects.filter(pk=search_id, searcher=user, collection=collection).first()


def review_pair(*, persona_id: int, document_id: int) -> tuple[Persona, Document] | None:
    """The persona and the document (with its collection) a review page names."""
    persona = Persona.objects.filter(pk=persona_id).first()
    if persona is None:
        return None
    document = document_with_collection(document_id=document_id)
    return None if document is None else (persona, document)


def review_pairs(*, pairs: list[tuple[int, int]]) -> list[tuple[Persona, Document]]:
    """The (persona, document) of each (persona id, document id) that exists, in order."""
    personas = Persona.objects.in_bulk([p for p, _d in pairs])
    docs = Document.objects.select_related("collection").in_bulk([d for _p, d in pairs])
    return [(personas[p], docs[d]) for p, d in pairs if p in personas and d in docs]


def personas_by_id(*, ids) -> dict[int, Persona]:
    return Persona.objects.in_bulk(list(ids))


def document_with_collection(*, document_id: int) -> Document | None:
    return Document.objects.select_related("collection").filter(pk=document_id).first()


def publication_of(*, collection, persona=None) -> Publication | None:
    """The collection's publication (for ``persona`` only, if given), with its persona."""
    publications = Publication.objects.filter(collection=collection)
    if persona is not None:
        return publications.filter(persona=persona).first()
    return publications.select_related("persona").first()


def redaction_reason_labels() -> dict[str, str]:
    """``{code: label}`` of every redaction reason, retired ones included."""
    return dict(RedactionReason.objects.values_list("code", "label"))


def audit_events(*, action: str = ""):
    """The audit log, newest first, with its users and collections (one action, if given)."""
    events = AuditEvent.objects.select_related("user", "collection").order_by("-at", "-id")
    return events.filter(action=action) if action else events


def audit_actions() -> list[str]:
    """Every action the audit log holds, sorted."""
    return list(AuditEvent.objects.values_list("action", flat=True).distinct().order_by("action"))


def release_audits_open() -> list:
    """The release audits being judged, each with ``left``: its sampled messages no archivist
    has judged yet (the review queue lists them)."""
    return list(
        ReleaseAudit.objects.filter(status=ReleaseAudit.Status.OPEN)
        .select_related("publication__collection", "persona")
        .annotate(left=Count("items", filter=Q(items__sensitive__isnull=True)))
        .order_by("created_at")
    )
