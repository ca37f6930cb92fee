"""Writes for knowing when to stop: a plan's recall target and its random check sample.

The statistics are in the pure ``core.stopping``; the reads (estimate, verdicts,
projection, report) in ``ranking.selectors``.
"""

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotate.models import Document, Task
from core import stopping
from ranking.learning_plans import PlanError, learning_nudge
from ranking.learning_queue import plan_tasks_add
from ranking.learning_state import plan_state
from ranking.models import CheckSample, LearningPlan, PoolEntry

MAX_SAMPLE = 5000


def plan_stopping_set(*, plan: LearningPlan, recall_target: float, confidence: float):
    """Set what the lead wants certified: recall of at least ``recall_target`` with
    ``confidence`` (fractions, strictly between 0 and 1; the errors speak in percent, as
    the lead's form does)."""
    problems = []
    if not 0 < recall_target < 1:
        problems.append(
            f"the recall target must be above 0% and below 100% (e.g. 80%), not "
            f"{recall_target * 100:g}%"
        )
    if not 0.5 <= confidence < 1:
        problems.append(
            f"the confidence must be at least 50% and below 100% (e.g. 95%), not "
            f"{confidence * 100:g}%"
        )
    if problems:
        raise PlanError("; ".join(problems))
    LearningPlan.objects.filter(pk=plan.pk).update(
        recall_target=recall_target, confidence=confidence
    )
    plan.recall_target, plan.confidence = recall_target, confidence
    return plan


def candidate_documents(plan: LearningPlan) -> list[int]:
    """The plan's candidates as document ids (its pool, or the whole collection)."""
    if plan.candidates == LearningPlan.Candidates.COLLECTION:
        docs = Document.objects.filter(collection_id=plan.project.collection_id)
        return sorted(docs.values_list("pk", flat=True))
    entries = PoolEntry.objects.filter(project_id=plan.project_id, topic_id=plan.topic_id)
    return sorted(set(entries.values_list("document_id", flat=True)))


def check_frame(plan: LearningPlan, state=None, sample: CheckSample | None = None) -> list[int]:
    """The documents a check sample is (or would be) drawn from: the candidates neither
    judged nor queued at its first draw (``sample.before``), less those already drawn."""
    candidates = candidate_documents(plan)
    if sample is None:
        state = state or plan_state(plan)
        outside = set(state.labels) | state.queued | state.check_queued
        return [d for d in candidates if d not in outside]
    outside = set(sample.before) | set(sample.documents)
    return [d for d in candidates if d not in outside]


def check_sample_draw(
    *,
    plan: LearningPlan,
    size: int,
    margin: float | None = None,
    user=None,
    beyond_budget: bool = False,
) -> CheckSample:
    """Draw ``size`` documents at random, without replacement, from the frame and queue them
    as check tasks; a plan's second draw extends its sample from the same frame (so the
    whole stays one simple random sample of it). The frame caps the sample; a draw larger
    than what is left of the plan's budget (the budget less the review's judgments and the
    sample drawn before: the sample's judgments are never counted against the budget, they
    come on top) is drawn only with ``beyond_budget``, the lead's explicit consent."""
    if size < 1:
        raise PlanError("draw at least 1 document")
    if size > MAX_SAMPLE:
        raise PlanError(f"draw at most {MAX_SAMPLE} documents at a time")
    with transaction.atomic():
        plan = (
            LearningPlan.objects.select_for_update()
            .select_related("round", "project")
            .get(pk=plan.pk)
        )
        if not plan.round.is_open:
            raise PlanError(f"round {plan.round.number} is closed: no task can be added")
        if not plan.project.personas.exists():
            raise PlanError("the project has no persona to add tasks for")
        state = plan_state(plan)
        sample = CheckSample.objects.filter(plan=plan).order_by("drawn_at").first()
        frame = check_frame(plan, state, sample)
        if not frame:
            raise PlanError("no document is left to draw: every candidate is judged or queued")
        if size > len(frame):
            raise PlanError(f"only {len(frame)} documents are left to draw from, not {size}")
        drawn_before = len(sample.documents) if sample else 0
        left = max(0, state.budget_left(plan.budget) - drawn_before)
        if size > left and not beyond_budget:
            raise PlanError(
                over_budget(
                    size=size,
                    left=left,
                    budget=plan.budget,
                    reviewed=state.reviewed,
                    drawn_before=drawn_before,
                )
            )
        seed = int(plan.random_seed) * 1_000_003 + (len(sample.documents) if sample else 0)
        drawn = np.random.default_rng(seed).choice(np.asarray(frame), size=size, replace=False)
        drawn = [int(d) for d in drawn]
        if sample is None:
            before = sorted(set(state.labels) | state.queued | state.check_queued)
            sample = CheckSample.objects.create(
                plan=plan,
                frame=len(frame),
                documents=drawn,
                before=before,
                reached=[],
                margin=margin or 0,
                random_seed=seed,
                drawn_at=timezone.now(),
                drawn_by=user,
            )
        else:
            # Documents of the frame the review judged since: already judged, and reached.
            judged = [d for d in drawn if d in state.labels]
            sample.documents = [*sample.documents, *drawn]
            sample.reached = [*sample.reached, *judged]
            if margin:
                sample.margin = margin
            sample.save(update_fields=["documents", "reached", "margin"])
        new = [d for d in drawn if d not in state.labels]
        documents = list(Document.objects.filter(pk__in=new).only("id", "docid"))
        order = {d: i for i, d in enumerate(new)}
        documents.sort(key=lambda d: order[d.pk])
        plan_tasks_add(plan, documents, Task.Source.CHECK)
        learning_nudge(plan_id=plan.pk)
    return sample


def over_budget(*, size: int, left: int, budget: int, reviewed: int, drawn_before: int) -> str:
    """Why a draw of ``size`` documents needs the lead's consent, with every number and what
    happens if the lead goes on."""
    before = f" and {drawn_before} check-sample documents drawn before" if drawn_before else ""
    whole = budget + drawn_before + size
    return (
        f"a check sample of {size} documents is more than the {left} judgments left of the "
        f"plan's budget of {budget} ({reviewed} judged by the review{before}). If you go on, "
        f"its {size} judgments come on top of the budget: the review still goes on to "
        f"{budget}, so this topic would take up to {whole} judgments in all ({budget} for "
        f"the review, {drawn_before + size} for the check sample). Choose a wider margin or "
        "a smaller size, or tick “beyond the budget” to draw it anyway"
    )


def check_sample_size(
    *, plan: LearningPlan, margin: float, prevalence: float | None = None
) -> dict:
    """What drawing for ``margin`` would take, before drawing: the frame, the sample size
    at the worst case (prevalence 0.5) and at the model's estimate when there is one."""
    state = plan_state(plan)
    sample = CheckSample.objects.filter(plan=plan).first()
    frame = sample.frame if sample else len(check_frame(plan, state))
    worst = stopping.sample_size(margin, frame, confidence=plan.confidence)
    guess = None
    if prevalence is not None and 0 < prevalence < 0.5:
        guess = stopping.sample_size(
            margin, frame, confidence=plan.confidence, prevalence=prevalence
        )
    drawn = len(sample.documents) if sample else 0
    return {
        "margin": margin,
        "frame": frame,
        "worst": worst,
        "at_prevalence": guess,
        "prevalence": prevalence,
        "drawn": drawn,
        "to_draw": max(0, (guess or worst) - drawn),
    }
