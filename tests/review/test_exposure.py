"""Exposing queries in the product: asked for by the review page or a lead, computed by the
worker once per (document, persona, index version), equal to brute force through the
searcher's ranking, and out of a searcher's reach."""

import pytest
from django.urls import reverse

from core import exposing_queries, lucene
from review import exposure, visibility
from review.models import AuditEvent, Exposure, Publication, ReviewRequest, SearchLog
from tests.reviewkit import searcher_search

pytestmark = pytest.mark.lucene


def _doc(docs, kinds, kind):
    return next(d for d in docs if kinds[d.pk] == kind)


def _brute_force(doc, publication):
    """Every candidate query of the index version through the searcher's ranking."""
    cset = exposure.candidates_build(collection=doc.collection)
    view = visibility.view(publication)
    ranker = exposing_queries.ExposureRanker(
        view.index, view.postings, doc.docid, k=publication.review_k
    )
    seen, out = set(), []
    for e in exposing_queries.brute_force(ranker, cset.candidates):
        if e.text.lower() not in seen:
            seen.add(e.text.lower())
            out.append((e.text, e.rank))
    return sorted(out), ranker.visible


def test_the_review_page_asks_the_worker_and_shows_the_queries_when_ready(published, login, users):
    c, persona, docs, kinds = published
    doc = _doc(docs, kinds, "uncertain")
    archivist = login(users["archivist"])
    url = reverse("review-item", args=[persona.pk, doc.pk])
    panel = reverse("review-exposure", args=[persona.pk, doc.pk])
    html = archivist.get(url).content.decode()
    assert not Exposure.objects.exists()  # a GET writes nothing but the audit row
    assert f'hx-post="{panel}" hx-trigger="load"' in html  # the page asks on load
    html = archivist.post(panel, {"back": "review"}, HTTP_HX_REQUEST="true").content.decode()
    row = Exposure.objects.get(document=doc, persona=persona)
    assert row.status == Exposure.Status.QUEUED and row.index_version == c.indexed_version
    assert row.queries == []  # nothing computed on the request
    assert "Finding the queries" in html and 'hx-trigger="every 2s"' in html
    assert 'hx-trigger="load"' not in archivist.get(url).content.decode()
    archivist.post(panel, HTTP_HX_REQUEST="true")
    assert Exposure.objects.filter(document=doc).count() == 1  # asked once per version

    exposure.exposure_compute(exposure_id=row.pk)  # what the worker does
    row.refresh_from_db()
    assert row.status == Exposure.Status.READY and row.queries
    html = archivist.get(panel).content.decode()
    assert "every 2s" not in html  # done: the page stops polling
    first = row.queries[0]
    assert f"“{first['text']}”" in html and f"<strong>#{first['rank'] + 1}</strong>" in html
    assert "Would be exposed, if released, at #1 by" in html  # an uncertain document is hidden
    assert '<th scope="col">Would rank if released</th>' in html


def test_exposing_queries_and_ranks_equal_brute_force_for_shown_and_hidden_documents(
    published, users
):
    c, persona, docs, kinds = published
    publication = Publication.objects.get(collection=c)
    assert not SearchLog.objects.exists()  # these documents were never searched for
    for kind in ("safe", "sensitive", "uncertain"):
        doc = _doc(docs, kinds, kind)
        row = exposure.exposure_request(user=users["archivist"], document=doc, persona=persona)
        row = exposure.exposure_compute(exposure_id=row.pk)
        truth, visible = _brute_force(doc, publication)
        assert row.status == Exposure.Status.READY, row.error
        assert row.visible is visible is (kind == "safe")
        assert sorted((q["text"], q["rank"]) for q in row.queries) == truth
        assert truth, kind
        # 248 candidates over a few dozen messages: verified whole, so the count is exact
        assert row.summary["verified"] == row.summary["candidates"] and row.summary["complete"]


def test_the_deepening_reverse_search_claims_only_true_ranks_and_says_when_it_is_exact(
    published, users, monkeypatch
):
    """The path of a large collection (too many candidates to verify whole), with the real
    Lucene reverse search: every claim is brute force's, and 'exact' means every one."""
    monkeypatch.setattr(exposing_queries, "VERIFY_ALL_WORK", 0)
    monkeypatch.setattr(exposure, "REVERSE_DEPTH", 8)
    c, persona, docs, kinds = published
    publication = Publication.objects.get(collection=c)
    for kind in ("safe", "sensitive", "uncertain"):
        doc = _doc(docs, kinds, kind)
        row = exposure.exposure_request(user=users["archivist"], document=doc, persona=persona)
        row = exposure.exposure_compute(exposure_id=row.pk)
        truth, _visible = _brute_force(doc, publication)
        got = sorted((q["text"], q["rank"]) for q in row.queries)
        assert set(got) <= set(truth) and got, kind
        assert row.summary["retrieved"] > 8  # it deepened
        if row.summary["complete"]:
            assert got == truth, kind


