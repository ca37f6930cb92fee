"""Screening simulation: one reviewer judging documents in the order a CAL model asks for,
until every relevant document is found; pure: no Django.

This is the question a screening tool answers ("how many documents must a person read to
find x% of the relevant ones?"), not the finite-pool labelling of ``core.simulate_learning``.
The protocol is Cormack and Grossman's AutoTAR (2015), the strongest published CAL protocol
for a person judging in order:

- batches grow: 1 document, then B + ceil(B / 10) each time (``autotar_batches``); sasc's
  default keeps them at 1 (``Protocol.singles`` None): a retrain after every judgment, with
  one document queued ahead (measured in docs/active-learning.md, "Screening beside
  ASReview": fewer documents to 95% and 100% recall than AutoTAR's growth);
- every retrain adds a fresh random sample of 100 unjudged documents labelled non-relevant
  ("presumed non-relevant", ``core.active.presumed_nonrelevant``);
- within a batch the reviewer judges the highest-scored documents first;
- the model (sasc's default since the third round, ``Protocol.model`` "ensemble"): the mean
  rank of that logistic regression (C = ``core.active.ENSEMBLE_C``) and ASReview's default
  classifier (``core.active.svm_scores``), as the live loop picks
  (``core.active.train_screening``). ``Protocol(singles=0, model="lr",
  c=core.active.SCREENING_C, latent=0)`` is a live plan growing its batches (AutoTAR), which
  reads the words alone;
- the features (since the eighth round, ``Protocol.latent``): both halves read each
  document's TF-IDF words beside its coordinates on the collection's first 50 singular
  vectors (latent semantic analysis, ``core.features.latent_coordinates``), as the live
  index stores them;
- threads followed, measured and not adopted (the fifth round; ``Protocol(threads=True)``):
  when ``screen`` is given each document's thread (an email collection's), the unjudged
  messages of threads whose judged messages are mostly relevant are picked first.

``Protocol.lag`` is the live loop's "the reviewer never waits": ``lag`` batches are queued
while the current one is judged, so the batch judged next was picked by a model that had not
seen the last ``lag`` batches. 0: the reviewer waits for each model (ASReview's simulation);
1: one batch queued ahead (``ranking.learning_queue`` tops the queue up one batch ahead);
2: what the live judging page gives with batches of 1, because the page preloads the next
document while the current one is judged (docs/active-learning.md, "Third round").

Everything random takes a seed; a run is reproducible.
"""

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from core import active, features

RECALLS = (0.8, 0.9, 0.95, 1.0)


@dataclass(frozen=True)
class Protocol:
    """How the simulated review picks documents (see the module docstring)."""

    growing: bool = True  # AutoTAR's batches; False: one document per retrain throughout
    # Batches picked before the current one is judged (see the module docstring); 0: the
    # reviewer waits for every model.
    lag: int = 1
    presumed: bool = True  # AutoTAR's presumed non-relevant sample in every training set
    c: float = active.ENSEMBLE_C
    # Cosine similarity at which an unjudged document that near-duplicates a document just
    # judged relevant jumps the queue (0: off).
    neardup: float = 0.0
    # Weight the classes inversely to their counts in training (relevant documents up).
    balanced: bool = False
    # Documents judged one per retrain (past the priors) before the batches start to grow;
    # None: one per retrain throughout (sasc's default; 0 is AutoTAR as published).
    singles: int | None = None
    # "lr": logistic regression (C = ``c``); "svm": ASReview's ELAS u4 classifier (a linear
    # SVM, C = 0.11, non-relevant documents weighted down to a 1 : 9.8 ratio, judged
    # documents only); "ensemble": the two models' ranks fused by ``fusion``; "ensemble3"
    # (measured, not adopted): the two and a second SVM on ``svm_matrix``, fused alike.
    model: str = "ensemble"
    # "mean": the mean of the two ranks; "rrf": reciprocal rank fusion (Cormack, Clarke and
    # Buettcher 2009, k = 60), which favours a document either model puts near its top;
    # "min": the better of the ranks (``core.active.rank_fuse``).
    fusion: str = "mean"
    # Follow threads (measured in the fifth round, not adopted): the unjudged thread-mates
    # of relevant messages first, while a thread's judged messages are mostly relevant
    # (``core.active.threads_followed``); needs ``screen``'s ``groups`` (without them, or for
    # a model other than the ensemble, nothing changes).
    threads: bool = False
    # Latent topics both halves of the ensemble read beside the words (the live picker's
    # since the eighth round): each row's coordinates on the collection's first ``latent``
    # singular vectors (``core.features.latent_coordinates``; 0: the words alone), at
    # ``latent_weight`` (``core.active.Latent``). Read by every model here; the live loop
    # gives them to the ensemble alone (a plan retrained after every document), so a
    # simulation of any other live plan sets latent=0.
    latent: int = features.LATENT_DIMENSIONS
    latent_weight: float = active.LATENT_WEIGHT


