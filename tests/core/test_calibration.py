"""Calibration (core.calibration), the band over a collection and its default rule
(core.routing.band_preview, band_rule) and the seconds per decision, on synthetic data."""

import pickle

import numpy as np
import pytest

from core import calibration, routing


def miscalibrated(n: int, seed: int = 0):
    """Labels drawn with a true P, and a classifier's P that is overconfident: the true
    log-odds tripled and shifted (P too far from 0.5, and too high)."""
    rng = np.random.default_rng(seed)
    true = 1 / (1 + np.exp(-rng.normal(-2.0, 1.5, n)))
    y = (rng.random(n) < true).astype(int)
    logit = np.log(true / (1 - true))
    raw = 1 / (1 + np.exp(-(3.0 * logit + 1.5)))
    return raw, y, true


@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
def test_calibration_lowers_the_brier_score_of_a_miscalibrated_classifier(method):
    raw, y, true = miscalibrated(3000)
    fitted = calibration.fit(raw, y, method=method)
    assert fitted.method == method and fitted.labels == 3000 and fitted.positives == y.sum()
    out = calibration.cross_fitted(raw, y, method=method)
    before, after = calibration.brier(raw, y), calibration.brier(out, y)
    assert after < before - 0.01  # a large, not a marginal, gain ...
    assert after < calibration.brier(true, y) + 0.002  # ... to near the true P's score
    # On fresh data from the same source, the fitted calibrator helps as much.
    raw2, y2, _ = miscalibrated(3000, seed=1)
    assert calibration.brier(fitted.apply(raw2), y2) < calibration.brier(raw2, y2) - 0.01
    # Monotone: calibration never reorders the documents.
    grid = np.linspace(0, 1, 201)
    assert np.all(np.diff(fitted.apply(grid)) >= -1e-12)


def test_auto_picks_isotonic_with_enough_labels_of_both_classes_else_sigmoid():
    raw, y, _ = miscalibrated(3000)
    assert min(y.sum(), len(y) - y.sum()) >= calibration.ISOTONIC_MIN_PER_CLASS
    assert calibration.fit(raw, y).method == calibration.ISOTONIC
    few = np.r_[np.flatnonzero(y == 1)[:20], np.flatnonzero(y == 0)[:300]]
    small = calibration.fit(raw[few], y[few])
    assert small.method == calibration.SIGMOID
    assert "20 labels of the smaller class" in small.reason


def test_isotonic_never_claims_a_probability_of_zero_or_one():
    raw = np.r_[np.linspace(0, 0.3, 200), np.linspace(0.7, 1, 200)]
    y = np.r_[np.zeros(200, int), np.ones(200, int)]  # separable: isotonic alone says 0 and 1
    c = calibration.fit(raw, y, method="isotonic")
    out = c.apply(np.array([0.0, 0.1, 0.9, 1.0]))
    assert out.min() == pytest.approx(1 / 402) and out.max() == pytest.approx(1 - 1 / 402)


def test_labels_of_one_class_leave_the_probabilities_as_they_are_with_the_reason():
    raw = np.array([0.1, 0.2, 0.3])
    for y in ([0, 0, 0], [1, 1, 1], []):
        c = calibration.fit(raw[: len(y)], y)
        assert c.method == calibration.NONE
        assert "calibration needs both" in c.reason
        assert np.array_equal(c.apply(raw), raw)
        assert c.describe().startswith("uncalibrated:")
    a = calibration.assess(raw, [0, 0, 0])
    assert a.brier_after is None and a.calibrator.method == calibration.NONE
    assert a.trust.startswith("Not calibrated")
    with pytest.raises(ValueError, match="3 probabilities and 2 labels"):
        calibration.fit(raw, [0, 1])


def test_a_calibration_that_does_not_lower_the_brier_score_is_not_kept():
    # Already calibrated: the true P. Recalibrating 300 labels can only add noise.
    _raw, y, true = miscalibrated(300, seed=2)
    a = calibration.assess(true, y)
    assert a.calibrator.method == calibration.NONE and a.rejected == "sigmoid"
    assert a.brier_rejected >= a.brier_before and a.brier_after is None
    assert "did not lower the cross-validated Brier score" in a.calibrator.reason
    assert np.array_equal(a.calibrator.apply(true), true)
    assert a.bins_after == a.bins_before
    assert a.trust.startswith("The classifier's own probabilities, measured on 300 labels")


