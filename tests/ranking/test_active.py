"""The active-learning core on a synthetic collection whose relevant rows share terms."""

import numpy as np
import pytest
from scipy import sparse

from ranking import active


@pytest.fixture
def collection():
    """2,000 rows over 500 terms; the 100 relevant rows use terms 0-19 often."""
    rng = np.random.default_rng(0)
    n, terms = 2000, 500
    relevant = np.zeros(n, dtype=int)
    relevant[rng.choice(n, 100, replace=False)] = 1
    rows, cols = [], []
    for i in range(n):
        picked = rng.choice(terms, 30, replace=False)
        if relevant[i]:
            picked = np.concatenate([picked[:20], rng.choice(20, 10, replace=False)])
        rows += [i] * len(picked)
        cols += picked.tolist()
    matrix = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, terms))
    return matrix, relevant


def seeds(relevant, n_rel=5, n_non=5):
    return [*np.flatnonzero(relevant)[:n_rel], *np.flatnonzero(relevant == 0)[:n_non]]


def run(strategy, matrix, relevant, *, batches=8, size=20, seed=1):
    """Judge batch after batch from the truth; return how many relevant were found."""
    judged = list(seeds(relevant))
    for b in range(batches):
        model = active.train(matrix, judged, relevant[judged], seed=seed)
        p = model.probabilities(matrix)
        judged += active.select(strategy, p, range(matrix.shape[0]), judged, size, seed=seed + b)
    return int(relevant[judged].sum()), judged


def test_cal_finds_more_relevant_documents_than_sal_and_spl(collection):
    matrix, relevant = collection
    found = {s: run(s, matrix, relevant)[0] for s in active.STRATEGIES}
    # 170 judgments (10 seeds, 8 batches of 20), prevalence 5%: measured CAL 100 (all of
    # them), SAL 56, SPL 18 (about 8 expected by chance beyond the 5 relevant seeds).
    assert found["cal"] > found["sal"] > found["spl"]
    assert found["cal"] >= 80


def test_selection_is_reproducible_and_never_rejudges(collection):
    matrix, relevant = collection
    for strategy in active.STRATEGIES:
        first = run(strategy, matrix, relevant, batches=3)[1]
        assert run(strategy, matrix, relevant, batches=3)[1] == first
        assert len(first) == len(set(first)) == 10 + 3 * 20


def test_sal_picks_the_most_uncertain_and_cal_the_most_likely():
    p = np.array([0.9, 0.51, 0.2, 0.49, 0.95, 0.5])
    assert active.select("cal", p, range(6), judged=[4], size=2) == [0, 1]
    assert active.select("sal", p, range(6), judged=[], size=3) == [5, 1, 3]
    assert active.select("spl", p, range(6), judged=[0, 1, 2, 3], size=5) == [4, 5]
    assert active.select("cal", p, [], judged=[], size=3) == []
    with pytest.raises(ValueError, match="unknown strategy 'best'"):
        active.select("best", p, range(6), judged=[], size=1)


def test_sensitivity_uncertainty_looks_only_at_likely_relevant_documents():
    p_rel = np.array([0.9, 0.8, 0.1, 0.7, 0.95])
    p_sen = np.array([0.9, 0.52, 0.5, 0.45, 0.5])
    got = active.select_sensitivity_uncertain(p_rel, p_sen, range(5), judged=[4], size=2)
    assert got == [1, 3]  # row 2 is as uncertain but unlikely relevant; row 4 is judged


def test_training_needs_both_classes_and_matching_labels(collection):
    matrix, relevant = collection
    with pytest.raises(active.NotTrainable, match="0 relevant and 3 non-relevant"):
        active.train(matrix, [0, 1, 2], [0, 0, 0])
    with pytest.raises(ValueError, match="3 rows but 2 labels"):
        active.train(matrix, [0, 1, 2], [0, 1])


def test_graded_relevance_collapses_and_hybrid_labels_cover_the_unjudged():
    assert active.collapse([0, 1, 2, 0]).tolist() == [0, 1, 1, 0]
    p = np.array([0.2, 0.7, 0.5])
    assert active.hybrid_labels(p, range(3), judged=[1]) == {0: (0, 0.2), 2: (1, 0.5)}
