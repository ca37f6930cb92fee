"""The active-learning engine on a generated collection whose relevant documents share terms:
seeding (IS, RDS, giving up), versioned idempotent retraining, the queue kept a batch ahead
and topped up from the previous model when a retrain is late, machine labels."""

import time

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone

from annotate import judgments, roles
from annotate.models import Document, Judgment, Task, Topic
from core import active, features
from ranking import learning_plans, learning_queue, learning_state, learning_step
from ranking.models import LearningModel, LearningPlan, MachineLabel
from tests.learningkit import judge_next, learning_project

pytestmark = pytest.mark.lucene


@pytest.fixture
def setup(db, tmp_path, make_user):
    annotator = make_user("al-annotator", roles.ANNOTATOR)
    project, topic, truth = learning_project(tmp_path, annotator)
    return project, topic, annotator, truth


def free_documents(plan) -> int:
    return learning_state.plan_state(plan).queued.__len__()


def test_rds_walks_down_then_cal_keeps_a_batch_ahead_and_finds_the_relevant(
    setup, django_capture_on_commit_callbacks
):
    project, topic, annotator, truth = setup
    plan = learning_plans.learning_plan_create(
        project=project,
        topic=topic,
        budget=50,
        seed_mode=LearningPlan.SeedMode.RDS,
        candidates=LearningPlan.Candidates.COLLECTION,
        batch_size=5,
        rds_system="bm25.title",
        random_seed=3,
    )
    learning_step.learning_step(plan_id=plan.pk)
    plan.refresh_from_db()
    assert plan.status == LearningPlan.Status.SEEDING
    assert "Walking down bm25.title" in plan.status_message
    assert set(Task.objects.filter(topic=topic).values_list("source", flat=True)) == {"seed"}

    found, judged, depths = 0, 0, []
    while True:
        with django_capture_on_commit_callbacks() as callbacks:
            task = judge_next(project, annotator, truth)
        if task is None:
            break
        judged += 1
        found += task.document.docid in truth
        # Every judgment of a learning task asks the worker for a step.
        assert len(callbacks) == 1
        learning_step.learning_step(plan_id=plan.pk)
        plan.refresh_from_db()
        if plan.status == LearningPlan.Status.LEARNING:
            depths.append(free_documents(plan))
    plan.refresh_from_db()
    assert plan.status == LearningPlan.Status.FINISHED
    assert judged == 50 == Judgment.objects.filter(task__topic=topic).count()
    # A batch beyond the one being judged waited after every step until the budget ran out.
    assert min(depths[:-10]) >= 5
    # CAL: from a 12.5% prevalence, most relevant documents found within 50 of 160.
    assert found >= 17, found
    models = list(LearningModel.objects.filter(plan=plan).order_by("version"))
    assert [m.version for m in models] == list(range(1, len(models) + 1))
    assert len(models) >= 8  # retrained after every batch of 5
    marks = [m.judgment_mark for m in models]
    assert marks == sorted(marks) and len(set(marks)) == len(marks)
    latest = models[-1]
    scores = np.load(latest.scores_path)
    assert scores.shape == (160,) and 0 <= scores.min() <= scores.max() <= 1
    # Machine labels: every unjudged document, from the latest version.
    labels = MachineLabel.objects.filter(project=project, topic=topic)
    assert labels.count() == 160 - 50
    assert set(labels.values_list("model_version", flat=True)) == {latest.version}
    judged_docs = set(Judgment.objects.values_list("task__document_id", flat=True))
    assert not judged_docs & set(labels.values_list("document_id", flat=True))


def test_retraining_twice_on_the_same_judgments_makes_one_version(setup):
    project, topic, annotator, truth = setup
    plan = _learning_plan(project, topic, truth)
    before = LearningModel.objects.filter(plan=plan).count()
    for _ in range(3):
        learning_step.learning_step(plan_id=plan.pk)
    assert LearningModel.objects.filter(plan=plan).count() == before
    # A second worker that trained on the same judgments records nothing new.
    state = learning_state.plan_state(plan)
    trained = learning_step._train(plan, state, learning_state.plan_rows(plan))
    model, created = learning_step._record(plan, trained)
    assert not created and model.version == before


def test_the_slow_worker_holds_a_retrain_after_training_and_before_its_version(setup, monkeypatch):
    """The T4 tests kill a worker started through tests/slowworker.py while it holds a
    retrain open: the hold must be on the step's path, after training and before the new
    version is recorded."""
    from tests import slowworker

    project, topic, annotator, truth = setup
    plan = _learning_plan(project, topic, truth)  # version 1, batches of 5
    for _ in range(5):
        judge_next(project, annotator, truth)
    monkeypatch.setattr(learning_step, "scores_save", learning_step.scores_save)  # undone after
    slowworker.hold_training(300)
    held = learning_step.scores_save
    versions_while_held = []

    def watched(**kwargs):
        versions_while_held.append(LearningModel.objects.filter(plan=plan).count())
        return held(**kwargs)

    monkeypatch.setattr(learning_step, "scores_save", watched)
    started = time.perf_counter()
    report = learning_step.learning_step(plan_id=plan.pk)
    assert time.perf_counter() - started >= 0.3
    assert versions_while_held == [1]
    assert report["model"] == 2


