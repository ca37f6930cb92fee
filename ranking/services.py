"""Django glue for the ranking core: build a collection's index and features, search it."""

import logging
import os
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotate.hooks import SearchUnavailable
from annotate.jobs import JobProgress, job_finish, job_queue, job_running, job_start
from annotate.models import Collection, Document, Job
from annotate.selectors import collection_index_documents
from core import features, lucene, neardup, visible
from core.highlight import query_stems, snippet

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IndexPaths:
    root: Path
    lucene: Path
    features: Path
    postings: Path
    neardup: Path


def index_paths(*, collection: Collection, version: int | None = None) -> IndexPaths:
    """Return where the index and features of a collection version live."""
    version = collection.indexed_version if version is None else version
    root = Path(settings.SASC_INDEX_DIR) / str(collection.pk) / f"v{version}"
    return IndexPaths(root, root / "lucene", root / "tfidf", root / "postings", root / "neardup")


def index_build(*, collection_id: int, progress=None, force: bool = False) -> dict:
    """Build the Lucene index and TF-IDF matrix for the collection's current version.

    Built in a temporary folder and renamed into place, so readers see either the old or
    the new version, never a half-built one; the folder goes if the build fails, and those
    of builds killed earlier are swept first. The documents are read once, in chunks, and
    both Lucene and TF-IDF are built from that one read, so the two hold the same documents
    even while an import adds more. No transaction is open during the build: the only write
    is progress (short statements between chunks) and the final switch of version.
    Idempotent: a version already built is kept unless ``force``. Returns counts and timings.
    """
    collection = Collection.objects.get(pk=collection_id)
    version = collection.version
    paths = index_paths(collection=collection, version=version)
    built = paths.root.exists() and paths.postings.exists() and paths.neardup.exists()
    if collection.indexed_version == version and built and not force:
        return {"documents": None, "skipped": True, "version": version}
    index_temporaries_sweep(collection=collection)
    total = Document.objects.filter(collection=collection).count()
    tmp = paths.root.with_name(f"{paths.root.name}{_tmp_suffix()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        result = _build_into(tmp, collection, total, progress)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if paths.root.exists():
        lucene.release(paths.lucene)
        features.forget(paths.features)
        neardup.forget(paths.neardup)
        shutil.rmtree(paths.root)
    tmp.rename(paths.root)
    with transaction.atomic():
        locked = Collection.objects.select_for_update().get(pk=collection_id)
        if locked.indexed_version is None or locked.indexed_version <= version:
            locked.indexed_version = version
            locked.indexed_at = timezone.now()
            locked.save(update_fields=["indexed_version", "indexed_at"])
    _remove_old_versions(collection, keep=version)
    return {**result, "version": version}


def _build_into(tmp: Path, collection: Collection, total: int, progress) -> dict:
    started = time.perf_counter()
    report = lambda n: progress(n, 2 * total) if progress else None  # noqa: E731
    postings = visible.PostingsBuilder()
    read: list[tuple[str, str]] = []

    def documents():
        for docid, text in collection_index_documents(collection=collection):
            postings.add(docid, lucene.analyze(text))
            read.append((docid, text))
            yield docid, text

    indexed = lucene.build_index(tmp / "lucene", documents(), progress=report)
    # The term counts of exactly what Lucene holds, for ranking over a visible subset
    # (core.visible; Lucene's own analysis, so the statistics are the index's).
    postings.finish().save(tmp / "postings")
    lucene_seconds = time.perf_counter() - started
    started = time.perf_counter()
    matrix = features.build_tfidf(read)
    feature_seconds = time.perf_counter() - started
    started = time.perf_counter()
    matrix = features.with_latent(matrix)  # the screening picker's latent topics
    latent_seconds = time.perf_counter() - started
    features.save(matrix, tmp / "tfidf")
    started = time.perf_counter()
    near = neardup.NearDuplicates.build(read)
    near.save(tmp / "neardup")
    neardup_seconds = time.perf_counter() - started
    if progress:
        progress(2 * max(total, len(read)), 2 * max(total, len(read)))
    return {
        "documents": indexed,
        "terms": len(matrix.vocabulary),
        "nonzeros": int(matrix.matrix.nnz),
        "lucene_seconds": round(lucene_seconds, 2),
        "features_seconds": round(feature_seconds, 2),
        "latent_seconds": round(latent_seconds, 2),
        "neardup_seconds": round(neardup_seconds, 2),
        "near_duplicate_pairs": int(len(near.neighbours) // 2),
    }


_TMP = ".tmp-"


def _tmp_suffix() -> str:
    return f"{_TMP}{socket.gethostname()}-{os.getpid()}"


def index_temporaries_sweep(*, collection: Collection | None = None, max_age: float = 3600) -> int:
    """Remove the temporary folders of index builds that were killed (their process is gone
    from this machine, or, for another machine's, untouched for ``max_age`` seconds); of one
    collection, or of all. Returns how many were removed."""
    base = Path(settings.SASC_INDEX_DIR)
    pattern = f"{collection.pk}/v*{_TMP}*" if collection is not None else f"*/v*{_TMP}*"
    removed = 0
    for path in base.glob(pattern):
        owner = path.name.split(_TMP, 1)[1]
        host, _, pid = owner.rpartition("-")
        here = host in ("", socket.gethostname())
        try:
            age = time.time() - path.stat().st_mtime
        except FileNotFoundError:
            continue
        if (here and not _alive(pid)) or age > max_age:
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def _alive(pid: str) -> bool:
    if not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return False  # this process is building nothing there now: a leftover of a retry
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_old_versions(collection: Collection, keep: int) -> None:
    base = Path(settings.SASC_INDEX_DIR) / str(collection.pk)
    for path in base.glob("v*"):
        if path.name != f"v{keep}" and _TMP not in path.name:
            lucene.release(path / "lucene")
            features.forget(path / "tfidf")
            neardup.forget(path / "neardup")
            shutil.rmtree(path, ignore_errors=True)


def reference_qrels(*, collection: Collection) -> dict[str, dict[str, int]]:
    """The collection's imported qrels: ``{topic number: {docid: grade}}``. Sources (files)
    are read as one; on a pair two sources grade differently, the grade of the source that
    added the pair last counts (the import warns of it, ``annotate.import_labels``)."""
    from annotate.models import ReferenceRelevance

    qrels: dict[str, dict[str, int]] = {}
    for number, docid, grade in (
        ReferenceRelevance.objects.filter(topic__collection=collection)
        .order_by("id")
        .values_list("topic__number", "document__docid", "grade")
    ):
        qrels.setdefault(number, {})[docid] = grade
    return qrels


def relevance_qrels(
    *, collection: Collection, path=None, fmt: str = "trec"
) -> dict[str, dict[str, int]]:
    """The qrels of ``path`` (a file in one of the import formats), else the collection's
    imported ones; ``ValueError`` naming what was wrong with the file."""
    return read_qrels_file(path, fmt) if path else reference_qrels(collection=collection)


def topics_with_relevant(*, collection: Collection, qrels) -> list:
    """The collection's topics (in its order) with a relevant document in ``qrels``."""
    return [
        t for t in collection.topics.all() if any(g > 0 for g in qrels.get(t.number, {}).values())
    ]


def collection_features(*, collection: Collection) -> features.FeatureMatrix:
    """Return the memory-mapped TF-IDF matrix of the collection's indexed version."""
    if collection.indexed_version is None:
        raise IndexNotReady(collection)
    return features.load(index_paths(collection=collection).features)


def collection_near_duplicates(*, collection: Collection) -> neardup.NearDuplicates | None:
    """The MinHash/LSH near-duplicate index of the collection's indexed version (built with
    it, memory-mapped); None when there is no index or it predates near-duplicates."""
    if collection.indexed_version is None:
        return None
    path = index_paths(collection=collection).neardup
    if not (path / "docids.json").exists():
        return None
    return neardup.NearDuplicates.load(path)


def near_duplicates(
    *, collection: Collection, docid: str, threshold: float = neardup.THRESHOLD, limit: int = 20
) -> list[tuple[str, float]]:
    """Documents whose word-shingle resemblance to this one (estimated Jaccard, MinHash)
    is at least ``threshold`` (never below ``neardup.THRESHOLD``, the level the index keeps),
    most similar first, itself left out: ``[(docid, similarity)]``. Empty when the
    collection has no index or the document is not in it."""
    index = collection_near_duplicates(collection=collection)
    if index is None:
        return []
    return index.neighbours_of(docid, threshold=threshold, limit=limit)


def near_duplicate_groups(*, collection: Collection, docids: list[str]) -> list[list[str]]:
    """Collapse a ranked list of docids into near-duplicate groups, each led by its best
    ranked member, in rank order (``NearDuplicates.collapse``: it reads the signatures of
    these documents only, so whatever else the collection holds, hidden documents included,
    cannot change the groups). Without a near-duplicate index every docid is its own group."""
    index = collection_near_duplicates(collection=collection)
    if index is None:
        return [[d] for d in docids]
    return index.collapse(docids)


class IndexNotReady(SearchUnavailable):
    """The collection has no built index yet."""

    def __init__(self, collection: Collection):
        super().__init__(f"collection {collection.slug!r} has no index yet; build it first")
        self.collection = collection


@dataclass
class SearchResult:
    document: Document
    score: float
    snippet: str


def collection_ranked_documents(
    *, collection: Collection, query: str, documents, k: int = 20, offset: int = 0
) -> list[tuple[Document, float]]:
    """Return ``(document, BM25 score)`` best first, keeping only documents in ``documents``.

    ``documents`` is the queryset the caller may see; hits outside it are dropped here,
    before anything about them is rendered.
    """
    if collection.indexed_version is None:
        raise IndexNotReady(collection)
    paths = index_paths(collection=collection)
    hits = lucene.search(paths.lucene, query, k=offset + k)[offset:]
    by_docid = {
        d.docid: d
        for d in documents.filter(collection=collection, docid__in=[h.docid for h in hits])
    }
    return [(by_docid[h.docid], h.score) for h in hits if h.docid in by_docid]


def result_snippet(doc: Document, stems: frozenset[str]) -> str:
    """The highlighted passage a result list shows for a document (body, else subject)."""
    return snippet(doc.body or doc.subject, stems, lucene.stem)


def collection_search(
    *, collection: Collection, query: str, documents, k: int = 20, offset: int = 0
) -> list[SearchResult]:
    """Run BM25 over the collection's index and return visible documents with snippets."""
    ranked = collection_ranked_documents(
        collection=collection, query=query, documents=documents, k=k, offset=offset
    )
    stems = query_stems(query, lucene.stem)
    return [SearchResult(doc, score, result_snippet(doc, stems)) for doc, score in ranked]


def collection_top_documents(*, collection: Collection, query: str, k: int) -> list[Document]:
    """Return the collection's first ``k`` documents for ``query``, best first (BM25); what
    annotate's ``ranked_documents`` hook asks for when a round's tasks come from a search.
    Raises ``IndexNotReady`` (a ``SearchUnavailable``) before the first index build."""
    ranked = collection_ranked_documents(
        collection=collection,
        query=query,
        documents=Document.objects.filter(collection=collection),
        k=k,
    )
    return [doc for doc, _score in ranked]


def job_index_create(*, collection: Collection, user=None) -> Job:
    """Record an index build and queue it once the transaction commits."""
    return job_queue(
        kind=Job.Kind.INDEX,
        task="ranking.tasks.index_build_task",
        collection=collection,
        user=user,
        message="Waiting for a worker to build the index",
    )


def _index_execute(job: Job, progress, *, force: bool = False) -> dict:
    with job_running(job):
        try:
            result = index_build(collection_id=job.collection_id, progress=progress, force=force)
        except Exception as exc:
            logger.exception("index job %s failed", job.pk)
            job_finish(
                job=job, ok=False, message=f"Index build failed: {type(exc).__name__}: {exc}"
            )
            raise
        if result.get("skipped"):
            message = f"Index already current (version {result['version']})"
        else:
            message = (
                f"Indexed {result['documents']} documents (version {result['version']}): "
                f"Lucene {result['lucene_seconds']} s, TF-IDF {result['features_seconds']} s, "
                f"latent topics {result['latent_seconds']} s, "
                f"{result['terms']} terms"
            )
        job_finish(job=job, ok=True, message=message, report=result)
    return result


def job_index_run(*, job_id: int) -> None:
    """Run a queued index build job."""
    job = job_start(job_id=job_id)
    if job is None:
        return
    _index_execute(job, JobProgress(job))


def index_recorded(*, collection: Collection, progress=None, force: bool = False) -> dict:
    """Build a collection's index now (command line, demo), recorded as a job."""
    now = timezone.now()
    job = Job.objects.create(
        kind=Job.Kind.INDEX,
        status=Job.Status.RUNNING,
        started_at=now,
        heartbeat_at=now,
        collection=collection,
        params={"source": "command line"},
    )
    return _index_execute(job, progress, force=force)


def read_qrels_file(path, fmt: str = "trec") -> dict[str, dict[str, int]]:
    """``{topic: {docid: grade}}`` from a qrels file (the import formats); ``ValueError``
    naming the file and lines when it cannot be read or is malformed."""
    from pathlib import Path

    from core.parsing import Issue
    from core.parsing.trec import iter_qrels

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    name = Path(path).name
    grades: dict[str, dict[str, int]] = {}
    problems = []
    for item in iter_qrels(data, name, fmt=fmt):
        if isinstance(item, Issue):
            if item.severity == "error":  # a note (grades stored as the nearest) is not
                problems.append(str(item))
        else:
            grades.setdefault(item.topic, {})[item.docid] = item.grade
    if problems:
        raise ValueError(f"{name} is malformed:\n" + "\n".join(problems[:20]))
    return grades
