"""What a searcher is told about review says nothing about hidden documents (G7).

An attacker's view: two worlds that differ only in documents the searcher cannot see (one
withheld by an archivist, others waiting for review for another searcher) must give the
searcher byte-identical pages, CSRF tokens and the ids of their own searches aside. A notice
that counted what is pending would tell the worlds apart; the second test shows the
comparison catches exactly that."""

import re
from types import SimpleNamespace

import pytest
from django.db import transaction
from django.urls import reverse

from annotate import roles
from review import releases, selectors, visibility
from review.models import ReviewRequest, SearchLog
from tests.reviewkit import searcher_search

pytestmark = pytest.mark.lucene

QUERIES = ("razor spam list", "linux", "zzzz nothing matches")


def _normalise(body: bytes) -> bytes:
    """Drop what differs between any two visits: the CSRF token (in the form and in the
    htmx headers), the ids of the searcher's own searches in their URLs, and the seconds
    their own released document waited (timing of this test, not of hidden documents)."""
    body = re.sub(rb'name="csrfmiddlewaretoken" value="[^"]+"', b"CSRF", body)
    body = re.sub(rb'"X-CSRFToken": "[^"]+"', b"CSRF", body)
    body = re.sub(rb"/(results|released)/\d+/", rb"/\1/ID/", body)
    return re.sub(rb"released after review \(\d+ s\)", b"released after review (N s)", body)


def _visit(client, searcher, c, archivist, persona, release) -> tuple[list, int]:
    """Everything the searcher does and sees on a first visit: the home page, the list of
    collections, the search form, three searches (one that matches hidden documents only),
    and, once the archivist has released ``release`` (asked about for the first search),
    the results page again and its released list. Returns the pages and how many requests
    were pending before the release (for the test's own check)."""
    pages = []
    for name, args in (("home", []), ("searcher-home", []), ("searcher-search", [c.slug])):
        r = client.get(reverse(name, args=args))
        assert r.status_code == 200
        pages.append((name, r.content))
    for q in QUERIES:
        r = searcher_search(client, c, q)
        assert r.status_code == 200
        pages.append((f"search {q!r}", r.content))
    first = SearchLog.objects.filter(searcher=searcher, query=QUERIES[0]).get()
    pending = ReviewRequest.objects.filter(status="pending").count()
    assert ReviewRequest.objects.filter(search=first, document=release).exists()
    releases.review_decide(archivist=archivist, persona=persona, document=release, kind="release")
    for name, url in (
        ("results", reverse("searcher-results", args=[c.slug, first.pk])),
        ("released", reverse("searcher-released", args=[c.slug, first.pk])),
    ):
        r = client.get(url)
        assert r.status_code == 200
        pages.append((name, r.content))
    assert b"released after review" in pages[-1][1]  # the pages compared are not empty
    assert b"How review works" in pages[-2][1]
    return pages, pending


def _world(published, users, login, make_user, *, hidden_differences: bool):
    """Run the visit in a world, then undo it (a savepoint: nothing is deleted, so the
    append-only audit log is untouched). ``hidden_differences``: an archivist withheld an
    uncertain document that the searcher's queries match, and another searcher's searches
    wait on uncertain ones."""
    c, persona, docs, kinds = published
    uncertain = sorted(d.pk for d in docs if kinds[d.pk] == "uncertain")
    assert len(uncertain) >= 2
    release, withhold = (next(d for d in docs if d.pk == pk) for pk in uncertain[:2])
    visibility.forget()
    with transaction.atomic():
        point = transaction.savepoint()
        if hidden_differences:
            releases.review_decide(
                archivist=users["archivist"], persona=persona, document=withhold, kind="withhold"
            )
            other = login(make_user("other-searcher", roles.SEARCHER))
            for q in ("razor", "spam", "mailing list"):
                searcher_search(other, c, q)
        client = login(users["searcher"])
        pages, pending = _visit(client, users["searcher"], c, users["archivist"], persona, release)
        transaction.savepoint_rollback(point)
    visibility.forget()
    return pages, pending


def _compare(published, users, login, make_user):
    plain, pending_plain = _world(published, users, login, make_user, hidden_differences=False)
    hidden, pending_hidden = _world(published, users, login, make_user, hidden_differences=True)
    assert pending_plain != pending_hidden  # the worlds differ in what waits for review
    return [
        name
        for (name, a), (_n, b) in zip(plain, hidden, strict=True)
        if _normalise(a) != _normalise(b)
    ]


def test_hidden_documents_change_nothing_a_searcher_sees(published, users, login, make_user):
    differing = _compare(published, users, login, make_user)
    assert differing == []


def test_a_notice_that_counted_pending_documents_would_be_caught(
    published, users, login, make_user, monkeypatch
):
    def leaky(*, publication):
        waiting = ReviewRequest.objects.filter(status="pending").count()
        return SimpleNamespace(wait=f"within a day ({waiting} documents are waiting)")

    monkeypatch.setattr(selectors, "search_notice", leaky)
    differing = _compare(published, users, login, make_user)
    # every page with the notice tells the worlds apart
    assert {"searcher-home", "searcher-search", "results"} <= set(differing)
    assert any(name.startswith("search ") for name in differing)


def test_with_no_classifier_a_first_search_shows_what_archivists_released(
    published, users, login, make_user
):
    from ranking.models import SensitivityModel

    c, persona, docs, kinds = published
    SensitivityModel.objects.all().delete()  # no classifier: only releases are visible
    visibility.forget()
    earlier = login(make_user("earlier-searcher", roles.SEARCHER))
    page = searcher_search(earlier, c, "razor").content.decode()
    assert 'id="results"' not in page and "How review works" in page
    asked = ReviewRequest.objects.order_by("rank", "document_id").first()
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=asked.document, kind="release"
    )
    # a newcomer's first search shows it at once, with the same notice
    page = searcher_search(login(users["searcher"]), c, "razor").content.decode()
    assert reverse("searcher-document", args=[c.slug, asked.document_id]) in page
    assert page.count("<li data-doc=") == 1 and "How review works" in page
