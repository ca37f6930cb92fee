"""Counts that add up, in Chromium at 1280x720 (issue 34 item 4): the archivist's queue says
the true total and shows the rest by keyboard; the lead's learning page counts the review's
judgments against the budget and the check sample's apart, and a draw larger than what is
left of the budget is refused with the numbers until the lead consents."""

import os

import pytest
from django.urls import reverse

from annotate import roles
from ranking.models import CheckSample
from review import selectors
from tests.browserkit import login, needs_chromium, wait_for, watch
from tests.learningkit import (
    judge_until_budget_spent,
    learning_project,
    plan_seeded_and_judged,
)
from tests.reviewkit import review_requests_pending

pytestmark = [
    *needs_chromium,
    pytest.mark.lucene,
    pytest.mark.needs_postgres("the audit trigger refuses the SQLite live server's DELETE flush"),
]
SHOTS = os.environ.get("SASC_SCREENSHOTS")


def test_archivist_reads_the_true_total_and_shows_more_by_keyboard(
    browser, live_server, published, users, settings
):
    c, persona, docs, kinds = published
    settings.SASC_QUEUE_PAGE = 4
    review_requests_pending(persona, users["searcher"], [(d, f"query {d.pk}") for d in docs[:9]])
    assert selectors.review_queue_summary()["documents"] == 9
    users["archivist"].set_password("pw-browser")
    users["archivist"].save()
    url = live_server.url
    events: list[str] = []
    page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    watch(page, url, events)
    login(page, url, users["archivist"].username, "pw-browser")
    assert "9 documents waiting for review" in page.inner_text("main")  # the home page
    page.goto(f"{url}{reverse('review-queue')}")
    count = page.inner_text(".queue-count")
    assert count.startswith("9 documents waiting; showing the first 4 ("), count
    assert page.locator(".queue-item").count() == 4
    more = page.locator(".queue-more a")
    assert more.inner_text() == "Show 4 more"
    more.focus()
    page.keyboard.press("Enter")
    wait_for(page, "document.querySelectorAll('.queue-item').length === 8")
    assert page.url.endswith("?shown=8")
    # htmx focuses the new link as it swaps it in, and processes it a moment later: an Enter
    # in between follows the plain link (a whole page, which works too, but not this test).
    wait_for(
        page,
        "document.activeElement.textContent === 'Show 1 more'"
        " && document.activeElement['htmx-internal-data'] !== undefined",
    )
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/archivist-queue-show-more-1280.png")
    page.keyboard.press("Enter")
    wait_for(page, "document.querySelectorAll('.queue-item').length === 9")
    assert "9 documents waiting, all shown" in page.inner_text(".queue-count")
    wait_for(page, "document.activeElement.textContent === 'All 9 shown.'")
    page.wait_for_timeout(5500)  # the 5-second refresh keeps the 9 shown
    assert page.locator(".queue-item").count() == 9
    page.reload()  # the pushed address shows the same
    assert page.locator(".queue-item").count() == 9
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert events == [], events


@pytest.fixture
def counts_world(transactional_db, tmp_path, make_user):
    annotator = make_user("count-annotator", roles.ANNOTATOR)
    lead = make_user("lucia", roles.LEAD)
    lead.set_password("pw-browser")
    lead.save()
    project, topic, truth = learning_project(tmp_path, annotator)
    plan = plan_seeded_and_judged(project, topic, truth, annotator, budget=30)
    return project, plan, annotator, truth


def test_lead_sees_review_check_sample_and_budget_apart_and_is_warned_first(
    browser, live_server, counts_world
):
    project, plan, annotator, truth = counts_world  # 14 judged by the review, 16 left
    url = live_server.url
    events: list[str] = []
    page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    watch(page, url, events)
    login(page, url, "lucia", "pw-browser")
    page.goto(url + reverse("learning", args=[project.slug]))
    panel = page.locator(f"#plan-{plan.pk}")
    panel.locator("input[name=size]").fill("20")
    panel.locator("button:has-text('Draw the check sample')").click()
    page.wait_for_load_state("networkidle")
    warning = page.inner_text("main")
    assert (
        "a check sample of 20 documents is more than the 16 judgments left of the plan's "
        "budget of 30 (14 judged by the review). If you go on, its 20 judgments come on top "
        "of the budget: the review still goes on to 30, so this topic would take up to 50 "
        "judgments in all (30 for the review, 20 for the check sample)."
    ) in warning
    assert not CheckSample.objects.filter(plan=plan).exists()
    panel = page.locator(f"#plan-{plan.pk}")
    panel.locator("input[name=size]").fill("20")
    panel.locator("input[name=beyond_budget]").check()
    panel.locator("button:has-text('Draw the check sample')").click()
    page.wait_for_load_state("networkidle")
    assert len(CheckSample.objects.get(plan=plan).documents) == 20

    state = judge_until_budget_spent(project, plan, annotator, truth, rounds=300)
    assert (state.reviewed, state.check_judged) == (30, 20)

    page.goto(url + reverse("learning", args=[project.slug]))
    page.wait_for_load_state("networkidle")
    row = page.locator(f"tr[data-plan='{plan.pk}']")
    progress = " ".join(row.locator("td").nth(1).inner_text().split())
    assert progress.startswith(
        "30 of 30 judged by the review 0 left of the budget 20 of 20 check-sample judged "
        "(on top of the budget)"
    ), progress
    assert "50 of 30" not in page.content()
    spent = page.locator(f"#plan-{plan.pk}").inner_text()
    assert "Judgments spent: 50 (30 of the budget of 30 by the review, 20 of the check" in spent
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/lead-learning-counts-1280.png", full_page=False)
        row.screenshot(path=f"{SHOTS}/lead-learning-counts-row-1280.png")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert events == [], events
