"""The active-learning engine: plans, seeds, versioned models and the queue they keep full.

Django glue around the pure core in ``core.active`` (docs/domain.md §4). One plan per
(project, topic). ``learning_step`` brings a plan up to date and is safe to run any number of
times, from any number of workers:

- seeding: IS waits for the topic's seed marks; RDS walks down one system's ranking, a few
  documents at a time, until ``rds_min_relevant`` relevant and ``rds_min_nonrelevant``
  non-relevant are judged, and flags the topic after ``rds_max`` documents;
- learning: when ``retrain_every`` documents were judged since the latest model (or there is
  none), train a new version outside any transaction, then, under the plan's row lock,
  record it (one version per judgment high-water mark: a task run twice makes one version)
  and top the queue up to the batch being judged plus one batch ahead, within the budget;
- then the unjudged candidates get machine labels from the new version.

The annotator never waits for a model: the queue holds a batch beyond the one being judged,
and when it runs dry anyway (a late or lost retrain) ``queue_top_up``, called from the claim,
tops it up from the latest stored scores in the web process.
"""

import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotate.jobs import queue, queue_on_commit
from annotate.labels import relevance_label
from annotate.models import (
    Adjudication,
    AnnotationProject,
    Answer,
    Collection,
    Document,
    Judgment,
    Persona,
    Round,
    Task,
    Topic,
)
from annotate.projects import project_tasks_add_for_personas, round_open
from core import active, features
from ranking.models import CheckSample, LearningModel, LearningPlan, PoolEntry, TopicSeed

logger = logging.getLogger(__name__)

RDS_AHEAD = 3  # documents of the RDS walk kept queued
LOOKAHEAD_BATCHES = 1  # batches queued beyond the one being judged


class PlanError(ValueError):
    """A plan that cannot be made as asked; the message says what to change."""


# --- Plans and seeds ----------------------------------------------------------------------------


def learning_plan_create(
    *,
    project: AnnotationProject,
    topic: Topic,
    budget: int,
    strategy: str = LearningPlan.Strategy.CAL,
    seed_mode: str = LearningPlan.SeedMode.IS,
    candidates: str = LearningPlan.Candidates.POOL,
    batch_size: int | None = None,
    batch_percent: int | None = None,
    retrain_every: int | None = None,
    random_seed: int = 0,
    rds_system: str = "bm25.title",
    rds_min_relevant: int = 1,
    rds_min_nonrelevant: int = 1,
    rds_max: int = 100,
    sensitivity_persona: Persona | None = None,
    round_: Round | None = None,
    user=None,
) -> LearningPlan:
    """Start active learning for one topic of a project; the first step runs in a worker."""
    from ranking.pooling import SYSTEMS

    problems = []
    if not project.topics.filter(pk=topic.pk).exists():
        problems.append(f"topic {topic.number} is not in the project")
    if strategy not in LearningPlan.Strategy.values:
        problems.append(f"unknown strategy {strategy!r}")
    if seed_mode not in LearningPlan.SeedMode.values:
        problems.append(f"unknown seed mode {seed_mode!r}")
    if candidates not in LearningPlan.Candidates.values:
        problems.append(f"unknown candidate set {candidates!r}")
    if (batch_size is None) == (batch_percent is None):
        problems.append("give either a batch size or a batch percentage")
    if batch_size is not None and batch_size < 1:
        problems.append("the batch size must be at least 1")
    if batch_percent is not None and not 1 <= batch_percent <= 100:
        problems.append("the batch percentage must be between 1 and 100")
    if budget < 1:
        problems.append("the budget must be at least 1 document")
    if retrain_every is not None and retrain_every < 1:
        problems.append("retrain after at least 1 judged document")
    if rds_system not in {s.name for s in SYSTEMS}:
        problems.append(f"unknown system {rds_system!r} for RDS")
    if rds_min_relevant < 1 or rds_min_nonrelevant < 1 or rds_max < 2:
        problems.append("RDS needs at least 1 relevant, 1 non-relevant and a maximum of 2 or more")
    if strategy == LearningPlan.Strategy.SENSITIVITY and (
        sensitivity_persona is None or not project.personas.filter(pk=sensitivity_persona.pk)
    ):
        problems.append("the sensitivity strategy needs one of the project's personas")
    if project.collection.indexed_version is None:
        problems.append("the collection has no index yet; build it first")
    if (
        candidates == LearningPlan.Candidates.POOL
        and not PoolEntry.objects.filter(project=project, topic=topic).exists()
    ):
        problems.append(f"topic {topic.number} has no pool yet: pool the project first")
    if round_ is not None and round_.project_id != project.pk:
        problems.append("the round is not the project's")
    if LearningPlan.objects.filter(project=project, topic=topic).exists():
        problems.append(f"topic {topic.number} already has an active-learning plan")
    if problems:
        raise PlanError("; ".join(problems))
    with transaction.atomic():
        if round_ is None:
            round_ = (
                project.rounds.filter(is_open=True, kind=Round.Kind.PRODUCTION)
                .order_by("-number")
                .first()
            ) or round_open(project=project)
        plan = LearningPlan.objects.create(
            project=project,
            topic=topic,
            round=round_,
            strategy=strategy,
            seed_mode=seed_mode,
            candidates=candidates,
            batch_size=batch_size,
            batch_percent=batch_percent,
            budget=budget,
            retrain_every=retrain_every,
            random_seed=random_seed,
            rds_system=rds_system,
            rds_min_relevant=rds_min_relevant,
            rds_min_nonrelevant=rds_min_nonrelevant,
            rds_max=rds_max,
            sensitivity_persona=sensitivity_persona,
            created_by=user,
        )
        learning_nudge(plan_id=plan.pk)
    return plan


