"""Training a persona's sensitivity classifier from stored labels: versions, report, the
lead's page and its worker job, refusals."""

import re
from pathlib import Path

import pytest
from django.urls import reverse

from annotate.models import Job, Persona, ReferenceSensitivity
from ranking import classifier
from ranking.models import SensitivityModel


@pytest.fixture
def labelled(sample_collection):
    """The sample mail with a persona's imported labels: mail about Linux is sensitive."""
    persona = Persona.objects.create(name="Linux user")
    docs = list(sample_collection.documents.order_by("id"))
    for d in docs:
        text = f"{d.subject} {d.body}".lower()
        ReferenceSensitivity.objects.create(
            persona=persona, document=d, sensitive="linux" in text, source="test"
        )
    return sample_collection, persona, docs


def test_training_stores_versions_with_a_cross_validated_report(labelled):
    collection, persona, docs = labelled
    positives = ReferenceSensitivity.objects.filter(sensitive=True).count()
    assert 3 <= positives <= len(docs) - 3
    first = classifier.sensitivity_model_train(
        collection=collection, persona=persona, source="reference"
    )
    second = classifier.sensitivity_model_train(
        collection=collection, persona=persona, source="reference", objective="f2"
    )
    assert (first.version, second.version) == (1, 2)
    r = second.report
    assert (r["n"], r["positives"], r["objective"], r["source"]) == (
        len(docs),
        positives,
        "f2",
        "reference",
    )
    for name in ("precision", "recall", "f1", "f2", "accuracy", "balanced_accuracy"):
        assert 0 <= r[name] <= 1
    assert r["f1"] > 0.6  # "linux" is in the words: the classifier finds it
    assert any("linux" in name for name, _w in r["top_sensitive"])
    import joblib

    stored = joblib.load(second.path)
    assert len(stored["scores"]) == len(docs) == r["documents_scored"]
    assert stored["docids"] == [d.docid for d in docs]


def test_training_takes_labels_given_as_an_argument_and_leaves_no_file_behind(labelled):
    collection, persona, docs = labelled
    given = {d.pk: int(i % 3 == 0) for i, d in enumerate(docs)}
    model = classifier.sensitivity_model_train(
        collection=collection, persona=persona, source="given", labels=given
    )
    assert model.report["source"] == "given"
    assert (model.report["n"], model.report["positives"]) == (len(given), sum(given.values()))
    folder = Path(model.path).parent
    assert sorted(p.name for p in folder.iterdir()) == ["v1.joblib"]


def test_too_few_labels_and_unknown_sources_are_refused(labelled):
    collection, persona, docs = labelled
    with pytest.raises(classifier.ClassifierError, match="0 sensitive and 0 not sensitive"):
        classifier.sensitivity_model_train(
            collection=collection, persona=persona, source="annotations"
        )
    with pytest.raises(classifier.ClassifierError, match="give the category codes"):
        classifier.sensitivity_labels(
            collection=collection, persona=persona, source="categories", categories=[]
        )
    with pytest.raises(classifier.ClassifierError, match="unknown label source 'guess'"):
        classifier.sensitivity_labels(collection=collection, persona=persona, source="guess")
    assert not SensitivityModel.objects.exists()


def test_category_codes_nest_like_the_acm_classification():
    assert classifier._in_category("4.12", "4.1") and classifier._in_category("4.1", "4.1")
    assert classifier._in_category("4.22", "4") and not classifier._in_category("4.22", "4.1")
    assert not classifier._in_category("40.1", "4")


def test_the_lead_trains_from_the_page_and_reads_the_report(
    labelled, login, users, django_capture_on_commit_callbacks
):
    from config.celery import app

    collection, persona, docs = labelled
    lead = login(users["lead"])
    url = reverse("classifiers", args=[collection.slug])
    app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            r = lead.post(url, {"persona": persona.pk, "source": "reference", "objective": "f1"})
    finally:
        app.conf.task_always_eager = False
    job = Job.objects.get(kind=Job.Kind.SENSITIVITY)
    assert r.status_code == 302 and r["Location"] == reverse("job-detail", args=[job.pk])
    assert job.status == Job.Status.SUCCEEDED and "Version 1: cross-validated F1" in job.message
    page = lead.get(url)
    assert b"Linux user" in page.content and b"Most influential features" in page.content
    # the features in words, never the featurizer's ids
    text = page.content.decode()
    assert "the word “linux”" in text
    assert not re.search(r"\b(body|subject|meta|graph):\w", text)
    r = lead.post(url, {"persona": persona.pk, "source": "categories", "objective": "f1"})
    assert b"Give the category codes" in r.content
    for role in ("annotator", "searcher", "archivist"):
        assert login(users[role]).get(url).status_code in (403, 404)


