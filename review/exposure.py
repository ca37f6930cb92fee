"""Exposing queries in the product: which searches would show a document (issue 17).

The archivist (and a lead) see, for a document and the publication's persona, the candidate
queries that put it among the first ``review_k`` results a searcher is shown, with that
place; for a document searchers cannot see now (withheld, predicted sensitive, in the band)
the place a release would give it (``core.exposing_queries``).

Nothing here runs on a request path: a page asks (``exposure_request``: one row, a task
queued after commit) and polls the row; the worker computes (``exposure_compute``), once per
(document, persona, index version), again only when asked to. A searcher never reaches any
of it, and computing writes no search, no review request and nothing a searcher is shown.

The candidate queries of an index version (topic titles and descriptions, the query log,
queries generated from the collection) and their Lucene index live beside the index version
(``<index>/exposure``), built by the first exposure computed on that version; queries logged
after that build are verified directly, every one of them.
"""

import json
import logging
import os
import shutil
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from django.db import IntegrityError, transaction
from django.db.models import Count, Max
from django.utils import timezone

from annotate.jobs import queue_on_commit
from annotate.models import Collection, Document, Persona, Topic
from annotate.selectors import collection_index_documents
from core import exposing_queries, lucene
from ranking.services import IndexNotReady, index_paths
from review import visibility
from review.audit import audit
from review.models import Exposure, Publication, SearchLog

logger = logging.getLogger(__name__)

# How many candidates reverse search hands to verification (n_d->q of the paper is 100; the
# evaluation in docs/exposure.md shows what 100, 200 and 500 find and cost).
REVERSE_DEPTH = 200
# It doubles until two tails in a row of what it verified held no exposing query
# (core.exposing_queries.expose_deepening), up to this.
MAX_REVERSE_DEPTH = 25_600
KEPT = 1000  # exposing queries stored per document (the card says how many there are in all)
SHOWN = 10  # shown before "show all"
GAMMA = 0.5  # the searcher's RBP persistence for the exposure weight
_lock = threading.Lock()
_sets: dict[str, "CandidateSet"] = {}
# per collection: the newest log id counted, the rows counted, that row's time, the counts
_counts: dict[int, tuple] = {}


class ExposureError(Exception):
    """Exposure cannot be computed for this document now; the message says why."""


@dataclass(frozen=True)
class CandidateSet:
    root: Path
    candidates: list[exposing_queries.Candidate]
    log_until: int  # the newest SearchLog id the set holds
    counts: dict

    @property
    def lucene(self) -> Path:
        return self.root / "lucene"


def _log_queries(collection: Collection, after: int = 0):
    rows = (
        SearchLog.objects.filter(collection=collection, pk__gt=after)
        .order_by("pk")
        .values_list("pk", "query")
    )
    return list(rows.iterator())


def candidates_build(*, collection: Collection) -> CandidateSet:
    """Build (or load) the candidate queries of the collection's index version and their
    Lucene index. Built in a temporary folder and renamed into place, so a concurrent
    worker sees the old state or the finished set, never half of one."""
    if collection.indexed_version is None:
        raise IndexNotReady(collection)
    root = index_paths(collection=collection).root / "exposure"
    loaded = _sets.get(str(root))
    if loaded is not None and root.exists():
        return loaded
    if not (root / "meta.json").exists():
        _build(collection, root)
    meta = json.loads((root / "meta.json").read_text(encoding="utf-8"))
    cset = CandidateSet(
        root,
        exposing_queries.load_candidates(root / "candidates.jsonl"),
        meta["log_until"],
        meta["counts"],
    )
    with _lock:
        _sets[str(root)] = cset
    return cset


