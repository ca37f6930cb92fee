"""Protected search and the archivist's queue: what a searcher sees (G7), review requests,
decisions, release without reload, withholding that expires, the append-only audit (G9)."""

from datetime import timedelta

import pytest
from django.db import DatabaseError, transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from ranking.classifier import sensitivity_labels
from review import releases, services
from review.models import AuditEvent, Decision, Publication, ReviewRequest, SearchLog
from tests.reviewkit import searcher_search

pytestmark = pytest.mark.lucene


def test_a_search_shows_only_safe_documents_and_asks_about_the_uncertain(published, login, users):
    c, persona, docs, kinds = published
    searcher = login(users["searcher"])
    r = searcher_search(searcher, c, "linux razor spam list")
    assert r.status_code == 200
    html = r.content.decode()
    search = SearchLog.objects.get()
    assert search.shown and all(kinds[pk] == "safe" for pk in search.shown)
    for d in docs:
        if kinds[d.pk] != "safe":
            # Nothing derived from a sensitive or unreviewed document: not its link, id or subject.
            assert reverse("searcher-document", args=[c.slug, d.pk]) not in html
            assert d.docid not in html
    requests = ReviewRequest.objects.filter(search=search)
    assert requests.exists() and {kinds[r.document_id] for r in requests} == {"uncertain"}
    assert "More results may follow after review" in html
    event = AuditEvent.objects.get(action="search")
    assert event.detail["shown"] == search.shown and event.user == users["searcher"]
    # A document never shown to this searcher is not there for them, whatever its id.
    hidden = next(d for d in docs if kinds[d.pk] == "sensitive")
    assert searcher.get(reverse("searcher-document", args=[c.slug, hidden.pk])).status_code == 404


def test_release_reaches_the_waiting_searcher_and_withholding_never_does(published, login, users):
    c, persona, docs, kinds = published
    searcher = login(users["searcher"])
    searcher_search(searcher, c, "razor")
    search = SearchLog.objects.get()
    pending = list(ReviewRequest.objects.filter(search=search).order_by("rank"))
    assert len(pending) >= 2
    keep, hold = pending[0].document, pending[1].document
    archivist = login(users["archivist"])
    queue = archivist.get(reverse("review-queue"))
    assert keep.subject[:30].encode() in queue.content
    page = archivist.get(reverse("review-item", args=[persona.pk, keep.pk]))
    assert page.status_code == 200 and b"razor" in page.content.lower()  # exposing query
    searcher_search(login(users["searcher"]), c, "razor")  # the same query again
    archivist = login(users["archivist"])
    page = archivist.get(reverse("review-item", args=[persona.pk, keep.pk])).content.decode()
    assert page.count("“razor”") == 1  # each exposing query once, however often it was asked
    r = archivist.post(
        reverse("review-decide", args=[persona.pk, keep.pk]), {"kind": "release"}, follow=True
    )
    # the confirmation names the document decided on, not the next one the page shows
    said = escape(f"Released “{keep.subject}” ({keep.docid}) for {persona.name}.")
    assert said in r.content.decode()
    archivist.post(
        reverse("review-decide", args=[persona.pk, hold.pk]), {"kind": "withhold", "note": "x"}
    )
    searcher = login(users["searcher"])
    released = searcher.get(reverse("searcher-released", args=[c.slug, search.pk]))
    body = released.content.decode()
    assert reverse("searcher-document", args=[c.slug, keep.pk]) in body
    assert "released after review" in body
    assert reverse("searcher-document", args=[c.slug, hold.pk]) not in body
    assert hold.docid not in body
    assert searcher.get(reverse("searcher-document", args=[c.slug, keep.pk])).status_code == 200
    assert searcher.get(reverse("searcher-document", args=[c.slug, hold.pk])).status_code == 404
    # Asked again: the released one is shown at once, the withheld one is not asked about.
    searcher_search(searcher, c, "razor")
    again = SearchLog.objects.latest("created_at")
    assert keep.pk in again.shown and hold.pk not in again.shown
    assert not ReviewRequest.objects.filter(search=again, document__in=[keep, hold]).exists()
    actions = list(AuditEvent.objects.values_list("action", flat=True))
    assert actions.count("decision") == 2 and "shown-after-review" in actions
    # the archivist viewed the released one twice and the next one (after the decision) once;
    # the searcher viewed the released one once
    assert actions.count("view") == 4


