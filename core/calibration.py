"""Calibrated P(sensitive): a second, measured calibration of the classifier's probabilities
on its out-of-fold predictions, pure: no Django (docs/publishing.md).

The classifier (``core.sensitivity.train``) already passes its logistic regression through
scikit-learn's sigmoid calibration inside each fold; whether the result is calibrated is a
question for held-out labels. This module answers it and corrects what it finds:

- ``fit``: a ``Calibrator`` from out-of-fold probabilities and their labels. Isotonic
  regression (scikit-learn's ``IsotonicRegression``: monotone, no shape assumed) when both
  classes have at least ``ISOTONIC_MIN_PER_CLASS`` labels, else Platt's sigmoid on the
  log-odds (two parameters, Platt's smoothed targets), else (a class without labels) the
  identity with the reason. The threshold comes from measurements on the CACM and Cranfield
  surrogates (``bench/calibration.py``; docs/publishing.md): up to the 199 sensitive labels
  measured, isotonic's cross-validated Brier score was never better than the sigmoid's.
- ``assess``: the Brier score before and after, the reliability bins before and after, and
  a sentence on how far to trust the calibration given the number of labels. "After" is
  cross-fitted (the calibrator of each fold fitted on the other folds' predictions), never
  the calibrator scored on the labels it was fitted to, which flatters isotonic regression.
- ``reliability``: bins of equal counts (quantiles of the predicted probability, where the
  labels are), each with its mean predicted probability, observed rate, count and 95%
  Clopper-Pearson interval (``core.stopping.clopper_pearson``) for a reliability plot.

Isotonic regression's fitted values are kept within [1 / (n + 2), 1 - 1 / (n + 2)] for n
labels: its lowest block often holds no sensitive label, and a calibrated P of exactly 0
would claim that no document scored as low can be sensitive, which n labels cannot show (the
same ``y_min`` / ``y_max`` of scikit-learn's ``IsotonicRegression``).
"""

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from core.stopping import clopper_pearson

ISOTONIC, SIGMOID, NONE = "isotonic", "sigmoid", "none"
METHODS = (ISOTONIC, SIGMOID, NONE)
# Both classes need at least this many labels for isotonic regression. Measured on the
# CACM and Cranfield surrogates (docs/publishing.md, "Isotonic or sigmoid"): from 60 to
# 1,424 labels (8 to 199 sensitive) isotonic was never better than the sigmoid by more than
# 0.0003 of Brier score, worse by up to 0.013 under 500 labels, and its steps tie hundreds of
# documents at one P, which no band edge can split. It is kept for label sets well beyond
# those measured, where its freedom from a shape can pay.
ISOTONIC_MIN_PER_CLASS = 500
_EPS = 1e-6


def _logit(p) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1 - _EPS)
    return np.log(p) - np.log1p(-p)


@dataclass(frozen=True, eq=False)
class Calibrator:
    """Maps the classifier's probabilities to calibrated ones; picklable (numbers and
    arrays only, no scikit-learn object), so a stored classifier file carries it."""

    method: str  # ISOTONIC, SIGMOID or NONE (the identity)
    labels: int  # how many labels it was fitted on
    positives: int  # how many of them sensitive
    reason: str = ""  # why this method (or why none)
    x: np.ndarray | None = None  # isotonic: the knots (raw P) ...
    y: np.ndarray | None = None  # ... and the calibrated P at each, interpolated between
    a: float = 1.0  # sigmoid: calibrated P = 1 / (1 + exp(-(a logit(raw) + b)))
    b: float = 0.0

    def apply(self, raw) -> np.ndarray:
        """Calibrated probabilities of ``raw`` (any shape), float64."""
        raw = np.asarray(raw, dtype=np.float64)
        if self.method == ISOTONIC:
            return np.interp(raw, self.x, self.y)  # clipped to the knots' range at the ends
        if self.method == SIGMOID:
            return 1.0 / (1.0 + np.exp(-(self.a * _logit(raw) + self.b)))
        return raw.copy()

    __call__ = apply

    def describe(self) -> str:
        """One line: the method and what it was fitted on."""
        if self.method == NONE:
            return f"uncalibrated: {self.reason}"
        name = "isotonic regression" if self.method == ISOTONIC else "Platt's sigmoid"
        return f"{name} on {self.labels:,} out-of-fold predictions ({self.positives:,} sensitive)"


