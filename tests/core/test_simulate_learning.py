"""The finite-pool simulation on the synthetic collection of test_active."""

import numpy as np
import pytest

from core import simulate_learning
from tests.core.test_active import collection  # noqa: F401 (fixture)


def topics(matrix, relevant, n=4):
    """Four topics over the same collection, each a different slice as its pool."""
    out = []
    for t in range(n):
        pool = np.arange(t * 500, (t + 1) * 500)
        grades = {int(r): 2 for r in pool if relevant[r]}
        rel = [int(r) for r in pool if relevant[r]]
        non = [int(r) for r in pool if not relevant[r]]
        ranking = [rel[0], non[0], *rel[1:], *non[1:]]  # a relevant, then a non-relevant
        out.append(simulate_learning.TopicData(str(t + 1), pool, grades, ranking))
    return out


def test_curves_start_at_zero_end_at_one_and_active_learning_beats_random(collection):  # noqa: F811
    matrix, relevant = collection
    data = topics(matrix, relevant)
    runs = {
        "good": {t.number: sorted(t.pool.tolist(), key=lambda r: -relevant[r]) for t in data},
        "bad": {t.number: sorted(t.pool.tolist(), key=lambda r: relevant[r]) for t in data},
        "mixed": {t.number: t.pool.tolist() for t in data},
    }
    results = {
        s: simulate_learning.simulate(
            matrix, data, simulate_learning.Settings(strategy=s), runs=runs
        )
        for s in ("cal", "sal", "spl")
    }
    for r in results.values():
        for name in ("f1_hybrid", "f1_human", "recall_human"):
            assert r["curves"][name][0] == 0.0 and r["curves"][name][-1] == pytest.approx(1.0)
        assert r["curves"]["tau_human"][-1] == pytest.approx(1.0)
        assert r["mean_seed_judgments"] == 10 and r["topics"] == 4
    assert results["cal"]["auc"]["f1_human"] > results["spl"]["auc"]["f1_human"]
    assert results["sal"]["auc"]["f1_human"] > results["spl"]["auc"]["f1_human"]


def test_tau_compares_like_with_like_and_reaches_one_when_everything_is_judged(collection):  # noqa: F811
    # Issue 15: the reference held relevant documents outside the pool that the constructed
    # qrels never can, so tau stayed below 1 at 100% judged.
    matrix, relevant = collection
    data = topics(matrix, relevant)
    outside = {}
    for t in data:
        inside = t.pool[:250]
        outside[t.number] = [int(r) for r in t.pool[250:] if relevant[r]]
        t.pool = inside  # the other half: judged relevant in the qrels, never pooled
        t.ranking = [r for r in t.ranking if r in set(inside.tolist())]
    runs = {
        "pool first": {
            t.number: sorted(t.pool.tolist(), key=lambda r: -relevant[r]) + outside[t.number]
            for t in data
        },
        "outside first": {
            t.number: outside[t.number] + sorted(t.pool.tolist(), key=lambda r: -relevant[r])
            for t in data
        },
        "pool mixed": {t.number: t.pool.tolist() + outside[t.number] for t in data},
    }
    r = simulate_learning.simulate(
        matrix, data, simulate_learning.Settings(strategy="cal"), runs=runs
    )
    for name in ("tau", "tau_infap"):
        assert r["curves"][f"{name}_human"][-1] == pytest.approx(1.0)
        assert r["curves"][f"{name}_hybrid"][-1] == pytest.approx(1.0)
    # against the full qrels the pool's blind spot shows: "outside first" wins there
    assert r["curves"]["tau_full_human"][-1] < 1.0


def test_rds_flags_topics_it_cannot_seed_and_skips_topics_without_relevant(collection):  # noqa: F811
    matrix, relevant = collection
    data = topics(matrix, relevant)
    data[0].ranking = [int(r) for r in data[0].pool if not relevant[r]][:30]  # no relevant
    data[1].grades = dict(data[3].grades)  # relevant documents, none of them in its pool
    r = simulate_learning.simulate(
        matrix, data, simulate_learning.Settings(seed_mode="rds", rds_max=25)
    )
    assert r["topics_flagged_by_rds"] == ["1"]
    assert r["topics_without_relevant_in_pool"] == ["2"]
    assert r["topics"] == 2