def test_only_the_latest_versions_keep_their_arrays_on_disk(setup):
    """Retrained after every judged document, a plan over a large collection would keep
    every version's arrays (4 MB per judgment at 500,000 messages); every reader takes the
    latest version, so the arrays of older ones are deleted, their rows kept."""
    import os
    from pathlib import Path

    from tests.learningkit import seed_two_and_two

    project, topic, annotator, truth = setup
    seed_two_and_two(project, topic, truth)
    plan = learning_plans.learning_plan_create(
        project=project, topic=topic, budget=100, candidates=LearningPlan.Candidates.COLLECTION
    )
    learning_step.learning_step(plan_id=plan.pk)
    folder = Path(LearningModel.objects.filter(plan=plan).latest("version").scores_path).parent
    # A training whose version was never recorded (its worker died), an hour and more ago
    # (named as before judgment counts were recorded), and one still about to be recorded.
    dead, fresh = folder / "j1-s0-i9.npy", folder / "j2-n2-s0-i9-labels.npy"
    for f in (dead, fresh):
        np.save(f, np.zeros(3, dtype=np.float32))
    os.utime(dead, (time.time() - 7200, time.time() - 7200))
    for _ in range(8):
        assert judge_next(project, annotator, truth) is not None
        report = learning_step.learning_step(plan_id=plan.pk)
        assert free_documents(plan) == 2
    versions = list(LearningModel.objects.filter(plan=plan).order_by("-version"))
    assert len(versions) == 9  # every version's row stays
    kept = {Path(v.scores_path).stem for v in versions[: learning_step.KEEP_VERSIONS]}
    on_disk = {f.name for f in folder.iterdir()}
    # The latest three versions' selection scores and machine-label probabilities, and the
    # fresh unrecorded array; the older versions' and the dead training's arrays are gone.
    assert on_disk == {f"{s}.npy" for s in kept} | {f"{s}-labels.npy" for s in kept} | {fresh.name}
    assert report["pruned"] == 2  # the oldest kept version's two arrays, at the last step
    latest = versions[0]
    assert learning_state.scores_usable(latest, learning_state.plan_rows(plan))
    # What the prune leaves is exactly what readers of the latest versions open.
    for v in versions[: learning_step.KEEP_VERSIONS]:
        assert len(np.load(v.scores_path)) == len(
            np.load(learning_state.scores_beside(v.scores_path, "labels"))
        )
    # Once the unrecorded array is old enough, it goes too.
    assert learning_step.scores_prune(plan, now=time.time() + 7200) == 1
    assert not fresh.exists() and latest.scores_path and Path(latest.scores_path).exists()


def _learning_plan(project, topic, truth, **kw) -> LearningPlan:
    """A plan seeded by interactive search: 2 relevant and 2 non-relevant marks."""
    docs = {d.docid: d for d in Document.objects.filter(collection=project.collection)}
    relevant = sorted(truth)[:2]
    other = sorted(set(docs) - truth)[:2]
    for docid in relevant + other:
        learning_plans.topic_seed_mark(
            topic=topic, document=docs[docid], relevance=2 if docid in truth else 0
        )
    plan = learning_plans.learning_plan_create(
        project=project,
        topic=topic,
        budget=kw.pop("budget", 60),
        candidates=LearningPlan.Candidates.COLLECTION,
        batch_size=kw.pop("batch_size", 5),
        **kw,
    )
    learning_step.learning_step(plan_id=plan.pk)  # seeds enough: first model, two batches queued
    plan.refresh_from_db()
    assert plan.status == LearningPlan.Status.LEARNING, plan.status_message
    return plan


def test_interactive_search_seeds_wait_then_start_learning(setup):
    project, topic, annotator, truth = setup
    doc = Document.objects.filter(collection=project.collection, docid=sorted(truth)[0]).get()
    learning_plans.topic_seed_mark(topic=topic, document=doc, relevance=2, query="turbine")
    plan = learning_plans.learning_plan_create(
        project=project,
        topic=topic,
        budget=30,
        candidates=LearningPlan.Candidates.COLLECTION,
        batch_percent=5,
    )
    learning_step.learning_step(plan_id=plan.pk)
    plan.refresh_from_db()
    assert plan.status == LearningPlan.Status.SEEDING
    assert "(1 and 0 so far)" in plan.status_message
    assert not Task.objects.filter(topic=topic).exists()
    other = Document.objects.filter(collection=project.collection).exclude(docid__in=truth)[0]
    learning_plans.topic_seed_mark(topic=topic, document=other, relevance=0)
    learning_step.learning_step(plan_id=plan.pk)
    plan.refresh_from_db()
    assert plan.status == LearningPlan.Status.LEARNING
    model = LearningModel.objects.get(plan=plan)
    assert (model.judged, model.positives) == (2, 1)
    # Batch: 5% of 160 candidates = 8; queued: the batch being judged and one ahead.
    assert free_documents(plan) == 16
    assert learning_state.plan_state(plan).gains == [1, 0]


