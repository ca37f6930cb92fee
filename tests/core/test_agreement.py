"""Agreement: kappa matches scikit-learn and statsmodels on random inputs; degenerate
cases say why they are undefined instead of giving a misleading number."""

import math

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa

from core.agreement import (
    FACETS_BY_NAME,
    agreement_report,
    alpha_agreement,
    kappa_from_confusion,
    pair_agreement,
)

# The references warn on 0/0 cases (statsmodels computing standard errors on tiny tables,
# scikit-learn on one shared label); the tests compare their values, warnings aside.
pytestmark = [
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning"),
]

REL = FACETS_BY_NAME["relevance"]
WEIGHTED = FACETS_BY_NAME["relevance_weighted"]
BINARY = FACETS_BY_NAME["relevance_binary"]
PERSONA = FACETS_BY_NAME["persona_sensitive"]

grades = st.lists(st.tuples(st.sampled_from([0, 1, 2]), st.sampled_from([0, 1, 2])), min_size=2)


def as_answers(pairs):
    return {i: a for i, (a, _) in enumerate(pairs)}, {i: b for i, (_, b) in enumerate(pairs)}


def table(pairs, k=3):
    t = np.zeros((k, k))
    for a, b in pairs:
        t[a, b] += 1
    return t


@settings(max_examples=300, deadline=None)
@given(grades)
def test_kappa_matches_scikit_learn_and_statsmodels(pairs):
    a, b = as_answers(pairs)
    for facet, wt in ((REL, None), (WEIGHTED, "linear")):
        got = pair_agreement(a, b, facet, samples=0)
        ref = cohen_kappa_score(
            [x for x, _ in pairs], [y for _, y in pairs], labels=[0, 1, 2], weights=facet.weights
        )
        if len({x for p in pairs for x in p}) < 2:
            assert got.value is None and "single category" in got.undefined
            continue
        if math.isnan(ref):
            assert got.value is None
            continue
        assert got.value == pytest.approx(ref, abs=1e-12)
        sm = cohens_kappa(table(pairs), wt=wt).kappa
        assert got.value == pytest.approx(sm, abs=1e-9)
        assert got.n == len(pairs)
        assert got.observed == pytest.approx(sum(x == y for x, y in pairs) / len(pairs))
        assert np.array(got.confusion).sum() == len(pairs)


@settings(max_examples=200, deadline=None)
@given(grades)
def test_the_vectorised_formula_used_for_the_bootstrap_is_scikit_learns(pairs):
    ref = cohen_kappa_score([x for x, _ in pairs], [y for _, y in pairs], labels=[0, 1, 2])
    got = kappa_from_confusion(table(pairs), None)
    assert (math.isnan(ref) and math.isnan(got)) or got == pytest.approx(ref, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(grades)
def test_binary_collapse_matches_scikit_learn_on_collapsed_labels(pairs):
    a, b = as_answers(pairs)
    got = pair_agreement(a, b, BINARY, samples=0)
    xa = [int(x >= 1) for x, _ in pairs]
    xb = [int(y >= 1) for _, y in pairs]
    if len(set(xa) | set(xb)) < 2:
        assert got.value is None
    else:
        assert got.value == pytest.approx(cohen_kappa_score(xa, xb, labels=[0, 1]), abs=1e-12)


def test_bootstrap_interval_contains_the_estimate_and_is_reproducible():
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 3, 80)
    noisy = np.where(rng.random(80) < 0.75, truth, rng.integers(0, 3, 80))
    a, b = dict(enumerate(truth.tolist())), dict(enumerate(noisy.tolist()))
    first = pair_agreement(a, b, REL)
    again = pair_agreement(a, b, REL)
    assert first.ci_low < first.value < first.ci_high
    assert 0.2 < first.ci_high - first.ci_low < 0.5  # about +-2 standard errors at n=80
    assert (first.ci_low, first.ci_high) == (again.ci_low, again.ci_high)


def test_dont_know_is_excluded_from_sensitivity_kappa_and_counted():
    a = {1: "yes", 2: "no", 3: "dont_know", 4: "yes", 5: "no"}
    b = {1: "yes", 2: "no", 3: "yes", 4: "dont_know", 5: "yes"}
    got = pair_agreement(a, b, PERSONA, samples=0)
    assert got.n == 3 and got.excluded == 2
    assert got.value == pytest.approx(
        cohen_kappa_score(["yes", "no", "no"], ["yes", "no", "yes"], labels=["no", "yes"])
    )


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        ({1: 2}, {2: 2}, "no overlap"),
        ({1: 2}, {1: 1}, "one observation"),
        ({1: 1, 2: 1, 3: 1}, {1: 1, 2: 1, 3: 1}, "single category"),
    ],
)
def test_degenerate_cases_are_undefined_with_a_reason(a, b, reason):
    got = pair_agreement(a, b, REL)
    assert got.value is None and got.ci_low is None
    assert reason in got.undefined


def test_only_dont_know_answers_leave_nothing_to_compare():
    got = pair_agreement({1: "dont_know"}, {1: "yes"}, PERSONA)
    assert got.value is None and got.excluded == 1 and "don't know" in got.undefined


def test_perfect_disagreement_on_two_categories_is_a_real_number():
    got = pair_agreement({1: 0, 2: 2}, {1: 2, 2: 0}, REL, samples=0)
    assert got.value == pytest.approx(-1.0)


def test_krippendorff_alpha_for_three_annotators_matches_the_package():
    rng = np.random.default_rng(7)
    truth = rng.integers(0, 3, 40)
    answers = {
        name: {
            i: int(v if rng.random() < 0.7 else rng.integers(0, 3))
            for i, v in enumerate(truth)
            if rng.random() < 0.9  # not everyone judged everything
        }
        for name in ("x", "y", "z")
    }
    got = alpha_agreement(answers, REL)
    data = np.array(
        [[answers[n].get(i, np.nan) for i in range(40)] for n in ("x", "y", "z")], dtype=float
    )
    keep = (~np.isnan(data)).sum(axis=0) >= 2
    assert got.value == pytest.approx(
        krippendorff.alpha(reliability_data=data[:, keep], level_of_measurement="nominal")
    )
    assert got.n == int(keep.sum())


def test_report_has_every_pair_and_alpha_only_beyond_two_annotators():
    obs = [
        (i, who, {"relevance": i % 3, "persona_sensitive": "yes", "personal_sensitive": "no"})
        for i in range(6)
        for who in ("ann", "bob")
    ]
    two = agreement_report(obs, samples=0)
    assert [p["annotators"] for p in two["pairs"]] == [("ann", "bob")]
    assert two["alpha"] == {}
    assert two["pairs"][0]["facets"]["relevance"].value == pytest.approx(1.0)
    assert "single category" in two["pairs"][0]["facets"]["persona_sensitive"].undefined
    three = agreement_report(
        [*obs, (0, "cy", {"relevance": 0, "persona_sensitive": "no", "personal_sensitive": "no"})],
        samples=0,
    )
    assert len(three["pairs"]) == 3 and set(three["alpha"]) == set(FACETS_BY_NAME)
