"""Active-learning plans: their set-up, pause and resume, the lead's seed marks, and the
nudges that queue a plan's next step in the worker (``ranking.learning_step``).

One plan per (project, topic) (docs/domain.md §4). Every change that may give a plan work
to do (a plan made or resumed, a seed marked, a judgment of one of its tasks, a worker
starting) nudges it: ``ranking.tasks.learning_step_task`` is queued by name once the
transaction commits.
"""

from django.db import transaction
from django.utils import timezone

from annotate.jobs import queue, queue_on_commit
from annotate.models import AnnotationProject, Document, Judgment, Persona, Round, Topic
from annotate.projects import round_open
from ranking.models import LearningPlan, PoolEntry, TopicSeed

# ``learning_plan_create``'s "not given" for arguments whose default depends on others.
DEFAULT = object()


class PlanError(ValueError):
    """A plan that cannot be made as asked; the message says what to change."""


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
    growing: bool | None = None,
    singles: int | None | object = DEFAULT,
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
    """Start active learning for one topic of a project; the first step runs in a worker.

    Batches: with neither ``batch_size`` nor ``batch_percent`` the plan retrains after every
    judged document, one document queued ahead (``singles`` None; docs/active-learning.md,
    "Screening beside ASReview", measures why); ``singles=n`` judges n documents so, then
    grows AutoTAR's batches (1, then B + ceil(B / 10)); ``growing=True`` with a
    ``batch_size`` grows from that size (AutoTAR; ``singles`` 0 unless given); otherwise the
    batch is fixed (a size, or a percentage of the candidates as in Rahman et al.).
    """
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
    if batch_size is not None and batch_percent is not None:
        problems.append("give a batch size or a batch percentage, not both")
    if growing and batch_percent is not None:
        problems.append("growing batches start from a batch size, not a percentage")
    if growing is None:
        growing = batch_size is None and batch_percent is None
    if singles is DEFAULT:
        singles = None if growing and batch_size is None else 0
    if growing and batch_size is None:
        batch_size = 1
    if singles is not None and singles < 0:
        problems.append("the documents judged one at a time cannot be fewer than 0")
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
            growing=growing,
            singles=singles,
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


def learning_nudge(*, plan_id: int, judgment_id: int | None = None) -> None:
    """Queue a ``learning_step`` for the plan once the current transaction commits; with
    ``judgment_id``, the judgment that asked (the step does not retrain when a model already
    saw it: ``learning_step``'s coalescing).

    Robust: if the broker is down the error is logged and the judgment that asked stays
    saved; the next judgment, the next empty queue or the worker's start asks again.
    """
    args = (plan_id,) if judgment_id is None else (plan_id, judgment_id)
    queue_on_commit("ranking.tasks.learning_step_task", *args, robust=True)


def learning_judged(*, project_id: int, topic_id: int, judgment_id: int | None = None) -> None:
    """After a judgment of an active-learning or seed-walk task: nudge the topic's plan."""
    plan_id = (
        LearningPlan.objects.filter(project_id=project_id, topic_id=topic_id)
        .values_list("pk", flat=True)
        .first()
    )
    if plan_id is not None:
        learning_nudge(plan_id=plan_id, judgment_id=judgment_id)


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
