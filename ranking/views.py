"""The lead's active-learning pages: plans and their progress, and the topic workbench
where interactive search gives a topic its seed judgments."""

import math
from urllib.parse import urlencode

from django.contrib import messages
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import (
    require_http_methods,
    require_POST,
    require_safe,
)

from annotate import roles
from annotate import selectors as annotate_selectors
from annotate.models import AnnotationProject, Collection, Document, Topic
from core import active
from core.params import id_param
from ranking import learning_plans, pooling, selectors, services
from ranking.forms import ClassifierForm, LearningPlanForm, SearchForm, TopicForm
from ranking.models import LearningPlan
from ranking.services import IndexNotReady, collection_search

lead_required = roles.role_required(roles.LEAD)
PAGE = 20
MARKS = [(2, "Highly relevant"), (1, "Somewhat"), (0, "Not relevant")]


@require_http_methods(["GET", "HEAD", "POST"])
@lead_required
def learning_page(request, slug):
    """Show and set up a project's active-learning plans (lead)."""
    project = get_object_or_404(AnnotationProject, slug=slug)
    form = LearningPlanForm(request.POST or None, project=project)
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        topics = data.pop("topics")
        created, problems = 0, []
        for topic in topics:
            try:
                with transaction.atomic():
                    learning_plans.learning_plan_create(
                        project=project, topic=topic, user=request.user, **data
                    )
                created += 1
            except learning_plans.PlanError as exc:
                problems.append(f"Topic {topic.number}: {exc}")
        if created:
            messages.success(request, f"Active learning started for {created} topic(s).")
        for problem in problems:
            messages.error(request, problem)
        return redirect("learning", slug=project.slug)
    context = {
        "project": project,
        "form": form,
        "plans": selectors.learning_overview(project=project),
        "knee_rule": active.KNEE_RULE,
    }
    template = "ranking/_learning_plans.html" if request.htmx else "ranking/learning.html"
    return render(request, template, context)


@require_POST
@lead_required
def learning_pause(request, slug, plan_id):
    """Pause or resume a plan."""
    plan = get_object_or_404(LearningPlan, pk=plan_id, project__slug=slug)
    learning_plans.learning_plan_pause(plan=plan, paused=request.POST.get("action") == "pause")
    return redirect("learning", slug=slug)


@require_POST
@lead_required
def learning_stopping(request, slug, plan_id):
    """Set a plan's recall target and confidence (given in percent)."""
    from ranking.check_samples import plan_stopping_set

    plan = get_object_or_404(LearningPlan, pk=plan_id, project__slug=slug)
    try:
        target = _percent(request.POST, "recall_target", "recall target")
        confidence = _percent(request.POST, "confidence", "confidence")
        plan_stopping_set(plan=plan, recall_target=target, confidence=confidence)
    except learning_plans.PlanError as exc:
        messages.error(request, f"Topic {plan.topic.number}: {exc}.")
    else:
        messages.success(
            request,
            f"Topic {plan.topic.number}: recall target {target:.0%} "
            f"with {confidence:.0%} confidence.",
        )
    return redirect(f"{reverse('learning', args=[slug])}#plan-{plan.pk}")


def _percent(data, name: str, label: str) -> float:
    """A form field given in percent, as a fraction; the error names the field and value."""
    given = data.get(name, "").strip().rstrip("%").strip()
    try:
        value = float(given)
    except ValueError:
        raise learning_plans.PlanError(
            f"the {label} must be a number in percent (e.g. 80), not “{given[:20]}”"
        ) from None
    if not math.isfinite(value):
        raise learning_plans.PlanError(f"the {label} must be a number in percent (e.g. 80)")
    return value / 100


@require_POST
@lead_required
def learning_check_sample(request, slug, plan_id):
    """Draw (or extend) a plan's random check sample: the size for the chosen margin, or
    the size given."""
    from ranking.check_samples import check_sample_draw

    plan = get_object_or_404(LearningPlan, pk=plan_id, project__slug=slug)
    stop = selectors.plan_stopping(plan=plan)
    try:
        margin = float(request.POST.get("margin") or 0) or None
        size = request.POST.get("size", "").strip()
        if size:
            size = int(size)
        elif margin:
            row = next((r for r in stop["sizes"] if abs(r["margin"] - margin) < 1e-9), None)
            if row is None:
                raise learning_plans.PlanError("choose one of the margins shown")
            size = max(0, (row["at_prevalence"] or row["worst"]) - stop["drawn"])
            if size == 0:
                raise learning_plans.PlanError("the sample already has that size")
        else:
            raise learning_plans.PlanError("choose a margin or give a size")
        with transaction.atomic():
            sample = check_sample_draw(
                plan=plan,
                size=size,
                margin=margin,
                user=request.user,
                beyond_budget=bool(request.POST.get("beyond_budget")),
            )
    except ValueError as exc:
        problem = exc if isinstance(exc, learning_plans.PlanError) else "the size must be a number"
        messages.error(request, f"Topic {plan.topic.number}: {problem}.")
    else:
        messages.success(
            request,
            f"Topic {plan.topic.number}: {size} documents drawn at random for the check "
            f"sample ({len(sample.documents)} in all); they are queued for the annotators.",
        )
    return redirect(f"{reverse('learning', args=[slug])}#plan-{plan.pk}")


