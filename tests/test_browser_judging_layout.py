"""The judging and edit pages in Debian's Chromium, with the demo's own topics, persona and
guidelines: at 1280x720 every question, the comment and the save button are on screen
without scrolling, the keys answer and save, ``?`` lists the keys; at 390x844 (a phone) the
questions stay within reach. Issue 21."""

from pathlib import Path

import pytest

from annotate import import_personas, roles, services
from annotate.models import Document, Judgment, Persona, Topic
from tests.browserkit import login, needs_chromium, wait_for
from tests.conftest import SAMPLE
from tests.factories import ProjectFactory

pytestmark = needs_chromium

DEMO = Path(__file__).resolve().parents[1] / "config" / "demo"
DESKTOP = {"width": 1280, "height": 720}
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def demo_like(collection, make_user):
    """The demo's persona, topic 401 and guidelines over the sample mail."""
    services.import_run(collection=collection, fmt="emails", path=SAMPLE)
    services.import_run(collection=collection, fmt="topics-trec", path=DEMO / "topics.txt")
    import_personas.personas_import(path=DEMO / "personas.json")
    alice = make_user("alice", roles.ANNOTATOR)
    alice.set_password("pw-browser")
    alice.save()
    topic = Topic.objects.get(collection=collection, number="401")
    # Messages that mention the topic's terms first (the edit test looks for their marks).
    documents = sorted(
        Document.objects.filter(collection=collection).order_by("docid"),
        key=lambda d: "linux" not in d.body.lower(),
    )
    project = ProjectFactory(
        name="Layout",
        collection=collection,
        personas=[Persona.objects.get(name="Maeve Gallagher")],
        topics=[topic],
        annotators=[alice],
        guidelines=(DEMO / "guidelines.md").read_text(),
        documents=documents,
    )
    return project, alice


def _open(browser, url, slug, viewport):
    page = browser.new_page(viewport=viewport)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    login(page, url, "alice", "pw-browser")
    page.goto(f"{url}/annotate/{slug}/judge/")
    page.wait_for_selector("#current section.task")
    return page, errors


def _off_screen(page, selectors) -> list[str]:
    """Return the selectors whose element is not wholly inside the viewport as it is now."""
    size = page.viewport_size
    out = []
    for selector in selectors:
        box = page.locator(selector).bounding_box()
        inside = (
            box is not None
            and box["x"] >= 0
            and box["y"] >= 0
            and box["x"] + box["width"] <= size["width"] + 0.5
            and box["y"] + box["height"] <= size["height"] + 0.5
        )
        if not inside:
            out.append(f"{selector}: {box}")
    return out


CONTROLS = [
    "#current form.answers fieldset[data-question=relevance]",
    "#current form.answers fieldset[data-question=persona_sensitive]",
    "#current form.answers fieldset[data-question=personal_sensitive]",
    "#current form.answers textarea[name=comment]",
    "#current form.answers button[type=submit]",
]


def _task_id(page) -> str:
    return page.evaluate("document.querySelector('#current section.task').dataset.taskId")


def _overlay_open(page) -> bool:
    return page.evaluate(
        "(() => { const d = document.querySelector('[role=dialog][data-keys-help], "
        "dialog[data-keys-help]'); return !!d && d.open === true; })()"
    )


def test_at_1280x720_every_question_and_save_are_on_screen_and_the_keys_save(
    browser, live_server, demo_like
):
    project, alice = demo_like
    page, errors = _open(browser, live_server.url, project.slug, DESKTOP)
    assert page.evaluate("window.scrollY") == 0
    assert _off_screen(page, CONTROLS) == []

    # Enter with questions unanswered: the message names the question, beside it, on screen.
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    error = page.locator("#current fieldset[data-question=persona_sensitive] .field-error:visible")
    assert "Answer this question" in error.inner_text()
    assert _off_screen(page, ["#current fieldset[data-question=persona_sensitive]"]) == []
    assert (
        page.locator("#current fieldset[data-question=relevance] .field-error:visible").count() == 0
    )

    first = _task_id(page)
    for key in ("y", "n", "Enter"):
        page.keyboard.press(key)
    wait_for(page, f"document.querySelector('#current section.task')?.dataset.taskId !== '{first}'")
    wait_for(page, "document.getElementById('save-status').textContent.includes('Saved')")
    stored = Judgment.objects.get(annotator=alice, task_id=int(first))
    assert (stored.relevance, stored.persona_sensitive, stored.personal_sensitive) == (
        2,
        "yes",
        "no",
    )
    # The next task too fits, and the page did not scroll.
    assert _off_screen(page, CONTROLS) == []

    # ? lists the keys in a dialog that has the focus; Esc closes it.
    page.keyboard.press("?")
    wait_for(page, "!!document.querySelector('dialog[data-keys-help]')?.open")
    dialog = page.locator("dialog[data-keys-help]")
    text = dialog.inner_text()
    for expected in ("Enter", "Save", "Guidelines", "Skip", "?"):
        assert expected in text, (expected, text)
    assert page.evaluate(
        "document.querySelector('dialog[data-keys-help]').contains(document.activeElement)"
    )
    page.keyboard.press("Escape")
    wait_for(page, "!document.querySelector('dialog[data-keys-help]').open")

    # g shows the demo's guidelines, not "no guidelines".
    page.keyboard.press("g")
    wait_for(page, "!!document.querySelector('#guidelines')?.open")
    assert "Question 2 - would the persona consider it sensitive?" in page.inner_text("#guidelines")
    page.keyboard.press("Escape")
    wait_for(page, "!document.querySelector('#guidelines').open")

    # At 720 px the topic card shows little more than the title (the questions and the save
    # button keep their place): o opens the whole topic, narrative included, on screen.
    narrative = "Announcements of the release, and problems with other Red Hat versions"
    card = page.locator("#current .topic-card")
    assert not card.evaluate("c => c.scrollHeight <= c.clientHeight"), "the card is clipped"
    page.keyboard.press("o")
    wait_for(page, "!!document.querySelector('#current dialog[data-topic]')?.open")
    assert narrative in page.inner_text("#current dialog[data-topic]")
    assert _off_screen(page, ["#current dialog[data-topic]"]) == []
    page.keyboard.press("Escape")
    wait_for(page, "!document.querySelector('#current dialog[data-topic]').open")
    page.click("button[data-toggle=topic]")  # the same from the page's bar
    wait_for(page, "!!document.querySelector('#current dialog[data-topic]')?.open")
    page.keyboard.press("Escape")
    assert errors == []


