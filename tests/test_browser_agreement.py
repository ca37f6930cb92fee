"""A training round in Debian's Chromium: two annotators judge the same tasks by keyboard,
the lead reads the kappa and the disagreements, adjudicates one, and the export has it."""

import io
import zipfile
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from annotate import roles, services
from annotate.models import Document, Judgment, Round, Task
from tests.browserkit import judge_by_keyboard, login, needs_chromium, watch
from tests.conftest import SAMPLE
from tests.factories import PersonaFactory, ProjectFactory, TopicFactory

pytestmark = needs_chromium


@pytest.fixture
def round_project(collection, make_user):
    services.import_run(collection=collection, fmt="emails", path=SAMPLE)
    people = {}
    for name, role in (("alice", roles.ANNOTATOR), ("bob", roles.ANNOTATOR), ("lea", roles.LEAD)):
        people[name] = make_user(name, role)
        people[name].set_password("pw-browser")
        people[name].save()
    project = ProjectFactory(
        name="Training",
        collection=collection,
        personas=[PersonaFactory(name="Maeve")],
        topics=[TopicFactory(collection=collection, number="7", title="meeting schedule")],
        annotators=[people["alice"], people["bob"]],
        round_kind=Round.Kind.TRAINING,
        documents=Document.objects.filter(collection=collection).order_by("docid")[:4],
    )
    return project, people


def judge_as(browser, url, project, username, answers, events):
    """Log in and judge one task per entry of ``answers`` (key strings), keyboard only."""
    page = browser.new_context().new_page()
    watch(page, url, events)
    login(page, url, username, "pw-browser")
    page.goto(f"{url}/annotate/{project.slug}/judge/")
    judge_by_keyboard(
        page,
        answers,
        stored=lambda: Judgment.objects.filter(annotator__username=username).count(),
    )
    page.context.close()


def test_training_round_agreement_adjudication_and_export(browser, live_server, round_project):
    project, people = round_project
    url = live_server.url
    events = []
    alice = [("2", "n", "n"), ("1", "n", "n"), ("0", "n", "n"), ("2", "y", "n")]
    bob = [("2", "n", "n"), ("0", "n", "n"), ("0", "n", "n"), ("2", "y", "n")]
    judge_as(browser, url, project, "alice", alice, events)
    judge_as(browser, url, project, "bob", bob, events)
    assert Judgment.objects.count() == 8

    # Tasks are served in the same order to both: the second one is the disagreement.
    kappa = cohen_kappa_score(
        [int(a[0]) for a in alice], [int(b[0]) for b in bob], labels=[0, 1, 2]
    )
    page = browser.new_context(accept_downloads=True).new_page()
    watch(page, url, events)
    login(page, url, "lea", "pw-browser")
    page.goto(f"{url}/annotate/{project.slug}/agreement/")
    page.wait_for_load_state("networkidle")
    # A comment typed as one unbroken run with a right-to-left override in it: it wraps
    # (before, it widened the page to 3,188 px) and its direction stays inside it. (Written
    # while no request runs: the in-memory SQLite of these tests locks a table per writer.)
    said = "x" * 300 + "\u202eright to left"
    Judgment.objects.filter(annotator__username="alice").update(comment=said)
    page.reload()
    page.wait_for_load_state("networkidle")
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
    assert page.locator("section.disagreement bdi.said").first.inner_text() == said
    cell = page.locator("tr[data-facet=relevance] td.kappa").first
    assert cell.inner_text().strip() == f"{kappa:.3f}"
    disagreements = page.locator("section.disagreement")
    assert disagreements.count() == 1
    card = disagreements.first
    assert "alice" in card.inner_text() and "bob" in card.inner_text()
    card.locator("select[name=relevance]").select_option("2")
    card.locator("input[name=reason]").fill("Agreed in the round's discussion: on topic")
    card.locator("button:has-text('Adjudicate')").click()
    page.wait_for_selector("p.adjudicated")
    assert "Agreed in the round's discussion" in page.inner_text("p.adjudicated")

    # The test database is SQLite in memory, where a transaction that meets another one
    # fails at once instead of waiting: let the page's pictures finish loading first.
    page.wait_for_load_state("networkidle")
    with page.expect_download() as download:
        page.click("text=Download every export")
    archive = zipfile.ZipFile(io.BytesIO(Path(download.value.path()).read_bytes()))
    qrels = archive.read(f"{project.slug}/qrels.txt").decode()
    task_id = int(card.get_attribute("data-task-id"))
    docid = Task.objects.get(pk=task_id).document.docid
    assert f"7 0 {docid} 2\n" in qrels
    table = archive.read(f"{project.slug}/annotations.csv").decode()
    assert table.count("adjudicated") == 2  # both judgments of that document
    assert events == [], events
