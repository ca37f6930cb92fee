"""The active-learning core (Rahman et al., docs/domain.md §4), pure: no Django.

A logistic-regression relevance classifier over a collection's TF-IDF rows, trained on the
judged rows (graded relevance collapsed: relevant = grade 1 or 2), scores the candidates;
a strategy picks the next batch among the unjudged ones:

  cal   continuous active learning: the highest P(relevant);
  sal   simple active learning: the most uncertain, P(relevant) closest to 0.5;
  spl   simple passive learning: uniformly at random;

and, for the scarcer sensitivity labels, ``sensitivity_uncertain``: among the candidates
likely relevant, those whose P(sensitive) is closest to 0.5.

Everything random takes a seed, so a run is reproducible.
"""

from dataclasses import dataclass

import numpy as np

STRATEGIES = ("cal", "sal", "spl")
# Inverse regularisation of the classifiers. Row-normalised TF-IDF with a few dozen judged
# rows needs little regularisation; at scikit-learn's C=1 every probability sits near the
# judged sample's prior. Chosen on CACM (docs/active-learning.md), checked on Cranfield.
DEFAULT_C = 30.0
# For CAL selection in a screening review (AutoTAR, presumed non-relevant documents in the
# training set): C = 10 needed fewer documents to 95% and 100% recall than 3, 30 or 100 on 10
# CACM topics x 3 priors (docs/active-learning.md, "Screening beside ASReview").
SCREENING_C = 10.0
# For the picker of a screening review retrained after every judged document: logistic
# regression (C = 3, presumed non-relevant documents) and ASReview's SVM fused by mean rank
# (``train_screening``): fewer documents to 95% and 100% recall than the logistic regression
# alone at C = 10 on the tuning topics of CACM and Cranfield (docs/active-learning.md,
# "Third round").
ENSEMBLE_C = 3.0
# The weight of a row's latent coordinates beside its TF-IDF words in the screening picker
# (``Latent``): 0.5 needed fewer documents to 95% and 100% recall than 0.25 or 1 on the
# tuning topics (docs/active-learning.md, "Eighth round").
LATENT_WEIGHT = 0.5


class NotTrainable(ValueError):
    """The judged rows hold a single class: a classifier cannot be trained yet."""


@dataclass
class Model:
    """A trained relevance (or sensitivity) classifier and what it was trained on."""

    estimator: object
    trained_rows: np.ndarray  # row indices of the judgments it saw (the high-water mark)
    positives: int
    negatives: int
    # Trained on each row's TF-IDF beside its latent coordinates (``Latent``), or None.
    latent: "Latent | None" = None

    def probabilities(self, matrix, rows=None) -> np.ndarray:
        """P(positive) of ``rows`` of ``matrix`` (every row when None)."""
        from scipy.special import expit

        return expit(_margins(self.estimator, matrix, self.latent, rows))


@dataclass(frozen=True)
class Latent:
    """Latent coordinates of every row (``core.features.latent_coordinates``: the rows'
    projection on the collection's first singular vectors, L2-normalised) and the weight
    they get beside the TF-IDF row: a classifier reads [x, w z] / sqrt(1 + w^2), a unit
    row again, so rows that share few words but the same latent topics still score alike
    (what the last relevant documents of a review often are: docs/active-learning.md,
    "Eighth round")."""

    coordinates: np.ndarray  # n rows x k
    weight: float = LATENT_WEIGHT

    @property
    def scale(self) -> float:
        """1 / sqrt(1 + w^2): what makes [x, w z] a unit row again."""
        return 1.0 / np.sqrt(1.0 + self.weight**2)

    def rows(self, matrix, rows):
        """The training representation of ``rows``: sparse [x, w z] / sqrt(1 + w^2), built
        as one CSR matrix directly (scipy's hstack of a sparse and a dense block cost more
        than the fit)."""
        import scipy.sparse as sp

        scale = self.scale
        x = matrix[rows]
        z = np.asarray(self.coordinates[rows], dtype=x.dtype) * (self.weight * scale)
        m, (d, k) = x.shape[0], (x.shape[1], z.shape[1])
        counts = np.diff(x.indptr)
        indptr = x.indptr + k * np.arange(m + 1)
        words = np.arange(x.nnz) + k * np.repeat(np.arange(m), counts)
        topics = (indptr[1:] - k)[:, None] + np.arange(k)
        data = np.empty(x.nnz + m * k, dtype=x.dtype)
        indices = np.empty(x.nnz + m * k, dtype=np.int32)
        data[words], indices[words] = x.data * scale, x.indices
        data[topics.ravel()], indices[topics.ravel()] = z.ravel(), np.tile(d + np.arange(k), m)
        return sp.csr_matrix((data, indices, indptr), shape=(m, d + k))


