"""What an active-learning plan knows, read in one go: its topic's labels and its queue
(``plan_state``), its batch, and the rows of the index version its scores are read against
(``plan_rows``), with the conversions between documents and matrix rows."""

import bisect
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from annotate.labels import relevance_label
from annotate.models import Adjudication, Collection, Document, Judgment, Task
from core import features
from ranking.models import CheckSample, LearningModel, LearningPlan, PoolEntry, TopicSeed

logger = logging.getLogger(__name__)


@dataclass
class PlanState:
    """The human labels of a plan's topic and its queue, read in one go."""

    labels: dict[int, int] = field(default_factory=dict)  # document id -> grade
    last_judgment: dict[int, int] = field(default_factory=dict)  # document id -> judgment id
    seeded: dict[int, int] = field(default_factory=dict)  # document id -> seed id
    queued: set[int] = field(default_factory=set)  # documents waiting to be judged
    walking: set[int] = field(default_factory=set)  # of them, queued by the RDS walk
    # Of them, those every task of which an annotator holds (shown, or preloaded by the
    # judging page): queued, but nobody else can take them.
    held: set[int] = field(default_factory=set)
    judgment_mark: int = 0
    # Every training judgment id of the topic (the check sample's left out), ascending: a
    # model stores how many it saw, so a judgment whose id is below a model's mark but whose
    # commit came after that model read the judgments (ids are drawn before commit:
    # concurrent saves commit out of order on PostgreSQL) still counts as unseen
    # (``late_judgments``).
    judgment_ids: list[int] = field(default_factory=list)
    seed_mark: int = 0
    gains: list[int] = field(default_factory=list)  # 1/0 per reviewed document, in order
    # Check-sample documents (core.stopping): judged like any task but not the review's,
    # so out of the training set, the gain curve, the queue depth and the budget.
    checks: set[int] = field(default_factory=set)
    reached: set[int] = field(default_factory=set)  # of them, picked by the review
    check_queued: set[int] = field(default_factory=set)  # of them, waiting to be judged

    @property
    def relevant(self) -> int:
        return sum(1 for g in self.labels.values() if g >= 1)

    @property
    def reviewed(self) -> int:
        """Documents judged by the review (seeds included), the check sample left out."""
        return sum(1 for d in self.labels if d not in self.checks)

    @property
    def check_judged(self) -> int:
        """Check-sample documents judged (on top of the budget, never of the review's)."""
        return sum(1 for d in self.labels if d in self.checks)

    def budget_left(self, budget: int) -> int:
        """Judgments left of ``budget`` for the review (never below 0). Every page that
        says judged, spent or left reads ``reviewed``, ``check_judged`` and this, so the
        learning page, the stopping panel and the plan's status cannot disagree."""
        return max(0, budget - self.reviewed)

    @property
    def training(self) -> dict[int, int]:
        """The labels the classifier learns from: every one but the check sample's."""
        return {d: g for d, g in self.labels.items() if d not in self.checks}

    def late_judgments(self, model: LearningModel | None) -> int:
        """Judgments at or below ``model``'s mark that it did not see: committed after it
        read the judgments, though their ids were drawn before its mark's (0 for a model
        stored before counts were kept)."""
        if model is None or model.judgment_count is None:
            return 0
        seen_or_late = bisect.bisect_right(self.judgment_ids, model.judgment_mark)
        return max(0, seen_or_late - model.judgment_count)

    def judged_since(self, model: LearningModel | None) -> int:
        """Training labels newer than ``model`` (check-sample judgments never retrain), and
        judgments it missed because they committed late (``late_judgments``)."""
        if model is None:
            return self.reviewed
        return self.late_judgments(model) + sum(
            1
            for d in self.training
            if self.last_judgment.get(d, 0) > model.judgment_mark
            or self.seeded.get(d, 0) > model.seed_mark
        )


def plan_state(plan: LearningPlan) -> PlanState:
    """Read the topic's labels (seeds, judgments, adjudications) and the plan's queue."""
    state = PlanState()
    seeds = TopicSeed.objects.filter(topic_id=plan.topic_id).values_list(
        "id", "document_id", "relevance"
    )
    grades: dict[int, list[int]] = {}
    first_seen: dict[int, tuple] = {}
    for seed_id, doc, relevance in seeds.order_by("id"):
        state.seeded[doc] = seed_id
        state.seed_mark = max(state.seed_mark, seed_id)
        first_seen.setdefault(doc, (0, seed_id))
        grades[doc] = [relevance]  # replaced by judgments when people judged it too
    for documents, reached in CheckSample.objects.filter(plan_id=plan.pk).values_list(
        "documents", "reached"
    ):
        state.checks.update(documents)
        state.reached.update(reached)
    judged_docs = set()
    judgments = Judgment.objects.filter(
        task__project_id=plan.project_id, task__topic_id=plan.topic_id
    ).values_list("id", "task__document_id", "relevance")
    for judgment_id, doc, relevance in judgments.order_by("id"):
        if doc not in judged_docs:
            grades[doc] = []
            judged_docs.add(doc)
        grades[doc].append(relevance)
        state.last_judgment[doc] = max(state.last_judgment.get(doc, 0), judgment_id)
        state.judgment_mark = max(state.judgment_mark, judgment_id)
        if doc not in state.checks:  # check-sample judgments never retrain, late or not
            state.judgment_ids.append(judgment_id)
        first_seen.setdefault(doc, (1, judgment_id))
    rule = plan.project.relevance_rule
    state.labels = {doc: relevance_label(g, rule)[0] for doc, g in grades.items()}
    for doc, relevance in Adjudication.objects.filter(
        project_id=plan.project_id, topic_id=plan.topic_id, relevance__isnull=False
    ).values_list("document_id", "relevance"):
        if doc in state.labels:
            state.labels[doc] = relevance
    state.gains = [
        int(state.labels[d] >= 1)
        for d in sorted(state.labels, key=first_seen.get)
        if d not in state.checks
    ]
    open_rounds = plan.project.rounds.filter(is_open=True).values("id")
    waiting = Task.objects.filter(
        project_id=plan.project_id, topic_id=plan.topic_id, round_id__in=open_rounds
    ).values_list("document_id", "source", "claimed", "required")
    free = set()
    for doc, source, claimed, required in waiting:
        if doc in state.checks:
            if doc not in state.labels:
                state.check_queued.add(doc)
        elif doc not in state.labels:
            state.queued.add(doc)
            if claimed < required:
                free.add(doc)
            if source == Task.Source.SEED:
                state.walking.add(doc)
    state.held = state.queued - free
    return state


