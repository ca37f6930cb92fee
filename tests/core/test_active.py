"""The active-learning core on a synthetic collection whose relevant rows share terms."""

import numpy as np
import pytest
from scipy import sparse

from core import active


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


def test_knee_method_stops_once_the_gain_curve_flattens():
    # 200 judged: 40 relevant in the first 60, then 1 in the next 140.
    gains = [1 if i % 3 != 2 else 0 for i in range(60)] + [0] * 139 + [1]
    signal = active.knee_stop(gains, candidates=1000)
    assert signal.knee == 59 or abs(signal.knee - 60) <= 2
    # slope before (40/60) over slope after ((1 + 1)/140): about 47 >= 156 - 41
    assert signal.slope_ratio == pytest.approx((40 / 60) / (2 / 140), rel=0.05)
    assert signal.needed_ratio == 156 - 41
    assert not signal.stop  # 47 < 115: keep judging
    steep = [1] * 20 + [0] * 280
    signal = active.knee_stop(steep, candidates=1000)
    assert signal.knee == 20 and signal.stop
    # Too few judged (fewer than half of a small pool) never stops.
    assert not active.knee_stop([1] * 5 + [0] * 40, candidates=200).stop
    assert active.knee_stop([], candidates=10).knee is None


def test_presumed_nonrelevant_keeps_machine_labels_from_flooding_positive(collection):
    matrix, relevant = collection
    judged = seeds(relevant)  # balanced: 5 relevant, 5 not; prevalence really 5%
    plain = active.train(matrix, judged, relevant[judged])
    labeller = active.train_labeller(matrix, judged, relevant[judged], range(matrix.shape[0]))
    rest = np.setdiff1d(np.arange(matrix.shape[0]), judged)
    plain_positive = int((plain.probabilities(matrix, rest) >= 0.5).sum())
    labelled_positive = int((labeller.probabilities(matrix, rest) >= 0.5).sum())
    true_positive = int(relevant[rest].sum())
    assert labelled_positive < plain_positive
    assert abs(labelled_positive - true_positive) < abs(plain_positive - true_positive)
    assert len(active.presumed_nonrelevant(range(2000), judged)) == 100


def test_probabilities_are_what_scikit_learn_predicts(collection):
    matrix, relevant = collection
    model = active.train(matrix.astype(np.float32), seeds(relevant), relevant[seeds(relevant)])
    ours = model.probabilities(matrix.astype(np.float32))
    theirs = model.estimator.predict_proba(matrix)[:, 1]
    assert np.allclose(ours, theirs, atol=1e-6)


def test_the_screening_picker_orders_by_mean_rank_and_keeps_the_probabilities(collection):
    matrix, relevant = collection
    matrix = matrix.astype(np.float32)
    judged = seeds(relevant, 3, 7)
    candidates = range(0, matrix.shape[0], 2)  # even rows only
    model, scores = active.train_screening(
        matrix, judged, relevant[judged], candidates, seed=4, c=3.0
    )
    p = active.train_labeller(
        matrix, judged, relevant[judged], candidates, seed=4, c=3.0, dual=True
    ).probabilities(matrix)
    assert np.allclose(model.probabilities(matrix), p)
    svm = active.svm_scores(matrix, judged, relevant[judged])
    pool = np.arange(0, matrix.shape[0], 2)
    # The candidates come in the order of the mean of the two ranks (among candidates)...
    by_rank = pool[np.argsort(active._ranks(p[pool]) + active._ranks(svm[pool]), kind="stable")]
    assert np.argsort(-scores[pool], kind="stable")[:50].tolist() == [
        int(np.flatnonzero(pool == r)[0]) for r in by_rank[:50]
    ]
    assert by_rank[:50].tolist() != pool[np.argsort(-p[pool], kind="stable")][:50].tolist()
    # ...carrying the logistic regression's probabilities: the same values, so the same
    # count above 0.5; rows outside the candidates keep their own.
    assert np.allclose(np.sort(scores[pool]), np.sort(p[pool]))
    assert np.allclose(scores[1::2], p[1::2])
    # CAL on these scores picks the fused order's best candidates.
    picked = active.select("cal", scores, candidates, judged, 10)
    assert picked == [r for r in by_rank.tolist() if r not in set(judged)][:10]
    with pytest.raises(active.NotTrainable):
        active.svm_scores(matrix, [0, 2], [0, 0])


def test_the_screening_picker_trains_on_relevant_judgments_alone_as_the_lr_did(collection):
    # The presumed non-relevant sample gives the logistic regression a second class; the
    # SVM (judged documents only) has none, so the picker falls back to the regression
    # instead of refusing to train, as the picker before the ensemble did.
    matrix, relevant = collection
    judged = np.flatnonzero(relevant)[:4]
    model, scores = active.train_screening(matrix, judged, [1, 1, 1, 1], range(2000), seed=2)
    assert np.allclose(scores, model.probabilities(matrix))
    with pytest.raises(active.NotTrainable):
        active.train_screening(matrix, judged, [0, 0, 0, 0], range(2000))


def test_threads_are_followed_while_their_judged_messages_are_mostly_relevant():
    # thread "a": 2 relevant, 1 not; "b": 1 and 1 (no longer mostly relevant); "c": one
    # relevant; no thread (None, "" or -1) is never followed.
    threads = ["a", "a", "a", "b", "b", "c", None, "", -1, 7, 7]
    labels = [1, 1, 0, 1, 0, 1, 1, 1, 1, 0, 0]
    assert active.threads_followed(threads, labels) == {"a", "c"}
    assert active.threads_followed([3, 3, 4], [1, 1, 0]) == {3}
    assert active.threads_followed([], []) == set()
    with pytest.raises(ValueError):
        active.threads_followed(["a"], [1, 0])


