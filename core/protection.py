"""Protection approaches (docs/domain.md §8; dissertation chapters 5-6), pure: no Django.

A query is its candidate documents (e.g. BM25's top 100) with a row of ranking features
each, the classifier's P(sensitive), and, for training and evaluation, relevance grades
and true sensitivity. Approaches turn a query into a ranking (docids, best first):

    relevance     order by a ranker (BM25 score, or a learned linear ranker)
    post-filter   rank, then drop the documents predicted sensitive
    pre-filter    drop predicted-sensitive documents, then rank with a ranker trained
                  without the truly sensitive ones
    demote        rank with a ranker trained with relevance 0 for truly sensitive documents
    joint         a linear ranker trained by coordinate ascent to optimise a relevance and
                  sensitivity measure directly, P(sensitive) and 1 - P(sensitive) among its
                  features; optionally post-filtered
    cluster       walk down a ranking and replace each document by the member of its
                  cluster not chosen yet with the lowest P(sensitive)

and a cutoff policy decides how many to show: fixed k, static (the best k on validation
queries), dynamic (k = floor(K * (1 - predicted sensitive / candidates))), oracle.

Coordinate ascent (Metzler and Croft 2007, as RankLib implements it) is written here: no
maintained Python library does listwise training on a custom measure. Objectives are
computed on numpy arrays prepared once per query, so a training run scores every query a
few thousand times in seconds; they equal ``core.measures`` (tested).
"""

import math
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from core import measures

OBJECTIVES = ("ncs_dcg", "ngamma_cs_dcg", "tern", "sens", "ndcg")


@dataclass
class Query:
    qid: str
    docids: list[str]
    features: np.ndarray  # (documents, features)
    p_sensitive: np.ndarray  # (documents,)
    relevance: dict[str, int] = field(default_factory=dict)
    sensitive: dict[str, bool] = field(default_factory=dict)

    def __post_init__(self):
        f = np.asarray(self.features, dtype=float)
        self.features = f.reshape(len(self.docids), f.shape[-1] if f.ndim == 2 else -1)
        self.p_sensitive = np.asarray(self.p_sensitive, dtype=float)

    def subset(self, keep: np.ndarray) -> "Query":
        """The same query over the candidates where ``keep`` is true."""
        idx = np.flatnonzero(keep)
        return Query(
            self.qid,
            [self.docids[i] for i in idx],
            self.features[idx],
            self.p_sensitive[idx],
            self.relevance,
            self.sensitive,
        )


class Prepared:
    """A query's measure at cutoff k as a function of an order of its candidates."""

    def __init__(
        self,
        query: Query,
        objective: str,
        *,
        k: int = 10,
        cost: float = 12.0,
        penalty: float = 1.0,
        gamma: float = 0.5,
    ):
        if objective not in OBJECTIVES:
            raise ValueError(f"unknown objective {objective!r}; use one of {', '.join(OBJECTIVES)}")
        self.query, self.objective, self.k = query, objective, k
        self.cost, self.penalty, self.gamma = cost, penalty, gamma
        docs = query.docids
        self.gain = np.array([measures.gain(query.relevance.get(d, 0)) for d in docs])
        self.sens = np.array([bool(query.sensitive.get(d, False)) for d in docs])
        self.discount = np.array([measures.discount(i) for i in range(k)])
        slots = min(k, len(docs))
        if objective == "ncs_dcg":
            self.worst, self.best = measures.cs_dcg_bounds(
                query.relevance, query.sensitive, k=k, cost=cost, candidates=docs
            )
        ideal_pool = self.gain if objective == "ndcg" else self.gain[~self.sens]
        top = np.sort(ideal_pool)[::-1][:slots]
        self.ideal = float((top * self.discount[: len(top)]).sum())

    def value(self, order: np.ndarray) -> float:
        """The measure of the ranking that lists the candidates in ``order`` (indices)."""
        top = np.asarray(order[: self.k])
        g, s, d = self.gain[top], self.sens[top], self.discount[: len(top)]
        if self.objective == "ndcg":
            return float((g * d).sum() / self.ideal) if self.ideal > 0 else 0.0
        if self.objective == "tern":
            if s.any():
                return -self.penalty
            return 1.0 if (g > 0).any() else 0.0
        if self.objective == "sens":
            if s.any():
                return -self.penalty
            return float((g * d).sum() / self.ideal) if self.ideal > 0 else 0.0
        if self.objective == "ncs_dcg":
            if math.isclose(self.best, self.worst, abs_tol=1e-12):
                return math.nan
            value = float((g * d).sum() - self.cost * s.sum())
            return (value - self.worst) / (self.best - self.worst)
        ranking = [self.query.docids[i] for i in top]
        return measures.ngamma_cs_dcg(
            ranking,
            self.query.relevance,
            self.query.sensitive,
            k=self.k,
            cost=self.cost,
            gamma=self.gamma,
            candidates=self.query.docids,
        )


