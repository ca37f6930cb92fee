"""Django glue for the persona sensitivity classifier (``core.sensitivity``): read a
collection's messages and a persona's labels, train, store a version, report."""

import importlib
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotate.entities import entity_counts
from annotate.jobs import JobProgress, job_finish, job_queue, job_running, job_start
from annotate.labels import persona_sensitivity_labels
from annotate.models import (
    Attachment,
    Collection,
    Document,
    Job,
    Persona,
    ReferenceSensitivity,
)
from core import calibration, sensitivity
from ranking.models import SensitivityModel

logger = logging.getLogger(__name__)
SOURCES = ("annotations", "reference", "categories")
TITLES = {
    "annotations": "Annotators' persona-sensitivity answers",
    "reference": "Imported sensitivity labels",
    "categories": "Category codes as a surrogate",
}
# Label sources and report lines other apps add when Django starts (the review app: the
# archivists' decisions, the queue at each retrain), so that ranking never imports them.
_ADDED_SOURCES: dict[str, Callable[..., dict[int, int]]] = {}
_REPORT_LINES: list[Callable[..., dict]] = []


def label_source_add(name: str, title: str, labels: Callable[..., dict[int, int]]) -> None:
    """Offer ``labels(collection=, persona=)`` -> ``{document id: 0/1}`` as source ``name``
    (``title``: how the lead's page names it)."""
    _ADDED_SOURCES[name] = labels
    TITLES[name] = title


def report_lines_add(lines: Callable[..., dict]) -> None:
    """Add ``lines(collection=, persona=)`` -> ``{key: value}`` to every training report."""
    if lines not in _REPORT_LINES:
        _REPORT_LINES.append(lines)


def sources() -> tuple[str, ...]:
    """Every label source a classifier can be trained from."""
    return (*SOURCES, *_ADDED_SOURCES)


_PRIORITY = re.compile(
    r"^(x-priority:\s*[12]\b|importance:\s*high\b|priority:\s*urgent\b|x-msmail-priority:\s*high\b)",
    re.IGNORECASE | re.MULTILINE,
)
_REPLY = re.compile(r"^\s*(re|aw|sv)\s*:", re.IGNORECASE)


class ClassifierError(ValueError):
    """Labels or settings a classifier cannot be trained from; the message says which."""


def collection_messages(*, collection: Collection) -> tuple[list[sensitivity.Message], list[int]]:
    """Every document of the collection as the classifier reads it, and their ids."""
    messages, ids = [], []
    counts = entity_counts(collection=collection)
    # Plain rows, not model instances with prefetched attachments: at 500,000 messages
    # Django's prefetch cloned a queryset per document (bench/scale.py).
    attached: dict[int, list[tuple[str, str]]] = {}
    for doc_id, filename, text in (
        Attachment.objects.filter(document__collection=collection)
        .order_by("document_id", "position")
        .values_list("document_id", "filename", "text")
        .iterator(chunk_size=2000)
    ):
        attached.setdefault(doc_id, []).append((filename, text))
    docs = (
        Document.objects.filter(collection=collection)
        .order_by("id")
        .values_list("id", "docid", "subject", "body", "date", "addresses", "raw_headers")
    )
    for pk, docid, subject, body, date, addresses, headers in docs.iterator(chunk_size=2000):
        attachments = attached.pop(pk, [])
        addresses = addresses or {}
        recipients = [a for key in ("to", "cc", "bcc") for a in addresses.get(key) or []]
        headers = headers or ""
        messages.append(
            sensitivity.Message(
                docid=docid,
                subject=subject,
                body=body,
                attachments=" ".join(name + " " + text for name, text in attachments),
                attachment_count=len(attachments),
                date=date,
                sender=(addresses.get("from") or "").lower(),
                recipients=[r.lower() for r in recipients],
                reply=bool(_REPLY.match(subject)) or "\nin-reply-to:" in "\n" + headers.lower(),
                priority=bool(_PRIORITY.search(headers)),
                entities=counts.get(docid, {}),
            )
        )
        ids.append(pk)
    return messages, ids


