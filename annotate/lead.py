"""The lead's agreement pages: kappa per round, topic and persona, disagreements to discuss
and adjudicate, and the exports (docs/domain.md §5)."""

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from annotate import charts, exports, judgments, labels, roles, selectors
from annotate.hooks import audit_record
from annotate.models import AnnotationProject, Judgment, Task
from core import agreement
from core.params import id_param

lead_required = roles.role_required(roles.LEAD)


def _int_or_none(value):
    return id_param(value)


@require_safe
@lead_required
def agreement_page(request, slug):
    """Show the project's agreement per round, topic and question, with the disagreements."""
    project = get_object_or_404(AnnotationProject, slug=slug)
    filters = {
        "round_id": _int_or_none(request.GET.get("round")),
        "topic_id": _int_or_none(request.GET.get("topic")),
        "persona_id": _int_or_none(request.GET.get("persona")),
    }
    report = selectors.agreement_for(project=project, **filters)
    facets = agreement.FACETS
    pairs = [(p["annotators"], [(f, p["facets"][f.name]) for f in facets]) for p in report["pairs"]]
    alpha = [(f, report["alpha"][f.name]) for f in facets] if report["alpha"] else []
    return render(
        request,
        "annotate/agreement.html",
        {
            "project": project,
            "report": report,
            "filters": filters,
            "pairs": pairs,
            "alpha": alpha,
            "topics": project.topics.order_by("number"),
            "personas": project.personas.order_by("name"),
            "all_rounds": project.rounds.order_by("number"),
            "rounds": selectors.agreement_over_rounds(project=project),
            "reference": selectors.agreement_with_reference(project=project),
            "relevance_choices": Judgment.Relevance.choices[::-1],
            "query": request.GET.urlencode(),
        },
    )


@require_POST
@lead_required
def adjudicate(request, slug, task_id):
    """Record the lead's final label of a task the annotators disagree on."""
    project = get_object_or_404(AnnotationProject, slug=slug)
    task = get_object_or_404(Task, pk=task_id, project=project)
    back = reverse("agreement", args=[project.slug])
    if request.POST.get("query"):
        back += "?" + request.POST["query"]
    relevance = request.POST.get("relevance", "")
    try:
        judgments.adjudicate(
            user=request.user,
            task=task,
            relevance=id_param(relevance),
            persona_sensitive=request.POST.get("persona_sensitive", ""),
            reason=request.POST.get("reason", ""),
        )
    except judgments.InvalidAnswers as exc:
        messages.error(request, f"Not saved: {exc.message}.")
        return redirect(back)
    messages.success(request, f"Adjudicated {task.document.docid} for topic {task.topic.number}.")
    return redirect(back)


@require_safe
@lead_required
def export(request, slug):
    """Send every export file of the project in one zip (machine labels when asked)."""
    project = get_object_or_404(AnnotationProject, slug=slug)
    machine_labels = request.GET.get("machine_labels") == "include"
    content = exports.export_zip(project, machine_labels=machine_labels)
    export_audit(request.user, project, "export.zip", machine_labels)
    return zip_response(project, content)


@require_safe
@lead_required
def export_qrels(request, slug):
    """Send the project's TREC qrels file alone (hybrid with machine labels when asked)."""
    project = get_object_or_404(AnnotationProject, slug=slug)
    machine_labels = request.GET.get("machine_labels") == "include"
    text = exports.export_files(project, pictures=False, machine_labels=machine_labels)["qrels.txt"]
    export_audit(request.user, project, "qrels.txt", machine_labels)
    response = HttpResponse(text, content_type="text/plain; charset=utf-8")
    suffix = "-hybrid" if machine_labels else ""
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-qrels{suffix}.txt"'
    return response


def export_audit(user, project: AnnotationProject, name: str, machine_labels: bool) -> None:
    """Log a download of the project's labels (qrels, zip or another export file)."""
    audit_record(
        user=user,
        action="export",
        collection=project.collection,
        project=project.slug,
        file=name,
        machine_labels=machine_labels,
    )


def zip_response(project: AnnotationProject, content: bytes) -> HttpResponse:
    """Return zip bytes as a download named after the project."""
    response = HttpResponse(content, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-export.zip"'
    return response


CHARTS = {
    "relevant-per-topic": lambda labels, project: charts.relevant_per_topic(labels),
    "kappa-per-round": lambda labels, project: charts.kappa_per_round(
        selectors.agreement_over_rounds(project=project)
    ),
    "sensitivity-prevalence": lambda labels, project: charts.sensitivity_prevalence(labels),
}


@require_safe
@lead_required
def chart(request, slug, name):
    """One of the project's pictures, as PNG, drawn from the current final labels."""
    project = get_object_or_404(AnnotationProject, slug=slug)
    if name not in CHARTS:
        raise Http404("no such chart")
    # No snapshot transaction: a picture may mix two commits, and on SQLite (where every
    # transaction takes the write lock) three pictures loading at once would queue.
    png = CHARTS[name](labels.final_labels(project), project)
    response = HttpResponse(png, content_type="image/png")
    response["Cache-Control"] = "private, no-store"
    return response
