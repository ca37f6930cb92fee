"""Inter-annotator agreement (docs/domain.md §5): pure functions, no database.

Input is a list of observations ``(item, annotator, value)``: one answer of one annotator
on one item (a (topic, persona, document) unit). For every pair of annotators and every
facet (relevance on three nominal levels, linear-weighted on the ordinal scale, relevance
collapsed to binary, persona sensitivity, personal sensitivity) this reports Cohen's kappa
(scikit-learn's ``cohen_kappa_score``), observed agreement, the number of observations, a
95% bootstrap confidence interval and the confusion matrix; with more than two annotators,
Krippendorff's alpha (the ``krippendorff`` package) over all of them.

Degenerate cases never produce a number: no overlap, a single observation, or a single
category (chance agreement is then 1 and kappa is 0/0) give ``value=None`` and the reason.
'Don't know' sensitivity answers are excluded from sensitivity kappa and counted.
"""

import itertools
import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

import numpy as np

BOOTSTRAP_SAMPLES = 1000
BOOTSTRAP_SEED = 20261121  # fixed: the same judgments always give the same interval


@dataclass(frozen=True)
class Facet:
    """One question seen as a labelling: how to read an answer and compare two of them."""

    name: str
    question: str  # which answer of a judgment it reads
    label: str
    labels: tuple
    value: Callable[[object], object]  # answer -> label, or None to exclude it
    weights: str | None = None  # None (nominal) or "linear" (ordinal)
    alpha_level: str = "nominal"
    excluded_as: str = ""  # what an excluded answer is called, for the count


def _keep(allowed):
    return lambda v: v if v in allowed else None


FACETS = (
    Facet("relevance", "relevance", "Relevance (3 levels, nominal)", (0, 1, 2), _keep({0, 1, 2})),
    Facet(
        "relevance_weighted",
        "relevance",
        "Relevance (ordinal, linear weights)",
        (0, 1, 2),
        _keep({0, 1, 2}),
        weights="linear",
        alpha_level="ordinal",
    ),
    Facet(
        "relevance_binary",
        "relevance",
        "Relevance (relevant = somewhat or highly)",
        (0, 1),
        lambda v: None if v not in (0, 1, 2) else int(v >= 1),
    ),
    Facet(
        "persona_sensitive",
        "persona_sensitive",
        "Persona sensitivity (yes/no)",
        ("no", "yes"),
        _keep({"yes", "no"}),
        excluded_as="don't know",
    ),
    Facet(
        "personal_sensitive",
        "personal_sensitive",
        "Personal sensitivity (yes/no)",
        ("no", "yes"),
        _keep({"yes", "no"}),
        excluded_as="don't know",
    ),
)
FACETS_BY_NAME = {f.name: f for f in FACETS}


@dataclass
class Agreement:
    """Agreement of one pair (or, for alpha, of all annotators) on one facet."""

    facet: str
    annotators: tuple
    n: int  # items both (all) answered with a usable value
    excluded: int = 0  # items left out because an answer was excluded ('don't know')
    value: float | None = None
    undefined: str = ""  # why ``value`` is None
    observed: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    confusion: list[list[int]] = field(default_factory=list)  # rows: first annotator
    labels: tuple = ()

    def as_dict(self) -> dict:
        return asdict(self)


def _kappa(a: list, b: list, facet: Facet) -> float | None:
    """Cohen's kappa by scikit-learn (the reported value), or None where it is 0/0."""
    if len(set(a) | set(b)) < 2:
        return None
    # Imported here: the web process must not pay for scikit-learn at start-up.
    from sklearn.metrics import cohen_kappa_score

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 0/0: scikit-learn warns and gives nan, handled below
        value = cohen_kappa_score(a, b, labels=list(facet.labels), weights=facet.weights)
    return None if math.isnan(value) else float(value)


def kappa_from_confusion(confusion: np.ndarray, weights: str | None) -> np.ndarray:
    """Cohen's kappa of one or many confusion matrices (``[..., k, k]``), NaN where 0/0.

    The formula of scikit-learn's ``cohen_kappa_score``, on counts, so that thousands of
    bootstrap replicates cost one numpy expression (tests check it against scikit-learn).
    """
    c = np.asarray(confusion, dtype=float)
    k = c.shape[-1]
    i, j = np.indices((k, k))
    w = (i != j).astype(float) if weights is None else np.abs(i - j).astype(float)
    total = c.sum(axis=(-2, -1), keepdims=True)
    rows, cols = c.sum(axis=-1), c.sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = cols[..., :, None] * rows[..., None, :] / total
        return 1 - (w * c).sum(axis=(-2, -1)) / (w * expected).sum(axis=(-2, -1))


