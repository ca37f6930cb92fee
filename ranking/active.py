"""The active-learning core (Rahman et al., DOMAIN.md section 4), pure: no Django.

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


class NotTrainable(ValueError):
    """The judged rows hold a single class: a classifier cannot be trained yet."""


@dataclass
class Model:
    """A trained relevance (or sensitivity) classifier and what it was trained on."""

    estimator: object
    trained_rows: np.ndarray  # row indices of the judgments it saw (the high-water mark)
    positives: int
    negatives: int

    def probabilities(self, matrix, rows=None) -> np.ndarray:
        """P(positive) of ``rows`` of ``matrix`` (every row when None)."""
        x = matrix if rows is None else matrix[rows]
        return self.estimator.predict_proba(x)[:, 1]


def collapse(grades) -> np.ndarray:
    """Graded relevance to the binary training label: relevant = grade 1 or 2."""
    return (np.asarray(grades) >= 1).astype(int)


def train(matrix, rows, labels, *, seed: int = 0, c: float = 1.0) -> Model:
    """Fit logistic regression on ``matrix[rows]`` with binary ``labels``."""
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
    estimator = LogisticRegression(C=c, solver="liblinear", random_state=seed)
    estimator.fit(matrix[rows], labels)
    return Model(estimator, rows, positives, negatives)


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
    judged = set(int(r) for r in judged)
    pool = np.array(sorted(int(r) for r in candidates if int(r) not in judged), dtype=np.int64)
    if size <= 0 or len(pool) == 0:
        return []
    if strategy == "spl":
        rng = np.random.default_rng(seed)
        return sorted(rng.choice(pool, size=min(size, len(pool)), replace=False).tolist())
    p = np.asarray(probabilities)[pool]
    key = -p if strategy == "cal" else np.abs(p - 0.5)
    order = np.lexsort((pool, key))  # by key, then row number
    return pool[order[:size]].tolist()


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
    judged = set(int(r) for r in judged)
    pool = np.array(
        sorted(
            int(r) for r in candidates if int(r) not in judged and p_relevant[int(r)] >= relevant_at
        ),
        dtype=np.int64,
    )
    if size <= 0 or len(pool) == 0:
        return []
    order = np.lexsort((pool, -np.asarray(p_relevant)[pool], np.abs(p_sensitive[pool] - 0.5)))
    return pool[order[:size]].tolist()


def hybrid_labels(probabilities: np.ndarray, candidates, judged) -> dict[int, tuple[int, float]]:
    """Machine labels for the unjudged candidates: ``{row: (0|1, P(relevant))}``."""
    judged = set(int(r) for r in judged)
    return {
        int(r): (int(probabilities[int(r)] >= 0.5), float(probabilities[int(r)]))
        for r in candidates
        if int(r) not in judged
    }
