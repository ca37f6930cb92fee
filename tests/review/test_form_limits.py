"""The review page's forms and the server agree (fresh-eye findings): an end date starts
tomorrow in the date picker and on the server, with a message saying so; a typed phrase the
message does not hold is named, and nothing is redacted or released."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from review.models import Decision, Redaction

pytestmark = pytest.mark.lucene


def _uncertain(published):
    c, persona, docs, kinds = published
    return persona, next(d for d in docs if kinds[d.pk] == "uncertain")


def test_a_typed_phrase_the_message_does_not_hold_is_named_and_nothing_is_released(
    published, login, users
):
    persona, doc = _uncertain(published)
    archivist = login(users["archivist"])
    word = doc.body.split()[0]  # in the message
    r = archivist.post(
        reverse("review-redact", args=[persona.pk, doc.pk]),
        {"phrases": f"{word}\nquokka zebra overdraft", "reason": "financial"},
        follow=True,
    )
    html = r.content.decode()
    assert (
        "Nothing was redacted or released: “quokka zebra overdraft” is not in this message" in html
    )
    assert "Choose the spans to redact" not in html  # the old, misleading message
    assert not Redaction.objects.exists() and not Decision.objects.exists()


def test_an_end_date_starts_tomorrow_in_the_form_and_on_the_server(published, login, users):
    persona, doc = _uncertain(published)
    archivist = login(users["archivist"])
    today = timezone.localdate()
    tomorrow = today + timedelta(days=1)
    page = archivist.get(reverse("review-item", args=[persona.pk, doc.pk])).content.decode()
    assert page.count(f'type="date" name="until" min="{tomorrow.isoformat()}"') == 2
    said = f"The end date must be after today: {tomorrow.isoformat()} at the earliest, not {today}"
    r = archivist.post(
        reverse("review-decide", args=[persona.pk, doc.pk]),
        {"kind": "withhold", "until": today.isoformat()},
        follow=True,
    )
    assert said in r.content.decode()
    r = archivist.post(
        reverse("review-redact", args=[persona.pk, doc.pk]),
        {"phrases": doc.body.split()[0], "reason": "financial", "until": today.isoformat()},
        follow=True,
    )
    assert said in r.content.decode()
    r = archivist.post(
        reverse("review-decide", args=[persona.pk, doc.pk]),
        {"kind": "withhold", "until": "next week"},
        follow=True,
    )
    assert "The end date must be a date (YYYY-MM-DD), not “next week”" in r.content.decode()
    assert not Redaction.objects.exists() and not Decision.objects.exists()
    archivist.post(
        reverse("review-decide", args=[persona.pk, doc.pk]),
        {"kind": "withhold", "until": tomorrow.isoformat()},
    )
    assert Decision.objects.get(document=doc).until == tomorrow