class CollectionMatrix(NamedTuple):
    """The classifier's view of a whole collection: its messages, their document ids, the
    featurizer fitted on them, one feature row per message, and the exchange-graph
    centralities (``sensitivity.graph_features``) the rows were built from."""

    messages: list[sensitivity.Message]
    ids: list[int]
    featurizer: sensitivity.Featurizer
    matrix: object  # scipy.sparse.csr_matrix
    graph: np.ndarray


def ranking_document_features(
    *, collection: Collection, data: "CollectionMatrix | None" = None
) -> dict[str, np.ndarray] | None:
    """``{docid: row of sensitivity.RANKING}`` for an email collection (what the joint ranker
    reads of each message beside relevance, dissertation Table 3.12); None for a collection
    of other documents, which have no senders, recipients or attachments to describe.
    ``data``: the collection's ``collection_matrix`` when already built (its messages and
    exchange graph are reused)."""
    if collection.kind != Collection.Kind.EMAIL:
        return None
    if data is None:
        messages, graph = collection_messages(collection=collection)[0], None
    else:
        messages, graph = data.messages, data.graph
    rows = sensitivity.ranking_features(
        messages, collection.internal_domains or settings.SASC_INTERNAL_DOMAINS, graph
    )
    return {m.docid: rows[i] for i, m in enumerate(messages)}


def collection_matrix(*, collection: Collection) -> CollectionMatrix:
    """Read every message and fit the features on them (vocabularies, scaling, the exchange
    graph; internal = the collection's domains, else ``SASC_INTERNAL_DOMAINS``)."""
    messages, ids = collection_messages(collection=collection)
    featurizer = sensitivity.Featurizer(
        collection.internal_domains or settings.SASC_INTERNAL_DOMAINS
    )
    graph = sensitivity.graph_features(messages)
    return CollectionMatrix(
        messages, ids, featurizer, featurizer.fit_transform(messages, graph), graph
    )


def sensitivity_labels(
    *, collection: Collection, persona: Persona | None, source: str, categories=()
) -> dict[int, int]:
    """``{document id: 1 sensitive / 0 not}`` from one source:

    - ``annotations``: the persona-sensitivity answers of every project on the collection,
      by the exports' rule (``annotate.labels.persona_sensitivity_labels``);
    - ``reference``: the persona's imported sensitivity labels (any topic);
    - ``categories``: a surrogate, as the SIGIR 2019 study used MeSH categories: sensitive
      when a document's category codes start with one of ``categories``; documents without
      category codes get no label;
    - a source another app added (``label_source_add``): the review app's ``decisions``,
      the annotations and imported labels overridden by the archivists' decisions in force.
    """
    labels: dict[int, int] = {}
    if source == "annotations":
        labels = persona_sensitivity_labels(collection=collection, persona=persona)
    elif source == "reference":
        for doc, sensitive in ReferenceSensitivity.objects.filter(
            document__collection=collection, persona=persona
        ).values_list("document_id", "sensitive"):
            labels[doc] = max(labels.get(doc, 0), int(sensitive))
    elif source == "categories":
        prefixes = tuple(c.strip() for c in categories if c.strip())
        if not prefixes:
            raise ClassifierError("give the category codes that stand for sensitive")
        for doc, meta in Document.objects.filter(collection=collection).values_list(
            "id", "metadata"
        ):
            codes = (meta or {}).get("categories") or []
            if codes:
                labels[doc] = int(any(_in_category(c, p) for c in codes for p in prefixes))
    elif source in _ADDED_SOURCES:
        labels = _ADDED_SOURCES[source](collection=collection, persona=persona)
    else:
        raise ClassifierError(f"unknown label source {source!r}; use one of {', '.join(sources())}")
    return labels


