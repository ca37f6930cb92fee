"""The archivist's queue order, routing by the n most uncertain, per-document feature
contributions on the review page, and the loop's measures per search session."""

from datetime import timedelta

import joblib
import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone

from annotate.models import Document
from core import measures
from ranking import classifier
from ranking.models import SensitivityModel
from review import releases, selectors
from review.models import AuditEvent, Publication, ReviewRequest, SearchLog
from tests.reviewkit import searcher_search

pytestmark = pytest.mark.lucene


def _search(client, c, q):
    searcher_search(client, c, q)
    return SearchLog.objects.latest("created_at")


def test_the_queue_follows_the_archivists_chosen_order(published, login, users):
    c, persona, docs, kinds = published
    searcher = login(users["searcher"])
    first, second = _search(searcher, c, "zzz one"), _search(searcher, c, "zzz two")
    t0 = timezone.now() - timedelta(minutes=10)
    a, b, cc = docs[:3]
    for search, doc, p, minute in (
        (first, a, 0.75, 0),  # waiting longest, least uncertain
        (first, b, 0.6, 1),
        (first, cc, 0.5, 2),  # most uncertain
        (second, b, 0.6, 3),  # a second search waiting on b
    ):
        ReviewRequest.objects.create(
            search=search,
            document=doc,
            persona=persona,
            rank=0,
            p_sensitive=p,
            requested_at=t0 + timedelta(minutes=minute),
        )

    def order(name):
        return [r["document_id"] for r in selectors.review_queue(order=name)]

    assert order("waiting") == [a.pk, b.pk, cc.pk]  # one row per document
    assert order("uncertain") == [cc.pk, b.pk, a.pk]
    assert order("searches") == [b.pk, a.pk, cc.pk]
    assert selectors.review_queue(order="searches")[0]["searches"] == 2
    archivist = login(users["archivist"])
    page = archivist.get(reverse("review-queue"), {"order": "uncertain"})
    assert page.status_code == 200 and b'value="uncertain" selected' in page.content
    # The choice sticks in the session and decides which item opens after a decision.
    response = archivist.post(
        reverse("review-decide", args=[persona.pk, cc.pk]), {"kind": "release"}
    )
    assert response.url == reverse("review-item", args=[persona.pk, b.pk])
    archivist.get(reverse("review-queue"), {"order": "waiting"})
    response = archivist.post(
        reverse("review-decide", args=[persona.pk, b.pk]), {"kind": "release"}
    )
    assert response.url == reverse("review-item", args=[persona.pk, a.pk])


def test_the_queue_reads_a_fixed_number_of_queries(
    published, login, users, django_assert_max_num_queries
):
    c, persona, docs, kinds = published
    SensitivityModel.objects.all().delete()  # no classifier: every result waits for review
    searcher = login(users["searcher"])
    for q in ("razor", "spam", "razor spam list", "mailing list"):
        _search(searcher, c, q)
    assert ReviewRequest.objects.values("document").distinct().count() >= 3
    with django_assert_max_num_queries(2):
        rows = selectors.review_queue()
        assert all(r["request"].document.subject is not None for r in rows)


def test_most_uncertain_caps_the_requests_a_search_makes(published, login, users):
    c, persona, docs, kinds = published
    SensitivityModel.objects.all().delete()  # no classifier: every result is uncertain
    searcher = login(users["searcher"])
    assert ReviewRequest.objects.filter(search=_search(searcher, c, "spam list")).count() >= 3
    Publication.objects.filter(collection=c).update(most_uncertain=2)
    capped = _search(searcher, c, "spam list")
    assert ReviewRequest.objects.filter(search=capped).count() == 2
    assert capped.shown == []  # the held-back ones are not shown either


def test_the_review_page_shows_what_pushes_this_document_in_words(published, login, users):
    c, persona, docs, kinds = published
    model = SensitivityModel.objects.get(collection=c, persona=persona)
    stored = joblib.load(model.path)
    n = len(stored["docids"])
    index = np.full((n, 4), -1, dtype=np.int32)
    value = np.zeros((n, 4), dtype=np.float32)
    index[0] = [1, -1, 0, 2]
    value[0] = [0.8, 0, -0.3, -0.5]
    names = ["body:payroll", "meta:weekend", "meta:reply"]
    stored.update(
        featurizer=FeatureNames(names),
        # weights: payroll away from sensitive; weekend and reply towards
        model=LinearModel([-0.6, 2.0, 1.0]),
        contribution_index=index,
        contribution_value=value,
    )
    joblib.dump(stored, model.path)
    classifier._stored.cache_clear()
    doc = next(d for d in docs if d.docid == stored["docids"][0])
    page = login(users["archivist"]).get(reverse("review-item", args=[persona.pk, doc.pk]))
    html = page.content.decode()
    for raw in names:
        assert raw not in html  # no feature ids, only words
    weekend, payroll = "sent at the weekend", "the word “payroll” in the body"
    # reply has a positive weight and pushes away: this message is below the mean, no reply
    assert weekend in html and "+0.80" in html and payroll in html and "-0.30" in html
    assert "not a reply" in html and "-0.50" in html
    assert html.index("Towards sensitive") < html.index(weekend) < html.index(payroll)
    assert html.index(payroll) < html.index("not a reply")


