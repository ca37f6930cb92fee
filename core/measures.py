"""Relevance-and-sensitivity measures (docs/domain.md §7; dissertation chapter 4).

Pure Python (numpy and scipy only). Conventions fixed for this project: ranks are 0-based,
gain ``2**rel - 1`` for grades 0/1/2, discount ``1 / log2(i + 2)``, sensitivity binary,
cost ``c_i = cost`` for a sensitive document (default Cs = 12). Every function takes

    ranking      a sequence of docids, best first (only the top k count);
    relevance    docid -> grade 0/1/2 (missing: 0);
    sensitivity  docid -> bool (missing: False);
    k            the cutoff;
    candidates   the documents an ordering may use for the bounds and ideal rankings
                 (default: every docid of ``relevance`` or ``sensitivity`` plus the ranking).

Normalised measures return NaN where the best and worst reachable values coincide; the
batch evaluator leaves NaN out of means and counts it.
"""

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

DEFAULT_COST = 12.0


def gain(grade: int) -> float:
    """Return the gain of a relevance grade, 2^grade - 1 (docs/domain.md §7)."""
    return float(2 ** max(int(grade), 0) - 1)


def discount(i: int) -> float:
    """Return the discount of 0-based rank ``i``, 1 / log2(i + 2)."""
    return 1.0 / math.log2(i + 2)


def _top(ranking: Sequence[str], k: int) -> list[str]:
    seen, top = set(), []
    for d in ranking:  # a docid ranked twice counts once, where it first appears
        if d not in seen:
            seen.add(d)
            top.append(d)
            if len(top) == k:
                break
    return top


def _candidates(ranking, relevance, sensitivity, candidates) -> list[str]:
    if candidates is None:
        candidates = set(relevance) | set(sensitivity) | set(ranking)
    return sorted(set(candidates))


def _sensitive(sensitivity: Mapping, d: str) -> bool:
    return bool(sensitivity.get(d, False))


def dcg(ranking, relevance, *, k=10) -> float:
    """Return DCG@k of a ranking under graded ``relevance`` (unjudged: 0)."""
    return sum(gain(relevance.get(d, 0)) * discount(i) for i, d in enumerate(_top(ranking, k)))


def _ideal_dcg(docs: Iterable[str], relevance: Mapping, k: int) -> float:
    gains = sorted((gain(relevance.get(d, 0)) for d in docs), reverse=True)[:k]
    return sum(g * discount(i) for i, g in enumerate(gains))


def dissertation_cost(relevance_by_topic: Mapping[str, Mapping[str, int]], *, k=10) -> dict:
    """Cs by the dissertation's rule (sec. 5.4.1): a bit below the largest DCG@k a query can
    reach, so one sensitive document shown can be recovered by many relevant ones. There
    every query had more than k highly relevant documents, so that DCG was 13.63 (k = 10,
    grade 2) and Cs = 12. Here the largest DCG@k is each topic's ideal DCG@k from its
    judgments, averaged over the topics, and Cs keeps the ratio 12 / 13.63."""
    ideals = [_ideal_dcg(list(rel), rel, k) for rel in relevance_by_topic.values()]
    ideals = [v for v in ideals if v > 0]
    paper_max = sum(gain(2) * discount(i) for i in range(10))
    if not ideals:
        raise ValueError("no topic has a relevant document: the rule has no DCG to follow")
    mean = float(np.mean(ideals))
    return {
        "cost": DEFAULT_COST / paper_max * mean,
        "mean_ideal_dcg": mean,
        "ratio": DEFAULT_COST / paper_max,
        "rule": f"Cs = mean ideal DCG@{k} over the topics x 12 / {paper_max:.2f} (sec. 5.4.1)",
    }


def ndcg(ranking, relevance, sensitivity=None, *, k=10, candidates=None) -> float:
    """nDCG@k with exponential gains (ir_measures' ``nDCG(dcg='exp-log2')``); 0 when the
    query has no relevant candidate. ``sensitivity`` is accepted and ignored."""
    pool = _candidates(ranking, relevance, sensitivity or {}, candidates)
    ideal = _ideal_dcg(pool, relevance, k)
    return dcg(ranking, relevance, k=k) / ideal if ideal > 0 else 0.0


def tern(ranking, relevance, sensitivity, *, k=10, penalty=1.0, candidates=None) -> float:
    """TERN@k: -M if a sensitive document is in the top k, else 1 if a relevant one is,
    else 0."""
    top = _top(ranking, k)
    if any(_sensitive(sensitivity, d) for d in top):
        return -float(penalty)
    return 1.0 if any(relevance.get(d, 0) >= 1 for d in top) else 0.0


def sens(ranking, relevance, sensitivity, *, k=10, penalty=1.0, candidates=None) -> float:
    """SENS@k: -M if a sensitive document is in the top k, else nDCG@k against the ideal
    ranking of the non-sensitive candidates (0 when none is relevant)."""
    top = _top(ranking, k)
    if any(_sensitive(sensitivity, d) for d in top):
        return -float(penalty)
    pool = [
        d
        for d in _candidates(ranking, relevance, sensitivity, candidates)
        if not _sensitive(sensitivity, d)
    ]
    ideal = _ideal_dcg(pool, relevance, k)
    return dcg(top, relevance, k=k) / ideal if ideal > 0 else 0.0


