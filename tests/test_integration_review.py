"""Learning from decisions with the real services: archivists' decisions queue a retrain in a
real Celery worker, which stores a new classifier version, and the next search uses it."""

from annotate.models import Persona, ReferenceSensitivity
from ranking import classifier
from ranking.classifier import sensitivity_model_train
from ranking.models import SensitivityModel
from ranking.services import index_build
from review import releases, services
from review.models import AuditEvent, Publication, ReviewRequest
from tests.test_integration_worker import pytestmark  # noqa: F401 (the same skip rules)
from tests.workerkit import Worker, wait_for


def _linux_is_sensitive(c, name: str) -> Persona:
    """Index the sample mail and make a persona whose labels say what the archive knew
    before: mail about linux is sensitive."""
    index_build(collection_id=c.pk)
    c.refresh_from_db()
    persona = Persona.objects.create(name=name)
    for d in c.documents.all():
        text = f"{d.subject} {d.body}".lower()
        ReferenceSensitivity.objects.create(
            persona=persona, document=d, sensitive="linux" in text, source="before"
        )
    return persona


def test_decisions_retrain_the_classifier_in_the_worker_and_searches_use_it(
    worker_env, sample_collection, users, tmp_path
):
    c = sample_collection
    persona = _linux_is_sensitive(c, "Loop donor")
    docs = list(c.documents.order_by("id"))
    first = sensitivity_model_train(collection=c, persona=persona, source="reference")
    Publication.objects.create(collection=c, persona=persona, published=True, retrain_every=3)
    worker = Worker(tmp_path / "worker.log", worker_env).start()
    try:
        # Three decisions, against what the labels said: the third queues a retrain.
        flipped = [d for d in docs if "linux" in f"{d.subject} {d.body}".lower()][:3]
        for d in flipped:
            releases.review_decide(
                archivist=users["archivist"], persona=persona, document=d, kind="release"
            )
        second = wait_for(
            "version 2",
            lambda: SensitivityModel.objects.filter(persona=persona, version=2).first(),
            120,
        )
    finally:
        worker.stop()
    assert second.source == "decisions" and second.report["n"] == len(docs)
    assert second.report["positives"] == first.report["positives"] - 3
    p, version = classifier.sensitivity_scores(collection=c, persona=persona)
    assert version == 2
    services.search_protected(user=users["searcher"], collection=c, query="linux")
    event = AuditEvent.objects.filter(action="search").latest("at")
    assert event.detail["classifier"] == 2  # the next search ran on version 2's scores


def test_the_worker_asks_the_archivist_after_the_searchers_response(
    worker_env, sample_collection, users, tmp_path
):
    c = sample_collection
    persona = _linux_is_sensitive(c, "Queue donor")
    sensitivity_model_train(collection=c, persona=persona, source="reference")
    # Every document in the band: nothing is shown, everything near the top is asked about.
    Publication.objects.create(
        collection=c, persona=persona, published=True, band_low=0.0, band_high=1.0, review_k=5
    )
    worker = Worker(tmp_path / "worker.log", worker_env).start()
    try:
        outcome = services.search_protected(user=users["searcher"], collection=c, query="linux")
        assert outcome.shown == []  # the response is made before anything is asked
        requests = wait_for(
            "the worker's review requests",
            lambda: list(ReviewRequest.objects.filter(search=outcome.search)),
            120,
        )
    finally:
        worker.stop()
    assert 1 <= len(requests) <= 5
    assert {r.persona_id for r in requests} == {persona.pk}
    # Idempotent: a task delivered twice asks nothing twice.
    assert services.review_requests_create(search_id=outcome.search.pk) == 0