def _sigmoid_fit(raw, y) -> tuple[float, float]:
    """Platt's fit on the log-odds: minimise the log loss against Platt's smoothed targets
    ((N+ + 1) / (N+ + 2) for a positive, 1 / (N- + 2) for a negative), which keeps the
    parameters finite when the classes are separable. Starts from the identity (a=1, b=0)."""
    from scipy.optimize import minimize

    f = _logit(raw)
    y = np.asarray(y, dtype=np.float64)
    pos = y.sum()
    neg = len(y) - pos
    t = np.where(y == 1, (pos + 1) / (pos + 2), 1 / (neg + 2))

    def loss(w):
        z = w[0] * f + w[1]
        # log(1 + exp(z)) - t z, stably; gradient (sigmoid(z) - t) [f, 1]
        value = np.sum(np.logaddexp(0, z) - t * z)
        g = 1 / (1 + np.exp(-z)) - t
        return value, np.array([np.sum(g * f), np.sum(g)])

    w = minimize(loss, np.array([1.0, 0.0]), jac=True, method="L-BFGS-B").x
    return float(w[0]), float(w[1])


def fit(
    raw,
    labels,
    *,
    method: str = "auto",
    isotonic_min_per_class: int = ISOTONIC_MIN_PER_CLASS,
) -> Calibrator:
    """A calibrator from out-of-fold probabilities ``raw`` and their 0/1 ``labels``.

    ``method``: ``auto`` (isotonic when both classes have ``isotonic_min_per_class`` labels,
    else sigmoid), or ``isotonic`` / ``sigmoid`` / ``none``. Labels of one class only (or
    none at all) give the identity with the reason: nothing can be calibrated against them."""
    raw = np.asarray(raw, dtype=np.float64).ravel()
    y = np.asarray(labels, dtype=int).ravel()
    if raw.shape != y.shape:
        raise ValueError(f"{len(raw)} probabilities and {len(y)} labels")
    if method not in ("auto", *METHODS):
        raise ValueError(f"method must be auto or one of {', '.join(METHODS)}")
    n, pos = len(y), int(y.sum())
    neg = n - pos
    if pos == 0 or neg == 0:
        return Calibrator(
            NONE,
            n,
            pos,
            f"{pos} sensitive and {neg} not sensitive labels: calibration needs both",
        )
    if method == NONE:
        return Calibrator(NONE, n, pos, "calibration not asked for")
    if method == "auto":
        small = min(pos, neg)
        if small >= isotonic_min_per_class:
            method = ISOTONIC
            reason = f"both classes have at least {isotonic_min_per_class} labels"
        else:
            method = SIGMOID
            reason = (
                f"{small} labels of the smaller class, under the {isotonic_min_per_class} "
                "isotonic regression needs"
            )
    else:
        reason = f"{method} asked for"
    if method == SIGMOID:
        a, b = _sigmoid_fit(raw, y)
        return Calibrator(SIGMOID, n, pos, reason, a=a, b=b)
    from sklearn.isotonic import IsotonicRegression

    floor = 1.0 / (n + 2)
    iso = IsotonicRegression(y_min=floor, y_max=1 - floor, out_of_bounds="clip").fit(raw, y)
    return Calibrator(
        ISOTONIC,
        n,
        pos,
        reason,
        x=np.asarray(iso.X_thresholds_, dtype=np.float64),
        y=np.asarray(iso.y_thresholds_, dtype=np.float64),
    )


