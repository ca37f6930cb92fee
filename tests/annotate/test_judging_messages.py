"""What the judging pages tell an annotator (issue 21): progress numbers that add up to the
tasks created, a message re-served by the production round after training, the true reason
no task waits or a skipped task cannot be taken back, and guidelines or their absence."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotate import judgments, projects, roles, selectors
from annotate.models import Document, Round, Task
from ranking.models import LearningPlan
from tests.conftest import ANSWERS


def _submit(user, task_id, key):
    return judgments.judgment_submit(
        user=user,
        task_id=task_id,
        idempotency_key=key,
        answers=judgments.Answers(**ANSWERS),
        active_seconds=3.0,
        started_at=timezone.now() - timedelta(seconds=5),
    )


def _next(client, project):
    return client.post(reverse("judge-next", args=[project.slug]))


def _production_round(project, documents):
    """Open a production round after the project's training round, on ``documents``."""
    production = projects.round_open(project=project, kind=Round.Kind.PRODUCTION)
    projects.project_tasks_add(
        project=project,
        round_=production,
        topic=project.topics.get(),
        persona=project.personas.get(),
        documents=documents,
    )
    return production


def test_progress_counts_judgments_and_says_how_tasks_and_extra_judgments_add_up(
    make_project, login
):
    project, (a, _b) = make_project(n_tasks=6, kind=Round.Kind.TRAINING)
    _production_round(project, list(Document.objects.order_by("id")[:4]))
    # 6 training tasks judged by both annotators, 4 production tasks by one: 10 tasks,
    # 16 judgments, as the demo's 155 tasks needed 185.
    progress = selectors.judging_progress(user=a, project=project, task_id=None)
    assert (progress["project_tasks"], progress["project_extra"]) == (10, 6)
    assert progress["project_needed"] == 16
    client = login(a)
    api = client.get(f"/api/projects/{project.slug}/progress/").json()
    assert (api["project_tasks"], api["project_extra"], api["project_needed"]) == (10, 6, 16)
    page = _next(client, project).content.decode()
    assert "0 / 16</span> judgments" in page
    assert "10 tasks + 6 extra judgments (tasks judged by more than one annotator) = 16 needed" in (
        " ".join(page.split())
    )


def test_a_message_judged_in_training_is_announced_when_production_serves_it_again(
    make_project, login
):
    project, (a, b) = make_project(n_tasks=1, kind=Round.Kind.TRAINING)
    training_task = Task.objects.get()
    _production_round(project, [training_task.document])
    client = login(a)
    first = _next(client, project).content.decode()
    assert "You judged this message in the training round" not in first
    _submit(a, training_task.pk, "t1")
    again = _next(client, project).content.decode()
    assert f'data-task-id="{training_task.pk}"' not in again
    assert "You judged this message in the training round; judge it again for production." in again
    # Another annotator, who did not judge it in training, is told nothing.
    assert "You judged this message" not in _next(login(b), project).content.decode()


def test_with_no_task_left_the_page_says_why_skipped_held_or_all_judged(make_project, login):
    project, (a, b) = make_project(n_tasks=2, overlap=1)
    mine = judgments.task_claim(user=a, project=project)
    theirs = judgments.task_claim(user=b, project=project)
    judgments.task_skip(user=a, task_id=mine.task_id, reason="unreadable")
    response = _next(login(a), project)
    assert response.status_code == 200 and response["X-No-Task"] == "1"
    text = " ".join(response.content.decode().split())
    assert "You skipped 1 task that still needs a judgment" in text
    assert "1 task is held by other annotators right now" in text
    assert "another annotator" not in text.replace("other annotators", "")

    _submit(b, theirs.task_id, "b1")
    judgments.task_resume(user=a, task_id=mine.task_id)
    _submit(a, mine.task_id, "a1")
    text = " ".join(_next(login(a), project).content.decode().split())
    assert "Every task of the open rounds that needs you has your judgment (1 in all)" in text
    assert "skipped" not in text and "held" not in text


