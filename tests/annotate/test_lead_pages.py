"""The lead's pages after issue 21: dashboard columns that add up, the adjudication count,
the audit trail of edits, adjudications, imports and exports, the qrels download and the
pooling round."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotate import judgments, selectors
from annotate.models import Assignment, Round, Task
from review.models import AuditEvent
from tests.conftest import ANSWERS

pytestmark = pytest.mark.django_db


def judge(user, task_id, key, **answers):
    judgments.task_claim(user=user, project=Task.objects.get(pk=task_id).project)
    return judgments.judgment_submit(
        user=user,
        task_id=task_id,
        idempotency_key=key,
        answers=judgments.Answers(**{**ANSWERS, **answers}),
        active_seconds=4.0,
        started_at=timezone.now() - timedelta(seconds=4),
    )[0]


def lease(user, task):
    now = timezone.now()
    Assignment.objects.create(
        task=task, annotator=user, leased_at=now, expires_at=now + timedelta(minutes=30)
    )
    Task.objects.filter(pk=task.pk).update(claimed=task.claimed + 1)


def test_dashboard_columns_add_up_with_double_judging_skips_and_active_learning(make_project):
    project, (a, b, c) = make_project(annotators=3, n_tasks=6, overlap=2)
    tasks = list(Task.objects.filter(project=project).order_by("position"))
    Task.objects.filter(pk=tasks[5].pk).update(source=Task.Source.ACTIVE)
    # task 0: judged twice (done); task 1: judged once (in progress); task 2: leased;
    # task 3: skipped by a (open again); tasks 4 and 5: untouched (open).
    for user in (a, b):
        lease(user, tasks[0])
        judge(user, tasks[0].pk, f"{user.pk}-0", relevance=2 if user == a else 0)
    lease(a, tasks[1])
    judge(a, tasks[1].pk, "a-1")
    lease(c, tasks[2])
    lease(a, tasks[3])
    judgments.task_skip(user=a, task_id=tasks[3].pk, reason="cannot read it")

    row = selectors.project_dashboard(project=project)["topics"][0]
    assert row["tasks"] == 6
    assert (row["done"], row["in_progress"], row["open"]) == (1, 2, 3)
    assert row["done"] + row["in_progress"] + row["open"] == row["tasks"]
    assert (row["judged"], row["needed"]) == (3, 12), "a double-judged task needs two"
    assert row["active"] == 1
    assert {r["annotator__username"]: r["n"] for r in row["per_annotator"]} == {
        a.username: 2,
        b.username: 1,
    }
    assert sum(r["n"] for r in row["per_annotator"]) == row["judged"]
    # Relevant documents by final label: task 0 (2 and 0, rule "higher") and task 1.
    assert row["relevant"] == 2
    assert [s.task_id for s in row["skipped"]] == [tasks[3].pk]


def test_the_dashboard_page_labels_how_its_columns_add_up(login, users, make_project):
    project, _ = make_project(n_tasks=2)
    html = login(users["lead"]).get(reverse("judging-dashboard", args=[project.slug]))
    text = html.content.decode()
    assert "done</strong> (all its judgments in) + <strong>in progress" in text
    assert "counts once among the tasks and twice among the judgments" in text
    assert reverse("project-export-qrels", args=[project.slug]) in text


def test_pooling_offers_the_latest_open_production_round_first(login, users, make_project):
    project, _ = make_project(n_tasks=1, kind=Round.Kind.TRAINING)
    production = Round.objects.create(project=project, number=2, kind=Round.Kind.PRODUCTION)
    assert selectors.pool_round_default(project=project) == production
    text = login(users["lead"]).get(reverse("judging-dashboard", args=[project.slug]))
    assert f'<option value="{production.pk}" selected>' in text.content.decode()


def disagreement(project, a, b):
    task = Task.objects.filter(project=project).order_by("position").first()
    for user, grade in ((a, 2), (b, 0)):
        lease(user, task)
        judge(user, task.pk, f"{user.pk}-d", relevance=grade)
    return Task.objects.get(pk=task.pk)


def test_adjudicating_a_disagreement_takes_it_off_the_count(login, users, make_project):
    project, (a, b) = make_project(n_tasks=2, overlap=2)
    task = disagreement(project, a, b)
    assert selectors.agreement_for(project=project, samples=0)["to_adjudicate"] == 1
    client = login(users["lead"])
    url = reverse("agreement", args=[project.slug])
    assert '<span data-count="to-adjudicate">1</span>' in client.get(url).content.decode()
    client.post(
        reverse("adjudicate", args=[project.slug, task.pk]),
        {"relevance": "1", "persona_sensitive": "", "reason": "partly on topic"},
    )
    report = selectors.agreement_for(project=project, samples=0)
    assert (report["to_adjudicate"], report["adjudicated"]) == (0, 1)
    assert '<span data-count="to-adjudicate">0</span>' in client.get(url).content.decode()


def test_an_adjudication_of_the_other_answer_leaves_the_disagreement_open(make_project, users):
    project, (a, b) = make_project(n_tasks=2, overlap=2)
    task = disagreement(project, a, b)
    judgments.adjudicate(
        user=users["lead"], task=task, relevance=None, persona_sensitive="no", reason="r"
    )
    assert selectors.agreement_for(project=project, samples=0)["to_adjudicate"] == 1


def test_edits_adjudications_and_qrels_downloads_are_audited_and_read_as_text(
    login, users, make_project
):
    project, (a, b) = make_project(n_tasks=2, overlap=2)
    task = disagreement(project, a, b)
    mine = task.judgments.get(annotator=a)
    judgments.judgment_edit(
        user=a,
        judgment_id=mine.pk,
        expected_version=1,
        answers=judgments.Answers(**{**ANSWERS, "relevance": 1}),
    )
    client = login(users["lead"])
    client.post(
        reverse("adjudicate", args=[project.slug, task.pk]),
        {"relevance": "1", "persona_sensitive": "", "reason": "partly on topic"},
    )
    qrels = client.get(reverse("project-export-qrels", args=[project.slug]))
    assert qrels["Content-Disposition"] == f'attachment; filename="{project.slug}-qrels.txt"'
    assert qrels.content.decode() == f"1 0 {task.document.docid} 1\n"
    actions = list(AuditEvent.objects.order_by("id").values_list("action", flat=True))
    assert actions == ["judgment-edit", "adjudication", "export"]
    edit = AuditEvent.objects.get(action="judgment-edit")
    assert edit.user == a and edit.document_id == task.document_id
    assert edit.detail["changed"] == {"relevance": [2, 1]}

    html = client.get(reverse("audit-log")).content.decode()
    doc = reverse("document-detail", args=[project.collection.slug, task.document.pk])
    assert f'changed their judgment of <a href="{doc}">' in html
    assert "for topic 1 (relevance 2 → 1)" in html
    assert "adjudicated" in html and "relevance Somewhat relevant" in html
    assert "downloaded qrels.txt of" in html
    assert "{&#x27;" not in html, "no raw Python dict"


def test_an_import_is_audited_with_its_user(make_project, users, tmp_path):
    from annotate import services
    from annotate.models import Document

    project, _ = make_project(n_tasks=1)
    docid = Document.objects.first().docid
    path = tmp_path / "q.txt"
    path.write_text(f"1 0 {docid} 1\n")
    job, report = services.import_recorded(
        collection=project.collection, fmt="qrels-trec", path=path, label="reference"
    )
    event = AuditEvent.objects.get(action="import")
    assert event.collection == project.collection
    assert event.detail["format"] == "qrels-trec" and event.detail["job"] == job.pk


def test_the_api_docs_lead_back_to_the_app(login, users):
    response = login(users["lead"]).get(reverse("api-docs"))
    html = response.content.decode()
    assert response.status_code == 200
    assert f'<a href="{reverse("home")}">← Back to sasc</a>' in html
    assert 'id="swagger-ui"' in html


def test_a_leads_home_lists_the_projects_with_their_pages(login, users, make_project):
    """The lead's start page named collections and review pages but no project: the
    projects were only under Annotation."""
    project, _annotators = make_project(n_tasks=2)
    html = login(users["lead"]).get(reverse("home")).content.decode()
    assert f"<strong>{project.name}</strong>" in html
    for name in ("judging-dashboard", "agreement", "learning", "project-export"):
        assert reverse(name, args=[project.slug]) in html, name
    # An annotator's home is unchanged: their projects, to judge.
    annotator = project.annotators.first()
    html = login(annotator).get(reverse("home")).content.decode()
    assert reverse("judging-dashboard", args=[project.slug]) not in html
    assert reverse("judge", args=[project.slug]) in html
