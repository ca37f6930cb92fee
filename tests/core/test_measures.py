"""The measures of docs/domain.md §7: hand-worked values, ir_measures for nDCG, brute
force over every ordering for the nCS-DCG bounds, ranges and axioms."""

import io
import itertools
import math
import random

import ir_measures
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import measures as m

D = [1 / math.log2(i + 2) for i in range(20)]


def test_ten_highly_relevant_documents_give_the_dissertations_13_63():
    docs = [f"d{i}" for i in range(10)]
    assert m.dcg(docs, dict.fromkeys(docs, 2), k=10) == pytest.approx(13.63, abs=0.005)


def test_hand_worked_cs_dcg_and_bounds():
    rel = {"H": 2, "S": 1, "N": 0, "Hs": 2, "Ns": 0}
    sen = {"Hs": True, "Ns": True}
    # H S Hs: 3*1 + 1*D1 + (3*D2 - 12)
    assert m.cs_dcg(["H", "S", "Hs"], rel, sen, k=3) == pytest.approx(3 + D[1] + 3 * D[2] - 12)
    worst, best = m.cs_dcg_bounds(rel, sen, k=3, candidates=rel)
    assert best == pytest.approx(3 + D[1])  # H, S, N: algorithm 2
    # Algorithm 1: non-relevant sensitive on top, the relevant sensitive one at the bottom,
    # a non-relevant non-sensitive one between.
    assert worst == pytest.approx(-12 + 0 + 3 * D[2] - 12)
    assert m.ncs_dcg(["H", "S", "N"], rel, sen, k=3) == pytest.approx(1.0)
    assert m.ncs_dcg(["Ns", "N", "Hs"], rel, sen, k=3) == pytest.approx(0.0)


def test_tern_and_sens_by_hand():
    rel, sen = {"a": 2, "b": 0, "c": 1}, {"b": True}
    assert m.tern(["a", "c"], rel, sen, k=2) == 1.0
    assert m.tern(["a", "b"], rel, sen, k=2, penalty=3) == -3.0
    assert m.tern(["x", "y"], rel, sen, k=2) == 0.0
    assert m.sens(["a", "b"], rel, sen, k=2, penalty=3) == -3.0
    # Ideal from non-sensitive documents only: a (3), c (1).
    assert m.sens(["c", "a"], rel, sen, k=2) == pytest.approx((1 + 3 * D[1]) / (3 + 1 * D[1]))


def test_gamma_variants_by_hand():
    rel, sen = {"s1": 0, "s2": 2, "r": 1}, {"s1": True, "s2": True}
    ranking = ["s1", "r", "s2"]
    assert m.gamma_cs_dcg(ranking, rel, sen, k=3, gamma=1.0) == pytest.approx(
        m.cs_dcg(ranking, rel, sen, k=3)
    )
    # gamma = 0: only the first sensitive document costs.
    assert m.gamma_cs_dcg(ranking, rel, sen, k=3, gamma=0.0) == pytest.approx(-12 + D[1] + 3 * D[2])
    assert m.gamma_cs_dcg(ranking, rel, sen, k=3, gamma=0.5) == pytest.approx(
        -12 + D[1] + 3 * D[2] - 6
    )


def test_o_cs_dcg_adds_released_documents_and_charges_review():
    rel, sen = {"a": 2, "b": 1, "c": 2}, {"c": True}
    shown, reviewed = ["a"], ["b", "c"]
    # a shown (3), b released into the page's second place (1 x D1), c withheld (0);
    # 0.5 effort each.
    got = m.o_cs_dcg(shown, reviewed, rel, sen, effort=0.5, k=3)
    assert got == pytest.approx(3 + 1 * D[1] - 0.5 - 0.5)


def test_o_cs_dcg_charges_every_review_even_on_a_full_page():
    # Issue 15: ten shown and five reviewed scored the same at effort 0.1 and 100.
    rel = {f"s{i}": 1 for i in range(10)} | {f"r{i}": 2 for i in range(5)}
    shown, reviewed = [f"s{i}" for i in range(10)], [f"r{i}" for i in range(5)]
    low = m.o_cs_dcg(shown, reviewed, rel, {}, effort=0.1, k=10)
    high = m.o_cs_dcg(shown, reviewed, rel, {}, effort=100, k=10)
    assert low - high == pytest.approx(5 * 99.9)
    assert low == pytest.approx(m.cs_dcg(shown, rel, {}, k=10) - 0.5)


