"""Stopping rules evaluated by simulation on collections with qrels, pure (no Django).

One run = one topic under one random seed. The pool is judged as the live product does:
seeds first (IS: 5 relevant and 5 non-relevant pool documents, drawn with the run's seed),
then a check sample drawn at random from the rest of the pool (the frame), judged at once,
then the review: batch after batch picked by the strategy from a classifier trained on the
review's own judgments (never on the check sample). A check-sample document the selection
picks is *reached* at no cost (it is already judged), as in ``core.stopping``.

After every batch each rule is asked, for each recall target; the first time it says stop
is where it stops (a rule that never says stop reviews the whole pool). For each rule and
target the run records the recall actually reached there, the judgments spent, and the
oracle's cost: the fewest judgments down the same review order (without a sample) that
reach the target, and whether the estimate's interval shown at that stop held the true
recall. At every batch it also records whether the estimate's interval holds the true recall
(``coverage``, averaged over the run's batches; ``coverage_first_look``: the first batch
alone, before any review judgment).

Coverage is read at the first stop (``summarise``): the share of runs whose recall there
meets the target, over all runs (a rule that never says stop reviews the whole pool and
meets it) and among the runs where the rule fired. Averages over batches read higher than
either: late batches, with most relevant documents found, are covered almost surely.

Counting: the knee method needs no sample, so its cost and recall are those of the review
alone (seeds, review judgments and the sample documents the review reached, which it would
have judged itself); the sample-based rules pay for the whole sample and count its relevant
documents as found.
"""

import math
from dataclasses import dataclass

import numpy as np

from core import active, stopping
from core.simulate_learning import IS_NONRELEVANT, IS_RELEVANT, TopicData, _topic_salt


@dataclass
class StopSettings:
    strategy: str = "cal"
    batch_pct: float = 5.0
    sample_pct: float = 20.0  # check sample, % of the frame
    targets: tuple[float, ...] = (0.8, 0.9)
    confidence: float = 0.95
    c: float = active.DEFAULT_C
    min_topic_relevant: int = IS_RELEVANT + 5  # seeds take 5; the rest must be findable


def _seeds(topic: TopicData, rng) -> list[int]:
    truth = topic.truth(topic.pool)
    rel, non = topic.pool[truth == 1], topic.pool[truth == 0]
    return [
        *rng.permutation(rel)[:IS_RELEVANT].tolist(),
        *rng.permutation(non)[:IS_NONRELEVANT].tolist(),
    ]


def run(matrix, topic: TopicData, settings: StopSettings, random_seed: int) -> dict:
    """Simulate one topic under one seed; return what each rule did (see the module)."""
    rng = np.random.default_rng(random_seed * 100_003 + _topic_salt(topic.number))
    pool = np.asarray(topic.pool, dtype=np.int64)
    truth_of = {int(r): int(t) for r, t in zip(pool, topic.truth(pool), strict=True)}
    total = sum(truth_of.values())
    seeds = [int(r) for r in _seeds(topic, rng)]
    frame = np.array(sorted(set(pool.tolist()) - set(seeds)), dtype=np.int64)
    n = max(1, math.ceil(settings.sample_pct / 100 * len(frame)))
    sample = [int(r) for r in rng.choice(frame, size=min(n, len(frame)), replace=False)]
    sample_set = set(sample)
    sample_labels = [truth_of[r] for r in sample]
    k = sum(sample_labels)
    outside = sum(truth_of[r] for r in seeds)
    size = max(1, math.ceil(settings.batch_pct / 100 * len(pool)))

    reviewed = list(seeds)  # judged by the review (seeds included), in order
    order = list(seeds)  # the review's order without a sample: reviewed + reached
    reached: set[int] = set()
    stops: dict[tuple[str, float], dict] = {}
    coverage = []
    step = 0
    while True:
        found_review = sum(truth_of[r] for r in order)
        found = sum(truth_of[r] for r in set(reviewed) | sample_set)
        est = stopping.estimate(
            frame=len(frame),
            sampled=len(sample),
            sample_relevant=k,
            relevant_outside=outside,
            found=found,
            confidence=settings.confidence,
        )
        true_recall = found / total
        coverage.append(est.recall[1] - 1e-12 <= true_recall <= est.recall[2] + 1e-12)
        exhausted = len(order) >= len(pool)
        gains = [truth_of[r] for r in reviewed]
        sample_reached = [r in reached for r in sample]
        for target in settings.targets:
            verdicts = [
                stopping.knee_verdict(gains, candidates=len(pool)),
                *stopping.sample_verdicts(
                    sample_labels,
                    sample_reached,
                    frame=len(frame),
                    found=found,
                    relevant_outside=outside,
                    target=target,
                    confidence=settings.confidence,
                ),
            ]
            for v in verdicts:
                key = (v.rule, target)
                if key in stops or not (v.stop or exhausted):
                    continue
                if v.rule == "knee":
                    cost, recall = len(order), found_review / total
                else:
                    cost = len(reviewed) + len(sample_set - set(reviewed))
                    recall = found / total
                stops[key] = {
                    "fired": bool(v.stop),
                    "cost": cost,
                    "recall": recall,
                    "estimate": est.recall,
                    "interval_holds": bool(coverage[-1]),
                }
        if exhausted:
            break
        labels = [truth_of[r] for r in reviewed]
        it = active.iterate(
            matrix,
            reviewed,
            labels,
            pool,
            settings.strategy,
            size,
            seed=random_seed + step,
            c=settings.c,
            exclude=sorted(reached),
        )
        if not it.batch:
            break
        for r in it.batch:
            order.append(int(r))
            if int(r) in sample_set:
                reached.add(int(r))
            else:
                reviewed.append(int(r))
        step += 1
    cumulative = np.cumsum([truth_of[r] for r in order])
    oracle = {
        t: int(np.flatnonzero(cumulative >= t * total - 1e-9)[0]) + 1 for t in settings.targets
    }
    return {
        "topic": topic.number,
        "seed": random_seed,
        "pool": len(pool),
        "relevant": total,
        "frame": len(frame),
        "sample": len(sample),
        "sample_relevant": k,
        "oracle": oracle,
        "stops": {f"{rule}@{t:g}": s for (rule, t), s in stops.items()},
        "coverage": float(np.mean(coverage)),
        "coverage_first_look": bool(coverage[0]),
        "coverage_points": len(coverage),
    }


