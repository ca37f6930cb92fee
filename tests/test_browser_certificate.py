"""A release certificate through the pages in Debian's Chromium at 1280x720 (issue 33): the
lead reads the calculator and draws the sample, the archivist judges every sampled message
by keyboard from the review queue, the certificate shows its bound, and it turns stale once
an archivist releases a document searchers could not see."""

import os
from pathlib import Path

import pytest
from django.urls import reverse

from review import releases
from review.models import ReleaseAudit
from tests.browserkit import login, needs_chromium, watch
from tests.waitkit import until

pytestmark = [
    *needs_chromium,
    pytest.mark.lucene,
    pytest.mark.needs_postgres("a live-server browser test run on PostgreSQL"),
]


def _page(browser, url: str, user, events: list[str]):
    page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    watch(page, url, events)
    login(page, url, user.username, "pw-browser")
    return page


def _shots() -> Path:
    path = Path(os.environ.get("SASC_SCREENSHOT_DIR", "/tmp/sasc-certificate-shots"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_a_certificate_through_the_pages_turns_stale_after_a_release(
    browser, live_server, published, users
):
    c, persona, docs, kinds = published
    for name in ("archivist", "lead"):
        users[name].set_password("pw-browser")
        users[name].save()
    url, events = live_server.url, []

    lead = _page(browser, url, users["lead"], events)
    lead.goto(f"{url}{reverse('release-audits', args=[c.slug])}")
    lead.select_option("select[name=margin]", "0.05")
    lead.select_option("select[name=confidence]", "0.9")
    until(
        lambda: "(confidence 0.9)" in lead.inner_text("#calculator"),
        10,
        lambda: f"the calculator at 0.9 ({lead.inner_text('#calculator')[:200]})",
    )
    lead.screenshot(path=str(_shots() / "release-audits.png"))
    lead.click("button:has-text('Draw the sample')")
    lead.wait_for_load_state("load")
    opened = ReleaseAudit.objects.get()
    assert opened.confidence == 0.9 and opened.margin == 0.05

    archivist = _page(browser, url, users["archivist"], events)
    archivist.goto(f"{url}{reverse('review-queue')}")
    archivist.click("a:has-text('Judge them')")
    archivist.wait_for_load_state("load")
    archivist.screenshot(path=str(_shots() / "release-audit-judge.png"))
    for n in range(opened.sample_size):
        shown = archivist.get_attribute("input[name=item]", "value")
        archivist.keyboard.press("n")
        until(
            lambda n=n: opened.items.filter(sensitive__isnull=False).count() == n + 1,
            30,
            lambda n=n: f"answer {n + 1} stored (events {events})",
        )
        if n + 1 < opened.sample_size:  # the next message's page, not the one answered
            until(
                lambda shown=shown: (
                    archivist.get_attribute("input[name=item]", "value") not in (None, shown)
                ),
                30,
                "the next sampled message",
            )
    until(
        lambda: archivist.locator("article.certificate").count() == 1,
        10,
        lambda: f"the certificate ({archivist.url})",
    )
    text = archivist.inner_text("article.certificate")
    opened.refresh_from_db()
    assert f"at most {opened.figures['upper_number']:,}" in text
    assert "Current:" in text
    archivist.screenshot(path=str(_shots() / "certificate.png"), full_page=True)

    uncertain = next(d for d in docs if kinds[d.pk] == "uncertain")
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=uncertain, kind="release"
    )
    lead.goto(f"{url}{reverse('release-certificate', args=[opened.pk])}")
    text = lead.inner_text("article.certificate")
    assert "Stale:" in text and "1 decision(s) since the sample was drawn (1 release)" in text
    lead.screenshot(path=str(_shots() / "certificate-stale.png"), full_page=True)
    assert [e for e in events if not e.startswith("console log")] == []