def autotar_batches(first: int = 1, singles: int | None = 0) -> Iterator[int]:
    """Yield AutoTAR's batch sizes: ``first``, then B + ceil(B / 10) each time; with
    ``singles``, that many batches of 1 before (None: batches of 1 for ever)."""
    if singles is None:
        while True:
            yield 1
    for _ in range(singles):
        yield 1
    b = first
    while True:
        yield b
        b += math.ceil(b / 10)


def autotar_batch_at(judged: int, first: int = 1, singles: int | None = 0) -> int:
    """Return the size of the batch that the ``judged``-th document (0-based, seeds not
    counted) belongs to in ``autotar_batches(first, singles)``: the live loop's batch after
    ``judged`` judgments."""
    if judged < 0:
        raise ValueError(f"judged must be 0 or more, not {judged}")
    if singles is None or judged < singles:
        return 1
    judged -= singles
    done = 0
    for size in autotar_batches(first):
        done += size
        if judged < done:
            return size
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass
class Run:
    """One simulated review: the judging order (priors first) and the seconds each model
    took (train + score + pick)."""

    order: list[int]
    step_seconds: list[float] = field(default_factory=list)


def _model_scores(
    matrix,
    judged: list[int],
    labels: list[int],
    protocol: Protocol,
    seed: int,
    svm_matrix=None,
    groups=None,
    latent=None,
):
    """Scores of every row (higher: picked sooner); ``svm_matrix``: the SVM's own features
    (the same rows; default ``matrix``); ``groups``: each row's thread (-1: none);
    ``latent``: the rows' latent coordinates for ``protocol.latent`` (computed when None)."""
    svm_rows = matrix if svm_matrix is None else svm_matrix
    topics = None
    if protocol.latent:
        if latent is None:
            latent = features.latent_coordinates(matrix, protocol.latent)
        topics = active.Latent(latent, protocol.latent_weight)
    if protocol.model == "svm":
        return active.svm_scores(
            svm_rows, judged, labels, seed=seed, latent=topics if svm_rows is matrix else None
        )
    if protocol.model in ("ensemble", "ensemble3"):
        # The live picker itself (ranking.learning_step calls it with the defaults).
        first = None
        if protocol.threads and groups is not None:
            followed = active.threads_followed([int(groups[r]) for r in judged], labels)
            first = np.flatnonzero(np.isin(groups, list(followed))) if followed else None
        _model, scores = active.train_screening(
            matrix,
            judged,
            labels,
            range(matrix.shape[0]),
            seed=seed,
            c=protocol.c,
            svm_matrices=(matrix, svm_rows) if protocol.model == "ensemble3" else (svm_rows,),
            fusion=protocol.fusion,
            presumed=protocol.presumed,
            first=first,
            latent=topics,
        )
        return scores
    rows, y = list(judged), list(labels)
    if protocol.presumed:
        extra = active.presumed_nonrelevant(range(matrix.shape[0]), judged, seed=seed)
        rows, y = rows + extra, y + [0] * len(extra)
    if protocol.balanced:
        from sklearn.linear_model import LogisticRegression

        if len(set(y)) < 2:
            raise active.NotTrainable("one class")
        fitted = LogisticRegression(
            C=protocol.c, solver="liblinear", class_weight="balanced", random_state=seed
        ).fit(matrix[rows] if topics is None else topics.rows(matrix, rows), y)
        model = active.Model(fitted, np.asarray(rows), sum(y), len(y) - sum(y), topics)
        return model.probabilities(matrix)
    return active.train(matrix, rows, y, seed=seed, c=protocol.c, latent=topics).probabilities(
        matrix
    )