def _margins(estimator, matrix, latent: Latent | None, rows=None) -> np.ndarray:
    """``estimator``'s decision values of ``rows`` (every row when None), in float64."""
    x = matrix if rows is None else matrix[rows]
    # What predict_proba computes for binary logistic regression, in the matrix's own
    # dtype: scikit-learn would first copy a float32 matrix to float64 (at 500,000 rows
    # that copy costs more than the product itself).
    w = estimator.coef_.ravel().astype(x.dtype, copy=False)
    if latent is None:
        return np.asarray(x @ w, dtype=np.float64) + estimator.intercept_[0]
    d = x.shape[1]
    z = latent.coordinates if rows is None else latent.coordinates[rows]
    words = np.asarray(x @ w[:d], dtype=np.float64)
    # einsum, not @: a product of n x k floats needs no BLAS threads, and under a busy worker
    # host OpenBLAS's threads made the picker ten times slower (docs/performance.md).
    topics = np.einsum("ij,j->i", z, w[d:].astype(z.dtype, copy=False)).astype(np.float64)
    return latent.scale * (words + latent.weight * topics) + estimator.intercept_[0]


def collapse(grades) -> np.ndarray:
    """Graded relevance to the binary training label: relevant = grade 1 or 2."""
    return (np.asarray(grades) >= 1).astype(int)


def train(
    matrix,
    rows,
    labels,
    *,
    seed: int = 0,
    c: float = DEFAULT_C,
    latent: Latent | None = None,
    x=None,
    dual: bool = False,
) -> Model:
    """Fit logistic regression on ``matrix[rows]`` with binary ``labels`` (beside their
    ``latent`` coordinates when given; ``x``: that training matrix when the caller has
    built it, ``latent.rows(matrix, rows)``); ``dual``: liblinear's dual solver."""
    from sklearn.linear_model import LogisticRegression

    rows = np.asarray(rows, dtype=np.int64)
    labels = np.asarray(labels, dtype=int)
    if len(rows) != len(labels):
        raise ValueError(f"{len(rows)} rows but {len(labels)} labels")
    positives = int(labels.sum())
    negatives = len(labels) - positives
    if positives == 0 or negatives == 0:
        raise NotTrainable(
            f"the judgments hold {positives} relevant and {negatives} non-relevant documents; "
            "training needs at least one of each"
        )
    estimator = LogisticRegression(C=c, solver="liblinear", random_state=seed, dual=dual)
    if x is None:
        x = matrix[rows] if latent is None else latent.rows(matrix, rows)
    estimator.fit(x, labels)
    return Model(estimator, rows, positives, negatives, latent)


def _unjudged(candidates, judged) -> np.ndarray:
    """The sorted unique candidate rows that are not judged (numpy throughout: at 500,000
    candidates a Python loop here would cost more than the classifier)."""
    if isinstance(candidates, range) and candidates.step == 1:
        pool = np.arange(candidates.start, candidates.stop, dtype=np.int64)
    else:
        pool = np.unique(
            np.asarray(
                list(candidates) if isinstance(candidates, set) else candidates, dtype=np.int64
            )
        )
    judged = np.asarray(list(judged) if isinstance(judged, set) else judged, dtype=np.int64)
    if len(judged) and len(pool):
        pool = pool[~np.isin(pool, judged)]
    return pool


def _smallest(pool: np.ndarray, key: np.ndarray, size: int, *, tiebreak=None) -> list[int]:
    """The ``size`` rows of ``pool`` with the smallest ``key`` (ties: ``tiebreak`` ascending,
    then row number), without sorting the whole pool."""
    k = min(size, len(pool))
    if k < len(pool):
        threshold = np.partition(key, k - 1)[k - 1]
        keep = np.flatnonzero(key <= threshold)  # every row tied at the threshold too
        pool, key = pool[keep], key[keep]
        tiebreak = None if tiebreak is None else tiebreak[keep]
    order = np.lexsort((pool, key) if tiebreak is None else (pool, tiebreak, key))
    return pool[order[:k]].tolist()