def sensitivity_labels_named(
    *,
    collection: Collection,
    categories: str | None = None,
    persona: str | None = None,
    source: str = "annotations",
) -> dict[int, int]:
    """``sensitivity_labels`` as the commands name them: comma-separated category codes (a
    surrogate), or a persona's name with a ``source``."""
    if categories:
        codes = [c for c in categories.split(",") if c.strip()]
        return sensitivity_labels(
            collection=collection, persona=None, source="categories", categories=codes
        )
    found = Persona.objects.filter(name=persona).first()
    if found is None:
        raise ClassifierError(f"no persona {persona!r}")
    return sensitivity_labels(collection=collection, persona=found, source=source)


def metadata_labels(*, collection: Collection, match: str) -> dict[int, int]:
    """A surrogate from document metadata, ``FIELD=REGEX``: sensitive when the field (a list
    is joined by spaces) matches the regular expression (case-insensitive search); documents
    without the field get no label, as with categories."""
    import re

    field, sep, pattern = match.partition("=")
    field = field.strip()
    if not sep or not field or not pattern:
        raise ClassifierError(f"{match!r}: write FIELD=REGEX, e.g. bibliography=^naca")
    try:
        regex = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ClassifierError(f"{match!r}: not a regular expression ({exc})") from None
    labels: dict[int, int] = {}
    for doc, meta in Document.objects.filter(collection=collection).values_list("id", "metadata"):
        value = (meta or {}).get(field)
        if isinstance(value, list):
            value = " ".join(map(str, value))
        if value:
            labels[doc] = int(bool(regex.search(str(value))))
    if not labels:
        raise ClassifierError(f"no document of {collection.slug!r} has metadata field {field!r}")
    return labels


def _in_category(code: str, prefix: str) -> bool:
    """ACM CR codes nest by digits: 4.1 holds 4.12 and 4.19; a bare 4 holds every 4.x."""
    return code == prefix or code.startswith(prefix if "." in prefix else prefix + ".")


def sensitivity_model_train(
    *,
    collection: Collection,
    persona: Persona,
    source: str,
    categories=(),
    objective: str = "f1",
    progress=None,
    labels: dict[int, int] | None = None,
) -> SensitivityModel:
    """Train and store the next version of the persona's classifier over the collection,
    with the P(sensitive) of every document beside it. ``labels`` (``{document id: 0/1}``)
    are the labels to learn; by default those of ``source`` (``sensitivity_labels``), and
    ``source`` names them in the version's report either way."""
    import joblib

    started = time.perf_counter()
    if labels is None:
        labels = sensitivity_labels(
            collection=collection, persona=persona, source=source, categories=categories
        )
    positives = sum(labels.values())
    if positives < 3 or len(labels) - positives < 3:
        raise ClassifierError(
            f"{positives} sensitive and {len(labels) - positives} not sensitive labelled "
            f"documents for {persona.name} from {source}: at least 3 of each are needed"
        )
    if progress:
        progress(1, 3)
    messages, ids, featurizer, matrix, _graph = collection_matrix(collection=collection)
    rows = [i for i, doc in enumerate(ids) if doc in labels]
    y = [labels[ids[i]] for i in rows]
    if progress:
        progress(2, 3)
    try:
        trained = sensitivity.train(matrix[rows], y, featurizer.names, objective=objective)
    except ValueError as exc:
        raise ClassifierError(str(exc)) from None
    # Stored and routed: the calibrated P (core.calibration); the model's own beside it.
    raw = trained.raw_probabilities(matrix)
    scores = trained.calibrator.apply(raw).astype(np.float32)
    contribution_index, contribution_value = sensitivity.contributions(trained.model, matrix)
    # Written before the version is taken, so the lock in version_store is held for a
    # rename and an insert, not for the seconds a large featurizer takes to write.
    folder = Path(settings.SASC_INDEX_DIR) / "sensitivity" / str(collection.pk) / str(persona.pk)
    folder.mkdir(parents=True, exist_ok=True)
    pending = folder / f"training-{os.getpid()}-{threading.get_ident()}.joblib"
    joblib.dump(
        {
            "featurizer": featurizer,
            "model": trained.model,
            "calibrator": trained.calibrator,
            "threshold": trained.report.threshold_calibrated,  # on the scores' scale
            "raw_threshold": trained.threshold,
            "docids": [m.docid for m in messages],
            "scores": scores,
            "raw_scores": raw.astype(np.float32),
            "contribution_index": contribution_index,
            "contribution_value": contribution_value,
        },
        pending,
    )
    report = trained.report.as_dict()
    report["source"] = source + (f":{','.join(categories)}" if categories else "")
    report["features"] = len(featurizer.names)
    report["documents_scored"] = len(ids)
    report["predicted_sensitive"] = int((raw >= trained.threshold).sum())
    for lines in _REPORT_LINES:
        report.update(lines(collection=collection, persona=persona))
    return version_store(
        collection=collection,
        persona=persona,
        pending=pending,
        source=report["source"],
        objective=objective,
        report=report,
        seconds=time.perf_counter() - started,
    )