def _finished_plan(project):
    task = Task.objects.get()
    Task.objects.filter(pk=task.pk).update(source=Task.Source.ACTIVE)
    return LearningPlan.objects.create(
        project=project,
        topic=task.topic,
        round=task.round,
        budget=1,
        batch_size=10,
        status=LearningPlan.Status.FINISHED,
        status_message="Budget spent: 1 documents judged",
    )


def test_at_the_end_of_an_active_learning_budget_the_reason_is_the_budget(make_project, login):
    project, (a, b) = make_project(n_tasks=1, overlap=1)
    _finished_plan(project)
    task = Task.objects.get()
    judgments.task_claim(user=a, project=project)
    judgments.task_skip(user=a, task_id=task.pk, reason="later")
    judgments.task_claim(user=b, project=project)  # the place a gave back is taken
    with pytest.raises(judgments.TaskNotNeeded) as refused:
        judgments.task_resume(user=a, task_id=task.pk)
    assert "spent its budget (Budget spent: 1 documents judged)" in refused.value.message
    assert "another annotator" not in refused.value.message.lower()
    text = " ".join(_next(login(a), project).content.decode().split())
    assert "Active learning on topic 1: its budget is spent" in text

    response = login(a).post(reverse("judge-resume", args=[project.slug, task.pk]), follow=True)
    assert "spent its budget" in response.content.decode()


def test_a_skipped_task_that_cannot_be_taken_back_names_the_true_reason(make_project):
    project, (a, b) = make_project(n_tasks=1, overlap=1)
    task = Task.objects.get()
    judgments.task_claim(user=a, project=project)
    judgments.task_skip(user=a, task_id=task.pk, reason="later")
    judgments.task_claim(user=b, project=project)
    with pytest.raises(judgments.TaskFull) as held:
        judgments.task_resume(user=a, task_id=task.pk)
    assert held.value.message.startswith("Another annotator holds this task now")
    _submit(b, task.pk, "b1")
    with pytest.raises(judgments.TaskFull) as judged:
        judgments.task_resume(user=a, task_id=task.pk)
    assert "another annotator judged it after you skipped it" in judged.value.message


def test_a_save_of_a_task_the_annotator_skipped_says_it_was_skipped_not_expired(make_project):
    project, (a, _b) = make_project(n_tasks=1)
    task = judgments.task_claim(user=a, project=project)
    judgments.task_skip(user=a, task_id=task.task_id, reason="later")
    with pytest.raises(judgments.TaskSkipped) as refused:
        _submit(a, task.task_id, "k")
    assert refused.value.code == "task_skipped"
    assert "You skipped this task" in refused.value.message
    assert "expired" not in refused.value.message


def test_guidelines_are_shown_and_their_absence_is_said(make_project, login):
    project, (a, _b) = make_project(n_tasks=1)
    client = login(a)
    page = client.get(reverse("judge", args=[project.slug])).content.decode()
    assert "This project has no guidelines." in page
    assert "Guidelines (this project has none)" in page  # in the ? list
    project.guidelines = "Question 1 - relevance.\n\nRead the narrative first."
    project.save()
    page = client.get(reverse("judge", args=[project.slug])).content.decode()
    assert "<p>Read the narrative first.</p>" in page
    assert "no guidelines" not in page


def test_the_edit_page_shares_the_highlighting_persona_card_and_keys(make_project, login):
    project, (a, _b) = make_project(n_tasks=1)
    task = judgments.task_claim(user=a, project=project)
    judgment, _ = _submit(a, task.task_id, "k")
    page = login(a).get(reverse("judgment-edit", args=[project.slug, judgment.pk])).content
    page = page.decode()
    assert "data-persona" in page and "Would not want shown" in page
    assert "<template data-page-keys>" in page and "Save the change" in page
    assert 'name="relevance" value="2" checked' in page
    assert "sasc/judge.js" in page