def test_rds_gives_up_after_its_maximum_and_flags_the_topic(setup):
    project, topic, annotator, truth = setup
    plan = learning_plans.learning_plan_create(
        project=project,
        topic=topic,
        budget=30,
        seed_mode=LearningPlan.SeedMode.RDS,
        candidates=LearningPlan.Candidates.COLLECTION,
        batch_size=5,
        rds_max=4,
        rds_min_relevant=1,
        rds_min_nonrelevant=1,
    )
    nobody_relevant: set[str] = set()
    for _ in range(10):
        learning_step.learning_step(plan_id=plan.pk)
        judge_next(project, annotator, nobody_relevant)
    plan.refresh_from_db()
    assert plan.status == LearningPlan.Status.FLAGGED
    assert "RDS gave up after 4 documents of bm25.title" in plan.status_message
    assert Judgment.objects.filter(task__topic=topic).count() == 4


def test_an_empty_queue_is_topped_up_from_the_previous_model_when_a_retrain_is_late(setup):
    project, topic, annotator, truth = setup
    plan = _learning_plan(project, topic, truth, batch_size=4)
    versions = LearningModel.objects.filter(plan=plan).count()
    # The worker is down: nobody runs learning_step while the queue is judged to the end.
    for _ in range(8):
        assert judge_next(project, annotator, truth) is not None
    assert free_documents(plan) == 0
    task = judge_next(project, annotator, truth)
    assert task is not None and task.source == Task.Source.ACTIVE
    assert LearningModel.objects.filter(plan=plan).count() == versions  # no training in web
    assert free_documents(plan) == 7  # topped up to two batches, one of them now claimed


def test_a_plan_retrains_after_every_document_by_default_with_one_queued_ahead(setup):
    from tests.learningkit import seed_two_and_two

    project, topic, annotator, truth = setup
    seed_two_and_two(project, topic, truth)
    plan = learning_plans.learning_plan_create(
        project=project, topic=topic, budget=100, candidates=LearningPlan.Candidates.COLLECTION
    )
    assert (plan.growing, plan.batch_size, plan.batch_percent, plan.singles) == (
        True,
        1,
        None,
        None,
    )
    learning_step.learning_step(plan_id=plan.pk)
    # The queue holds the document being judged and one ahead (lag 1).
    assert free_documents(plan) == 2
    versions = [LearningModel.objects.filter(plan=plan).count()]
    for judged in range(1, 31):
        assert judge_next(project, annotator, truth) is not None
        # Before the worker's step: the next document is already there (never waiting).
        assert free_documents(plan) >= 1, judged
        learning_step.learning_step(plan_id=plan.pk)
        assert free_documents(plan) == 2, (judged, free_documents(plan))
        versions.append(LearningModel.objects.filter(plan=plan).count())
    # A new model after every judged document (AutoTAR's growth retrained 7 times here).
    assert versions[-1] - versions[0] == 30, versions
    assert learning_state.batch_size(plan, 160, learning_state.plan_state(plan)) == 1
    # The picker: presumed non-relevant documents in training, C for screening, fused with
    # ASReview's SVM by mean rank (docs/active-learning.md, "Third round"), both reading the
    # index's latent topics beside the words ("Eighth round").
    latest = LearningModel.objects.filter(plan=plan).latest("version")
    params = latest.params
    rows = learning_state.plan_rows(plan)
    k = rows.matrix.latent.shape[1]
    assert 0 < k <= features.LATENT_DIMENSIONS
    assert params["selector_presumed"] is True and params["selector_C"] == 3.0
    assert params["selector"] == (
        f"mean rank of logistic regression and ELAS u4's SVM, words + {k} latent topics "
        f"(weight {active.LATENT_WEIGHT})"
    )
    assert params["features"].endswith(f" + {k} latent topics")
    assert params["presumed_nonrelevant"] > 0
    # The stored scores are the ensemble's, on the scale of probabilities.
    state = learning_state.plan_state(plan)
    doc_rows = learning_state.document_rows(plan, rows.row_of, state.training)
    judged = sorted(doc_rows)
    labels = active.collapse([state.training[d] for d in judged])

    def picker(latent):
        return active.train_screening(
            rows.matrix.matrix,
            [doc_rows[d] for d in judged],
            labels,
            rows.candidates,
            seed=plan.random_seed + latest.version,
            c=3.0,
            latent=latent,
        )[1]

    expected = picker(active.Latent(rows.matrix.latent))
    stored = np.load(latest.scores_path)
    # Exactly the picker's scores, in float64 as the simulation picks from them (float32
    # tied candidates the picker told apart).
    assert stored.dtype == np.float64 and np.array_equal(stored, expected)
    assert stored.min() >= 0 and stored.max() <= 1
    assert not np.array_equal(stored, picker(None))  # the latent topics are read