def test_computing_exposure_shows_a_searcher_nothing_and_logs_no_search(published, login, users):
    c, persona, docs, kinds = published
    searcher = login(users["searcher"])
    searcher_search(searcher, c, "razor spam")
    before = list(SearchLog.objects.values_list("shown", flat=True))
    requests = ReviewRequest.objects.count()
    for d in docs[:5]:
        row = exposure.exposure_request(user=users["lead"], document=d, persona=persona)
        exposure.exposure_compute(exposure_id=row.pk)
    assert list(SearchLog.objects.values_list("shown", flat=True)) == before
    assert ReviewRequest.objects.count() == requests
    assert not AuditEvent.objects.filter(action="shown-after-review").exists()


@pytest.mark.parametrize("role", ["searcher", "annotator", "norole"])
def test_only_archivists_and_leads_reach_exposure(published, client, users, role):
    c, persona, docs, kinds = published
    doc = _doc(docs, kinds, "sensitive")
    client.force_login(users[role])
    for url in (
        reverse("review-exposure", args=[persona.pk, doc.pk]),
        reverse("review-exposure-document", args=[doc.pk]),
    ):
        assert client.get(url).status_code == 404
        assert client.post(url, {"again": "1"}).status_code == 404
    assert client.get(reverse("document-detail", args=[c.slug, doc.pk])).status_code == 404
    assert not Exposure.objects.exists()
    client.logout()
    response = client.get(reverse("review-exposure", args=[persona.pk, doc.pk]))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_a_lead_asks_from_the_documents_page_and_again_after_new_searches(published, login, users):
    c, persona, docs, kinds = published
    doc = _doc(docs, kinds, "uncertain")
    lead = login(users["lead"])
    page = lead.get(reverse("document-detail", args=[c.slug, doc.pk])).content.decode()
    panel_url = reverse("review-exposure-document", args=[doc.pk])
    assert panel_url in page
    assert "Find exposing queries" in lead.get(panel_url).content.decode()
    assert not Exposure.objects.exists()  # the lead's page only offers it
    response = lead.post(panel_url, {"back": "document"})
    assert response.status_code == 302
    assert response["Location"] == reverse("document-detail", args=[c.slug, doc.pk])
    row = Exposure.objects.get(document=doc)
    assert row.requested_by == users["lead"]
    assert AuditEvent.objects.filter(action="exposure-request", document=doc).exists()
    exposure.exposure_compute(exposure_id=row.pk)
    exposure.exposure_compute(exposure_id=row.pk)  # a task run twice changes nothing
    assert Exposure.objects.get(pk=row.pk).status == Exposure.Status.READY

    # A query logged after the candidates were built is verified too, on asking again.
    typed = doc.subject  # a searcher types the message's subject
    searcher = login(users["searcher"])
    searcher_search(searcher, c, typed)
    lead = login(users["lead"])
    lead.post(panel_url, {"again": "1"}, HTTP_HX_REQUEST="true")
    row.refresh_from_db()
    assert row.status == Exposure.Status.QUEUED
    row = exposure.exposure_compute(exposure_id=row.pk)
    publication = Publication.objects.get(collection=c)
    view = visibility.view(publication)
    ranker = exposing_queries.ExposureRanker(
        view.index, view.postings, doc.docid, k=publication.review_k
    )
    rank = ranker.rank(lucene.analyze(typed))
    assert rank is not None
    assert {"text": " ".join(typed.split()), "source": "log", "rank": rank} in [
        {k: q[k] for k in ("text", "source", "rank")} for q in row.queries
    ]


def test_an_unpublished_collection_has_nothing_to_expose(sample_collection, login, users):
    from ranking.services import index_build

    index_build(collection_id=sample_collection.pk)
    doc = sample_collection.documents.first()
    lead = login(users["lead"])
    html = lead.get(reverse("review-exposure-document", args=[doc.pk])).content.decode()
    assert "not open to searchers" in html
    assert lead.post(reverse("review-exposure-document", args=[doc.pk])).status_code in (200, 302)
    assert not Exposure.objects.exists()


