"""Reads for the active-learning pages."""

from annotate.models import AnnotationProject
from ranking import active
from ranking.learning import batch_size, plan_state
from ranking.models import LearningPlan


def learning_overview(*, project: AnnotationProject) -> list[dict]:
    """Per plan: judged / budget, relevant found, estimated prevalence, queue depth, the
    current model, the gain curve and the stopping signal."""
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
                "curve": gain_curve_svg(state.gains, signal),
                "percent": min(100, round(100 * len(state.labels) / plan.budget)),
            }
        )
    return rows


def gain_curve_svg(gains: list[int], signal: active.StoppingSignal, *, width=240, height=80):
    """Points of an SVG polyline: relevant found against judged, and the knee if any."""
    n = len(gains)
    if n == 0:
        return None
    total = max(1, sum(gains))
    found, points = 0, [f"0,{height}"]
    for i, g in enumerate(gains, 1):
        found += g
        points.append(f"{width * i / n:.1f},{height - height * found / total:.1f}")
    knee = None
    if signal.knee:
        k_found = sum(gains[: signal.knee])
        knee = (round(width * signal.knee / n, 1), round(height - height * k_found / total, 1))
    return {"points": " ".join(points), "width": width, "height": height, "knee": knee}
