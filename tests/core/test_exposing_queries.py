"""Exposing queries: reverse search plus verification must give exactly the queries and ranks
that running every candidate through the searcher's ranker gives (brute force), for visible
and hidden documents; RELQ follows the paper's equations."""

import mailbox
import math

import numpy as np
import pytest

from core import exposing_queries, lucene
from core.visible import Postings, VisibleIndex
from tests.conftest import SHARED_DATA
from tests.core.test_visible import _cacm

pytestmark = [pytest.mark.lucene]


def _mail(n, folder):
    """``n`` messages of bench/mailgen's synthetic mailboxes (threads, quoted replies, a
    social graph), subject and plain-text body: the collection when ../shared/data is not
    there, so the exactness tests run on every machine."""
    from bench.mailgen import generate

    generate(folder, n, seed=7)
    docs = []
    for path in sorted(folder.glob("*.mbox")):
        for message in mailbox.mbox(path):
            body = next(
                (
                    p.get_payload(decode=True).decode("utf-8", "replace")
                    for p in message.walk()
                    if p.get_content_type() == "text/plain"
                ),
                "",
            )
            docs.append((str(message["Message-ID"]), f"{message['Subject']}\n\n{body}"))
    return docs[:n]


@pytest.fixture(scope="module", params=["cacm", "mail"])
def small(request, tmp_path_factory):
    """300 CACM abstracts (or 300 generated email messages), a third of them hidden, their
    generated candidate queries plus a few typed ones, and the Lucene index of those
    candidates."""
    if request.param == "cacm":
        if not (SHARED_DATA / "cacm" / "cacm.all").exists():
            pytest.skip("../shared/data/cacm is absent (reference collections not available)")
        docs = _cacm(300)
    else:
        docs = _mail(300, tmp_path_factory.mktemp("mail"))
    postings = Postings.build((d, lucene.analyze(t)) for d, t in docs)
    hidden = {d for i, (d, _t) in enumerate(docs) if i % 3 == 0}
    rows = postings.rows([d for d, _t in docs if d not in hidden])
    view = VisibleIndex(postings, rows)
    generated = exposing_queries.generate_queries(lambda: docs, lucene.stem, limit=3000)
    typed = [("topic", "computer programs"), ("log", "the of and")]  # stopwords only: dropped
    candidates = exposing_queries.merge_candidates(typed, generated, lucene.analyze)
    index = tmp_path_factory.mktemp("exposure") / "candidates"
    lucene.build_index(index, ((str(c.qid), c.text) for c in candidates))
    return docs, postings, view, hidden, candidates, index


def _reverse(postings, view, index, docid, n):
    weights = exposing_queries.document_query(postings, int(postings.rows([docid])[0]), view)
    return [(int(h.docid), h.score) for h in lucene.reverse_search(index, weights, k=n)]


def test_candidates_are_deduplicated_bags_of_analysed_terms(small):
    _docs, _postings, _view, _hidden, candidates, _index = small
    assert candidates[0].source == "topic" and candidates[0].text == "computer programs"
    assert all(c.terms for c in candidates)  # "the of and" analyses to nothing
    bags = [tuple(sorted(c.terms)) for c in candidates]
    assert len(bags) == len(set(bags))
    assert [c.qid for c in candidates] == list(range(len(candidates)))
    generated = [c for c in candidates if c.source == "generated"]
    assert len(generated) > 500 and all(1 <= len(c.terms) <= 2 for c in generated)


def test_generated_queries_need_min_df_documents_and_read_as_words():
    docs = [("a", "Budget meetings budget"), ("b", "budget meeting"), ("c", "zebra budget")]
    out = exposing_queries.generate_queries(lambda: docs, lucene.stem, min_df=2)
    texts = [t for t, _w in out]
    assert "zebra" not in texts  # one document holds it
    assert "budget meeting" in texts or "budget meetings" in texts
    assert all(w > 0 for _t, w in out)
    assert [w for _t, w in out] == sorted((w for _t, w in out), reverse=True)
    assert exposing_queries.generate_queries(lambda: [], lucene.stem) == []


