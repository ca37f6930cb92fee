"""Replayed release audits (core/simulate_audit.py): the frame a band leaves visible, and
simulated coverage against the coverage computed exactly."""

import numpy as np
import pytest

from core import release_audit, simulate_audit


def test_visible_frame_follows_the_band_and_the_baseline():
    p = np.array([0.01, 0.01, 0.1, 0.3, 0.3, 0.6, 0.9, 0.95, 0.05, 0.9])
    truth = np.array([0, 1, 0, 1, 0, 1, 0, 1, 1, 0], bool)
    trained = np.array([0, 0, 0, 0, 0, 0, 0, 0, 1, 1], bool)
    v = simulate_audit.visible_frame(p, truth, trained, band_low=0.05, band_high=0.8)
    # shown: 0, 1 (P < 0.05); review: 2, 3, 4, 5 -> released 2, 4; withheld 6, 7 and 3, 5;
    # training: 9 known not sensitive (visible), 8 known sensitive (withheld)
    assert (v.shown, v.reviewed, v.released, v.known) == (2, 4, 2, 1)
    assert v.labels.tolist() == [False, True, False, False, False]  # docs 0, 1, 2, 4, 9
    assert v.withheld == 10 - 5
    # baseline: untrained with P < 0.5 (0-4) plus the known not sensitive (9): 1 and 3 exposed
    assert (v.baseline_visible, v.baseline_exposed) == (6, 2)


def test_fixed_frame_holds_exactly_the_sensitive_asked_for():
    labels = simulate_audit.fixed_frame(1000, 37, seed=4)
    assert labels.sum() == 37 and len(labels) == 1000
    assert not labels[:37].all()  # shuffled


@pytest.mark.parametrize(("size", "sensitive", "confidence"), [(400, 40, 0.9), (2000, 300, 0.95)])
def test_simulated_coverage_agrees_with_the_exact_one(size, sensitive, confidence):
    frame = simulate_audit.fixed_frame(size, sensitive, seed=1)
    result = simulate_audit.simulate(
        [frame], confidence=confidence, margin=0.05, prevalence=0.1, audits=2000, seed=3
    )
    n = release_audit.sample_size(size, 0.05, confidence, prevalence=0.1).n
    assert result.n_mean == n
    exact = simulate_audit.exact_coverage(size, sensitive, n, confidence)
    assert exact >= confidence
    # 2,000 audits: the standard error is at most 0.011; allow 4 of them
    assert abs(result.coverage - exact) < 0.045, (result.coverage, exact)
    assert result.coverage_low <= result.coverage
    assert result.found_mean == pytest.approx(n * sensitive / size, rel=0.05)
    assert result.covered == round(result.coverage * 2000)


def test_exact_coverage_is_near_nominal_where_counts_are_large():
    # many found per audit: the discrete bound is close to its level, not far above it
    exact = simulate_audit.exact_coverage(100_000, 20_000, 1500, 0.95)
    assert 0.95 <= exact < 0.97


def test_simulate_refuses_nothing_to_do():
    with pytest.raises(ValueError, match="at least one audit"):
        simulate_audit.simulate([], confidence=0.95, margin=0.02)