def order_by(scores: np.ndarray) -> np.ndarray:
    """Indices best first; ties keep the candidates' given order (e.g. BM25's)."""
    return np.lexsort((np.arange(len(scores)), -np.asarray(scores)))


@dataclass
class LinearRanker:
    weights: np.ndarray

    def scores(self, query: Query) -> np.ndarray:
        return query.features @ self.weights

    def rank(self, query: Query) -> list[str]:
        return [query.docids[i] for i in order_by(self.scores(query))]


def _mean(prepared: list[Prepared], weights: np.ndarray) -> float:
    values = [p.value(order_by(p.query.features @ weights)) for p in prepared]
    values = [v for v in values if not math.isnan(v)]
    return float(np.mean(values)) if values else 0.0


def _ascend(prepared, start: np.ndarray, iterations: int, tolerance: float, steps: int = 10):
    """One coordinate-ascent run from ``start``: RankLib's schedule (steps from 0.05,
    doubling) with 10 steps per direction instead of 25, since the weights are L1-normalised
    and a step past 25 moves nothing."""
    w = start / max(np.abs(start).sum(), 1e-12)
    best = _mean(prepared, w)
    for _ in range(iterations):
        before = best
        for i in range(len(w)):
            for direction in (1.0, -1.0):
                step = 0.05 * direction
                for _attempt in range(steps):
                    trial = w.copy()
                    trial[i] += step
                    norm = np.abs(trial).sum()
                    if norm == 0:
                        break
                    trial /= norm
                    value = _mean(prepared, trial)
                    if value > best + 1e-12:
                        best, w = value, trial
                    step *= 2.0
        if best - before < tolerance:
            break
    return w, best


def _restart(args):
    prepared, start, iterations, tolerance = args
    return _ascend(prepared, start, iterations, tolerance)


def coordinate_ascent(
    queries: list[Query],
    objective: str = "ncs_dcg",
    *,
    k: int = 10,
    cost: float = 12.0,
    penalty: float = 1.0,
    restarts: int = 5,
    iterations: int = 25,
    tolerance: float = 1e-4,
    seed: int = 0,
    workers: int = 1,
    validation: list[Query] | None = None,
) -> tuple[LinearRanker, float]:
    """Train a linear ranker maximising the mean ``objective``@k over ``queries``.

    The first run starts from equal weights, the others from random ones (seeded); runs go
    to ``workers`` processes. The run kept is the best on the ``validation`` queries when
    given (the dissertation, sec. 5.2), else on the training ones. Returns the ranker and its
    training value.
    """
    if not queries:
        raise ValueError("coordinate ascent needs at least one training query")
    prepared = [Prepared(q, objective, k=k, cost=cost, penalty=penalty) for q in queries]
    n = queries[0].features.shape[1]
    rng = np.random.default_rng(seed)
    starts = [np.ones(n) / n] + [rng.uniform(-1, 1, n) for _ in range(restarts - 1)]
    jobs = [(prepared, s, iterations, tolerance) for s in starts]
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(_restart, jobs))
    else:
        results = [_restart(j) for j in jobs]
    if validation:
        held = [Prepared(q, objective, k=k, cost=cost, penalty=penalty) for q in validation]
        weights, value = max(results, key=lambda r: (_mean(held, r[0]), r[1]))
    else:
        weights, value = max(results, key=lambda r: r[1])
    return LinearRanker(weights), value


# --- Approaches and cutoffs ---------------------------------------------------------------------


def predicted_sensitive(query: Query, threshold: float) -> np.ndarray:
    """Return which candidates the classifier calls sensitive at ``threshold``."""
    return query.p_sensitive >= threshold