def screen(
    matrix,
    truth,
    priors,
    protocol: Protocol = Protocol(),
    *,
    seed: int = 0,
    svm_matrix=None,
    groups=None,
    latent=None,
) -> Run:
    """Simulate a review of every row of ``matrix`` against ``truth`` (0/1 per row), starting
    from the judged ``priors``, until every relevant row is found (or none is left).
    ``svm_matrix``: other features of the same rows for the SVM of ``model`` "svm" or
    "ensemble" (ASReview's, say); ``groups``: each row's thread, an integer (-1: in none),
    for ``Protocol.threads``; ``latent``: the rows' latent coordinates for
    ``Protocol.latent`` (computed once here when None; a bench running many reviews of one
    matrix passes them)."""
    truth = np.asarray(truth, dtype=int)
    if protocol.latent and latent is None:
        latent = features.latent_coordinates(matrix, protocol.latent)
    total = int(truth.sum())
    n = matrix.shape[0]
    order = [int(r) for r in priors]
    judged = np.zeros(n, dtype=bool)
    judged[order] = True
    found = int(truth[order].sum())
    run = Run(order)
    sizes = autotar_batches(singles=protocol.singles) if protocol.growing else iter(lambda: 1, None)
    queued: list[list[int]] = []  # batches picked and waiting, oldest first
    step = 0

    def pick():
        nonlocal step
        started = time.perf_counter()
        p = _model_scores(
            matrix, order, truth[order].tolist(), protocol, seed + step, svm_matrix, groups, latent
        )
        taken = judged.copy()
        for waiting in queued:
            taken[waiting] = True
        pool = np.flatnonzero(~taken)
        top = pool[np.argsort(-p[pool], kind="stable")[: next(sizes)]].tolist()
        run.step_seconds.append(time.perf_counter() - started)
        step += 1
        queued.append(top)

    if protocol.lag < 0:
        raise ValueError(f"lag must be 0 or more, not {protocol.lag}")
    while found < total and judged.sum() < n:
        # The batch to judge plus ``lag`` waiting: at the start the reviewer waits for the
        # first pick, then each pick is queued while the oldest batch is judged, so its
        # model has not seen the ``lag`` batches ahead of it.
        while len(queued) < protocol.lag + 1:
            pick()
        batch = queued.pop(0)
        if not batch and not any(queued):
            break
        while batch and found < total:
            row = batch.pop(0)
            if judged[row]:
                continue
            judged[row] = True
            order.append(row)
            if truth[row]:
                found += 1
                if protocol.neardup:
                    batch = _neardups_first(matrix, row, judged, batch, protocol.neardup)
    return run


def _neardups_first(matrix, row: int, judged: np.ndarray, queue: list[int], threshold: float):
    """Put unjudged documents whose cosine with ``row`` reaches ``threshold`` at the head of
    the queue (rows are L2-normalised, so the product is the cosine)."""
    sims = np.asarray((matrix @ matrix[row].T).todense()).ravel()
    near = [int(r) for r in np.flatnonzero(sims >= threshold) if not judged[r]]
    near.sort(key=lambda r: -sims[r])
    return near + [r for r in queue if r not in set(near)]


def documents_to_recall(order, truth, recalls=RECALLS) -> dict[float, int | None]:
    """Documents judged (priors included) when each recall level was first reached; None
    when the order never reaches it."""
    truth = np.asarray(truth, dtype=int)
    total = int(truth.sum())
    found = np.cumsum(truth[np.asarray(order, dtype=np.int64)])
    out = {}
    for level in recalls:
        need = math.ceil(level * total - 1e-9)
        hit = np.flatnonzero(found >= need)
        out[level] = int(hit[0]) + 1 if len(hit) else None
    return out


def wss(order, truth, level: float = 0.95) -> float | None:
    """Work saved over sampling at ``level`` recall: (N - judged) / N - (1 - level)."""
    n = len(truth)
    judged = documents_to_recall(order, truth, (level,))[level]
    return None if judged is None else (n - judged) / n - (1 - level)


def priors_for(truth, seed: int) -> list[int]:
    """One random relevant and one random non-relevant row (the screening tools' usual
    minimum prior knowledge), drawn with ``seed``."""
    truth = np.asarray(truth, dtype=int)
    rng = np.random.default_rng(seed)
    return [
        int(rng.choice(np.flatnonzero(truth == 1))),
        int(rng.choice(np.flatnonzero(truth == 0))),
    ]