def test_an_index_built_before_latent_topics_is_picked_from_by_the_words_alone(setup):
    from ranking.services import index_paths
    from tests.learningkit import seed_two_and_two

    project, topic, annotator, truth = setup
    seed_two_and_two(project, topic, truth)
    folder = index_paths(collection=project.collection).features
    (folder / "latent.npy").unlink()  # as an index built before the eighth round
    features.forget(folder)
    plan = learning_plans.learning_plan_create(
        project=project, topic=topic, budget=100, candidates=LearningPlan.Candidates.COLLECTION
    )
    learning_step.learning_step(plan_id=plan.pk)
    for _ in range(3):
        assert judge_next(project, annotator, truth) is not None
        learning_step.learning_step(plan_id=plan.pk)
    latest = LearningModel.objects.filter(plan=plan).latest("version")
    assert latest.params["selector"] == "mean rank of logistic regression and ELAS u4's SVM"
    assert "latent" not in latest.params["features"]
    rows = learning_state.plan_rows(plan)
    assert rows.matrix.latent is None
    state = learning_state.plan_state(plan)
    doc_rows = learning_state.document_rows(plan, rows.row_of, state.training)
    judged = sorted(doc_rows)
    _model, expected = active.train_screening(
        rows.matrix.matrix,
        [doc_rows[d] for d in judged],
        active.collapse([state.training[d] for d in judged]),
        rows.candidates,
        seed=plan.random_seed + latest.version,
        c=3.0,
    )
    assert np.array_equal(np.load(latest.scores_path), expected)


def test_a_plan_with_no_singles_grows_its_batches_as_autotar_and_keeps_one_batch_queued(setup):
    from core.screening import autotar_batch_at
    from tests.learningkit import seed_two_and_two

    project, topic, annotator, truth = setup
    seed_two_and_two(project, topic, truth)
    plan = learning_plans.learning_plan_create(
        project=project,
        topic=topic,
        budget=100,
        candidates=LearningPlan.Candidates.COLLECTION,
        singles=0,
    )
    assert (plan.growing, plan.batch_size, plan.singles) == (True, 1, 0)
    learning_step.learning_step(plan_id=plan.pk)
    # The first batch is 1 document; the queue holds it and one batch ahead.
    assert free_documents(plan) == 2
    versions = [LearningModel.objects.filter(plan=plan).count()]
    for judged in range(1, 31):
        assert judge_next(project, annotator, truth) is not None
        assert free_documents(plan) >= 1, judged
        learning_step.learning_step(plan_id=plan.pk)
        size = autotar_batch_at(judged)
        # Never empty: the annotator always has the rest of this batch and the next one.
        assert size <= free_documents(plan) <= 2 * size, (judged, free_documents(plan))
        versions.append(LearningModel.objects.filter(plan=plan).count())
    # Retrained once per batch (1, 2, 3, 4, 5, 6, 7 cover 28 judgments), not per document.
    assert 6 <= versions[-1] - versions[0] <= 8, versions
    assert learning_state.batch_size(plan, 160, learning_state.plan_state(plan)) == 8
    # Growing from a given batch size is AutoTAR's growth unless told otherwise.
    other = Topic.objects.create(collection=project.collection, number="77", title="y")
    project.topics.add(other)
    grown = learning_plans.learning_plan_create(
        project=project,
        topic=other,
        budget=100,
        candidates=LearningPlan.Candidates.COLLECTION,
        growing=True,
        batch_size=5,
    )
    assert (grown.batch_size, grown.singles) == (5, 0)


def test_plans_refuse_what_cannot_work(setup):
    project, topic, annotator, truth = setup
    other = Topic.objects.create(collection=project.collection, number="2", title="x")
    with pytest.raises(learning_plans.PlanError) as err:
        learning_plans.learning_plan_create(
            project=project,
            topic=other,
            budget=0,
            batch_size=5,
            batch_percent=5,
            strategy=LearningPlan.Strategy.SENSITIVITY,
            rds_system="tfidf",
        )
    message = str(err.value)
    for expected in (
        "topic 2 is not in the project",
        "give a batch size or a batch percentage, not both",
        "the budget must be at least 1 document",
        "unknown system 'tfidf' for RDS",
        "the sensitivity strategy needs one of the project's personas",
        "topic 2 has no pool yet: pool the project first",
    ):
        assert expected in message
    assert not LearningPlan.objects.exists()


PLAN_FORM = {
    "strategy": "cal",
    "seed_mode": "is",
    "candidates": "collection",
    "batch_percent": "5",
    "budget": "40",
    "random_seed": "1",
    "rds_system": "bm25.title",
    "rds_min_relevant": "1",
    "rds_min_nonrelevant": "1",
    "rds_max": "100",
}


