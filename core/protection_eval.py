"""The protection evaluation harness (docs/domain.md §8), pure: no Django.

Five folds over topics: for fold i the test topics are fold i, the validation topics fold
i + 1 (which pick each ranker's restart and the static cutoff), and the three others train
the learned rankers. Every approach ranks every test
topic once per classifier (the trained one, and an oracle that knows the true labels); each
ranking is scored with nDCG@10, TERN@10 and SENS@10 (M = 0, 1, 3) and nCS-DCG@10 (Cs given;
``measures.dissertation_cost`` sets it from the topics' largest DCG@10 as sec. 5.4.1 does).
Cluster replacement (sec. 6.3) is applied to every approach's ranking ("<approach>+cluster"),
over clusters of the candidates' term vectors; a filtering approach replaces only with
documents its filter lets through. The joint ranker, the static cutoff (validation) and the
oracle cutoff all optimise nCS-DCG@10 at the same Cs, the reported measure.
Paired t-tests compare every approach with the best one on nCS-DCG@10, and with the trivial
baseline that sorts the candidates by P(sensitive) alone on nCS-DCG@10 and nDCG@10: a
result that baseline matches is the measure's, not the approach's (issue 15). Random order
and BM25 post-filtered are reported beside them.
"""

import math
from dataclasses import dataclass

import numpy as np

from core import measures, protection

RANKERS = (
    "bm25",
    "ltr",
    "pre-filter",
    "post-filter",
    "demote",
    "joint",
    "joint+post-filter",
    "joint+static cutoff",
    "joint+dynamic cutoff",
    "joint+oracle cutoff",
)
FILTERING = ("pre-filter", "post-filter", "joint+post-filter")
# trivial baselines (issue 15): an approach they match has learned nothing they lack
BASELINES = (
    "baseline: P(sensitive) sort",
    "baseline: random order",
    "baseline: bm25+post-filter",
)
CLUSTERED = tuple(f"{a}+cluster" for a in RANKERS)
APPROACHES = RANKERS + CLUSTERED + BASELINES
BASELINE = "baseline: P(sensitive) sort"
MEASURES = (
    "ndcg@10",
    "tern@10 M=0",
    "tern@10 M=1",
    "tern@10 M=3",
    "sens@10 M=0",
    "sens@10 M=1",
    "sens@10 M=3",
    "ncs_dcg@10",
)


@dataclass
class Topic:
    """A topic's candidates (BM25 order) with features, BM25 scores and labels."""

    qid: str
    docids: list[str]
    bm25: np.ndarray
    features: np.ndarray  # normalised per query, without the sensitivity columns
    relevance: dict[str, int]
    sensitive: dict[str, bool]
    vectors: object = None  # the candidates' term vectors, for clustering (else features)


def score(ranking: list[str], t: Topic, cost: float = measures.DEFAULT_COST) -> dict[str, float]:
    """Return every measure of ``ranking`` on topic ``t`` at Cs = ``cost``."""
    rel, sen, pool = t.relevance, t.sensitive, t.docids
    out = {"ndcg@10": measures.ndcg(ranking, rel, k=10, candidates=pool)}
    for m in (0, 1, 3):
        out[f"tern@10 M={m}"] = measures.tern(ranking, rel, sen, k=10, penalty=m)
        out[f"sens@10 M={m}"] = measures.sens(ranking, rel, sen, k=10, penalty=m, candidates=pool)
    out["ncs_dcg@10"] = measures.ncs_dcg(ranking, rel, sen, k=10, cost=cost, candidates=pool)
    return out


def _query(t: Topic, p: np.ndarray, *, with_p: bool) -> protection.Query:
    f = t.features
    if with_p:
        f = np.hstack([f, p.reshape(-1, 1), 1 - p.reshape(-1, 1)])
    return protection.Query(t.qid, t.docids, f, p, t.relevance, t.sensitive)


