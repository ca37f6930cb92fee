"""The visible-set ranker against real Lucene: searching the visible rows of the whole
collection's postings must give exactly what a Lucene index of the visible documents alone
gives (order, scores, length), and hidden documents must change nothing."""

import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import lucene
from core.visible import (
    LENGTH_TABLE,
    Postings,
    VisibleIndex,
    decode_length,
    encode_length,
)
from tests.conftest import SHARED_DATA


def test_length_norms_are_lucenes_small_float():
    # SmallFloat.intToByte4 is exact below 24 and then keeps 4 significant bits
    assert [encode_length(n) for n in range(25)] == list(range(25))
    assert decode_length(encode_length(1000)) <= 1000
    for n in (24, 25, 31, 40, 100, 1000, 12345, 2**31 - 1):
        b = encode_length(n)
        assert decode_length(b) <= n < decode_length(b + 1) if b < 255 else True
    assert encode_length(2**31 - 1) == 255
    assert np.all(np.diff(LENGTH_TABLE) > 0)
    with pytest.raises(ValueError):
        encode_length(-1)


def test_empty_and_unknown_queries_find_nothing():
    postings = Postings.build([("a", ["x", "y"]), ("b", ["y"])])
    view = VisibleIndex(postings, np.array([0]))
    assert view.search([], 10) == []
    assert view.search(["nothing"], 10) == []
    assert view.search(["y"], 0) == []
    # "y" is held by a hidden document too: the view's df counts the visible one only
    assert view.df[view.vocabulary["y"]] == 1 and "y" in view.vocabulary
    assert VisibleIndex(postings, np.array([], dtype=np.int64)).search(["y"], 5) == []


def _cacm(limit=None):
    text = (SHARED_DATA / "cacm" / "cacm.all").read_text(encoding="latin-1")
    out = []
    for chunk in re.split(r"^\.I ", text, flags=re.M)[1:]:
        number, _, rest = chunk.partition("\n")
        body = re.sub(r"^\.[A-Z]\s*$", " ", rest, flags=re.M)
        out.append((number.strip(), " ".join(body.split())))
    return out[:limit]


def _synthetic(n, seed):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(300)]
    weights = [1 / (i + 1) for i in range(300)]
    docs = []
    for i in range(n):
        length = rng.choice([3, 10, 30, 80, 200, 700])
        docs.append((f"d{i:04d}", " ".join(rng.choices(words, weights, k=length))))
    return docs


def _lucene_index(tmp_path, name, docs):
    path = tmp_path / name
    lucene.build_index(path, docs)
    return path


@pytest.mark.lucene
@pytest.mark.parametrize("corpus", ["synthetic", "cacm"])
def test_visible_rows_rank_exactly_as_a_lucene_index_of_them_alone(tmp_path, corpus):
    if corpus == "cacm":
        if not (SHARED_DATA / "cacm" / "cacm.all").exists():
            pytest.skip("../shared/data/cacm is absent")
        docs = _cacm(1200)
        queries = [
            "computer program",
            "time sharing system operating",
            "algorithm algorithm sort",
            "matrix inversion numerical",
            "parallel processing languages",
            "information retrieval",
        ]
    else:
        docs = _synthetic(600, seed=3)
        queries = ["w1", "w3 w7", "w0 w0 w250", "w120 w5 w299", "w40 w41 w42 w43"]
    rng = random.Random(7)
    hidden = {d for d, _t in docs if rng.random() < 0.3}
    postings = Postings.build((d, lucene.analyze(t)) for d, t in docs)
    view = VisibleIndex(postings, postings.rows(d for d, _t in docs if d not in hidden))
    alone = _lucene_index(tmp_path, "visible", [(d, t) for d, t in docs if d not in hidden])
    full = _lucene_index(tmp_path, "full", docs)
    differs = 0
    for query in queries:
        expected = lucene.search(alone, query, k=50)
        got = view.search(lucene.analyze(query), 50)
        assert [h.docid for h in got] == [h.docid for h in expected], query
        # equal up to Anserini's rounding to 1e-4 (a sum one ulp apart can round either way)
        assert [h.score for h in got] == pytest.approx([h.score for h in expected], abs=1.01e-4)
        exact = sum(a.score == b.score for a, b in zip(got, expected, strict=True))
        assert exact >= 0.9 * len(expected)
        whole = [h.docid for h in lucene.search(full, query, k=50) if h.docid not in hidden]
        differs += whole != [h.docid for h in got]
    # the naive way (rank everything, drop hidden) differs: the test can tell them apart
    assert differs > 0


@st.composite
def _hidden_extra(draw):
    count = draw(st.integers(min_value=1, max_value=12))
    return [
        draw(st.lists(st.sampled_from(["w1", "w2", "w3", "canary", "w9"]), min_size=1, max_size=40))
        for _ in range(count)
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    extra=_hidden_extra(),
    query=st.lists(st.sampled_from(["w1", "w2", "w3", "canary"]), min_size=1, max_size=4),
)
def test_hidden_documents_with_the_query_terms_change_nothing(extra, query):
    rng = random.Random(11)
    visible = [
        (f"v{i}", rng.choices(["w1", "w2", "w3", "w4", "w9"], k=rng.randint(1, 60)))
        for i in range(40)
    ]
    base = Postings.build(visible)
    before = VisibleIndex(base, np.arange(len(visible))).search(query, 20)
    # interleave hidden documents anywhere in the collection: only their rows are excluded
    mixed = list(visible)
    for j, tokens in enumerate(extra):
        mixed.insert(rng.randint(0, len(mixed)), (f"h{j}", tokens))
    postings = Postings.build(mixed)
    view = VisibleIndex(postings, postings.rows(d for d, _t in visible))
    after = view.search(query, 20)
    assert after == before
    assert "canary" not in view.vocabulary


def test_postings_survive_saving(tmp_path):
    postings = Postings.build([("a", ["x", "y", "y"]), ("b", ["y", "z"]), ("c", [])])
    postings.save(tmp_path / "p")
    loaded = Postings.load(tmp_path / "p")
    assert loaded.docids == ["a", "b", "c"]
    assert loaded.terms.tolist() == postings.terms.tolist()
    assert (loaded.counts != postings.counts).nnz == 0
    assert loaded.lengths.tolist() == [3, 2, 0]
    view = VisibleIndex(loaded, loaded.rows(["a", "b"]))
    assert [h.docid for h in view.search(["y"], 5)] == ["a", "b"]


def test_a_replaced_row_ranks_exactly_as_if_the_document_had_been_indexed_so():
    """Issue 20: a redacted copy's row replaces the original; the statistics and scores are
    those of a collection that never held the redacted words."""
    original = [
        ("a", ["secret", "report", "budget", "secret"]),
        ("b", ["report", "lunch"]),
        ("c", ["budget", "budget", "notes"]),
    ]
    redacted = {"a": ["report", "budget"]}
    replaced = Postings.build(original).replaced(redacted)
    direct = Postings.build([(d, redacted.get(d, t)) for d, t in original])
    rows = np.arange(3)
    left, right = VisibleIndex(replaced, rows), VisibleIndex(direct, rows)
    assert "secret" not in left.vocabulary and left.search(["secret"], 10) == []
    for query in (["report"], ["budget", "report"], ["lunch", "notes"]):
        assert left.search(query, 10) == right.search(query, 10)
    assert Postings.build(original).replaced({}).docids == ["a", "b", "c"]
