"""The stopping core: intervals, sample sizes and the four rules."""

import numpy as np
import pytest
from scipy.stats import hypergeom

from core import stopping


def test_clopper_pearson_matches_the_textbook_values():
    lo, hi = stopping.clopper_pearson(0, 10)
    assert lo == 0 and hi == pytest.approx(0.3085, abs=1e-4)
    lo, hi = stopping.clopper_pearson(5, 10)
    assert lo == pytest.approx(0.1871, abs=1e-4) and hi == pytest.approx(0.8129, abs=1e-4)


def test_hypergeometric_interval_covers_at_least_the_nominal_rate():
    rng = np.random.default_rng(0)
    population, n, true_k = 300, 40, 12
    frame = np.zeros(population, dtype=int)
    frame[:true_k] = 1
    covered = 0
    for _ in range(400):
        k = int(rng.choice(frame, size=n, replace=False).sum())
        lo, hi = stopping.hypergeometric_interval(k, n, population, 0.95)
        covered += lo <= true_k <= hi
    assert covered / 400 >= 0.95


def test_hypergeometric_interval_is_exact_at_its_ends():
    lo, hi = stopping.hypergeometric_interval(3, 50, 500, 0.95)
    assert hypergeom.sf(2, 500, lo, 50) > 0.025 >= hypergeom.sf(2, 500, lo - 1, 50)
    assert hypergeom.cdf(3, 500, hi, 50) > 0.025 >= hypergeom.cdf(3, 500, hi + 1, 50)


def test_a_census_of_the_frame_gives_the_exact_count():
    assert stopping.hypergeometric_interval(7, 100, 100) == (7, 7)


def _every_k_interval(k, n, population, confidence=0.95):
    """The interval as sasc computed it before bisection (issue 33): both tails at every K
    the sample allows, kept where both exceed (1 - confidence) / 2. Slow (O(N) tail
    evaluations): the reference the product's bisection must agree with."""
    if n == 0:
        return 0, population
    a = (1 - confidence) / 2
    ks = np.arange(k, population - (n - k) + 1)
    upper_tail = hypergeom.sf(k - 1, population, ks, n)
    lower_tail = hypergeom.cdf(k, population, ks, n)
    keep = (upper_tail > a) & (lower_tail > a)
    if not keep.any():
        return int(ks[0]), int(ks[-1])
    return int(ks[keep][0]), int(ks[keep][-1])


