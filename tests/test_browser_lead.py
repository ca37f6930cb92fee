"""The lead's main path in Debian's Chromium at 1280x720 and at a 390 px phone width (issue
21): the dashboard, the active-learning page, the agreement page, the project and import
forms, the collection page and the audit log. Nothing may make the page scroll sideways,
the active-learning table fits without scrolling its own box at 1280 px, the gain curve has
labelled axes, the stopping rule says it cannot fire when the budget is too small, and every
form field carries the shared form style."""

import os

import pytest
from django.urls import reverse

from annotate import roles
from tests.browserkit import login, needs_chromium, watch
from tests.learningkit import learning_project, plan_seeded_and_judged

pytestmark = [*needs_chromium, pytest.mark.lucene]
SHOTS = os.environ.get("SASC_SCREENSHOTS")  # a folder: keep a picture of every page

PAGE_FITS = "document.documentElement.scrollWidth <= window.innerWidth"
# Every visible text field, list and button of the page's forms, with its left padding.
FIELD_PADDING = """
  [...document.querySelectorAll('main form input, main form select, main form textarea')]
    .filter((el) => !['checkbox', 'radio', 'hidden'].includes(el.type) && el.offsetParent)
    .map((el) => [el.name, parseFloat(getComputedStyle(el).paddingLeft)])
"""


@pytest.fixture
def lead_world(transactional_db, tmp_path, make_user):
    annotator = make_user("al-annotator", roles.ANNOTATOR)
    lead = make_user("lea", roles.LEAD)
    lead.set_password("pw-browser")
    lead.save()
    project, topic, truth = learning_project(tmp_path, annotator)
    # a budget below the 156 judgments the knee rule needs
    plan_seeded_and_judged(project, topic, truth, annotator, budget=100, judged=8)
    return project


def test_the_lead_pages_fit_the_screen_and_say_what_they_show(browser, live_server, lead_world):
    project = lead_world
    url = live_server.url
    events = []
    page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    watch(page, url, events)
    login(page, url, "lea", "pw-browser")
    paths = {
        "dashboard": reverse("judging-dashboard", args=[project.slug]),
        "learning": reverse("learning", args=[project.slug]),
        "agreement": reverse("agreement", args=[project.slug]),
        "new project": reverse("project-new"),
        "import": reverse("import"),
        "collection": reverse("collection-detail", args=[project.collection.slug]),
        "audit": reverse("audit-log"),
        "decisions": reverse("review-decisions"),
    }
    for name, path in paths.items():
        page.goto(url + path)
        page.wait_for_load_state("networkidle")
        if SHOTS:
            page.screenshot(path=f"{SHOTS}/{name.replace(' ', '-')}-1280.png", full_page=True)
        assert page.evaluate(PAGE_FITS), f"{name}: the page scrolls sideways at 1280 px"
        unstyled = [n for n, pad in page.evaluate(FIELD_PADDING) if pad < 4]
        assert not unstyled, f"{name}: form fields without the form style: {unstyled}"

        if name == "learning":
            table = page.locator("table.learning")
            assert table.count() == 1
            width, room = page.evaluate(
                "(() => { const t = document.querySelector('table.learning');"
                " return [t.scrollWidth, t.parentElement.clientWidth]; })()"
            )
            assert width <= room, f"the learning table is {width} px wide in {room} px"
            titles = page.locator("svg.gain-curve text.axis-title").all_text_contents()
            assert titles == ["judgments spent", "relevant found"]
            assert page.locator("svg.gain-curve g.ticks text").count() >= 4
            stopping = page.locator("td[data-stopping]").first
            assert stopping.get_attribute("data-stopping") == "unreachable"
            assert "Cannot fire within the budget" in stopping.inner_text()
            assert "156 judgments" in stopping.inner_text()
        if name == "dashboard":
            caption = page.locator("table.dashboard caption").inner_text()
            assert "+ in progress" in caption and "= tasks" in caption
            row = page.locator("table.dashboard tbody tr").first.locator("td").all_inner_texts()
            tasks, done, doing, waiting = (int(c.split()[0]) for c in row[1:5])
            assert done + doing + waiting == tasks
            with page.expect_download() as download:
                page.click("text=Download the qrels")
            assert download.value.suggested_filename == f"{project.slug}-qrels.txt"

    phone = browser.new_context(viewport={"width": 390, "height": 800}).new_page()
    watch(phone, url, events)
    login(phone, url, "lea", "pw-browser")
    for name in paths:
        phone.goto(url + paths[name])
        phone.wait_for_load_state("networkidle")
        if SHOTS:
            phone.screenshot(path=f"{SHOTS}/{name.replace(' ', '-')}-390.png", full_page=True)
        assert phone.evaluate(PAGE_FITS), f"{name}: the page scrolls sideways at 390 px"

    phone.goto(url + paths["audit"])
    assert "downloaded qrels.txt of project" in phone.inner_text("table.audit")
    assert events == [], events
