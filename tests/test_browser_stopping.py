"""Knowing when to stop, in Chromium at 1280x720 (issue 18): a lead sets a recall target,
draws the check sample, the annotator judges it, and the stopping panel shows the recall
estimate with its interval and every rule's verdict."""

import os

import pytest
from django.urls import reverse

from annotate import roles
from ranking import learning_state, learning_step
from ranking.models import CheckSample
from tests.browserkit import login, needs_chromium, watch
from tests.learningkit import judge_next, learning_project, plan_seeded_and_judged

pytestmark = [*needs_chromium, pytest.mark.lucene]
SHOTS = os.environ.get("SASC_SCREENSHOTS")


@pytest.fixture
def stopping_world(transactional_db, tmp_path, make_user):
    annotator = make_user("stop-annotator", roles.ANNOTATOR)
    lead = make_user("lena", roles.LEAD)
    lead.set_password("pw-browser")
    lead.save()
    project, topic, truth = learning_project(tmp_path, annotator)
    plan = plan_seeded_and_judged(project, topic, truth, annotator, budget=60)
    return project, plan, annotator, truth


def test_lead_sets_a_target_draws_a_check_sample_and_sees_estimate_and_verdicts(
    browser, live_server, stopping_world
):
    project, plan, annotator, truth = stopping_world
    url = live_server.url
    events = []
    page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    watch(page, url, events)
    login(page, url, "lena", "pw-browser")
    page.goto(url + reverse("learning", args=[project.slug]))
    panel = page.locator(f"#plan-{plan.pk}")
    assert "Draw a check sample" in panel.locator(".stopping-recommendation").inner_text()
    assert panel.locator("table.sizes tbody tr").count() == 3

    panel.locator("input[name=recall_target]").fill("70")
    panel.locator("input[name=confidence]").fill("90")
    panel.locator("button:has-text('Set target')").click()
    page.wait_for_load_state("networkidle")
    plan.refresh_from_db()
    assert (plan.recall_target, plan.confidence) == (pytest.approx(0.7), pytest.approx(0.9))

    panel = page.locator(f"#plan-{plan.pk}")
    panel.locator("input[name=size]").fill("40")
    panel.locator("button:has-text('Draw the check sample')").click()
    page.wait_for_load_state("networkidle")
    sample = CheckSample.objects.get(plan=plan)
    assert len(sample.documents) == 40
    assert "40 drawn at random" in page.locator(f"#plan-{plan.pk} .check-status").inner_text()
    sentence = page.locator(f"#plan-{plan.pk} .stopping-recommendation").inner_text()
    assert "Judge the 40 remaining check-sample tasks" in sentence  # not "Draw a check sample"

    # The annotator judges the check sample like any task (with the review's own tasks).
    for _ in range(200):
        if not learning_state.plan_state(plan).check_queued:
            break
        if judge_next(project, annotator, truth) is None:
            learning_step.learning_step(plan_id=plan.pk)
    assert not learning_state.plan_state(plan).check_queued
    learning_step.learning_step(plan_id=plan.pk)

    page.goto(url + reverse("learning", args=[project.slug]))
    page.wait_for_load_state("networkidle")
    panel = page.locator(f"#plan-{plan.pk}")
    if SHOTS:
        panel.screenshot(path=f"{SHOTS}/stopping-panel-1280.png")
    estimate = panel.locator("p.estimate").inner_text()
    assert "Recall so far" in estimate and "90% interval" in estimate
    low, high = panel.locator("[data-recall-interval]").inner_text().split(" to ")
    point = float(panel.locator("[data-recall]").get_attribute("data-recall"))
    assert float(low.rstrip("%")) / 100 <= point + 0.01 <= float(high.rstrip("%")) / 100 + 0.02
    rules = panel.locator("table.verdicts tbody tr[data-rule]")
    assert [r.get_attribute("data-rule") for r in rules.all()] == [
        "knee",
        "target",
        "qbcb",
        "hypergeometric",
    ]
    assert all(r.get_attribute("data-says") in ("stop", "continue", "unknown") for r in rules.all())
    sentence = panel.locator(".stopping-recommendation").inner_text()
    assert sentence.count(".") >= 1 and (
        "Stop" in sentence or "Continue" in sentence or "Draw a larger" in sentence
    )
    # the gain curve carries the estimate's band and the target line
    curve = page.locator(f"tr[data-plan='{plan.pk}'] svg.gain-curve")
    assert curve.locator("rect.estimate-band").count() == 1
    assert curve.locator("line.target-line").count() == 1
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    with page.expect_download() as download:
        page.click("text=CSV")
    assert download.value.suggested_filename == f"{project.slug}-stopping.csv"
    assert events == [], events
