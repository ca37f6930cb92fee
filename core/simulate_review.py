"""Replaying a topic set through the archivist loop with an oracle archivist, pure.

The topics are dealt into rounds (new searches each round); every query's ranking is split by
the current classifier (``core.routing``), the oracle archivist decides every document
asked about from the true labels (withhold the sensitive, release the rest), decisions hold
for the following queries and rounds, and after each round the classifier is retrained on the
seed labels plus every decision. Per round: the classifier's cross-validated F1 and its F1 on
every labelled document it was not trained on (a fixed yardstick: the cross-validated one is
measured on a training set that grows with the hardest documents), documents shown
at once, documents reviewed, sensitive documents shown, and O-CS-DCG@k.
"""

import math

import numpy as np

from core import measures, routing


def simulate(
    *,
    rankings: dict[str, list[str]],
    relevance: dict[str, dict[str, int]],
    truth: dict[str, bool],
    seed_labels: dict[str, int],
    train,
    rounds: int = 5,
    band_low: float = 0.2,
    band_high: float = 0.8,
    k: int = 10,
    effort: float = 0.1,
    most_uncertain: int | None = None,
) -> list[dict]:
    """``train(labels) -> (p: docid -> P(sensitive), report dict)``; returns one dict per round."""
    labels = dict(seed_labels)
    decided: dict[str, str] = {}
    out = []
    qids = list(rankings)
    for r in range(1, rounds + 1):
        p, report = train(labels)
        heldout = [d for d in truth if d not in labels and d in p]
        threshold = report.get("threshold", 0.5)
        heldout_f1 = _f1([truth[d] for d in heldout], [p[d] >= threshold for d in heldout])
        shown_counts, reviewed_counts, sensitive_shown, scores = [], [], 0, []
        for qid in qids[r - 1 :: rounds]:
            ranking = rankings[qid]
            where = routing.split(
                ranking,
                p,
                decided,
                band_low=band_low,
                band_high=band_high,
                k=k,
                most_uncertain=most_uncertain,
            )
            shown = [ranking[i] for i in where.shown]
            reviewed = [ranking[i] for i in where.review]
            for d in reviewed:  # the oracle archivist
                decided[d] = routing.WITHHELD if truth.get(d, False) else routing.RELEASED
            shown_counts.append(len(shown))
            reviewed_counts.append(len(reviewed))
            sensitive_shown += sum(1 for d in shown if truth.get(d, False))
            value = measures.o_cs_dcg(
                shown, reviewed, relevance.get(qid, {}), truth, effort=effort, k=k
            )
            scores.append(value)
        for d, decision in decided.items():
            labels[d] = int(decision == routing.WITHHELD)
        out.append(
            {
                "round": r,
                "queries": len(scores),
                "classifier_f1": report.get("f1"),
                "heldout_f1": heldout_f1,
                "heldout": len(heldout),
                "labels": len(labels),
                "decisions": len(decided),
                "shown_mean": float(np.mean(shown_counts)),
                "reviewed": int(sum(reviewed_counts)),
                "reviewed_mean": float(np.mean(reviewed_counts)),
                "sensitive_shown": sensitive_shown,
                "o_cs_dcg_mean": float(np.mean([s for s in scores if not math.isnan(s)])),
            }
        )
    return out


def _f1(truth: list[bool], predicted: list[bool]) -> float | None:
    """F1 of the sensitive class (None without a labelled document)."""
    if not truth:
        return None
    tp = sum(t and q for t, q in zip(truth, predicted, strict=True))
    fp = sum(q and not t for t, q in zip(truth, predicted, strict=True))
    fn = sum(t and not q for t, q in zip(truth, predicted, strict=True))
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