def test_a_calibrator_pickles_and_maps_the_same_after():
    raw, y, _ = miscalibrated(1000)
    for method in ("isotonic", "sigmoid"):
        c = calibration.fit(raw, y, method=method)
        back = pickle.loads(pickle.dumps(c))  # noqa: S301 - our own bytes
        assert (back.method, back.labels, back.positives) == (c.method, 1000, int(y.sum()))
        assert np.array_equal(back.apply(raw), c.apply(raw))


def test_reliability_bins_add_up_and_hold_their_predictions():
    raw, y, _ = miscalibrated(1234)
    bins = calibration.reliability(raw, y, bins=10)
    assert sum(b.count for b in bins) == 1234
    assert sum(b.positives for b in bins) == y.sum()
    assert len(bins) == 10  # continuous predictions: ten bins of about equal counts
    assert max(b.count for b in bins) - min(b.count for b in bins) <= 2
    for b in bins:
        inside = (raw >= b.low) & ((raw < b.high) | (b is bins[-1]))
        assert inside.sum() == b.count
        assert b.mean_predicted == pytest.approx(raw[inside].mean())
        assert b.observed == pytest.approx(y[inside].mean())
        assert b.observed_low <= b.observed <= b.observed_high
    # The overconfident classifier's high bins predict more than is observed.
    assert bins[-1].mean_predicted > bins[-1].observed_high
    # Ties stay together: two distinct values give two bins.
    tied = calibration.reliability([0.1] * 50 + [0.9] * 50, [0] * 45 + [1] * 55)
    assert [(b.count, b.positives) for b in tied] == [(50, 5), (50, 50)]


def test_assess_reports_before_and_after_with_a_trust_sentence_that_counts_the_labels():
    raw, y, _ = miscalibrated(2000)
    a = calibration.assess(raw, y)
    d = a.as_dict()
    assert d["method"] == "sigmoid" and d["labels"] == 2000  # under 500 sensitive
    assert d["brier_after"] < d["brier_before"] and d["rejected"] == ""
    assert sum(b["count"] for b in d["bins"]) == 2000 == sum(b["count"] for b in d["bins_before"])
    assert "2,000 labels" in a.trust and "lowest bin" in a.trust
    few = calibration.assess(raw[:60], y[:60])
    assert "few labels" in few.trust


def band_data(n=5000, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.3, 3.0, n)
    return {f"d{i}": float(v) for i, v in enumerate(p)}


def test_the_preview_counts_add_up_and_route_as_split_does():
    p = band_data()
    released, withheld = {"d0", "d1", "x-released"}, {"d2", "d3"}
    unscored = {"new1", "new2", "d4"}  # d4 has a score: not unscored
    pv = routing.band_preview(
        p,
        low=0.02,
        high=0.6,
        released=released,
        withheld=withheld,
        unscored=unscored,
        seconds_per_decision=30,
    )
    total = len(set(p) | released | withheld | unscored)
    assert pv.total == total == pv.visible + pv.review + pv.withheld
    assert (pv.released, pv.withheld_by_decision, pv.unscored) == (3, 2, 2)
    undecided = {k: v for k, v in p.items() if k not in released | withheld}
    shown = [v for v in undecided.values() if v < 0.02]
    assert pv.visible == len(shown) + 3
    assert pv.withheld == sum(v >= 0.6 for v in undecided.values()) + 2
    assert pv.review == sum(0.02 <= v < 0.6 for v in undecided.values()) + 2
    # The expected number of sensitive documents among the visible is the sum of their P.
    assert pv.expected_sensitive == pytest.approx(sum(shown))
    assert pv.expected_low <= pv.expected_sensitive <= pv.expected_high
    assert (
        pv.expected_sensitive + pv.expected_sensitive_review + pv.expected_sensitive_withheld
        == (pytest.approx(sum(undecided.values())))
    )
    assert pv.review_hours == pytest.approx(pv.review * 30 / 3600)
    # The same routing as a searcher's split, document by document.
    ranking = sorted(set(p) | unscored)
    decided = {k: routing.RELEASED for k in released} | {k: routing.WITHHELD for k in withheld}
    s = routing.split(ranking, p, decided, band_low=0.02, band_high=0.6, k=len(ranking) + 10)
    assert len(s.shown) == pv.visible - 1  # x-released is in no ranking
    assert len(s.review) == pv.review


def test_the_expected_interval_covers_the_simulated_count():
    p = band_data(20000, seed=3)
    for low in (0.005, 0.05, 0.3):
        pv = routing.band_preview(p, low=low, high=0.9, seconds_per_decision=30)
        shown = np.array([v for v in p.values() if v < low])
        rng = np.random.default_rng(0)
        counts = (rng.random((2000, len(shown))) < shown).sum(axis=1)
        inside = np.mean((counts >= pv.expected_low) & (counts <= pv.expected_high))
        assert inside >= 0.93, (low, pv.interval, inside)