def _grid():
    # every sample of every small frame, at one confidence
    for population in range(1, 26):
        for n in range(population + 1):
            for k in range(n + 1):
                yield k, n, population, 0.95
    # a few small frames at other confidences, both sides of the usual ones
    for population in (7, 19):
        for n in range(population + 1):
            for k in range(n + 1):
                yield k, n, population, 0.5
                yield k, n, population, 0.999
    # larger frames: small and large samples, the ends of k and its middle
    for population, confidences in ((100, (0.8, 0.95, 0.99)), (1000, (0.9, 0.9999))):
        for n in (1, 10, 50, 99, population):
            for k in sorted({0, 1, 2, n // 2, n - 1, n} & set(range(n + 1))):
                for confidence in confidences:
                    yield k, n, population, confidence
    for k in (0, 1, 5, 20, 384, 385):  # the usual 385-document sample
        yield k, 385, 3000, 0.95


def test_hypergeometric_interval_agrees_with_evaluating_every_k():
    cases = list(_grid())
    differ = [
        (case, got, want)
        for case in cases
        if (got := stopping.hypergeometric_interval(*case)) != (want := _every_k_interval(*case))
    ]
    assert not differ, f"{len(differ)} of {len(cases)} differ, e.g. {differ[:3]}"


@pytest.mark.parametrize("population", [120, 10**6])
def test_hypergeometric_interval_ends_rise_with_k(population):
    n = 100
    ends = [stopping.hypergeometric_interval(k, n, population) for k in range(n + 1)]
    lows, highs = np.array([lo for lo, _ in ends]), np.array([hi for _, hi in ends])
    assert (np.diff(lows) > 0).all() and (np.diff(highs) > 0).all()
    assert (lows <= highs).all()


@pytest.mark.parametrize(
    ("k", "n", "population", "confidence"),
    [(3, 50, 500, 0.95), (5, 385, 10**7, 0.95), (0, 385, 10**7, 0.99), (200, 385, 10**7, 0.8)],
)
def test_hypergeometric_interval_ends_are_the_last_k_not_rejected(k, n, population, confidence):
    """L is the smallest K with P(X >= k | K) > a, U the largest with P(X <= k | K) > a."""
    a = (1 - confidence) / 2
    lo, hi = stopping.hypergeometric_interval(k, n, population, confidence)

    def upper(big_k):
        return hypergeom.sf(k - 1, population, big_k, n)

    def lower(big_k):
        return hypergeom.cdf(k, population, big_k, n)

    if k > 0:
        assert upper(lo) > a >= upper(lo - 1)
    assert lower(hi) > a >= lower(hi + 1)


def test_hypergeometric_interval_edge_cases():
    population, n = 10**7, 385
    lo, hi = stopping.hypergeometric_interval(0, n, population)
    assert lo == 0 and 0 < hi < population
    lo, hi = stopping.hypergeometric_interval(n, n, population)
    assert 0 < lo < population and hi == population
    for k in (0, 1, 60, 200):
        assert stopping.hypergeometric_interval(k, 200, 200) == (k, k)  # a census
    assert stopping.hypergeometric_interval(0, 0, 50) == (0, 50)  # nothing judged yet
    assert stopping.hypergeometric_interval(0, 1, 1) == (0, 0)
    assert stopping.hypergeometric_interval(1, 1, 1) == (1, 1)
    with pytest.raises(ValueError, match="frame"):
        stopping.hypergeometric_interval(0, 11, 10)
    with pytest.raises(ValueError):
        stopping.hypergeometric_interval(6, 5, 10)


@pytest.mark.parametrize("k", [0, 1, 5, 40, 385])
def test_hypergeometric_interval_approaches_clopper_pearson_on_a_large_frame(k):
    population = 10**7
    lo, hi = stopping.hypergeometric_interval(k, 385, population)
    cp_lo, cp_hi = stopping.clopper_pearson(k, 385)
    assert lo / population == pytest.approx(cp_lo, abs=2e-4)
    assert hi / population == pytest.approx(cp_hi, abs=2e-4)


def test_sample_size_is_the_classic_385_without_a_finite_frame_and_less_with_one():
    assert stopping.sample_size(0.05, 10**9) == 385
    assert stopping.sample_size(0.05, 1000) == 278
    assert stopping.sample_size(0.05, 1000, prevalence=0.05) < 100
    with pytest.raises(ValueError, match="margin"):
        stopping.sample_size(0, 100)


def test_estimate_brackets_recall_and_respects_what_was_found():
    est = stopping.estimate(
        frame=1000, sampled=100, sample_relevant=2, relevant_outside=40, found=50
    )
    point, lo, hi = est.recall
    assert lo <= point <= hi <= 1
    # 8 relevant found in the frame already: K cannot be below 8
    assert est.in_frame[1] >= 8
    assert est.remaining[1] >= 0


def test_target_size_is_cormack_and_grossmans_ten_for_seventy_percent():
    assert stopping.target_size(0.7, 0.95) == 9  # 0.7^9 = 0.040 <= 0.05 < 0.7^8
    assert 0.7**9 <= 0.05 < 0.7**8
    assert stopping.target_size(0.8, 0.95) == 14


def test_qbcb_needs_j_from_the_binomial_quantile():
    # r = 20 positives, target 0.8: P(Bin(20, .8) <= 18) = 0.931, <= 19 is 0.988
    assert stopping.qbcb_needed(20, 0.8, 0.95) == 20
    assert stopping.qbcb_needed(50, 0.8, 0.95) == 45
    assert stopping.qbcb_needed(5, 0.8, 0.95) is None  # 0.8^5 > 0.05: cannot certify


def test_qbcb_stops_only_once_j_sample_positives_are_reached():
    labels = [1] * 50 + [0] * 50
    reached = [True] * 44 + [False] * 56
    assert stopping.qbcb_verdict(labels, reached, target=0.8, confidence=0.95).stop is False
    reached = [True] * 45 + [False] * 55
    v = stopping.qbcb_verdict(labels, reached, target=0.8, confidence=0.95)
    assert v.stop is True and v.needed == 45


def test_target_method_asks_for_a_bigger_sample_when_it_lacks_targets():
    v = stopping.target_verdict([1, 0, 1], [True, False, True], target=0.7, confidence=0.95)
    assert v.stop is None and "larger sample" in v.why


def test_hypergeometric_test_follows_callaghan_and_mueller_hansen():
    # 95 relevant found before sampling, then 200 random of 1000 remaining without one
    # relevant: K_tar = floor(95 / .95 - 95 + 1) = 6; p = P(X <= 0 | 1000, 6, 200)
    p = stopping.hypergeometric_p(
        frame=1000, sampled=200, sample_relevant=0, found=95, relevant_outside=95, target=0.95
    )
    assert p == pytest.approx(hypergeom.cdf(0, 1000, 6, 200))
    v = stopping.hypergeometric_verdict(
        frame=1000,
        sampled=200,
        sample_relevant=0,
        found=95,
        relevant_outside=95,
        target=0.95,
        confidence=0.95,
    )
    assert v.stop is (p < 0.05)
    v = stopping.hypergeometric_verdict(
        frame=1000,
        sampled=20,
        sample_relevant=2,
        found=97,
        relevant_outside=95,
        target=0.95,
        confidence=0.95,
    )
    assert v.stop is False


def test_projection_counts_documents_ranked_above_the_needed_positive():
    assert stopping.projected_judgments([0.9, 0.5, 0.4, 0.1], [0.45, 0.2], 1) == 2
    assert stopping.projected_judgments([0.9], [0.45], 2) is None
    assert stopping.projected_by_expectation([0.5, 0.5, 0.5], 1.0) == 2


def _none_relevant_in_a_sample_of_50():
    """An estimate and the hypergeometric test's verdict (stop) for a sample of 50 of a
    frame of 100 with nothing relevant, 30 relevant found before the draw."""
    kw = {"frame": 100, "sampled": 50, "sample_relevant": 0, "relevant_outside": 30, "found": 30}
    return stopping.estimate(**kw), stopping.hypergeometric_verdict(
        **kw, target=0.8, confidence=0.95
    )


def test_recommendation_names_the_certifying_rule():
    est, v = _none_relevant_in_a_sample_of_50()
    assert v.stop
    assert stopping.recommend([v], est, target=0.8).startswith("Stop: Hypergeometric test")
    assert stopping.recommend([], None, target=0.8).startswith("Draw a check sample")


def test_recommendation_follows_the_check_sample_drawn_then_judged():
    """Once a sample is drawn the sentence no longer says to draw one: it says how many tasks
    are left to judge, and only the fully judged sample gives the verdict."""
    assert stopping.recommend([], None, target=0.8, drawn=40, waiting=40).startswith(
        "Judge the 40 remaining check-sample tasks (of 40 drawn)"
    )
    est, v = _none_relevant_in_a_sample_of_50()
    partly = stopping.recommend([v], est, target=0.8, drawn=51, waiting=1)
    assert (
        partly.startswith("Judge the 1 remaining check-sample task:") and "50 of the 51" in partly
    )
    judged = stopping.recommend([v], est, target=0.8, drawn=50, waiting=0)
    assert judged.startswith("Stop: Hypergeometric test")
    cannot = stopping.Verdict("target", None, "too few relevant", "recall >= 0.8")
    assert stopping.recommend([cannot], est, target=0.8, drawn=50).startswith(
        "Draw a larger check sample: the 50 judged cannot certify"
    )