def select(
    strategy: str,
    probabilities: np.ndarray,
    candidates,
    judged,
    size: int,
    *,
    seed: int = 0,
) -> list[int]:
    """Pick ``size`` unjudged rows among ``candidates`` by ``strategy``.

    ``probabilities`` is P(relevant) for every row of the matrix (ignored by ``spl``);
    ties are broken by row number, so the same inputs give the same batch.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
    pool = _unjudged(candidates, judged)
    if size <= 0 or len(pool) == 0:
        return []
    if strategy == "spl":
        rng = np.random.default_rng(seed)
        return sorted(rng.choice(pool, size=min(size, len(pool)), replace=False).tolist())
    p = np.asarray(probabilities)[pool]
    return _smallest(pool, -p if strategy == "cal" else np.abs(p - 0.5), size)


def select_sensitivity_uncertain(
    p_relevant: np.ndarray,
    p_sensitive: np.ndarray,
    candidates,
    judged,
    size: int,
    *,
    relevant_at: float = 0.5,
) -> list[int]:
    """Among unjudged candidates with P(relevant) >= ``relevant_at``, those whose
    P(sensitive) is closest to 0.5 (ties: more likely relevant first, then row number)."""
    pool = _unjudged(candidates, judged)
    pool = pool[np.asarray(p_relevant)[pool] >= relevant_at]
    if size <= 0 or len(pool) == 0:
        return []
    key = np.abs(np.asarray(p_sensitive)[pool] - 0.5)
    return _smallest(pool, key, size, tiebreak=-np.asarray(p_relevant)[pool])


@dataclass
class Iteration:
    """One active-learning iteration: the model (None when the labels hold one class), the
    P(relevant) of every row (None without a model), the next batch, and why it was chosen
    the way it was."""

    model: Model | None
    probabilities: np.ndarray | None
    batch: list[int]
    strategy: str
    note: str = ""


def iterate(
    matrix,
    rows,
    labels,
    candidates,
    strategy: str,
    size: int,
    *,
    seed: int = 0,
    c: float = DEFAULT_C,
    exclude=(),
) -> Iteration:
    """Retrain on the judged ``rows``, rescore every row, pick the next batch.

    Selection uses the classifier of the judged rows alone, as Rahman et al. do (with the
    presumed non-relevant sample of ``train_labeller`` nearly every probability falls below
    0.5 and SAL would pick what CAL picks); machine labels come from ``train_labeller``.

    ``exclude``: rows already waiting in the queue (not judged yet, not to be picked again).
    When the labels hold a single class the batch is drawn at random (``spl``), as in
    Rahman et al. before the first relevant document is found.
    """
    taken = np.concatenate([np.asarray(rows, dtype=np.int64), np.asarray(exclude, dtype=np.int64)])
    try:
        model = train(matrix, rows, labels, seed=seed, c=c)
    except NotTrainable as exc:
        batch = select("spl", None, candidates, taken, size, seed=seed)
        return Iteration(None, None, batch, "spl", f"drawn at random: {exc}")
    p = model.probabilities(matrix)
    return Iteration(model, p, select(strategy, p, candidates, taken, size, seed=seed), strategy)


def presumed_nonrelevant(candidates, judged, *, seed: int = 0) -> list[int]:
    """A random 20% (at most 100) of the unjudged candidates, to be added to the labeller's
    training set as non-relevant: the "presumed non-relevant" documents of Cormack and
    Grossman's AutoTAR. Relevant documents are rare, so the presumption is mostly right, and
    it teaches the model what the unjudged remainder looks like; without it the model learns
    the prior of the judged sample (balanced seeds, CAL's likely-relevant picks) and labels
    far too many of the rest relevant."""
    pool = _unjudged(candidates, judged)
    size = min(100, len(pool) // 5)
    if size == 0:
        return []
    return sorted(np.random.default_rng(seed).choice(pool, size=size, replace=False).tolist())


def train_labeller(
    matrix,
    rows,
    labels,
    candidates,
    *,
    seed: int = 0,
    c: float = DEFAULT_C,
    latent=None,
    dual: bool = False,
):
    """The model that gives machine labels: ``train`` on the judged rows plus the presumed
    non-relevant sample of the unjudged candidates."""
    rows, labels = _with_presumed(rows, labels, candidates, seed)
    return train(matrix, rows, labels, seed=seed, c=c, latent=latent, dual=dual)


def _with_presumed(rows, labels, candidates, seed: int) -> tuple[list[int], list[int]]:
    """The judged ``rows`` and ``labels`` followed by the presumed non-relevant sample."""
    extra = presumed_nonrelevant(candidates, rows, seed=seed)
    return (
        [*np.asarray(rows).tolist(), *extra],
        [*np.asarray(labels).tolist(), *[0] * len(extra)],
    )


def svm_scores(
    matrix, rows, labels, *, seed: int = 0, latent: Latent | None = None, x=None
) -> np.ndarray:
    """Return every row's margin under ASReview's default classifier (ELAS u4, its 3.0
    source): a linear SVM (squared hinge, C = 0.11) trained on ``matrix[rows]`` alone (no
    presumed non-relevant documents), with its balancer's sample weights (relevant 1,
    non-relevant n1 / (9.8 n0), scaled to mean 1), which weight the relevant class up.
    ``latent`` and ``x`` as for ``train``."""
    from sklearn.svm import LinearSVC

    y = np.asarray(labels, dtype=int)
    n1, n0 = int(y.sum()), int(len(y) - y.sum())
    if n1 == 0 or n0 == 0:
        raise NotTrainable(f"the judgments hold {n1} relevant and {n0} non-relevant documents")
    w = np.where(y == 1, 1.0, n1 / (9.8 * n0))
    w *= len(y) / w.sum()
    rows = np.asarray(rows, dtype=np.int64)
    # Seeded: its dual solver visits rows in a random order (near-ties could flip between runs).
    fitted = LinearSVC(C=0.11, loss="squared_hinge", random_state=seed)
    if x is None:
        x = matrix[rows] if latent is None else latent.rows(matrix, rows)
    fitted = fitted.fit(x, y, sample_weight=w)
    if latent is None:
        return np.asarray(matrix @ fitted.coef_.ravel().astype(matrix.dtype)).ravel()
    return _margins(fitted, matrix, latent)


def _descending(scores) -> np.ndarray:
    """Row indices from the highest score to the lowest, ties by row number: what
    ``np.argsort(-scores, kind="stable")`` returns, in under half its time at 500,000 rows
    (unique keys, value rank times n plus row, so the faster unstable sort is exact)."""
    scores = np.asarray(scores)
    n = len(scores)
    _values, dense = np.unique(-scores, return_inverse=True)
    return np.argsort(dense.astype(np.int64).ravel() * n + np.arange(n))


def _ranks(scores) -> np.ndarray:
    """0 for the highest score, 1 for the next... (ties by row)."""
    out = np.empty(len(scores))
    out[_descending(scores)] = np.arange(len(scores))
    return out


def rank_fuse(*scores, fusion: str = "mean") -> np.ndarray:
    """Fuse score arrays by rank (higher is better in each and in the result): "mean",
    minus the sum of their ranks; "rrf", reciprocal rank fusion (Cormack, Clarke and
    Buettcher 2009), the sum of 1 / (60 + rank), ranks counted from 1; "min", the best of
    the ranks, ties by their sum (measured in the eighth round, not adopted)."""
    ranks = [_ranks(s) for s in scores]
    if fusion == "mean":
        return -sum(ranks)
    if fusion == "rrf":
        return sum(1 / (61 + r) for r in ranks)
    if fusion == "min":  # the best of the ranks, ties by their sum
        n = len(ranks[0])
        return -(np.minimum.reduce(ranks) * (len(ranks) * n) + sum(ranks))
    raise ValueError(f"unknown fusion {fusion!r}; use mean, rrf or min")


def threads_followed(threads, labels) -> set:
    """The threads a review that follows threads would follow: those whose judged messages
    are mostly relevant (more relevant than not). ``threads[i]`` is the thread of the i-th
    judged document (None, "" or a negative number for none) and ``labels[i]`` its 0/1 label.

    Used by the simulation's ``Protocol(threads=True)``: the unjudged thread-mates of a
    relevant message are read next (``train_screening``'s ``first``) until the thread's judged
    messages are no longer mostly relevant. Measured and not adopted for the live picker: it
    gains little where a thread is relevant as a whole and costs where replies leave the topic
    (docs/active-learning.md, "Fifth round")."""
    tally: dict = {}
    for thread, label in zip(threads, labels, strict=True):
        if thread is None or thread == "" or (isinstance(thread, int | np.integer) and thread < 0):
            continue
        tally[thread] = tally.get(thread, 0) + (1 if int(label) else -1)
    return {thread for thread, balance in tally.items() if balance > 0}


def train_screening(
    matrix,
    rows,
    labels,
    candidates,
    *,
    seed: int = 0,
    c: float = ENSEMBLE_C,
    svm_matrices=None,
    fusion: str = "mean",
    presumed: bool = True,
    first=None,
    latent: Latent | None = None,
) -> tuple[Model, np.ndarray]:
    """Train the screening picker of a review retrained after every judged document: the
    logistic regression of ``train_labeller`` (judged plus presumed non-relevant, C = ``c``)
    and ``svm_scores`` (judged alone), fused by their mean rank.

    The live loop uses the defaults. ``core.screening`` simulates the same picker through
    this function, and its measured variants through the keywords: ``svm_matrices``, the
    SVMs' features, one SVM per matrix (default: one SVM on ``matrix``); ``fusion``
    ("mean" or "rrf", ``rank_fuse``); ``presumed`` False, the regression on the judged
    documents alone. ``latent``: both models read each row's latent coordinates beside its
    words (``Latent``; the live loop passes the index's, ``core.features.FeatureMatrix.latent``,
    when it has them).

    ``first``: candidate rows ranked ahead of every other, in the fused order among
    themselves: the unjudged messages of the threads a simulated review follows
    (``threads_followed``; measured, not adopted: docs/active-learning.md, "Fifth round").

    Return the logistic regression and a score per row that orders the ``candidates`` as
    their fused ranks do (ties by row) but keeps a probability's scale: the candidate at
    fused rank i gets the i-th highest P(relevant) of the candidates under the logistic
    regression. A mean rank is not a probability,
    and the stored scores are read as one (thresholds, the stopping projection); the values,
    and so the count above any threshold, are the logistic regression's.
    """
    from sklearn import config_context

    rows = np.asarray(rows, dtype=np.int64)
    if presumed:
        model_rows, model_labels = _with_presumed(rows, labels, candidates, seed)
    else:
        model_rows, model_labels = rows, labels
    # With latent topics the regression's rows are built once; the SVM's are their first
    # rows (the judged ones, before the presumed sample).
    x = None if latent is None else latent.rows(matrix, model_rows)
    # Both fits run after every judged document on a few hundred rows, where scikit-learn's
    # check of its parameters (constants here) costs about a millisecond a step: skipped.
    # Its check of finite values is kept: liblinear loops forever on a NaN.
    with config_context(skip_parameter_validation=True):
        # The dual solver: a few hundred rows against thousands of terms (scikit-learn's
        # advice for n_samples < n_features); the same optimum, and on the mail's tuning
        # topics the same counts within one document at a fifth of the time (eighth round).
        model = train(
            matrix, model_rows, model_labels, seed=seed, c=c, latent=latent, x=x, dual=True
        )
        p = model.probabilities(matrix)
        try:
            svms = [
                svm_scores(m, rows, labels, seed=seed, latent=latent, x=x[: len(rows)])
                if m is matrix and latent is not None
                else svm_scores(m, rows, labels, seed=seed)
                for m in svm_matrices or (matrix,)
            ]
        except NotTrainable:
            # Only relevant documents judged: the presumed sample gives the logistic
            # regression its other class, the SVM has none, so it picks alone (as before
            # the ensemble).
            svms = []
    first = np.asarray([] if first is None else first, dtype=np.int64)
    if not svms and not len(first):
        return model, p
    pool = _unjudged(candidates, [])  # ranked among the candidates, the rows picked from
    fused = rank_fuse(p[pool], *(svm[pool] for svm in svms), fusion=fusion)
    ahead = np.isin(pool, first)
    if ahead.any():  # above every other candidate, their own order kept
        fused = np.where(ahead, fused + (fused.max() - fused.min() + 1), fused)
    scores = p.copy()  # rows outside the candidates keep their own probability
    scores[pool[_descending(fused)]] = np.sort(p[pool])[::-1]
    # Candidates whose mapped values tie (equal probabilities) are picked in row order, not
    # in the fused order; the simulation, which picks from these scores too, moved 4 of 150
    # Cranfield tuning runs by 1-66 documents when it switched from the fused ranks to them
    # (docs/active-learning.md). Stored in float64 (ranking.learning_step.scores_save), as
    # the simulation keeps them: in float32, 1 of 90 simulated screenings moved.
    return model, scores


def hybrid_labels(probabilities: np.ndarray, candidates, judged) -> dict[int, tuple[int, float]]:
    """Machine labels for the unjudged candidates: ``{row: (0|1, P(relevant))}``."""
    judged = set(int(r) for r in judged)
    return {
        int(r): (int(probabilities[int(r)] >= 0.5), float(probabilities[int(r)]))
        for r in candidates
        if int(r) not in judged
    }


@dataclass(frozen=True)
class StoppingSignal:
    """The knee method's verdict on a gain curve (relevant found against judged)."""

    stop: bool
    judged: int
    relevant: int
    knee: int | None  # judgments at the knee
    slope_ratio: float | None
    needed_ratio: float
    min_effort: int
    rule: str


KNEE_RULE = (
    "knee method (Cormack and Grossman 2016): with s judged and rel(s) relevant found, the "
    "knee i maximises the distance of (i, rel(i)) from the line through (0, 0) and (s, rel(s)); "
    "stop once the slope ratio (rel(i)/i) / ((rel(s) - rel(i) + 1)/(s - i)) reaches "
    "156 - min(rel(s), 150) and at least min(150, half the candidates) are judged"
)


def knee_stop(gains, *, candidates: int) -> StoppingSignal:
    """Apply the knee stopping rule to ``gains`` (1 relevant / 0 not, in judging order).

    The published rule asks for 150 judgments at least; on pools smaller than 300 documents
    sasc asks for half the candidates instead (stated in ``KNEE_RULE``).
    """
    g = np.asarray(gains, dtype=float)
    s = len(g)
    found = np.concatenate([[0.0], np.cumsum(g)])  # found[i] = relevant among the first i
    rel_s = int(found[-1]) if s else 0
    needed = 156.0 - min(rel_s, 150)
    min_effort = int(min(150, candidates // 2))
    if s < 2 or rel_s == 0:
        return StoppingSignal(False, s, rel_s, None, None, needed, min_effort, KNEE_RULE)
    i = np.arange(1, s)  # a knee strictly inside the curve
    # Distance from the line y = (rel_s / s) x, up to a constant factor.
    distance = np.abs(rel_s * i - s * found[1:s]) / np.hypot(rel_s, s)
    knee = int(i[np.argmax(distance)])
    ratio = (found[knee] / knee) / ((rel_s - found[knee] + 1) / (s - knee))
    stop = bool(ratio >= needed and s >= min_effort)
    return StoppingSignal(stop, s, rel_s, knee, float(ratio), needed, min_effort, KNEE_RULE)


KNEE_FEWEST_JUDGED = 156


def knee_can_stop_within(budget: int) -> bool:
    """Return whether the knee rule (``knee_stop``) can say stop within ``budget`` judgments.

    With s judged and r found, the slope ratio is at most max(s - r, 1): precision 1 up to
    the knee and one relevant (the +1) after it, with the knee at r. The rule needs a ratio of
    156 - min(r, 150), so s - r >= 156 - r for r <= 150 (and s >= r + 6 above): it can never
    fire before 156 judgments, whatever the minimum effort, and it can at 156 (one relevant
    document found first, 155 non-relevant after it). A smaller budget makes it unreachable.
    """
    return budget >= KNEE_FEWEST_JUDGED


def estimated_prevalence(probabilities, candidates, judged_labels: dict[int, int]) -> float:
    """Relevant share of the candidates: the judged ones as judged, the others by the sum of
    their P(relevant) (the classifier's expected count)."""
    pool = _unjudged(candidates, list(judged_labels))
    total = len(pool) + len(judged_labels)
    if total == 0:
        return float("nan")
    expected = float(np.asarray(probabilities)[pool].sum()) if probabilities is not None else 0.0
    return (sum(judged_labels.values()) + expected) / total
