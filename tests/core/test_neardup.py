"""MinHash/LSH near-duplicates (core.neardup): pure, no database."""

import random

import numpy as np
import pytest

from core import neardup


def _text(rng, n=120, vocabulary=3000):
    return " ".join(f"w{rng.randrange(vocabulary)}" for _ in range(n))


def _edited(text, positions, word="changed"):
    words = text.split()
    for p in positions:
        words[p] = word
    return " ".join(words)


@pytest.fixture(scope="module")
def corpus():
    rng = random.Random(7)
    docs = [(f"d{i}", _text(rng)) for i in range(2000)]
    docs += [(f"n{i}", _edited(docs[i][1], [5, 60])) for i in range(50)]  # ~0.9 Jaccard
    docs += [(f"far{i}", _edited(docs[i][1], range(0, 120, 3))) for i in range(50)]  # ~0.1
    docs += [("empty", ""), ("punctuation", " ,, -- "), ("short", "hi")]
    docs += [(f"copy{i}", docs[1][1]) for i in range(60)]  # a bucket past the pairwise cap
    return docs


@pytest.fixture(scope="module")
def index(corpus):
    return neardup.NearDuplicates.build(corpus)


def test_the_fast_signatures_equal_minhash_of_the_distinct_shingles(corpus):
    texts = [t for _d, t in corpus[:300]] + ["", "one", "one two", "a b c d"]
    fast = neardup.text_signatures(texts, batch=37)
    slow = neardup.signatures([neardup.shingles(t) for t in texts])
    assert np.array_equal(fast, slow)


def test_the_estimate_tracks_the_true_jaccard():
    rng = random.Random(3)
    a = _text(rng, 400)
    for changed in (10, 40, 100):
        b = _edited(a, rng.sample(range(400), changed), word="zzz")
        sa, sb = neardup.shingles(a), neardup.shingles(b)
        true = len(np.intersect1d(sa, sb)) / len(np.union1d(sa, sb))
        est = neardup.estimated_jaccard(*neardup.signatures([sa, sb]))[0]
        assert abs(est - true) < 0.15  # 64 permutations: standard error below 0.07


def test_edited_copies_are_found_and_unrelated_texts_are_not(index):
    found = sum(
        1
        for i in range(50)
        if index.neighbours_of(f"n{i}")[:1]
        == [(f"d{i}", pytest.approx(index.similarity_between(f"n{i}", f"d{i}")))]
    )
    assert found >= 48  # LSH finds a pair at Jaccard 0.9 with probability > 0.9999
    assert all(not any(d == f"d{i}" for d, _s in index.neighbours_of(f"far{i}")) for i in range(50))
    assert index.neighbours_of("d1500") == []
    assert index.cluster_of("d1500") is None


def test_a_text_without_words_resembles_nothing(index):
    assert index.neighbours_of("empty") == index.neighbours_of("punctuation") == []
    assert index.similarity_between("empty", "punctuation") == 0.0


def test_many_exact_copies_form_one_cluster_with_their_original(index):
    clusters = {index.cluster_of(f"copy{i}") for i in range(60)} | {index.cluster_of("d1")}
    assert clusters == {"d1"}
    assert len(index.neighbours_of("copy30", limit=100)) >= 4  # star-linked to the hubs


def test_neighbours_come_most_similar_first_and_respect_the_threshold(index):
    pairs = index.neighbours_of("d1", limit=100)
    sims = [s for _d, s in pairs]
    assert sims == sorted(sims, reverse=True) and min(sims) >= neardup.THRESHOLD
    assert index.neighbours_of("d1", threshold=1.01) == []
    assert "d1" not in dict(pairs)


def test_collapse_groups_a_ranked_list_by_its_heads(index):
    groups = index.collapse(["d3", "d4", "n3", "unknown", "n4", "d5"])
    assert groups == [["d3", "n3"], ["d4", "n4"], ["unknown"], ["d5"]]


def test_collapse_reads_only_the_listed_documents(corpus):
    # A document that bridges two others (A~H, H~B but A !~ B) must not make A and B one
    # group when H is not in the list: the clusters may join them, collapse must not.
    rng = random.Random(11)
    a = _text(rng, 200)
    h = _edited(a, range(0, 200, 12), word="h")
    b = _edited(h, range(6, 200, 12), word="b")
    with_bridge = neardup.NearDuplicates.build([("a", a), ("h", h), ("b", b)], threshold=0.5)
    assert with_bridge.cluster_of("a") == with_bridge.cluster_of("b") == "a"
    assert with_bridge.similarity_between("a", "b") < 0.5
    assert with_bridge.collapse(["a", "b"], threshold=0.5) == [["a"], ["b"]]
    alone = neardup.NearDuplicates.build([("a", a), ("b", b)], threshold=0.5)
    assert alone.collapse(["a", "b"], threshold=0.5) == with_bridge.collapse(
        ["a", "b"], threshold=0.5
    )


def test_save_and_load_give_the_same_answers(index, tmp_path):
    index.save(tmp_path / "nd")
    loaded = neardup.NearDuplicates.load(tmp_path / "nd")
    assert loaded.neighbours_of("n7") == index.neighbours_of("n7")
    assert loaded.cluster_of("copy3") == "d1"
    neardup.forget(tmp_path / "nd")


def test_an_empty_collection_builds():
    empty = neardup.NearDuplicates.build([])
    assert empty.docids == [] and empty.neighbours_of("x") == []