def test_the_demo_active_learning_project_has_the_demo_guidelines(
    sample_collection, make_user, monkeypatch
):
    """The demo's active-learning project showed "no guidelines" on g: it now gets the file."""
    from annotate import import_personas, services
    from annotate.models import AnnotationProject
    from config.management.commands import demo

    services.import_run(
        collection=sample_collection, fmt="topics-trec", path=demo.DEMO_DIR / "topics.txt"
    )
    import_personas.personas_import(path=demo.DEMO_DIR / "personas.json")
    users = [make_user(f"demo-a{i}", roles.ANNOTATOR) for i in (1, 2)]
    # The plan itself needs the Lucene index; this test is about the project.
    monkeypatch.setattr("ranking.learning_plans.learning_plan_create", lambda **kw: None)
    demo.Command().create_learning_project(sample_collection, users, sample_collection.topics)
    project = AnnotationProject.objects.get(name="Demo active learning")
    assert project.guidelines == (demo.DEMO_DIR / "guidelines.md").read_text()
    assert "Question 2 - would the persona consider it sensitive?" in project.guidelines


def test_judge_it_now_shows_the_task_taken_back_first(make_project, login):
    """The page holds a task and a preload; the annotator skips the one shown, then takes it
    back from the history ("Judge it now"): the page shows that task, not the preload (its
    lease is the newest, and the page showed the oldest first)."""
    project, (a, _b) = make_project(n_tasks=4, overlap=1)
    client = login(a)
    shown = judgments.task_claim(user=a, project=project)
    preload = judgments.task_claim(user=a, project=project, skip_task_ids=(shown.task_id,))
    judgments.task_skip(user=a, task_id=shown.task_id, reason="come back later")
    another = judgments.task_claim(user=a, project=project, skip_task_ids=(preload.task_id,))
    response = client.post(reverse("judge-resume", args=[project.slug, shown.task_id]))
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    order = [int(t) for t in re.findall(r'data-task-id="(\d+)"', page)]
    assert order == [shown.task_id, preload.task_id], (order, another.task_id)
    # A second task taken back is the fourth live lease: shown first too.
    judgments.task_skip(user=a, task_id=preload.task_id, reason="later too")
    judgments.task_claim(user=a, project=project, skip_task_ids=(shown.task_id, another.task_id))
    response = client.post(reverse("judge-resume", args=[project.slug, preload.task_id]))
    page = client.get(response["Location"]).content.decode()
    assert [int(t) for t in re.findall(r'data-task-id="(\d+)"', page)][0] == preload.task_id
    # Without the parameter, the oldest live lease first, as before.
    page = client.get(reverse("judge", args=[project.slug])).content.decode()
    assert [int(t) for t in re.findall(r'data-task-id="(\d+)"', page)][0] == another.task_id


def test_the_history_names_each_judgments_round_and_shows_its_comment(make_project, login):
    """A message judged in the training round and again in production appeared twice,
    alike, in the history; each row now says its round, and the comment given."""
    project, (a, _b) = make_project(n_tasks=1, kind=Round.Kind.TRAINING)
    _production_round(project, [Task.objects.get().document])
    for n, comment in ((1, "first look"), (2, "<b>again</b> in production")):
        claimed = judgments.task_claim(user=a, project=project)
        judgments.judgment_submit(
            user=a,
            task_id=claimed.task_id,
            idempotency_key=f"h{n}",
            answers=judgments.Answers(**{**ANSWERS, "comment": comment}),
            active_seconds=3.0,
            started_at=timezone.now() - timedelta(seconds=5),
        )
    page = " ".join(
        login(a).get(reverse("judging-history", args=[project.slug])).content.decode().split()
    )
    assert '<td>1 <span class="muted">training</span></td>' in page
    assert '<td>2 <span class="muted">production</span></td>' in page
    assert 'Your comment: <bdi class="said">first look</bdi>' in page
    assert "&lt;b&gt;again&lt;/b&gt; in production" in page
