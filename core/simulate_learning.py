"""Finite-pool simulation of active learning (Rahman et al., docs/domain.md §4), pure.

Annotators are simulated by the reference qrels. For every topic the pool is judged seeds
first (IS: up to 5 relevant and 5 non-relevant pool documents, as the study assumed; RDS:
one system's ranking walked down until ``min_relevant`` relevant and ``min_nonrelevant``
non-relevant are found, at most ``rds_max`` documents, else the topic is flagged and left
out), then batch after batch (``batch_pct`` of the pool) chosen by the strategy with the
classifier retrained after every batch. Seeds count as cost like any other judgment.

At 0%, 10%, ..., 100% of the pool judged, with B the number of judgments at that point:

- human-only labels: the first B judged documents as judged, every other pool document
  non-relevant;
- hybrid labels: the same B, the rest labelled by a classifier trained on those B
  (non-relevant while they hold a single class): by default the selection classifier itself,
  as Rahman et al. do; ``labeller="presumed"`` adds sasc's presumed non-relevant sample
  (``active.train_labeller``);

and F1 / recall of each against the reference over the pool (mean over topics), and the
Kendall tau between the systems ranked under the reference qrels over the same pool and
under the constructed ones (1 at 100% judged), and the same against the full reference
qrels (``tau_full``: what the pool misses counts too). Systems are ranked by MAP (``tau``)
and by infAP (``tau_infap``, the paper's measure: in human-only qrels the unjudged pool
documents are pooled-but-unjudged, so infAP infers their share instead of counting them
non-relevant as MAP does). Areas under the curves by the trapezoid rule over the fraction
judged.

The defaults are the paper's protocol (``Settings``): IS seeds, batches of 10% of the pool,
lambda = 1e-8 (``PAPER_C`` = 1 / lambda), machine labels from the selection classifier,
topics with fewer than 5 relevant documents left out. Every deviation is a named setting.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from core import active

POINTS = tuple(range(0, 101, 10))
IS_RELEVANT = IS_NONRELEVANT = 5
# Rahman et al. (sec. 3.1): "We set lambda = 10^-8 in all reported experiments"; scikit-learn's
# C is the inverse of the regularisation strength.
PAPER_C = 1e8
LABELLERS = ("selection", "presumed")
INFAP_EPSILON = 1e-5  # trec_eval's
UNJUDGED = -1  # a pooled document left unjudged (trec_eval's qrels convention)


@dataclass
class TopicData:
    """A topic as the simulation sees it: rows of the feature matrix throughout."""

    number: str
    pool: np.ndarray  # candidate rows
    grades: dict[int, int]  # reference grade of every judged row (missing = 0)
    ranking: list[int] = field(default_factory=list)  # the RDS system's ranking

    def truth(self, rows) -> np.ndarray:
        return np.array([int(self.grades.get(int(r), 0) >= 1) for r in rows], dtype=int)


@dataclass
class Settings:
    strategy: str = "cal"
    seed_mode: str = "is"  # is | rds
    batch_pct: float = 10.0
    random_seed: int = 0
    min_relevant: int = 1
    min_nonrelevant: int = 1
    rds_max: int = 25
    c: float = PAPER_C
    # "selection": machine labels from the classifier that picks the batches (the paper);
    # "presumed": sasc's labeller, which adds presumed non-relevant documents (AutoTAR)
    labeller: str = "selection"
    # Rahman et al. (sec. 4): a topic with fewer than 5 relevant documents (in its qrels)
    # would have been discarded at topic creation, and is left out of every experiment.
    min_topic_relevant: int = IS_RELEVANT


def seeds(topic: TopicData, settings: Settings) -> list[int] | None:
    """The seed judgments of a topic, or None when RDS gives up (the topic is flagged)."""
    pool = topic.pool
    truth = topic.truth(pool)
    if settings.seed_mode == "is":
        rng = np.random.default_rng(settings.random_seed + _topic_salt(topic.number))
        rel, non = pool[truth == 1], pool[truth == 0]
        picked = [
            *rng.permutation(rel)[:IS_RELEVANT].tolist(),
            *rng.permutation(non)[:IS_NONRELEVANT].tolist(),
        ]
        return sorted(int(r) for r in picked)
    if settings.seed_mode != "rds":
        raise ValueError(f"unknown seed mode {settings.seed_mode!r}; use is or rds")
    in_pool = set(pool.tolist())
    walked, found = [], {0: 0, 1: 0}
    for row in topic.ranking:
        if row not in in_pool:
            continue
        walked.append(int(row))
        found[int(topic.grades.get(row, 0) >= 1)] += 1
        if found[1] >= settings.min_relevant and found[0] >= settings.min_nonrelevant:
            return walked
        if len(walked) >= settings.rds_max:
            break
    return None


def _topic_salt(number: str) -> int:
    return sum(ord(ch) * 31**i for i, ch in enumerate(number)) % 100_003


def judging_order(matrix, topic: TopicData, settings: Settings, seed_rows: list[int]) -> list[int]:
    """The seeds, then the batches the strategy picks until the pool is judged."""
    pool = topic.pool
    order = list(seed_rows)
    size = max(1, math.ceil(settings.batch_pct / 100 * len(pool)))
    salt = _topic_salt(topic.number)
    step = 0
    while True:
        it = active.iterate(
            matrix,
            order,
            topic.truth(order),
            pool,
            settings.strategy,
            size,
            seed=settings.random_seed + salt + step,
            c=settings.c,
        )
        if not it.batch:
            return order
        order += it.batch
        step += 1


def labels_at(matrix, topic: TopicData, judged: list[int], settings: Settings):
    """Human-only and hybrid labels of the pool after ``judged``: two 0/1 arrays."""
    pool = topic.pool
    human = np.zeros(len(pool), dtype=int)
    position = {int(r): i for i, r in enumerate(pool)}
    truth = topic.truth(judged)
    for row, label in zip(judged, truth, strict=True):
        if row in position:
            human[position[row]] = label
    hybrid = human.copy()
    if settings.labeller not in LABELLERS:
        raise ValueError(f"unknown labeller {settings.labeller!r}; use {' or '.join(LABELLERS)}")
    train = active.train_labeller if settings.labeller == "presumed" else _selection_model
    try:
        model = train(matrix, judged, truth, pool, seed=settings.random_seed, c=settings.c)
    except active.NotTrainable:
        return human, hybrid
    seen = set(judged)
    unjudged = np.array([i for i, r in enumerate(pool) if int(r) not in seen], dtype=int)
    if len(unjudged):
        p = model.probabilities(matrix, pool[unjudged])
        hybrid[unjudged] = (p >= 0.5).astype(int)
    return human, hybrid


def _selection_model(matrix, rows, labels, _candidates, *, seed, c):
    return active.train(matrix, rows, labels, seed=seed, c=c)


def f1_recall(labels: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """Return F1 and recall of 0/1 ``labels`` against ``truth`` (1 when nothing is relevant)."""
    tp = int((labels & truth).sum())
    fp = int((labels & (1 - truth)).sum())
    fn = int(((1 - labels) & truth).sum())
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return f1, recall


def average_precision(ranking: list[int], relevant: set[int]) -> float:
    """Uninterpolated AP as trec_eval computes it (0 when nothing is relevant)."""
    if not relevant:
        return 0.0
    hits, total = 0, 0.0
    for i, row in enumerate(ranking, 1):
        if row in relevant:
            hits += 1
            total += hits / i
    return total / len(relevant)


def inferred_ap(ranking: list[int], qrels: dict[int, int]) -> float:
    """infAP (Yilmaz and Aslam 2006) as trec_eval computes it.

    ``qrels``: document -> grade (>= 1 relevant, 0 not) or ``UNJUDGED`` (-1: pooled but not
    judged). A document missing from ``qrels`` is outside the pool and counts as
    non-relevant; at a relevant document at 0-based rank j the expected precision above it
    is 1/(j+1) + j/(j+1) * (pooled above)/j * (relevant above + eps)/(judged above + 2 eps).
    With every pooled document judged, infAP is AP."""
    relevant_total = sum(1 for g in qrels.values() if g >= 1)
    if not relevant_total:
        return 0.0
    rel = non = unjudged = 0
    total = 0.0
    for j, doc in enumerate(ranking):
        grade = qrels.get(doc)
        if grade is None:
            continue
        if grade == UNJUDGED:
            unjudged += 1
            continue
        if grade < 1:
            non += 1
            continue
        if j == 0:
            total += 1.0
        else:
            above = rel + non + unjudged
            total += 1 / (j + 1) + (j / (j + 1)) * (above / j) * (
                (rel + INFAP_EPSILON) / (rel + non + 2 * INFAP_EPSILON)
            )
        rel += 1
    return total / relevant_total


def mean_ap(runs: dict[str, dict[str, list[int]]], qrels: dict[str, set[int]]) -> dict[str, float]:
    """MAP of every system over the topics of ``qrels``."""
    return {
        name: float(np.mean([average_precision(run.get(t, []), rel) for t, rel in qrels.items()]))
        for name, run in runs.items()
    }


def mean_infap(
    runs: dict[str, dict[str, list[int]]], qrels: dict[str, dict[int, int]]
) -> dict[str, float]:
    """Mean infAP of every system over the topics of ``qrels`` (document -> grade or -1)."""
    return {
        name: float(np.mean([inferred_ap(run.get(t, []), q) for t, q in qrels.items()]))
        for name, run in runs.items()
    }


def kendall_tau(a: dict[str, float], b: dict[str, float]) -> float:
    """Return Kendall's tau between two scorings of the same systems (NaN when undefined)."""
    from scipy.stats import kendalltau

    names = sorted(a)
    tau = kendalltau([a[n] for n in names], [b[n] for n in names]).statistic
    return float(tau) if tau == tau else float("nan")


