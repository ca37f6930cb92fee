"""The thread of the message being judged, in Debian's Chromium at 1280x720: collapsed at
first, opened and closed with ``t`` inside the message's own pane, and the questions and the
save button stay on screen either way. Issue 19."""

from pathlib import Path

import pytest

from annotate import roles, services
from annotate.models import Collection, Document, Persona, Topic
from tests.browserkit import login, needs_chromium, wait_for
from tests.factories import ProjectFactory
from tests.test_browser_judging_layout import CONTROLS, DESKTOP, _off_screen

pytestmark = needs_chromium
SHOTS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"


def _eml(n, subject, *, parent=None):
    text = (
        f"From: person{n}@example.org\nTo: team@example.org\nSubject: {subject}\n"
        f"Message-ID: <t{n}@example.org>\nDate: Mon, {n} May 2001 10:00:00 +0000\n"
    )
    if parent:
        text += f"In-Reply-To: <t{parent}@example.org>\nReferences: <t1@example.org>\n"
    return text + f"\nMessage {n} of the thread about the budget. " + "Words. " * 40 + "\n"


@pytest.fixture
def threaded(db, tmp_path, make_user):
    box = tmp_path / "box" / "Inbox" / "Budget"
    box.mkdir(parents=True)
    (box / "1.eml").write_text(_eml(1, "Budget for 2002"))
    for n in range(2, 13):
        (box / f"{n}.eml").write_text(_eml(n, "Re: Budget for 2002", parent=n - 1))
    collection = Collection.objects.create(name="Threads", slug="threads")
    services.import_run(collection=collection, fmt="emails", path=tmp_path / "box")
    topic = Topic.objects.create(collection=collection, number="1", title="budget")
    persona = Persona.objects.create(name="Pat Doe")
    alice = make_user("alice", roles.ANNOTATOR)
    alice.set_password("pw-browser")
    alice.save()
    middle = Document.objects.get(collection=collection, docid="box/Inbox/Budget/6.eml")
    project = ProjectFactory(
        name="Thread",
        collection=collection,
        personas=[persona],
        topics=[topic],
        annotators=[alice],
        documents=[middle],
    )
    return project


def test_the_thread_opens_with_t_inside_the_message_pane_and_the_questions_stay_on_screen(
    browser, live_server, threaded
):
    page = browser.new_page(viewport=DESKTOP)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    login(page, live_server.url, "alice", "pw-browser")
    page.goto(f"{live_server.url}/annotate/{threaded.slug}/judge/")
    page.wait_for_selector("#current section.task")
    thread = page.locator("#current details[data-thread]")
    assert "Thread: 12 messages" in thread.locator("summary").inner_text()
    assert "folder Inbox/Budget" in thread.locator("summary").inner_text()
    assert not thread.evaluate("d => d.open")
    page.keyboard.press("t")
    wait_for(page, "document.querySelector('#current details[data-thread]').open")
    items = thread.locator("li")
    assert items.count() == 12
    current = thread.locator("li[aria-current=true]")
    assert "(this message)" in current.inner_text()
    assert "person6@example.org" in current.inner_text()
    assert "Message 5 of the thread" in items.nth(4).inner_text()
    # Opened, the thread scrolls inside the message pane: the page itself does not move.
    assert page.evaluate("window.scrollY") == 0
    assert _off_screen(page, CONTROLS) == []
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "judging-thread.png"))
    page.keyboard.press("t")
    wait_for(page, "!document.querySelector('#current details[data-thread]').open")
    assert errors == []
