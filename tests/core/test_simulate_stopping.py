"""The stopping simulation on a small synthetic collection: what it records per run."""

import numpy as np
import scipy.sparse as sp

from core import simulate_stopping
from core.simulate_learning import TopicData


def _world(n=300, relevant=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((n, 50)) * (rng.random((n, 50)) < 0.1)
    x[:relevant, :5] += 1.0  # the relevant documents share five terms
    grades = {i: 2 for i in range(relevant)}
    return sp.csr_matrix(x), TopicData(number="1", pool=np.arange(n), grades=grades)


def test_each_rule_stops_once_per_target_and_the_oracle_is_the_cheapest_stop_at_target():
    matrix, topic = _world()
    settings = simulate_stopping.StopSettings(sample_pct=50, targets=(0.7, 0.9))
    run = simulate_stopping.run(matrix, topic, settings, random_seed=1)
    assert set(run["stops"]) == {
        f"{r}@{t:g}" for r in ("knee", "target", "qbcb", "hypergeometric") for t in (0.7, 0.9)
    }
    assert run["oracle"][0.7] <= run["oracle"][0.9] <= run["pool"]
    for key, stop in run["stops"].items():
        target = float(key.split("@")[1])
        if stop["recall"] >= target and key.startswith("knee"):
            assert stop["cost"] >= run["oracle"][target]  # nobody beats the oracle
    assert 0 <= run["coverage"] <= 1


def test_summary_counts_failures_below_the_target():
    matrix, topic = _world()
    settings = simulate_stopping.StopSettings(sample_pct=50, targets=(0.8,))
    result = simulate_stopping.simulate_stopping(matrix, [topic], settings, seeds=[0, 1])
    rows = result["summary"]["rules"]
    assert result["summary"]["runs"] == 2
    for row in rows.values():
        recalls = np.array(row["recalls"])
        assert row["failure_rate"] == np.mean(recalls < 0.8)
        assert row["cost_ratio_mean"] > 0


def test_summary_reads_coverage_at_the_first_stop_and_failures_among_fired_runs():
    matrix, topic = _world()
    settings = simulate_stopping.StopSettings(sample_pct=50, targets=(0.8, 0.9))
    result = simulate_stopping.simulate_stopping(matrix, [topic], settings, seeds=[0, 1, 2])
    runs, summary = result["runs"], result["summary"]
    for key, row in summary["rules"].items():
        stops = [r["stops"][key] for r in runs]
        below = [s["recall"] < row["target"] - 1e-9 for s in stops]
        fired = [s["fired"] for s in stops]
        assert row["coverage"] == 1 - row["failure_rate"] == 1 - np.mean(below)
        assert row["fired_runs"] == sum(fired)
        assert row["failures_when_fired"] == sum(b and f for b, f in zip(below, fired, strict=True))
        if row["fired_runs"]:
            assert row["failure_rate_when_fired"] == row["failures_when_fired"] / sum(fired)
            held = [s["interval_holds"] for s in stops if s["fired"]]
            assert row["interval_coverage_when_fired"] == np.mean(held)
        else:
            assert np.isnan(row["failure_rate_when_fired"])
            assert np.isnan(row["interval_coverage_when_fired"])
    assert summary["coverage_first_look"] == np.mean([r["coverage_first_look"] for r in runs])