def test_at_390x844_the_questions_and_save_stay_within_reach(browser, live_server, demo_like):
    project, alice = demo_like
    page, errors = _open(browser, live_server.url, project.slug, PHONE)
    assert _off_screen(page, CONTROLS) == [], "the answer bar is on screen without scrolling"
    # Reading the whole message keeps the answers on screen too.
    page.mouse.wheel(0, 1500)
    page.wait_for_timeout(200)
    assert _off_screen(page, CONTROLS) == []
    first = _task_id(page)
    form = "#current form.answers"
    page.click(f"{form} fieldset[data-question=relevance] label:has(input[value='1'])")
    page.click(f"{form} fieldset[data-question=persona_sensitive] label:has(input[value=no])")
    page.click(f"{form} button[type=submit]")
    error = page.locator(f"{form} fieldset[data-question=personal_sensitive] .field-error:visible")
    assert "Answer this question" in error.inner_text()
    assert (
        _off_screen(page, [f"{form} fieldset[data-question=personal_sensitive] .field-error"]) == []
    )
    page.click(f"{form} fieldset[data-question=personal_sensitive] label:has(input[value=no])")
    page.click(f"{form} button[type=submit]")
    wait_for(page, f"document.querySelector('#current section.task')?.dataset.taskId !== '{first}'")
    wait_for(page, "document.getElementById('save-status').textContent.includes('Saved')")
    assert Judgment.objects.get(annotator=alice, task_id=int(first)).relevance == 1
    assert errors == []


def test_the_edit_page_has_the_keys_highlighting_persona_card_and_key_list(
    browser, live_server, demo_like
):
    project, alice = demo_like
    url = live_server.url
    page, errors = _open(browser, url, project.slug, DESKTOP)
    first = _task_id(page)
    for key in ("0", "n", "n", "Enter"):
        page.keyboard.press(key)
    wait_for(page, "document.getElementById('save-status').textContent.includes('Saved')")
    judgment = Judgment.objects.get(annotator=alice, task_id=int(first))
    page.goto(f"{url}/annotate/{project.slug}/judgments/{judgment.pk}/")
    page.wait_for_selector("form.answers")
    assert page.locator("article.email .body mark").count() > 0, "the topic's terms are marked"
    assert page.locator("[data-persona]").count() == 1
    assert "Would not want shown" in page.text_content("[data-persona]")
    assert _off_screen(page, [c.removeprefix("#current ") for c in CONTROLS]) == []
    page.keyboard.press("?")
    wait_for(page, "!!document.querySelector('dialog[data-keys-help]')?.open")
    assert "Enter" in page.inner_text("dialog[data-keys-help]")
    page.keyboard.press("Escape")
    wait_for(page, "!document.querySelector('dialog[data-keys-help]').open")
    page.keyboard.press("p")
    assert page.evaluate("document.querySelector('[data-persona]').open")
    # Both sensitivity answers are given already; y still answers question 2 first, as the
    # key list says (question 3 is Shift+Y, or a second y).
    for key in ("1", "y", "Enter"):
        page.keyboard.press(key)
    page.wait_for_url(f"{url}/annotate/{project.slug}/history/")
    judgment.refresh_from_db()
    assert (judgment.version, judgment.relevance, judgment.persona_sensitive) == (2, 1, "yes")
    assert judgment.personal_sensitive == "no"
    assert errors == []