def version_store(
    *, collection: Collection, persona: Persona, pending: Path, **fields
) -> SensitivityModel:
    """Record a trained classifier whose file is written at ``pending``: take the persona's
    next version number, move the file to it and insert the row, one training at a time per
    persona (the persona's row is locked: ``select_for_update`` on an aggregate locks
    nothing, so two trainings would both take the same number)."""
    folder = pending.parent
    stale = time.time() - 3600  # a training killed between writing and storing its file
    for left in folder.glob("training-*.joblib"):
        if left != pending and left.stat().st_mtime < stale:
            left.unlink(missing_ok=True)
    try:
        with transaction.atomic():
            list(Persona.objects.select_for_update().filter(pk=persona.pk).values_list("pk"))
            last = SensitivityModel.objects.filter(
                collection=collection, persona=persona
            ).aggregate(v=Max("version"))["v"]
            version = (last or 0) + 1
            path = folder / f"v{version}.joblib"
            os.replace(pending, path)
            return SensitivityModel.objects.create(
                collection=collection,
                persona=persona,
                version=version,
                path=str(path),
                trained_at=timezone.now(),
                **fields,
            )
    finally:
        pending.unlink(missing_ok=True)  # left only if storing the version failed


def job_sensitivity_create(
    *,
    collection: Collection,
    persona: Persona,
    source: str,
    categories=(),
    objective="f1",
    user=None,
) -> Job:
    """Record a training job and queue it once the transaction commits."""
    if source not in sources():
        raise ClassifierError(f"unknown label source {source!r}")
    if objective not in ("f1", "f2"):
        raise ClassifierError("the threshold objective must be f1 or f2")
    return job_queue(
        kind=Job.Kind.SENSITIVITY,
        task="ranking.tasks.sensitivity_train_task",
        collection=collection,
        user=user,
        params={
            "persona": persona.pk,
            "source": source,
            "categories": list(categories),
            "objective": objective,
        },
        message=f"Waiting for a worker to train {persona.name}'s sensitivity classifier",
    )


def job_sensitivity_run(*, job_id: int) -> None:
    """Run a queued classifier training job (a finished job is not run again)."""
    job = job_start(job_id=job_id)
    if job is None:
        return
    with job_running(job):
        p = job.params
        try:
            model = sensitivity_model_train(
                collection=job.collection,
                persona=Persona.objects.get(pk=p["persona"]),
                source=p["source"],
                categories=p.get("categories") or (),
                objective=p.get("objective", "f1"),
                progress=JobProgress(job),
            )
        except ClassifierError as exc:
            job_finish(job=job, ok=False, message=str(exc))
            return
        except Exception as exc:
            logger.exception("sensitivity job %s failed", job.pk)
            job_finish(job=job, ok=False, message=f"Training failed: {type(exc).__name__}: {exc}")
            raise
        r = model.report
        job_finish(
            job=job,
            ok=True,
            message=(
                f"Version {model.version}: cross-validated F1 {r['f1']:.3f}, F2 {r['f2']:.3f} on "
                f"{r['n']} documents ({r['positives']} sensitive)"
            ),
            report={"model": model.pk, **r},
        )