def test_the_screening_picker_reads_first_rows_ahead_in_its_own_order(collection):
    matrix, relevant = collection
    judged = seeds(relevant, 3, 7)
    candidates = range(matrix.shape[0])
    _model, plain = active.train_screening(matrix, judged, relevant[judged], candidates, seed=4)
    order = [r for r in np.argsort(-plain, kind="stable").tolist() if r not in set(judged)]
    # Three rows the picker puts low (and one judged row, which is never picked).
    first = [order[-1], order[-500], order[-900], judged[0]]
    model, scores = active.train_screening(
        matrix, judged, relevant[judged], candidates, seed=4, first=first
    )
    picked = active.select("cal", scores, candidates, judged, 6)
    assert picked[:3] == [order[-900], order[-500], order[-1]]  # ahead, in the fused order
    assert picked[3:] == order[:3]  # then the picker's own order, unchanged
    # Still the logistic regression's probabilities, only placed differently.
    assert np.allclose(np.sort(scores), np.sort(model.probabilities(matrix)))
    # With only relevant documents judged (no SVM) the rows still come first.
    only, low = np.flatnonzero(relevant)[:4], int(np.flatnonzero(relevant == 0)[-1])
    _m, alone = active.train_screening(matrix, only, [1] * 4, candidates, seed=2, first=[low])
    assert active.select("cal", alone, candidates, only, 1) == [low]


@pytest.mark.parametrize("values", [None, 1000, 3])
def test_the_fast_descending_order_is_the_stable_sort_ties_by_row(values):
    rng = np.random.default_rng(5)
    x = rng.random(20_000)
    if values:  # many ties
        x = rng.integers(0, values, 20_000).astype(float)
    assert active._descending(x).tolist() == np.argsort(-x, kind="stable").tolist()


def test_latent_rows_are_the_words_beside_the_weighted_topics_and_score_as_trained():
    import scipy.sparse as sp

    rng = np.random.default_rng(5)
    x = sp.random(30, 12, density=0.3, format="csr", dtype=np.float32, random_state=5)
    x = sp.csr_matrix(x / np.maximum(sp.linalg.norm(x, axis=1), 1e-9)[:, None], dtype=np.float32)
    z = rng.normal(size=(30, 3)).astype(np.float32)
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    latent = active.Latent(z, 0.5)
    rows = [3, 0, 7, 7, 29]
    built = latent.rows(x, rows).toarray()
    expected = np.hstack([x[rows].toarray(), 0.5 * z[rows]]) / np.sqrt(1.25)
    assert np.allclose(built, expected, atol=1e-6)
    assert np.allclose(np.linalg.norm(built[:4], axis=1)[x[rows[:4]].getnnz(axis=1) > 0], 1.0)
    # The trained model's probabilities are its own decision function on those rows.
    labels = (z[:, 0] > 0).astype(int)
    model = active.train(x, range(30), labels, c=3.0, latent=latent)
    assert model.latent is latent
    whole = latent.rows(x, np.arange(30))
    assert np.allclose(
        model.probabilities(x), model.estimator.predict_proba(whole)[:, 1], atol=1e-6
    )
    # Without the topics the same labels (a direction of z only) are learnt worse, by the
    # regression and by the SVM (its margins: relevant rows above the others).
    plain = active.train(x, range(30), labels, c=3.0)
    hits = lambda p: int(((p >= 0.5).astype(int) == labels).sum())  # noqa: E731
    assert hits(model.probabilities(x)) > hits(plain.probabilities(x))

    def separation(margins):
        return margins[labels == 1].min() - margins[labels == 0].max()

    with_topics = active.svm_scores(x, range(30), labels, latent=latent)
    assert separation(with_topics) > separation(active.svm_scores(x, range(30), labels))


def test_the_picker_builds_its_latent_rows_once_and_trains_both_models_as_apart(monkeypatch):
    """train_screening builds the regression's rows with their topics once and gives the SVM
    their first rows (the judged ones): the fused scores are those of the two models trained
    on their own."""
    import scipy.sparse as sp

    rng = np.random.default_rng(6)
    x = sp.random(60, 15, density=0.3, format="csr", dtype=np.float32, random_state=6)
    z = rng.normal(size=(60, 4)).astype(np.float32)
    latent = active.Latent(z, 0.5)
    rows = [7, 3, 40, 12, 55, 21, 30, 9]
    labels = [1, 0, 1, 0, 0, 1, 0, 0]
    built = []
    original = active.Latent.rows
    monkeypatch.setattr(
        active.Latent, "rows", lambda self, m, r: built.append(len(r)) or original(self, m, r)
    )
    model, scores = active.train_screening(x, rows, labels, np.arange(60), latent=latent)
    assert len(built) == 1 and built[0] == len(model.trained_rows) > len(rows)

    apart = active.train_labeller(x, rows, labels, np.arange(60), c=3.0, latent=latent, dual=True)
    svm = active.svm_scores(x, rows, labels, latent=latent)
    assert np.allclose(model.probabilities(x), apart.probabilities(x))
    fused = active.rank_fuse(apart.probabilities(x), svm)
    assert active._descending(scores).tolist() == active._descending(fused).tolist()
