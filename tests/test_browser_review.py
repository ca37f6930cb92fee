"""The archivist loop in Debian's Chromium: a searcher sees immediate results and the
pending notice; an archivist releases one document and withholds another by keyboard; the
released one appears in the searcher's page without a reload, the withheld one never."""

import pytest
from django.urls import reverse

from review.models import ReviewRequest, SearchLog
from tests.browserkit import login, needs_chromium, wait_for, watch
from tests.reviewkit import make_review_requests
from tests.waitkit import until

pytestmark = [
    *needs_chromium,
    pytest.mark.lucene,
    # The append-only audit trigger refuses the DELETE with which a live-server test empties
    # an SQLite database afterwards; PostgreSQL empties with TRUNCATE (.ci/run).
    pytest.mark.needs_postgres("the audit trigger refuses the SQLite live server's DELETE flush"),
]


def test_release_appears_without_reload_and_withholding_never(
    browser, live_server, published, users
):
    c, persona, docs, kinds = published
    for name in ("searcher", "archivist"):
        users[name].set_password("pw-browser")
        users[name].save()
    url = live_server.url
    events: list[str] = []
    searcher = browser.new_context().new_page()
    watch(searcher, url, events)
    login(searcher, url, users["searcher"].username, "pw-browser")
    searcher.goto(f"{url}{reverse('searcher-search', args=[c.slug])}?q=razor+spam")
    assert searcher.locator("#results").count() == 0  # a link fills the form, runs nothing
    searcher.locator("form.search button").click()
    searcher.wait_for_url("**/results/*/")
    make_review_requests()  # what the worker does after the response
    assert searcher.locator("#results li").count() >= 1
    assert "More results may follow after review" in searcher.content()
    search = SearchLog.objects.get()
    pending = list(ReviewRequest.objects.filter(search=search).order_by("rank"))
    assert len(pending) >= 2

    archivist = browser.new_context().new_page()
    watch(archivist, url, events)
    login(archivist, url, users["archivist"].username, "pw-browser")
    archivist.goto(f"{url}{reverse('review-queue')}")
    archivist.locator("#queue a").first.click()
    archivist.wait_for_url("**/review/*/*/")
    archivist.wait_for_load_state("load")  # the keys are handled by a deferred script
    first = int(archivist.url.rstrip("/").split("/")[-1])
    archivist.keyboard.press("?")  # the page's keys, read from its form[data-keys]
    wait_for(archivist, "!!document.querySelector('dialog[data-keys-help]')?.open")
    listed = " ".join(archivist.inner_text("dialog[data-keys-help] dl").split())
    assert listed.endswith("r Release w Withhold n Not relevant x Release redacted copy"), listed
    if archivist.locator(".entity-legend").count():  # e / E, listed by the legend's template
        assert listed.startswith("e E Next / previous sensitive span found"), listed
    archivist.keyboard.press("Escape")
    wait_for(archivist, "!document.querySelector('dialog[data-keys-help]').open")
    archivist.keyboard.press("r")  # release; the next item opens
    archivist.wait_for_url(lambda u: not u.rstrip("/").endswith(f"/{first}"))
    archivist.wait_for_load_state("load")
    second = int(archivist.url.rstrip("/").split("/")[-1])
    archivist.keyboard.press("w")  # withhold
    until(
        lambda: ReviewRequest.objects.get(search=search, document_id=second).status != "pending",
        10,
        "the withholding stored",
    )
    statuses = dict(
        ReviewRequest.objects.filter(search=search).values_list("document_id", "status")
    )
    assert statuses[first] == "released" and statuses[second] == "withheld"
    # From now on the searcher's page counts its polls (htmx, every 3 s) that were sent after
    # the withholding was stored and whose answer it has swapped in.
    searcher.evaluate(
        """() => {
            const sent = new WeakSet();
            window.pollsSinceDecisions = 0;
            document.body.addEventListener("htmx:beforeRequest", (e) => sent.add(e.detail.xhr));
            document.body.addEventListener("htmx:afterSettle", (e) => {
                if (sent.has(e.detail.xhr)) window.pollsSinceDecisions += 1;
            });
        }"""
    )

    released = f"a[href='{reverse('searcher-document', args=[c.slug, first])}']"
    withheld = reverse("searcher-document", args=[c.slug, second])
    wait_for(searcher, f'document.querySelector("#released {released}") !== null', timeout=15)
    assert "released after review" in searcher.content()
    # A poll sent after both decisions has been answered and shown: the withheld document
    # is not in it (before, a fixed 4 s sleep stood for this).
    wait_for(searcher, "window.pollsSinceDecisions >= 1", timeout=15)
    assert withheld not in searcher.content()
    assert searcher.goto(f"{url}{withheld}").status == 404
    assert [e for e in events if e.startswith(("request", "pageerror", "dialog"))] == []