def folds_of(topics: list[Topic], n: int = 5, seed: int = 0) -> list[list[int]]:
    """Split the topics into ``n`` folds at random (``seed``): indexes per fold."""
    order = np.random.default_rng(seed).permutation(len(topics))
    return [sorted(order[i::n].tolist()) for i in range(n)]


def run(
    topics: list[Topic],
    p_sensitive: dict[str, np.ndarray],
    threshold: float,
    *,
    classifier: str,
    restarts: int = 3,
    workers: int = 1,
    clusters: int = 20,
    joint_objective: str = "ncs_dcg",
    cost: float = measures.DEFAULT_COST,
    seed: int = 0,
    progress=None,
) -> dict[str, dict[str, dict[str, float]]]:
    """Per approach, per test topic, the measures. ``p_sensitive``: qid -> P per candidate;
    the joint ranker optimises ``joint_objective``@10 (``protection.OBJECTIVES``) and every
    nCS-DCG is at Cs = ``cost``."""
    folds = folds_of(topics)
    results: dict[str, dict[str, dict[str, float]]] = {a: {} for a in APPROACHES}
    ca = dict(k=10, restarts=restarts, workers=workers, seed=seed, cost=cost)
    for i, test in enumerate(folds):
        valid = folds[(i + 1) % len(folds)]
        train = [j for f in folds if f is not test and f is not valid for j in f]
        plain = [_query(topics[j], p_sensitive[topics[j].qid], with_p=False) for j in train]
        joint_q = [_query(topics[j], p_sensitive[topics[j].qid], with_p=True) for j in train]
        # every ranker keeps the restart that is best on the validation fold (sec. 5.2)
        held = [_query(topics[j], p_sensitive[topics[j].qid], with_p=False) for j in valid]
        held_joint = [_query(topics[j], p_sensitive[topics[j].qid], with_p=True) for j in valid]
        ltr, _ = protection.coordinate_ascent(plain, "ndcg", validation=held, **ca)
        pre, _ = protection.coordinate_ascent(
            [protection.without_sensitive(q) for q in plain],
            "ndcg",
            validation=[protection.without_sensitive(q) for q in held],
            **ca,
        )
        demote, _ = protection.coordinate_ascent(
            [protection.demoted(q) for q in plain],
            "ndcg",
            validation=[protection.demoted(q) for q in held],
            **ca,
        )
        joint, _ = protection.coordinate_ascent(
            joint_q, joint_objective, validation=held_joint, **ca
        )
        validation = []
        for j in valid:
            q = _query(topics[j], p_sensitive[topics[j].qid], with_p=True)
            validation.append(
                (joint.rank(q), q, protection.Prepared(q, "ncs_dcg", k=10, cost=cost))
            )
        static_k = protection.static_cutoff(validation, limit=10)
        for j in test:
            t = topics[j]
            p = p_sensitive[t.qid]
            q, qj = _query(t, p, with_p=False), _query(t, p, with_p=True)
            bm25 = [t.docids[x] for x in protection.order_by(t.bm25)]
            ranked = ltr.rank(q)
            flagged = protection.predicted_sensitive(q, threshold)
            joint_ranked = joint.rank(qj)
            prepared = protection.Prepared(qj, "ncs_dcg", k=10, cost=cost)
            rankings = {
                "bm25": bm25,
                "ltr": ranked,
                "pre-filter": pre.rank(q.subset(~flagged)),
                "post-filter": protection.post_filter(ranked, q, threshold),
                "demote": demote.rank(q),
                "joint": joint_ranked,
                "joint+post-filter": protection.post_filter(joint_ranked, q, threshold),
                "joint+static cutoff": joint_ranked[:static_k],
                "joint+dynamic cutoff": joint_ranked[: protection.dynamic_cutoff(q, threshold)],
                "joint+oracle cutoff": joint_ranked[
                    : protection.oracle_cutoff(joint_ranked, qj, prepared)
                ],
                # ascending P(sensitive), BM25 order among equals: relevance ignored
                BASELINE: [bm25[x] for x in np.argsort(p[_positions(t, bm25)], kind="stable")],
                "baseline: random order": [
                    t.docids[x] for x in np.random.default_rng([seed, j]).permutation(len(t.docids))
                ],
                "baseline: bm25+post-filter": protection.post_filter(bm25, q, threshold),
            }
            groups = protection.clusters_of(
                t.features if t.vectors is None else t.vectors, clusters, seed=seed
            )
            for approach in RANKERS:
                rankings[f"{approach}+cluster"] = protection.cluster_replace(
                    rankings[approach],
                    q,
                    groups,
                    k=10,
                    eligible=~flagged if approach in FILTERING else None,
                )
            for approach, ranking in rankings.items():
                results[approach][t.qid] = score(ranking, t, cost)
        if progress:
            progress(i + 1, len(folds), classifier)
    return results