def test_annotators_answers_train_the_classifier_and_dont_know_is_no_label(make_project):
    from django.utils import timezone

    from annotate import judgments
    from annotate.models import Task

    project, (annotator,) = make_project(annotators=1, n_tasks=30)
    persona = project.personas.get()
    answers = {}
    while (a := judgments.task_claim(user=annotator, project=project)) is not None:
        task = Task.objects.select_related("document").get(pk=a.task_id)
        text = f"{task.document.subject} {task.document.body}".lower()
        answer = "dont_know" if len(answers) % 7 == 6 else ("yes" if "linux" in text else "no")
        answers[task.document_id] = answer
        judgments.judgment_submit(
            user=annotator,
            task_id=task.pk,
            idempotency_key=f"c{task.pk}",
            answers=judgments.Answers(1, answer, "no"),
            active_seconds=2.0,
            started_at=timezone.now(),
        )
    labels = classifier.sensitivity_labels(
        collection=project.collection, persona=persona, source="annotations"
    )
    assert labels == {d: int(a == "yes") for d, a in answers.items() if a != "dont_know"}
    model = classifier.sensitivity_model_train(
        collection=project.collection, persona=persona, source="annotations"
    )
    assert model.report["n"] == len(labels) and model.report["positives"] == sum(labels.values())


def test_the_joint_rankers_message_features_cover_every_email_and_no_other_kind(
    sample_collection,
):
    from annotate.models import Collection
    from core.sensitivity import RANKING

    rows = classifier.ranking_document_features(collection=sample_collection)
    docs = list(sample_collection.documents.prefetch_related("attachments"))
    assert set(rows) == {d.docid for d in docs}
    for d in docs:
        row = dict(zip(RANKING, rows[d.docid], strict=True))
        assert row["reply"] == float(d.subject.lower().startswith("re:") or row["reply"])
        assert row["attachments"] == len(d.attachments.all())
        assert row["sender_external"] + row["sender_internal"] <= 1
    assert any(r[RANKING.index("sender_out_degree")] > 0 for r in rows.values())
    smart = Collection.objects.create(name="S", slug="s", kind="smart")
    assert classifier.ranking_document_features(collection=smart) is None


@pytest.mark.needs_postgres("row locks")
def test_two_trainings_stored_at_once_take_two_versions(
    transactional_db, sample_collection, tmp_path, monkeypatch
):
    """Two workers finishing a training of one persona together: each gets its own version
    and file. Broken build (the version read without the persona's row lock): both took
    version 1, one insert failed and the survivor's v1.joblib held the other's model."""
    import threading
    import time

    from annotate.models import Persona
    from tests.stormkit import run_threads

    persona = Persona.objects.create(name="Racer")
    folder = tmp_path / "models"
    folder.mkdir()
    real_replace = classifier.os.replace

    def slow_replace(src, dst):  # hold the version a while, as a large file would
        time.sleep(0.3)
        real_replace(src, dst)

    monkeypatch.setattr(classifier.os, "replace", slow_replace)
    start = threading.Barrier(2)

    def store(tag):
        pending = folder / f"training-{tag}.joblib"
        pending.write_text(tag)
        start.wait()
        classifier.version_store(
            collection=sample_collection,
            persona=persona,
            pending=pending,
            source=tag,
            objective="f1",
            report={},
            seconds=0.0,
        )

    run_threads(store, [("a",), ("b",)])
    stored = {m.version: m for m in SensitivityModel.objects.filter(persona=persona)}
    assert sorted(stored) == [1, 2]
    for m in stored.values():
        assert Path(m.path).read_text() == m.source  # each version holds its own file
    assert sorted(p.name for p in folder.iterdir()) == ["v1.joblib", "v2.joblib"]


def test_the_classifier_reads_each_message_with_its_attachments_in_order(db, tmp_path):
    """``collection_messages`` reads plain rows (no per-document prefetch): each message has
    its own attachments' names and texts, in position order, and its entity counts."""
    from annotate import services
    from annotate.models import Attachment, Collection, Document

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "emails"
    collection = Collection.objects.create(name="c", slug="c")
    services.import_run(collection=collection, fmt="emails", path=fixtures)
    messages, ids = classifier.collection_messages(collection=collection)
    docs = {d.pk: d for d in Document.objects.filter(collection=collection)}
    assert ids == sorted(docs) and len(ids) > 40
    with_attachments = 0
    for message, pk in zip(messages, ids, strict=True):
        atts = list(Attachment.objects.filter(document_id=pk).order_by("position"))
        assert message.docid == docs[pk].docid
        assert message.body == docs[pk].body
        assert message.attachment_count == len(atts)
        assert message.attachments == " ".join(a.filename + " " + a.text for a in atts)
        with_attachments += bool(atts)
    assert with_attachments >= 3


