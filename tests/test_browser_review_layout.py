"""The searcher's and the archivist's main paths in Debian's Chromium at 1280x720 (and the
queue and decision page at a phone's width), failing on layout: what a reader needs must be
on screen without scrolling sideways, and the decision buttons inside the viewport."""

import pytest
from django.urls import reverse

from review.models import ReviewRequest
from tests.browserkit import login, needs_chromium, watch
from tests.reviewkit import make_review_requests

pytestmark = [
    *needs_chromium,
    pytest.mark.lucene,
    # The append-only audit trigger refuses the DELETE with which a live-server test empties
    # an SQLite database afterwards; PostgreSQL empties with TRUNCATE (.ci/run).
    pytest.mark.needs_postgres("the audit trigger refuses the SQLite live server's DELETE flush"),
]

DESKTOP = {"width": 1280, "height": 720}
PHONE = {"width": 390, "height": 844}


def _box(page, selector: str) -> dict:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not rendered"
    return box


def _in_viewport(page, selector: str, *, whole_height: bool = True) -> None:
    """The element is inside the viewport: across, always; down, when ``whole_height``."""
    size = page.viewport_size
    box = _box(page, selector)
    assert box["x"] >= 0 and box["x"] + box["width"] <= size["width"] + 0.5, (selector, box)
    if whole_height:
        assert box["y"] >= 0 and box["y"] + box["height"] <= size["height"] + 0.5, (selector, box)


WIDE = """Array.from(document.querySelectorAll('body *'))
  .filter(e => e.getBoundingClientRect().right > window.innerWidth)
  .map(e => e.tagName + '.' + e.className).slice(0, 10).join(', ')"""


def _no_sideways_scroll(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], (
        f"the page is {width}px wide: {page.evaluate(WIDE)}"
    )


def _check_queue(page, at_least: int) -> None:
    """Every item shows a subject, a sender, a date and why it is there; the first is on
    screen."""
    items = page.locator("li.queue-item")
    assert items.count() >= at_least
    for i in range(items.count()):
        item = items.nth(i)
        for part in (".qi-subject", ".qi-sender", ".qi-date", ".qi-why"):
            assert item.locator(part).inner_text().strip(), (i, part)
        assert "search" in item.locator(".qi-why").inner_text()
    _in_viewport(page, "h2.thread-subject")
    _in_viewport(page, "li.queue-item .qi-why")
    _no_sideways_scroll(page)


def _check_decision_page(page) -> None:
    for key in ("release", "withhold", "not_relevant"):
        _in_viewport(page, f"form.decide button[value={key}]")
    _in_viewport(page, ".classifier-view", whole_height=False)
    _no_sideways_scroll(page)


def test_searcher_and_archivist_paths_fit_the_screen(browser, live_server, published, users):
    c, persona, docs, kinds = published
    for name in ("searcher", "archivist"):
        users[name].set_password("pw-browser")
        users[name].save()
    url = live_server.url
    events: list[str] = []

    # The searcher: home leads to the published collection; a first search explains review.
    searcher = browser.new_context(viewport=DESKTOP).new_page()
    watch(searcher, url, events)
    login(searcher, url, users["searcher"].username, "pw-browser")
    link = f"#home-search a[href='{reverse('searcher-search', args=[c.slug])}']"
    _in_viewport(searcher, link)
    searcher.locator(link).click()
    searcher.wait_for_url(f"**{reverse('searcher-search', args=[c.slug])}")
    _in_viewport(searcher, "form.search button")
    _in_viewport(searcher, "#review-notice h2")  # how review works, before any search
    searcher.fill("form.search input[name=q]", "zzzqqq")  # nothing can be shown
    searcher.locator("form.search button").click()
    searcher.wait_for_url("**/results/*/")
    _in_viewport(searcher, "p.no-results")
    _in_viewport(searcher, "#review-notice")  # the whole notice, not a small grey line
    searcher.fill("form.search input[name=q]", "razor spam list")
    searcher.locator("form.search button").click()
    searcher.wait_for_url("**/results/*/")
    _in_viewport(searcher, "#results li:first-child a")
    _in_viewport(searcher, "#results li:first-child .muted")  # sender and date
    _no_sideways_scroll(searcher)
    make_review_requests()  # what the worker does after the responses
    assert ReviewRequest.objects.filter(status="pending").count() >= 2

    # The archivist: the queue by thread, then the decision page, at 1280x720 ...
    archivist = browser.new_context(viewport=DESKTOP).new_page()
    watch(archivist, url, events)
    login(archivist, url, users["archivist"].username, "pw-browser")
    _in_viewport(archivist, "#home-review a[data-queue]")
    archivist.locator("#home-review a[data-queue]").click()
    archivist.wait_for_url(f"**{reverse('review-queue')}")
    _check_queue(archivist, 2)
    archivist.locator("li.queue-item .qi-subject").first.click()
    archivist.wait_for_url("**/review/*/*/")
    archivist.wait_for_load_state("load")  # the keys are handled by a deferred script
    _check_decision_page(archivist)
    first = archivist.url
    archivist.keyboard.press("r")  # release; the next item opens
    archivist.wait_for_url(lambda u: u != first)
    archivist.wait_for_load_state("load")
    _check_decision_page(archivist)

    # ... and on a phone
    phone = browser.new_context(viewport=PHONE).new_page()
    watch(phone, url, events)
    login(phone, url, users["archivist"].username, "pw-browser")
    phone.goto(f"{url}{reverse('review-queue')}")
    _check_queue(phone, 1)  # one was released above
    phone.locator("li.queue-item .qi-subject").first.click()
    phone.wait_for_url("**/review/*/*/")
    _check_decision_page(phone)
    assert [e for e in events if e.startswith(("request", "pageerror", "dialog"))] == []
