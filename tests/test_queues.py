"""Work queues that never starve each other (issue 34, item 1; docs/deploy.md, "Queues").

Every task has a route to ``interactive`` or ``bulk``; the demo runs one worker per queue;
and on the real services a searcher's review requests are answered while an import waits
for the bulk worker, and an import starts while a burst of review requests is still queued.
"""

import os
import re
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotate import services
from annotate.models import Collection, Job, Persona
from config.celery import QUEUES, app
from tests.conftest import SAMPLE
from tests.waitkit import until
from tests.workerkit import Worker

INTERACTIVE = {
    "review.tasks.review_requests_task",
    "ranking.tasks.learning_step_task",
    "review.tasks.exposure_task",
}


def _our_tasks() -> list[str]:
    app.loader.import_default_modules()  # autodiscover, as a worker does
    return sorted(n for n in app.tasks if n.split(".")[0] in ("annotate", "ranking", "review"))


def test_every_task_has_a_route_to_one_of_the_two_queues():
    names = _our_tasks()
    assert len(names) >= 8
    unrouted = [n for n in names if n not in settings.CELERY_TASK_ROUTES]
    assert unrouted == [], f"tasks without a route (add them to CELERY_TASK_ROUTES): {unrouted}"
    assert set(QUEUES) == {settings.CELERY_QUEUES_INTERACTIVE, settings.CELERY_QUEUES_BULK}
    for name in names:
        queue = app.amqp.router.route({}, name)["queue"].name
        assert queue == ("interactive" if name in INTERACTIVE else "bulk"), name


def test_the_demo_runs_one_worker_per_queue():
    from config.management.commands.demo import demo_processes

    workers = [args for _name, args in demo_processes(8000) if "worker" in args]
    queues = [args[args.index("-Q") + 1] for args in workers]
    assert sorted(queues) == ["bulk", "interactive"]
    nodes = [args[args.index("-n") + 1] for args in workers]
    assert len(set(nodes)) == 2


def _searches(n: int) -> list[int]:
    """``n`` logged searches on a collection with no publication: each review request is
    a real task that reads its search and finds nothing to ask about."""
    user = get_user_model().objects.create_user("queue-searcher")
    collection = Collection.objects.create(name="Searched", slug="searched")
    persona = Persona.objects.create(name="Donor")
    now = timezone.now()
    from review.models import SearchLog

    return [
        SearchLog.objects.create(
            searcher=user, collection=collection, persona=persona, query=f"q{i}", created_at=now
        ).pk
        for i in range(n)
    ]


def _answered(log: Path) -> int:
    text = log.read_text() if log.exists() else ""
    return len(re.findall(r"review\.tasks\.review_requests_task\[[^\]]+\] succeeded", text))


@pytest.mark.integration
@pytest.mark.needs_postgres("worker processes share the test database")
@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL (Redis)")
def test_review_requests_are_answered_while_an_import_waits_and_an_import_starts_during_a_burst(
    worker_env, tmp_path
):
    import redis

    from review.tasks import review_requests_task

    searches = _searches(300)
    collection = Collection.objects.create(name="Imported", slug="imported")
    interactive = Worker(tmp_path / "interactive.log", worker_env, queues=("interactive",))
    bulk = Worker(tmp_path / "bulk.log", worker_env, queues=("bulk",))
    try:
        # 1. The bulk worker is not there (as if busy for hours): an import waits, and a
        # searcher's review requests are answered all the same.
        interactive.start()
        job = services.job_import_create(
            collection=collection, fmt="emails", path=SAMPLE, label="sample"
        )
        for pk in searches[:20]:
            review_requests_task.delay(pk)
        until(lambda: _answered(interactive.log) == 20, 60, "20 review requests answered")
        job.refresh_from_db()
        assert job.status == Job.Status.QUEUED  # nothing took the import
        interactive.stop()

        # 2. A burst of 280 review requests is queued, then an import: the bulk worker starts
        # it at once, while most of the burst still waits for the interactive worker.
        broker = redis.Redis.from_url(os.environ["REDIS_URL"])
        bulk.start()
        job = Job.objects.get(pk=job.pk)
        until(lambda: Job.objects.get(pk=job.pk).is_finished, 120, "the first import")
        second = Collection.objects.create(name="Second", slug="second")
        for pk in searches[20:]:
            review_requests_task.delay(pk)
        queued = time.monotonic()
        job2 = services.job_import_create(
            collection=second, fmt="emails", path=SAMPLE, label="sample"
        )
        until(
            lambda: Job.objects.get(pk=job2.pk).status != Job.Status.QUEUED,
            30,
            "the second import to start",
        )
        waited = time.monotonic() - queued
        backlog = broker.llen("interactive")
        assert backlog >= 200, backlog  # the burst had not been served: the import did not wait
        assert waited < 15, waited
        print(f"import started {waited:.1f} s after queueing, {backlog} review requests queued")
        interactive = Worker(tmp_path / "interactive.log", worker_env, queues=("interactive",))
        interactive.start()
        until(lambda: broker.llen("interactive") == 0, 120, "the burst to be served")
        until(lambda: Job.objects.get(pk=job2.pk).is_finished, 120, "the second import")
        assert Job.objects.get(pk=job2.pk).status == Job.Status.SUCCEEDED
    finally:
        interactive.stop()
        bulk.stop()
