"""The knee rule cannot stop before 156 judgments (so a smaller budget never sees it fire),
and can at 156: the bound the active-learning page states (issue 21)."""

import numpy as np

from core import active


def test_no_gain_curve_shorter_than_156_makes_the_knee_rule_stop():
    rng = np.random.default_rng(0)
    for s in (2, 10, 60, 120, 155):
        curves = [np.ones(s, int), np.r_[1, np.zeros(s - 1, int)]]
        for r in range(1, s, max(1, s // 15)):
            curves.append(np.r_[np.ones(r, int), np.zeros(s - r, int)])  # all found first
        curves += [rng.integers(0, 2, s) for _ in range(50)]
        for gains in curves:
            assert not active.knee_stop(list(gains), candidates=2 * s).stop
        assert not active.knee_can_stop_within(s)


def test_the_knee_rule_can_stop_at_156_judgments():
    gains = [1] + [0] * 155
    assert active.knee_stop(gains, candidates=1000).stop
    assert active.knee_can_stop_within(156)
