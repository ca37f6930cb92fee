"""The screening simulation: AutoTAR's batch schedule, the reviewer never waiting (the next
batch picked before the current one is judged), recall counts and WSS."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import normalize

from core import active, features, screening


def test_autotar_batches_grow_by_a_tenth_rounded_up():
    sizes = screening.autotar_batches()
    assert [next(sizes) for _ in range(14)] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17]


def test_the_batch_at_a_judgment_count_follows_the_schedule():
    # Batches 1, 2, 3, 4 cover judgments 0, 1-2, 3-5, 6-9.
    assert [screening.autotar_batch_at(j) for j in range(11)] == [1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5]
    assert screening.autotar_batch_at(0, first=10) == 10
    assert screening.autotar_batch_at(10, first=10) == 11
    with pytest.raises(ValueError, match="judged must be 0 or more"):
        screening.autotar_batch_at(-1)


def test_singles_come_one_at_a_time_before_the_batches_grow_and_none_means_for_ever():
    assert [screening.autotar_batch_at(j, singles=3) for j in range(8)] == [1, 1, 1, 1, 2, 2, 3, 3]
    assert {screening.autotar_batch_at(j, first=5, singles=None) for j in range(5000)} == {1}
    sizes = screening.autotar_batches(singles=None)
    assert [next(sizes) for _ in range(50)] == [1] * 50
    # sasc's default review retrains after every judged document; AutoTAR is singles=0.
    assert screening.Protocol().singles is None


def _collection(n=400, relevant=20, seed=0):
    """Rows with random background terms; relevant rows also carry a few topic terms."""
    rng = np.random.default_rng(seed)
    rows, cols = [], []
    truth = np.zeros(n, dtype=int)
    truth[rng.choice(n, relevant, replace=False)] = 1
    for r in range(n):
        terms = rng.choice(np.arange(10, 300), 12, replace=False).tolist()
        if truth[r]:
            terms += rng.choice(10, 4, replace=False).tolist()
        rows += [r] * len(terms)
        cols += terms
    matrix = sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(n, 300))
    return normalize(matrix).astype(np.float32), truth


@pytest.mark.parametrize(
    "protocol",
    [
        screening.Protocol(),
        screening.Protocol(singles=0),
        screening.Protocol(singles=5, model="svm"),
        screening.Protocol(growing=False, model="ensemble"),
        screening.Protocol(growing=False, model="ensemble", fusion="rrf", c=3.0, lag=2),
        screening.Protocol(growing=False, model="ensemble3"),
        screening.Protocol(growing=False, lag=0),
        screening.Protocol(growing=False, lag=0, presumed=False),
        screening.Protocol(growing=False, lag=0, neardup=0.9),
    ],
)
def test_a_review_finds_every_relevant_document_far_sooner_than_reading_in_order(protocol):
    matrix, truth = _collection()
    priors = screening.priors_for(truth, 1)
    run = screening.screen(matrix, truth, priors, protocol, seed=1)
    assert run.order[:2] == priors
    assert len(set(run.order)) == len(run.order)  # nobody judges a document twice
    assert truth[run.order].sum() == truth.sum()  # stops at the last relevant one...
    assert truth[run.order[-1]] == 1
    reach = screening.documents_to_recall(run.order, truth)
    # ...which a reader in random order reaches after about 95% of the 400 documents.
    assert reach[1.0] < 150, reach
    assert reach[0.8] <= reach[0.9] <= reach[0.95] <= reach[1.0]
    assert screening.wss(run.order, truth) > 0.5


def test_the_reviewer_never_waits_so_each_batch_was_picked_before_the_last_one_was_judged():
    matrix, truth = _collection(seed=2)
    priors = screening.priors_for(truth, 0)
    protocol = screening.Protocol(lag=1, singles=0)
    run = screening.screen(matrix, truth, priors, protocol, seed=0)

    def top(known, seed, size, taken):
        p = screening._model_scores(matrix, known, truth[known].tolist(), protocol, seed)
        pool = [r for r in np.argsort(-p, kind="stable").tolist() if r not in taken]
        return pool[:size]

    # Batch 1 (1 document) and batch 2 (2 documents) are both picked from the priors alone,
    # before anything is judged; batch 3 (3 documents) while batch 2 is judged, by a model
    # that has seen batch 1 but not batch 2.
    first = top(priors, 0, 1, set(priors))
    second = top(priors, 1, 2, set(priors + first))
    third = top(priors + first, 2, 3, set(priors + first + second))
    assert run.order[2:8] == first + second + third
    fresh = screening.screen(matrix, truth, priors, screening.Protocol(lag=0, singles=0), seed=0)
    assert fresh.order[3:5] == top(priors + first, 1, 2, set(priors + first))
    assert fresh.order[3:5] != second  # so the test tells the two apart


def _top_pick(matrix, truth, protocol):
    """The document a model trained on ``known`` (step ``seed``) picks first, ``taken``
    excluded: what the simulation must have queued."""

    def top(known, seed, taken):
        p = screening._model_scores(matrix, known, truth[known].tolist(), protocol, seed)
        return next(r for r in np.argsort(-p, kind="stable").tolist() if r not in taken)

    return top


def test_by_default_each_document_was_picked_by_the_model_of_all_judgments_but_the_last():
    # Lag 1: the document judged k-th was queued while the (k-1)-th was judged, by the model
    # trained on everything before that one; the annotator never waits for a retrain.
    matrix, truth = _collection(seed=3)
    priors = screening.priors_for(truth, 0)
    protocol = screening.Protocol()
    run = screening.screen(matrix, truth, priors, protocol, seed=0)
    order = run.order
    assert len(run.step_seconds) == len(order) - 1  # one model per judged document (+1)

    # Steps 0 and 1 both see the priors alone (nothing judged yet); step s >= 2 has seen
    # every document but the one being judged while it runs.
    top = _top_pick(matrix, truth, protocol)
    assert order[2] == top(priors, 0, set(priors))
    assert order[3] == top(priors, 1, set(order[:3]))
    for k in range(4, len(order)):
        assert order[k] == top(order[: k - 1], k - 2, set(order[:k])), k


def test_at_lag_2_each_document_was_picked_by_the_model_of_all_judgments_but_the_last_two():
    # The live judging page preloads the next document while one is judged, so the queue
    # holds two documents beyond the one being judged: the document judged k-th was picked
    # while the (k-2)-th was judged, by the model trained on everything before that one.
    matrix, truth = _collection(seed=3)
    priors = screening.priors_for(truth, 0)
    protocol = screening.Protocol(lag=2)
    run = screening.screen(matrix, truth, priors, protocol, seed=0)
    order = run.order
    assert len(run.step_seconds) >= len(order) - 2  # one model per judged document (+2)

    # Steps 0, 1 and 2 all see the priors alone (the reviewer waits for the first only).
    top = _top_pick(matrix, truth, protocol)
    assert order[2] == top(priors, 0, set(priors))
    assert order[3] == top(priors, 1, set(order[:3]))
    for k in range(4, len(order)):
        assert order[k] == top(order[: k - 2], k - 2, set(order[:k])), k
    lag1 = screening.screen(matrix, truth, priors, screening.Protocol(), seed=0).order
    assert lag1 != order  # so the test tells lag 1 and lag 2 apart
    with pytest.raises(ValueError, match="lag must be 0 or more"):
        screening.screen(matrix, truth, priors, screening.Protocol(lag=-1))


def test_the_default_picks_as_the_live_loop_by_the_mean_rank_of_the_two_models():
    matrix, truth = _collection(seed=4)
    judged = [*np.flatnonzero(truth)[:3].tolist(), *np.flatnonzero(truth == 0)[:20].tolist()]
    labels = truth[judged].tolist()
    protocol = screening.Protocol()
    assert (protocol.model, protocol.c, protocol.lag) == ("ensemble", active.ENSEMBLE_C, 1)
    assert (protocol.latent, protocol.latent_weight) == (
        features.LATENT_DIMENSIONS,
        active.LATENT_WEIGHT,
    )
    simulated = screening._model_scores(matrix, judged, labels, protocol, 7)
    # The live loop: the index's latent topics (ranking.services builds them with the
    # TF-IDF matrix, features.with_latent) read beside the words.
    index = features.with_latent(features.FeatureMatrix(matrix, [], []))
    _model, live = active.train_screening(
        matrix,
        judged,
        labels,
        range(matrix.shape[0]),
        seed=7,
        c=protocol.c,
        latent=active.Latent(index.latent),
    )
    top = np.argsort(-simulated, kind="stable")[:40].tolist()
    assert top == np.argsort(-live, kind="stable")[:40].tolist()
    lr = screening._model_scores(matrix, judged, labels, screening.Protocol(model="lr"), 7)
    assert top != np.argsort(-lr, kind="stable")[:40].tolist()  # the fusion is seen
    words = screening._model_scores(matrix, judged, labels, screening.Protocol(latent=0), 7)
    assert top != np.argsort(-words, kind="stable")[:40].tolist()  # so are the latent topics


def test_rank_fusion_puts_first_what_both_models_rank_high_or_either_ranks_first():
    a = np.array([0.9, 0.8, 0.1, 0.5])
    b = np.array([0.1, 0.7, 0.9, 0.6])
    # ranks: a 0 1 3 2, b 3 1 0 2
    assert np.argmax(active.rank_fuse(a, b, fusion="mean")) == 1  # 1 + 1 beats 0 + 3 and 3 + 0
    rrf = active.rank_fuse(a, b, fusion="rrf")
    assert rrf[1] > rrf[3] and rrf[0] == pytest.approx(rrf[2])
    # "min": what either model ranks first comes first (0 and 2 tie on their best rank, 0,
    # and on the sum of their ranks, 3: row order), then the best rank of 1 (1 + 1 = 2).
    best = active.rank_fuse(a, b, fusion="min")
    assert np.argsort(-best, kind="stable").tolist() == [0, 2, 1, 3]
    with pytest.raises(ValueError, match="unknown fusion"):
        active.rank_fuse(a, b, fusion="max")


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_retraining_after_every_document_finds_all_sooner_than_autotars_growth(seed):
    # 20 relevant of 400: the default finds them all within 24 documents on each of these
    # collections; AutoTAR's growing batches (the default before) need 25 to 32.
    matrix, truth = _collection(relevant=20, seed=seed)
    priors = screening.priors_for(truth, 1)
    ours = screening.screen(matrix, truth, priors, screening.Protocol(), seed=1)
    autotar = screening.screen(
        matrix,
        truth,
        priors,
        screening.Protocol(singles=0, model="lr", c=active.SCREENING_C, latent=0),
        seed=1,
    )
    reach = screening.documents_to_recall(ours.order, truth)[1.0]
    assert reach <= 24 < screening.documents_to_recall(autotar.order, truth)[1.0]


def test_recall_counts_include_the_priors_and_round_up():
    truth = np.array([1, 0, 1, 0, 1, 0, 0, 1, 0, 0])
    order = [0, 1, 3, 2, 5, 4, 7]
    # 4 relevant: 80% needs 4 (ceil 3.2), 100% needs 4 as well; 90% and 95% too.
    assert screening.documents_to_recall(order, truth) == {0.8: 7, 0.9: 7, 0.95: 7, 1.0: 7}
    assert screening.documents_to_recall(order[:5], truth)[1.0] is None
    assert screening.wss(order, truth) == pytest.approx((10 - 7) / 10 - 0.05)


def test_with_only_relevant_documents_judged_the_ensemble_picks_by_the_regression_as_live():
    # ASReview's SVM has one class then; the regression has the presumed non-relevant sample.
    matrix, truth = _collection(seed=3)
    relevant = [int(r) for r in np.flatnonzero(truth == 1)[:2]]
    run = screening.screen(matrix, truth, relevant, screening.Protocol(), seed=0)
    assert set(np.flatnonzero(truth == 1)) <= set(run.order)
    first = screening._model_scores(
        matrix, relevant, [1, 1], screening.Protocol(model="lr", c=screening.Protocol().c), 0
    )
    pool = [r for r in np.argsort(-first, kind="stable") if r not in relevant]
    assert run.order[2] == pool[0]


def test_a_review_following_threads_reads_a_relevant_messages_thread_mates_next():
    # Thread 0: the relevant prior and three relevant rows the model ranks low (no topic
    # terms); thread 1: the non-relevant prior and two other rows; every other row alone.
    matrix, truth = _collection(seed=6)
    priors = screening.priors_for(truth, 2)
    quiet = [r for r in np.flatnonzero(truth == 0).tolist() if r not in priors][:5]
    truth = truth.copy()
    truth[quiet[:3]] = 1  # relevant, but nothing in their words says so
    groups = np.arange(len(truth)) + 10
    groups[[priors[0], *quiet[:3]]] = 0
    groups[[priors[1], *quiet[3:5]]] = 1
    plain = screening.screen(matrix, truth, priors, screening.Protocol(), seed=2, groups=groups)
    assert set(plain.order[2:6]) != set(quiet[:3])  # not the default (measured, not adopted)
    follow = screening.Protocol(threads=True)
    run = screening.screen(matrix, truth, priors, follow, seed=2, groups=groups)
    # The priors' model already follows thread 0: its three mates are read first.
    assert set(run.order[2:5]) == set(quiet[:3]), run.order[:8]
    assert not set(quiet[3:5]) & set(run.order[2:8])  # the non-relevant prior's thread: not
    reach = screening.documents_to_recall(run.order, truth)
    assert reach[1.0] < screening.documents_to_recall(plain.order, truth)[1.0]


def test_a_thread_stops_jumping_the_queue_once_its_judged_messages_are_not_mostly_relevant():
    matrix, truth = _collection(seed=7)
    relevant = np.flatnonzero(truth).tolist()
    others = np.flatnonzero(truth == 0).tolist()
    groups = np.arange(len(truth)) + 10
    groups[[relevant[0], others[0], *others[5:9]]] = 0
    protocol = screening.Protocol(threads=True)
    judged = [relevant[0], others[1]]
    first = screening._model_scores(matrix, judged, [1, 0], protocol, 3, groups=groups)
    top = set(np.argsort(-first, kind="stable")[:6].tolist()) - set(judged)
    assert {others[0], *others[5:9]} <= top  # one relevant of one judged: followed
    judged = [relevant[0], others[1], others[0]]
    then = screening._model_scores(matrix, judged, [1, 0, 0], protocol, 3, groups=groups)
    top = set(np.argsort(-then, kind="stable")[:5].tolist())
    assert not set(others[5:9]) & top  # one relevant, one not: the thread is left