def test_a_withholding_that_expired_is_asked_about_again(published, login, users):
    c, persona, docs, kinds = published
    doc = next(d for d in docs if kinds[d.pk] == "uncertain")
    Decision.objects.create(
        persona=persona,
        document=doc,
        kind="withhold",
        until=timezone.localdate() - timedelta(days=1),
        decided_by=users["archivist"],
        decided_at=timezone.now() - timedelta(days=30),
    )
    searcher_search(login(users["searcher"]), c, doc.subject)
    assert ReviewRequest.objects.filter(document=doc).exists()
    with pytest.raises(releases.DecisionError, match="must end after today"):
        releases.review_decide(
            archivist=users["archivist"],
            persona=persona,
            document=doc,
            kind="withhold",
            until=timezone.localdate(),
        )


def test_the_audit_log_is_append_only(published, users):
    c, persona, docs, kinds = published
    with transaction.atomic():
        event = services.audit(user=users["searcher"], action="search", collection=c, q="x")
    for change in (
        lambda: AuditEvent.objects.filter(pk=event.pk).update(action="nothing"),
        lambda: AuditEvent.objects.filter(pk=event.pk).delete(),
    ):
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            change()
    assert AuditEvent.objects.get(pk=event.pk).action == "search"


def test_decisions_become_labels_for_the_classifier(published, users):
    c, persona, docs, kinds = published
    withheld, released = docs[0], docs[1]
    for doc, kind in ((withheld, "withhold"), (released, "release")):
        releases.review_decide(
            archivist=users["archivist"], persona=persona, document=doc, kind=kind
        )
    labels = sensitivity_labels(collection=c, persona=persona, source="decisions")
    assert labels == {withheld.pk: 1, released.pk: 0}


def test_one_decision_in_force_for_routing_labels_reopening_and_the_decisions_page(
    published, users
):
    """An expired withholding holds nowhere: not in routing, not as a label, not on the
    decisions page, and there is nothing to reopen; a live one holds everywhere."""
    from review import selectors, visibility

    c, persona, docs, kinds = published
    expired, live = docs[0], docs[1]
    for doc, until in ((expired, -1), (live, 30)):
        Decision.objects.create(
            persona=persona,
            document=doc,
            kind="withhold",
            until=timezone.localdate() + timedelta(days=until),
            decided_by=users["archivist"],
            decided_at=timezone.now() - timedelta(days=60),
        )
    publication = Publication.objects.get(collection=c)
    _released, withheld = visibility.decided(publication=publication, today=timezone.localdate())
    assert live.pk in withheld and expired.pk not in withheld
    labels = sensitivity_labels(collection=c, persona=persona, source="decisions")
    assert labels.get(live.pk) == 1 and expired.pk not in labels
    page = {d.document_id for d in selectors.decisions_in_force()}
    assert live.pk in page and expired.pk not in page
    with pytest.raises(releases.DecisionError, match="no decision in force"):
        releases.review_reopen(lead=users["lead"], persona=persona, document=expired)
    releases.review_reopen(lead=users["lead"], persona=persona, document=live)
    _released, withheld = visibility.decided(publication=publication, today=timezone.localdate())
    assert live.pk not in withheld


def test_roles_keep_to_their_pages(published, login, users):
    c, persona, docs, kinds = published
    for role, url in (
        ("annotator", reverse("searcher-search", args=[c.slug])),
        ("archivist", reverse("searcher-search", args=[c.slug])),
        ("searcher", reverse("review-queue")),
        ("annotator", reverse("review-queue")),
    ):
        assert login(users[role]).get(url).status_code in (403, 404), (role, url)
    Publication.objects.filter(collection=c).update(published=False)
    assert (
        login(users["searcher"]).get(reverse("searcher-search", args=[c.slug])).status_code == 404
    )


def test_leads_browse_and_export_the_audit_log(published, login, users):
    c, persona, docs, kinds = published
    searcher_search(login(users["searcher"]), c, "spam")
    lead = login(users["lead"])
    page = lead.get(reverse("audit-log"), {"action": "search"})
    assert page.status_code == 200 and b"search" in page.content
    export = lead.get(reverse("audit-log"), {"format": "csv"})
    rows = b"".join(export.streaming_content).decode().splitlines()
    assert rows[0] == "at,action,user,collection,document,detail"
    assert len(rows) == 1 + AuditEvent.objects.count() and ",search,search," in rows[1]
    for role in ("searcher", "archivist", "annotator"):
        assert login(users[role]).get(reverse("audit-log")).status_code in (403, 404)


def test_the_searchers_home_leads_to_search_instead_of_saying_nothing_is_published(
    published, login, users
):
    # The home page told a searcher "No collection has been published for searching yet"
    # whatever was published (seen on make demo, where one is).
    html = login(users["searcher"]).get(reverse("home")).content.decode()
    assert "No collection has been published" not in html
    assert f'href="{reverse("searcher-home")}"' in html
    listing = login(users["searcher"]).get(reverse("searcher-home")).content.decode()
    assert reverse("searcher-search", args=[published[0].slug]) in listing
