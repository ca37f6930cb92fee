"""An active-learning plan's queue: topped up from a model's scores to one batch beyond the
one being judged, within the budget (``plan_top_up``, in the worker's step), and, when a
claim finds it empty anyway (a late or lost retrain), from the latest stored scores in the
web process (``queue_top_up``). The annotator never waits for a model."""

import logging

import numpy as np
from django.db import transaction

from annotate.models import AnnotationProject, Document, Task
from annotate.projects import project_tasks_add_for_personas
from core import active
from ranking.learning_plans import learning_nudge
from ranking.learning_state import (
    IndexChanged,
    Rows,
    batch_size,
    document_rows,
    documents_of_rows,
    plan_rows,
    plan_state,
    scores_beside,
    scores_usable,
)
from ranking.models import CheckSample, LearningPlan

logger = logging.getLogger(__name__)

LOOKAHEAD_BATCHES = 1  # batches queued beyond the one being judged


def plan_top_up(plan, state, model, rows: Rows, size) -> tuple[int, str]:
    """Queue documents until one batch beyond the one being judged waits, within budget
    (caller holds the plan lock); return how many, and the strategy that picked them.
    ``model``'s scores are used only if they are in ``rows``' index version; otherwise the
    picks are random until a model of that version is trained."""
    matrix, row_of, candidates = rows.matrix, rows.row_of, rows.candidates
    target = size * (1 + LOOKAHEAD_BATCHES)
    room = plan.budget - state.reviewed - len(state.queued)
    # At least a lookahead batch nobody holds yet: the judging page holds two documents
    # (the one shown and the one preloaded), so with batches of 1 a queue of two counted
    # with them left nothing for the page's next preload, nor for a second annotator.
    free = len(state.queued - state.held)
    want = min(max(target - len(state.queued), size * LOOKAHEAD_BATCHES - free), room)
    if want <= 0:
        return 0, ""
    # Check-sample documents not reached yet stay selectable: a pick of one marks it
    # reached (it is judged already) instead of queueing it, so the target method and QBCB
    # see where the review's ranking has got to.
    open_checks = document_rows(plan, row_of, state.checks - state.reached)
    check_of_row = {r: d for d, r in open_checks.items()}
    taken_docs = (set(state.labels) | state.queued) - set(open_checks)
    taken = list(document_rows(plan, row_of, taken_docs).values())
    extra = len(open_checks)
    if not scores_usable(model, rows):
        model = None
    p = np.load(model.scores_path) if model is not None else None
    seed = plan.random_seed + (model.version if model else 0) + len(state.labels)
    sensitivity = scores_beside(model.scores_path, "sensitivity") if model is not None else None
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
    return plan_tasks_add(
        plan, documents_of_rows(plan, matrix, rows), Task.Source.ACTIVE
    ), picked_by


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


def plan_tasks_add(plan: LearningPlan, documents: list[Document], source: str) -> int:
    return project_tasks_add_for_personas(
        project=plan.project,
        round_=plan.round,
        topic=plan.topic,
        personas=list(plan.project.personas.all()),
        documents=documents,
        source=source,
    )


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
            rows = plan_rows(plan)
        except (IndexChanged, OSError) as exc:
            logger.warning("plan %s: no top-up from stored scores: %s", plan.pk, exc)
            learning_nudge(plan_id=plan.pk)
            continue
        if not scores_usable(model, rows):
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
            size = batch_size(locked, len(rows.candidates), state)
            added += plan_top_up(locked, state, model, rows, size)[0]
        learning_nudge(plan_id=plan.pk)
    return added
