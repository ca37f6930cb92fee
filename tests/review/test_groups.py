"""Near-duplicates in the product: the archivist's queue groups by thread and near-duplicate
cluster and decides a viewed group at once (each document's decision recorded and audited);
the searcher's results collapse near-duplicates without anything hidden shaping them."""

import random
import re

import pytest
from django.urls import reverse

from annotate.entities import collection_entities_detect
from ranking.services import collection_near_duplicates, index_build
from review import releases, selectors, visibility
from review.models import AuditEvent, Decision, ReviewRequest
from tests.reviewkit import review_requests_pending, searcher_search

pytestmark = pytest.mark.lucene


def _text(seed: int, n: int = 150) -> list[str]:
    rng = random.Random(seed)
    return [f"w{rng.randrange(400)}" for _ in range(n)]


def _every(words, step, offset, marker):
    return [marker if (i - offset) % step == 0 else w for i, w in enumerate(words)]


def _set(doc, subject, body, sender="ann@corp.example", to=("bob@corp.example",)):
    doc.subject, doc.body = subject, body
    doc.from_header = sender
    doc.addresses = {"from": sender, "to": list(to)}
    doc.content_hash = f"h-{doc.pk}"
    doc.save()
    doc.attachments.all().delete()  # the index reads attachment text too


@pytest.fixture
def copies(published):
    """Two uncertain messages with unrelated subjects and people but near-duplicate bodies."""
    c, persona, docs, kinds = published
    a, b = [d for d in docs if kinds[d.pk] == "uncertain"][:2]
    other = next(d for d in docs if kinds[d.pk] == "safe")
    words = _text(3)
    _set(a, "Figures for the board", "razor " + " ".join(words))
    _set(
        b,
        "FW: numbers",
        "razor " + " ".join(_every(words, 40, 5, "fwd")),
        "cy@x.example",
        ["dee@y.example"],
    )
    _set(other, "Lunch", "razor " + " ".join(_text(11)), "eve@z.example", ["fay@z.example"])
    index_build(collection_id=c.pk, force=True)
    c.refresh_from_db()
    visibility.forget()
    return c, persona, a, b, other


def _queue(searcher, persona, docs):
    review_requests_pending(persona, searcher, [(d, "razor") for d in docs])


def test_the_queue_groups_near_duplicates_whatever_their_subject_and_people(copies, users):
    c, persona, a, b, other = copies
    index = collection_near_duplicates(collection=c)
    assert index.cluster_of(a.docid) == index.cluster_of(b.docid) is not None
    _queue(users["searcher"], persona, [a, other, b])
    groups = selectors.review_queue_threads()
    assert [[i.document.pk for i in g.items] for g in groups] == [[a.pk, b.pk], [other.pk]]
    assert groups[0].reasons == {"near-duplicate"}


def test_a_viewed_group_is_decided_document_by_document_and_audited(copies, users, login):
    c, persona, a, b, other = copies
    _queue(users["searcher"], persona, [a, b])
    archivist = login(users["archivist"])
    items = [f"{persona.pk}-{a.pk}", f"{persona.pk}-{b.pk}"]
    page = archivist.get(reverse("review-group"), {"item": items}).content.decode()
    assert "Figures for the board" in page and "FW: numbers" in page
    assert "their texts are near-duplicates" in page
    assert AuditEvent.objects.filter(action="view", user=users["archivist"]).count() == 2
    r = archivist.post(reverse("review-group-decide"), {"item": items, "kind": "withhold"})
    assert r.status_code == 302
    decisions = Decision.objects.filter(persona=persona, kind="withhold")
    assert sorted(decisions.values_list("document_id", flat=True)) == sorted([a.pk, b.pk])
    assert AuditEvent.objects.filter(action="decision", document__in=[a, b]).count() == 2
    group = AuditEvent.objects.get(action="group-decision")
    assert sorted(group.detail["documents"]) == sorted([a.pk, b.pk])
    assert not ReviewRequest.objects.filter(status="pending", document__in=[a, b]).exists()


def test_a_group_decision_skips_what_the_archivist_has_not_viewed(copies, users, login):
    c, persona, a, b, other = copies
    _queue(users["searcher"], persona, [a, b])
    archivist = login(users["archivist"])
    archivist.get(reverse("review-item", args=[persona.pk, a.pk]))  # a is viewed, b is not
    r = archivist.post(
        reverse("review-group-decide"),
        {"item": [f"{persona.pk}-{a.pk}", f"{persona.pk}-{b.pk}"], "kind": "release"},
        follow=True,
    )
    assert list(Decision.objects.values_list("document_id", flat=True)) == [a.pk]
    assert "not viewed since it was queued" in r.content.decode()
    assert ReviewRequest.objects.filter(status="pending", document=b).exists()


