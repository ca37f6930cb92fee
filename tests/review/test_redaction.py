"""Redaction (issue 20): a released redacted copy is all a searcher reads and searches; the
original stays; versions are audited, and a lead can go back; an expiring redaction ends."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotate.entities import collection_entities_detect
from annotate.models import Attachment
from core import lucene
from ranking.services import index_build
from review import copies, redaction, releases, services, visibility
from review.models import AuditEvent, Redaction, SearchLog
from tests.reviewkit import searcher_search, with_a_quoting_copy

pytestmark = pytest.mark.lucene
NUMBER = "8876543210"


@pytest.fixture
def everywhere():
    """Whether ``account`` also writes the number in a header and a text attachment."""
    return False


@pytest.fixture
def account(published, users, everywhere):
    """A safe document that mentions an account number (twice) and a rare word."""
    c, persona, docs, kinds = published
    doc = next(d for d in docs if kinds[d.pk] == "safe")
    doc.subject = f"{doc.subject} acct {NUMBER}"
    doc.body = f"{doc.body}\nPlease pay into account no. {NUMBER} quickly, zebraword."
    if everywhere:
        doc.body += f"\nAgain: {NUMBER[:5]} {NUMBER[5:]}."
        doc.to_header = f"Billing <acct-{NUMBER}@bank.example>"
        Attachment.objects.create(
            document=doc,
            position=1,
            filename=f"statement-{NUMBER}.txt",
            content_type="text/plain",
            is_text=True,
            text=f"Statement for account {NUMBER}, quokkaword balance due",
        )
    doc.save(update_fields=["subject", "body", "to_header"])
    index_build(collection_id=c.pk, force=True)
    collection_entities_detect(collection_id=c.pk)  # what the import does
    c.refresh_from_db()
    return c, persona, doc


def _number_spans(doc, reason="financial"):
    return [
        {"field": f, "start": m.start(), "end": m.end(), "kind": "account", "reason": reason}
        for f in ("subject", "body")
        for m in re.finditer(NUMBER, getattr(doc, f))
    ]


def _redact(users, persona, doc, **kw):
    made = redaction.redaction_save(
        archivist=users["archivist"], persona=persona, document=doc, spans=_number_spans(doc), **kw
    )
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=doc, kind="release"
    )
    return made


def test_the_redacted_number_is_in_no_searcher_statistic_page_or_result(account, login, users):
    c, persona, doc = account
    before = visibility.view(c.publication)
    assert [h.docid for h in before.search(NUMBER, 10)] == [doc.docid]  # findable before
    _redact(users, persona, doc)
    view = visibility.view(c.publication)
    term = lucene.analyze(NUMBER)[0]
    assert term not in view.index.vocabulary  # not in the searcher's vocabulary or df
    assert view.search(NUMBER, 10) == []
    searcher = login(users["searcher"])
    miss = searcher_search(searcher, c, NUMBER).content.decode()
    assert SearchLog.objects.latest("pk").shown == []
    i = miss.find(doc.docid)
    assert i < 0, miss[i - 300 : i + 100]
    found = searcher_search(searcher, c, "zebraword").content.decode()
    assert reverse("searcher-document", args=[c.slug, doc.pk]) in found
    assert NUMBER not in found and "█" in found  # the snippet shows the mark, not the number
    page = searcher.get(reverse("searcher-document", args=[c.slug, doc.pk])).content.decode()
    assert NUMBER not in page and 'class="redacted"' in page
    doc.refresh_from_db()
    assert doc.body.count(NUMBER) == 1 and NUMBER in doc.subject  # the original stays
    event = AuditEvent.objects.get(action="redact")
    assert event.detail["version"] == 1 and len(event.detail["spans"]) == 2


@pytest.mark.parametrize("everywhere", [True])
def test_every_occurrence_of_a_redacted_number_goes_attachments_included(account, login, users):
    """The archivist ticks one occurrence; the number also sits in the subject, written with
    a space in the body, and in a text attachment: none of them stays searchable."""
    c, persona, doc = account
    assert [h.docid for h in visibility.view(c.publication).search(NUMBER, 10)] == [doc.docid]
    first = re.search(NUMBER, doc.body)
    spans = [
        {
            "field": "body",
            "start": first.start(),
            "end": first.end(),
            "kind": "account",
            "reason": "financial",
        }
    ]
    redaction.redaction_save(
        archivist=users["archivist"], persona=persona, document=doc, spans=spans
    )
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=doc, kind="release"
    )
    view = visibility.view(c.publication)
    assert lucene.analyze(NUMBER)[0] not in view.index.vocabulary
    assert view.search(NUMBER, 10) == [] and view.search(NUMBER[5:], 10) == []
    assert [h.docid for h in view.search("quokkaword", 10)] == [doc.docid]
    searcher = login(users["searcher"])
    results = searcher_search(searcher, c, "quokkaword").content.decode()
    assert reverse("searcher-document", args=[c.slug, doc.pk]) in results
    assert NUMBER not in results
    page = searcher.get(reverse("searcher-document", args=[c.slug, doc.pk])).content.decode()
    # not in the body, the headers, the attachment's name or its text
    assert NUMBER not in page and NUMBER[5:] not in page
    assert "Billing" in page and "quokkaword" in page and "statement-" in page


def test_a_redacted_documents_other_words_keep_their_statistics(account, users):
    c, persona, doc = account
    before = visibility.view(c.publication)
    term = lucene.analyze("zebraword")[0]
    df_before = before.index.df[before.index.vocabulary[term]]
    _redact(users, persona, doc)
    after = visibility.view(c.publication)
    assert after.index.df[after.index.vocabulary[term]] == df_before
    assert after.index.n == before.index.n and doc.docid in after.index.docids


def test_a_lead_goes_back_to_no_redaction_and_the_number_is_searchable_again(account, login, users):
    c, persona, doc = account
    _redact(users, persona, doc)
    lead = login(users["lead"])
    page = lead.get(reverse("review-redactions")).content.decode()
    assert doc.docid in page and "in force" in page
    revert = reverse("review-redaction-revert", args=[persona.pk, doc.pk])
    lead.post(revert, {"to_version": 0, "confirm": "1"})
    assert list(Redaction.objects.values_list("version", "reverts")) == [(1, None), (2, 0)]
    assert [h.docid for h in visibility.view(c.publication).search(NUMBER, 10)] == [doc.docid]
    lead.post(revert, {"to_version": 1, "confirm": "1"})
    assert visibility.view(c.publication).search(NUMBER, 10) == []
    assert AuditEvent.objects.filter(action="redaction-revert").count() == 2
    log = lead.get(reverse("audit-log")).content.decode()
    assert "redacted 2 span(s)" in log and "back to no redaction" in log


def test_an_expired_redaction_ends_like_an_expired_withholding(account, users):
    c, persona, doc = account
    _redact(users, persona, doc, until=timezone.localdate() + timedelta(days=2))
    assert visibility.view(c.publication).search(NUMBER, 10) == []
    later = timezone.localdate() + timedelta(days=2)
    assert redaction.redactions_in_force(persona=persona, today=later) == {}
    assert redaction.redactions_in_force(persona=persona, today=later - timedelta(days=1))


def test_the_archivist_redacts_from_the_review_page_with_a_reason(account, login, users):
    c, persona, doc = account
    archivist = login(users["archivist"])
    page = archivist.get(reverse("review-item", args=[persona.pk, doc.pk])).content.decode()
    assert 'class="ent ent-account"' in page and "Release redacted copy" in page
    value = next(
        v for v in re.findall(r'name="span" value="([^"]+)"', page) if v.endswith(":account")
    )
    r = archivist.post(
        reverse("review-redact", args=[persona.pk, doc.pk]),
        {"span": [value], "phrases": NUMBER, "reason": "financial"},
    )
    assert r.status_code == 302
    made = Redaction.objects.get()
    assert {s["reason"] for s in made.spans} == {"financial"}
    assert all(s["text"] == NUMBER for s in made.spans) and len(made.spans) == 2
    assert visibility.view(c.publication).search(NUMBER, 10) == []


def test_a_correspondents_name_is_offered_unticked_in_its_own_colour(account, login, users):
    """Names (``core.names``) are offered for redaction, not suggested: the archivist
    judges them, like emails and phones; the account number stays ticked."""
    c, persona, doc = account
    doc.body += "\nThanks to Chris Kloiber for the patch."
    doc.save(update_fields=["body"])
    collection_entities_detect(collection_id=c.pk)
    page = login(users["archivist"]).get(reverse("review-item", args=[persona.pk, doc.pk]))
    page = page.content.decode()
    box = re.search(
        r'value="body:\d+:\d+:name"( checked)?>\s*<mark class="ent ent-name">Chris Kloiber<', page
    )
    assert box and not box.group(1)
    assert re.search(r'value="body:\d+:\d+:account" checked>', page)
    assert "person&#x27;s name" in page  # the legend


@pytest.mark.parametrize(
    ("spans", "error"),
    [
        ([{"field": "headers", "start": 0, "end": 1, "reason": "financial"}], "field"),
        ([{"field": "body", "start": 5, "end": 99999, "reason": "financial"}], "outside"),
        ([{"field": "body", "start": 0, "end": 3, "reason": "whim"}], "reasons"),
        ([{"field": "body", "start": "x", "end": 3, "reason": "financial"}], "whole-number"),
    ],
)
def test_a_bad_span_is_refused_with_what_was_wrong(account, users, spans, error):
    c, persona, doc = account
    with pytest.raises(redaction.RedactionError, match=error):
        redaction.redaction_save(
            archivist=users["archivist"], persona=persona, document=doc, spans=spans
        )
    assert not Redaction.objects.exists()


# --- copies: near-duplicates, quotes, forwards -----------------------------------------------


@pytest.fixture
def copy_pair(published, users):
    """Two safe documents (visible to searchers): D with the account number, and D2, a
    reply quoting it (the number written in upper-case context, with another rare word)."""
    c, persona, _docs, _kinds = published
    doc, quote = with_a_quoting_copy(
        published,
        f"Please pay into account no. {NUMBER} quickly, zebraword.",
        f"PLEASE PAY INTO ACCOUNT NO. {NUMBER} QUICKLY\nwombatword",
    )
    return c, persona, doc, quote


def test_a_redacted_number_is_not_found_through_a_released_quoting_copy(copy_pair, users):
    """The attacker test: D is redacted and released, D2 (quoting D) released as it is (no
    one looked at it): the searcher's search for the number finds nothing. Without the
    collection-wide hiding (``elsewhere`` ignored in ``review.redaction.redacted_rows``) it
    finds D2."""
    c, persona, doc, quote = copy_pair
    assert {h.docid for h in visibility.view(c.publication).search(NUMBER, 10)} == {
        doc.docid,
        quote.docid,
    }
    _redact(users, persona, doc)
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=quote, kind="release"
    )
    view = visibility.view(c.publication)
    assert quote.docid in view.docids
    assert view.search(NUMBER, 10) == []
    assert lucene.analyze(NUMBER)[0] not in view.index.vocabulary
    assert [h.docid for h in view.search("wombatword", 10)] == [quote.docid]
    [shown] = redaction.searcher_copies(persona=persona, documents=[quote])
    assert NUMBER not in shown.body and shown.redacted


def test_the_review_page_lists_the_copies_and_redacts_them_with_the_same_reason(
    copy_pair, login, users
):
    c, persona, doc, quote = copy_pair
    archivist = login(users["archivist"])
    r = archivist.post(
        reverse("review-redact", args=[persona.pk, doc.pk]),
        {"phrases": NUMBER, "reason": "financial"},
    )
    # after saving, the archivist stays on the page, which lists the copy with its state
    assert r.url == reverse("review-item", args=[persona.pk, doc.pk])
    page = archivist.get(r.url).content.decode()
    assert "Copies of the redacted words (1)" in page and quote.docid in page
    assert "visible to searchers" in page and "Apply the same redaction to these 1" in page
    archivist.post(reverse("review-redact-copies", args=[persona.pk, doc.pk]), {"copy": [quote.pk]})
    made = Redaction.objects.get(document=quote)
    assert [s["reason"] for s in made.spans] == ["financial"]
    assert quote.body[made.spans[0]["start"] : made.spans[0]["end"]] == NUMBER
    assert AuditEvent.objects.filter(action="redact", document=quote).count() == 1
    page = archivist.get(r.url).content.decode()
    assert "already redacted there" in page and "Apply the same redaction" not in page
    r = archivist.post(reverse("review-redact-copies", args=[persona.pk, doc.pk]), {})
    assert "No copies were chosen" in archivist.get(r.url).content.decode()


def test_releasing_a_copy_asks_for_a_choice_and_only_an_explicit_one_shows_it(
    copy_pair, login, users
):
    c, persona, doc, quote = copy_pair
    _redact(users, persona, doc)
    archivist = login(users["archivist"])
    item = reverse("review-item", args=[persona.pk, quote.pk])
    page = archivist.get(item).content.decode()
    assert "Words redacted in other documents" in page and f"“{NUMBER}”" in page
    decide = reverse("review-decide", args=[persona.pk, quote.pk])
    r = archivist.post(decide, {"kind": "release"})
    assert "Not released: it holds" in archivist.get(r.url).content.decode()
    assert not services.Decision.objects.filter(document=quote).exists()
    # a person's explicit choice: released readable, recorded and audited
    archivist.post(decide, {"kind": "release", "elsewhere": "show"})
    assert services.Decision.objects.get(document=quote).kind == "release"
    assert Redaction.objects.get(document=quote).shows_elsewhere
    assert AuditEvent.objects.filter(action="redaction-show-elsewhere").count() == 1
    log = login(users["lead"]).get(reverse("audit-log")).content.decode()
    assert "with 1 string(s) redacted in other documents left readable" in log
    archivist = login(users["archivist"])
    assert [h.docid for h in visibility.view(c.publication).search(NUMBER, 10)] == [quote.docid]
    page = archivist.get(reverse("review-item", args=[persona.pk, doc.pk])).content.decode()
    assert "visible to searchers and readable (a person chose" in page
    # or the same redaction: a new version (which ends the choice to show)
    archivist.post(decide, {"kind": "release", "elsewhere": "redact"})
    made = Redaction.objects.filter(document=quote).latest("version")
    assert [s["text"] for s in made.spans] == [NUMBER] and not made.shows_elsewhere
    assert visibility.view(c.publication).search(NUMBER, 10) == []


# --- the mark tells nothing of the secret's length --------------------------------------------


@pytest.fixture
def twins(published):
    """Two visible documents identical but for a redacted number: 4 digits in one, 12
    (written in groups, three terms) in the other."""
    c, persona, docs, kinds = published
    short, long = [d for d in docs if kinds[d.pk] == "safe"][:2]
    same = [
        f.attname
        for f in short._meta.concrete_fields
        if f.attname not in ("id", "docid", "collection_id", "created_at", "message_id")
    ]
    for f in same:
        setattr(long, f, getattr(short, f))
    text = "Hello, the kiwiword figures: PIN {} for the kiwiword vault, see you."
    short.body, long.body = text.format("7302"), text.format("4821 5678 9012")
    for d in (short, long):
        d.attachments.all().delete()
        d.save()
    index_build(collection_id=c.pk, force=True)
    c.refresh_from_db()
    return c, persona, short, long


def test_a_4_and_a_12_digit_redacted_number_look_and_score_the_same(twins, login, users):
    """The attacker test: byte-identical searcher pages and snippets (but for the ids) and
    equal BM25 scores. With the old mark (3-12 blocks, as long as the secret) the pages and
    snippets differ."""
    c, persona, short, long = twins
    for d, number in ((short, "7302"), (long, "4821 5678 9012")):
        start = d.body.index(number)
        span = {"field": "body", "start": start, "end": start + len(number)}
        redaction.redaction_save(
            archivist=users["archivist"],
            persona=persona,
            document=d,
            spans=[{**span, "kind": "typed", "reason": "financial"}],
        )
        releases.review_decide(
            archivist=users["archivist"], persona=persona, document=d, kind="release"
        )
    hits = visibility.view(c.publication).search("kiwiword", 10)
    assert {h.docid for h in hits} == {short.docid, long.docid}
    # a tie: equal scores, the second 1e-6 lower as Anserini breaks ties (by docid)
    assert abs(hits[0].score - hits[1].score) < 2e-6
    searcher = login(users["searcher"])

    results = searcher_search(searcher, c, "kiwiword").content.decode()
    snippets = re.findall(r'<p class="snippet">(.*?)</p>', results, re.S)
    assert len(snippets) == 2 and snippets[0] == snippets[1], snippets
    assert "7302" not in results and "4821" not in results

    def page(d):
        html = searcher.get(reverse("searcher-document", args=[c.slug, d.pk])).content.decode()
        html = re.sub(r"[A-Za-z0-9]{64}", "CSRF", html)  # the page's token, new each time
        return html.replace(d.docid, "DOCID").replace(f"/{d.pk}/", "/PK/")

    shown = page(short)
    assert "[redacted]" in shown and "7302" not in shown
    assert shown == page(long)


# --- fresh-eye findings on the redaction pages ----------------------------------------------


def test_a_revert_needs_a_choice_and_a_confirmation_and_must_change_something(
    account, login, users
):
    c, persona, doc = account
    _redact(users, persona, doc)
    lead = login(users["lead"])
    page = lead.get(reverse("review-redactions")).content.decode()
    # labels, not codes; no version chosen beforehand
    assert "Personal financial information" in page and ", financial)" not in page
    assert '<option value="" selected disabled>Choose…</option>' in page
    revert = reverse("review-redaction-revert", args=[persona.pk, doc.pk])
    for post, error in (
        ({"confirm": "1"}, "choose the version to go back to"),
        ({"to_version": 0}, "Tick “I confirm”"),
    ):
        r = lead.post(revert, post)
        assert error in lead.get(r.url).content.decode()
    assert Redaction.objects.count() == 1
    lead.post(revert, {"to_version": 0, "confirm": "1"})
    r = lead.post(revert, {"to_version": 0, "confirm": "1"})  # again: nothing to change
    assert (
        "nothing changed: the newest version (v2) already redacts nothing"
        in lead.get(r.url).content.decode()
    )
    assert Redaction.objects.count() == 2


def test_the_reason_is_an_explicit_choice(account, login, users):
    c, persona, doc = account
    archivist = login(users["archivist"])
    item = reverse("review-item", args=[persona.pk, doc.pk])
    page = archivist.get(item).content.decode()
    assert '<select name="reason" required><option value="" selected disabled>' in page
    r = archivist.post(
        reverse("review-redact", args=[persona.pk, doc.pk]), {"phrases": NUMBER, "reason": ""}
    )
    assert "choose a reason for the redaction" in archivist.get(r.url).content.decode()
    assert not Redaction.objects.exists()


def test_a_copy_can_still_be_withheld_without_the_release_choice(copy_pair, login, users):
    """The choice is asked of a release only: withholding the copy needs none."""
    c, persona, doc, quote = copy_pair
    _redact(users, persona, doc)
    archivist = login(users["archivist"])
    archivist.post(reverse("review-decide", args=[persona.pk, quote.pk]), {"kind": "withhold"})
    assert services.Decision.objects.get(document=quote).kind == "withhold"


def test_a_copy_writing_the_number_in_groups_is_hidden_too(published, users):
    """The copy writes 88765 43210: neither group stays searchable (the index finds it as a
    candidate by the number's leading digits). Without the leading-digits candidates in
    ``review.redaction.candidates`` the search for 88765 finds the copy."""
    c, persona, _docs, _kinds = published
    doc, quote = with_a_quoting_copy(
        published, f"Pay into account no. {NUMBER}.", f"account {NUMBER[:5]} {NUMBER[5:]}"
    )
    _redact(users, persona, doc)
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=quote, kind="release"
    )
    view = visibility.view(c.publication)
    assert view.search(NUMBER[:5], 10) == [] and view.search(NUMBER[5:], 10) == []
    assert [x.document.pk for x in copies.copies_of(persona=persona, document=doc)] == [quote.pk]


def test_redacting_more_adds_to_the_redaction_in_force_and_never_lifts_it(account, users):
    """Fresh-eye leak: a second redaction of the same message held only its own spans, so
    the first one's words became readable and searchable again without a word."""
    c, persona, doc = account
    _redact(users, persona, doc)
    start = doc.body.index("zebraword")
    later = redaction.redaction_save(
        archivist=users["archivist"],
        persona=persona,
        document=doc,
        spans=[
            {
                "field": "body",
                "start": start,
                "end": start + 9,
                "kind": "typed",
                "reason": "financial",
            }
        ],
    )
    assert later.version == 2
    assert {s["text"] for s in later.spans} == {NUMBER, "zebraword"}
    view = visibility.view(c.publication)
    assert view.search(NUMBER, 10) == [] and view.search("zebraword", 10) == []
    with pytest.raises(redaction.RedactionError, match="choose the spans"):
        redaction.redaction_save(
            archivist=users["archivist"], persona=persona, document=doc, spans=[]
        )