def test_lead_pages_start_plans_show_progress_and_mark_seeds(setup, login, users):
    project, topic, annotator, truth = setup
    lead = login(users["lead"])
    doc = Document.objects.filter(collection=project.collection, docid=sorted(truth)[0]).get()
    seeds_url = reverse("topic-seeds", args=[project.collection.slug, topic.number])
    r = lead.get(seeds_url, {"q": "turbine blade"})
    assert r.status_code == 200 and doc.subject.encode() in r.content
    mark = reverse("topic-seed-mark", args=[project.collection.slug, topic.number, doc.pk])
    r = lead.post(mark, {"relevance": "2", "q": "turbine blade"}, HTTP_HX_REQUEST="true")
    assert r.status_code == 200 and b'aria-pressed="true"' in r.content
    seed = topic.seeds.get()
    assert (seed.document, seed.relevance, seed.query) == (doc, 2, "turbine blade")
    r = lead.post(seeds_url, {"title": "turbine blade film cooling", "narrative": "Holes."})
    topic.refresh_from_db()
    assert r.status_code == 302 and topic.title == "turbine blade film cooling"

    page = reverse("learning", args=[project.slug])
    r = lead.post(
        page,
        {"topics": [topic.pk], **PLAN_FORM},
    )
    assert r.status_code == 302
    plan = LearningPlan.objects.get(project=project, topic=topic)
    learning_step.learning_step(plan_id=plan.pk)
    r = lead.get(page)
    assert b"Waiting for seeds" in r.content and b"(1 and 0 so far)" in r.content
    other = Document.objects.filter(collection=project.collection).exclude(docid__in=truth)[0]
    learning_plans.topic_seed_mark(topic=topic, document=other, relevance=0)
    learning_step.learning_step(plan_id=plan.pk)
    r = lead.get(page, HTTP_HX_REQUEST="true")  # the part the page polls
    assert b"<html" not in r.content
    assert b"v1 (1 in all)" in r.content and b"Learning" in r.content
    assert b"<polyline" in r.content
    # The same topic twice: refused with the reason, nothing else changed.
    r = lead.post(page, {"topics": [topic.pk], "batch_size": "5", "budget": "9"}, follow=True)
    assert LearningPlan.objects.count() == 1
    r = lead.post(
        page,
        {"topics": [topic.pk], **PLAN_FORM},
        follow=True,
    )
    assert b"already has an active-learning plan" in r.content
    # Annotators and searchers cannot reach these pages.
    for role_user in (users["annotator"], users["searcher"]):
        other_client = login(role_user)
        assert other_client.get(page).status_code in (403, 404)
        assert other_client.post(mark, {"relevance": "0"}).status_code in (403, 404)
    assert topic.seeds.count() == 2


def test_sensitivity_strategy_queues_likely_relevant_documents_of_uncertain_sensitivity(setup):
    project, topic, annotator, truth = setup
    persona = project.personas.get()
    plan = _learning_plan(
        project,
        topic,
        truth,
        strategy=LearningPlan.Strategy.SENSITIVITY,
        sensitivity_persona=persona,
        batch_size=6,
    )
    # About half the relevant documents are sensitive for the persona.
    sensitive = {d for d in truth if int(d) % 2}
    for _ in range(12):
        judge_next(project, annotator, truth, sensitive)
    answers = Judgment.objects.filter(task__topic=topic).values_list("persona_sensitive", flat=True)
    assert {"yes", "no"} <= set(answers)
    assert learning_state.plan_state(plan).queued == set()  # both batches judged
    done = learning_step.learning_step(plan_id=plan.pk)
    assert done["picked_by"] == "sensitivity" and done["added"] == 12
    model = LearningModel.objects.filter(plan=plan).latest()
    added = learning_state.plan_state(plan).queued
    scores = np.load(model.scores_path)
    row_of = {d: i for i, d in enumerate(learning_state.plan_rows(plan)[0].docids)}
    docids = dict(Document.objects.filter(pk__in=added).values_list("pk", "docid"))
    # Picked among the likely relevant only (P(relevant) >= 0.5 under the selector).
    assert all(scores[row_of[docids[pk]]] >= 0.5 for pk in added)


# --- Index versions, ends, and the worker's locks (issue 21) -----------------------------------


def _add_documents(collection, tmp_path, n=40) -> None:
    """Import ``n`` more documents (a new collection version) and rebuild the index."""
    from ranking.services import index_build

    lines = []
    for i in range(1000, 1000 + n):
        lines += [f".I {i}", ".T", "later report", ".W", f"later report number {i} storage ."]
    path = tmp_path / "later.all"
    path.write_text("\n".join(lines) + "\n")
    from annotate import services

    assert services.import_run(collection=collection, fmt="smart", path=path).ok
    index_build(collection_id=collection.pk)


