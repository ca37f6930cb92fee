"""A plan's check sample: drawn from the unreviewed frame, judged like any task, kept out of
the classifier's training and of the review's budget; the panel's estimate and verdicts."""

import numpy as np
import pytest
from django.urls import reverse

from annotate import roles
from annotate.models import Document, Task
from ranking import check_samples, learning_plans, learning_state, learning_step, selectors
from ranking.models import CheckSample
from tests.learningkit import (
    judge_next,
    judge_until_budget_spent,
    learning_project,
    plan_seeded_and_judged,
)

pytestmark = [pytest.mark.lucene]


@pytest.fixture
def plan_world(db, tmp_path, make_user):
    annotator = make_user("check-annotator", roles.ANNOTATOR)
    project, topic, truth = learning_project(tmp_path, annotator)
    plan = plan_seeded_and_judged(project, topic, truth, annotator, budget=40)
    return project, plan, annotator, truth


def test_the_check_sample_is_drawn_from_the_unreviewed_frame_and_queued_as_check_tasks(
    plan_world,
):
    project, plan, _annotator, _truth = plan_world
    before = learning_state.plan_state(plan)
    sample = check_samples.check_sample_draw(plan=plan, size=30, beyond_budget=True)
    assert len(set(sample.documents)) == 30
    assert not set(sample.documents) & (set(before.labels) | before.queued)
    assert sample.frame == 160 - len(before.labels) - len(before.queued)
    tasks = Task.objects.filter(project=project, document_id__in=sample.documents)
    assert set(tasks.values_list("source", flat=True)) == {Task.Source.CHECK}
    state = learning_state.plan_state(plan)
    assert state.check_queued == set(sample.documents)
    assert state.queued == before.queued  # the review's look-ahead is not taken by the sample


def test_check_sample_judgments_stay_out_of_training_and_of_the_review_budget(plan_world):
    project, plan, annotator, truth = plan_world
    sample = check_samples.check_sample_draw(plan=plan, size=30, beyond_budget=True)
    for _ in range(120):
        if not learning_state.plan_state(plan).check_queued:
            break
        if judge_next(project, annotator, truth) is None:
            learning_step.learning_step(plan_id=plan.pk)
    learning_step.learning_step(plan_id=plan.pk)
    state = learning_state.plan_state(plan)
    assert not state.check_queued
    assert set(sample.documents) <= set(state.labels)
    assert state.reviewed == len(state.labels) - len(state.checks)
    assert state.reviewed <= plan.budget
    assert len(state.gains) == state.reviewed  # the gain curve is the review's alone
    # A check-sample judgment that commits after a higher id (out of order) is not a late
    # training judgment: it makes no retrain due.
    from annotate.models import Judgment

    checked = Judgment.objects.filter(task__document_id__in=sample.documents).order_by("-pk")
    held = checked[1]  # not the newest: its id stays below the next model's mark
    Judgment.objects.filter(pk=held.pk).delete()
    rows = learning_state.plan_rows(plan)  # a retrain while it is not committed yet
    trained = learning_step._train(plan, learning_state.plan_state(plan), rows)
    model, _created = learning_step._record(plan, trained)
    assert model.judgment_mark > held.pk
    held.save(force_insert=True)
    state = learning_state.plan_state(plan)
    assert state.late_judgments(model) == 0 and state.judged_since(model) == 0
    model = plan.models.order_by("-version").first()
    assert model.judged == len(state.training) < len(state.labels)
    assert not set(state.training) & set(sample.documents)


def test_the_panel_estimates_recall_with_an_interval_and_gives_every_rule_a_verdict(
    plan_world,
):
    project, plan, annotator, truth = plan_world
    check_samples.plan_stopping_set(plan=plan, recall_target=0.7, confidence=0.9)
    check_samples.check_sample_draw(plan=plan, size=60, beyond_budget=True)  # budget 40
    for _ in range(200):
        if not learning_state.plan_state(plan).check_queued:
            break
        if judge_next(project, annotator, truth) is None:
            learning_step.learning_step(plan_id=plan.pk)
    s = selectors.plan_stopping(plan=plan)
    est = s["estimate"]
    assert est is not None and est.sampled == 60
    point, low, high = est.recall
    assert 0 <= low <= point <= high <= 1
    in_pool = {d.pk for d in Document.objects.filter(collection=project.collection)}
    relevant = Document.objects.filter(pk__in=in_pool, docid__in=truth).count()
    true_recall = est.found / relevant
    assert low <= true_recall <= high  # 90% interval: holds here, with this seed
    assert [v.rule for v in s["verdicts"]] == ["knee", "target", "qbcb", "hypergeometric"]
    assert s["recommendation"].endswith(".")


def test_drawing_more_than_the_frame_is_refused_and_names_the_size(plan_world):
    _project, plan, _a, _t = plan_world
    with pytest.raises(learning_plans.PlanError, match="documents are left to draw from"):
        check_samples.check_sample_draw(plan=plan, size=10_00)
    with pytest.raises(learning_plans.PlanError, match="recall target"):
        check_samples.plan_stopping_set(plan=plan, recall_target=1.5, confidence=0.95)
    assert not CheckSample.objects.filter(plan=plan).exists()


