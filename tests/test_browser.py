"""In a real browser (Debian's Chromium driven by Playwright): pages work under the CSP and
hostile email stays inert. Skipped when Chromium is not installed (``.ci/run`` installs it)."""

import pytest

from annotate import services
from tests.browserkit import login, needs_chromium, watch
from tests.conftest import FIXTURES

pytestmark = needs_chromium


@pytest.mark.lucene
def test_lead_searches_and_opens_hostile_mail_without_any_script_running(
    browser, live_server, users, collection, tmp_path
):
    from ranking.services import index_build

    box = tmp_path / "box"
    box.mkdir()
    for name in ("xss.eml", "html-only.eml", "attachments.eml"):
        (box / name).write_bytes((FIXTURES / "emails" / "edge" / name).read_bytes())
    services.import_run(collection=collection, fmt="emails", path=box)
    index_build(collection_id=collection.pk)
    users["lead"].set_password("browser-pw")
    users["lead"].save()

    page = browser.new_page()
    events = []
    watch(page, live_server.url, events)

    login(page, live_server.url, "lead", "browser-pw")

    page.goto(f"{live_server.url}/collections/{collection.slug}/search/")
    page.fill("input[name=q]", "alert script body")
    page.press("input[name=q]", "Enter")
    page.wait_for_selector("ol.results li")
    # htmx swapped the results in and pushed the URL: the page was not reloaded.
    assert "q=alert" in page.url
    assert page.evaluate("typeof htmx") == "object"
    page.click("ol.results li a >> nth=0")
    page.wait_for_selector("article.email")
    text = page.inner_text("article.email")
    assert "<script>alert('body')</script>" in text
    assert page.locator("article.email script, article.email svg, article.email img").count() == 0
    for d in ("html-only", "attachments"):
        page.goto(f"{live_server.url}/collections/{collection.slug}/")
        page.click(f"text={'Weekly' if d == 'html-only' else 'Report and picture'}")
        page.wait_for_selector("article.email")
    assert events == [], events