def cs_dcg(ranking, relevance, sensitivity, *, k=10, cost=DEFAULT_COST, candidates=None):
    """CS-DCG@k = sum over the top k of gain * discount - cost (sensitive documents)."""
    return sum(
        gain(relevance.get(d, 0)) * discount(i) - (cost if _sensitive(sensitivity, d) else 0.0)
        for i, d in enumerate(_top(ranking, k))
    )


def cs_dcg_bounds(
    relevance, sensitivity, *, k=10, cost=DEFAULT_COST, candidates
) -> tuple[float, float]:
    """The (worst, best) CS-DCG@k over every list of ``candidates`` of any length up to k.

    A system may show fewer than k documents (a cutoff, a filter), so the bounds range over
    the empty list and every list of 1 to min(k, n) distinct candidates: any list a system
    can return then scores within [0, 1]. For each length L, placing documents in the top L
    positions is an assignment problem (document j at position i is worth gain_j *
    discount_i - cost_j), solved exactly with scipy's ``linear_sum_assignment``. Where no
    shorter list does better (or worse), these are the bounds of the dissertation's greedy
    algorithms 1 and 2 (sec. 4.3) over full-length lists, except where those place a relevant
    non-sensitive document above a more relevant sensitive one that must be shown (few
    candidates), which the exact bound orders by gain; tests check it against brute force
    over every list.
    """
    from scipy.optimize import linear_sum_assignment

    docs = sorted(set(candidates))
    slots = min(k, len(docs))
    if slots == 0:
        return 0.0, 0.0
    g = np.array([gain(relevance.get(d, 0)) for d in docs])
    c = np.array([cost if _sensitive(sensitivity, d) else 0.0 for d in docs])
    d = np.array([discount(i) for i in range(slots)])
    value = g[:, None] * d[None, :] - c[:, None]
    worst = best = 0.0  # the empty list
    for length in range(1, slots + 1):
        part = value[:, :length]
        rows, cols = linear_sum_assignment(part, maximize=True)
        best = max(best, float(part[rows, cols].sum()))
        rows, cols = linear_sum_assignment(part)
        worst = min(worst, float(part[rows, cols].sum()))
    return worst, best


def ncs_dcg(ranking, relevance, sensitivity, *, k=10, cost=12.0, candidates=None) -> float:
    """nCS-DCG@k = (CS-DCG - worst) / (best - worst); NaN when best equals worst."""
    pool = _candidates(ranking, relevance, sensitivity, candidates)
    worst, best = cs_dcg_bounds(relevance, sensitivity, k=k, cost=cost, candidates=pool)
    if math.isclose(best, worst, rel_tol=0.0, abs_tol=1e-12):
        return math.nan
    value = cs_dcg(ranking, relevance, sensitivity, k=k, cost=cost)
    return (value - worst) / (best - worst)


def gamma_cs_dcg(
    ranking, relevance, sensitivity, *, k=10, cost=DEFAULT_COST, gamma=0.5, candidates=None
) -> float:
    """gamma-CS-DCG@k = sum of gain * discount - cost * gamma ** (sensitive documents above).

    gamma = 1 is CS-DCG; gamma = 0 charges only the first sensitive document.
    """
    total, above = 0.0, 0
    for i, d in enumerate(_top(ranking, k)):
        total += gain(relevance.get(d, 0)) * discount(i)
        if _sensitive(sensitivity, d):
            total -= cost * gamma**above
            above += 1
    return total


def _greedy_gamma_ranking(docs, relevance, sensitivity, k, cost, gamma, pick) -> list[str]:
    """Sec. 4.4: at each rank take the document that makes gamma-CS-DCG so far highest
    (``pick=max``) or lowest (``pick=min``); ties go to the earlier docid."""
    left, chosen, above = list(docs), [], 0
    for i in range(min(k, len(left))):
        marks = [
            gain(relevance.get(d, 0)) * discount(i)
            - (cost * gamma**above if _sensitive(sensitivity, d) else 0.0)
            for d in left
        ]
        j = marks.index(pick(marks))
        d = left.pop(j)
        chosen.append(d)
        above += _sensitive(sensitivity, d)
    return chosen