def test_o_cs_dcg_charges_a_released_document_that_proves_sensitive():
    rel, sen = {"a": 2, "b": 1}, {"b": True}
    oracle = m.o_cs_dcg(["a"], ["b"], rel, sen, effort=0.1, k=3)  # withheld by the oracle
    mistaken = m.o_cs_dcg(["a"], ["b"], rel, sen, effort=0.1, k=3, released={"b"})
    assert oracle == pytest.approx(3 - 0.1)
    assert mistaken == pytest.approx(3 + 1 * D[1] - 12 - 0.1)
    # on a full page the release gains nothing, and its disclosure still costs
    full = m.o_cs_dcg(["a"], ["b"], rel, sen, effort=0.1, k=1, released={"b"})
    assert full == pytest.approx(3 - 12 - 0.1)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=1, max_size=8),
    st.integers(0, 8),
    st.integers(1, 8),
    st.floats(0, 5),
    st.floats(0.01, 5),
)
def test_o_cs_dcg_falls_as_effort_rises_whenever_anything_was_reviewed(docs, cut, k, e, more):
    names = [f"d{i}" for i in range(len(docs))]
    rel = {n: g for n, (g, _s) in zip(names, docs, strict=True)}
    sen = {n: s for n, (_g, s) in zip(names, docs, strict=True)}
    shown, reviewed = names[:cut], names[cut:]
    a = m.o_cs_dcg(shown, reviewed, rel, sen, effort=e, k=k)
    b = m.o_cs_dcg(shown, reviewed, rel, sen, effort=e + more, k=k)
    if reviewed:
        assert b < a
    else:
        assert b == a


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=1, max_size=6),
    st.integers(1, 6),
    st.sampled_from([12.0, 2.0, 0.5]),
)
def test_cs_dcg_bounds_equal_brute_force_over_every_list(docs, k, cost):
    names = [f"d{i}" for i in range(len(docs))]
    rel = {n: g for n, (g, _s) in zip(names, docs, strict=True)}
    sen = {n: s for n, (_g, s) in zip(names, docs, strict=True)}
    # every list a system could return: any length from 0 to k, any distinct candidates
    lists = [
        list(p) for n in range(min(k, len(names)) + 1) for p in itertools.permutations(names, n)
    ]
    values = [m.cs_dcg(p, rel, sen, k=k, cost=cost) for p in lists]
    worst, best = m.cs_dcg_bounds(rel, sen, k=k, cost=cost, candidates=names)
    assert best == pytest.approx(max(values)) and worst == pytest.approx(min(values))
    for shown in lists:
        score = m.ncs_dcg(shown, rel, sen, k=k, cost=cost, candidates=names)
        if math.isclose(max(values), min(values), abs_tol=1e-12):
            assert math.isnan(score)
        else:
            assert -1e-9 <= score <= 1 + 1e-9, (shown, score)


