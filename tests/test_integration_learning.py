"""Active learning on the real services: an annotator judges through the API, a real Celery
worker retrains and queues the next batch; killed mid-retrain (T4) and restarted, it ends
with exactly one new model version and every judgment as it was."""

import hashlib
import time
import uuid

import pytest
import redis
from django.urls import reverse
from django.utils import timezone

from annotate import roles, services
from annotate.models import Document, Judgment, LearningModel, LearningPlan, Persona, Topic
from ranking import learning
from tests.learningkit import generated_collection
from tests.test_integration_worker import pytestmark  # noqa: F401 (the same skip rules)
from tests.workerkit import Worker

BATCH = 5


def _wait_for(what, condition, timeout=90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _free(plan) -> int:
    return len(learning.plan_state(plan).queued)


def _checksum() -> str:
    rows = Judgment.objects.order_by("id").values_list(
        "id", "task_id", "annotator_id", "relevance", "persona_sensitive", "version", "comment"
    )
    return hashlib.sha256(repr(list(rows)).encode()).hexdigest()


def _judge_one(client, project, truth) -> int:
    r = client.post(reverse("api-task-next", args=[project.slug]))
    assert r.status_code == 200, (r.status_code, r.content[:300])
    task = r.json()
    grade = 2 if task["document"]["docid"] in truth else 0
    r = client.post(
        reverse("api-judgment-submit", args=[task["task"]]),
        {
            "relevance": grade,
            "persona_sensitive": "no",
            "personal_sensitive": "no",
            "comment": "",
            "active_seconds": 2.0,
            "started_at": timezone.now().isoformat(),
        },
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex,
    )
    assert r.status_code == 201, r.content[:300]
    return grade


@pytest.fixture
def plan_setup(worker_env, tmp_path, make_user, client):
    collection, truth = generated_collection(tmp_path)
    topic = Topic.objects.create(collection=collection, number="1", title="turbine blade cooling")
    annotator = make_user("al-worker-annotator", roles.ANNOTATOR)
    project = services.project_create(
        name="Worker learning",
        collection=collection,
        personas=[Persona.objects.create(name="Donor")],
        topics=[topic],
        annotators=[annotator],
    )
    docs = {d.docid: d for d in Document.objects.filter(collection=collection)}
    for docid in sorted(truth)[:2] + sorted(set(docs) - truth)[:2]:
        learning.topic_seed_mark(topic=topic, document=docs[docid], relevance=int(docid in truth))
    client.force_login(annotator)
    return project, topic, truth, client


def test_worker_retrains_after_a_batch_and_survives_sigkill_mid_retrain(
    plan_setup, worker_env, tmp_path
):
    project, topic, truth, client = plan_setup
    log = tmp_path / "worker.log"
    worker = Worker(log, worker_env).start()
    try:
        plan = learning.learning_plan_create(
            project=project,
            topic=topic,
            budget=40,
            candidates=LearningPlan.Candidates.COLLECTION,
            batch_size=BATCH,
        )
        _wait_for("the first model", lambda: LearningModel.objects.filter(plan=plan).exists())
        _wait_for("two batches queued", lambda: _free(plan) == 2 * BATCH)

        # A full batch judged through the API: the worker retrains and queues the next one.
        for _ in range(BATCH):
            _judge_one(client, project, truth)
        _wait_for("version 2", lambda: LearningModel.objects.filter(plan=plan).count() == 2)
        _wait_for("the next batch", lambda: _free(plan) == 2 * BATCH)

        # T4: the worker is killed while it trains version 3.
        worker.stop()
        slow = Worker(log, {**worker_env, "SASC_FAULT_LEARNING_DELAY_MS": "4000"}).start()
        for _ in range(BATCH):
            _judge_one(client, project, truth)
        before = _checksum()
        _wait_for("training of version 3", lambda: "training version 3" in log.read_text())
        time.sleep(1.0)
        slow.kill()
        assert LearningModel.objects.filter(plan=plan).count() == 2
        # And the broker lost every message (the steps still queued and the one in flight):
        # only the restarted worker's own recovery can finish the retrain.
        redis.Redis.from_url(worker_env["CELERY_BROKER_URL"]).flushdb()
        worker = Worker(log, worker_env).start()  # its start re-asks every unfinished plan
        _wait_for("version 3", lambda: LearningModel.objects.filter(plan=plan).count() == 3)
        _wait_for("the queue topped up", lambda: _free(plan) == 2 * BATCH)
        time.sleep(2.0)  # anything still in flight would show now
        learning.learning_step(plan_id=plan.pk)  # a redelivered step finds nothing to do
        models = list(LearningModel.objects.filter(plan=plan).order_by("version"))
        assert [m.version for m in models] == [1, 2, 3]
        assert models[2].judged == 4 + 2 * BATCH
        assert _checksum() == before
    finally:
        worker.stop()


def test_queue_never_runs_dry_while_the_worker_retrains_every_ten(plan_setup, worker_env, tmp_path):
    """One annotator judging through the API (every 0.5 s, ten times the pace the issue
    names) while the worker retrains after every batch of 10: the queue always holds work
    the worker put there (depth before each claim), so the web never had to top it up."""
    project, topic, truth, client = plan_setup
    worker = Worker(tmp_path / "worker.log", worker_env).start()
    try:
        plan = learning.learning_plan_create(
            project=project,
            topic=topic,
            budget=4 + 40,
            candidates=LearningPlan.Candidates.COLLECTION,
            batch_size=10,
        )
        _wait_for("two batches queued", lambda: _free(plan) == 20)
        depths = []
        for _ in range(40):
            depths.append(_free(plan))
            _judge_one(client, project, truth)
            time.sleep(0.5)
        versions = LearningModel.objects.filter(plan=plan).count()
    finally:
        worker.stop()
    assert min(depths) >= 1, depths
    assert versions >= 4, versions  # retrained after each batch of ten
    plan.refresh_from_db()
    assert plan.status == LearningPlan.Status.FINISHED