def test_the_stopping_report_exports_one_row_per_rule(plan_world, client, make_user):
    project, plan, _a, _t = plan_world
    client.force_login(make_user("report-lead", roles.LEAD))
    r = client.get(reverse("stopping-report-json", args=[project.slug]))
    assert r.status_code == 200
    rows = r.json()["rows"]
    assert [row["rule"] for row in rows] == ["Knee method"]  # no sample yet
    r = client.get(reverse("stopping-report-csv", args=[project.slug]))
    assert r.content.decode().splitlines()[0].startswith("topic,recall_target")
    assert np.isfinite(plan.recall_target)


def test_a_check_sample_beyond_what_is_left_of_the_budget_needs_the_leads_consent(plan_world):
    _project, plan, _a, _t = plan_world  # budget 40; 4 seeds and 10 judged by the review
    assert learning_state.plan_state(plan).reviewed == 14
    check_samples.check_sample_draw(plan=plan, size=20)  # 20 of the 26 left
    # the size table marks "over budget" by the same rule: a sample of 26 in all is allowed
    assert selectors.plan_stopping(plan=plan)["sample_room"] == 26
    with pytest.raises(learning_plans.PlanError) as refused:
        check_samples.check_sample_draw(plan=plan, size=7)  # 7 > 26 - 20
    assert str(refused.value).startswith(
        "a check sample of 7 documents is more than the 6 judgments left of the plan's budget "
        "of 40 (14 judged by the review and 20 check-sample documents drawn before). If you "
        "go on, its 7 judgments come on top of the budget: the review still goes on to 40, so "
        "this topic would take up to 67 judgments in all (40 for the review, 27 for the check "
        "sample)."
    )
    assert len(CheckSample.objects.get(plan=plan).documents) == 20
    check_samples.check_sample_draw(plan=plan, size=6)  # exactly what is left
    sample = check_samples.check_sample_draw(plan=plan, size=7, beyond_budget=True)
    assert len(sample.documents) == 33


def test_the_learning_page_counts_the_review_and_the_check_sample_apart(
    plan_world, client, make_user
):
    project, plan, annotator, truth = plan_world  # budget 40
    check_samples.check_sample_draw(plan=plan, size=60, beyond_budget=True)
    state = judge_until_budget_spent(project, plan, annotator, truth, rounds=400)
    assert state.check_judged == 60 and state.reviewed == 40
    assert len(state.labels) == 100  # the old page said "100 of 40 judged"
    client.force_login(make_user("counts-lead", roles.LEAD))
    text = client.get(reverse("learning", args=[project.slug])).content.decode()
    assert "40 of 40 judged by the review" in text
    assert "0 left of the budget" in text
    assert '60 of 60 check-sample judged <span class="muted">(on top of the budget)' in text
    assert "100 of 40" not in text
    assert "Judgments spent: 100 (40 of the budget of 40 by the review, 60 of the check " in text
    plan.refresh_from_db()
    assert plan.status_message == (
        "Budget spent: 40 documents judged (budget 40); 60 check-sample judgments on top"
    )


def test_the_stopping_form_speaks_percent_and_names_what_was_wrong(plan_world, client, make_user):
    project, plan, _a, _t = plan_world
    client.force_login(make_user("percent-lead", roles.LEAD))
    url = reverse("learning-stopping", args=[project.slug, plan.pk])
    page = reverse("learning", args=[project.slug])
    r = client.post(url, {"recall_target": "150", "confidence": "40"}, follow=True)
    text = r.content.decode()
    assert "the recall target must be above 0% and below 100% (e.g. 80%), not 150%" in text
    assert "the confidence must be at least 50% and below 100% (e.g. 95%), not 40%" in text
    assert "0.8" not in text.split("Topic 1:")[1][:300]  # no fraction in the message
    r = client.post(url, {"recall_target": "eighty", "confidence": "95"}, follow=True)
    assert "the recall target must be a number in percent (e.g. 80), not “eighty”" in (
        r.content.decode()
    )
    r = client.post(url, {"recall_target": "75%", "confidence": "90"})
    assert r["Location"].startswith(page)
    plan.refresh_from_db()
    assert (plan.recall_target, plan.confidence) == (pytest.approx(0.75), pytest.approx(0.9))
    draw = reverse("learning-check-sample", args=[project.slug, plan.pk])
    r = client.post(draw, {"size": "50"}, follow=True)
    assert (
        "a check sample of 50 documents is more than the 26 judgments left of the plan&#x27;s "
        "budget of 40 (14 judged by the review). If you go on, its 50 judgments come on top"
    ) in r.content.decode()
    assert not CheckSample.objects.filter(plan=plan).exists()
    client.post(draw, {"size": "50", "beyond_budget": "1"})
    assert len(CheckSample.objects.get(plan=plan).documents) == 50


def test_a_topic_without_a_plan_gets_a_row_that_says_so_not_a_bare_header(
    sample_collection, client, make_user
):
    from tests.factories import ProjectFactory

    annotator = make_user("empty-annotator", roles.ANNOTATOR)
    project = ProjectFactory(collection=sample_collection, annotators=[annotator])
    client.force_login(make_user("empty-lead", roles.LEAD))
    r = client.get(reverse("stopping-report-csv", args=[project.slug]))
    assert r.status_code == 200
    lines = r.content.decode().splitlines()
    assert len(lines) == 2 and lines[0] == "topic,rule,recommendation"
    assert "No active-learning plan for this topic" in lines[1]
    r = client.get(reverse("stopping-report-json", args=[project.slug]))
    (row,) = r.json()["rows"]
    assert row["topic"] == project.topics.get().number and row["rule"] == ""
    assert row["recommendation"].startswith("No active-learning plan for this topic")