def brier(p, labels) -> float:
    """The Brier score: mean squared difference between P and the 0/1 label (lower is
    better; 0.25 for P = 0.5 everywhere)."""
    p = np.asarray(p, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    return float(np.mean((p - y) ** 2)) if len(y) else math.nan


def cross_fitted(raw, labels, *, method: str, folds: int = 5, seed: int = 0) -> np.ndarray | None:
    """Each prediction calibrated by a calibrator of ``method`` fitted on the other folds
    (stratified): what the calibration does to predictions it has not seen. None when a
    class has fewer than 2 labels (no two folds hold it)."""
    from sklearn.model_selection import StratifiedKFold

    raw = np.asarray(raw, dtype=np.float64).ravel()
    y = np.asarray(labels, dtype=int).ravel()
    pos = int(y.sum())
    k = min(folds, pos, len(y) - pos)
    if k < 2:
        return None
    out = np.empty(len(y))
    for train_idx, test_idx in StratifiedKFold(k, shuffle=True, random_state=seed).split(raw, y):
        c = fit(raw[train_idx], y[train_idx], method=method)
        out[test_idx] = c.apply(raw[test_idx])
    return out


@dataclass(frozen=True)
class Bin:
    """One bin of a reliability plot: labelled predictions with ``low <= P < high``."""

    low: float
    high: float
    count: int
    positives: int
    mean_predicted: float
    observed: float  # positives / count
    observed_low: float  # 95% Clopper-Pearson interval of the observed rate
    observed_high: float


def reliability(p, labels, *, bins: int = 10) -> list[Bin]:
    """Reliability bins of predictions ``p`` against their labels: up to ``bins`` bins of
    equal counts (edges at quantiles of ``p``; tied values stay in one bin, so there may be
    fewer), empty bins left out. Their counts add up to the number of labels."""
    p = np.asarray(p, dtype=np.float64).ravel()
    y = np.asarray(labels, dtype=int).ravel()
    if len(p) == 0:
        return []
    edges = np.unique(np.quantile(p, np.linspace(0, 1, bins + 1)))
    # Bin i holds edges[i] <= p < edges[i + 1]; the last bin also holds its upper edge.
    which = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, max(len(edges) - 2, 0))
    out = []
    for i in range(max(len(edges) - 1, 1)):
        inside = which == i
        count = int(inside.sum())
        if count == 0:
            continue
        k = int(y[inside].sum())
        lo, hi = clopper_pearson(k, count)
        out.append(
            Bin(
                low=float(edges[i]),
                high=float(edges[i + 1]) if len(edges) > 1 else float(edges[0]),
                count=count,
                positives=k,
                mean_predicted=float(p[inside].mean()),
                observed=k / count,
                observed_low=lo,
                observed_high=hi,
            )
        )
    return out


