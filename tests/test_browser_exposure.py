"""Exposing queries in Debian's Chromium: the archivist opens a message nobody ever searched
for; the page asks the worker, polls, and lists the queries that would show it with the place
each gives it, without a reload."""

import os

import pytest
from django.urls import reverse

from review.exposure import SHOWN, exposure_compute
from review.models import Exposure, SearchLog
from tests.browserkit import login, needs_chromium, wait_for, watch

pytestmark = [
    *needs_chromium,
    pytest.mark.lucene,
    pytest.mark.needs_postgres("a live-server browser test run on PostgreSQL"),
]


def _card_computed(browser, url, events, credentials, persona, doc):
    """Open the document's review page at 1280x720 as ``credentials``; once the page has
    asked for its exposure (an htmx POST on load), compute it as the worker does and wait
    for the card's rows. Returns the page and the computed Exposure."""
    page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    watch(page, url, events)
    login(page, url, *credentials)
    page.goto(f"{url}{reverse('review-item', args=[persona.pk, doc.pk])}")
    # wait for the page's own request, not for the first paint
    wait_for(page, "document.querySelector('#exposure').innerText.includes('Finding the')", 15)
    row = Exposure.objects.get(document=doc, persona=persona)
    exposure_compute(exposure_id=row.pk)  # what the worker does
    wait_for(page, "document.querySelectorAll('#exposure table tbody tr').length > 0", 20)
    row.refresh_from_db()
    return page, row


def test_the_review_page_lists_exposing_queries_with_ranks_for_a_document_never_searched_for(
    browser, live_server, published, users, tmp_path
):
    c, persona, docs, kinds = published
    doc = next(d for d in docs if kinds[d.pk] == "uncertain")
    assert not SearchLog.objects.exists()
    users["archivist"].set_password("pw-browser")
    users["archivist"].save()
    events: list[str] = []
    page, row = _card_computed(
        browser, live_server.url, events, (users["archivist"].username, "pw-browser"), persona, doc
    )
    cells = page.locator("#exposure table tbody tr").first.locator("td")
    first = row.queries[0]
    assert cells.nth(0).inner_text() == f"“{first['text']}”"
    assert cells.nth(1).inner_text() == f"#{first['rank'] + 1}"
    assert page.locator("#exposure th").nth(1).inner_text() == "Would rank if released"
    assert cells.nth(2).inner_text() in ("searched", "topic", "generated")
    assert "Would be exposed, if released, at #1 by" in page.inner_text("#exposure")
    shown = page.locator("#exposure table tbody tr:visible")
    assert shown.count() == min(SHOWN, len(row.queries))  # the rest behind "Show all"
    if len(row.queries) > SHOWN:
        page.click(f"text=Show all {len(row.queries)}")
        assert shown.count() == len(row.queries)
    page.screenshot(path=str(tmp_path / "exposure.png"), full_page=False)
    if os.environ.get("SASC_SCREENSHOTS"):
        page.screenshot(path=os.environ["SASC_SCREENSHOTS"] + "/review-exposure.png")
    assert not [e for e in events if e.startswith(("pageerror", "request", "console error"))]


def test_on_the_demo_the_archivist_sees_the_queries_and_ranks_brute_force_gives(
    browser, live_server, settings, tmp_path, monkeypatch
):
    """The demo as `manage.py demo` sets it up (its offline sample: npm is outside the
    tests): the archivist opens a message nobody searched for; the card's queries and ranks
    are those of running each query through the searcher's ranker one at a time."""
    import io

    from annotate.models import Document
    from config.demo import corpus
    from config.management.commands import demo
    from core import exposing_queries, lucene
    from review import visibility
    from review.models import Publication

    settings.VAR_DIR = tmp_path
    settings.STATIC_ROOT = tmp_path / "static"

    def offline(cache_dir, say=print):
        raise corpus.CorpusUnavailable("offline in the tests")

    monkeypatch.setattr(corpus, "fetch", offline)
    demo.Command(stdout=io.StringIO(), stderr=io.StringIO()).setup()
    publication = Publication.objects.select_related("persona").get(collection__slug=demo.SLUG)
    persona = publication.persona
    doc = Document.objects.filter(collection=publication.collection).order_by("pk")[3]
    assert not SearchLog.objects.exists()

    events: list[str] = []
    page, row = _card_computed(
        browser, live_server.url, events, ("archivist", demo.PASSWORD), persona, doc
    )
    assert row.queries, row.error
    # on day one the demo publishes the rule's band (docs/publishing.md): its searchers see
    # messages, so the card gives ranks among them, not "nothing is visible yet"
    view = visibility.view(publication)
    assert view.docids
    assert "Searchers see no message of this collection yet" not in page.inner_text("#exposure")

    ranker = exposing_queries.ExposureRanker(
        view.index, view.postings, doc.docid, k=publication.review_k
    )
    rows = page.locator("#exposure table tbody tr")
    assert rows.count() >= min(3, len(row.queries))
    for i, query in enumerate(row.queries[:3]):
        cell = rows.nth(i).locator("td").nth(0).inner_text().strip("“”…")
        assert query["text"].startswith(cell)  # long queries are cut on the card
        shown = rows.nth(i).locator("td").nth(1).inner_text()
        rank = ranker.rank(lucene.analyze(query["text"]))
        assert rank is not None and shown.endswith(f"#{rank + 1}"), (query, shown, rank)
    page.screenshot(path=str(tmp_path / "demo-exposure.png"), full_page=False)
    assert not [e for e in events if e.startswith(("pageerror", "request", "console error"))]
