"""Protection approaches: the prepared objectives equal core.measures, coordinate ascent
finds a known optimum, filters, demotion, cluster replacement and cutoffs."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import measures, protection


def query(grades, sensitive, features=None, p=None, qid="q"):
    docids = [f"d{i}" for i in range(len(grades))]
    n = len(grades)
    return protection.Query(
        qid,
        docids,
        features if features is not None else np.zeros((n, 1)),
        p if p is not None else np.zeros(n),
        {d: g for d, g in zip(docids, grades, strict=True) if g},
        {d: s for d, s in zip(docids, sensitive, strict=True) if s},
    )


MEASURES = {
    "ncs_dcg": lambda r, q: measures.ncs_dcg(r, q.relevance, q.sensitive, k=5, candidates=q.docids),
    "ngamma_cs_dcg": lambda r, q: measures.ngamma_cs_dcg(
        r, q.relevance, q.sensitive, k=5, gamma=0.5, candidates=q.docids
    ),
    "tern": lambda r, q: measures.tern(r, q.relevance, q.sensitive, k=5, penalty=3),
    "sens": lambda r, q: measures.sens(
        r, q.relevance, q.sensitive, k=5, penalty=3, candidates=q.docids
    ),
    "ndcg": lambda r, q: measures.ndcg(r, q.relevance, k=5, candidates=q.docids),
}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=1, max_size=9),
    st.randoms(use_true_random=False),
)
def test_prepared_objectives_equal_the_measures(docs, rnd):
    q = query([g for g, _s in docs], [s for _g, s in docs])
    order = list(range(len(docs)))
    rnd.shuffle(order)
    ranking = [q.docids[i] for i in order]
    for name, measure in MEASURES.items():
        prepared = protection.Prepared(q, name, k=5, penalty=3)
        ours, theirs = prepared.value(np.array(order)), measure(ranking, q)
        assert (math.isnan(ours) and math.isnan(theirs)) or ours == pytest.approx(theirs), name


def training_queries(n=12, seed=0):
    """Feature 0 says relevant, feature 1 is P(sensitive); some relevant are sensitive."""
    rng = np.random.default_rng(seed)
    out = []
    for q in range(n):
        grades = rng.integers(0, 3, 15)
        sensitive = rng.random(15) < 0.3
        p = np.where(sensitive, rng.uniform(0.7, 1.0, 15), rng.uniform(0, 0.3, 15))
        features = np.column_stack([grades + rng.normal(0, 0.1, 15), p])
        out.append(query(grades, sensitive, features, p, qid=str(q)))
    return out


def test_coordinate_ascent_finds_the_known_optimum():
    queries = training_queries()
    ranker, value = protection.coordinate_ascent(queries, "ncs_dcg", k=5, restarts=3)
    # Best possible: every query at its exact upper bound (nCS-DCG 1).
    assert value == pytest.approx(1.0)
    assert ranker.weights[0] > 0 > ranker.weights[1]
    # Relevance alone: the same data, trained for nDCG, ignores sensitivity and shows it.
    blind, ndcg = protection.coordinate_ascent(queries, "ndcg", k=5, restarts=2)
    assert ndcg == pytest.approx(1.0)
    prepared = [protection.Prepared(q, "ncs_dcg", k=5) for q in queries]
    blind_ncs = np.mean([p.value(protection.order_by(blind.scores(p.query))) for p in prepared])
    assert blind_ncs < 0.99


def test_restarts_in_processes_give_what_one_process_gives():
    queries = training_queries(6, seed=3)
    one = protection.coordinate_ascent(queries, "sens", k=5, restarts=3, seed=7)
    two = protection.coordinate_ascent(queries, "sens", k=5, restarts=3, seed=7, workers=2)
    assert one[1] == two[1] and np.allclose(one[0].weights, two[0].weights)


def test_the_restart_kept_is_the_best_on_the_validation_queries():
    # Feature 0 orders relevance in training, feature 1 in validation; with no ascent
    # (iterations=0) each restart is its starting point, so the choice alone is tested.
    def two_features(flip: bool, qid: str):
        grades = [0, 0, 1, 2]  # equal weights tie everything: the worst order, by docid
        good = np.array([0.0, 1.0, 2.0, 3.0])
        features = np.column_stack([good[::-1], good] if flip else [good, good[::-1]])
        return query(grades, [False] * 4, features=features, qid=qid)

    train = [two_features(False, "t")]
    valid = [two_features(True, "v")]
    common = dict(k=4, restarts=8, iterations=0, seed=1)
    on_train, _ = protection.coordinate_ascent(train, "ndcg", **common)
    on_valid, _ = protection.coordinate_ascent(train, "ndcg", validation=valid, **common)
    assert on_train.weights[0] > on_train.weights[1]
    assert on_valid.weights[1] > on_valid.weights[0]


def test_filters_demotion_and_training_sets():
    q = query([2, 1, 0, 2], [True, False, False, False], p=np.array([0.9, 0.6, 0.1, 0.2]))
    assert protection.post_filter(["d0", "d1", "d2", "d3"], q, 0.5) == ["d2", "d3"]
    assert protection.demoted(q).relevance == {"d0": 0, "d1": 1, "d3": 2}
    assert protection.without_sensitive(q).docids == ["d1", "d2", "d3"]


def test_cluster_replacement_swaps_in_the_safest_member_of_each_cluster():
    q = query([1, 1, 1, 1], [False] * 4, p=np.array([0.9, 0.1, 0.8, 0.2]))
    clusters = np.array([0, 0, 1, 1])
    # d0 -> its cluster's safest, d1; d1 (cluster 0) -> d0 is all that is left there.
    assert protection.cluster_replace(["d0", "d1", "d2", "d3"], q, clusters, k=2) == [
        "d1",
        "d0",
        "d2",
        "d3",
    ]
    assert protection.cluster_replace(["d2", "d0"], q, clusters, k=2)[:2] == ["d3", "d1"]
    # a filtering approach replaces only with what its filter lets through: d1 is filtered
    eligible = np.array([True, False, True, True])
    assert protection.cluster_replace(["d0", "d2"], q, clusters, k=2, eligible=eligible) == [
        "d0",
        "d3",
        "d2",
    ]


def test_clusters_follow_the_term_vectors():
    x = np.array([[1.0, 0, 0], [0.9, 0.1, 0], [0, 0, 1.0], [0, 0.1, 0.9]])
    groups = protection.clusters_of(x, 2, seed=0)
    assert groups[0] == groups[1] and groups[2] == groups[3] and groups[0] != groups[2]
    assert protection.clusters_of(x[:1], 20).tolist() == [0]


def test_cutoffs():
    q = query([2, 0, 1, 0], [False, True, False, False], p=np.array([0.1, 0.9, 0.7, 0.2]))
    assert protection.dynamic_cutoff(q, 0.5, limit=10) == 5  # floor(10 * (1 - 2/4))
    prepared = protection.Prepared(q, "ncs_dcg", k=4)
    assert protection.oracle_cutoff(["d0", "d1", "d2", "d3"], q, prepared) == 1
    # ties: d3 (safe, not relevant) adds nothing, so 1 and 2 tie; the largest is taken
    assert protection.oracle_cutoff(["d0", "d3", "d1", "d2"], q, prepared) == 2
    validation = [(["d0", "d2", "d1", "d3"], q, prepared)]
    assert protection.static_cutoff(validation, limit=4) == 2


def eval_topics(n=10, seed=0):
    """Ten topics of 30 candidates; feature 0 tracks relevance, BM25 a noisy copy of it."""
    from core import protection_eval

    rng = np.random.default_rng(seed)
    out = []
    for q in range(n):
        grades = rng.integers(0, 3, 30)
        sensitive = rng.random(30) < 0.25
        docids = [f"q{q}d{i}" for i in range(30)]
        features = np.column_stack([grades + rng.normal(0, 0.3, 30), rng.normal(0, 1, 30)])
        out.append(
            protection_eval.Topic(
                qid=str(q),
                docids=docids,
                bm25=grades + rng.normal(0, 1.0, 30),
                features=features,
                relevance={d: int(g) for d, g in zip(docids, grades, strict=True) if g},
                sensitive={d: True for d, s in zip(docids, sensitive, strict=True) if s},
            )
        )
    return out


def test_the_harness_scores_every_approach_on_every_topic_once():
    from core import protection_eval

    topics = eval_topics()
    oracle = {
        t.qid: np.array([1.0 if t.sensitive.get(d) else 0.0 for d in t.docids]) for t in topics
    }
    results = protection_eval.run(topics, oracle, 0.5, classifier="oracle", restarts=1)
    assert set(results) == set(protection_eval.APPROACHES)
    for per_topic in results.values():
        assert sorted(per_topic) == sorted(t.qid for t in topics)  # each test topic once
    summary = protection_eval.summary(results)
    table = summary["table"]
    # An oracle classifier: filtering shows nothing sensitive, so TERN (M=1) is never -1.
    assert table["post-filter"]["tern +/0/-"][2] == 0
    assert table["pre-filter"]["tern +/0/-"][2] == 0
    assert table["post-filter"]["ncs_dcg@10"] > table["bm25"]["ncs_dcg@10"]
    assert table["ltr"]["ndcg@10"] > table["bm25"]["ndcg@10"]  # feature 0 beats noisy BM25
    assert summary["best"] in table and table[summary["best"]]["p vs best"] is None
    assert all(0 <= r["p vs best"] <= 1 for a, r in table.items() if a != summary["best"])
    # The trivial baselines stand beside the approaches: sorting by the oracle's P(sensitive)
    # alone shows nothing sensitive but ignores relevance, so a learned ranker must beat it
    # on nDCG to have learned anything.
    base = table[protection_eval.BASELINE]
    assert base["tern +/0/-"][2] == 0 and base["vs baseline"] is None
    assert table["post-filter"]["vs baseline"]["ndcg@10"]["difference"] > 0
    assert table["post-filter"]["vs baseline"]["ndcg@10"]["p"] < 0.05
    assert table["baseline: random order"]["ndcg@10"] < table["ltr"]["ndcg@10"]
    # cluster replacement on every approach; filtering approaches replace only with what their
    # filter lets through, so with the oracle they still show nothing sensitive
    for approach in protection_eval.RANKERS:
        assert f"{approach}+cluster" in table
    for approach in protection_eval.FILTERING:
        assert table[f"{approach}+cluster"]["tern +/0/-"][2] == 0
    # replacing with the safest member of the cluster shows fewer sensitive documents
    assert table["bm25+cluster"]["tern +/0/-"][2] < table["bm25"]["tern +/0/-"][2]


def test_the_harness_scores_ncs_dcg_at_the_cost_it_is_given():
    from core import protection_eval

    topics = eval_topics(n=5)
    oracle = {
        t.qid: np.array([1.0 if t.sensitive.get(d) else 0.0 for d in t.docids]) for t in topics
    }
    cheap, dear = (
        protection_eval.run(topics, oracle, 0.5, classifier="oracle", restarts=1, cost=c)
        for c in (1.0, 12.0)
    )
    t = topics[0]
    bm25_order = [t.docids[x] for x in protection.order_by(t.bm25)]
    assert cheap["bm25"][t.qid]["ncs_dcg@10"] == pytest.approx(
        measures.ncs_dcg(bm25_order, t.relevance, t.sensitive, k=10, cost=1.0, candidates=t.docids)
    )
    assert cheap["bm25"][t.qid]["ncs_dcg@10"] != dear["bm25"][t.qid]["ncs_dcg@10"]


def test_the_dissertations_cost_rule():
    # sec. 5.4.1: every topic with ten highly relevant documents -> DCG@10 13.63 -> Cs = 12
    graded = {str(q): {f"d{i}": 2 for i in range(12)} for q in range(3)}
    rule = measures.dissertation_cost(graded)
    assert rule["cost"] == pytest.approx(12.0)
    assert rule["mean_ideal_dcg"] == pytest.approx(13.63, abs=0.01)
    # binary judgments, ten relevant: 4.54 -> Cs = 4.0; topics without relevant are left out
    binary = {"1": {f"d{i}": 1 for i in range(10)}, "2": {"x": 0}}
    cost = measures.dissertation_cost(binary)["cost"]
    assert cost == pytest.approx(12 / 13.6265 * 4.5421, abs=1e-3)
    with pytest.raises(ValueError, match="no topic"):
        measures.dissertation_cost({"1": {"x": 0}})