def test_topics_with_fewer_than_five_relevant_are_left_out_as_the_paper_does(collection):  # noqa: F811
    matrix, relevant = collection
    data = topics(matrix, relevant)
    few = sorted(data[2].grades)[:3]
    data[2].grades = dict.fromkeys(few, 2)  # three relevant in its qrels
    r = simulate_learning.simulate(matrix, data, simulate_learning.Settings())
    assert r["topics_with_too_few_relevant"] == ["3"] and r["topics"] == 3
    kept = simulate_learning.simulate(
        matrix, data, simulate_learning.Settings(min_topic_relevant=1)
    )
    assert kept["topics_with_too_few_relevant"] == [] and kept["topics"] == 4


def test_average_precision_and_auc_follow_their_definitions():
    assert simulate_learning.average_precision([3, 1, 2], {1, 2}) == pytest.approx(
        (1 / 2 + 2 / 3) / 2
    )
    assert simulate_learning.average_precision([1], set()) == 0.0
    assert simulate_learning.auc([0, 0.5, 1, 1, 1, 1, 1, 1, 1, 1, 1]) == pytest.approx(
        0.025 + 0.075 + 0.8
    )
    # from 10% judged: the first segment (0 to 0.5) is not counted
    assert simulate_learning.auc([0, 0.5, 1, 1, 1, 1, 1, 1, 1, 1, 1], start=10) == pytest.approx(
        0.075 + 0.8
    )


def test_inferred_ap_is_trec_evals():
    # every pooled document judged: infAP is AP
    assert simulate_learning.inferred_ap([3, 1, 2, 9], {1: 1, 2: 2, 3: 0}) == pytest.approx(
        simulate_learning.average_precision([3, 1, 2, 9], {1, 2}), abs=1e-4
    )
    # a document outside the pool counts as non-relevant: rank 1 gives 1/2
    assert simulate_learning.inferred_ap([9, 1], {1: 1}) == pytest.approx(0.5)
    # a pooled but unjudged document is inferred relevant in the judged share above it.
    # ranking [1 rel, 5 unjudged, 2 rel]: at j=2, 1/3 + 2/3 * (2/2) * (1 + e)/(1 + 2e)
    e = simulate_learning.INFAP_EPSILON
    expected = (1 + (1 / 3 + 2 / 3 * 1 * (1 + e) / (1 + 2 * e))) / 2
    value = simulate_learning.inferred_ap([1, 5, 2], {1: 1, 5: simulate_learning.UNJUDGED, 2: 1})
    assert value == pytest.approx(expected)
    assert value > simulate_learning.average_precision([1, 5, 2], {1, 2})  # MAP counts 5 as a miss
    # by hand from trec_eval's formula: [5 unjudged, 7 non, 1 rel, 2 rel] with R = 3
    got = simulate_learning.inferred_ap([5, 7, 1, 2], {5: -1, 7: 0, 1: 1, 2: 1, 3: 1})
    at1 = 1 / 3 + 2 / 3 * (2 / 2) * (e / (1 + 2 * e))
    at2 = 1 / 4 + 3 / 4 * (3 / 3) * ((1 + e) / (2 + 2 * e))
    assert got == pytest.approx((at1 + at2) / 3)
    assert simulate_learning.inferred_ap([1, 2], {1: 0}) == 0.0


def test_the_defaults_are_the_papers_and_the_labeller_is_a_named_deviation(collection):  # noqa: F811
    matrix, relevant = collection
    data = topics(matrix, relevant)
    settings = simulate_learning.Settings()
    assert (settings.c, settings.labeller, settings.seed_mode, settings.batch_pct) == (
        1e8,
        "selection",
        "is",
        10.0,
    )
    assert settings.min_topic_relevant == 5
    topic = data[0]
    judged = simulate_learning.seeds(topic, settings) + [int(r) for r in topic.pool[:40]]
    human, paper = simulate_learning.labels_at(matrix, topic, judged, settings)
    _, presumed = simulate_learning.labels_at(
        matrix, topic, judged, simulate_learning.Settings(labeller="presumed", c=30.0)
    )
    # the paper's labeller is the selection classifier: its labels are that model's
    model = simulate_learning.active.train(matrix, judged, topic.truth(judged), c=1e8)
    unjudged = np.array([i for i, r in enumerate(topic.pool) if int(r) not in set(judged)])
    p = model.probabilities(matrix, topic.pool[unjudged])
    assert (paper[unjudged] == (p >= 0.5)).all()
    assert (human[unjudged] == 0).all() and paper[unjudged].sum() > 0
    assert not (paper == presumed).all()
    with pytest.raises(ValueError, match="labeller"):
        simulate_learning.labels_at(
            matrix, topic, judged, simulate_learning.Settings(labeller="oracle")
        )
