"""Issue 31's attacker scenarios, through the pages: an archivist redacts a message's phone,
IBAN and account number as the review page suggests and releases it; its attachment, a
quoting reply and a forward write the same values in other ways. A searcher, searching for
every part and every writing, reads every page they can reach: none holds a writing of a
redacted value, in any field, nor its length. Each failed on main b8e9e16."""

import html
import re

import pytest
from django.template.defaultfilters import filesizeformat
from django.urls import reverse

from annotate.entities import collection_entities_detect
from annotate.models import Attachment
from core import lucene, writings
from ranking.services import index_build
from review import copies, redaction, releases, visibility
from review.models import Redaction, ReviewRequest, SearchLog
from tests.reviewkit import searcher_search

pytestmark = pytest.mark.lucene

PHONE, IBAN, ACCOUNT = "(617) 555-0199", "DE89 3704 0044 0532 0130 00", "98765432101"
VALUES = [PHONE, IBAN, ACCOUNT]
ATTACHMENT_TEXT = f"Contacts\nMaeve: {PHONE}\nBank: {IBAN}\n"
QUERIES = [
    "617",
    "555",
    "0199",
    "617 555 0199",
    "6175550199",
    "+16175550199",
    "98765",
    "432101",
    ACCOUNT,
    "DE89370400440532013000",
    "DE89",
    "3704",
    "0532",
]


@pytest.fixture
def mailbox(published):
    """Three visible (safe) messages: D writes the three values (and its attachment the
    phone and IBAN); R, a reply, quotes them in other writings; F, a forward, is a zip
    member named after its subject."""
    c, persona, docs, kinds = published
    d, r, f = [x for x in docs if kinds[x.pk] == "safe"][:3]
    d.body = (
        f"Hi, zebraword. Call me on {PHONE}. My IBAN is {IBAN}, "
        f"or pay into acct {ACCOUNT}.\n{d.body}"
    )
    r.body = (
        f"wombatword, noted.\n\n> Call me on {PHONE}. My IBAN is DE89370400440532013000,\n"
        "> or pay into acct 98765\n> 432101.\n> Or ring 617 - 555 - 0199 after six.\n"
        f"{r.body}"
    )
    f.body = f"quokkaword fwd\n---------- Forwarded message ----------\n{d.body}"
    f.docid = f"archive.zip/RE_ payment to acct {ACCOUNT}.eml"
    for x in (d, r, f):
        x.save(update_fields=["body", "docid"])
    Attachment.objects.create(
        document=d,
        position=1,
        filename="contacts.txt",
        content_type="text/plain",
        is_text=True,
        size=len(ATTACHMENT_TEXT.encode()),
        text=ATTACHMENT_TEXT,
    )
    index_build(collection_id=c.pk, force=True)
    collection_entities_detect(collection_id=c.pk)
    c.refresh_from_db()
    visibility.forget()
    return c, persona, d, r, f


def _release_forward(users, persona, f):
    """F's new id has no classifier score: an archivist releases it, as its page suggests
    (with the same redaction as elsewhere)."""
    releases.release_with_elsewhere(
        archivist=users["archivist"], persona=persona, document=f, choice="redact"
    )


def _suggested_spans(page: str) -> list[str]:
    """The spans the review page offers, by the values it shows them with."""
    return re.findall(r'name="span" value="([^"]+)"', page)


def _redact_as_suggested(client, users, persona, doc):
    client.force_login(users["archivist"])
    page = client.get(reverse("review-item", args=[persona.pk, doc.pk])).content.decode()
    spans = [
        s
        for s in _suggested_spans(page)
        if s.rsplit(":", 1)[-1] in ("phone", "iban", "account", "card")
    ]
    assert len(spans) >= 3, spans
    response = client.post(
        reverse("review-redact", args=[persona.pk, doc.pk]),
        {"span": spans, "reason": "personal-data"},
    )
    assert response.status_code == 302
    return client.get(reverse("review-item", args=[persona.pk, doc.pk])).content.decode()


