"""Reads for the active-learning pages."""

import logging

import numpy as np

from annotate.models import AnnotationProject
from core import active, stopping
from ranking.learning_state import (
    batch_size,
    document_rows,
    plan_rows,
    plan_state,
    scores_usable,
)
from ranking.models import CheckSample, LearningPlan, MachineLabel

logger = logging.getLogger(__name__)
MARGINS = (0.1, 0.05, 0.02)


def learning_overview(*, project: AnnotationProject) -> list[dict]:
    """Per plan: the review's judgments / budget and the check sample's apart (``PlanState``:
    the one definition the stopping panel reads too), relevant found, estimated prevalence,
    queue depth, the current model, the gain curve and the stopping signal (with whether it
    can fire)."""
    rows = []
    plans = LearningPlan.objects.filter(project=project).select_related("topic", "project")
    for plan in plans.order_by("topic__number"):
        state = plan_state(plan)
        model = plan.models.order_by("-version").first()
        candidates = model.params.get("candidates") if model else None
        signal = active.knee_stop(state.gains, candidates=candidates or len(state.gains) * 2)
        stop = plan_stopping(plan=plan, state=state, model=model, candidates=candidates)
        rows.append(
            {
                "plan": plan,
                "reviewed": state.reviewed,
                "check_judged": state.check_judged,
                "budget_left": state.budget_left(plan.budget),
                "relevant": state.relevant,
                "queued": len(state.queued),
                "model": model,
                "versions": plan.models.count(),
                "batch": batch_size(plan, candidates, state) if candidates else None,
                "candidates": candidates,
                "signal": signal,
                "stopping": stopping_state(signal, budget=plan.budget),
                "curve": gain_curve_svg(
                    state.gains, signal, total=stop["total"], target=plan.recall_target
                ),
                "stop": stop,
                "percent": min(100, round(100 * state.reviewed / plan.budget)),
            }
        )
    return rows


def stopping_state(signal: active.StoppingSignal, *, budget: int) -> dict:
    """What the page says of the knee rule: its state in one word and why, honestly.

    ``state`` is ``unreachable`` (the budget ends before the rule can fire:
    ``active.knee_can_stop_within``), ``stop``, ``continue`` (with the slope ratio against
    its threshold) or ``waiting`` (no knee yet: fewer than two judged, or nothing relevant).
    """
    fewest = active.KNEE_FEWEST_JUDGED
    if signal.stop:
        return {"state": "stop", "label": "Stop: enough found", "why": ""}
    if not active.knee_can_stop_within(budget):
        return {
            "state": "unreachable",
            "label": "Cannot fire within the budget",
            "why": f"the knee rule needs at least {fewest} judgments; the budget is {budget}",
        }
    if signal.slope_ratio is None:
        return {"state": "waiting", "label": "No knee yet", "why": "needs relevant documents"}
    why = f"slope ratio {signal.slope_ratio:.1f}, stops at {signal.needed_ratio:.0f}"
    if signal.judged < fewest:
        why += f"; cannot fire before {fewest} judged ({signal.judged} so far)"
    return {"state": "continue", "label": "Continue", "why": why}


