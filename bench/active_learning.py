"""One active-learning iteration against its floor, in the same run.

1. Synthetic: a 500,000 x 200,000 sparse matrix shaped like TF-IDF (120 non-zeros per row,
   skewed term frequencies, rows L2-normalised, float32), 1,000 judged rows. The iteration
   is ``core.active.iterate`` (train the labeller, P(relevant) of every row, pick the
   next batch of 100 among the unjudged, queued rows excluded). The floor is a bare
   scikit-learn ``LogisticRegression.fit`` on the judged rows plus ``predict_proba`` on the
   matrix already in memory.
2. The demo collection (SpamAssassin ham, about 4,100 messages): the engine's whole step
   (``ranking.learning_step.learning_step``: read the judgments, train both classifiers, score,
   store the version, queue the next batch; then write the machine labels) after every
   batch of 10 judgments, against the same floor on the collection's matrix; then the
   plan's arrays on disk (the latest versions' only) against every version's.

    .venv/bin/python bench/active_learning.py [--rows 500000] [--repeat 5] [--skip-demo]

3. The screening picker of a plan retrained after every judged document, before issue 36's
   third round, since it, and since its eighth (latent topics beside the words), on the
   synthetic matrix (``core.active.train_screening``), and the latent topics' build.
"""

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from _setup import demo_collection


def synthetic(rows: int, terms: int = 200_000, per_row: int = 120, seed: int = 0):
    import scipy.sparse as sp
    from sklearn.preprocessing import normalize

    rng = np.random.default_rng(seed)
    nnz = rows * per_row
    # Term ids skewed towards the low ones, like word frequencies.
    indices = np.minimum((terms * rng.random(nnz) ** 3).astype(np.int32), terms - 1)
    relevant = rng.random(rows) < 0.01
    # Relevant rows use a handful of topic terms in about a quarter of their slots.
    topic = rng.integers(0, terms, 20).astype(np.int32)
    for r in np.flatnonzero(relevant):
        slots = rng.choice(per_row, per_row // 4, replace=False)
        indices[r * per_row + slots] = rng.choice(topic, len(slots))
    data = rng.random(nnz, dtype=np.float32)
    indptr = np.arange(0, nnz + 1, per_row, dtype=np.int64)
    matrix = sp.csr_matrix((data, indices, indptr), shape=(rows, terms))
    return normalize(matrix, copy=False).astype(np.float32), relevant.astype(int)


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def floor(matrix, judged, labels):
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=30.0, solver="liblinear").fit(matrix[judged], labels)
    return model.predict_proba(matrix)[:, 1]


def report(label: str, times: list[float], base: list[float]) -> None:
    t, b = statistics.median(times), statistics.median(base)
    print(
        f"{label:<44} median {t * 1000:7.0f} ms (min {min(times) * 1000:.0f})   "
        f"floor {b * 1000:6.0f} ms   ratio {t / b:.2f}x"
    )


def bench_synthetic(rows: int, repeat: int) -> None:
    from core import active

    started = time.perf_counter()
    matrix, relevant = synthetic(rows)
    print(
        f"synthetic matrix {matrix.shape[0]:,} x {matrix.shape[1]:,}, {matrix.nnz:,} non-zeros, "
        f"{relevant.sum():,} relevant, built in {time.perf_counter() - started:.1f} s"
    )
    rng = np.random.default_rng(1)
    judged = np.concatenate(
        [rng.choice(np.flatnonzero(relevant), 100, replace=False), rng.choice(rows, 900)]
    )
    judged = np.unique(judged)
    labels = relevant[judged]
    queued = rng.choice(np.setdiff1d(np.arange(rows), judged), 100, replace=False)
    candidates = range(rows)
    base = timed(lambda: floor(matrix, judged, labels), repeat)
    for strategy in ("cal", "sal", "spl"):
        times = timed(
            lambda s=strategy: active.iterate(
                matrix, judged, labels, candidates, s, 100, exclude=queued
            ),
            repeat,
        )
        report(f"iteration at {rows:,} rows, {strategy}", times, base)

    def engine_iteration():
        # What the engine's worker does per version: the selection classifier and the
        # labeller (presumed non-relevant sample), both rows' scores, then the batch.
        model = active.train(matrix, judged, labels)
        labeller = active.train_labeller(matrix, judged, labels, candidates)
        p = model.probabilities(matrix)
        labeller.probabilities(matrix)
        taken = np.concatenate([judged, queued])
        active.select("cal", p, candidates, taken, 100)

    report(f"engine iteration at {rows:,} rows (2 models)", timed(engine_iteration, repeat), base)

    # The screening picker (a plan retrained after every judged document): AutoTAR's
    # logistic regression before issue 36's third round, its mean rank with ASReview's SVM
    # now (docs/active-learning.md, "Third round").
    def picker_before():
        model = active.train_labeller(matrix, judged, labels, candidates, c=active.SCREENING_C)
        model.probabilities(matrix)

    def picker_third():
        active.train_screening(matrix, judged, labels, candidates, c=active.ENSEMBLE_C)

    # Since the eighth round both halves read the index's latent topics beside the words:
    # built once per index version (timed here as the index build does it), then read.
    from core import features

    started = time.perf_counter()
    latent = active.Latent(features.latent_coordinates(matrix))
    print(
        f"latent topics of {rows:,} rows ({latent.coordinates.shape[1]} dimensions, "
        f"{latent.coordinates.nbytes / 1e6:,.0f} MB) built in {time.perf_counter() - started:.1f} s"
    )

    def picker_now():
        active.train_screening(
            matrix, judged, labels, candidates, c=active.ENSEMBLE_C, latent=latent
        )

    report(f"screening picker before at {rows:,} rows", timed(picker_before, repeat), base)
    report(f"screening picker, third round, at {rows:,} rows", timed(picker_third, repeat), base)
    report(
        f"screening picker now (latent topics) at {rows:,} rows", timed(picker_now, repeat), base
    )