def _searcher_pages(client, users, c, docs) -> list[tuple[str, str]]:
    """Every page a searcher reaches: the results of each query (snippets and highlights)
    and each message's page (headers, id, body, attachments)."""
    client.force_login(users["searcher"])
    pages = []
    for query in [*QUERIES, "zebraword", "wombatword", "quokkaword"]:
        response = searcher_search(client, c, query)
        # the searcher's own query is echoed (the search box, "nothing to show for"): not a leak
        page = response.content.decode().replace(html.escape(query), "")
        pages.append((f"results for {query!r}", page))
    for doc in docs:
        response = client.get(reverse("searcher-document", args=[c.slug, doc.pk]))
        assert response.status_code == 200, doc.docid
        pages.append((f"page of {doc.docid}", response.content.decode()))
    return pages


def test_no_writing_of_a_redacted_value_reaches_a_searcher(mailbox, client, users):
    c, persona, d, r, f = mailbox
    _redact_as_suggested(client, users, persona, d)
    _release_forward(users, persona, f)
    for where, page in _searcher_pages(client, users, c, [d, r, f]):
        assert writings.scan([page], VALUES) == set(), where
    # searching any part of a value finds none of the messages that write it
    client.force_login(users["searcher"])
    for query in QUERIES:
        searcher_search(client, c, query)
        shown = set(SearchLog.objects.latest("pk").shown)
        assert not shown & {d.pk, r.pk, f.pk}, query
    # nor are the parts in the searcher's vocabulary
    vocabulary = visibility.view(c.publication).index.vocabulary
    for part in ("617", "0199", "98765", "432101", ACCOUNT.lower(), "de89370400440532013000"):
        assert lucene.analyze(part)[0] not in vocabulary, part


def test_the_copies_card_lists_every_message_writing_a_redacted_value(mailbox, client, users):
    c, persona, d, r, f = mailbox
    page = _redact_as_suggested(client, users, persona, d)
    found = {
        x.document.pk: {e["text"] for e in x.secrets}
        for x in copies.copies_of(persona=persona, document=d)
    }
    assert set(found) == {r.pk, f.pk}
    assert {writings.key(t) for t in found[r.pk]} == {writings.key(v) for v in VALUES}
    assert r.docid in page and "“(617) 555-0199”" in page.replace("&quot;", '"')
    # the reply's own page warns before its release, naming the phone
    warning = client.get(reverse("review-item", args=[persona.pk, r.pk])).content.decode()
    assert "Words redacted in other documents" in warning
    assert "(617) 555-0199" in warning


def test_the_other_way_round_a_compact_iban_redacted_hides_the_printed_one(mailbox, client, users):
    c, persona, d, r, f = mailbox
    _redact_as_suggested(client, users, persona, r)  # R writes the IBAN compact
    _release_forward(users, persona, f)
    for where, page in _searcher_pages(client, users, c, [d, r, f]):
        assert writings.scan([page], [IBAN]) == set(), where


def test_a_redacted_attachment_shows_the_size_of_what_is_left(mailbox, client, users):
    c, persona, d, r, f = mailbox
    _redact_as_suggested(client, users, persona, d)
    page = dict(_searcher_pages(client, users, c, [d]))[f"page of {d.docid}"]
    left = writings.redact_everywhere(ATTACHMENT_TEXT, VALUES)

    def size(n):
        return filesizeformat(n).replace("\xa0", " ")

    page = page.replace("\xa0", " ")
    assert size(len(left.encode())) in page
    assert size(len(ATTACHMENT_TEXT.encode())) not in page


def test_the_lead_sees_what_the_rule_of_every_writing_changed(mailbox, client, users):
    """Nothing stored changes with the rule: the redaction versions are those saved; the lead's
    redactions page lists the documents whose values the earlier rule left readable."""
    c, persona, d, r, f = mailbox
    _redact_as_suggested(client, users, persona, d)
    stored = list(Redaction.objects.values_list("id", "version", "spans"))
    found = {x.document.pk: x for x in copies.rule_change(persona=persona, collection=c)}
    # R quotes the phone after "(" and the IBAN compact; D's own attachment writes the phone
    # as "(617) 555-0199", which the earlier rule (one separator) never matched
    assert r.pk in found and d.pk in found
    assert "(617) 555-0199" in {e["text"] for e in found[r.pk].secrets}
    client.force_login(users["lead"])
    page = client.get(reverse("review-redactions")).content.decode()
    section = page[page.index('id="rule-change"') :]
    assert r.docid in section and "Hidden since every writing of a value counts" in page
    assert list(Redaction.objects.values_list("id", "version", "spans")) == stored


