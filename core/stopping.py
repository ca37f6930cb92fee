"""Knowing when to stop: recall estimates with intervals and stopping rules, pure (no Django).

A plan's *check sample* is a simple random sample, drawn without replacement, of the
documents that were neither judged nor queued when it was drawn (the *frame*, N documents).
People judge it like any task; its documents are kept out of the classifier's training, so
the review cannot learn where they are. What it gives:

- the number K of relevant documents in the frame, with an exact (hypergeometric) interval:
  the sample is drawn without replacement from a finite frame, so the count of relevant
  documents in it is hypergeometric, and inverting that distribution gives an interval that
  holds at its nominal level for every K (conservative, like Clopper-Pearson for the
  binomial, which it approaches when N is large; the normal approximation fails exactly
  where reviews live, with a handful of relevant documents in the sample);
- from K, the relevant documents still unfound and the recall reached so far, each with the
  interval that K's interval implies (recall is monotone in K);
- the sample size needed for a chosen margin, before the sample is drawn.

Stopping rules (``verdicts``), each with its paper and the guarantee it makes:

- knee method (Cormack and Grossman 2016): a heuristic on the gain curve, no guarantee;
- target method (Cormack and Grossman 2016): a target set of T relevant documents of the
  random sample; stop once the review has reached every one. If recall were below t, each
  target would be reached with probability below t, all T with probability below t^T, so
  T = ceil(log(1 - c) / log t) gives recall >= t with confidence c (T = 10 gives 0.7 at
  95%, their setting);
- QBCB, quantile binomial confidence bound (Lewis, Yang and Frieder, CIKM 2021): with r
  relevant documents in the random sample, stop once the review has reached j of them,
  j the smallest integer with P(Binomial(r, t) <= j - 1) >= c: recall >= t with
  confidence c. The target method is the special case j = r;
- hypergeometric test (Callaghan and Mueller-Hansen 2020): the null hypothesis is that
  recall is below t, i.e. the frame holds at least K_tar = floor(r_seen / t - r_al + 1)
  relevant documents (r_seen: relevant found in all, r_al: relevant found outside the
  frame); its p-value is P(X <= k) for X hypergeometric (N, K_tar, n); stop when p < 1 - c.

A document of the sample is *reached* when the review's selection would have picked it:
the selection ranks the sample's documents with the others and, when it picks one, marks it
reached at no cost instead of asking for a judgment again (as in Lewis et al.'s one-phase
review, where the control set's documents stay in the ranking).
"""

import math
from dataclasses import dataclass, field

import numpy as np

from core import active

RULES = ("knee", "target", "qbcb", "hypergeometric")
PAPERS = {
    "knee": "Cormack and Grossman 2016, Engineering quality and reliability in TAR",
    "target": "Cormack and Grossman 2016, Engineering quality and reliability in TAR",
    "qbcb": "Lewis, Yang and Frieder 2021, Certifying one-phase TAR (CIKM)",
    "hypergeometric": "Callaghan and Mueller-Hansen 2020, Statistical stopping criteria "
    "for automated screening in systematic reviews",
}
NAMES = {
    "knee": "Knee method",
    "target": "Target method",
    "qbcb": "QBCB",
    "hypergeometric": "Hypergeometric test",
}
INTERVAL = (
    "exact hypergeometric interval for the relevant documents in the frame (the sample is "
    "drawn without replacement from a finite frame; each tail holds at most half of 1 - "
    "confidence, so coverage is at least the nominal level, as with Clopper-Pearson)"
)