def test_exposing_queries_come_by_rank_then_by_how_likely_a_searcher_types_them(
    published, login, users
):
    """Not alphabetical: at each rank, queries searchers ran (most run first), then topics,
    then generated ones by their collection weight."""
    c, persona, docs, kinds = published
    doc = _doc(docs, kinds, "safe")
    searcher = login(users["searcher"])
    typed = " ".join(doc.subject.split())
    for _ in range(2):
        searcher_search(searcher, c, typed)
    row = exposure.exposure_request(user=users["archivist"], document=doc, persona=persona)
    row = exposure.exposure_compute(exposure_id=row.pk)
    assert row.status == Exposure.Status.READY, row.error
    weight = {x.text: x.weight for x in exposure.candidates_build(collection=c).candidates}
    tier = {"searched": 0, "topic": 1, "generated": 2}
    keys = [
        (q["rank"], tier[q["badge"]], -q["searches"], -weight.get(q["text"], 0.0))
        for q in row.queries
    ]
    assert keys == sorted(keys)
    mine = next(q for q in row.queries if q["text"] == typed)
    assert mine["badge"] == "searched" and mine["searches"] == 2
    same_rank = [q for q in row.queries if q["rank"] == mine["rank"]]
    assert same_rank[0] == mine  # the only query run by searchers leads its rank
    generated = [q["text"] for q in same_rank if q["badge"] == "generated"]
    assert len(generated) > 2 and generated != sorted(generated, key=str.lower)


def test_the_card_sums_up_and_shows_the_first_ten_with_the_rest_behind_show_all(
    published, login, users
):
    c, persona, docs, kinds = published
    doc = _doc(docs, kinds, "safe")
    row = exposure.exposure_request(user=users["archivist"], document=doc, persona=persona)
    row = exposure.exposure_compute(exposure_id=row.pk)
    n = len(row.queries)
    assert n > exposure.SHOWN
    html = login(users["archivist"]).get(reverse("review-exposure", args=[persona.pk, doc.pk]))
    html = html.content.decode()
    first = sum(1 for q in row.queries if q["rank"] == 0)
    least = "" if row.summary["complete"] else "at least "  # a lower bound unless complete
    k = row.summary["k"]
    assert f"Exposed at #1 by {first} queries, in the first {k} by {least}{n};" in html
    assert "0 were searched by users" in html
    top, _sep, rest = html.partition(f"<summary>Show all {n}</summary>")
    assert rest, "the rest is behind show all"
    assert top.count("<tr data-rank=") == exposure.SHOWN
    assert rest.count("<tr data-rank=") == n - exposure.SHOWN
    q = row.queries[0]
    assert f'<td>“{q["text"]}”</td><td class="num"><strong>#{q["rank"] + 1}</strong></td>' in top
    assert '<th scope="col">Rank</th>' in top  # a visible document: its rank now


def test_the_overview_counts_sources_says_at_least_unless_complete_and_reads_older_rows():
    q = lambda text, rank, source, **kw: {"text": text, "rank": rank, "source": source, **kw}  # noqa: E731
    row = Exposure(
        queries=[
            q("serial port", 0, "log", badge="searched", searches=3),
            q("port", 0, "generated", badge="searched", searches=1),
            q("linux", 0, "topic", badge="topic", searches=0),
            *[q(f"g{i}", 1, "generated", badge="generated", searches=0) for i in range(12)],
        ],
        summary={
            "exposing": 15,
            "retrieved": 14,
            "complete": False,
            "logged_since": 2,
            "by_source": {"topic": 1, "log": 1, "generated": 20},
        },
    )
    o = exposure.exposure_overview(row)
    assert (o["first"], o["in_k"], o["searched"], o["topic"], o["generated"]) == (3, 15, 2, 1, 12)
    assert o["at_least"] and o["logged"] == 3
    assert len(o["top"]) == exposure.SHOWN and len(o["rest"]) == 15 - exposure.SHOWN
    older = Exposure(queries=[q("a b", 0, "log"), q("c", 2, "generated")], summary={"exposing": 2})
    o = exposure.exposure_overview(older)  # computed before badges: read by source
    # and before the deepening search: its count may have missed some
    assert [x["badge"] for x in o["top"]] == ["searched", "generated"] and o["at_least"]
    whole = Exposure(queries=[q("a b", 0, "log")], summary={"exposing": 1, "complete": True})
    assert not exposure.exposure_overview(whole)["at_least"]


def test_search_counts_are_kept_up_to_date_and_equal_a_full_count(published, login, users):
    c, persona, docs, kinds = published
    searcher = login(users["searcher"])
    for q in ("razor spam", "Spam  razor", "linux"):
        searcher_search(searcher, c, q)
    key = tuple(sorted(lucene.analyze("razor spam")))
    assert exposure._log_counts(c)[key] == 2  # one query for the ranker, typed twice
    searcher_search(searcher, c, "razor SPAM")
    counts = exposure._log_counts(c)  # brought up to date from the cached counts
    assert counts[key] == 3 and counts[tuple(lucene.analyze("linux"))] == 1
    exposure._counts.clear()
    assert exposure._log_counts(c) == counts