def _build(collection: Collection, root: Path) -> None:
    started = time.perf_counter()
    given = []
    for title, description in Topic.objects.filter(collection=collection).values_list(
        "title", "description"
    ):
        given.append(("topic", title))
        if description.strip():
            given.append(("topic", description))
    log = _log_queries(collection)
    given += [("log", q) for _pk, q in log]
    generated = exposing_queries.generate_queries(
        lambda: collection_index_documents(collection=collection), lucene.stem
    )
    candidates = exposing_queries.merge_candidates(given, generated, lucene.analyze)
    tmp = root.with_name(f"exposure.tmp-{socket.gethostname()}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        exposing_queries.save_candidates(candidates, tmp / "candidates.jsonl")
        lucene.build_index(tmp / "lucene", ((str(c.qid), c.text) for c in candidates))
        counts = {s: sum(1 for c in candidates if c.source == s) for s in exposing_queries.SOURCES}
        meta = {
            "log_until": log[-1][0] if log else 0,
            "counts": counts,
            "seconds": round(time.perf_counter() - started, 2),
        }
        (tmp / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        try:
            tmp.rename(root)
        except OSError:  # another worker finished first: keep theirs
            if not (root / "meta.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    logger.info("exposure candidates of %s: %s", collection.slug, meta)


def exposure_current(*, document: Document, persona: Persona) -> Exposure | None:
    """The exposure of the document for the persona under the current index version."""
    version = document.collection.indexed_version
    if version is None:
        return None
    return Exposure.objects.filter(
        document=document, persona=persona, index_version=version
    ).first()


def exposure_request(
    *, user, document: Document, persona: Persona, again: bool = False
) -> Exposure | None:
    """Ask the worker for the document's exposure under the current index version, unless
    it is there or on its way; ``again`` recomputes a finished one (decisions and the query
    log change ranks and candidates). None when the collection has no index yet."""
    version = document.collection.indexed_version
    if version is None:
        return None
    current = exposure_current(document=document, persona=persona)
    if current is not None and not (
        again and current.status in (Exposure.Status.READY, Exposure.Status.FAILED)
    ):
        return current
    try:
        with transaction.atomic():
            if current is None:
                current = Exposure.objects.create(
                    document=document,
                    persona=persona,
                    index_version=version,
                    requested_by=user,
                    requested_at=timezone.now(),
                )
            else:
                updated = Exposure.objects.filter(
                    pk=current.pk, status__in=[Exposure.Status.READY, Exposure.Status.FAILED]
                ).update(
                    status=Exposure.Status.QUEUED,
                    requested_by=user,
                    requested_at=timezone.now(),
                    error="",
                )
                if not updated:  # someone else asked first
                    current.refresh_from_db()
                    return current
                current.refresh_from_db()
            audit(
                user=user,
                action="exposure-request",
                collection=document.collection,
                document=document,
                persona=persona.pk,
                index_version=version,
            )
            queue_on_commit("review.tasks.exposure_task", current.pk, robust=True)
    except IntegrityError:  # a concurrent first request made the row
        return exposure_current(document=document, persona=persona)
    return current


def exposure_compute(*, exposure_id: int) -> Exposure:
    """Compute a requested exposure (the worker; idempotent: a ready one is left alone)."""
    row = Exposure.objects.select_related("document__collection", "persona").get(pk=exposure_id)
    if row.status == Exposure.Status.READY:
        return row
    Exposure.objects.filter(pk=row.pk).update(status=Exposure.Status.RUNNING)
    try:
        result = _compute(row)
    except (ExposureError, IndexNotReady, KeyError) as exc:
        message = str(exc) if not isinstance(exc, IndexNotReady) else "the index is being built"
        Exposure.objects.filter(pk=row.pk).update(
            status=Exposure.Status.FAILED, error=message.strip("'\""), computed_at=timezone.now()
        )
        row.refresh_from_db()
        return row
    except Exception as exc:
        Exposure.objects.filter(pk=row.pk).update(
            status=Exposure.Status.FAILED,
            error=f"unexpected error: {type(exc).__name__}",
            computed_at=timezone.now(),
        )
        raise
    Exposure.objects.filter(pk=row.pk).update(
        status=Exposure.Status.READY, computed_at=timezone.now(), error="", **result
    )
    row.refresh_from_db()
    return row


def _compute(row: Exposure) -> dict:
    doc, persona = row.document, row.persona
    collection = doc.collection
    if collection.indexed_version != row.index_version:
        raise ExposureError("the index was rebuilt since this was asked for; ask again")
    publication = (
        Publication.objects.filter(collection=collection)
        .select_related("collection", "persona")
        .first()
    )
    if publication is None:
        raise ExposureError("the collection is not set up for searchers (no publication)")
    if publication.persona_id != persona.pk:
        raise ExposureError(f"searchers of this collection are protected for {publication.persona}")
    started = time.perf_counter()
    cset = candidates_build(collection=collection)
    built = time.perf_counter()
    view = visibility.view(publication)
    try:
        ranker = exposing_queries.ExposureRanker(
            view.index, view.postings, doc.docid, k=publication.review_k
        )
    except KeyError as exc:
        raise ExposureError("the document is newer than the index; rebuild the index") from exc
    # Terms weighted by how the document's score compares with the k-th best for each:
    # recall in the first 20 at 40,000 messages 0.994 against 0.892 (bench/exposure.py).
    weights = exposing_queries.document_query(
        view.postings, ranker.row, view.index, weighting="threshold", k=publication.review_k
    )
    newer = _log_queries(collection, after=cset.log_until)
    base = len(cset.candidates)
    extra = [
        exposing_queries.Candidate(base + i, q, "log", tuple(lucene.analyze(q)))
        for i, (_pk, q) in enumerate(newer)
        if q.strip()
    ]

    def search(depth: int) -> list[tuple[int, float]]:
        hits = lucene.reverse_search(cset.lucene, weights, k=depth)
        return [(int(h.docid), h.score) for h in hits]

    deep = exposing_queries.expose_deepening(
        ranker,
        cset.candidates,
        search,
        whole_document=exposing_queries.whole_document(view.postings, ranker.row, weights),
        extra=extra,
        depth=REVERSE_DEPTH,
        max_depth=MAX_REVERSE_DEPTH,
        gamma=GAMMA,
    )
    found = deep.found
    chosen = {c.qid: c for c in extra}
    queries = exposure_order(
        [(e, chosen.get(e.qid) or cset.candidates[e.qid]) for e in found],
        _log_counts(collection),
    )
    return {
        "visible": ranker.visible,
        "queries": queries[:KEPT],
        "summary": {
            "candidates": len(cset.candidates) + len(extra),
            "by_source": cset.counts,
            "retrieved": deep.depth,
            "verified": deep.verified,
            "exposing": len(queries),
            "logged_since": len(extra),
            # every candidate sharing a word with the document was verified (exact count),
            # or the reverse search stopped deepening first (a lower bound: "at least")
            "complete": deep.complete,
            "k": publication.review_k,
            "visible_set": int(view.index.n),
            "exposure": round(sum(q["weight"] for q in queries), 4),
            "seconds": round(time.perf_counter() - built, 3),
            "candidates_seconds": round(built - started, 3),
        },
    }


def _log_counts(collection: Collection) -> dict[tuple[str, ...], int]:
    """How often searchers ran each query of the collection, by its analysed terms as a bag
    (what the ranker sees: "Budget  meeting" and "meeting budget" are one query). Kept per
    worker process and brought up to date with the searches logged since (analysing a query
    costs about 0.1 ms: a log of 10,000 distinct queries once, not at every exposure); a
    log that lost rows (none is deleted today) is counted again."""
    logs = SearchLog.objects.filter(collection=collection).order_by()
    with _lock:
        last, rows, stamp, counts = _counts.get(collection.pk, (0, 0, None, {}))
    if rows and (
        logs.filter(pk__lte=last).count() != rows
        or logs.filter(pk=last).values_list("created_at", flat=True).first() != stamp
    ):
        last, rows, counts = 0, 0, {}
    counts = dict(counts)
    new = logs.filter(pk__gt=last).values("query").annotate(n=Count("id"), top=Max("id"))
    for query, n, top in new.values_list("query", "n", "top").iterator():
        key = tuple(sorted(lucene.analyze(query))) if query.strip() else ()
        if key:
            counts[key] = counts.get(key, 0) + n
        last, rows = max(last, top), rows + n
    stamp = logs.filter(pk=last).values_list("created_at", flat=True).first()
    with _lock:
        _counts[collection.pk] = (last, rows, stamp, counts)
    return counts


SOURCE_ORDER = {"log": 0, "topic": 1, "generated": 2}


def exposure_order(found, searches: dict[tuple[str, ...], int]) -> list[dict]:
    """The exposing queries as the archivist reads them, most exposing first: by the rank
    they give the document, then by how likely a searcher is to type them (queries searchers
    ran, most often run first; then topics; then generated ones by their collection
    weight), then by text. ``found``: (``core.exposing_queries.Exposing``, its ``Candidate``)
    pairs; ``searches``: how often each query (terms as a bag) was run. One row per query
    (a bag of terms found twice, e.g. logged again after the candidates were built, once)."""
    rows = []
    for e, c in found:
        key = tuple(sorted(c.terms))
        n = searches.get(key, 0)
        tier = 0 if n or c.source == "log" else SOURCE_ORDER[c.source]
        rows.append(
            (e.rank, tier, -n, -c.weight, SOURCE_ORDER[c.source], e.text.lower(), key, e, n)
        )
    rows.sort(key=lambda r: r[:6])
    seen, out = set(), []
    for *_order, key, e, n in rows:
        if key in seen:
            continue
        seen.add(key)
        badge = "searched" if n or e.source == "log" else e.source
        out.append(
            {
                "text": e.text,
                "source": e.source,
                "rank": e.rank,
                "weight": e.weight,
                "searches": n,
                "badge": badge,
            }
        )
    return out


def exposure_overview(row: Exposure) -> dict:
    """What the card says in one glance of a ready exposure: how many queries expose the
    document at #1 and in the first k, how many of them searchers ran, per source; the first
    ``SHOWN`` rows and the rest (behind "show all"). Rows computed before the order above
    (no ``badge``) are read as their source says."""
    queries = [
        {**q, "badge": q.get("badge") or ("searched" if q["source"] == "log" else q["source"])}
        for q in row.queries
    ]
    badges = [q["badge"] for q in queries]
    return {
        "first": sum(1 for q in queries if q["rank"] == 0),
        "in_k": row.summary.get("exposing", len(queries)),
        "stored": len(queries),
        # Rows computed before the deepening search (no "complete") may have missed some.
        "at_least": not row.summary.get("complete", False),
        "logged": row.summary.get("by_source", {}).get("log", 0)
        + row.summary.get("logged_since", 0),
        "searched": badges.count("searched"),
        "topic": badges.count("topic"),
        "generated": badges.count("generated"),
        "top": queries[:SHOWN],
        "rest": queries[SHOWN:],
    }