# --- Intervals and sample sizes -----------------------------------------------------------------


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Return the Clopper-Pearson (exact binomial) interval of a proportion, k of n: the
    (1 - confidence) / 2 and 1 - (1 - confidence) / 2 quantiles of Beta(k, n - k + 1) and
    Beta(k + 1, n - k) (0 when k = 0, 1 when k = n), in closed form, so its cost does not
    depend on n."""
    from scipy.stats import beta

    _check(k, n, confidence)
    if n == 0:
        return 0.0, 1.0
    a = (1 - confidence) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def clopper_pearson_upper(k: int, n: int, confidence: float = 0.95) -> float:
    """Return the one-sided Clopper-Pearson upper bound of a proportion, k of n: the
    ``confidence`` quantile of Beta(k + 1, n - k) (1 when k = n; 1 when n = 0, nothing
    seen). The binomial bound: it treats the sample as drawn with replacement, so on a
    finite frame it is wider than ``hypergeometric_upper`` scaled to the frame."""
    from scipy.stats import beta

    _check(k, n, confidence)
    if n == 0 or k == n:
        return 1.0
    return float(beta.ppf(confidence, k + 1, n - k))


def hypergeometric_interval(
    k: int, n: int, population: int, confidence: float = 0.95
) -> tuple[int, int]:
    """Return the exact interval (L, U) of K, the relevant documents among ``population``
    (N), after a simple random sample of ``n`` without replacement held ``k``.

    With X ~ Hypergeometric(N, K, n) and a = (1 - confidence) / 2, over the K the sample
    allows at all (k <= K <= N - (n - k)):

    - L is the smallest K with P(X >= k | K) > a,
    - U is the largest K with P(X <= k | K) > a,

    i.e. [L, U] is every K that neither one-sided test at level a rejects. P(X >= k | K)
    rises with K and P(X <= k | K) falls with K (the hypergeometric is stochastically
    increasing in K), so whatever the true K, P(L > K) <= a and P(U < K) <= a: coverage is
    at least ``confidence`` (conservative with discrete data, like Clopper-Pearson). Hence
    L = 0 when k = 0, U = N when k = n, and (k, k) for a census (n = N).

    Each end is found on its monotone tail (scipy's hypergeometric sf and cdf): starting
    from the Clopper-Pearson end scaled to N (close to it on a large frame), steps of 1, 2,
    4, ... bracket it and bisection closes the bracket, so a call costs a few dozen tail
    evaluations at most, whatever N (milliseconds at N = 10^7; ``bench/intervals.py``).
    The answers are those of evaluating both tails at every K (tests/ranking)."""
    from scipy.stats import beta, hypergeom

    _check(k, n, confidence)
    if n > population:
        raise ValueError(f"a sample of {n} from a frame of {population} documents")
    if n == 0:
        return 0, population
    a = (1 - confidence) / 2
    first, last = k, population - (n - k)  # the K values the sample allows at all

    def upper_tail_above(big_k: int) -> bool:  # P(X >= k | K) > a: false, then true
        return k == 0 or float(hypergeom.sf(k - 1, population, big_k, n)) > a

    # Where to start: the binomial (Clopper-Pearson) end, scaled to the frame.
    lo_guess = 0 if k == 0 else math.floor(population * float(beta.ppf(a, k, n - k + 1)))
    lo = _first_true(upper_tail_above, first, last, lo_guess)
    hi = _upper_end(k, n, population, a)
    if lo is None or lo > hi:  # cannot happen for a valid sample; be safe
        return first, last
    return lo, hi


def hypergeometric_upper(k: int, n: int, population: int, confidence: float = 0.95) -> int:
    """Return the exact one-sided upper bound U of K, the positive documents among
    ``population`` (N), after a simple random sample of ``n`` without replacement held
    ``k``: the largest K the sample allows (K <= N - (n - k)) with P(X <= k | K) > 1 -
    confidence, X ~ Hypergeometric(N, K, n).

    P(X <= k | K) falls as K rises, so whatever the true K, P(U < K) <= 1 - confidence: the
    bound holds at least at ``confidence`` (conservative with discrete data). U >= k always;
    U = N - (n - k) when k = n (the sample rules out only the n - k negatives it saw); U = k
    for a census (n = N); U = N when n = 0 (nothing seen). It is the upper end of
    ``hypergeometric_interval`` at 1 - 2 (1 - confidence): one search (``_upper_end``, by
    ``_first_true``) serves both, a few dozen cdf evaluations whatever N
    (``bench/intervals.py``)."""
    _check(k, n, confidence)
    if n > population:
        raise ValueError(f"a sample of {n} from a frame of {population} documents")
    if n == 0:
        return population
    return _upper_end(k, n, population, 1 - confidence)


def _upper_end(k: int, n: int, population: int, alpha: float) -> int:
    """Return the largest K in [k, N - (n - k)] with P(X <= k | K) > ``alpha`` (0 < n <= N):
    the first K where the lower tail falls to ``alpha`` or below, found by ``_first_true``
    from the Clopper-Pearson end scaled to the frame, less one."""
    from scipy.stats import beta, hypergeom

    first, last = k, population - (n - k)

    def lower_tail_at_most(big_k: int) -> bool:  # P(X <= k | K) <= alpha: false, then true
        return k < n and float(hypergeom.cdf(k, population, big_k, n)) <= alpha

    guess = (
        population if k == n else math.ceil(population * float(beta.ppf(1 - alpha, k + 1, n - k)))
    )
    above = _first_true(lower_tail_at_most, first, last, guess + 1)
    return last if above is None else above - 1


def _first_true(predicate, first: int, last: int, guess: int) -> int | None:
    """Return the smallest K in [first, last] with ``predicate(K)``, for a predicate that is
    false and then true (None when it is true nowhere): from ``guess``, steps of 1, 2, 4, ...
    towards the change bracket it, then bisection."""
    guess = min(max(guess, first), last)
    if predicate(guess):  # the change is at or below the guess
        true, step = guess, 1
        while True:
            if true == first:
                return first
            probe = max(true - step, first)
            if not predicate(probe):
                false = probe
                break
            true, step = probe, step * 2
    else:  # the change is above the guess
        false, step = guess, 1
        while True:
            if false == last:
                return None
            probe = min(false + step, last)
            if predicate(probe):
                true = probe
                break
            false, step = probe, step * 2
    while true - false > 1:
        mid = (false + true) // 2
        if predicate(mid):
            true = mid
        else:
            false = mid
    return true


def sample_size(
    margin: float, population: int, *, confidence: float = 0.95, prevalence: float = 0.5
) -> int:
    """Return the sample size that estimates the frame's share of relevant documents within
    +/- ``margin`` (normal approximation, finite-population correction), at ``prevalence``
    (0.5, the worst case, unless a better guess is known)."""
    from scipy.stats import norm

    if not 0 < margin < 1:
        raise ValueError("the margin must be between 0 and 1 (e.g. 0.05 for 5 points)")
    if not 0 < confidence < 1:
        raise ValueError("the confidence must be between 0 and 1")
    if population <= 0:
        return 0
    p = min(max(prevalence, 0.01), 0.5)  # a guess below 1% is not trusted
    z = norm.ppf(1 - (1 - confidence) / 2)
    n0 = z * z * p * (1 - p) / (margin * margin)
    return min(population, math.ceil(n0 / (1 + (n0 - 1) / population)))


def _check(k, n, confidence):
    if not 0 <= k <= n:
        raise ValueError(f"{k} relevant in a sample of {n}")
    if not 0 < confidence < 1:
        raise ValueError("the confidence must be between 0 and 1")


# --- The estimate -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """Recall so far and the relevant documents still unfound, with intervals."""

    frame: int  # N: documents neither judged nor queued when the sample was drawn
    sampled: int  # n: sample documents judged so far
    sample_relevant: int  # k
    relevant_outside: int  # relevant among the documents judged before the draw
    found: int  # relevant found in all (review and sample)
    in_frame: tuple[int, int, int]  # K: point, low, high
    remaining: tuple[int, int, int]  # relevant not yet found: point, low, high
    recall: tuple[float, float, float]  # point, low, high
    confidence: float
    interval: str = INTERVAL


def estimate(
    *,
    frame: int,
    sampled: int,
    sample_relevant: int,
    relevant_outside: int,
    found: int,
    confidence: float = 0.95,
) -> Estimate:
    """Estimate recall from a check sample.

    ``frame``: N, the documents the sample was drawn from; ``sampled`` and
    ``sample_relevant``: n and k, the judged part of the sample; ``relevant_outside``: the
    relevant documents among those judged before the draw (not in the frame); ``found``: the
    relevant documents found now, everywhere (so found - relevant_outside of them are in the
    frame, which bounds K from below). Recall = found / (relevant_outside + K).
    """
    known_in_frame = found - relevant_outside
    if known_in_frame < sample_relevant:
        raise ValueError("fewer relevant found in the frame than in its sample")
    lo, hi = hypergeometric_interval(sample_relevant, sampled, frame, confidence)
    point = round(sample_relevant * frame / sampled) if sampled else hi
    lo, hi = max(lo, known_in_frame), max(hi, known_in_frame)
    point = min(max(point, lo), hi)
    total = (relevant_outside + point, relevant_outside + lo, relevant_outside + hi)

    def recall(t):
        return found / t if t else 1.0

    return Estimate(
        frame=frame,
        sampled=sampled,
        sample_relevant=sample_relevant,
        relevant_outside=relevant_outside,
        found=found,
        in_frame=(point, lo, hi),
        remaining=(total[0] - found, total[1] - found, total[2] - found),
        recall=(recall(total[0]), recall(total[2]), recall(total[1])),
        confidence=confidence,
    )


# --- Stopping rules -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """One rule's answer: ``stop`` True / False, or None when it cannot answer yet."""

    rule: str
    stop: bool | None
    why: str
    guarantee: str
    needed: int | None = None  # sample positives the rule needs reached (target, QBCB)
    reached: int | None = None
    projected: int | None = None  # further review judgments the rule expects to need
    details: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return NAMES[self.rule]

    @property
    def paper(self) -> str:
        return PAPERS[self.rule]


def target_size(target: float, confidence: float) -> int:
    """Return T, the target set's size: the smallest T with target^T <= 1 - confidence."""
    _check_target(target, confidence)
    return math.ceil(math.log(1 - confidence) / math.log(target) - 1e-12)


def qbcb_needed(positives: int, target: float, confidence: float) -> int | None:
    """Return j, how many of ``positives`` sample positives the review must reach: the
    smallest j with P(Binomial(positives, target) <= j - 1) >= confidence; None when even
    all of them would not do (too few positives in the sample)."""
    from scipy.stats import binom

    _check_target(target, confidence)
    if positives <= 0:
        return None
    cdf = binom.cdf(np.arange(positives + 1), positives, target)
    hits = np.flatnonzero(cdf >= confidence - 1e-12)
    j = int(hits[0]) + 1
    return j if j <= positives else None


def fewest_positives_for_qbcb(target: float, confidence: float) -> int:
    """Return the fewest sample positives with which QBCB can certify at all: the smallest r
    with target^r <= 1 - confidence (reaching all r), which is the target method's T."""
    return target_size(target, confidence)


def _check_target(target, confidence):
    if not 0 < target < 1:
        raise ValueError("the recall target must be between 0 and 1 (e.g. 0.8)")
    if not 0 < confidence < 1:
        raise ValueError("the confidence must be between 0 and 1 (e.g. 0.95)")


def knee_verdict(gains, *, candidates: int) -> Verdict:
    """The knee method on the review's gain curve (the check sample left out)."""
    signal = active.knee_stop(gains, candidates=candidates)
    if signal.slope_ratio is None:
        why = "no knee yet: nothing relevant found, or fewer than two judged"
        return Verdict("knee", False, why, "none: a heuristic", details={"signal": signal})
    why = f"slope ratio {signal.slope_ratio:.1f} against {signal.needed_ratio:.0f} needed"
    if signal.judged < signal.min_effort:
        why += f"; at least {signal.min_effort} judgments needed ({signal.judged} so far)"
    return Verdict(
        "knee",
        signal.stop,
        why,
        "none: a heuristic (aimed at recall 0.7 in its paper)",
        details={"signal": signal},
    )


def target_verdict(
    sample_labels: list[int],
    reached: list[bool],
    *,
    target: float,
    confidence: float,
    projected: int | None = None,
) -> Verdict:
    """The target method: ``sample_labels`` (1/0) and ``reached`` per sample document, in
    the order they were drawn; the target set is the first T relevant ones."""
    t = target_size(target, confidence)
    guarantee = f"recall >= {target:g} with confidence {confidence:g} (T = {t})"
    positives = [i for i, label in enumerate(sample_labels) if label]
    if len(positives) < t:
        return Verdict(
            "target",
            None,
            f"the sample holds {len(positives)} relevant of the {t} that the target set needs: "
            "draw a larger sample",
            guarantee,
            needed=t,
            reached=None,
        )
    got = sum(1 for i in positives[:t] if reached[i])
    stop = got >= t
    why = f"{got} of the {t} target documents reached by the review"
    return Verdict(
        "target", stop, why, guarantee, t, got, 0 if stop else projected, {"positives": positives}
    )


def qbcb_verdict(
    sample_labels: list[int],
    reached: list[bool],
    *,
    target: float,
    confidence: float,
    projected: int | None = None,
) -> Verdict:
    """QBCB: with r relevant documents in the sample, stop once j of them are reached."""
    r = sum(1 for label in sample_labels if label)
    j = qbcb_needed(r, target, confidence)
    guarantee = f"recall >= {target:g} with confidence {confidence:g}"
    if j is None:
        fewest = fewest_positives_for_qbcb(target, confidence)
        return Verdict(
            "qbcb",
            None,
            f"the sample holds {r} relevant; QBCB needs at least {fewest} to certify "
            f"{target:g} at {confidence:g}: draw a larger sample",
            guarantee,
        )
    got = sum(1 for label, hit in zip(sample_labels, reached, strict=True) if label and hit)
    stop = got >= j
    why = f"{got} of the sample's {r} relevant reached by the review; {j} needed"
    return Verdict(
        "qbcb", stop, why, f"{guarantee} (j = {j} of r = {r})", j, got, 0 if stop else projected
    )


def hypergeometric_p(
    *,
    frame: int,
    sampled: int,
    sample_relevant: int,
    found: int,
    relevant_outside: int,
    target: float,
) -> float:
    """Return the p-value of the null hypothesis "recall < target" (Callaghan and
    Mueller-Hansen 2020): P(X <= k), X ~ Hypergeometric(N, K_tar, n), with
    K_tar = floor(found / target - relevant_outside + 1)."""
    from scipy.stats import hypergeom

    k_tar = math.floor(found / target - relevant_outside + 1)
    k_tar = max(k_tar, sample_relevant)
    if k_tar > frame:
        return 0.0  # recall below target would need more relevant than the frame holds
    return float(hypergeom.cdf(sample_relevant, frame, k_tar, sampled))


def hypergeometric_verdict(
    *,
    frame: int,
    sampled: int,
    sample_relevant: int,
    found: int,
    relevant_outside: int,
    target: float,
    confidence: float,
) -> Verdict:
    """The hypergeometric test: stop when p < 1 - confidence."""
    _check_target(target, confidence)
    guarantee = f"recall >= {target:g} with confidence {confidence:g} (a test, once)"
    if sampled == 0:
        return Verdict("hypergeometric", None, "no sample document judged yet", guarantee)
    p = hypergeometric_p(
        frame=frame,
        sampled=sampled,
        sample_relevant=sample_relevant,
        found=found,
        relevant_outside=relevant_outside,
        target=target,
    )
    stop = p < 1 - confidence
    sign = "<" if stop else ">="
    why = f"p = {p:.3f} that recall is below {target:g} ({sign} {1 - confidence:.2f})"
    return Verdict("hypergeometric", stop, why, guarantee, details={"p": p})


def sample_verdicts(
    labels: list[int],
    reached: list[bool],
    *,
    frame: int,
    found: int,
    relevant_outside: int,
    target: float,
    confidence: float,
    projected: dict | None = None,
) -> list[Verdict]:
    """The three sample-based rules on a check sample: ``labels`` (1/0) and ``reached`` per
    judged sample document in draw order; ``projected``: the rules' projections by name."""
    projected = projected or {}
    return [
        target_verdict(
            labels,
            reached,
            target=target,
            confidence=confidence,
            projected=projected.get("target"),
        ),
        qbcb_verdict(
            labels,
            reached,
            target=target,
            confidence=confidence,
            projected=projected.get("qbcb"),
        ),
        hypergeometric_verdict(
            frame=frame,
            sampled=len(labels),
            sample_relevant=sum(labels),
            found=found,
            relevant_outside=relevant_outside,
            target=target,
            confidence=confidence,
        ),
    ]


def projected_judgments(scores_unreviewed, scores_needed, need: int) -> int | None:
    """Return how many more review judgments reach ``need`` of the documents scored
    ``scores_needed`` (unreached sample positives), if the review goes down the current
    ranking: the unreviewed documents scored above the ``need``-th best of them (None when
    there are fewer than ``need``)."""
    if need <= 0:
        return 0
    needed = np.sort(np.asarray(scores_needed, dtype=float))[::-1]
    if len(needed) < need:
        return None
    threshold = needed[need - 1]
    return int((np.asarray(scores_unreviewed, dtype=float) > threshold).sum())


def projected_by_expectation(probabilities_unreviewed, needed_relevant: float) -> int | None:
    """Return how many more judgments down the ranking are expected to find
    ``needed_relevant`` relevant documents, summing the labeller's P(relevant) (None when
    the whole remainder is not expected to hold them)."""
    if needed_relevant <= 0:
        return 0
    p = np.sort(np.asarray(probabilities_unreviewed, dtype=float))[::-1]
    cumulative = np.cumsum(p)
    hit = np.flatnonzero(cumulative >= needed_relevant)
    return int(hit[0]) + 1 if len(hit) else None


def recommend(
    verdicts: list[Verdict],
    est: Estimate | None,
    *,
    target: float,
    drawn: int = 0,
    waiting: int = 0,
) -> str:
    """One sentence: what the lead should do and why. ``drawn``: the check sample's size;
    ``waiting``: its tasks not judged yet (a sample being judged is judged first: its
    estimate is not the sample's until then)."""
    certified = [v for v in verdicts if v.rule != "knee" and v.stop]
    open_ = [v for v in verdicts if v.rule != "knee" and v.stop is False]
    if est is None and not drawn:
        return (
            "Draw a check sample: without one no rule can certify recall, and the knee "
            "method alone is a heuristic with no guarantee."
        )
    tasks = f"{waiting} remaining check-sample task{'s' if waiting != 1 else ''}"
    if est is None:
        return (
            f"Judge the {tasks} (of {drawn} drawn): no rule can certify recall until "
            "check-sample documents are judged."
        )
    lo, hi = est.recall[1], est.recall[2]
    ci = f"{est.confidence:.0%} interval {lo:.0%} to {hi:.0%}"
    if waiting:
        return (
            f"Judge the {tasks}: so far {est.sampled} of the {drawn} are judged, recall is "
            f"estimated at {est.recall[0]:.0%} ({ci}) against a target of {target:.0%}, and "
            "the rules' verdicts are final only when the whole sample is judged."
        )
    if certified:
        names = ", ".join(v.name for v in certified)
        return (
            f"Stop: {names} certif{'ies' if len(certified) == 1 else 'y'} recall of at least "
            f"{target:.0%} (estimated recall {est.recall[0]:.0%}, {ci})."
        )
    if open_:
        return (
            f"Continue reviewing: no rule with a guarantee says stop yet, and recall is "
            f"estimated at {est.recall[0]:.0%} ({ci}) against a target of {target:.0%}."
        )
    return (
        f"Draw a larger check sample: the {est.sampled} judged cannot certify a "
        f"{target:.0%} target; estimated recall {est.recall[0]:.0%} ({ci})."
    )
