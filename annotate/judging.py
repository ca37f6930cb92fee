"""The annotator's pages: judge tasks (keyboard-first, next task preloaded), history, edits,
and the lead's project dashboard.

Every query goes through the annotator's own assignments, so a task, document or judgment of
someone else answers 404 (G6).
"""

import json
import uuid
from datetime import timedelta

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from annotate import hooks, jobs, judgments, projects, roles, selectors
from annotate.entities import document_entity_view
from annotate.forms import ProjectForm, TasksForm
from annotate.models import Answer, Judgment
from core.highlight import light_stem, query_stems
from core.params import id_param, id_params

annotator_required = roles.role_required(roles.ANNOTATOR)


def _project(request, slug):
    return get_object_or_404(selectors.projects_for_user(request.user), slug=slug)


def _load(request, assignment):
    """Return the assignment with everything the task page shows (None stays None)."""
    if assignment is None:
        return None
    return selectors.assignment_for_user(user=request.user, task_id=assignment.task_id)


def _task_context(request, project, assignment, progress: dict | None = None) -> dict:
    """Return what _task.html needs, from an assignment loaded by ``_load``."""
    if assignment is None:
        return {"project": project, "assignment": None}
    full = assignment
    task = full.task
    if progress is None:
        progress = selectors.judging_progress(user=request.user, project=project, task_id=task.pk)
    return {
        "project": project,
        "assignment": full,
        "idempotency_key": uuid.uuid4().hex,
        "progress": progress,
        # A production round may re-serve a message judged in training: say so.
        "earlier": selectors.judgment_in_other_round(user=request.user, task=task),
        **_message_context(task),
    }


def _message_context(task) -> dict:
    """Return what the message pane, the cards and the questions need (judge and edit)."""
    stems = query_stems(task.topic.title, light_stem)
    # the topic's words, and what the recognisers found sensitive for this persona (issue 20)
    found = document_entity_view(
        document=task.document, persona=task.persona, stems=stems, stem=light_stem
    )
    return {
        "task": task,
        "doc": task.document,
        "thread": selectors.document_thread(document=task.document),
        "highlighted_body": found.highlighted_body,
        "entity_legend": found.legend,
        "relevance_choices": Judgment.Relevance.choices[::-1],
        "answer_choices": Answer.choices,
    }


def _done(request, project) -> HttpResponse:
    """Answer that no task waits, and why (the page shows the partial in place of a task)."""
    response = render(
        request,
        "annotate/_done.html",
        {"project": project, "idle": selectors.judging_idle(user=request.user, project=project)},
    )
    response["X-No-Task"] = "1"
    return response


@require_safe
@roles.role_required(roles.ANNOTATOR, roles.LEAD)
def project_list(request):
    """List the projects the user annotates or leads, with their progress."""
    return render(
        request,
        "annotate/projects.html",
        {
            "projects": selectors.projects_for_user(request.user).select_related("collection"),
        },
    )


@require_http_methods(["GET", "HEAD", "POST"])
@annotator_required
def judge(request, slug):
    """The judging page. GET shows the tasks this annotator already holds and claims nothing
    (the page's script then claims the next by POST); a POST claims the current and the
    next task and comes back here (post/redirect/get, for a browser without scripts)."""
    project = _project(request, slug)
    if request.method == "POST":
        current = judgments.task_claim(user=request.user, project=project)
        if current is not None:
            judgments.task_claim(
                user=request.user, project=project, skip_task_ids=(current.task_id,)
            )
        return redirect("judge", slug=project.slug)
    # ?task=: a task just taken back from the history is shown first, not after the ones
    # the page held before (its lease is the newest).
    held = judgments.task_held(
        user=request.user, project=project, first=id_param(request.GET.get("task", ""))
    )
    current = held[0] if held else None
    following = held[1] if len(held) > 1 else None
    return render(
        request,
        "annotate/judge.html",
        {
            **_task_context(request, project, _load(request, current)),
            "next": _task_context(request, project, _load(request, following))
            if following
            else None,
        },
    )


@require_POST
@annotator_required
def next_task(request, slug):
    """Claim and return a task partial to preload, other than the ones the page shows; or,
    when none is left, the reasons why (header ``X-No-Task``)."""
    project = _project(request, slug)
    held = id_params(request.POST.getlist("held"))
    assignment = judgments.task_claim(user=request.user, project=project, skip_task_ids=held)
    if assignment is None:
        return _done(request, project)
    return render(
        request, "annotate/_task.html", _task_context(request, project, _load(request, assignment))
    )