def post_filter(ranking: list[str], query: Query, threshold: float) -> list[str]:
    """Drop the documents predicted sensitive, keeping the order of the rest."""
    flagged = {
        d for d, s in zip(query.docids, predicted_sensitive(query, threshold), strict=True) if s
    }
    return [d for d in ranking if d not in flagged]


def demoted(query: Query) -> Query:
    """The query with relevance 0 for its truly sensitive documents (training data for the
    demote approach)."""
    relevance = {d: (0 if query.sensitive.get(d, False) else g) for d, g in query.relevance.items()}
    return Query(
        query.qid, query.docids, query.features, query.p_sensitive, relevance, query.sensitive
    )


def without_sensitive(query: Query) -> Query:
    """The query without its truly sensitive documents (training data for pre-filtering)."""
    return query.subset(np.array([not query.sensitive.get(d, False) for d in query.docids]))


def cluster_replace(
    ranking: list[str], query: Query, clusters: np.ndarray, *, k: int = 10, eligible=None
) -> list[str]:
    """Walking down ``ranking``, put in each of the first k places the member of the
    document's cluster not chosen yet with the lowest P(sensitive) (sec. 6.3, docs/domain.md
    section 8). ``eligible`` (a mask over the candidates) limits the replacements: a
    filtering approach replaces only with documents its filter lets through."""
    index = {d: i for i, d in enumerate(query.docids)}
    allowed = np.ones(len(query.docids), dtype=bool) if eligible is None else eligible
    members: dict[int, list[int]] = {}
    for i, c in enumerate(clusters):
        if allowed[i]:
            members.setdefault(int(c), []).append(i)
    for c in members:
        members[c].sort(key=lambda i: (query.p_sensitive[i], i))
    chosen: list[str] = []
    used: set[int] = set()
    for d in ranking:
        if len(chosen) == k:
            break
        cluster = int(clusters[index[d]])
        pick = next((i for i in members.get(cluster, ()) if i not in used), None)
        if pick is None:
            continue
        used.add(pick)
        chosen.append(query.docids[pick])
    rest = [d for d in ranking if index[d] not in used]
    return chosen + rest


def clusters_of(vectors, n_clusters: int = 20, *, seed: int = 0) -> np.ndarray:
    """K-means clusters of the candidates' rows (fewer clusters when there are fewer rows).

    The dissertation clusters the documents' term vectors with CLUTO's repeated bisection
    (cosine); k-means on the L2-normalised TF-IDF rows is the same geometry."""
    from sklearn.cluster import KMeans

    n = vectors.shape[0]
    if n <= 1:
        return np.zeros(n, dtype=int)
    k = min(n_clusters, n)
    return KMeans(k, n_init=3, random_state=seed).fit_predict(vectors)


def dynamic_cutoff(query: Query, threshold: float, *, limit: int = 10) -> int:
    """k = floor(K * (1 - predicted sensitive / candidates))."""
    n = len(query.docids)
    if n == 0:
        return 0
    flagged = int(predicted_sensitive(query, threshold).sum())
    return int(math.floor(limit * (1 - flagged / n)))


def oracle_cutoff(ranking: list[str], query: Query, prepared: Prepared) -> int:
    """The k (0 to K) whose truncated ranking scores best on the true labels; of tied k the
    largest (sec. 6.4.3: "the largest cutoff where the score is maximized")."""
    index = {d: i for i, d in enumerate(query.docids)}
    order = np.array([index[d] for d in ranking], dtype=int)
    scores = [prepared.value(order[:k]) for k in range(prepared.k + 1)]
    scores = [(-math.inf if math.isnan(v) else v) for v in scores]
    best = max(scores)
    return max(k for k, v in enumerate(scores) if math.isclose(v, best, abs_tol=1e-12))


def static_cutoff(rankings: list[tuple[list[str], Query, Prepared]], *, limit: int = 10) -> int:
    """The k (0 to K) with the best mean value over validation queries."""
    best_k, best = limit, -math.inf
    for k in range(limit + 1):
        values = []
        for ranking, query, prepared in rankings:
            index = {d: i for i, d in enumerate(query.docids)}
            v = prepared.value(np.array([index[d] for d in ranking[:k]], dtype=int))
            if not math.isnan(v):
                values.append(v)
        mean = float(np.mean(values)) if values else -math.inf
        if mean > best:
            best_k, best = k, mean
    return best_k