class FeatureNames:
    def __init__(self, names):
        self.names = names


class LinearModel:
    def __init__(self, weights):
        self.coef_ = np.array([weights])


def test_the_loop_report_measures_each_search_session(published, login, users):
    c, persona, docs, kinds = published
    searcher = login(users["searcher"])
    search = _search(searcher, c, "razor spam list")
    pending = list(ReviewRequest.objects.filter(search=search).order_by("rank"))
    assert search.shown and len(pending) >= 2
    keep, hold = pending[0].document, pending[1].document
    for doc, kind in ((keep, "release"), (hold, "withhold")):
        releases.review_decide(
            archivist=users["archivist"], persona=persona, document=doc, kind=kind
        )
    opened = search.shown[0]
    assert searcher.get(reverse("searcher-document", args=[c.slug, opened])).status_code == 200
    rows, totals = selectors.loop_sessions(collection=c, k=10, effort=0.5)
    (row,) = rows
    assert (row.shown, row.requests, row.reviewed, row.released) == (
        len(search.shown),
        len(pending),
        2,
        1,
    )
    assert row.pending == len(pending) - 2 and row.sensitive_shown == 0
    # No topic has this title: nothing says what was relevant, so the search is counted and
    # not measured (a release or an open is what the loop did, not evidence).
    assert row.relevance_from == "none" and row.o_cs_dcg is None and len(row.waited) == 1
    assert totals["sessions"] == 1 and totals["measured"] == 0 and totals["o_cs_dcg_mean"] is None
    # With qrels for the topic whose title is the query, it is measured.
    from annotate.models import ReferenceRelevance, Topic

    topic = Topic.objects.create(collection=c, number="9", title="Razor spam LIST")
    for pk in (opened, keep.pk):
        ReferenceRelevance.objects.create(topic=topic, document_id=pk, grade=1)
    (row,), totals = selectors.loop_sessions(collection=c, k=10, effort=0.5)
    assert row.relevance_from == "qrels of topic 9"
    expected = measures.o_cs_dcg(
        list(search.shown),
        [keep.pk, hold.pk],
        {opened: 1, keep.pk: 1},
        {hold.pk: True},
        effort=0.5,
        k=10,
        released={keep.pk},
    )
    assert row.o_cs_dcg == pytest.approx(expected) and totals["measured"] == 1
    assert totals["sensitive_shown"] == 0
    # A released document later withheld is charged as a sensitive document shown.
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=keep, kind="withhold"
    )
    (after,), totals = selectors.loop_sessions(collection=c, k=10, effort=0.5)
    assert totals["sensitive_shown"] == 1 and after.o_cs_dcg < row.o_cs_dcg - 11
    # A shown document withheld afterwards counts as a sensitive document shown.
    releases.review_decide(
        archivist=users["archivist"],
        persona=persona,
        document=Document.objects.get(pk=opened),
        kind="withhold",
    )
    assert selectors.loop_sessions(collection=c)[1]["sensitive_shown"] == 2
    lead = login(users["lead"])
    assert reverse("review-loop", args=[c.slug]).encode() in lead.get(reverse("audit-log")).content
    page = lead.get(reverse("review-loop", args=[c.slug]), {"k": "5", "effort": "x"})
    assert page.status_code == 200 and b"O-CS-DCG@5" in page.content
    csv = lead.get(reverse("review-loop", args=[c.slug]), {"format": "csv"}).content.decode()
    assert csv.splitlines()[0].startswith("search,at,searcher,query") and ",razor spam list," in csv
    for role in ("searcher", "archivist", "annotator"):
        assert login(users[role]).get(reverse("review-loop", args=[c.slug])).status_code in (
            403,
            404,
        )