def _answers(data) -> judgments.Answers:
    try:
        relevance = int(data.get("relevance", ""))
    except ValueError:
        relevance = -1
    return judgments.Answers(
        relevance=relevance,
        persona_sensitive=data.get("persona_sensitive", ""),
        personal_sensitive=data.get("personal_sensitive", ""),
        comment=data.get("comment", "").strip(),
    )


def _error(request, exc: judgments.AnnotationError, fallback_url: str):
    if request.headers.get("X-Requested-With") == "fetch":
        return JsonResponse(
            {"code": exc.code, "message": exc.message, **exc.extra}, status=exc.status
        )
    messages.error(request, exc.message)
    return redirect(fallback_url)


@require_POST
@annotator_required
def submit(request, slug, task_id):
    """Store a judgment (idempotent) and answer with the next task to preload."""
    project = _project(request, slug)
    judge_url = reverse("judge", args=[project.slug])
    started = parse_datetime(request.POST.get("started_at", "")) or timezone.now()
    try:
        active = float(request.POST.get("active_seconds", "0"))
    except ValueError:
        active = -1.0
    key = request.headers.get("Idempotency-Key") or request.POST.get("idempotency_key", "")
    fetch = request.headers.get("X-Requested-With") == "fetch"
    held = id_params(request.POST.getlist("held"))
    submitted = {
        "user": request.user,
        "task_id": task_id,
        "idempotency_key": key,
        "answers": _answers(request.POST),
        "active_seconds": active,
        "started_at": started,
    }
    try:
        if fetch:
            judgment, created, following = judgments.judgment_submit_and_claim(
                project=project, skip_task_ids=held, **submitted
            )
        else:
            judgment, created = judgments.judgment_submit(**submitted)
    except judgments.AnnotationError as exc:
        return _error(request, exc, judge_url)
    if not fetch:
        messages.success(request, "Saved.")
        return redirect(judge_url)
    # The judgment is committed; what the answer shows is read in one transaction, after it
    # (no lock is held while rendering).
    with selectors.reads_together():
        following = _load(request, following)
        # One progress query for both the task the page shows now (the first it holds) and
        # the one it will show next.
        shown_progress, next_progress = selectors.judging_progress_many(
            user=request.user,
            project=project,
            task_ids=[held[0] if held else None, following.task_id if following else None],
        )
        response = (
            render(
                request,
                "annotate/_task.html",
                _task_context(request, project, following, next_progress),
            )
            if following
            else HttpResponse("")
        )
    response["X-Judgment"] = json.dumps(
        {"id": judgment.pk, "task": task_id, "version": judgment.version, "replayed": not created}
    )
    response["X-Progress"] = json.dumps(shown_progress)
    return response


@require_POST
@annotator_required
def skip(request, slug, task_id):
    """Skip a held task with a reason; the next one is claimed by the page."""
    project = _project(request, slug)
    try:
        judgments.task_skip(user=request.user, task_id=task_id, reason=request.POST.get("reason"))
    except judgments.AnnotationError as exc:
        return _error(request, exc, reverse("judge", args=[project.slug]))
    if request.headers.get("X-Requested-With") == "fetch":
        return JsonResponse({"skipped": task_id})
    messages.info(request, "Task skipped; find it under History to come back to it.")
    return redirect("judge", slug=project.slug)


@require_POST
@annotator_required
def resume(request, slug, task_id):
    """Take a skipped task back and return to judging it."""
    project = _project(request, slug)
    try:
        judgments.task_resume(user=request.user, task_id=task_id)
    except judgments.AnnotationError as exc:
        messages.error(request, exc.message)
        return redirect("judging-history", slug=project.slug)
    return redirect(f"{reverse('judge', args=[project.slug])}?task={task_id}")


@require_safe
@annotator_required
def history(request, slug):
    """List the annotator's own judgments in the project, newest first."""
    project = _project(request, slug)
    topic = request.GET.get("topic", "")
    since = None
    if request.GET.get("session") == "1":
        since = timezone.now() - timedelta(hours=12)
    own = selectors.judgments_for_user(
        user=request.user,
        project=project,
        topic_id=id_param(topic),
        since=since,
    )[:500]
    return render(
        request,
        "annotate/history.html",
        {
            "project": project,
            "judgments": own,
            "skipped": selectors.skipped_for_user(user=request.user, project=project),
            "topics": project.topics.order_by("number"),
            "topic": topic,
        },
    )