def learning_plan_pause(*, plan: LearningPlan, paused: bool) -> LearningPlan:
    """Pause a plan (its queue stays as it is) or resume it."""
    with transaction.atomic():
        plan = LearningPlan.objects.select_for_update().get(pk=plan.pk)
        if paused and plan.status in (LearningPlan.Status.SEEDING, LearningPlan.Status.LEARNING):
            plan.status, plan.status_message = LearningPlan.Status.PAUSED, "Paused by the lead"
        elif not paused and plan.status == LearningPlan.Status.PAUSED:
            learning = plan.models.exists()
            plan.status = LearningPlan.Status.LEARNING if learning else LearningPlan.Status.SEEDING
            plan.status_message = "Resumed"
            learning_nudge(plan_id=plan.pk)
        plan.save(update_fields=["status", "status_message"])
    return plan


def topic_seed_mark(
    *, topic: Topic, document: Document, relevance: int, query: str = "", user=None
) -> TopicSeed:
    """Record (or change) the lead's mark on a document found while writing the topic."""
    if document.collection_id != topic.collection_id:
        raise PlanError("the document is not in the topic's collection")
    if relevance not in Judgment.Relevance.values:
        raise PlanError("relevance must be 0 (not), 1 (somewhat) or 2 (highly relevant)")
    seed, _ = TopicSeed.objects.update_or_create(
        topic=topic,
        document=document,
        defaults={
            "relevance": relevance,
            "query": query[:2000],
            "marked_by": user,
            "marked_at": timezone.now(),
        },
    )
    for plan_id in LearningPlan.objects.filter(
        topic=topic, status=LearningPlan.Status.SEEDING
    ).values_list("pk", flat=True):
        learning_nudge(plan_id=plan_id)
    return seed


def topic_seed_remove(*, topic: Topic, document_id: int) -> int:
    """Take back a seed mark; return how many were removed (0 or 1)."""
    deleted, _ = TopicSeed.objects.filter(topic=topic, document_id=document_id).delete()
    return deleted


# --- What a plan knows --------------------------------------------------------------------------