def ngamma_cs_dcg(
    ranking, relevance, sensitivity, *, k=10, cost=DEFAULT_COST, gamma=0.5, candidates=None
) -> float:
    """n-gamma-CS-DCG@k: normalised by the greedy best and worst rankings of sec. 4.4 and
    clamped to [0, 1] (the greedy bounds are not always the true ones); NaN when they meet."""
    pool = _candidates(ranking, relevance, sensitivity, candidates)
    args = {"k": k, "cost": cost, "gamma": gamma}
    best = gamma_cs_dcg(
        _greedy_gamma_ranking(pool, relevance, sensitivity, k, cost, gamma, max),
        relevance,
        sensitivity,
        **args,
    )
    worst = gamma_cs_dcg(
        _greedy_gamma_ranking(pool, relevance, sensitivity, k, cost, gamma, min),
        relevance,
        sensitivity,
        **args,
    )
    if math.isclose(best, worst, rel_tol=0.0, abs_tol=1e-12):
        return math.nan
    value = gamma_cs_dcg(ranking, relevance, sensitivity, **args)
    return min(1.0, max(0.0, (value - worst) / (best - worst)))


def o_cs_dcg(
    shown,
    reviewed,
    relevance,
    sensitivity,
    *,
    effort: float,
    k=10,
    cost=DEFAULT_COST,
    gamma=1.0,
    released=None,
    candidates=None,
) -> float:
    """O-CS-DCG@k (sec. 7.2.3, eq. 7.1), archivist in the loop, on the searcher's page of k
    places: the ``shown`` documents first (k_s of them), then the documents the archivist
    released, in the order of the ``reviewed`` list, in the k_a = k - k_s places left.

    - shown and released documents count as gamma-CS-DCG counts them, at their places on
      the page: gain x discount, and a sensitive one costs ``cost`` x gamma^(sensitive
      documents above it), so a released document that proves sensitive is charged;
    - every reviewed document costs ``effort``, also those the page had no place for (the
      archivist read them all), so the measure falls as effort rises whenever any document
      was reviewed;
    - a released document the page had no place for gains nothing but, if sensitive, still
      costs ``cost`` x gamma^(sensitive documents before it): the searcher received it;
    - ``released``: the documents the archivist released (a set); None is the oracle
      archivist of the dissertation, who releases every reviewed document that is not
      sensitive. A withheld document gains and costs nothing but the effort.
    """
    shown_top = _top(shown, k)
    on_page = set(shown_top)
    reviewed_all = [d for d in _top(reviewed, len(reviewed)) if d not in on_page]
    if released is None:
        released = {d for d in reviewed_all if not _sensitive(sensitivity, d)}
    sent = [d for d in reviewed_all if d in released]
    page = shown_top + sent[: k - len(shown_top)]
    total = gamma_cs_dcg(page, relevance, sensitivity, k=k, cost=cost, gamma=gamma)
    above = sum(_sensitive(sensitivity, d) for d in page)
    for d in sent[k - len(shown_top) :]:  # received below the page's k places
        if _sensitive(sensitivity, d):
            total -= cost * gamma**above
            above += 1
    return total - effort * len(reviewed_all)


MEASURES = {
    "ndcg": ndcg,
    "tern": tern,
    "sens": sens,
    "cs_dcg": cs_dcg,
    "ncs_dcg": ncs_dcg,
    "gamma_cs_dcg": gamma_cs_dcg,
    "ngamma_cs_dcg": ngamma_cs_dcg,
}


def read_run(lines: Iterable[str]) -> dict[str, list[str]]:
    """A TREC run (``topic Q0 docno rank score tag``) as ranked docids per topic: by score,
    highest first, ties by docno."""
    scored: dict[str, list[tuple[float, str]]] = {}
    for n, line in enumerate(lines, 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise ValueError(f"run line {n}: expected 6 fields, got {len(parts)}")
        try:
            score = float(parts[4])
        except ValueError:
            raise ValueError(f"run line {n}: score {parts[4]!r} is not a number") from None
        scored.setdefault(parts[0], []).append((score, parts[2]))
    return {q: [d for _s, d in sorted(v, key=lambda x: (-x[0], x[1]))] for q, v in scored.items()}


def evaluate(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    sensitivity: Mapping[str, Mapping[str, bool]],
    measures: Mapping[str, dict],
) -> dict:
    """Per-query and mean values of named measures over a run.

    ``measures`` maps an output name to ``{"measure": name in MEASURES, **options}``, for
    instance ``{"TERN@10(M=3)": {"measure": "tern", "k": 10, "penalty": 3}}``.
    ``sensitivity`` maps a topic (or ``"*"``: every topic) to docid -> bool. Queries are
    those of the qrels; a query the run lacks is an empty ranking. Means leave NaN out and
    report how many were left out.
    """
    per_query: dict[str, dict[str, float]] = {}
    for q in sorted(qrels):
        labels = {**sensitivity.get("*", {}), **sensitivity.get(q, {})}
        per_query[q] = {
            name: MEASURES[spec["measure"]](
                run.get(q, []),
                qrels[q],
                labels,
                **{k: v for k, v in spec.items() if k != "measure"},
            )
            for name, spec in measures.items()
        }
    means, skipped = {}, {}
    for name in measures:
        values = [v[name] for v in per_query.values()]
        kept = [v for v in values if not math.isnan(v)]
        means[name] = sum(kept) / len(kept) if kept else math.nan
        skipped[name] = len(values) - len(kept)
    return {"per_query": per_query, "mean": means, "skipped": skipped}