def summarise(runs: list[dict], settings: StopSettings) -> dict:
    """Per rule and target, over the runs: recall at stop (mean, quartiles, 5th
    percentile), failure rate (below the target) and coverage (its complement: recall at
    the first stop meets the target), how often the rule fired at all and, among the runs
    where it fired, how often it failed and how often the interval shown then held the
    true recall; the mean cost
    and its ratio to the oracle's. And the estimate's coverage averaged over batches and at
    the first look."""
    out = {}
    for target in settings.targets:
        for rule in stopping.RULES:
            key = f"{rule}@{target:g}"
            rows = [(r["stops"][key], r["oracle"][target]) for r in runs if key in r["stops"]]
            if not rows:
                continue
            recall = np.array([s["recall"] for s, _o in rows])
            fired = np.array([s["fired"] for s, _o in rows], dtype=bool)
            failed = recall < target - 1e-9
            cost = np.array([s["cost"] for s, _o in rows], dtype=float)
            oracle = np.array([o for _s, o in rows], dtype=float)
            out[key] = {
                "rule": rule,
                "target": target,
                "runs": len(rows),
                "fired": float(fired.mean()),
                "fired_runs": int(fired.sum()),
                "failures_when_fired": int((failed & fired).sum()),
                "failure_rate_when_fired": (
                    float(failed[fired].mean()) if fired.any() else float("nan")
                ),
                "recall_mean": float(recall.mean()),
                "recall_p5": float(np.percentile(recall, 5)),
                "recall_q1": float(np.percentile(recall, 25)),
                "recall_median": float(np.median(recall)),
                "failure_rate": float(failed.mean()),
                "coverage": float(1 - failed.mean()),
                "interval_coverage_when_fired": (
                    float(np.mean([s["interval_holds"] for s, _o in rows if s["fired"]]))
                    if fired.any()
                    else float("nan")
                ),
                "cost_mean": float(cost.mean()),
                "oracle_cost_mean": float(oracle.mean()),
                "cost_ratio_mean": float(np.mean(cost / oracle)),
                "excess_mean": float(np.mean(cost - oracle)),
                "recalls": recall.tolist(),
            }
    coverage = [r["coverage"] for r in runs]
    return {
        "rules": out,
        "coverage_mean": float(np.mean(coverage)) if coverage else float("nan"),
        "coverage_first_look": (
            float(np.mean([r["coverage_first_look"] for r in runs])) if runs else float("nan")
        ),
        "runs": len(runs),
        "mean_pool": float(np.mean([r["pool"] for r in runs])) if runs else float("nan"),
        "mean_relevant": float(np.mean([r["relevant"] for r in runs])) if runs else float("nan"),
        "mean_sample": float(np.mean([r["sample"] for r in runs])) if runs else float("nan"),
        "mean_sample_relevant": (
            float(np.mean([r["sample_relevant"] for r in runs])) if runs else float("nan")
        ),
    }


def simulate_stopping(
    matrix, topics: list[TopicData], settings: StopSettings, seeds: list[int]
) -> dict:
    """Every usable topic under every seed; topics with fewer than ``min_topic_relevant``
    relevant pool documents are left out (and listed)."""
    runs, few = [], []
    for topic in topics:
        if topic.truth(topic.pool).sum() < settings.min_topic_relevant:
            few.append(topic.number)
            continue
        for seed in seeds:
            runs.append(run(matrix, topic, settings, seed))
    return {"runs": runs, "summary": summarise(runs, settings), "left_out": few}