def _ticks(top: int) -> list[int]:
    """0, the middle and the top of an axis (whole numbers, no repeats)."""
    return sorted({0, top // 2, top}) if top > 1 else sorted({0, top})


def gain_curve_svg(
    gains: list[int],
    signal: active.StoppingSignal,
    *,
    total: tuple[int, int, int] | None = None,
    target: float | None = None,
    width=300,
    height=150,
) -> dict | None:
    """An SVG gain curve with axes: relevant found by the review (y) against its judgments
    (x), ticks at 0, the middle and the end of each axis, and the knee if any; with an
    estimate of the relevant documents in all (``total``: point, low, high), their interval
    as a band and the ``target`` share of the point estimate as the target line.
    Coordinates in pixels."""
    n = len(gains)
    if n == 0:
        return None
    left, right, top, bottom = 34, 8, 8, 34  # room for the tick labels and axis titles
    plot_w, plot_h = width - left - right, height - top - bottom
    found_total = sum(gains)
    top_value = max(found_total, total[2] if total else 0)
    y_max = max(1, top_value)

    def x(v):
        return round(left + plot_w * v / n, 1)

    def y(v):
        return round(top + plot_h - plot_h * v / y_max, 1)

    found, points = 0, [f"{x(0)},{y(0)}"]
    for i, g in enumerate(gains, 1):
        found += g
        points.append(f"{x(i)},{y(found)}")
    knee = None
    if signal.knee:
        knee = (x(signal.knee), y(sum(gains[: signal.knee])))
    band = target_line = None
    if total:
        band = {
            "x": left,
            "width": plot_w,
            "y": y(total[2]),
            "height": max(1.0, round(y(total[1]) - y(total[2]), 1)),
        }
        if target:
            target_line = {"y": y(target * total[0]), "value": round(target * total[0], 1)}
    return {
        "band": band,
        "target": target_line,
        "total": total,
        "width": width,
        "height": height,
        "points": " ".join(points),
        "knee": knee,
        "origin": (left, top + plot_h),
        "x_end": left + plot_w,
        "y_end": top,
        "x_ticks": [(x(v), v) for v in _ticks(n)],
        "y_ticks": [(y(v), v) for v in _ticks(top_value)],
        "x_title": (left + plot_w / 2, height - 4),
        "y_title": (10, top + plot_h / 2),
        "tick_label_y": top + plot_h + 14,
    }


def plan_stopping(*, plan: LearningPlan, state=None, model=None, candidates=None) -> dict:
    """Everything the stopping panel shows for a plan: its target and confidence, the check
    sample (drawn, judged, relevant), the recall estimate with its interval, every rule's
    verdict, the judgments spent, the projection to the target, the sample sizes per margin
    and the one-sentence recommendation."""
    from ranking.check_samples import candidate_documents

    state = state or plan_state(plan)
    target, confidence = plan.recall_target, plan.confidence
    sample = CheckSample.objects.filter(plan=plan).order_by("drawn_at").first()
    candidates = candidates or len(state.labels) * 2
    judged_sample = [d for d in (sample.documents if sample else []) if d in state.labels]
    labels = [int(state.labels[d] >= 1) for d in judged_sample]
    reached = [d in state.reached or d not in state.checks for d in judged_sample]
    est = None
    total = None
    verdicts = [stopping.knee_verdict(state.gains, candidates=candidates)]
    if sample is not None and judged_sample:
        before = set(sample.before)
        in_pool = set(candidate_documents(plan))
        outside = sum(1 for d in before if state.labels.get(d, 0) >= 1)
        found = outside + sum(
            1 for d, g in state.labels.items() if g >= 1 and d not in before and d in in_pool
        )
        est = stopping.estimate(
            frame=sample.frame,
            sampled=len(judged_sample),
            sample_relevant=sum(labels),
            relevant_outside=outside,
            found=found,
            confidence=confidence,
        )
        total = tuple(outside + v for v in est.in_frame)
        projected = _projected_to_reach(plan, model, state, judged_sample, labels, reached)
        verdicts += stopping.sample_verdicts(
            labels,
            reached,
            frame=sample.frame,
            found=found,
            relevant_outside=outside,
            target=target,
            confidence=confidence,
            projected=projected,
        )
    expected = _projected_by_expectation(plan, est, target)
    prevalence = model.prevalence if model is not None else None
    frame = sample.frame if sample else None
    if frame is None:
        from ranking.check_samples import check_frame

        frame = len(check_frame(plan, state))
    sizes = [
        {
            "margin": m,
            "worst": stopping.sample_size(m, frame, confidence=confidence),
            "at_prevalence": (
                stopping.sample_size(m, frame, confidence=confidence, prevalence=prevalence)
                if prevalence and 0 < prevalence < 0.5
                else None
            ),
        }
        for m in MARGINS
    ]
    return {
        "target": target,
        "confidence": confidence,
        "sample": sample,
        "drawn": len(sample.documents) if sample else 0,
        "sample_judged": state.check_judged,
        "sample_relevant": sum(labels),
        "sample_waiting": len(state.check_queued),
        "sample_reached": sum(1 for d in judged_sample if d in state.reached),
        "frame": frame,
        "sizes": sizes,
        "prevalence": prevalence,
        "estimate": est,
        "total": total,
        "verdicts": verdicts,
        "reviewed": state.reviewed,
        "spent": state.reviewed + state.check_judged,
        "budget_left": state.budget_left(plan.budget),
        # The largest sample in all (earlier draws included) drawn without consent: the
        # draw check_sample_draw allows is what is left of the budget after earlier draws.
        "sample_room": max(len(sample.documents) if sample else 0, state.budget_left(plan.budget)),
        "projected": expected,
        "recommendation": stopping.recommend(
            verdicts,
            est,
            target=target,
            drawn=len(sample.documents) if sample else 0,
            waiting=len(state.check_queued),
        ),
    }


def _projected_to_reach(plan, model, state, judged_sample, labels, reached) -> dict:
    """Further review judgments before the target method and QBCB can stop, going down the
    latest model's ranking: the unreviewed documents it scores above the sample positive
    that the rule still needs (empty when there is no usable model)."""
    if model is None:
        return {}
    try:
        rows = plan_rows(plan)
        if not scores_usable(model, rows):
            return {}
        p = np.load(model.scores_path, mmap_mode="r")
    except Exception as exc:  # a projection is an aid: never break the page for it
        logger.info("plan %s: no projection: %s", plan.pk, exc)
        return {}
    doc_rows = document_rows(plan, rows.row_of, [*judged_sample, *state.labels])
    taken = {doc_rows[d] for d in state.labels if d in doc_rows} | {
        doc_rows[d] for d in judged_sample if d in doc_rows
    }
    unreviewed = np.array([r for r in rows.candidates.tolist() if r not in taken], dtype=int)
    scores_unreviewed = np.asarray(p)[unreviewed] if len(unreviewed) else np.array([])
    positives = [d for d, lab in zip(judged_sample, labels, strict=True) if lab]
    open_pos = [
        float(p[doc_rows[d]])
        for d, lab, hit in zip(judged_sample, labels, reached, strict=True)
        if lab and not hit and d in doc_rows
    ]
    got = len(positives) - len(open_pos)
    out = {}
    j = stopping.qbcb_needed(len(positives), plan.recall_target, plan.confidence)
    if j is not None:
        out["qbcb"] = stopping.projected_judgments(scores_unreviewed, open_pos, max(0, j - got))
    t = stopping.target_size(plan.recall_target, plan.confidence)
    if len(positives) >= t:
        first = positives[:t]
        need = [
            float(p[doc_rows[d]])
            for d in first
            if d in doc_rows and not reached[judged_sample.index(d)]
        ]
        out["target"] = stopping.projected_judgments(scores_unreviewed, need, len(need))
    return out


def _projected_by_expectation(plan, est, target) -> int | None:
    """Judgments down the ranking expected to reach the target recall at the estimate's
    point: the labeller's P(relevant) of the unjudged candidates, summed best first."""
    if est is None:
        return None
    needed = target * (est.relevant_outside + est.in_frame[0]) - est.found
    if needed <= 0:
        return 0
    p = MachineLabel.objects.filter(project_id=plan.project_id, topic_id=plan.topic_id)
    return stopping.projected_by_expectation(list(p.values_list("probability", flat=True)), needed)


NO_PLAN = (
    "No active-learning plan for this topic: start one on the project's learning page; "
    "the report then has a row per stopping rule."
)


def stopping_report(*, project: AnnotationProject) -> list[dict]:
    """One row per plan and rule: what the stopping panel shows, flat, for export; a topic
    of the project without a plan gets one row that says so (a project without any plan
    would otherwise export a bare header, which reads like a report with nothing in it)."""
    out = []
    plans = LearningPlan.objects.filter(project=project).select_related("topic", "project")
    planned = set(plans.values_list("topic_id", flat=True))
    for topic in project.topics.exclude(pk__in=planned).order_by("number"):
        out.append({"topic": topic.number, "rule": "", "recommendation": NO_PLAN})
    for plan in plans.order_by("topic__number"):
        state = plan_state(plan)
        model = plan.models.order_by("-version").first()
        candidates = model.params.get("candidates") if model else None
        s = plan_stopping(plan=plan, state=state, model=model, candidates=candidates)
        est = s["estimate"]
        base = {
            "topic": plan.topic.number,
            "recall_target": s["target"],
            "confidence": s["confidence"],
            "reviewed": s["reviewed"],
            "sample_drawn": s["drawn"],
            "sample_judged": s["sample_judged"],
            "sample_relevant": s["sample_relevant"],
            "frame": s["frame"],
            "judgments_spent": s["spent"],
            "recall_estimate": est.recall[0] if est else None,
            "recall_low": est.recall[1] if est else None,
            "recall_high": est.recall[2] if est else None,
            "remaining_estimate": est.remaining[0] if est else None,
            "remaining_low": est.remaining[1] if est else None,
            "remaining_high": est.remaining[2] if est else None,
            "interval": stopping.INTERVAL if est else "",
            "projected_judgments_to_target": s["projected"],
            "recommendation": s["recommendation"],
        }
        for v in s["verdicts"]:
            out.append(
                {
                    **base,
                    "rule": v.name,
                    "paper": v.paper,
                    "guarantee": v.guarantee,
                    "says": {True: "stop", False: "continue", None: "cannot tell"}[v.stop],
                    "why": v.why,
                    "rule_projected_judgments": v.projected,
                }
            )
    out.sort(key=lambda row: row["topic"])  # stable: each plan's rules stay in order
    return out


def learning_task_closed(*, task) -> str | None:
    """Return why an actively chosen task takes no more judgments (its topic's plan spent
    its budget or stopped), or None while the plan still wants it (annotate's
    ``learning_task_closed`` hook)."""
    plan = LearningPlan.objects.filter(
        project_id=task.project_id, topic_id=task.topic_id, round_id=task.round_id
    ).first()
    if plan is None or plan.status != LearningPlan.Status.FINISHED:
        return None
    return (
        "Active learning on this topic has spent its budget"
        f"{f' ({plan.status_message})' if plan.status_message else ''}: "
        "this task needs no more judgments."
    )


def learning_plans_summary(*, project: AnnotationProject) -> list[dict]:
    """Return the project's learning plans as the judging page's idle notice shows them:
    topic number, status, message (annotate's ``learning_plans`` hook)."""
    return [
        {"topic": p.topic.number, "status": p.status, "message": p.status_message}
        for p in LearningPlan.objects.filter(project=project).select_related("topic")
    ]


def machine_labels_list(*, project: AnnotationProject) -> list[tuple]:
    """Return the project's machine labels as ``(topic number, docid, relevant,
    probability, model version)`` (annotate's ``machine_labels`` hook, for hybrid qrels)."""
    return [
        (m.topic.number, m.document.docid, m.relevant, m.probability, m.model_version)
        for m in MachineLabel.objects.filter(project=project).select_related("topic", "document")
    ]