@dataclass
class PlanState:
    """The human labels of a plan's topic and its queue, read in one go."""

    labels: dict[int, int] = field(default_factory=dict)  # document id -> grade
    last_judgment: dict[int, int] = field(default_factory=dict)  # document id -> judgment id
    seeded: dict[int, int] = field(default_factory=dict)  # document id -> seed id
    queued: set[int] = field(default_factory=set)  # documents waiting to be judged
    walking: set[int] = field(default_factory=set)  # of them, queued by the RDS walk
    judgment_mark: int = 0
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
    def training(self) -> dict[int, int]:
        """The labels the classifier learns from: every one but the check sample's."""
        return {d: g for d, g in self.labels.items() if d not in self.checks}

    def judged_since(self, model: LearningModel | None) -> int:
        """Training labels newer than ``model`` (check-sample judgments never retrain)."""
        if model is None:
            return self.reviewed
        return sum(
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
        first_seen.setdefault(doc, (1, judgment_id))
    rule = plan.project.relevance_rule
    state.labels = {doc: relevance_label(g, rule)[0] for doc, g in grades.items()}
    for doc, relevance in Adjudication.objects.filter(
        project_id=plan.project_id, topic_id=plan.topic_id, relevance__isnull=False
    ).values_list("document_id", "relevance"):
        if doc in state.labels:
            state.labels[doc] = relevance
    for documents, reached in CheckSample.objects.filter(plan_id=plan.pk).values_list(
        "documents", "reached"
    ):
        state.checks.update(documents)
        state.reached.update(reached)
    state.gains = [
        int(state.labels[d] >= 1)
        for d in sorted(state.labels, key=first_seen.get)
        if d not in state.checks
    ]
    open_rounds = plan.project.rounds.filter(is_open=True).values("id")
    waiting = Task.objects.filter(
        project_id=plan.project_id, topic_id=plan.topic_id, round_id__in=open_rounds
    ).values_list("document_id", "source")
    for doc, source in waiting:
        if doc in state.checks:
            if doc not in state.labels:
                state.check_queued.add(doc)
        elif doc not in state.labels:
            state.queued.add(doc)
            if source == Task.Source.SEED:
                state.walking.add(doc)
    return state


def batch_size(plan: LearningPlan, candidates: int) -> int:
    """Return the plan's batch: its size, else its share of the candidates (at least 1)."""
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


def _rows(plan: LearningPlan) -> Rows:
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


def _scores_usable(model: LearningModel | None, rows: Rows) -> bool:
    """Whether ``model``'s stored scores are in ``rows``' index version (and its length)."""
    if model is None or model.index_version != rows.index_version:
        return False
    try:
        p = np.load(model.scores_path, mmap_mode="r")
    except (OSError, ValueError):
        return False
    return len(p) == len(rows.matrix.docids)


def _documents_of_rows(plan: LearningPlan, matrix, rows) -> list[Document]:
    """The documents of ``rows``, in that order."""
    docids = [matrix.docids[r] for r in rows]
    found = {
        d.docid: d
        for d in Document.objects.filter(
            collection_id=plan.project.collection_id, docid__in=docids
        ).only("id", "docid")
    }
    return [found[d] for d in docids if d in found]


def _doc_rows(plan: LearningPlan, row_of, doc_ids) -> dict[int, int]:
    """document id -> matrix row, for ``doc_ids``."""
    pairs = Document.objects.filter(pk__in=list(doc_ids)).values_list("pk", "docid")
    return {pk: row_of[docid] for pk, docid in pairs if docid in row_of}


# --- The step -----------------------------------------------------------------------------------


def learning_nudge(*, plan_id: int) -> None:
    """Queue a ``learning_step`` for the plan once the current transaction commits.

    Robust: if the broker is down the error is logged and the judgment that asked stays
    saved; the next judgment, the next empty queue or the worker's start asks again.
    """
    queue_on_commit("ranking.tasks.learning_step_task", plan_id, robust=True)


def learning_judged(*, project_id: int, topic_id: int) -> None:
    """After a judgment of an active-learning or seed-walk task: nudge the topic's plan."""
    plan_id = (
        LearningPlan.objects.filter(project_id=project_id, topic_id=topic_id)
        .values_list("pk", flat=True)
        .first()
    )
    if plan_id is not None:
        learning_nudge(plan_id=plan_id)


def learning_step(*, plan_id: int) -> dict:
    """Bring a plan up to date (see the module docstring); return what was done.

    Everything slow (Lucene and its JVM, reading the matrix, training) runs before the
    plan's lock is taken; under the lock only the plan's rows are read and its tasks
    written. On SQLite that lock is the database's write lock, which web requests wait for.
    """
    plan = LearningPlan.objects.select_related("project__collection", "topic").get(pk=plan_id)
    started = time.perf_counter()
    if plan.status not in (LearningPlan.Status.SEEDING, LearningPlan.Status.LEARNING):
        return {"status": plan.status}
    state = plan_state(plan)
    if plan.status == LearningPlan.Status.SEEDING:
        seeded = _seed_step(plan, state)
        if seeded["status"] != LearningPlan.Status.LEARNING:
            return seeded
        plan.status = LearningPlan.Status.LEARNING  # seeds are enough: learn at once
    latest = plan.models.order_by("-version").first()
    report: dict = {"status": plan.status}
    trained = None
    rows = _rows(plan)
    size = batch_size(plan, len(rows.candidates))
    usable = _scores_usable(latest, rows)
    due = state.judged_since(latest) >= (plan.retrain_every or size) or (
        not state.queued and state.judged_since(latest) > 0
    )
    if latest is None or due or not usable:  # a new index version needs its own scores
        trained = _train(plan, state, rows)
    with transaction.atomic():
        plan = LearningPlan.objects.select_for_update().select_related("round").get(pk=plan_id)
        if plan.status != LearningPlan.Status.LEARNING:
            return {"status": plan.status}
        if trained:
            model, created = _record(plan, trained)
        else:
            model, created = (latest if usable else None), False
        state = plan_state(plan)  # judgments may have arrived while training
        report["model"] = model.version if model else None
        report["added"], report["picked_by"] = _top_up(plan, state, model, rows, size)
        ended = _ended(plan, state, report["added"], rows)
        if ended:
            plan.status, plan.status_message = LearningPlan.Status.FINISHED, ended
            plan.save(update_fields=["status", "status_message"])
    report["seconds_to_queue"] = time.perf_counter() - started
    if created:
        report["machine_labels"] = machine_labels_write(
            plan=plan, model=model, rows=rows, state=state
        )
    report["seconds"] = time.perf_counter() - started
    return report


def _ended(plan: LearningPlan, state: PlanState, added: int, rows: Rows) -> str:
    """Why the plan is over (caller holds its lock, after topping up), or "" if it is not:
    the budget is spent, its round was closed, or nothing is queued and nothing more could
    be (every candidate judged, or no persona to judge for). A plan that can add no task
    ends saying so rather than showing "Learning" with nothing to judge."""
    if state.reviewed >= plan.budget:
        return f"Budget spent: {state.reviewed} documents judged (budget {plan.budget})"
    if not plan.round.is_open:
        return (
            f"Stopped: round {plan.round.number} was closed, so no task can be added "
            f"({len(state.labels)} of the budget of {plan.budget} documents judged)"
        )
    if state.queued or added:
        return ""
    if not plan.project.personas.exists():
        return (
            f"Stopped: the project has no persona to add tasks for "
            f"({len(state.labels)} of the budget of {plan.budget} documents judged)"
        )
    return (
        f"Finished: every one of the {len(rows.candidates)} candidates was judged or could "
        f"not be queued ({len(state.labels)} documents judged; budget {plan.budget} not reached)"
    )


def learning_step_failed(*, plan_id: int, error: BaseException) -> None:
    """Show on the plan that its last step failed, and why (the plan stays as it was: the
    next judgment, or the worker's next start, runs the step again)."""
    message = (
        f"The last update failed ({type(error).__name__}: {error}); "
        "it runs again with the next judgment"
    )
    LearningPlan.objects.filter(
        pk=plan_id, status__in=[LearningPlan.Status.SEEDING, LearningPlan.Status.LEARNING]
    ).update(status_message=message[:1000])


def _seed_step(plan: LearningPlan, state: PlanState) -> dict:
    relevant = state.relevant
    nonrelevant = len(state.labels) - relevant
    enough = relevant >= plan.rds_min_relevant and nonrelevant >= plan.rds_min_nonrelevant
    ranking = None
    if (
        not enough
        and plan.seed_mode == LearningPlan.SeedMode.RDS
        and plan.rds_walked < plan.rds_max
        and len(state.walking) < RDS_AHEAD
    ):
        # Lucene (and, the first time, its JVM) before the lock, never under it.
        ranking = _system_ranking(plan, depth=plan.rds_max)
    with transaction.atomic():
        plan = LearningPlan.objects.select_for_update().get(pk=plan.pk)
        if plan.status != LearningPlan.Status.SEEDING:
            return {"status": plan.status}
        if enough:
            plan.status = LearningPlan.Status.LEARNING
            plan.status_message = (
                f"Seeded with {relevant} relevant and {nonrelevant} non-relevant documents"
            )
            plan.save(update_fields=["status", "status_message"])
            return {"status": plan.status}
        if plan.seed_mode == LearningPlan.SeedMode.IS:
            plan.status_message = (
                f"Waiting for seeds: mark at least {plan.rds_min_relevant} relevant and "
                f"{plan.rds_min_nonrelevant} non-relevant documents while searching for the "
                f"topic ({relevant} and {nonrelevant} so far)"
            )
            plan.save(update_fields=["status_message"])
            return {"status": plan.status, "seeds": len(state.labels)}
        return _rds_walk(plan, state, relevant, nonrelevant, ranking)


def _rds_walk(
    plan: LearningPlan, state: PlanState, relevant: int, nonrelevant: int, ranking
) -> dict:
    """Keep ``RDS_AHEAD`` documents of the RDS system's ranking (``ranking``, searched
    before the lock) queued, so the annotator does not wait for a step between them (caller
    holds the plan lock). Gives up, flagging the topic, once ``rds_max`` documents were
    walked and judged without enough of each kind."""
    if plan.rds_walked >= plan.rds_max:
        if state.walking:
            return {"status": plan.status, "waiting": len(state.walking)}
        plan.status = LearningPlan.Status.FLAGGED
        plan.status_message = (
            f"RDS gave up after {plan.rds_walked} documents of {plan.rds_system}: "
            f"{relevant} relevant and {nonrelevant} non-relevant found, "
            f"{plan.rds_min_relevant} and {plan.rds_min_nonrelevant} needed"
        )
        plan.save(update_fields=["status", "status_message"])
        return {"status": plan.status}
    want = RDS_AHEAD - len(state.walking)
    if want <= 0:
        return {"status": plan.status, "waiting": len(state.walking)}
    if ranking is None:  # the plan changed between the search and the lock: step again
        learning_nudge(plan_id=plan.pk)
        return {"status": plan.status}
    taken = set(state.labels) | state.queued
    take = []
    walked = plan.rds_walked
    for doc in ranking[walked:]:
        walked += 1
        if doc.pk not in taken:
            take.append(doc)
        if len(take) >= want or walked >= plan.rds_max:
            break
    if walked >= len(ranking):
        walked = plan.rds_max  # the ranking ran out: nothing more to walk
    plan.rds_walked = walked
    plan.status_message = (
        f"Walking down {plan.rds_system}: {walked} of at most {plan.rds_max} documents, "
        f"{relevant} relevant and {nonrelevant} non-relevant so far"
    )
    plan.save(update_fields=["rds_walked", "status_message"])
    added = _enqueue(plan, take, Task.Source.SEED)
    if not take and not state.walking:
        learning_nudge(plan_id=plan.pk)  # the next step flags the topic
    return {"status": plan.status, "added": added}


def _system_ranking(plan: LearningPlan, *, depth: int) -> list[Document]:
    from core import lucene
    from ranking.pooling import FIELDS, SYSTEMS
    from ranking.services import index_paths

    system = next(s for s in SYSTEMS if s.name == plan.rds_system)
    hits = lucene.search(
        index_paths(collection=plan.project.collection).lucene,
        FIELDS[system.field](plan.topic),
        k=depth,
        model=system.model,
        rm3=system.rm3,
    )
    docs = {
        d.docid: d
        for d in Document.objects.filter(
            collection_id=plan.project.collection_id, docid__in=[h.docid for h in hits]
        ).only("id", "docid")
    }
    return [docs[h.docid] for h in hits if h.docid in docs]


def _train(plan: LearningPlan, state: PlanState, rows: Rows) -> dict | None:
    """Train a new version's model and scores on ``rows``' index version, outside any
    transaction (the slow part)."""
    matrix, row_of, candidates = rows.matrix, rows.row_of, rows.candidates
    started = time.perf_counter()
    training = state.training  # never the check sample: the review must not learn it
    doc_rows = _doc_rows(plan, row_of, training)
    judged = sorted(doc_rows)
    rows_judged = [doc_rows[d] for d in judged]
    labels = active.collapse([training[d] for d in judged])
    version = (plan.models.order_by("-version").values_list("version", flat=True).first() or 0) + 1
    logger.info(
        "plan %s: training version %s on %s judged documents (index version %s)",
        plan.pk,
        version,
        len(rows_judged),
        rows.index_version,
    )
    seed = plan.random_seed + version
    try:
        # Two classifiers: the one that picks (judged documents alone, as in Rahman et al.)
        # and the one that labels the rest (plus presumed non-relevant documents).
        model = active.train(matrix.matrix, rows_judged, labels, seed=seed)
        labeller = active.train_labeller(matrix.matrix, rows_judged, labels, candidates, seed=seed)
    except active.NotTrainable as exc:
        logger.info("plan %s: %s", plan.pk, exc)
        return None
    p = model.probabilities(matrix.matrix)
    arrays = {"labels": labeller.probabilities(matrix.matrix)}
    if plan.strategy == LearningPlan.Strategy.SENSITIVITY:
        p_sensitive = _sensitivity_scores(plan, matrix, row_of)
        if p_sensitive is not None:
            arrays["sensitivity"] = p_sensitive
    if settings.SASC_FAULT_LEARNING_DELAY_MS:
        time.sleep(settings.SASC_FAULT_LEARNING_DELAY_MS / 1000)
    # Named by what it was trained on, as the version record is unique on it: two workers
    # racing on other judgments cannot write into each other's files.
    path = (
        _scores_dir(plan) / f"j{state.judgment_mark}-s{state.seed_mark}-i{rows.index_version}.npy"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    for array, target in (*((a, _beside(path, kind)) for kind, a in arrays.items()), (p, path)):
        tmp = target.with_suffix(".tmp.npy")
        np.save(tmp, array.astype(np.float32))
        tmp.replace(target)
    candidate_set = set(candidates.tolist())
    in_pool = {
        int(r): int(lbl) for r, lbl in zip(rows_judged, labels, strict=True) if r in candidate_set
    }
    return {
        "version": version,
        "judgment_mark": state.judgment_mark,
        "seed_mark": state.seed_mark,
        "judged": len(rows_judged),
        "positives": model.positives,
        "negatives": len(rows_judged) - int(labels.sum()),
        "scores_path": str(path),
        "index_version": rows.index_version,
        "prevalence": active.estimated_prevalence(arrays["labels"], candidates, in_pool),
        "seconds": time.perf_counter() - started,
        "params": {
            "classifier": "logistic regression (liblinear)",
            "C": active.DEFAULT_C,
            "presumed_nonrelevant": labeller.negatives - model.negatives,
            "random_seed": seed,
            "strategy": plan.strategy,
            "features": f"TF-IDF of collection version {rows.index_version}",
            "terms": len(matrix.vocabulary),
            "candidates": int(len(candidates)),
        },
    }


def _beside(scores_path, kind: str) -> Path:
    """Where a version keeps its other arrays, beside the selection scores: the labeller's
    P(relevant) (``labels``) and, for the sensitivity strategy, P(sensitive)."""
    path = Path(scores_path)
    return path.with_name(f"{path.stem}-{kind}.npy")


def _scores_dir(plan: LearningPlan) -> Path:
    return Path(settings.SASC_INDEX_DIR) / "learning" / str(plan.pk)


def _record(plan: LearningPlan, trained: dict) -> tuple[LearningModel, bool]:
    """Store a trained version unless one with the same marks exists (caller holds the lock);
    return it and whether it is new."""
    same = plan.models.filter(
        judgment_mark=trained["judgment_mark"],
        seed_mark=trained["seed_mark"],
        index_version=trained["index_version"],
    ).first()
    if same is not None:
        return same, False
    latest = plan.models.order_by("-version").values_list("version", flat=True).first() or 0
    if trained["version"] != latest + 1:  # another worker stored a version meanwhile
        trained = {**trained, "version": latest + 1}
    return LearningModel.objects.create(plan=plan, trained_at=timezone.now(), **trained), True


def _top_up(plan, state, model, rows: Rows, size) -> tuple[int, str]:
    """Queue documents until one batch beyond the one being judged waits, within budget
    (caller holds the plan lock); return how many, and the strategy that picked them.
    ``model``'s scores are used only if they are in ``rows``' index version; otherwise the
    picks are random until a model of that version is trained."""
    matrix, row_of, candidates = rows.matrix, rows.row_of, rows.candidates
    target = size * (1 + LOOKAHEAD_BATCHES)
    room = plan.budget - state.reviewed - len(state.queued)
    want = min(target - len(state.queued), room)
    if want <= 0:
        return 0, ""
    # Check-sample documents not reached yet stay selectable: a pick of one marks it
    # reached (it is judged already) instead of queueing it, so the target method and QBCB
    # see where the review's ranking has got to.
    open_checks = _doc_rows(plan, row_of, state.checks - state.reached)
    check_of_row = {r: d for d, r in open_checks.items()}
    taken_docs = (set(state.labels) | state.queued) - set(open_checks)
    taken = list(_doc_rows(plan, row_of, taken_docs).values())
    extra = len(open_checks)
    if not _scores_usable(model, rows):
        model = None
    p = np.load(model.scores_path) if model is not None else None
    seed = plan.random_seed + (model.version if model else 0) + len(state.labels)
    sensitivity = _beside(model.scores_path, "sensitivity") if model is not None else None
    if sensitivity is not None and sensitivity.exists():
        picked_by = "sensitivity"
        rows = active.select_sensitivity_uncertain(
            p, np.load(sensitivity), candidates, taken, want + extra
        )
    else:
        # The sensitivity strategy picks as CAL until both answers were given; before a
        # first model every strategy picks at random.
        picked_by = "cal" if plan.strategy == LearningPlan.Strategy.SENSITIVITY else plan.strategy
        if p is None:
            picked_by = "spl"
        rows = active.select(picked_by, p, candidates, taken, want + extra, seed=seed)
    rows, reached = _split_reached(rows, check_of_row, want)
    if reached:
        _mark_reached(plan, reached)
    return _enqueue(plan, _documents_of_rows(plan, matrix, rows), Task.Source.ACTIVE), picked_by


def _split_reached(rows, check_of_row, want) -> tuple[list[int], list[int]]:
    """Walk the picks in the selection's order: check-sample documents met before the
    ``want``-th other pick are reached (document ids); the others are queued (rows)."""
    take, reached = [], []
    for row in rows:
        if len(take) >= want:
            break
        if row in check_of_row:
            reached.append(check_of_row[row])
        else:
            take.append(row)
    return take, reached


def _mark_reached(plan: LearningPlan, documents: list[int]) -> None:
    """Record check-sample documents the review reached (caller holds the plan lock)."""
    for check in CheckSample.objects.filter(plan=plan):
        new = [d for d in documents if d in set(check.documents) and d not in check.reached]
        if new:
            check.reached = [*check.reached, *new]
            check.save(update_fields=["reached"])


def _sensitivity_scores(plan, matrix, row_of) -> np.ndarray | None:
    """P(sensitive for the plan's persona) of every row, from this topic's judgments."""
    answers = Judgment.objects.filter(
        task__project_id=plan.project_id,
        task__topic_id=plan.topic_id,
        task__persona_id=plan.sensitivity_persona_id,
        persona_sensitive__in=[Answer.YES, Answer.NO],
    ).values_list("task__document_id", "persona_sensitive")
    labels: dict[int, int] = {}
    for doc, answer in answers:
        labels[doc] = max(labels.get(doc, 0), int(answer == Answer.YES))
    doc_rows = _doc_rows(plan, row_of, labels)
    docs = sorted(doc_rows)
    try:
        model = active.train(
            matrix.matrix,
            [doc_rows[d] for d in docs],
            [labels[d] for d in docs],
            seed=plan.random_seed,
        )
    except active.NotTrainable:
        return None
    return model.probabilities(matrix.matrix)


def _enqueue(plan: LearningPlan, documents: list[Document], source: str) -> int:
    return project_tasks_add_for_personas(
        project=plan.project,
        round_=plan.round,
        topic=plan.topic,
        personas=list(plan.project.personas.all()),
        documents=documents,
        source=source,
    )


# --- The queue never runs dry -------------------------------------------------------------------


def queue_top_up(*, project: AnnotationProject) -> int:
    """When a claim finds no free task: top up every learning plan of the project from its
    latest model's stored scores (no training here), and nudge the worker. Returns how many
    tasks were added. Plans whose row a worker holds are skipped (it is topping them up).
    The matrix is read before the plan's lock; scores of another index version than the
    current one are not used (the worker retrains on the new version)."""
    added = 0
    plans = list(LearningPlan.objects.filter(project=project, status=LearningPlan.Status.LEARNING))
    for plan in plans:
        model = plan.models.order_by("-version").first()
        if model is None:
            continue
        try:
            rows = _rows(plan)
        except (IndexChanged, OSError) as exc:
            logger.warning("plan %s: no top-up from stored scores: %s", plan.pk, exc)
            learning_nudge(plan_id=plan.pk)
            continue
        if not _scores_usable(model, rows):
            learning_nudge(plan_id=plan.pk)
            continue
        with transaction.atomic():
            locked = (
                LearningPlan.objects.select_for_update(skip_locked=True)
                .filter(pk=plan.pk, status=LearningPlan.Status.LEARNING)
                .first()
            )
            if locked is None:
                continue
            state = plan_state(locked)
            size = batch_size(locked, len(rows.candidates))
            added += _top_up(locked, state, model, rows, size)[0]
        learning_nudge(plan_id=plan.pk)
    return added


def learning_sweep() -> int:
    """Nudge every plan still seeding or learning (a worker starting: recovers steps lost
    with a killed worker or a broker outage). Returns how many were nudged."""
    ids = list(
        LearningPlan.objects.filter(
            status__in=[LearningPlan.Status.SEEDING, LearningPlan.Status.LEARNING]
        ).values_list("pk", flat=True)
    )
    for plan_id in ids:
        queue("ranking.tasks.learning_step_task", plan_id)
    return len(ids)


# --- Hybrid labels ------------------------------------------------------------------------------


def machine_labels_write(
    *, plan: LearningPlan, model: LearningModel, rows, state: PlanState
) -> int:
    """Label every unjudged candidate with the model's P(relevant) (replacing older labels
    of the topic); return how many were written. ``rows`` is ``_rows(plan)`` and ``state``
    the plan's state, as the step has just read them; a model of another index version
    writes nothing."""
    from ranking.models import MachineLabel

    matrix, row_of, candidates = rows.matrix, rows.row_of, rows.candidates
    if not _scores_usable(model, rows):
        return 0  # trained on another index version: its rows are not these
    taken = list(_doc_rows(plan, row_of, state.labels).values())
    p = np.load(_beside(model.scores_path, "labels"))
    labels = active.hybrid_labels(p, candidates, taken)
    docs = _documents_of_rows(plan, matrix, sorted(labels))
    row_of_doc = {d.pk: row_of[d.docid] for d in docs}
    now = timezone.now()
    labelled = [
        MachineLabel(
            project_id=plan.project_id,
            topic_id=plan.topic_id,
            document_id=d.pk,
            relevant=bool(labels[row_of_doc[d.pk]][0]),
            probability=min(1.0, max(0.0, labels[row_of_doc[d.pk]][1])),
            model_version=model.version,
            labelled_at=now,
        )
        for d in docs
    ]
    with transaction.atomic():
        current = LearningModel.objects.filter(plan=plan).order_by("-version").first()
        if current is not None and current.version != model.version:
            return 0  # a newer version has labelled (or will label) them
        MachineLabel.objects.filter(project_id=plan.project_id, topic_id=plan.topic_id).delete()
        MachineLabel.objects.bulk_create(labelled, batch_size=2000)
    return len(labelled)