@require_safe
@lead_required
def stopping_report_export(request, slug, fmt):
    """The stopping report of every plan, one row per rule: CSV or JSON."""
    import csv
    import io
    import json

    from django.http import Http404, HttpResponse

    project = get_object_or_404(AnnotationProject, slug=slug)
    if fmt not in ("csv", "json"):
        raise Http404("the stopping report is CSV or JSON")
    rows = selectors.stopping_report(project=project)
    if fmt == "json":
        body = json.dumps({"project": project.slug, "rows": rows}, indent=1)
        response = HttpResponse(body, content_type="application/json")
    else:
        out = io.StringIO()
        fields = max((list(r) for r in rows), key=len, default=["topic", "rule"])
        writer = csv.DictWriter(out, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(rows)
        response = HttpResponse(out.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-stopping.{fmt}"'
    return response


@require_POST
@lead_required
def learning_retrain(request, slug, plan_id):
    """Queue a retrain of a plan now."""
    plan = get_object_or_404(LearningPlan, pk=plan_id, project__slug=slug)
    with transaction.atomic():
        learning_plans.learning_nudge(plan_id=plan.pk)
    messages.success(request, f"A worker will bring topic {plan.topic.number} up to date.")
    return redirect("learning", slug=slug)


@require_http_methods(["GET", "HEAD", "POST"])
@lead_required
def topic_seeds(request, slug, number):
    """Write or refine a topic while searching; mark results as its seed judgments."""
    collection = get_object_or_404(Collection, slug=slug)
    topic = get_object_or_404(Topic, collection=collection, number=number)
    if request.method == "POST" and "title" in request.POST:
        form = TopicForm(request.POST)
        if form.is_valid():
            for name, value in form.cleaned_data.items():
                setattr(topic, name, value)
            topic.save(update_fields=list(form.cleaned_data))
            messages.success(request, f"Topic {topic.number} saved.")
            return redirect("topic-seeds", slug=slug, number=number)
    else:
        form = TopicForm(
            initial={
                "title": topic.title,
                "description": topic.description,
                "narrative": topic.narrative,
            }
        )
    query = request.GET.get("q", "").strip()[:500]
    results, error = [], None
    if query:
        try:
            results = collection_search(
                collection=collection,
                query=query,
                documents=Document.objects.filter(collection=collection),
                k=PAGE,
            )
        except IndexNotReady:
            error = "This collection has no search index yet: build it first."
    marks = {s.document_id: s for s in topic.seeds.select_related("document")}
    context = {
        "collection": collection,
        "topic": topic,
        "form": form,
        "query": query,
        "results": [(r, marks.get(r.document.pk)) for r in results],
        "error": error,
        "seeds": sorted(marks.values(), key=lambda s: s.marked_at),
        "relevance_choices": MARKS,
    }
    template = "ranking/_seed_results.html" if request.htmx else "ranking/topic_seeds.html"
    return render(request, template, context)


@require_POST
@lead_required
def topic_seed_mark(request, slug, number, document_id):
    """Mark a document found while searching as a seed of a topic (interactive search)."""
    collection = get_object_or_404(Collection, slug=slug)
    topic = get_object_or_404(Topic, collection=collection, number=number)
    document = get_object_or_404(Document, pk=document_id, collection=collection)
    value = request.POST.get("relevance", "")
    if value == "remove":
        learning_plans.topic_seed_remove(topic=topic, document_id=document.pk)
        seed = None
    elif value in ("0", "1", "2"):
        seed = learning_plans.topic_seed_mark(
            topic=topic,
            document=document,
            relevance=int(value),
            query=request.POST.get("q", ""),
            user=request.user,
        )
    else:
        messages.error(request, "Choose highly relevant, somewhat, not relevant or remove.")
        return redirect("topic-seeds", slug=slug, number=number)
    if request.htmx:
        return render(
            request,
            "ranking/_seed_mark.html",
            {
                "collection": collection,
                "topic": topic,
                "document": document,
                "seed": seed,
                "query": request.POST.get("q", ""),
                "relevance_choices": MARKS,
            },
        )
    back = reverse("topic-seeds", args=[slug, number])
    return redirect(f"{back}?{urlencode({'q': request.POST.get('q', '')})}")


@require_http_methods(["GET", "HEAD", "POST"])
@lead_required
def classifiers(request, slug):
    """The persona classifiers of a collection: versions, reports, and training."""
    from annotate.models import Job
    from ranking.classifier import ClassifierError, job_sensitivity_create
    from ranking.models import SensitivityModel

    collection = get_object_or_404(Collection, slug=slug)
    form = ClassifierForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            with transaction.atomic():
                job = job_sensitivity_create(
                    collection=collection,
                    persona=data["persona"],
                    source=data["source"],
                    categories=[c.strip() for c in data["categories"].split(",") if c.strip()],
                    objective=data["objective"],
                    user=request.user,
                )
        except ClassifierError as exc:
            messages.error(request, str(exc))
            return redirect("classifiers", slug=slug)
        return redirect("job-detail", pk=job.pk)
    from core.explain import weights_in_words

    models = list(
        SensitivityModel.objects.filter(collection=collection)
        .select_related("persona")
        .order_by("persona__name", "-version")
    )
    for m in models:
        report = m.report or {}
        m.towards_sensitive = weights_in_words(report.get("top_sensitive"))
        m.towards_not_sensitive = weights_in_words(report.get("top_not_sensitive"))
    jobs = Job.objects.filter(collection=collection, kind=Job.Kind.SENSITIVITY)[:10]
    return render(
        request,
        "ranking/classifiers.html",
        {
            "collection": collection,
            "form": form,
            "models": models,
            "jobs": jobs,
        },
    )


# Pages of a collection that drive ranking: its search, its index, pooling a project's
# topics (the collection's other pages are annotate's).
SEARCH_PAGE = 20


def _browsable_collection(request, slug) -> Collection:
    return get_object_or_404(annotate_selectors.collections_for_user(request.user), slug=slug)


@require_safe
@roles.role_required(roles.LEAD, roles.ARCHIVIST)
def search(request, slug):
    """Search a collection: BM25 results with snippets, a page at a time."""
    collection = _browsable_collection(request, slug)
    form = SearchForm(request.GET or None)
    results, error, page = [], None, 1
    if form.is_valid() and form.cleaned_data["q"].strip():
        page = form.cleaned_data.get("page") or 1
        try:
            results = collection_search(
                collection=collection,
                query=form.cleaned_data["q"],
                documents=annotate_selectors.documents_for_user(request.user),
                k=SEARCH_PAGE,
                offset=(page - 1) * SEARCH_PAGE,
            )
        except IndexNotReady:
            error = "This collection has no search index yet. A lead can build it."
    context = {
        "collection": collection,
        "form": form,
        "results": results,
        "error": error,
        "page": page,
        "has_next": len(results) == SEARCH_PAGE,
        "query": form.data.get("q", ""),
        "first_rank": (page - 1) * SEARCH_PAGE + 1,
    }
    template = "ranking/_search_results.html" if request.htmx else "ranking/search.html"
    return render(request, template, context)


@require_POST
@roles.role_required(roles.LEAD)
def index_rebuild(request, slug):
    """Queue a rebuild of the collection's index and features."""
    collection = _browsable_collection(request, slug)
    with transaction.atomic():
        job = services.job_index_create(collection=collection, user=request.user)
    return redirect("job-detail", pk=job.pk)


@require_POST
@lead_required
def pool_start(request, slug):
    """Pool the project's topics with twelve systems into one of its open rounds (a job)."""
    project = get_object_or_404(AnnotationProject, slug=slug)
    round_ = project.rounds.filter(pk=id_param(request.POST.get("round")), is_open=True).first()
    depth = id_param(request.POST.get("depth"))
    if round_ is None or depth is None or not 1 <= depth <= 1000:
        messages.error(request, "Choose an open round and a depth between 1 and 1000.")
        return redirect("judging-dashboard", slug=project.slug)
    if project.collection.indexed_version is None:
        messages.error(request, "The collection has no index yet: build it first.")
        return redirect("judging-dashboard", slug=project.slug)
    with transaction.atomic():
        job = pooling.job_pool_create(
            project=project, round_=round_, depth=depth, user=request.user
        )
    return redirect("job-detail", pk=job.pk)