def test_a_rebuilt_index_makes_the_step_retrain_on_it_instead_of_reading_old_scores(
    setup, tmp_path
):
    project, topic, annotator, truth = setup
    plan = _learning_plan(project, topic, truth, batch_size=5)
    first = LearningModel.objects.filter(plan=plan).latest()
    assert first.index_version == 1 and "-i1.npy" in first.scores_path
    # An upload grows the collection and the index is rebuilt (version 2, 200 rows): the
    # old scores have 160 rows. Reading them against the new rows crashed with IndexError.
    _add_documents(project.collection, tmp_path)
    assert learning_queue.queue_top_up(project=project) == 0  # the web never uses the old scores
    report = learning_step.learning_step(plan_id=plan.pk)
    latest = LearningModel.objects.filter(plan=plan).latest()
    assert latest.index_version == 2 and latest.version == first.version + 1
    assert report["model"] == latest.version
    assert np.load(latest.scores_path).shape == (200,)
    assert MachineLabel.objects.filter(model_version=latest.version).exists()
    # The same judgments on the same index: one version, however often the step runs.
    learning_step.learning_step(plan_id=plan.pk)
    assert LearningModel.objects.filter(plan=plan).count() == latest.version


def test_scores_of_another_index_version_are_never_paired_with_its_rows(setup, tmp_path):
    project, topic, annotator, truth = setup
    plan = _learning_plan(project, topic, truth)
    model = LearningModel.objects.filter(plan=plan).latest()
    rows = learning_state.plan_rows(plan)
    assert learning_state.scores_usable(model, rows)
    _add_documents(project.collection, tmp_path)
    newer = learning_state.plan_rows(plan)
    assert newer.index_version == 2 and len(newer.matrix.docids) == 200
    assert not learning_state.scores_usable(model, newer)
    state = learning_state.plan_state(plan)
    assert learning_step.machine_labels_write(plan=plan, model=model, rows=newer, state=state) == 0


def test_a_plan_whose_candidates_run_out_finishes_saying_why(setup):
    project, topic, annotator, truth = setup
    # 160 candidates, a budget of 500: the budget can never be spent.
    plan = _learning_plan(project, topic, truth, budget=500, batch_size=40)
    while judge_next(project, annotator, truth) is not None:
        learning_step.learning_step(plan_id=plan.pk)
    learning_step.learning_step(plan_id=plan.pk)
    plan.refresh_from_db()
    assert plan.status == LearningPlan.Status.FINISHED
    assert "every one of the 160 candidates" in plan.status_message
    assert "of the budget of 500 judged by the review; the budget not reached" in (
        plan.status_message
    )


def test_a_spent_budget_finishes_the_plan(setup):
    project, topic, annotator, truth = setup
    plan = _learning_plan(project, topic, truth, budget=12, batch_size=5)
    while judge_next(project, annotator, truth) is not None:
        learning_step.learning_step(plan_id=plan.pk)
    plan.refresh_from_db()
    assert plan.status == LearningPlan.Status.FINISHED
    assert plan.status_message.startswith("Budget spent: 12 documents judged")


def test_a_plan_whose_round_was_closed_stops_saying_why(setup):
    project, topic, annotator, truth = setup
    plan = _learning_plan(project, topic, truth)
    task = judge_next(project, annotator, truth)
    plan.round.is_open = False
    plan.round.save(update_fields=["is_open"])
    learning_step.learning_step(plan_id=plan.pk)
    plan.refresh_from_db()
    assert plan.status == LearningPlan.Status.FINISHED
    assert f"round {plan.round.number} was closed" in plan.status_message
    # The version it ends with (and its machine labels) saw the last judgment, though a
    # batch's worth had not been judged since the version before.
    last = LearningModel.objects.filter(plan=plan).latest("version")
    assert last.judgment_mark == Judgment.objects.get(task=task).pk


def test_a_failed_step_shows_its_reason_on_the_plan(setup, monkeypatch):
    from ranking.tasks import learning_step_task

    project, topic, annotator, truth = setup
    plan = _learning_plan(project, topic, truth)
    LearningModel.objects.filter(plan=plan).update(scores_path="/nonexistent/scores.npy")
    judge_next(project, annotator, truth)

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(learning_step, "_train", broken)
    with pytest.raises(RuntimeError):
        learning_step_task.apply(args=[plan.pk], throw=True)
    plan.refresh_from_db()
    assert plan.status == LearningPlan.Status.LEARNING
    assert "The last update failed (RuntimeError: disk full)" in plan.status_message


def test_the_plan_form_grows_batches_by_default_and_names_a_conflicting_choice(setup):
    from ranking.forms import LearningPlanForm

    project, topic, annotator, truth = setup
    base = {**PLAN_FORM, "topics": [topic.pk]}
    del base["batch_percent"]
    assert LearningPlanForm(project=project).fields["growing"].initial is True
    form = LearningPlanForm({**base, "growing": "on"}, project=project)
    assert form.is_valid(), form.errors
    assert (form.cleaned_data["growing"], form.cleaned_data["batch_size"]) == (True, None)
    form = LearningPlanForm({**base, "growing": "on", "batch_percent": "5"}, project=project)
    assert not form.is_valid()
    assert "Growing batches start from a batch size, not a percentage" in str(form.errors)
    form = LearningPlanForm(base, project=project)  # unticked, and no fixed batch either
    assert not form.is_valid()
    assert "Give either a batch size or a batch percentage" in str(form.errors)


