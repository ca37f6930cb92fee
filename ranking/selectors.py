"""Reads for the active-learning pages."""

from annotate.models import AnnotationProject
from ranking import active
from ranking.learning import batch_size, plan_state
from ranking.models import LearningPlan


def learning_overview(*, project: AnnotationProject) -> list[dict]:
    """Per plan: judged / budget, relevant found, estimated prevalence, queue depth, the
    current model, the gain curve and the stopping signal (with whether it can fire)."""
    rows = []
    plans = LearningPlan.objects.filter(project=project).select_related("topic", "project")
    for plan in plans.order_by("topic__number"):
        state = plan_state(plan)
        model = plan.models.order_by("-version").first()
        candidates = model.params.get("candidates") if model else None
        signal = active.knee_stop(state.gains, candidates=candidates or len(state.gains) * 2)
        rows.append(
            {
                "plan": plan,
                "judged": len(state.labels),
                "relevant": state.relevant,
                "queued": len(state.queued),
                "model": model,
                "versions": plan.models.count(),
                "batch": batch_size(plan, candidates) if candidates else None,
                "candidates": candidates,
                "signal": signal,
                "stopping": stopping_state(signal, budget=plan.budget),
                "curve": gain_curve_svg(state.gains, signal),
                "percent": min(100, round(100 * len(state.labels) / plan.budget)),
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
    gains: list[int], signal: active.StoppingSignal, *, width=260, height=130
) -> dict | None:
    """An SVG gain curve with axes: relevant found (y) against judgments spent (x), ticks at
    0, the middle and the end of each axis, and the knee if any. Coordinates in pixels."""
    n = len(gains)
    if n == 0:
        return None
    left, right, top, bottom = 34, 8, 8, 34  # room for the tick labels and axis titles
    plot_w, plot_h = width - left - right, height - top - bottom
    total = sum(gains)
    y_max = max(1, total)

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
    return {
        "width": width,
        "height": height,
        "points": " ".join(points),
        "knee": knee,
        "origin": (left, top + plot_h),
        "x_end": left + plot_w,
        "y_end": top,
        "x_ticks": [(x(v), v) for v in _ticks(n)],
        "y_ticks": [(y(v), v) for v in _ticks(total)],
        "x_title": (left + plot_w / 2, height - 4),
        "y_title": (10, top + plot_h / 2),
        "tick_label_y": top + plot_h + 14,
    }
