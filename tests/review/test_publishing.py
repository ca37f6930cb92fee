"""The lead's publish page (issue 33): the preview, the save through the service with its
audit row, the errors, and that searchers see the new visible set from their next search."""

import re

import pytest
from django.urls import reverse

from core.routing import band_preview
from review import services
from review.models import AuditEvent, Publication, SearchLog
from tests.reviewkit import searcher_search

pytestmark = pytest.mark.lucene


def _url(c):
    return reverse("review-publish", args=[c.slug])


def _numbers(html: str, cls: str) -> int:
    row = re.search(rf'<tr class="{cls}"><th>[^<]*</th><td class="n">(\d+)</td>', html)
    return int(row.group(1))


def test_the_preview_adds_up_and_is_band_preview(published, users, client):
    c, _persona, docs, kinds = published
    client.force_login(users["lead"])
    response = client.get(_url(c), {"low": "0.6", "high": "0.9"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    html = response.content.decode()
    inputs = services.band_inputs(publication=c.publication)
    expected = band_preview(inputs.inputs.p, low=0.6, high=0.9, **inputs.preview_args())
    shown = (_numbers(html, "visible"), _numbers(html, "review"), _numbers(html, "withheld"))
    assert shown == (expected.visible, expected.review, expected.withheld)
    assert sum(shown) == expected.total == len(docs)
    # uncertain (0.5) and safe (0.05) below 0.6: visible; sensitive (0.95) at or above 0.9
    assert expected.visible == sum(k != "sensitive" for k in kinds.values())
    assert f"{expected.expected_sensitive:.1f}" in html and "minutes" in html


def test_the_full_page_shows_the_band_the_rule_and_the_calibration(published, users, client):
    c, _persona, _docs, _kinds = published
    client.force_login(users["lead"])
    html = client.get(_url(c)).content.decode()
    assert "The band now" in html and "[0.2, 0.8)" in html
    assert "The rule&#x27;s band" in html or "The rule's band" in html
    assert "How far to trust" in html and 'id="certificate"' in html


def test_a_get_changes_nothing(published, users, client):
    c, _persona, _docs, _kinds = published
    client.force_login(users["lead"])
    before = list(Publication.objects.values())
    events = AuditEvent.objects.count()
    client.get(_url(c), {"low": "0.9", "high": "0.95"})
    client.get(_url(c), {"low": "0.9", "high": "0.95"}, headers={"HX-Request": "true"})
    assert list(Publication.objects.values()) == before
    assert AuditEvent.objects.count() == events


def test_the_post_saves_and_audits_old_and_new(published, users, client):
    c, persona, _docs, _kinds = published
    client.force_login(users["lead"])
    response = client.post(_url(c), {"low": "0.6", "high": "0.9", "published": "on"})
    assert response.status_code == 302
    p = Publication.objects.get(collection=c)
    assert (p.band_low, p.band_high, p.published) == (0.6, 0.9, True)
    event = AuditEvent.objects.get(action="band-change")
    assert event.user == users["lead"] and event.collection == c
    assert event.detail["old"] == {"low": 0.2, "high": 0.8, "published": True}
    assert event.detail["new"] == {"low": 0.6, "high": 0.9, "published": True}
    assert event.detail["persona"] == persona.pk
    log = client.get(reverse("audit-log")).content.decode()
    assert "changed the band" in log and "[0.6, 0.9), published" in log


@pytest.mark.parametrize(
    "low, high, field",
    [("-0.1", "0.8", "Low"), ("0.5", "1.5", "High"), ("0.9", "0.5", "Low"), ("x", "0.8", "Low")],
)
def test_a_bad_band_is_refused_naming_the_field(published, users, client, low, high, field):
    c, _persona, _docs, _kinds = published
    client.force_login(users["lead"])
    response = client.post(_url(c), {"low": low, "high": high, "published": "on"})
    assert response.status_code == 400
    assert re.search(rf'class="error" role="alert">{field}:', response.content.decode())
    p = Publication.objects.get(collection=c)
    assert (p.band_low, p.band_high) == (0.2, 0.8)
    assert not AuditEvent.objects.filter(action="band-change").exists()


def test_unpublishing_is_saved_and_audited(published, users, client):
    c, _persona, _docs, _kinds = published
    client.force_login(users["lead"])
    client.post(_url(c), {"low": "0.2", "high": "0.8"})
    assert not Publication.objects.get(collection=c).published
    assert AuditEvent.objects.get(action="band-change").detail["new"]["published"] is False


@pytest.mark.parametrize("role", ["archivist", "searcher", "annotator"])
def test_only_the_lead_reaches_the_page(published, users, client, role):
    c, _persona, _docs, _kinds = published
    client.force_login(users[role])
    # "deny" in tests/route_matrix.csv: the role guard answers 404, revealing nothing
    assert client.get(_url(c)).status_code in (403, 404)
    assert client.post(_url(c), {"low": "0.6", "high": "0.9"}).status_code in (403, 404)
    assert Publication.objects.get(collection=c).band_low == 0.2


def test_a_searcher_sees_a_document_below_the_new_low_from_the_next_search(
    published, users, client
):
    c, _persona, docs, kinds = published
    uncertain = next(d for d in docs if kinds[d.pk] == "uncertain")  # P 0.5
    client.force_login(users["searcher"])
    query = "razor"
    searcher_search(client, c, query)
    shown = SearchLog.objects.order_by("-pk").first().shown
    assert uncertain.pk not in shown
    lead = client.__class__()
    lead.force_login(users["lead"])
    lead.post(_url(c), {"low": "0.6", "high": "0.9", "published": "on"})
    searcher_search(client, c, query)
    assert uncertain.pk in SearchLog.objects.order_by("-pk").first().shown


def test_without_a_classifier_the_page_says_what_to_do(published, users, client):
    from ranking.models import SensitivityModel

    c, _persona, docs, _kinds = published
    SensitivityModel.objects.filter(collection=c).delete()
    client.force_login(users["lead"])
    html = client.get(_url(c)).content.decode()
    assert "No classifier yet" in html
    assert reverse("classifiers", args=[c.slug]) in html
    assert _numbers(html, "review") == len(docs)  # every message waits for review