def _page_plan(tmp_path, make_user, annotators=1):
    from tests.learningkit import learning_project, seed_two_and_two

    users = [make_user(f"page{i}", roles.ANNOTATOR) for i in range(annotators)]
    project, topic, truth = learning_project(tmp_path, users[0])
    project.annotators.add(*users[1:])
    seed_two_and_two(project, topic, truth)
    plan = learning_plans.learning_plan_create(
        project=project, topic=topic, budget=100, candidates=LearningPlan.Candidates.COLLECTION
    )
    learning_step.learning_step(plan_id=plan.pk)
    return project, users, truth, plan


@pytest.mark.lucene
def test_while_one_annotator_holds_two_documents_another_gets_one(db, tmp_path, make_user):
    """Batches of 1 (the default): the judging page holds the task it shows and the one it
    preloads; the queue keeps a document nobody holds for the next annotator."""
    from tests.learningkit import judge_next

    project, (a, b), truth, plan = _page_plan(tmp_path, make_user, annotators=2)
    for _ in range(10):
        assert judge_next(project, a, truth)
        learning_step.learning_step(plan_id=plan.pk)
    shown = judgments.task_claim(user=a, project=project)
    judgments.task_claim(user=a, project=project, skip_task_ids=(shown.task_id,))
    learning_step.learning_step(plan_id=plan.pk)
    assert judgments.task_claim(user=b, project=project) is not None


@pytest.mark.lucene
def test_the_worker_queues_the_pages_next_preload(db, tmp_path, make_user, monkeypatch):
    """With the worker keeping up, the page's save claims a document the worker queued:
    the save itself does not top the queue up (no scores read in the web request)."""
    import uuid

    from annotate import hooks

    project, (a,), truth, plan = _page_plan(tmp_path, make_user)
    shown = judgments.task_claim(user=a, project=project)
    preload = judgments.task_claim(user=a, project=project, skip_task_ids=(shown.task_id,))
    web_top_ups = []
    top_up = hooks.queue_empty.function
    monkeypatch.setattr(
        hooks.queue_empty, "function", lambda **kw: web_top_ups.append(1) or top_up(**kw)
    )
    for _ in range(20):
        docid = Task.objects.select_related("document").get(pk=shown.task_id).document.docid
        following = judgments.judgment_submit_and_claim(
            user=a,
            project=project,
            skip_task_ids=(preload.task_id,),
            task_id=shown.task_id,
            idempotency_key=uuid.uuid4().hex,
            answers=judgments.Answers(
                relevance=2 if docid in truth else 0,
                persona_sensitive="no",
                personal_sensitive="no",
            ),
            active_seconds=3,
            started_at=timezone.now(),
        )[2]
        learning_step.learning_step(plan_id=plan.pk)
        assert following is not None
        shown, preload = preload, following
    # At most the first save's: the worker had not run since the page claimed its two.
    assert len(web_top_ups) <= 1, len(web_top_ups)


def test_machine_labels_are_written_ever_more_rarely_and_when_the_plan_ends():
    due = learning_step.labels_due
    assert due(1, None) and due(2, 1) and due(19, 18)
    assert not due(5, 5)
    assert due(40, 36) and not due(40, 37)
    assert not due(1000, 950) and due(1000, 900)
    assert due(1000, 999, final=True) and not due(7, 7, final=True)
    # 1,000 versions (a plan retrained after each of 1,000 judgments): few full writes.
    last, writes = None, 0
    for version in range(1, 1001):
        if due(version, last):
            last, writes = version, writes + 1
    assert writes < 60, writes


def test_steps_queued_behind_a_retrain_coalesce_when_judgments_outpace_retrains(setup, monkeypatch):
    """Judgments come twice as fast as retrains (two arrive while each model trains), as with
    several annotators on a topic at 500,000 documents. Every judgment queues a step; a step
    whose judgment a model already saw only tops the queue up, so the worker's backlog stays
    bounded and each retrain trains on everything judged by then. (Without the coalescing
    every step retrains, and the backlog grows by one per retrain.)"""
    from tests.learningkit import seed_two_and_two

    project, topic, annotator, truth = setup
    messages = []
    monkeypatch.setattr(
        learning_plans, "queue_on_commit", lambda task, *args, robust=False: messages.append(args)
    )
    seed_two_and_two(project, topic, truth)
    plan = learning_plans.learning_plan_create(
        project=project, topic=topic, budget=150, candidates=LearningPlan.Candidates.COLLECTION
    )
    learning_step.learning_step(plan_id=plan.pk)
    messages.clear()
    retrains = judged = 0
    backlog = []
    while judged < 40:
        if not messages:  # the worker is idle: an annotator judges
            assert judge_next(project, annotator, truth) is not None
            judged += 1
            continue
        plan_id, judgment_id = messages.pop(0)
        before = LearningModel.objects.filter(plan=plan).count()
        learning_step.learning_step(plan_id=plan_id, judgment_id=judgment_id)
        if LearningModel.objects.filter(plan=plan).count() > before:
            retrains += 1
            for _ in range(2):  # judged while that model trained
                assert judge_next(project, annotator, truth) is not None
                judged += 1
        backlog.append(len(messages))
    assert max(backlog) <= 3, backlog
    assert 19 <= retrains <= 21, retrains
    # Drain: one more retrain takes in the last judgments, the rest only top up.
    while messages:
        plan_id, judgment_id = messages.pop(0)
        learning_step.learning_step(plan_id=plan_id, judgment_id=judgment_id)
    latest = LearningModel.objects.filter(plan=plan).latest("version")
    last = Judgment.objects.filter(task__project=project).order_by("-pk").first()
    assert latest.judgment_mark == last.pk
    assert latest.judged == 4 + judged  # the seeds and every judgment


