"""The review page's forms and the server agree (fresh-eye findings): an end date starts
tomorrow in the date picker and on the server, with a message saying so; a typed phrase the
message does not hold is named, and nothing is redacted or released."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotate import roles
from review import releases
from review.models import Decision, Redaction
from tests.review.test_redaction import _redact, copy_pair  # noqa: F401 (fixture)

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
    r = archivist.post(
        reverse("review-decide", args=[persona.pk, doc.pk]),
        {"kind": "withhold", "until": tomorrow.isoformat()},
        follow=True,
    )
    assert Decision.objects.get(document=doc).until == tomorrow
    assert f"for {persona.name} until {tomorrow.isoformat()}." in r.content.decode()


def _seen(page: str) -> str:
    import re

    values = set(re.findall(r'name="seen_decision" value="(\d+)"', page))
    assert len(values) == 1, values  # the decision form and the redaction form agree
    return values.pop()


def test_a_decision_from_a_page_older_than_the_latest_decision_is_refused_and_named(
    published, login, users
):
    """Two tabs on one document: tab A releases, then tab B (shown before A's release)
    withholds. Before, both were stored and B's silently overturned A's; now B is refused,
    the message names A's decision, and the page it returns to shows it."""
    persona, doc = _uncertain(published)
    archivist = login(users["archivist"])
    item = reverse("review-item", args=[persona.pk, doc.pk])
    page = archivist.get(item).content.decode()
    # The band as the Publish page writes it, half-open (the queue's line says the same).
    assert "<strong>0.500</strong> (classifier v1): inside the band [0.2, 0.8)" in page
    tab_a = _seen(page)
    tab_b = _seen(archivist.get(item).content.decode())
    assert tab_a == tab_b == "0"
    decide = reverse("review-decide", args=[persona.pk, doc.pk])
    archivist.post(decide, {"kind": "release", "seen_decision": tab_a})
    # The same decision sent twice (a second click on Release): recorded once, not refused.
    r = archivist.post(decide, {"kind": "release", "seen_decision": tab_a}, follow=True)
    assert "Not recorded" not in r.content.decode() and "Released" in r.content.decode()
    assert Decision.objects.filter(document=doc).count() == 1
    r = archivist.post(decide, {"kind": "withhold", "seen_decision": tab_b}, follow=True)
    html = r.content.decode()
    # The refused decision was this archivist's own (another tab): "you", not their name.
    assert (
        f"Not recorded: you decided “Release” on this document for {persona.name}" in html
        and "(from another of your pages, or a second click)" in html
    )
    assert [d.kind for d in Decision.objects.filter(document=doc)] == ["release"]
    # The page it comes back to carries the release as seen: deciding again is a choice.
    again = _seen(html)
    assert again == str(Decision.objects.get(document=doc).pk)
    archivist.post(decide, {"kind": "withhold", "seen_decision": again})
    assert [d.kind for d in Decision.objects.filter(document=doc).order_by("id")] == [
        "release",
        "withhold",
    ]
    # The redaction form too: nothing redacted, nothing released from a stale page.
    r = archivist.post(
        reverse("review-redact", args=[persona.pk, doc.pk]),
        {"phrases": doc.body.split()[0], "reason": "financial", "seen_decision": again},
        follow=True,
    )
    assert "Not recorded: you decided “Withhold”" in r.content.decode()
    assert not Redaction.objects.exists() and Decision.objects.filter(document=doc).count() == 2
    # A lead's reopening since is named as one.
    releases.review_reopen(lead=users["lead"], persona=persona, document=doc)
    r = archivist.post(decide, {"kind": "release", "seen_decision": again}, follow=True)
    assert "Not recorded: lead reopened this document for" in r.content.decode()


def test_a_second_click_on_release_a_redacted_copy_is_recorded_once(
    published, login, users, make_user
):
    """Two clicks on "Release a redacted copy" send the form twice from one page. Before,
    the second was refused as a decision made since the page was shown, naming the archivist
    as if someone else: "Not recorded: arch decided Release". Now the second is the first,
    recorded once; a different redaction from the same stale page is still refused."""
    persona, doc = _uncertain(published)
    archivist = login(users["archivist"])
    redact = reverse("review-redact", args=[persona.pk, doc.pk])
    first, second = doc.body.split()[0], doc.body.split()[1]
    form = {"phrases": first, "reason": "financial", "seen_decision": "0"}
    archivist.post(redact, form)
    r = archivist.post(redact, form, follow=True)
    html = r.content.decode()
    assert "Not recorded" not in html and "Released a redacted copy" in html
    assert Redaction.objects.filter(document=doc).count() == 1
    assert [d.kind for d in Decision.objects.filter(document=doc)] == ["release"]
    # Asking for more than the copy released hides, from that page, is a new decision.
    r = archivist.post(redact, {**form, "phrases": f"{first}\n{second}"}, follow=True)
    assert "Not recorded: you decided “Release” on this document" in r.content.decode()
    assert Redaction.objects.filter(document=doc).count() == 1
    # Another archivist's page from before the release is refused by their name.
    other = login(make_user("arch2", roles.ARCHIVIST))
    r = other.post(redact, form, follow=True)
    assert "Not recorded: arch decided “Release” on this document" in r.content.decode()
    assert Redaction.objects.filter(document=doc).count() == 1


@pytest.mark.needs_postgres("row locks: two pages deciding at once")
def test_pages_deciding_one_document_at_once_record_one_decision(
    transactional_db, published, make_user
):
    """Eight archivists' pages shown before any decision, all deciding at the same moment:
    the document's row lock makes them take turns, so one is recorded and seven are refused
    (without the lock, several pass the check before any has inserted)."""
    import threading

    from annotate import roles
    from tests.stormkit import run_threads

    persona, doc = _uncertain(published)
    archivists = [make_user(f"arch{i}", roles.ARCHIVIST) for i in range(8)]
    start = threading.Barrier(8)
    refused = []

    def decide(archivist, kind):
        start.wait()
        try:
            releases.review_decide(
                archivist=archivist, persona=persona, document=doc, kind=kind, seen=0
            )
        except releases.DecisionError:
            refused.append(kind)

    run_threads(decide, [(a, "release" if i % 2 else "withhold") for i, a in enumerate(archivists)])
    assert Decision.objects.filter(document=doc).count() == 1 and len(refused) == 7


@pytest.mark.parametrize("choice", ["redact", "show"])
def test_a_second_click_on_a_release_holding_words_redacted_elsewhere_is_recorded_once(
    copy_pair,  # noqa: F811
    users,
    login,
    choice,
):
    """The release of a document holding words redacted in another one, sent twice from one
    page (a double click on "Redact them here too" or "Release it readable"): recorded once,
    never refused naming the archivist as someone else."""
    c, persona, doc, quote = copy_pair
    _redact(users, persona, doc)
    archivist = login(users["archivist"])
    decide = reverse("review-decide", args=[persona.pk, quote.pk])
    form = {"kind": "release", "elsewhere": choice, "seen_decision": "0"}
    archivist.post(decide, form)
    r = archivist.post(decide, form, follow=True)
    html = r.content.decode()
    assert "Not recorded" not in html, html[html.find("Not recorded") - 200 :][:600]
    assert [d.kind for d in Decision.objects.filter(document=quote)] == ["release"]
    assert Redaction.objects.filter(document=quote).count() == 1


@pytest.mark.parametrize("choice", ["redact", "show"])
def test_release_with_elsewhere_from_one_stale_page_twice_is_recorded_once(
    copy_pair,  # noqa: F811
    users,
    choice,
):
    """The branch a second request reaches when it was sent before the first was recorded
    (both pages saw no decision): the same choice is the first decision, returned; the
    other choice is refused by "you"."""
    c, persona, doc, quote = copy_pair
    _redact(users, persona, doc)
    first = releases.release_with_elsewhere(
        archivist=users["archivist"], persona=persona, document=quote, choice=choice, seen=0
    )
    again = releases.release_with_elsewhere(
        archivist=users["archivist"], persona=persona, document=quote, choice=choice, seen=0
    )
    assert again.pk == first.pk and Decision.objects.filter(document=quote).count() == 1
    assert Redaction.objects.filter(document=quote).count() == 1
    other = "show" if choice == "redact" else "redact"
    with pytest.raises(releases.DecisionError, match="Not recorded: you decided “Release”"):
        releases.release_with_elsewhere(
            archivist=users["archivist"], persona=persona, document=quote, choice=other, seen=0
        )
    assert Redaction.objects.filter(document=quote).count() == 1