@require_http_methods(["GET", "HEAD", "POST"])
@annotator_required
def edit(request, slug, judgment_id):
    """Edit one of the annotator's own judgments (optimistic: a stale version is refused)."""
    project = _project(request, slug)
    judgment = (
        selectors.judgments_for_user(user=request.user, project=project)
        .prefetch_related("task__document__attachments")
        .filter(pk=judgment_id)
        .first()
    )
    if judgment is None:
        raise Http404
    error = None
    if request.method == "POST":
        version = id_param(request.POST.get("version", ""))
        if version is None:
            version = -1  # refused below as stale
        try:
            judgments.judgment_edit(
                user=request.user,
                judgment_id=judgment.pk,
                expected_version=version,
                answers=_answers(request.POST),
            )
        except judgments.AnnotationError as exc:
            error = exc.message
            judgment.refresh_from_db()
        else:
            messages.success(request, "Judgment changed.")
            return redirect("judging-history", slug=project.slug)
    return render(
        request,
        "annotate/edit.html",
        {
            "project": project,
            "judgment": judgment,
            "error": error,
            **_message_context(judgment.task),
        },
    )


@require_safe
@roles.role_required(roles.LEAD)
def dashboard(request, slug):
    """Show the lead the project's dashboard: tasks per topic, judgments per annotator."""
    project = _project(request, slug)
    return render(
        request,
        "annotate/dashboard.html",
        {
            "tasks_form": TasksForm(prefix="tasks", project=project),
            "project": project,
            **selectors.project_dashboard(project=project),
            "progress": selectors.judging_progress(
                user=request.user, project=project, task_id=None
            ),
            "failed_jobs": jobs.jobs_failed_unresolved(collection=project.collection),
        },
    )


def _add_tasks(project, round_, form) -> tuple[int, list[str]]:
    try:
        return _add_tasks_from(project, round_, form.cleaned_data)
    except ValueError as exc:  # topics or personas outside the project
        return 0, [str(exc)]


def _add_tasks_from(project, round_, data) -> tuple[int, list[str]]:
    chosen = {"topics": data["topics"] or None, "personas": data["personas"] or None}
    if data["source"] == "list":
        return projects.project_tasks_from_lines(
            project=project, round_=round_, lines=data["lines"]
        )
    if data["source"].startswith("reference"):
        added = projects.project_tasks_from_reference(
            project=project,
            round_=round_,
            only_relevant=data["source"] == "reference-relevant",
            **chosen,
        )
        return added, [] if added else ["The collection has no imported qrels for these topics."]
    try:
        added = projects.project_tasks_from_search(
            project=project, round_=round_, k=data["k"], **chosen
        )
        return added, []
    except hooks.SearchUnavailable as exc:
        return 0, [str(exc)]


@require_http_methods(["GET", "HEAD", "POST"])
@roles.role_required(roles.LEAD)
def project_new(request):
    """Create a project, its first round and its tasks."""
    form = ProjectForm(request.POST or None)
    tasks = TasksForm(request.POST or None, prefix="tasks")
    if request.method == "POST" and form.is_valid() and tasks.is_valid():
        d = form.cleaned_data
        project = projects.project_create(
            name=d["name"],
            collection=d["collection"],
            personas=d["personas"],
            topics=d["topics"],
            annotators=d["annotators"],
            overlap=d["overlap"],
            double_percent=d["double_percent"],
            guidelines=d["guidelines"],
            lease_minutes=d["lease_minutes"],
            round_kind=d["round_kind"],
            relevance_rule=d["relevance_rule"],
        )
        added, problems = _add_tasks(project, project.rounds.get(), tasks)
        messages.info(request, f"Project created with {added} tasks.")
        for problem in problems[:20]:
            messages.warning(request, problem)
        return redirect("judging-dashboard", slug=project.slug)
    return render(request, "annotate/project_new.html", {"form": form, "tasks": tasks})


@require_POST
@roles.role_required(roles.LEAD)
def round_new(request, slug):
    """Open the next round (training or production) and add its tasks."""
    project = _project(request, slug)
    tasks = TasksForm(request.POST, prefix="tasks", project=project)
    kind = request.POST.get("kind")
    if kind not in ("training", "production") or not tasks.is_valid():
        messages.error(request, "Choose a round kind and where its tasks come from.")
        return redirect("judging-dashboard", slug=project.slug)
    round_ = projects.round_open(project=project, kind=kind)
    added, problems = _add_tasks(project, round_, tasks)
    messages.info(request, f"Round {round_.number} ({kind}) opened with {added} tasks.")
    for problem in problems[:20]:
        messages.warning(request, problem)
    return redirect("judging-dashboard", slug=project.slug)