def bench_demo(repeat: int) -> None:
    collection = demo_collection("active")
    from annotate import judgments, projects, roles, services
    from annotate.models import Persona, Task, Topic
    from ranking import learning_plans, learning_state, learning_step
    from ranking.models import LearningModel, LearningPlan
    from ranking.services import collection_features

    matrix = collection_features(collection=collection).matrix
    topic = Topic.objects.create(collection=collection, number="1", title="software release")
    annotator = services.user_create(
        username="bench-annotator", password="x", role_names=[roles.ANNOTATOR]
    )
    project = projects.project_create(
        name="AL bench",
        collection=collection,
        personas=[Persona.objects.create(name="Bench donor")],
        topics=[topic],
        annotators=[annotator],
    )

    def truth(doc) -> int:
        text = f"{doc.subject} {doc.body}".lower()
        return 2 if ("release" in text and "version" in text) else 0

    docs = list(collection.documents.all())
    relevant = [d for d in docs if truth(d)][:3]
    other = [d for d in docs if not truth(d)][:3]
    for d in relevant + other:
        learning_plans.topic_seed_mark(topic=topic, document=d, relevance=truth(d))
    plan = learning_plans.learning_plan_create(
        project=project,
        topic=topic,
        budget=6 + 10 * (repeat + 2),
        candidates=LearningPlan.Candidates.COLLECTION,
        batch_size=10,
    )
    learning_step.learning_step(plan_id=plan.pk)
    print(
        f"demo collection: {matrix.shape[0]:,} messages x {matrix.shape[1]:,} terms, "
        f"{matrix.nnz:,} non-zeros; {sum(truth(d) > 0 for d in docs)} relevant by rule"
    )
    steps, queued, inner, base = [], [], [], []
    for _ in range(repeat):
        for _ in range(10):  # a batch judged
            a = judgments.task_claim(user=annotator, project=project)
            task = Task.objects.select_related("document").get(pk=a.task_id)
            judgments.judgment_submit(
                user=annotator,
                task_id=task.pk,
                idempotency_key=f"b{task.pk}",
                answers=judgments.Answers(truth(task.document), "no", "no"),
                active_seconds=1.0,
                started_at=a.leased_at,
            )
        done = learning_step.learning_step(plan_id=plan.pk)
        steps.append(done["seconds"])
        queued.append(done["seconds_to_queue"])
        inner.append(LearningModel.objects.filter(plan=plan).latest().seconds)
        state = learning_state.plan_state(plan)
        row_of = learning_state.plan_rows(plan).row_of
        rows = list(learning_state.document_rows(plan, row_of, state.labels).items())
        judged = [r for _d, r in rows]
        labels = [int(state.labels[d] >= 1) for d, _r in rows]
        base.append(statistics.median(timed(lambda j=judged, y=labels: floor(matrix, j, y), 3)))
    versions = LearningModel.objects.filter(plan=plan).count()
    report("demo: retrain + rescore + enqueue (DB)", queued, base)
    report("demo: the same + machine labels (DB)", steps, base)
    report("demo: train + score inside the step", inner, base)
    print(f"demo: {versions} versions, queue {len(learning_state.plan_state(plan).queued)} waiting")
    # Disk: the arrays of the latest learning_step.KEEP_VERSIONS versions stay; before, every
    # version's stayed (rows x 4 bytes per array, two arrays per version here).
    latest = Path(LearningModel.objects.filter(plan=plan).latest().scores_path)
    files = list(latest.parent.iterdir())
    per_version = sum(f.stat().st_size for f in files if f.name.startswith(latest.stem))
    print(
        f"demo: arrays on disk {sum(f.stat().st_size for f in files) / 1e3:,.0f} KB in "
        f"{len(files)} files; every version's would be {per_version * versions / 1e3:,.0f} KB "
        f"({per_version / 1e3:,.0f} KB per version; at 500,000 messages "
        f"{per_version / matrix.shape[0] * 500_000 / 1e6:.1f} MB per version)"
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-demo", action="store_true")
    args = parser.parse_args()
    bench_synthetic(args.rows, args.repeat)
    if not args.skip_demo:
        bench_demo(args.repeat)


if __name__ == "__main__":
    main()