@pytest.mark.parametrize("ending", ["budget spent", "round closed"])
def test_a_coalesced_step_that_finds_the_plan_ending_trains_the_version_it_ends_with(
    setup, monkeypatch, ending
):
    """The last judgments arrive while an earlier judgment's step waits: that step's own
    judgment is in a model (it would be coalesced), but the plan now ends (its budget spent,
    or its round closed), so it trains on the rest before ending the plan; the final
    machine labels see every judgment."""
    from tests.learningkit import seed_two_and_two

    project, topic, annotator, truth = setup
    monkeypatch.setattr(learning_plans, "queue_on_commit", lambda task, *args, robust=False: None)
    seed_two_and_two(project, topic, truth)
    budget = 4 + 3 if ending == "budget spent" else 40  # the seeds count
    plan = learning_plans.learning_plan_create(
        project=project, topic=topic, budget=budget, candidates=LearningPlan.Candidates.COLLECTION
    )
    learning_step.learning_step(plan_id=plan.pk)
    plan.refresh_from_db()
    assert plan.status == LearningPlan.Status.LEARNING, plan.status_message
    first = judge_next(project, annotator, truth)
    learning_step.learning_step(plan_id=plan.pk)  # trains on the first judgment
    j1 = Judgment.objects.get(task=first).pk
    assert LearningModel.objects.filter(plan=plan).latest("version").judgment_mark == j1
    # Before the first judgment's step runs again: the budget's last two, or one more
    # judgment and the round closed.
    for _ in range(2 if ending == "budget spent" else 1):
        assert judge_next(project, annotator, truth) is not None
    if ending == "round closed":
        plan.round.is_open = False
        plan.round.save(update_fields=["is_open"])
    report = learning_step.learning_step(plan_id=plan.pk, judgment_id=j1)
    plan.refresh_from_db()
    latest = LearningModel.objects.filter(plan=plan).latest("version")
    assert not report.get("coalesced")
    assert plan.status == LearningPlan.Status.FINISHED, plan.status_message
    judged = Judgment.objects.filter(task__project=project)
    assert latest.judged == 4 + judged.count() == 4 + (3 if ending == "budget spent" else 2)
    assert latest.judgment_mark == judged.latest("pk").pk


def test_a_judgment_that_commits_after_a_higher_id_is_still_trained_on(setup, monkeypatch):
    """On PostgreSQL a judgment's id is drawn before its commit, so two annotators' saves can
    commit out of order: a model may read judgment 12 but not judgment 11, which commits a
    moment later. Its step must not be coalesced as "a model with mark 12 saw it", and the
    plan must not end with a version that lacks it. (Simulated here by holding judgment 11
    back while the model trains; without the count each model keeps, the step is coalesced
    and the last version was trained on one judgment fewer.)"""
    from tests.learningkit import seed_two_and_two

    project, topic, annotator, truth = setup
    monkeypatch.setattr(learning_plans, "queue_on_commit", lambda task, *args, robust=False: None)
    seed_two_and_two(project, topic, truth)
    plan = learning_plans.learning_plan_create(
        project=project, topic=topic, budget=4 + 3, candidates=LearningPlan.Candidates.COLLECTION
    )
    learning_step.learning_step(plan_id=plan.pk)
    for _ in range(3):  # the budget's last three
        assert judge_next(project, annotator, truth) is not None
    _first, held, last = Judgment.objects.filter(task__project=project).order_by("pk")
    Judgment.objects.filter(pk=held.pk).delete()  # not committed yet when the model reads
    report = learning_step.learning_step(plan_id=plan.pk, judgment_id=last.pk)
    model = LearningModel.objects.filter(plan=plan).latest("version")
    assert (model.judgment_mark, model.judgment_count, model.judged) == (last.pk, 2, 4 + 2)
    held.save(force_insert=True)  # its commit lands, id below the model's mark
    report = learning_step.learning_step(plan_id=plan.pk, judgment_id=held.pk)
    assert not report.get("coalesced")
    plan.refresh_from_db()
    latest = LearningModel.objects.filter(plan=plan).latest("version")
    assert (latest.judgment_mark, latest.judgment_count, latest.judged) == (last.pk, 3, 4 + 3)
    assert plan.status == LearningPlan.Status.FINISHED, plan.status_message