def brute_force(p, grid, share, cap, released=0):
    """The rule by hand: every grid value, every document, no sorting."""
    values = list(p.values())
    best_low = None
    for t in grid:
        shown = [v for v in values if v < t]
        feasible = sum(shown) <= share * (len(shown) + released) + 1e-12
        if feasible and (best_low is None or len(shown) > sum(v < best_low for v in values)):
            best_low = t
    best_high = None
    for u in grid:
        if u >= best_low and sum(best_low <= v < u for v in values) <= cap:
            best_high = u
    return best_low, best_high


def test_the_band_rule_meets_its_constraints_and_is_the_widest_on_a_brute_force_grid():
    p = band_data(600, seed=5)
    grid = np.round(np.linspace(0, 1, 101), 2)
    rule = routing.band_rule(
        p, max_sensitive_share=0.01, max_review_documents=80, seconds_per_decision=30, grid=grid
    )
    pv = rule.preview
    assert pv.expected_sensitive <= 0.01 * pv.visible
    assert pv.review <= 80
    low, high = brute_force(p, grid, 0.01, 80)
    visible_at = lambda t: sum(v < t for v in p.values())  # noqa: E731
    assert visible_at(rule.low) == visible_at(low)  # as wide as the widest
    assert rule.high == high
    assert "widest visible set" in rule.rule and "1.0% of the visible" in rule.rule
    # The next grid value up breaks the target (else the rule would have taken it).
    nxt = grid[grid > rule.low][0]
    over = routing.band_preview(p, low=nxt, high=nxt, seconds_per_decision=30)
    assert over.expected_sensitive > 0.01 * over.visible or visible_at(nxt) == pv.visible


def test_the_band_rule_with_hours_an_absolute_target_and_released_documents():
    p = band_data(3000, seed=7)
    rule = routing.band_rule(
        p,
        max_sensitive_share=None,
        max_sensitive=2.0,
        max_review_hours=1.0,
        seconds_per_decision=36,
        released={"r1", "r2"},
    )
    pv = rule.preview
    assert pv.expected_sensitive <= 2.0 and pv.review <= 100  # 1 h at 36 s
    assert pv.released == 2
    assert rule.low < 1
    nxt = round(rule.low + 0.001, 3)
    wider = routing.band_preview(p, low=nxt, high=nxt, seconds_per_decision=36)
    assert wider.expected_sensitive > 2.0 or wider.visible == pv.visible
    # Released documents widen what a share allows (they count among the visible with P 0).
    share = routing.band_rule(p, max_review_documents=50, seconds_per_decision=36)
    more = routing.band_rule(
        p,
        max_review_documents=50,
        seconds_per_decision=36,
        released={f"r{i}" for i in range(500)},
    )
    assert more.low >= share.low
    with pytest.raises(ValueError, match="max_review_documents, max_review_hours"):
        routing.band_rule(p, seconds_per_decision=36)


def test_unscored_documents_beyond_the_review_cap_close_the_band_and_say_so():
    p = band_data(100)
    rule = routing.band_rule(
        p,
        max_review_documents=3,
        seconds_per_decision=30,
        unscored={f"n{i}" for i in range(5)},
    )
    assert rule.high == rule.low and "5 unscored documents alone exceed" in rule.limited
    assert rule.preview.review == 5


def test_the_band_rule_is_fast_on_half_a_million_documents():
    import time

    rng = np.random.default_rng(1)
    p = {i: float(v) for i, v in enumerate(rng.beta(0.3, 3.0, 500_000))}
    started = time.perf_counter()
    rule = routing.band_rule(p, max_review_documents=5000, seconds_per_decision=30)
    assert time.perf_counter() - started < 2.0
    assert rule.preview.total == 500_000


def test_seconds_per_decision_from_the_times_decisions_were_recorded():
    # Archivist a: 0, 40, 100 (a group of three within a second), then a pause, then 2000.
    # Archivist b: 10, 25.
    decisions = [
        ("a", 0),
        ("a", 40),
        ("a", 100),
        ("a", 100.2),
        ("a", 100.4),
        ("a", 2000),
        ("a", 2030),
        ("b", 10),
        ("b", 25),
    ]
    got = routing.seconds_per_decision(decisions)
    # 40 - 0 = 40; (100 - 40) / 3 = 20 each for the group; 2000 after a pause: unmeasured;
    # 2030 - 2000 = 30; b: 15. Oldest first.
    assert got == [15, 40, 20, 20, 20, 30]