def test_exposure_of_visible_documents_equals_brute_force_through_the_searchers_ranking(small):
    docs, postings, view, hidden, candidates, index = small
    k = 10
    checked = 0
    # brute force, independently: every candidate through the searcher's search
    searched: dict[str, dict[int, int]] = {}
    for c in candidates:
        for rank, hit in enumerate(view.search(list(c.terms), k)):
            searched.setdefault(hit.docid, {})[c.qid] = rank
    for docid, _t in docs[1:40]:
        if docid in hidden:
            continue
        ranker = exposing_queries.ExposureRanker(view, postings, docid, k=k)
        assert ranker.visible
        truth = searched.get(docid, {})
        retrieved = _reverse(postings, view, index, docid, len(candidates))
        found = exposing_queries.expose(ranker, candidates, retrieved)
        assert {e.qid: e.rank for e in found} == truth
        assert [e.rank for e in found] == sorted(e.rank for e in found)
        assert found == exposing_queries.brute_force(ranker, candidates)
        checked += bool(truth)
    assert checked >= 10


def test_exposure_of_hidden_documents_is_where_a_release_would_put_them(small):
    docs, postings, view, hidden, candidates, index = small
    k = 10
    some = 0
    for docid in sorted(hidden)[:15]:
        ranker = exposing_queries.ExposureRanker(view, postings, docid, k=k)
        assert not ranker.visible
        truth = exposing_queries.brute_force(ranker, candidates)
        retrieved = _reverse(postings, view, index, docid, len(candidates))
        assert exposing_queries.expose(ranker, candidates, retrieved) == truth
        for e in truth[:3]:
            # the searcher's ranking of the visible set never holds the hidden document
            assert docid not in [h.docid for h in view.search(list(candidates[e.qid].terms), k)]
        some += bool(truth)
    assert some >= 5


def test_a_shallow_reverse_search_finds_a_subset_with_the_true_ranks(small):
    docs, postings, view, hidden, candidates, index = small
    docid = next(d for d, _t in docs[1:] if d not in hidden)
    ranker = exposing_queries.ExposureRanker(view, postings, docid, k=10)
    truth = {e.qid: e.rank for e in exposing_queries.brute_force(ranker, candidates)}
    found = exposing_queries.expose(ranker, candidates, _reverse(postings, view, index, docid, 20))
    assert found and all(truth[e.qid] == e.rank for e in found)
    assert len(found) <= len(truth)


def test_relq_is_one_for_the_ideal_list_and_follows_equation_3():
    exposing = {1: 0, 2: 3, 3: 1}
    assert exposing_queries.relq_rbp([1, 3, 2], exposing, gamma_qd=0.5, gamma_dq=0.9) == 1.0
    assert exposing_queries.relq_exh_ndcg([2, 3, 1], exposing) == pytest.approx(1.0)
    # only query 2 found, at place 1 of the list (after a query that does not expose)
    got = exposing_queries.relq_rbp([9, 2], exposing, gamma_qd=0.5, gamma_dq=0.9)
    ideal = 1 * 0.5**0 + 0.9 * 0.5**1 + 0.81 * 0.5**3
    assert got == pytest.approx(0.9 * 0.5**3 / ideal)
    assert exposing_queries.relq_rbp([9], exposing, gamma_qd=1, gamma_dq=1) == 0.0
    assert math.isnan(exposing_queries.relq_rbp([1], {}, gamma_qd=0.5, gamma_dq=0.5))
    assert exposing_queries.relq_rbp([1, 2, 3], exposing, gamma_qd=1, gamma_dq=1, depth=2) == 1.0


def test_a_document_outside_the_index_version_is_refused(small):
    _docs, postings, view, _hidden, _c, _i = small
    with pytest.raises(KeyError):
        exposing_queries.ExposureRanker(view, postings, "no-such-document", k=10)


def test_reverse_search_refuses_more_terms_than_lucene_allows(small):
    *_rest, index = small
    with pytest.raises(ValueError):
        lucene.reverse_search(index, {f"t{i}": 1.0 for i in range(1025)}, k=5)
    assert lucene.reverse_search(index, {}, k=5) == []
    # terms are matched literally, whatever the query parser's syntax would make of them
    assert lucene.reverse_search(index, {"a:b": 1.0, "x^y": 2.0, "(": 1.0, "OR": 1.0}, k=5) == []
    assert np.isfinite([h.score for h in lucene.reverse_search(index, {"comput": 2.0}, k=5)]).all()