def test_a_group_decision_skips_what_another_archivist_decided_meanwhile(copies, users, login):
    c, persona, a, b, other = copies
    _queue(users["searcher"], persona, [a, b])
    archivist = login(users["archivist"])
    items = [f"{persona.pk}-{a.pk}", f"{persona.pk}-{b.pk}"]
    archivist.get(reverse("review-group"), {"item": items})
    releases.review_decide(archivist=users["lead"], persona=persona, document=b, kind="release")
    outcome = releases.review_decide_group(
        archivist=users["archivist"], items=[(persona, a), (persona, b)], kind="withhold"
    )
    assert [d.document_id for d in outcome.decided] == [a.pk]
    assert [doc.pk for doc, _why in outcome.skipped] == [b.pk]
    assert Decision.objects.get(document=b).kind == "release"  # the other decision stands


def test_a_bad_group_decision_records_nothing(copies, users, login):
    c, persona, a, b, other = copies
    _queue(users["searcher"], persona, [a, b])
    login(users["archivist"]).get(reverse("review-group"), {"item": [f"{persona.pk}-{a.pk}"]})
    with pytest.raises(releases.DecisionError):
        releases.review_decide_group(archivist=users["archivist"], items=[(persona, a)], kind="x")
    with pytest.raises(releases.DecisionError):
        releases.review_decide_group(archivist=users["archivist"], items=[], kind="release")
    assert not Decision.objects.exists()


def _results(client, c, query):
    html = searcher_search(client, c, query).content.decode()
    listing = html[html.index('id="results"') : html.index('id="released"')]
    return re.sub(r"/search/[^\"]*", "", listing)


def _bridged(published):
    """Visible A and B that are not near-duplicates of each other, and the text of a hidden
    H that is a near-duplicate of both (it bridges them)."""
    c, persona, docs, kinds = published
    safe = [d for d in docs if kinds[d.pk] == "safe"]
    hidden = next(d for d in docs if kinds[d.pk] == "sensitive")
    a, b = safe[:2]
    words = _text(5, 200)
    h = _every(words, 25, 0, "hh")
    _set(a, "Alpha", "zebra " + " ".join(words))
    _set(b, "Beta", "zebra " + " ".join(_every(h, 25, 12, "bb")))
    return c, a, b, hidden, "linux " + " ".join(h)


def test_near_duplicates_collapse_under_the_best_ranked_in_the_searchers_results(
    published, users, login
):
    c, persona, docs, kinds = published
    safe = [d for d in docs if kinds[d.pk] == "safe"]
    words = _text(9)
    _set(safe[0], "Plan", "zebra zebra " + " ".join(words))
    _set(safe[1], "Re: Plan", "zebra " + " ".join(_every(words, 50, 3, "ok")))
    index_build(collection_id=c.pk, force=True)
    c.refresh_from_db()
    visibility.forget()
    html = _results(login(users["searcher"]), c, "zebra")
    assert "1 near-duplicate of this message" in html
    assert html.index("Plan") < html.index("near-duplicate") < html.index("Re: Plan")


def test_a_hidden_near_duplicate_does_not_change_what_a_searcher_sees(published, users, login):
    """Attack: the hidden H resembles both visible A and B (A and B not each other). If the
    results were collapsed by the collection's clusters, H would fold B under A; collapse
    reads A's and B's signatures only, so the page is the same with or without H."""
    c, a, b, hidden, h_text = _bridged(published)
    searcher = login(users["searcher"])
    index_build(collection_id=c.pk, force=True)
    c.refresh_from_db()
    visibility.forget()
    without = _results(searcher, c, "zebra")
    _set(hidden, hidden.subject, h_text)
    index_build(collection_id=c.pk, force=True)
    c.refresh_from_db()
    visibility.forget()
    index = collection_near_duplicates(collection=c)
    # The attack's premise holds: H joins A and B in one cluster, A and B are not close.
    assert index.cluster_of(a.docid) == index.cluster_of(b.docid) == index.cluster_of(hidden.docid)
    assert index.similarity_between(a.docid, b.docid) < 0.7
    with_hidden = _results(searcher, c, "zebra")
    assert with_hidden == without
    assert "Alpha" in without and "Beta" in without and "near-duplicate" not in without


def test_the_group_page_highlights_the_entities_as_the_review_page_does(copies, users, login):
    """Fresh-eye finding: the group page showed the bodies without the entity highlights."""
    c, persona, a, b, other = copies
    a.body += "\nCall me on 713-853-1234 about it."
    a.save(update_fields=["body"])
    collection_entities_detect(collection_id=c.pk)
    _queue(users["searcher"], persona, [a, b])
    items = [f"{persona.pk}-{a.pk}", f"{persona.pk}-{b.pk}"]
    page = login(users["archivist"]).get(reverse("review-group"), {"item": items}).content
    page = page.decode()
    assert 'class="ent ent-phone"' in page and 'class="entity-legend"' in page
