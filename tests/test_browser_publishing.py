"""The lead's publish page in Debian's Chromium at 1280x720 (issue 33): the lead opens it,
moves the band, the preview redraws without a write, the save is audited and searchers see
the new visible set. Screenshots go to $SASC_SCREENSHOT_DIR (docs/publishing/)."""

import os
from pathlib import Path

import pytest
from django.urls import reverse

from annotate.models import Persona
from config.management.commands.demo import stand_in_labels
from ranking.classifier import sensitivity_model_train
from ranking.services import index_build
from review.models import AuditEvent, Publication
from tests.browserkit import login, needs_chromium, watch
from tests.waitkit import until

pytestmark = [
    *needs_chromium,
    pytest.mark.lucene,
    pytest.mark.needs_postgres("a live-server browser test run on PostgreSQL"),
]


def _shots() -> Path:
    path = Path(os.environ.get("SASC_SCREENSHOT_DIR", "/tmp/sasc-publish-shots"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_the_lead_moves_the_band_sees_the_preview_and_saves(
    browser, live_server, sample_collection, users, settings, tmp_path
):
    settings.VAR_DIR = tmp_path
    c = sample_collection
    index_build(collection_id=c.pk)
    c.refresh_from_db()
    persona = Persona.objects.create(name="Maeve Gallagher")
    publication = Publication.objects.create(collection=c, persona=persona, published=True)
    stand_in_labels(collection=c, persona=persona)
    sensitivity_model_train(collection=c, persona=persona, source="reference")
    users["lead"].set_password("pw-browser")
    users["lead"].save()
    url, events = live_server.url, []
    page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    watch(page, url, events)
    login(page, url, "lead", "pw-browser")
    page.click(f"a:has-text('Publish {c.name}')")
    page.wait_for_selector("#preview")
    assert page.url.endswith(reverse("review-publish", args=[c.slug]))
    page.screenshot(path=str(_shots() / "publish.png"))
    page.screenshot(path=str(_shots() / "publish-full.png"), full_page=True)
    before = page.inner_text("#preview .visible .n")
    page.fill("input[name=low]", "0.5")
    until(
        lambda: page.inner_text("#preview h3").startswith("At [0.5,"),
        10,
        lambda: f"the preview at 0.5 ({page.inner_text('#preview')[:200]})",
    )
    after = page.inner_text("#preview .visible .n")
    assert int(after) > int(before)
    publication.refresh_from_db()
    assert publication.band_low == 0.02  # the preview wrote nothing
    page.locator("#preview").screenshot(path=str(_shots() / "publish-preview.png"))
    page.fill("input[name=why]", "browser check")
    page.click("button:has-text('Save the band')")
    page.wait_for_selector("p.message")
    assert "Saved" in page.inner_text("p.message")
    publication.refresh_from_db()
    assert publication.band_low == 0.5
    event = AuditEvent.objects.get(action="band-change")
    assert event.detail["old"]["low"] == 0.02 and event.detail["new"]["low"] == 0.5
    page.screenshot(path=str(_shots() / "publish-saved.png"))
    assert not [e for e in events if "error" in e or e.startswith("request")], events