def test_a_query_that_is_a_topic_title_is_measured_with_its_qrels(published, login, users):
    from annotate.models import ReferenceRelevance, Topic

    c, persona, docs, kinds = published
    topic = Topic.objects.create(collection=c, number="7", title="Razor  spam")
    searcher = login(users["searcher"])
    search = _search(searcher, c, "razor spam")
    relevant = search.shown[0]
    ReferenceRelevance.objects.create(topic=topic, document_id=relevant, grade=2)
    (row,), _totals = selectors.loop_sessions(collection=c, effort=0.0)
    assert row.relevance_from == "qrels of topic 7"
    assert row.o_cs_dcg == pytest.approx(3.0)  # grade 2 at rank 0, nothing reviewed yet


def test_earlier_decisions_on_near_duplicates_are_shown(published, login, users):
    from ranking.services import index_build, near_duplicates

    c, persona, docs, kinds = published
    original, copy = docs[2], docs[3]
    copy.subject, copy.body = original.subject, original.body + "\nForwarded with one more line."
    copy.content_hash = "different"
    copy.save()
    index_build(collection_id=c.pk, force=True)
    similar = dict(near_duplicates(collection=c, docid=copy.docid))
    assert similar.get(original.docid, 0) >= 0.8 and copy.docid not in similar
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=original, kind="withhold"
    )
    page = login(users["archivist"]).get(reverse("review-item", args=[persona.pk, copy.pk]))
    html = page.content.decode()
    assert "Withhold by arch" in html and f"similarity {similar[original.docid]:.2f}" in html


def test_a_lead_reopens_a_decision_and_the_document_is_asked_about_again(published, login, users):
    c, persona, docs, kinds = published
    searcher = login(users["searcher"])
    first = _search(searcher, c, "razor")
    doc = ReviewRequest.objects.filter(search=first).order_by("rank").first().document
    releases.review_decide(
        archivist=users["archivist"],
        persona=persona,
        document=doc,
        kind="withhold",
        note="names a colleague's illness",
    )
    again = _search(searcher, c, "razor")
    assert not ReviewRequest.objects.filter(search=again, document=doc).exists()
    lead = login(users["lead"])
    # The audit log says why the archivist decided (the note).
    log = lead.get(reverse("audit-log")).content.decode()
    assert "“names a colleague&#x27;s illness”" in log
    listing = lead.get(reverse("review-decisions"), {"kind": "withhold"}).content.decode()
    assert reverse("review-reopen", args=[persona.pk, doc.pk]) in listing
    assert '<input type="hidden" name="kind" value="withhold">' in listing
    r = lead.post(
        reverse("review-reopen", args=[persona.pk, doc.pk]),
        {"note": "too strict", "kind": "withhold"},
    )
    # Back to the list as it was filtered.
    assert r.status_code == 302 and r["Location"] == reverse("review-decisions") + "?kind=withhold"
    assert AuditEvent.objects.filter(action="reopen", document=doc).exists()
    assert (
        reverse("review-reopen", args=[persona.pk, doc.pk])
        not in lead.get(reverse("review-decisions")).content.decode()
    )
    third = _search(login(users["searcher"]), c, "razor")
    assert ReviewRequest.objects.filter(search=third, document=doc).exists()
    with pytest.raises(releases.DecisionError, match="no decision in force"):
        releases.review_reopen(lead=users["lead"], persona=persona, document=doc)
    for role in ("searcher", "archivist", "annotator"):
        client = login(users[role])
        if role != "archivist":
            assert client.get(reverse("review-decisions")).status_code in (403, 404)
        assert client.post(reverse("review-reopen", args=[persona.pk, doc.pk])).status_code in (
            403,
            404,
        )
    # An archivist finds the decisions in force (a wrong one of theirs, to ask a lead to
    # reopen) but is offered no Reopen, and no lead-only pages.
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=doc, kind="withhold"
    )
    archivist = login(users["archivist"])
    listing = archivist.get(reverse("review-decisions")).content.decode()
    assert doc.subject[:30] in listing and ">arch<" in listing
    assert reverse("review-reopen", args=[persona.pk, doc.pk]) not in listing
    assert reverse("review-redactions") not in listing and "ask one" in listing
    assert reverse("review-decisions") in archivist.get(reverse("home")).content.decode()


def test_the_loop_report_says_of_how_many_searches_its_newest_are(published, login, users):
    c, persona, docs, kinds = published
    searcher = login(users["searcher"])
    _search(searcher, c, "razor spam list")
    _search(searcher, c, "linux kernel")
    rows, totals = selectors.loop_sessions(collection=c, limit=1)
    assert len(rows) == totals["sessions"] == 1 and totals["searches_all"] == 2
    page = login(users["lead"]).get(reverse("review-loop", args=[c.slug])).content.decode()
    assert "<dd>2</dd>" in page.split("<dt>Searches</dt>")[1][:12]  # all 2 measured: no note
    assert "(the newest" not in page