def test_a_classifier_file_pickled_under_the_old_module_names_still_loads(tmp_path):
    """Files written before the pure core moved out of ranking (issue 32) name
    ``ranking.sensitivity.Featurizer``; they load, and the old name is gone afterwards."""
    import sys

    import joblib

    from core import sensitivity

    featurizer = sensitivity.Featurizer.__new__(sensitivity.Featurizer)
    featurizer.names = ["w:salary", "w:lunch"]
    cls = sensitivity.Featurizer
    sys.modules["ranking.sensitivity"] = sensitivity
    cls.__module__ = "ranking.sensitivity"
    try:
        path = tmp_path / "v1.joblib"
        joblib.dump({"featurizer": featurizer, "docids": ["a"], "scores": [0.25]}, path)
    finally:
        cls.__module__ = "core.sensitivity"
        del sys.modules["ranking.sensitivity"]
    assert b"ranking.sensitivity" in path.read_bytes()
    classifier._stored.cache_clear()
    stored = classifier._stored(str(path))
    assert stored.names == ["w:salary", "w:lunch"]
    assert stored.p == {"a": 0.25}
    assert "ranking.sensitivity" not in sys.modules


def test_a_trained_version_stores_its_calibrator_calibrated_scores_and_the_report(labelled):
    """Issue 33: the stored P(sensitive) that routing reads are the model's probabilities
    through the version's calibrator, and the report says how it was calibrated."""
    import joblib
    import numpy as np

    from core import calibration

    collection, persona, docs = labelled
    model = classifier.sensitivity_model_train(
        collection=collection, persona=persona, source="reference"
    )
    stored = joblib.load(model.path)
    c = stored["calibrator"]
    assert isinstance(c, calibration.Calibrator)
    assert (c.labels, c.positives) == (model.report["n"], model.report["positives"])
    assert np.allclose(stored["scores"], c.apply(stored["raw_scores"]), atol=1e-6)
    assert stored["threshold"] == pytest.approx(float(c.apply(stored["raw_threshold"])))
    r = model.report["calibration"]
    assert r["method"] == c.method and r["labels"] == len(docs)
    assert 0 <= r["brier_before"] <= 1
    assert r["brier_after"] is None or r["brier_after"] < r["brier_before"]
    assert sum(b["count"] for b in r["bins"]) == len(docs)
    assert sum(b["positives"] for b in r["bins"]) == model.report["positives"]
    assert "labels" in r["trust"]
    assert model.report["p_sensitive_min"] == pytest.approx(
        float(c.apply(model.report["p_sensitive_min_raw"]))
    )
    # Routing reads the calibrated scores, and says whether they are.
    classifier._stored.cache_clear()
    p, version = classifier.sensitivity_scores(collection=collection, persona=persona)
    assert version == 1
    assert [p[d.docid] for d in docs] == pytest.approx(list(map(float, stored["scores"])))
    inputs = classifier.publish_inputs(collection=collection, persona=persona)
    assert inputs.version == 1 and inputs.p == p and inputs.report == r
    assert inputs.calibrated == (c.method != calibration.NONE)
    assert inputs.calibration == c.describe()
    # No archivist has decided anything here: the documented default, and it says so.
    assert inputs.seconds_per_decision == classifier.SECONDS_PER_DECISION_DEFAULT
    assert inputs.seconds_measured == 0 and "default" in inputs.seconds_source


def test_a_file_written_before_calibration_loads_as_uncalibrated_and_says_so(tmp_path):
    import joblib

    path = tmp_path / "v1.joblib"
    joblib.dump({"docids": ["a", "b"], "scores": [0.25, 0.5]}, path)
    classifier._stored.cache_clear()
    stored = classifier._stored(str(path))
    assert stored.p == {"a": 0.25, "b": 0.5}
    assert stored.calibrated is False
    assert stored.calibration.startswith("uncalibrated: written before calibration")


def test_publish_inputs_time_the_archivists_decisions(labelled, django_user_model):
    """Seconds per decision: the median gap between an archivist's decisions on the
    collection, a group decision's gap shared by its documents, pauses left out."""
    from datetime import timedelta

    from django.utils import timezone

    from review.models import Decision

    collection, persona, docs = labelled
    archivist = django_user_model.objects.create_user("arch", password="x")
    start = timezone.now() - timedelta(hours=2)
    # 12 decisions 20 s apart, a 30-minute pause, then 3 more 50 s apart.
    offsets = [20 * i for i in range(12)] + [20 * 11 + 1800 + 50 * i for i in range(3)]
    for doc, offset in zip(docs, offsets, strict=False):
        Decision.objects.create(
            persona=persona,
            document=doc,
            kind=Decision.Kind.RELEASE,
            decided_by=archivist,
            decided_at=start + timedelta(seconds=offset),
        )
    assert len(docs) >= len(offsets)
    inputs = classifier.publish_inputs(collection=collection, persona=persona)
    assert inputs.version is None and inputs.p == {}  # no classifier yet
    # 11 gaps of 20 s, 2 of 50 s (the pause is not measured): median 20 s over 13.
    assert (inputs.seconds_per_decision, inputs.seconds_measured) == (20.0, 13)
    assert "median over the last 13 decisions" in inputs.seconds_source