def test_a_query_for_a_redacted_value_asks_about_no_document_holding_it(
    published, mailbox, client, users
):
    """An uncertain document (in the band, unreviewed) quoting the phone: a search for the
    phone's digits must not ask the archivist about it (released, it would answer that
    query: the searcher would learn it holds the value); a search for its own words does."""
    c, persona, d, r, f = mailbox
    _c, _p, docs, kinds = published
    u = next(x for x in docs if kinds[x.pk] == "uncertain")
    u.body = f"wallabyword\n> ring (617) 555-0199 or 617.555.0199\n{u.body}"
    u.save(update_fields=["body"])
    index_build(collection_id=c.pk, force=True)
    c.refresh_from_db()
    visibility.forget()
    _redact_as_suggested(client, users, persona, d)
    client.force_login(users["searcher"])
    for query in ("0199", "617 555 0199", "6175550199"):
        searcher_search(client, c, query)
        asked = ReviewRequest.objects.filter(search=SearchLog.objects.latest("pk"))
        assert not asked.filter(document=u).exists(), query
    searcher_search(client, c, "wallabyword")
    asked = ReviewRequest.objects.filter(search=SearchLog.objects.latest("pk"))
    assert asked.filter(document=u).exists()


def test_where_a_wrapped_line_breaks_does_not_tell_a_redacted_values_length(published, users):
    """Mail wraps at a fixed width: with a 4-digit and a 20-digit value redacted, the line
    holding the mark broke at other words, telling the length (fresh-eye attacker)."""
    import textwrap

    c, persona, docs, kinds = published
    safe = [d for d in docs if kinds[d.pk] == "safe"][:3]
    words = "Your new code for the side door of the Kilkenny office is {} from Monday on, "
    words += "please keep it to yourself and do not write it on the door frame again."
    bodies = []
    for doc, value in zip(safe, ("4471", "98765432101", "44718823991744718823"), strict=True):
        doc.body = "Hello,\n\n" + textwrap.fill(words.format(value), 72) + "\n\nThanks\n"
        doc.save(update_fields=["body"])
        spans = [{"field": "body", "start": doc.body.index(value), "reason": "security"}]
        spans[0]["end"] = spans[0]["start"] + len(value)
        redaction.redaction_save(
            archivist=users["archivist"], persona=persona, document=doc, spans=spans
        )
        bodies.append(redaction.searcher_copies(persona=persona, documents=[doc])[0].body)
    assert bodies[0] == bodies[1] == bodies[2], bodies


def test_a_value_written_encoded_is_hidden_and_its_message_is_a_copy(mailbox, client, users):
    """Fresh-eye attacker: a bounce quoting the message's raw MIME part in base64 and an
    inline uuencoded block showed every redacted value to anyone who decoded them."""
    import base64
    import binascii

    c, persona, d, r, f = mailbox
    raw = f"Account: {ACCOUNT} / IBAN {IBAN} / Phone: {PHONE}\n".encode()
    b64 = "".join(f"> {line}\n" for line in base64.encodebytes(raw * 3).decode().split())
    uu = "begin 644 payee.txt\n" + binascii.b2a_uu(raw[:45]).decode() + "`\nend\n"
    r.body = f"Delivery failed. The original message:\n{b64}\n{uu}\n{r.body}"
    r.save(update_fields=["body"])
    _redact_as_suggested(client, users, persona, d)
    found = {x.document.pk for x in copies.copies_of(persona=persona, document=d)}
    assert r.pk in found
    [shown] = redaction.searcher_copies(persona=persona, documents=[r])
    for line in shown.body.splitlines():  # nothing left decodes to a value
        for piece in line.replace(">", " ").split():
            try:
                decoded = base64.b64decode(piece + "=" * (-len(piece) % 4)).decode("latin-1")
            except (binascii.Error, ValueError):
                continue
            assert not writings.scan([decoded], VALUES), piece
    assert "begin 644" not in shown.body or writings.MARK in shown.body
    assert not writings.scan(writings.encoded_texts(shown.body), VALUES)
