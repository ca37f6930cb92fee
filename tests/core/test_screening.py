"""The screening simulation: AutoTAR's batch schedule, the reviewer never waiting (the next
batch picked before the current one is judged), recall counts and WSS."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import normalize

from core import screening


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
        screening.Protocol(growing=False, lookahead=False, presumed=False),
        screening.Protocol(growing=False, lookahead=False, neardup=0.9),
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
    protocol = screening.Protocol(lookahead=True)
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
    fresh = screening.screen(matrix, truth, priors, screening.Protocol(lookahead=False), seed=0)
    assert fresh.order[3:5] == top(priors + first, 1, 2, set(priors + first))
    assert fresh.order[3:5] != second  # so the test tells the two apart


def test_recall_counts_include_the_priors_and_round_up():
    truth = np.array([1, 0, 1, 0, 1, 0, 0, 1, 0, 0])
    order = [0, 1, 3, 2, 5, 4, 7]
    # 4 relevant: 80% needs 4 (ceil 3.2), 100% needs 4 as well; 90% and 95% too.
    assert screening.documents_to_recall(order, truth) == {0.8: 7, 0.9: 7, 0.95: 7, 1.0: 7}
    assert screening.documents_to_recall(order[:5], truth)[1.0] is None
    assert screening.wss(order, truth) == pytest.approx((10 - 7) / 10 - 0.05)
