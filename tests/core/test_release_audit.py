"""The release audit (core/release_audit.py, core.stopping.hypergeometric_upper): the bound
against the hypergeometric cdf at every K, its edges, the calculator against scans, and the
sample's reproducibility."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import beta, hypergeom

from core import release_audit, stopping


def _every_k_upper(k, n, population, confidence):
    """The largest K the sample allows with P(X <= k | K) > 1 - confidence, by evaluating the
    cdf at every K (O(N)): the reference."""
    if n == 0:
        return population
    ks = np.arange(k, population - (n - k) + 1)
    keep = hypergeom.cdf(k, population, ks, n) > 1 - confidence
    return int(ks[keep][-1])


def test_upper_agrees_with_the_cdf_at_every_k_on_every_small_frame():
    differ, cases = [], 0
    for population in range(1, 31):
        for n in range(1, population + 1):
            for k in range(n + 1):
                for confidence in (0.9, 0.95, 0.99):
                    cases += 1
                    got = stopping.hypergeometric_upper(k, n, population, confidence)
                    want = _every_k_upper(k, n, population, confidence)
                    if got != want:
                        differ.append((k, n, population, confidence, got, want))
    assert cases > 10_000
    assert differ == []


@settings(max_examples=300, deadline=None)
@given(
    population=st.integers(1, 3000),
    n_share=st.floats(0.0, 1.0),
    k_share=st.floats(0.0, 1.0),
    confidence=st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99, 0.999]),
)
def test_upper_agrees_with_the_cdf_at_every_k(population, n_share, k_share, confidence):
    n = max(1, round(n_share * population))
    k = round(k_share * n)
    assert stopping.hypergeometric_upper(k, n, population, confidence) == _every_k_upper(
        k, n, population, confidence
    )


@settings(max_examples=200, deadline=None)
@given(
    population=st.integers(2, 2000),
    n_share=st.floats(0.0, 1.0),
    k_share=st.floats(0.0, 1.0),
    confidence=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_upper_is_the_two_sided_intervals_upper_end_at_twice_the_error(
    population, n_share, k_share, confidence
):
    n = max(1, round(n_share * population))
    k = round(k_share * n)
    two_sided = 1 - 2 * (1 - confidence)
    assert (
        stopping.hypergeometric_upper(k, n, population, confidence)
        == stopping.hypergeometric_interval(k, n, population, two_sided)[1]
    )


def test_upper_at_its_edges():
    # k = 0 on a frame of 1,000 with 100 drawn at 95%: (900 choose 100) / (1000 choose 100)
    u = stopping.hypergeometric_upper(0, 100, 1000, 0.95)
    assert u == 28
    assert hypergeom.pmf(0, 1000, 28, 100) > 0.05 >= hypergeom.pmf(0, 1000, 29, 100)
    # k = n: only the n - k = 0 negatives seen are ruled out
    assert stopping.hypergeometric_upper(100, 100, 1000, 0.95) == 1000
    assert stopping.hypergeometric_upper(99, 100, 1000, 0.95) == 999
    # a census knows K
    assert [stopping.hypergeometric_upper(k, 50, 50, 0.99) for k in (0, 7, 50)] == [0, 7, 50]
    # nothing drawn: anything is possible
    assert stopping.hypergeometric_upper(0, 0, 1000, 0.95) == 1000
    with pytest.raises(ValueError, match="confidence"):
        stopping.hypergeometric_upper(0, 10, 100, 1.0)
    with pytest.raises(ValueError, match="a sample of 11"):
        stopping.hypergeometric_upper(0, 11, 10, 0.95)


def test_upper_at_ten_million_matches_a_scan_near_its_answer():
    # The full O(N) reference is too slow at N = 10^7; near the answer the cdf must cross.
    for k, n, confidence in ((0, 459, 0.99), (5, 385, 0.95), (40, 2000, 0.9)):
        u = stopping.hypergeometric_upper(k, n, 10**7, confidence)
        assert hypergeom.cdf(k, 10**7, u, n) > 1 - confidence
        assert hypergeom.cdf(k, 10**7, u + 1, n) <= 1 - confidence
    # and the binomial bound scaled to the frame is close above it
    u = stopping.hypergeometric_upper(5, 385, 10**7, 0.95)
    cp = stopping.clopper_pearson_upper(5, 385, 0.95)
    assert u / 1e7 == pytest.approx(cp, rel=2e-3) and u <= cp * 1e7 + 1


def test_clopper_pearson_upper():
    assert stopping.clopper_pearson_upper(0, 100, 0.95) == pytest.approx(1 - 0.05 ** (1 / 100))
    assert stopping.clopper_pearson_upper(3, 50, 0.9) == pytest.approx(beta.ppf(0.9, 4, 47))
    assert stopping.clopper_pearson_upper(50, 50, 0.9) == 1.0
    # one-sided at c is the two-sided interval's upper end at 2c - 1
    assert stopping.clopper_pearson_upper(7, 80, 0.95) == pytest.approx(
        stopping.clopper_pearson(7, 80, 0.9)[1]
    )


# --- The certificate ----------------------------------------------------------------------------


def test_certificate_figures():
    c = release_audit.certificate(10_000, 400, 6, 0.95)
    assert c.rate == 6 / 400
    assert c.number == 150.0
    assert c.upper_number == _every_k_upper(6, 400, 10_000, 0.95)
    assert c.upper_number == 291  # a regression value: the brute force above agrees
    assert c.upper_rate == 0.0291
    assert c.cp_upper_rate == pytest.approx(beta.ppf(0.95, 7, 394))
    assert c.cp_upper_number == math.floor(10_000 * c.cp_upper_rate)
    assert c.cp_upper_number >= c.upper_number  # binomial: wider on a finite frame
    assert c.remaining_upper == 291 - 6
    words = c.sentence()
    assert "at most 291 (2.91%)" in words and "95% confidence" in words
    assert "at most 285 remain visible" in words


def test_certificate_edges():
    zero = release_audit.certificate(1000, 100, 0, 0.95)
    assert (zero.rate, zero.number, zero.upper_number) == (0.0, 0.0, 28)
    assert zero.cp_upper_rate == pytest.approx(1 - 0.05 ** (1 / 100))
    every = release_audit.certificate(1000, 100, 100, 0.95)
    assert (every.upper_number, every.upper_rate, every.cp_upper_rate) == (1000, 1.0, 1.0)
    census = release_audit.certificate(300, 300, 4, 0.99)
    assert (census.upper_number, census.remaining_upper, census.number) == (4, 0, 4.0)
    assert census.cp_upper_number > 4  # the binomial bound does not know it was a census


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((1000, 0, 0, 0.95), "no document judged"),
        ((1000, 10, 0, 0.0), "confidence"),
        ((1000, 10, 0, 1.0), "confidence"),
        ((1000, 10, 0, 95), "confidence"),
        ((1000, 10, 11, 0.95), "11 found sensitive in a sample of 10"),
        ((1000, 10, -1, 0.95), "found sensitive"),
        ((10, 11, 0, 0.95), "a sample of 11 from a frame of 10"),
        ((0, 0, 0, 0.95), "the frame is empty"),
    ],
)
def test_certificate_refuses(args, message):
    with pytest.raises(ValueError, match=message):
        release_audit.certificate(*args)


def test_the_bound_covers_at_its_confidence_for_every_k_on_a_small_frame():
    """Exact coverage, not simulated: for every true K, sum P(k | K) over the k whose bound
    is at least K."""
    population, n = 60, 15
    for confidence in (0.8, 0.9, 0.95):
        uppers = [stopping.hypergeometric_upper(k, n, population, confidence) for k in range(n + 1)]
        for true_k in range(population + 1):
            covered = sum(
                hypergeom.pmf(k, population, true_k, n) for k in range(n + 1) if uppers[k] >= true_k
            )
            assert covered >= confidence - 1e-9, (confidence, true_k, covered)


# --- The calculator -----------------------------------------------------------------------------


@pytest.mark.parametrize("population", [40, 300, 2000])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
@pytest.mark.parametrize("margin", [0.02, 0.1])
def test_zero_failure_n_is_the_smallest_n_a_scan_finds(population, confidence, margin):
    size = release_audit.sample_size(population, margin, confidence)

    def ok(n):
        return stopping.hypergeometric_upper(0, n, population, confidence) / population <= margin

    assert size.zero_failure == next(n for n in range(1, population + 1) if ok(n))
    assert size.n == size.zero_failure == size.planned
    assert size.zero_failure_bound <= margin
    assert size.prevalence == 0 and size.rows()[0][1] == size.zero_failure


def test_zero_failure_n_on_a_large_frame_is_the_binomial_one():
    # ln(0.05) / ln(0.98) = 148.3: 149 documents with none sensitive give 2% at 95%
    size = release_audit.sample_size(10**7, 0.02, 0.95)
    assert size.binomial == 149
    assert size.zero_failure == 149
    assert release_audit.sample_size(10**7, 0.01, 0.99).zero_failure == 459
    assert release_audit.sample_size(10**7, 0.05, 0.90).zero_failure == 45
    # a small frame needs fewer (finite-population correction)
    assert release_audit.sample_size(1000, 0.02, 0.95).zero_failure == 132


@pytest.mark.parametrize(
    ("population", "confidence", "margin", "prevalence"),
    [
        (1000, 0.95, 0.02, 0.01),
        (1000, 0.9, 0.05, 0.05),
        (3000, 0.99, 0.02, 0.05),
        (3000, 0.95, 0.1, 0.5),
        (500, 0.95, 0.02, 0.2),
    ],
)
def test_planned_n_keeps_its_promise_and_is_near_the_smallest(
    population, confidence, margin, prevalence
):
    size = release_audit.sample_size(population, margin, confidence, prevalence=prevalence)

    def bound(n):
        k = math.ceil(prevalence * n - 1e-12)
        return k, stopping.hypergeometric_upper(k, n, population, confidence) / population

    k, upper = bound(size.planned)
    assert (size.planned_found, size.planned_bound) == (k, upper)
    assert upper <= prevalence + margin + 1e-12
    smallest = next(n for n in range(1, population + 1) if bound(n)[1] <= prevalence + margin)
    # the rounding of p n makes the rule saw-toothed: the bisection's n is within 20% of the
    # smallest n that passes
    assert smallest <= size.planned <= 1.2 * smallest
    assert size.n == max(size.planned, size.zero_failure)
    assert len(size.rows()) == 2


def test_planned_n_grows_with_prevalence_and_confidence():
    ns = [
        release_audit.sample_size(10**6, 0.02, c, prevalence=p).n
        for c in (0.9, 0.95, 0.99)
        for p in (0.0, 0.01, 0.05, 0.2)
    ]
    by_c = np.array(ns).reshape(3, 4)
    assert (np.diff(by_c, axis=1) > 0).all() and (np.diff(by_c, axis=0) > 0).all()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"frame": 100, "margin": 0, "confidence": 0.95}, "margin"),
        ({"frame": 100, "margin": 1.5, "confidence": 0.95}, "margin"),
        ({"frame": 100, "margin": 0.02, "confidence": 1}, "confidence"),
        ({"frame": 100, "margin": 0.02, "confidence": 0.95, "prevalence": 0.7}, "prevalence"),
        ({"frame": 0, "margin": 0.02, "confidence": 0.95}, "the frame is empty"),
    ],
)
def test_sample_size_refuses(kwargs, message):
    with pytest.raises(ValueError, match=message):
        release_audit.sample_size(**kwargs)


def test_a_tiny_frame_is_audited_by_census():
    size = release_audit.sample_size(20, 0.02, 0.95)
    # one sensitive in 20 is 5% > 2%: only K = 0 may stay; 19 of 20 found clean leave it
    # unseen with probability 1/20 = 0.05, not above 1 - 0.95, so 19 do, 18 do not
    assert size.n == 19 and size.zero_failure_bound == 0.0
    assert release_audit.sample_size(20, 0.02, 0.96).n == 20


# --- The sample ---------------------------------------------------------------------------------


def test_same_seed_and_frame_give_the_same_sample_whatever_the_frames_order():
    frame = [f"doc{i}" for i in range(5000)]
    a = release_audit.draw_sample(frame, 50, seed=12345)
    b = release_audit.draw_sample(list(reversed(frame)), 50, seed=12345)
    assert a == b
    assert a.seed == 12345 and a.frame == 5000 and len(set(a.ids)) == 50
    assert set(a.ids) <= set(frame)
    c = release_audit.draw_sample(frame, 50, seed=12346)
    assert c.ids != a.ids
    # a shorter sample with the same seed is the longer one's prefix (draw order)
    assert release_audit.draw_sample(frame, 20, seed=12345).ids == a.ids[:20]


def test_the_sample_is_pinned_to_its_seed():
    """The draw depends only on Python's Mersenne Twister random(), which Python keeps from
    version to version: these positions must never change."""
    # Random(7).random() starts 0.32383..., 0.15084...: 0 + int(0.3238 x 1000) = 323,
    # 1 + int(0.1508 x 999) = 151, ...
    assert release_audit.sample_positions(1000, 5, seed=7) == [323, 151, 651, 75, 537]
    assert release_audit.draw_sample(["c", "a", "b"], 3, seed=1).ids == ("a", "c", "b")


def test_a_fresh_seed_is_recorded():
    sample = release_audit.draw_sample(range(100), 10)
    again = release_audit.draw_sample(range(100), 10, seed=sample.seed)
    assert again.ids == sample.ids


def test_sample_edges_and_refusals():
    assert release_audit.draw_sample(range(10), 10, seed=3).ids != tuple(range(10))  # shuffled
    assert sorted(release_audit.draw_sample(range(10), 10, seed=3).ids) == list(range(10))
    assert release_audit.draw_sample(range(10), 0, seed=3).ids == ()
    with pytest.raises(ValueError, match="twice"):
        release_audit.draw_sample([1, 2, 2, 3], 2, seed=0)
    with pytest.raises(ValueError, match="a sample of 11 from a frame of 10"):
        release_audit.draw_sample(range(10), 11, seed=0)


def test_every_position_is_drawn_equally_often():
    """A chi-squared check of the draw over many seeds: 20 positions, 5 drawn, 20,000 draws."""
    from scipy.stats import chisquare

    counts = np.zeros(20)
    first = np.zeros(20)
    for seed in range(20_000):
        positions = release_audit.sample_positions(20, 5, seed)
        counts[positions] += 1
        first[positions[0]] += 1
    assert chisquare(counts).pvalue > 0.001
    assert chisquare(first).pvalue > 0.001  # the first drawn is uniform too (prefixes)