def _bootstrap(
    codes_a: np.ndarray, codes_b: np.ndarray, facet: Facet, samples: int
) -> tuple[float, float] | None:
    """95% percentile interval of kappa over items resampled with replacement."""
    k, n = len(facet.labels), len(codes_a)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    idx = rng.integers(0, n, size=(samples, n))
    cells = codes_a[idx] * k + codes_b[idx] + (np.arange(samples) * k * k)[:, None]
    confusion = np.bincount(cells.ravel(), minlength=samples * k * k).reshape(samples, k, k)
    values = kappa_from_confusion(confusion, facet.weights)
    values = values[~np.isnan(values)]
    # Too few defined replicates (nearly all one category) give no meaningful interval.
    if len(values) < samples / 2:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def pair_agreement(
    answers_a: dict, answers_b: dict, facet: Facet, names=("a", "b"), samples=BOOTSTRAP_SAMPLES
) -> Agreement:
    """Agreement of two annotators' answers ``{item: answer}`` on one facet."""
    shared = sorted(set(answers_a) & set(answers_b), key=repr)
    a, b, excluded = [], [], 0
    for item in shared:
        va, vb = facet.value(answers_a[item]), facet.value(answers_b[item])
        if va is None or vb is None:
            excluded += 1
            continue
        a.append(va)
        b.append(vb)
    index = {label: i for i, label in enumerate(facet.labels)}
    confusion = [[0] * len(facet.labels) for _ in facet.labels]
    for va, vb in zip(a, b, strict=True):
        confusion[index[va]][index[vb]] += 1
    result = Agreement(
        facet=facet.name,
        annotators=tuple(names),
        n=len(a),
        excluded=excluded,
        confusion=confusion,
        labels=facet.labels,
    )
    if not shared:
        result.undefined = "no overlap: the two annotators judged no item in common"
        return result
    if not a:
        result.undefined = f"no usable pair of answers ({excluded} excluded as {facet.excluded_as})"
        return result
    result.observed = sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
    if len(a) == 1:
        result.undefined = "one observation: kappa needs at least two"
        return result
    result.value = _kappa(a, b, facet)
    if result.value is None:
        used = sorted(set(a) | set(b), key=repr)
        result.undefined = (
            f"a single category ({used[0]!r}) in all answers: chance agreement is 1, "
            "so kappa is 0/0"
        )
        return result
    if samples:
        codes_a = np.array([index[v] for v in a])
        codes_b = np.array([index[v] for v in b])
        interval = _bootstrap(codes_a, codes_b, facet, samples)
        if interval is not None:
            result.ci_low, result.ci_high = interval
    return result


def alpha_agreement(answers: dict[object, dict], facet: Facet) -> Agreement:
    """Krippendorff's alpha over all annotators ``{annotator: {item: answer}}``."""
    names = sorted(answers, key=repr)
    items = sorted({i for per in answers.values() for i in per}, key=repr)
    index = {label: float(i) for i, label in enumerate(facet.labels)}
    matrix = np.full((len(names), len(items)), np.nan)
    excluded = 0
    for r, name in enumerate(names):
        for c, item in enumerate(items):
            if item in answers[name]:
                v = facet.value(answers[name][item])
                if v is None:
                    excluded += 1
                else:
                    matrix[r, c] = index[v]
    pairable = (~np.isnan(matrix)).sum(axis=0) >= 2
    result = Agreement(
        facet=facet.name,
        annotators=tuple(names),
        n=int(pairable.sum()),
        excluded=excluded,
        labels=facet.labels,
    )
    if result.n == 0:
        result.undefined = "no item was answered by two or more annotators"
        return result
    used = matrix[:, pairable]
    values = np.unique(used[~np.isnan(used)])
    if len(values) < 2:
        result.undefined = "a single category in all answers: alpha is 0/0"
        return result
    same = 0
    total = 0
    for column in used.T:
        vals = column[~np.isnan(column)]
        for x, y in itertools.combinations(vals, 2):
            same += x == y
            total += 1
    result.observed = same / total
    import krippendorff  # here, like scikit-learn above

    result.value = float(
        krippendorff.alpha(
            reliability_data=used,
            level_of_measurement=facet.alpha_level,
            value_domain=sorted(index.values()),
        )
    )
    return result


def agreement_report(
    observations: Iterable[tuple], facets=FACETS, samples: int = BOOTSTRAP_SAMPLES
) -> dict:
    """Report agreement for ``(item, annotator, {facet: answer})`` observations.

    Returns ``{"annotators": [...], "items": n, "pairs": [{"annotators": (a, b),
    "facets": {facet: Agreement}}], "alpha": {facet: Agreement} (more than two annotators
    only)}``.
    """
    by_annotator: dict[object, dict] = {}
    for item, annotator, answers in observations:
        by_annotator.setdefault(annotator, {})[item] = answers
    names = sorted(by_annotator, key=repr)
    report = {
        "annotators": names,
        "items": len({i for per in by_annotator.values() for i in per}),
        "pairs": [],
        "alpha": {},
    }
    for a, b in itertools.combinations(names, 2):
        report["pairs"].append(
            {
                "annotators": (a, b),
                "facets": {
                    f.name: pair_agreement(
                        {i: v[f.question] for i, v in by_annotator[a].items()},
                        {i: v[f.question] for i, v in by_annotator[b].items()},
                        f,
                        names=(a, b),
                        samples=samples,
                    )
                    for f in facets
                },
            }
        )
    if len(names) > 2:
        for f in facets:
            report["alpha"][f.name] = alpha_agreement(
                {n: {i: v[f.question] for i, v in by_annotator[n].items()} for n in names}, f
            )
    return report
