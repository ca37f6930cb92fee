"""Where each ranked document goes for a searcher (docs/domain.md §9), pure: no Django.

shown now      released by an archivist, or P(sensitive) below the band
review         inside the band (or unscored), among the first k ranks; with ``most_uncertain``
               only the n of those nearest P = 0.5 (unscored counts as 0.5), the others
               held back (neither shown nor asked about: asked when a later search makes them
               among its n most uncertain)
dropped        withheld, or P(sensitive) at or above the band

The same band over a whole collection (issue 33): ``band_preview`` counts what it shows,
sends to review and withholds, with the expected number of sensitive documents among the
visible from calibrated probabilities (``core.calibration``) and the review workload in
hours; ``band_rule`` chooses a default band by a stated rule (docs/publishing.md).
"""

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

RELEASED, WITHHELD = "released", "withheld"


@dataclass
class Split:
    shown: list[int]  # positions in the ranking, best first
    review: list[int]


def split(
    ranking,
    p: dict,
    decided: dict,
    *,
    band_low: float,
    band_high: float,
    k: int,
    most_uncertain: int | None = None,
) -> Split:
    """``ranking``: document keys best first; ``p``: key -> P(sensitive) (missing: unscored);
    ``decided``: key -> RELEASED or WITHHELD for decisions in force; ``most_uncertain``:
    ask about at most this many per search (the n most uncertain among the top k)."""
    shown, review = [], []
    for rank, key in enumerate(ranking):
        decision = decided.get(key)
        if decision == WITHHELD:
            continue
        if decision == RELEASED:
            verdict = "show"
        elif key not in p:
            verdict = "review"
        elif p[key] < band_low:
            verdict = "show"
        elif p[key] >= band_high:
            verdict = "drop"
        else:
            verdict = "review"
        if verdict == "show" and len(shown) < k:
            shown.append(rank)
        elif verdict == "review" and rank < k:
            review.append(rank)
    if most_uncertain is not None and len(review) > most_uncertain:
        nearest = sorted(review, key=lambda r: (abs(p.get(ranking[r], 0.5) - 0.5), r))
        review = sorted(nearest[:most_uncertain])
    return Split(shown, review)


# --- The band over a whole collection: the lead's preview and a default choice -------------


@dataclass(frozen=True)
class Preview:
    """Where every document of a collection goes under the band [low, high), as ``split``
    routes it: below ``low`` visible, at or above ``high`` withheld unreviewed, between (or
    unscored) to an archivist's review; decisions in force first."""

    low: float
    high: float
    total: int
    visible: int  # P < low and not withheld by a decision, or released
    released: int  # of which released by a decision in force
    review: int  # low <= P < high, or unscored; undecided
    unscored: int  # of which without a score
    withheld: int  # P >= high, or withheld by a decision in force
    withheld_by_decision: int
    # Among the visible: the sum of their calibrated P (a released document counts 0: an
    # archivist read it), and a ``confidence`` interval of the number, by ``interval``.
    expected_sensitive: float
    expected_low: float
    expected_high: float
    interval: str
    expected_sensitive_review: float  # among the scored documents sent to review
    expected_sensitive_withheld: float  # among those withheld unreviewed (P >= high)
    seconds_per_decision: float
    review_hours: float  # review documents x seconds per decision


class _Band:
    """Calibrated P of the undecided scored documents, sorted once, with cumulative sums of
    P and of P(1 - P): any band's counts and expected numbers in O(log n), a grid of them
    vectorised."""

    def __init__(self, p: Mapping, released, withheld, unscored):
        released, withheld = set(released), set(withheld)
        decided = released | withheld
        values = [v for key, v in p.items() if key not in decided]
        self.sorted = np.sort(np.asarray(values, dtype=np.float64))
        if len(self.sorted) and (self.sorted[0] < 0 or self.sorted[-1] > 1):
            raise ValueError("probabilities must be within [0, 1]")
        self.cum_p = np.concatenate([[0.0], np.cumsum(self.sorted)])
        self.cum_var = np.concatenate([[0.0], np.cumsum(self.sorted * (1 - self.sorted))])
        self.released = len(released)
        self.withheld = len(withheld)
        self.unscored = len(set(unscored) - decided - set(p))
        self.n = len(self.sorted)
        self.total = self.n + self.released + self.withheld + self.unscored

    def below(self, t):
        """How many undecided scored documents have P < t (t: a number or an array)."""
        return np.searchsorted(self.sorted, t, side="left")


