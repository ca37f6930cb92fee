"""A plan's check sample: drawn from the unreviewed frame, judged like any task, kept out of
the classifier's training and of the review's budget; the panel's estimate and verdicts."""

import numpy as np
import pytest
from django.urls import reverse

from annotate import roles
from annotate.models import Document, Task
from ranking import check_samples, learning, selectors
from ranking.models import CheckSample
from tests.learningkit import judge_next, learning_project, plan_seeded_and_judged

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
    before = learning.plan_state(plan)
    sample = check_samples.check_sample_draw(plan=plan, size=30)
    assert len(set(sample.documents)) == 30
    assert not set(sample.documents) & (set(before.labels) | before.queued)
    assert sample.frame == 160 - len(before.labels) - len(before.queued)
    tasks = Task.objects.filter(project=project, document_id__in=sample.documents)
    assert set(tasks.values_list("source", flat=True)) == {Task.Source.CHECK}
    state = learning.plan_state(plan)
    assert state.check_queued == set(sample.documents)
    assert state.queued == before.queued  # the review's look-ahead is not taken by the sample


def test_check_sample_judgments_stay_out_of_training_and_of_the_review_budget(plan_world):
    project, plan, annotator, truth = plan_world
    sample = check_samples.check_sample_draw(plan=plan, size=30)
    for _ in range(120):
        if not learning.plan_state(plan).check_queued:
            break
        if judge_next(project, annotator, truth) is None:
            learning.learning_step(plan_id=plan.pk)
    learning.learning_step(plan_id=plan.pk)
    state = learning.plan_state(plan)
    assert not state.check_queued
    assert set(sample.documents) <= set(state.labels)
    assert state.reviewed == len(state.labels) - len(state.checks)
    assert state.reviewed <= plan.budget
    assert len(state.gains) == state.reviewed  # the gain curve is the review's alone
    model = plan.models.order_by("-version").first()
    assert model.judged == len(state.training) < len(state.labels)
    assert not set(state.training) & set(sample.documents)


def test_the_panel_estimates_recall_with_an_interval_and_gives_every_rule_a_verdict(
    plan_world,
):
    project, plan, annotator, truth = plan_world
    check_samples.plan_stopping_set(plan=plan, recall_target=0.7, confidence=0.9)
    check_samples.check_sample_draw(plan=plan, size=60)
    for _ in range(200):
        if not learning.plan_state(plan).check_queued:
            break
        if judge_next(project, annotator, truth) is None:
            learning.learning_step(plan_id=plan.pk)
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
    with pytest.raises(learning.PlanError, match="documents are left to draw from"):
        check_samples.check_sample_draw(plan=plan, size=10_00)
    with pytest.raises(learning.PlanError, match="recall target"):
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