def trust(bins: list[Bin], labels: int, positives: int, method: str) -> str:
    """How far to trust the probabilities, measured on ``labels`` labels, in words: the width
    of the bins' 95% Clopper-Pearson intervals, and what the lowest bin (where the band's
    lower edge sits) can and cannot rule out."""
    if not bins or positives == 0 or positives == labels:
        return (
            f"Not calibrated ({labels} labels, {positives} sensitive): the probabilities are "
            "the classifier's own, unmeasured, and the expected counts are only as good as "
            "they are."
        )
    widths = sorted(b.observed_high - b.observed_low for b in bins)
    median = widths[len(widths) // 2]
    lowest = bins[0]
    what = "Calibrated" if method != NONE else "The classifier's own probabilities, measured"
    parts = [
        f"{what} on {labels:,} labels ({positives:,} sensitive) in {len(bins)} bins of "
        f"about {labels // len(bins):,}: each bin's observed rate is known to within a 95% "
        f"interval {widths[0]:.2f} to {widths[-1]:.2f} wide (median {median:.2f}), so read "
        f"a P to about ±{median / 2:.2f}."
    ]
    parts.append(
        f"In the lowest bin (P below {lowest.high:.3f}) {lowest.positives} of {lowest.count} "
        f"labels were sensitive: the true rate there may be as high as "
        f"{lowest.observed_high:.1%}, so an expected count of sensitive documents among the "
        f"visible ones is uncertain by that much per document, beyond the interval shown."
    )
    if positives < 30 or labels < 200:
        parts.append(
            "That is few labels: treat the calibrated probabilities and the expected counts "
            "as an order of magnitude, and label more before publishing widely."
        )
    return " ".join(parts)


@dataclass
class Assessment:
    """A calibrator with the measurements that say how good it is."""

    calibrator: Calibrator
    brier_before: float  # of the out-of-fold probabilities as they are
    brier_after: float | None  # of the same, cross-fitted calibrated (None: too few labels)
    bins_before: list[Bin] = field(default_factory=list)
    # A calibration fitted and measured but not kept (it did not lower the Brier score):
    # its method and cross-fitted Brier score.
    rejected: str = ""
    brier_rejected: float | None = None
    bins_after: list[Bin] = field(default_factory=list)
    trust: str = ""

    def as_dict(self) -> dict:
        """JSON-ready, for a classifier version's report."""
        c = self.calibrator
        return {
            "method": c.method,
            "labels": c.labels,
            "positives": c.positives,
            "reason": c.reason,
            "description": c.describe(),
            "brier_before": round(self.brier_before, 6),
            "brier_after": None if self.brier_after is None else round(self.brier_after, 6),
            "bins_before": [_rounded(asdict(b)) for b in self.bins_before],
            "bins": [_rounded(asdict(b)) for b in self.bins_after],
            "rejected": self.rejected,
            "brier_rejected": None
            if self.brier_rejected is None
            else round(self.brier_rejected, 6),
            "trust": self.trust,
        }


def _rounded(d: dict) -> dict:
    return {k: round(v, 6) if isinstance(v, float) else v for k, v in d.items()}


def assess(
    raw,
    labels,
    *,
    method: str = "auto",
    bins: int = 10,
    seed: int = 0,
    isotonic_min_per_class: int = ISOTONIC_MIN_PER_CLASS,
) -> Assessment:
    """Fit a calibrator on out-of-fold probabilities ``raw`` and measure it: the Brier score
    of ``raw`` and of ``raw`` cross-fitted calibrated, the reliability bins of both, and the
    trust sentence (from the bins of what is kept).

    A calibration that does not lower the cross-fitted Brier score is not kept: the
    calibrator is the identity, saying why, and the measured one is reported as
    ``rejected`` (the classifier's probabilities are already sigmoid-calibrated inside its
    folds; with few labels a second calibration mostly adds noise: docs/publishing.md)."""
    raw = np.asarray(raw, dtype=np.float64).ravel()
    y = np.asarray(labels, dtype=int).ravel()
    calibrator = fit(raw, y, method=method, isotonic_min_per_class=isotonic_min_per_class)
    after = (
        cross_fitted(raw, y, method=calibrator.method, seed=seed)
        if calibrator.method != NONE
        else None
    )
    before_score = brier(raw, y)
    rejected, brier_rejected = "", None
    if after is not None and method == "auto" and brier(after, y) >= before_score:
        rejected, brier_rejected = calibrator.method, brier(after, y)
        calibrator = Calibrator(
            NONE,
            calibrator.labels,
            calibrator.positives,
            f"{rejected} calibration ({calibrator.reason}) did not lower the cross-validated "
            f"Brier score ({brier_rejected:.4f} against {before_score:.4f}): the classifier's "
            "own probabilities are kept",
        )
        after = None
    bins_before = reliability(raw, y, bins=bins)
    bins_after = reliability(after, y, bins=bins) if after is not None else bins_before
    return Assessment(
        calibrator=calibrator,
        brier_before=before_score,
        brier_after=brier(after, y) if after is not None else None,
        bins_before=bins_before,
        bins_after=bins_after,
        rejected=rejected,
        brier_rejected=brier_rejected,
        trust=trust(bins_after, len(y), int(y.sum()), calibrator.method),
    )