def test_a_truncated_list_stays_within_one():
    # Issue 15: with bounds over full-length lists only, showing [A] scored 11.84.
    rel, sen = {"A": 2, "S": 0}, {"S": True}
    assert m.cs_dcg_bounds(rel, sen, k=2, candidates=["A", "S"]) == (-12.0, 3.0)
    assert m.ncs_dcg(["A"], rel, sen, k=2, candidates=["A", "S"]) == pytest.approx(1.0)
    assert m.ncs_dcg([], rel, sen, k=2, candidates=["A", "S"]) == pytest.approx(0.8)
    assert m.ncs_dcg(["S"], rel, sen, k=2, candidates=["A", "S"]) == pytest.approx(0.0)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=1, max_size=8),
    st.integers(1, 8),
    st.floats(0, 1),
    st.randoms(use_true_random=False),
)
def test_every_measure_stays_in_its_range(docs, k, gamma, rnd):
    names = [f"d{i}" for i in range(len(docs))]
    rel = {n: g for n, (g, _s) in zip(names, docs, strict=True)}
    sen = {n: s for n, (_g, s) in zip(names, docs, strict=True)}
    ranking = names[:]
    rnd.shuffle(ranking)
    assert 0 <= m.ndcg(ranking, rel, k=k) <= 1 + 1e-12
    assert m.tern(ranking, rel, sen, k=k, penalty=3) in (-3.0, 0.0, 1.0)
    s = m.sens(ranking, rel, sen, k=k, penalty=3)
    assert s == -3.0 or 0 <= s <= 1 + 1e-12
    n = m.ngamma_cs_dcg(ranking, rel, sen, k=k, gamma=gamma)
    assert math.isnan(n) or 0 <= n <= 1
    assert m.gamma_cs_dcg(ranking, rel, sen, k=k, gamma=1.0) == pytest.approx(
        m.cs_dcg(ranking, rel, sen, k=k)
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=2, max_size=8))
def test_axioms_of_cs_dcg(docs):
    names = [f"d{i}" for i in range(len(docs))]
    rel = {n: g for n, (g, _s) in zip(names, docs, strict=True)}
    sen = {n: s for n, (_g, s) in zip(names, docs, strict=True)}
    k = len(names)
    base = m.cs_dcg(names, rel, sen, k=k)
    # Head-weightedness: swapping a more relevant document above a less relevant one of the
    # same sensitivity never lowers CS-DCG.
    for i, j in itertools.combinations(range(k), 2):
        a, b = names[i], names[j]
        if rel[b] > rel[a] and sen[a] == sen[b]:
            swapped = names[:]
            swapped[i], swapped[j] = b, a
            assert m.cs_dcg(swapped, rel, sen, k=k) >= base - 1e-12
    # Sensitivity convergence: marking a shown document sensitive lowers CS-DCG by Cs.
    for d in names:
        if not sen[d]:
            assert m.cs_dcg(names, rel, {**sen, d: True}, k=k) == pytest.approx(base - 12)
    # Locality: documents below the cutoff do not count.
    assert m.cs_dcg([*names, "extra"], {**rel, "extra": 2}, sen, k=k) == pytest.approx(base)


def test_ndcg_agrees_with_ir_measures_exp_log2():
    rnd = random.Random(5)
    qrels, run = [], []
    ours = []
    for q in range(30):
        docs = [f"q{q}d{i}" for i in range(25)]
        grades = {d: rnd.choice([0, 0, 0, 1, 2]) for d in docs[:18]}
        ranking = rnd.sample(docs, 20)
        qrels += [ir_measures.Qrel(str(q), d, g) for d, g in grades.items()]
        run += [ir_measures.ScoredDoc(str(q), d, 100.0 - i) for i, d in enumerate(ranking)]
        ours.append((str(q), m.ndcg(ranking, grades, k=10)))
    measure = ir_measures.parse_measure("nDCG(dcg='exp-log2')@10")
    theirs = {r.query_id: r.value for r in ir_measures.iter_calc([measure], qrels, run)}
    for q, value in ours:  # ir_measures computes this one with gdeval: 5 decimals
        assert value == pytest.approx(theirs[q], abs=5e-6), q


def test_batch_evaluation_reads_a_trec_run_and_skips_nan_in_means():
    run = m.read_run(io.StringIO("1 Q0 a 1 3.0 t\n1 Q0 b 2 2.0 t\n2 Q0 x 1 1.0 t\n"))
    assert run == {"1": ["a", "b"], "2": ["x"]}
    qrels = {"1": {"a": 2, "b": 0}, "2": {"x": 0}}  # query 2: nothing to gain or lose
    sens = {"*": {"z": False}, "1": {"b": True}}
    result = m.evaluate(
        run,
        qrels,
        sens,
        {
            "nCS-DCG@2": {"measure": "ncs_dcg", "k": 2},
            "TERN@2(M=3)": {"measure": "tern", "k": 2, "penalty": 3},
        },
    )
    assert math.isnan(result["per_query"]["2"]["nCS-DCG@2"])
    assert result["skipped"] == {"nCS-DCG@2": 1, "TERN@2(M=3)": 0}
    assert result["mean"]["nCS-DCG@2"] == result["per_query"]["1"]["nCS-DCG@2"]
    assert result["mean"]["TERN@2(M=3)"] == pytest.approx((-3 + 0) / 2)
    with pytest.raises(ValueError, match="run line 1: expected 6 fields"):
        m.read_run(["1 Q0 a 1"])
    with pytest.raises(ValueError, match="score 'high' is not a number"):
        m.read_run(["1 Q0 a 1 high t"])


def test_measures_need_no_django():
    import subprocess
    import sys

    code = "import sys, core.measures; print('django' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