def out_of_fold_scores(
    *,
    collection: Collection,
    labels: dict[int, int],
    objective: str = "f1",
    folds: int = 5,
    data: CollectionMatrix | None = None,
) -> tuple[dict[str, float], float, dict]:
    """P(sensitive) of every document of the collection that no model saw the label of:
    labelled documents are scored by the classifier trained on the other folds, unlabelled
    ones by the mean of the fold classifiers. Returns ``{docid: P}``, the mean tuned
    threshold, and the folds' mean cross-validated report figures."""
    from sklearn.model_selection import StratifiedKFold

    messages, ids, featurizer, matrix, _graph = data or collection_matrix(collection=collection)
    rows = np.array([i for i, doc in enumerate(ids) if doc in labels])
    y = np.array([labels[ids[i]] for i in rows])
    if y.sum() < folds or len(y) - y.sum() < folds:
        raise ClassifierError(
            f"{int(y.sum())} sensitive of {len(y)} labelled: too few for {folds} folds"
        )
    p = np.zeros(len(ids))
    unlabelled = np.setdiff1d(np.arange(len(ids)), rows)
    thresholds, figures = [], []
    for train_idx, test_idx in StratifiedKFold(folds, shuffle=True, random_state=0).split(rows, y):
        trained = sensitivity.train(
            matrix[rows[train_idx]], y[train_idx], featurizer.names, objective=objective
        )
        p[rows[test_idx]] = trained.model.predict_proba(matrix[rows[test_idx]])[:, 1]
        if len(unlabelled):
            p[unlabelled] += trained.model.predict_proba(matrix[unlabelled])[:, 1] / folds
        thresholds.append(trained.threshold)
        figures.append(trained.report.as_dict())
    threshold = float(np.mean(thresholds))
    predicted = p[rows] >= threshold
    from sklearn.metrics import f1_score, precision_score, recall_score

    report = {
        "labelled": int(len(y)),
        "sensitive": int(y.sum()),
        "threshold": threshold,
        "held_out_precision": float(precision_score(y, predicted, zero_division=0)),
        "held_out_recall": float(recall_score(y, predicted, zero_division=0)),
        "held_out_f1": float(f1_score(y, predicted, zero_division=0)),
    }
    return {m.docid: float(v) for m, v in zip(messages, p, strict=True)}, threshold, report


@dataclass(frozen=True)
class StoredScores:
    """A classifier version as the routing and the review page read it."""

    p: dict[str, float]  # docid -> P(sensitive), calibrated when ``calibrated``
    row: dict[str, int]
    names: list[str]
    contribution_index: object = None  # numpy arrays, absent in files without them
    contribution_value: object = None
    weights: object = None  # numpy array, one per name: the classifier's linear weights
    # Whether ``p`` went through the version's calibrator (core.calibration), and in words
    # how (or why not: a file written before calibration holds the model's own P).
    calibrated: bool = False
    calibration: str = ""

    def weight(self, name: str) -> float:
        """The classifier's weight of a feature (0.0 when unknown): with a document's
        contribution, its sign says whether the document's value is above the mean
        (``core.explain.contribution_phrase``)."""
        if self.weights is None or name not in self.names:
            return 0.0
        return float(self.weights[self.names.index(name)])

    def contributions(self, docid: str) -> tuple[list, list]:
        """The features pushing this document towards sensitive and towards not sensitive,
        strongest first, as (name, weight x value)."""
        if self.contribution_index is None or docid not in self.row:
            return [], []
        index = self.contribution_index[self.row[docid]]
        value = self.contribution_value[self.row[docid]]
        pairs = [(self.names[i], float(v)) for i, v in zip(index, value, strict=True) if i >= 0]
        return [x for x in pairs if x[1] > 0], [x for x in pairs if x[1] < 0]


# A classifier file pickles its featurizer (``core.sensitivity.Featurizer``) by module name;
# files written before the pure core moved out of ``ranking`` (issue 32) name the old module.
_old_module_names_lock = threading.Lock()
_MOVED_MODULES = {"ranking.sensitivity": "core.sensitivity", "ranking.features": "core.features"}