def auc(values: list[float], start: int = 0) -> float:
    """Area under a curve sampled at ``POINTS`` (x as the fraction judged, 0 to 1), from
    ``start`` percent judged (10: the area at equal judging cost past the first batch)."""
    y = np.asarray(values, dtype=float)
    x = np.asarray(POINTS, dtype=float) / 100
    keep = ~np.isnan(y) & (np.asarray(POINTS) >= start)
    if keep.sum() < 2:
        return float("nan")
    return float(np.sum((x[keep][1:] - x[keep][:-1]) * (y[keep][1:] + y[keep][:-1]) / 2))


def simulate(matrix, topics: list[TopicData], settings: Settings, runs=None) -> dict:
    """Run one strategy under one seed mode over ``topics``; return the curves.

    ``runs`` (``{system: {topic number: [rows best first]}}``) enables the Kendall tau curves.
    Topics with no relevant document in their pool are left out (F1 is undefined for them),
    so are those with fewer than ``min_topic_relevant`` relevant in their qrels (the paper's
    protocol: 5) and topics
    RDS flags; each is counted in the result.
    """
    usable, flagged, empty, few = [], [], [], []
    for topic in topics:
        if sum(g >= 1 for g in topic.grades.values()) < settings.min_topic_relevant:
            few.append(topic.number)
            continue
        if topic.truth(topic.pool).sum() == 0:
            empty.append(topic.number)
            continue
        seed_rows = seeds(topic, settings)
        if seed_rows is None:
            flagged.append(topic.number)
            continue
        usable.append((topic, judging_order(matrix, topic, settings, seed_rows), len(seed_rows)))
    measures = ("f1", "recall", "tau", "tau_full", "tau_infap", "tau_full_infap")
    curves = {f"{m}_{k}": [] for m in measures for k in ("hybrid", "human")}
    references = {}
    if runs:
        # Like with like: the constructed qrels label the pool only, so the systems are
        # ranked against the reference qrels over the same pool (tau reaches 1 at 100%
        # judged); ``tau_full`` ranks them against every judged document as well.
        pool_grades = {
            t.number: {int(r): int(t.grades.get(int(r), 0)) for r in t.pool}
            for t, _order, _n in usable
        }
        full_grades = {t.number: dict(t.grades) for t, _order, _n in usable}
        references = {
            "tau": mean_ap(runs, _relevant(pool_grades)),
            "tau_full": mean_ap(runs, _relevant(full_grades)),
            "tau_infap": mean_infap(runs, pool_grades),
            "tau_full_infap": mean_infap(runs, full_grades),
        }
    for point in POINTS:
        f1s = {"hybrid": [], "human": []}
        recalls = {"hybrid": [], "human": []}
        qrels = {"hybrid": {}, "human": {}}
        for topic, order, _n in usable:
            judged = order[: round(point / 100 * len(topic.pool))]
            truth = topic.truth(topic.pool)
            human, hybrid = labels_at(matrix, topic, judged, settings)
            seen = set(judged)
            for kind, labels in (("human", human), ("hybrid", hybrid)):
                f1, recall = f1_recall(labels, truth)
                f1s[kind].append(f1)
                recalls[kind].append(recall)
                qrels[kind][topic.number] = {
                    int(r): (UNJUDGED if kind == "human" and int(r) not in seen else int(label))
                    for r, label in zip(topic.pool, labels, strict=True)
                }
        for kind in ("hybrid", "human"):
            curves[f"f1_{kind}"].append(_mean(f1s[kind]))
            curves[f"recall_{kind}"].append(_mean(recalls[kind]))
            constructed = {}
            if runs:
                constructed["map"] = mean_ap(runs, _relevant(qrels[kind]))
                constructed["infap"] = mean_infap(runs, qrels[kind])
            for name in ("tau", "tau_full", "tau_infap", "tau_full_infap"):
                measure = "infap" if name.endswith("infap") else "map"
                tau = kendall_tau(references[name], constructed[measure]) if runs else float("nan")
                curves[f"{name}_{kind}"].append(tau)
    return {
        "strategy": settings.strategy,
        "seed_mode": settings.seed_mode,
        "batch_pct": settings.batch_pct,
        "random_seed": settings.random_seed,
        "points": list(POINTS),
        "topics": len(usable),
        "topics_without_relevant_in_pool": empty,
        "topics_with_too_few_relevant": few,
        "min_topic_relevant": settings.min_topic_relevant,
        "c": settings.c,
        "labeller": settings.labeller,
        "topics_flagged_by_rds": flagged,
        "mean_seed_judgments": _mean([n for _t, _o, n in usable]),
        "mean_pool_size": _mean([len(t.pool) for t, _o, _n in usable]),
        "curves": curves,
        "auc": {name: auc(values) for name, values in curves.items()},
        "auc_from_10": {name: auc(values, start=10) for name, values in curves.items()},
        "f1_0.9_at": {
            kind: next(
                (p for p, v in zip(POINTS, curves[f"f1_{kind}"], strict=True) if v >= 0.9), None
            )
            for kind in ("hybrid", "human")
        },
    }


def _relevant(grades: dict[str, dict[int, int]]) -> dict[str, set[int]]:
    return {t: {r for r, g in q.items() if g >= 1} for t, q in grades.items()}


def _mean(values) -> float:
    return float(np.mean(values)) if len(values) else float("nan")