def _interval(mean: float, var: float, n: int, confidence: float) -> tuple[float, float, str]:
    from scipy.stats import norm, poisson

    a = (1 - confidence) / 2
    if var >= 9:
        half = float(norm.ppf(1 - a)) * var**0.5
        return max(0.0, mean - half), min(float(n), mean + half), "normal"
    if mean <= 0:
        return 0.0, 0.0, "poisson"
    lo, hi = poisson.ppf([a, 1 - a], mean)
    return float(lo), float(min(hi, n)), "poisson"


def _preview(band: _Band, low: float, high: float, seconds: float, confidence: float):
    if not 0 <= low <= high <= 1:
        raise ValueError("the band needs 0 <= low <= high <= 1")
    shown, below_high = int(band.below(low)), int(band.below(high))
    mean = float(band.cum_p[shown])
    lo, hi, method = _interval(mean, float(band.cum_var[shown]), shown, confidence)
    review = below_high - shown + band.unscored
    return Preview(
        low=low,
        high=high,
        total=band.total,
        visible=shown + band.released,
        released=band.released,
        review=review,
        unscored=band.unscored,
        withheld=band.n - below_high + band.withheld,
        withheld_by_decision=band.withheld,
        expected_sensitive=mean,
        expected_low=lo,
        expected_high=hi,
        interval=(
            f"{confidence:.0%} interval of a sum of independent Bernoulli(P) "
            + (
                "(Poisson-binomial), normal approximation"
                if method == "normal"
                else "by the Poisson distribution of the same mean (variance under 9: the "
                "normal approximation is poor; the Poisson's variance is the larger, so its "
                "bounds are the wider)"
            )
        ),
        expected_sensitive_review=float(band.cum_p[below_high] - band.cum_p[shown]),
        expected_sensitive_withheld=float(band.cum_p[-1] - band.cum_p[below_high]),
        seconds_per_decision=seconds,
        review_hours=review * seconds / 3600,
    )


def band_preview(
    p: Mapping,
    *,
    low: float,
    high: float,
    seconds_per_decision: float,
    released=(),
    withheld=(),
    unscored=(),
    confidence: float = 0.95,
) -> Preview:
    """What the band [``low``, ``high``) does to a whole collection.

    ``p``: key -> calibrated P(sensitive) of every scored document; ``released`` /
    ``withheld``: keys decided by decisions in force (they go where the decision says,
    whatever their P); ``unscored``: keys of documents the classifier has not scored (to
    review, like ``split``). The counts add up to ``total``, the distinct keys of all four.

    The expected number of sensitive documents among the visible is the sum of their
    calibrated P, the mean of a Poisson-binomial distribution (each document sensitive with
    its P, independently); its interval is the normal approximation (mean +- z sd, sd =
    sqrt(sum P(1 - P))) when that variance is at least 9, else the Poisson distribution's
    quantiles at the same mean. The interval assumes the probabilities are calibrated: the
    calibration's own error (``core.calibration.trust``) comes on top."""
    band = _Band(p, released, withheld, unscored)
    return _preview(band, low, high, seconds_per_decision, confidence)


GRID = np.round(np.linspace(0.0, 1.0, 1001), 3)  # band edges a lead can read: 0.001 steps


@dataclass(frozen=True)
class Rule:
    """The band ``band_rule`` chose, its preview, and the rule in words."""

    low: float
    high: float
    preview: Preview
    rule: str
    limited: str = ""  # a constraint that could not be met, in words