@contextmanager
def _old_module_names():
    """Let files pickled under the old module names load: the old names point at the new
    modules while the file is read, and only then."""
    with _old_module_names_lock:
        added = [old for old in _MOVED_MODULES if old not in sys.modules]
        for old in added:
            sys.modules[old] = importlib.import_module(_MOVED_MODULES[old])
        try:
            yield
        finally:
            for old in added:
                sys.modules.pop(old, None)


@lru_cache(maxsize=16)
def _stored(path: str) -> StoredScores:
    import joblib

    with _old_module_names():
        stored = joblib.load(path)
    featurizer = stored.get("featurizer")
    model = stored.get("model")
    calibrator = stored.get("calibrator")
    how = UNCALIBRATED if calibrator is None else calibrator.describe()
    return StoredScores(
        p=dict(zip(stored["docids"], map(float, stored["scores"]), strict=True)),
        row={docid: i for i, docid in enumerate(stored["docids"])},
        names=list(featurizer.names) if featurizer is not None else [],
        contribution_index=stored.get("contribution_index"),
        contribution_value=stored.get("contribution_value"),
        weights=sensitivity.coefficients(model) if model is not None else None,
        calibrated=calibrator is not None and calibrator.method != calibration.NONE,
        calibration=how,
    )


UNCALIBRATED = (
    "uncalibrated: written before calibration (issue 33), its scores are the classifier's "
    "own probabilities; retrain to calibrate them"
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


# --- What the lead's publish page reads (issue 33) -----------------------------------------

# Seconds an archivist takes per decision when none were measured: the upper end of the
# original study's median time per annotation task, 30-36 s (docs/domain.md §1), the one
# measured figure the project has for reading a message and judging it.
SECONDS_PER_DECISION_DEFAULT = 36.0
_DECISION_SECONDS: list[Callable[..., tuple[float, int] | None]] = []


def decision_seconds_set(measure: Callable[..., tuple[float, int] | None]) -> None:
    """Offer ``measure(collection=)`` -> (median seconds per decision, how many decisions it
    is measured over), or None when too few: the review app measures it from its decisions
    (ranking does not import review)."""
    _DECISION_SECONDS[:] = [measure]


@dataclass(frozen=True)
class PublishInputs:
    """What the band preview (``core.routing.band_preview``, ``band_rule``) needs of a
    collection and persona, beside the decisions in force (the page has those)."""

    version: int | None  # the newest classifier version (None: no classifier)
    p: dict[str, float]  # docid -> P(sensitive) as routing reads it (calibrated if below)
    calibrated: bool
    calibration: str  # in words: the method and labels, or why uncalibrated
    report: dict  # the version's report's ``calibration``: Brier, bins, trust ({}: none)
    seconds_per_decision: float
    seconds_measured: int  # decisions the median is taken over (0: the default)
    seconds_source: str  # in words


def publish_inputs(*, collection: Collection, persona: Persona) -> PublishInputs:
    """The persona's newest classifier's stored P(sensitive) per docid (calibrated when the
    version was: what routing reads), its calibration report, and the archivists' measured
    seconds per decision on this collection (``decision_seconds_set``; the default
    ``SECONDS_PER_DECISION_DEFAULT`` when fewer were measured, and says so)."""
    model, stored = stored_scores(collection=collection, persona=persona)
    measured = _DECISION_SECONDS[0](collection=collection) if _DECISION_SECONDS else None
    if measured is None:
        seconds, count = SECONDS_PER_DECISION_DEFAULT, 0
        source = (
            f"{SECONDS_PER_DECISION_DEFAULT:g} s a decision, a default (too few timed "
            "decisions on this collection): the original study's median time per annotation "
            "task"
        )
    else:
        seconds, count = measured
        source = f"{seconds:.0f} s a decision, the median over the last {count:,} decisions"
    if model is None:
        return PublishInputs(
            None, {}, False, "no classifier trained yet", {}, seconds, count, source
        )
    return PublishInputs(
        version=model.version,
        p=stored.p,
        calibrated=stored.calibrated,
        calibration=stored.calibration,
        report=(model.report or {}).get("calibration") or {},
        seconds_per_decision=seconds,
        seconds_measured=count,
        seconds_source=source,
    )