def _positions(t: Topic, docids: list[str]) -> np.ndarray:
    where = {d: i for i, d in enumerate(t.docids)}
    return np.array([where[d] for d in docids], dtype=np.int64)


def _paired_p(results, a: str, b: str, measure: str = "ncs_dcg@10") -> float:
    """Paired t-test of approaches ``a`` and ``b`` over the topics where both are defined."""
    from scipy.stats import ttest_rel

    pairs = [
        (results[a][q][measure], results[b][q][measure])
        for q in results[a]
        if not math.isnan(results[a][q][measure]) and not math.isnan(results[b][q][measure])
    ]
    x, y = np.array([u for u, _ in pairs]), np.array([v for _, v in pairs])
    return float(ttest_rel(x, y).pvalue) if len(pairs) > 1 and np.any(x != y) else 1.0


def summary(results: dict[str, dict[str, dict[str, float]]]) -> dict:
    """Means (NaN left out and counted), TERN sign counts and paired t-tests against the
    best approach on nCS-DCG@10."""
    from scipy.stats import ttest_rel

    table = {}
    for approach, per_topic in results.items():
        row = {}
        for m in MEASURES:
            values = [v[m] for v in per_topic.values() if not math.isnan(v[m])]
            row[m] = float(np.mean(values)) if values else math.nan
        row["skipped ncs_dcg"] = sum(math.isnan(v["ncs_dcg@10"]) for v in per_topic.values())
        terns = [v["tern@10 M=1"] for v in per_topic.values()]
        row["tern +/0/-"] = [
            sum(t > 0 for t in terns),
            sum(t == 0 for t in terns),
            sum(t < 0 for t in terns),
        ]
        table[approach] = row
    best = max(
        table,
        key=lambda a: -math.inf if math.isnan(table[a]["ncs_dcg@10"]) else table[a]["ncs_dcg@10"],
    )
    qids = [q for q in results[best] if not math.isnan(results[best][q]["ncs_dcg@10"])]
    for approach, row in table.items():
        if approach == best:
            row["p vs best"] = None
            continue
        a = [
            results[best][q]["ncs_dcg@10"]
            for q in qids
            if not math.isnan(results[approach][q]["ncs_dcg@10"])
        ]
        b = [
            results[approach][q]["ncs_dcg@10"]
            for q in qids
            if not math.isnan(results[approach][q]["ncs_dcg@10"])
        ]
        p = ttest_rel(a, b).pvalue if len(a) > 1 and np.any(np.array(a) != np.array(b)) else 1.0
        row["p vs best"] = float(p)
    for approach, row in table.items():
        # beside the P(sensitive) sort: on nCS-DCG and on nDCG, and whether it is ahead
        row["vs baseline"] = (
            None
            if approach == BASELINE or BASELINE not in results
            else {
                m: {
                    "difference": row[m] - table[BASELINE][m],
                    "p": _paired_p(results, approach, BASELINE, m),
                }
                for m in ("ncs_dcg@10", "ndcg@10")
            }
        )
    return {"best": best, "table": table}