def band_rule(
    p: Mapping,
    *,
    seconds_per_decision: float,
    max_sensitive_share: float | None = 0.01,
    max_sensitive: float | None = None,
    max_review_documents: int | None = None,
    max_review_hours: float | None = None,
    released=(),
    withheld=(),
    unscored=(),
    grid=GRID,
) -> Rule:
    """A default band (a day-one choice for the publish page), on a grid of edges
    (``GRID``: 0 to 1 in steps of 0.001):

    1. ``low``: the widest visible set whose expected number of sensitive documents (the
       sum of their calibrated P) stays within the target: at most ``max_sensitive_share``
       of the visible documents (released ones included in the count) and, when given, at
       most ``max_sensitive`` documents; the largest grid value meeting both.
    2. ``high``: the widest review band above it whose workload stays within the cap:
       documents in [low, high) plus the unscored ones at most ``max_review_documents`` and
       at most ``max_review_hours`` at ``seconds_per_decision``; the largest grid value at
       or above ``low`` meeting it. Everything at or above ``high`` is withheld unreviewed.

    When the unscored documents alone exceed the cap, ``high = low`` and ``limited`` says
    so. Sorted once; every grid value is one ``searchsorted``: milliseconds at 500,000
    documents."""
    if max_sensitive_share is None and max_sensitive is None:
        raise ValueError("give max_sensitive_share, max_sensitive or both")
    if max_review_documents is None and max_review_hours is None:
        raise ValueError("give max_review_documents, max_review_hours or both")
    grid = np.unique(np.asarray(grid, dtype=np.float64))
    if len(grid) == 0 or grid[0] < 0 or grid[-1] > 1:
        raise ValueError("the grid must hold values within [0, 1]")
    band = _Band(p, released, withheld, unscored)
    below = band.below(grid)
    expected = band.cum_p[below]
    visible = below + band.released
    ok = np.ones(len(grid), dtype=bool)
    if max_sensitive_share is not None:
        ok &= expected <= max_sensitive_share * visible + 1e-12
    if max_sensitive is not None:
        ok &= expected <= max_sensitive + 1e-12
    # grid[0] with nothing below it is always feasible (expected 0); else the grid's first.
    i = int(np.flatnonzero(ok)[-1]) if ok.any() else 0
    low = float(grid[i])
    cap = np.inf
    if max_review_documents is not None:
        cap = min(cap, max_review_documents)
    if max_review_hours is not None:
        cap = min(cap, int(max_review_hours * 3600 // seconds_per_decision))
    review = below - below[i] + band.unscored
    fits = (grid >= low) & (review <= cap)
    limited = ""
    if fits.any():
        high = float(grid[np.flatnonzero(fits)[-1]])
    else:
        high = low
        limited = (
            f"the {band.unscored:,} unscored documents alone exceed the review cap of "
            f"{cap:,.0f}: retrain the classifier to score them"
        )
    targets = []
    if max_sensitive_share is not None:
        targets.append(f"{max_sensitive_share:.1%} of the visible documents")
    if max_sensitive is not None:
        targets.append(f"{max_sensitive:g} documents")
    caps = []
    if max_review_documents is not None:
        caps.append(f"{max_review_documents:,} documents")
    if max_review_hours is not None:
        caps.append(f"{max_review_hours:g} hours at {seconds_per_decision:g} s a decision")
    rule = (
        "The widest visible set whose expected number of sensitive documents (the sum of "
        f"their calibrated P) stays within {' and '.join(targets)}; then the widest review "
        f"band above it within {' and '.join(caps)}; edges on a 0.001 grid."
    )
    return Rule(low, high, _preview(band, low, high, seconds_per_decision, 0.95), rule, limited)


def seconds_per_decision(
    decisions, *, same_action: float = 2.0, pause: float = 900.0
) -> list[float]:
    """Seconds each decision took, from when the decisions were recorded (no decision
    records when its document was opened): ``decisions``, (archivist, time in seconds) pairs.

    Per archivist, in time order, decisions less than ``same_action`` seconds apart are one
    action (a group decision records one per document within milliseconds); an action's time
    is the gap since the archivist's previous action, shared equally by its decisions. A gap
    over ``pause`` (15 minutes) is a pause, not work: that action is left unmeasured, as is
    each archivist's first. Returns one value per measured decision, oldest first."""
    by_archivist: dict = {}
    for who, at in decisions:
        by_archivist.setdefault(who, []).append(float(at))
    measured: list[tuple[float, float]] = []
    for times in by_archivist.values():
        times.sort()
        actions: list[list[float]] = []
        for t in times:
            if actions and t - actions[-1][-1] < same_action:
                actions[-1].append(t)
            else:
                actions.append([t])
        for before, action in zip(actions, actions[1:], strict=False):
            gap = action[0] - before[-1]
            if gap <= pause:
                measured += [(action[0], gap / len(action))] * len(action)
    return [seconds for _at, seconds in sorted(measured)]
