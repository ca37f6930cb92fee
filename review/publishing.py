"""The lead's publish page (issue 33): choose a publication's routing band with a live
preview of what it does to the whole collection (``core.routing.band_preview``), the rule's
suggested band (``review.services.BAND_RULE``), and the classifier's calibration beside it
(Brier scores, a reliability plot drawn here as SVG, the trust sentence). The preview is a
GET and writes nothing; the POST saves the band through ``services.publication_band_set``,
audited (docs/publishing.md)."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotate import roles
from core.routing import band_preview
from review import selectors, services

lead_required = roles.role_required(roles.LEAD)

# The reliability plot: a square of SIZE pixels, P from 0 to 1 on both axes, LEFT pixels of
# axis labels to its left, TOP above it and BOTTOM below.
SIZE, LEFT, TOP, BOTTOM = 240, 52, 10, 36


def publication_or_404(slug):
    """The publication of the collection ``slug``, or 404 (its release audits' pages too)."""
    collection = selectors.collection_with_publication(slug=slug)
    if collection is None:
        raise Http404
    return collection.publication


def _xy(p: float, observed: float) -> tuple[float, float]:
    return round(LEFT + p * SIZE, 1), round(TOP + (1 - observed) * SIZE, 1)


def reliability_plot(bins: list[dict]) -> dict:
    """Coordinates of the reliability plot: per bin a point at (mean predicted P, observed
    rate), its 95% Clopper-Pearson interval as a vertical bar, its count; the diagonal is
    perfect calibration. Point areas grow with the bin's count."""
    most = max((b["count"] for b in bins), default=1) or 1
    points = []
    for b in bins:
        x, y = _xy(b["mean_predicted"], b["observed"])
        _x, top = _xy(b["mean_predicted"], b["observed_high"])
        _x, bottom = _xy(b["mean_predicted"], b["observed_low"])
        points.append(
            {
                "x": x,
                "y": y,
                "top": top,
                "bottom": bottom,
                "r": round(3 + 5 * (b["count"] / most) ** 0.5, 1),
                "title": (
                    f"P {b['low']:.2f}-{b['high']:.2f}: {b['positives']} of {b['count']} "
                    f"sensitive (observed {b['observed']:.0%}, 95% interval "
                    f"{b['observed_low']:.0%}-{b['observed_high']:.0%}; mean P "
                    f"{b['mean_predicted']:.2f})"
                ),
            }
        )
    ticks = [
        {"v": f"{t:g}", "at": round(LEFT + t * SIZE, 1), "y": round(TOP + (1 - t) * SIZE, 1)}
        for t in (0, 0.25, 0.5, 0.75, 1)
    ]
    return {
        "points": points,
        "ticks": ticks,
        "size": SIZE,
        "left": LEFT,
        "top": TOP,
        "right": LEFT + SIZE,
        "bottom": TOP + SIZE,
        "middle_x": LEFT + SIZE // 2,
        "middle_y": TOP + SIZE // 2,
        "width": LEFT + SIZE + 12,
        "height": TOP + SIZE + BOTTOM,
    }


def workload(hours: float) -> str:
    """Review time in words: minutes under an hour, else hours to a tenth."""
    if hours < 1:
        return f"{round(hours * 60)} minutes"
    return f"{hours:,.1f} hours"


def _calibration(report: dict) -> dict:
    bins = report.get("bins") or []
    return {
        **report,
        "plot": reliability_plot(bins) if bins else None,
    }


@require_http_methods(["GET", "HEAD", "POST"])
@lead_required
def publish(request, slug):
    """The publication's band: the current one, a form whose changes redraw the preview (an
    htmx GET of the ``preview`` partial, no write), the rule's suggestion, the calibration;
    the POST saves the band and whether the collection is published."""
    publication = publication_or_404(slug)
    error = None
    if request.method == "POST":
        try:
            services.publication_band_set(
                publication=publication,
                user=request.user,
                low=request.POST.get("low"),
                high=request.POST.get("high"),
                published=request.POST.get("published") == "on",
                why=request.POST.get("why", "")[:200],
            )
        except services.BandError as exc:
            error = str(exc)
        else:
            messages.success(
                request,
                "Saved. Searchers see the new visible set from their next search.",
            )
            return redirect("review-publish", slug=slug)
    inputs = services.band_inputs(publication=publication)
    data = request.POST if error else request.GET
    low, high = publication.band_low, publication.band_high
    if "low" in data or "high" in data:
        try:
            low, high = services.band_parse(data.get("low"), data.get("high"))
        except services.BandError as exc:
            error = str(exc)
    trained = inputs.inputs.version is not None
    preview = band_preview(inputs.inputs.p, low=low, high=high, **inputs.preview_args())
    current = (
        band_preview(
            inputs.inputs.p,
            low=publication.band_low,
            high=publication.band_high,
            **inputs.preview_args(),
        )
        if (low, high) != (publication.band_low, publication.band_high)
        else preview
    )
    rule = services.band_suggested(inputs=inputs)
    bins = inputs.inputs.report.get("bins") or []
    context = {
        "publication": publication,
        "collection": publication.collection,
        "persona": publication.persona,
        "inputs": inputs.inputs,
        "trained": trained,
        "preview": preview,
        "workload": workload(preview.review_hours),
        "current": current,
        "changed": (low, high) != (publication.band_low, publication.band_high),
        "low": low,
        "high": high,
        "error": error,
        "rule": rule,
        "is_rule": rule is not None
        and (rule.low, rule.high) == (publication.band_low, publication.band_high),
        # The risk the band in force carries beyond the interval: if every unreleased visible
        # message were as likely sensitive as the lowest bin's 95% upper bound allows (only
        # when the low edge is inside that bin: above it, the visible span more bins).
        "lowest_bin": bins[0] if bins else None,
        "ceiling": round((current.visible - current.released) * bins[0]["observed_high"])
        if bins and publication.band_low <= bins[0]["high"]
        else None,
        "rule_params": services.BAND_RULE,
        "calibration": _calibration(inputs.inputs.report),
        "published": (
            request.POST.get("published") == "on"
            if error and request.method == "POST"
            else publication.published
        ),
    }
    if request.htmx and request.method == "GET":
        return render(request, "review/_publish_preview.html", context)
    return render(
        request,
        "review/publish.html",
        context,
        status=400 if error and request.method == "POST" else 200,
    )