def batch_size(plan: LearningPlan, candidates: int, state: "PlanState | None" = None) -> int:
    """Return the plan's current batch: for growing batches the AutoTAR batch (after the
    plan's ``singles`` batches of 1; None: 1 for ever) after the
    documents ``state`` shows judged past the seeds (the first batch without a state), else
    the fixed size, else the share of the candidates (at least 1)."""
    if plan.growing:
        from core.screening import autotar_batch_at

        judged = 0 if state is None else max(0, state.reviewed - len(state.seeded))
        return autotar_batch_at(judged, plan.batch_size or 1, plan.singles)
    if plan.batch_size:
        return plan.batch_size
    return max(1, math.ceil(plan.batch_percent / 100 * candidates))


class Rows(NamedTuple):
    """One index version's TF-IDF matrix, docid -> row, the plan's candidate rows, and that
    version: scores computed on these rows are only ever read against the same version."""

    matrix: features.FeatureMatrix
    row_of: dict[str, int]
    candidates: np.ndarray
    index_version: int


class IndexChanged(RuntimeError):
    """The collection's index was replaced while a step read it; the step runs again."""


def plan_rows(plan: LearningPlan) -> Rows:
    """The collection's current index version, read as one: its matrix, docid -> row, and
    the candidate rows. The version is read from the database, not from the plan's cached
    collection, so a step never pairs an older matrix with a newer version's scores."""
    from ranking.services import IndexNotReady, index_paths

    collection = plan.project.collection
    for _attempt in range(3):
        version = Collection.objects.values_list("indexed_version", flat=True).get(pk=collection.pk)
        if version is None:
            raise IndexNotReady(collection)
        try:
            matrix = features.load(index_paths(collection=collection, version=version).features)
        except FileNotFoundError:  # a newer version replaced it between the two reads
            continue
        break
    else:
        raise IndexChanged(f"the index of {collection.slug!r} kept changing; try again")
    row_of = _row_index(matrix)
    if plan.candidates == LearningPlan.Candidates.COLLECTION:
        candidates = np.arange(len(matrix.docids), dtype=np.int64)
    else:
        docids = PoolEntry.objects.filter(project_id=plan.project_id, topic_id=plan.topic_id)
        candidates = np.array(
            sorted(
                {row_of[d] for d in docids.values_list("document__docid", flat=True) if d in row_of}
            ),
            dtype=np.int64,
        )
    return Rows(matrix, row_of, candidates, version)


_row_indexes: dict[int, tuple[features.FeatureMatrix, dict[str, int]]] = {}


def _row_index(matrix: features.FeatureMatrix) -> dict[str, int]:
    """docid -> row of this very matrix (cached per matrix object: a rebuilt index is a new
    object even at the same path)."""
    cached = _row_indexes.get(id(matrix))
    if cached is None or cached[0] is not matrix:
        if len(_row_indexes) >= 16:  # older index versions: let their matrices go
            _row_indexes.clear()
        cached = (matrix, {d: i for i, d in enumerate(matrix.docids)})
        _row_indexes[id(matrix)] = cached
    return cached[1]


def scores_usable(model: LearningModel | None, rows: Rows) -> bool:
    """Whether ``model``'s stored scores are in ``rows``' index version (and its length)."""
    if model is None or model.index_version != rows.index_version:
        return False
    try:
        p = np.load(model.scores_path, mmap_mode="r")
    except (OSError, ValueError) as exc:
        # Picks fall back to random (or CAL) until the next version: say so in the log.
        logger.warning("learning version %s: its scores cannot be read: %s", model.pk, exc)
        return False
    return len(p) == len(rows.matrix.docids)


def documents_of_rows(plan: LearningPlan, matrix, rows) -> list[Document]:
    """The documents of ``rows``, in that order."""
    docids = [matrix.docids[r] for r in rows]
    found = {
        d.docid: d
        for d in Document.objects.filter(
            collection_id=plan.project.collection_id, docid__in=docids
        ).only("id", "docid")
    }
    return [found[d] for d in docids if d in found]


def document_rows(plan: LearningPlan, row_of, doc_ids) -> dict[int, int]:
    """document id -> matrix row, for ``doc_ids``."""
    pairs = Document.objects.filter(pk__in=list(doc_ids)).values_list("pk", "docid")
    return {pk: row_of[docid] for pk, docid in pairs if docid in row_of}


def scores_beside(scores_path, kind: str) -> Path:
    """Where a version keeps its other arrays, beside the selection scores: the labeller's
    P(relevant) (``labels``) and, for the sensitivity strategy, P(sensitive)."""
    path = Path(scores_path)
    return path.with_name(f"{path.stem}-{kind}.npy")
