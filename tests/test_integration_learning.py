"""Active learning on the real services: an annotator judges through the API, a real Celery
worker retrains and queues the next batch; killed mid-retrain (T4) and restarted, it ends
with exactly one new model version and every judgment as it was."""

import time

import redis

from ranking import learning_plans, learning_step
from ranking.models import LearningModel, LearningPlan
from tests.learningkit import judge_one_through_api, queued_count
from tests.slowworker import HOLDING
from tests.test_integration_worker import pytestmark  # noqa: F401 (the same skip rules)
from tests.workerkit import Worker, judgments_checksum, wait_for, worker_settled

BATCH = 5


def test_worker_retrains_after_a_batch_and_survives_sigkill_mid_retrain(
    plan_setup, worker_env, tmp_path
):
    project, topic, truth, client = plan_setup
    log = tmp_path / "worker.log"
    worker = Worker(log, worker_env).start()
    try:
        plan = learning_plans.learning_plan_create(
            project=project,
            topic=topic,
            budget=40,
            candidates=LearningPlan.Candidates.COLLECTION,
            batch_size=BATCH,
        )
        wait_for("the first model", lambda: LearningModel.objects.filter(plan=plan).exists())
        wait_for("two batches queued", lambda: queued_count(plan) == 2 * BATCH)

        # A full batch judged through the API: the worker retrains and queues the next one.
        for _ in range(BATCH):
            judge_one_through_api(client, project, truth)
        wait_for("version 2", lambda: LearningModel.objects.filter(plan=plan).count() == 2)
        wait_for("the next batch", lambda: queued_count(plan) == 2 * BATCH)

        # T4: the worker is killed while it trains version 3.
        worker.stop()
        slow = Worker(log, worker_env, hold_training_ms=4000).start()
        for _ in range(BATCH):
            judge_one_through_api(client, project, truth)
        before = judgments_checksum()
        wait_for("training of version 3", lambda: "training version 3" in log.read_text())
        wait_for("version 3 held before its record", lambda: HOLDING in log.read_text())
        # The scenario, not a wait: kill 1 s into the 4 s the slow worker holds version 3.
        time.sleep(1.0)
        slow.kill()
        assert LearningModel.objects.filter(plan=plan).count() == 2
        # And the broker lost every message (the steps still queued and the one in flight):
        # only the restarted worker's own recovery can finish the retrain.
        redis.Redis.from_url(worker_env["CELERY_BROKER_URL"]).flushdb()
        worker = Worker(log, worker_env).start()  # its start re-asks every unfinished plan
        wait_for("version 3", lambda: LearningModel.objects.filter(plan=plan).count() == 3)
        wait_for("the queue topped up", lambda: queued_count(plan) == 2 * BATCH)
        worker_settled(worker_env["CELERY_BROKER_URL"])  # a redelivered step has run by now
        learning_step.learning_step(plan_id=plan.pk)  # a redelivered step finds nothing to do
        models = list(LearningModel.objects.filter(plan=plan).order_by("version"))
        assert [m.version for m in models] == [1, 2, 3]
        assert models[2].judged == 4 + 2 * BATCH
        assert judgments_checksum() == before
    finally:
        worker.stop()


def test_queue_never_runs_dry_while_the_worker_retrains_every_ten(plan_setup, worker_env, tmp_path):
    """One annotator judging through the API (every 0.5 s, ten times the pace the issue
    names) while the worker retrains after every batch of 10: the queue always holds work
    the worker put there (depth before each claim), so the web never had to top it up."""
    project, topic, truth, client = plan_setup
    worker = Worker(tmp_path / "worker.log", worker_env).start()
    try:
        plan = learning_plans.learning_plan_create(
            project=project,
            topic=topic,
            budget=4 + 40,
            candidates=LearningPlan.Candidates.COLLECTION,
            batch_size=10,
        )
        wait_for("two batches queued", lambda: queued_count(plan) == 20)
        depths = []
        for _ in range(40):
            depths.append(queued_count(plan))
            judge_one_through_api(client, project, truth)
            time.sleep(0.5)  # the scenario: the annotator's pace, one judgment every 0.5 s
        versions = LearningModel.objects.filter(plan=plan).count()
    finally:
        worker.stop()
    assert min(depths) >= 1, depths
    assert versions >= 4, versions  # retrained after each batch of ten
    plan.refresh_from_db()
    assert plan.status == LearningPlan.Status.FINISHED
