"""On SQLite a web request waits for any open write transaction of the worker: the worker
must do its slow work (Lucene and its JVM, training, reading the matrix) outside any
transaction, and a long job must not write while a read cursor is open (issue 21).

Each test runs the worker's side in a thread with its own connection, stops it inside the
slow part, and makes a web-side write meanwhile: it must complete at once."""

import threading
import time

import pytest
from django.db import OperationalError, connection, transaction

from annotate import roles
from annotate.models import Document, Job
from ranking import learning_plans, learning_step, seeding
from ranking.models import LearningPlan
from tests.learningkit import learning_project

pytestmark = [pytest.mark.lucene, pytest.mark.django_db(transaction=True)]


class SlowStep:
    """Wrap a function of the worker's path: when called, note whether the calling thread's
    connection is inside a transaction, and hold there until the web side wrote."""

    def __init__(self, original):
        self.original = original
        self.entered = threading.Event()
        self.release = threading.Event()
        self.in_transaction = None

    def __call__(self, *args, **kwargs):
        self.in_transaction = connection.in_atomic_block
        self.entered.set()
        self.release.wait(10)
        return self.original(*args, **kwargs)


def web_write_while(slow: SlowStep, worker) -> float:
    """Run ``worker`` in a thread; once it is inside ``slow``, write as a web request would
    (a transaction, as a login's session save is) and return how long the write took."""
    errors = []

    def run():
        try:
            worker()
        except Exception as exc:  # reported by the test, not lost in the thread
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    assert slow.entered.wait(120), "the worker never reached its slow step"
    started = time.perf_counter()
    try:
        with transaction.atomic():
            Job.objects.create(kind=Job.Kind.IMPORT, message="a web request's write")
        took = time.perf_counter() - started
    except OperationalError as exc:  # "database is locked": the worker held the lock
        took = float("inf")
        pytest.fail(f"the web write failed while the worker was in its slow step: {exc}")
    finally:
        slow.release.set()
        thread.join(120)
    assert not errors, errors
    return took


@pytest.fixture
def plan_world(tmp_path, make_user):
    annotator = make_user("locks-annotator", roles.ANNOTATOR)
    return learning_project(tmp_path, annotator)


def test_a_web_write_does_not_wait_while_the_worker_searches_lucene_for_rds(
    plan_world, monkeypatch
):
    project, topic, _truth = plan_world
    plan = learning_plans.learning_plan_create(
        project=project,
        topic=topic,
        budget=20,
        seed_mode=LearningPlan.SeedMode.RDS,
        candidates=LearningPlan.Candidates.COLLECTION,
        batch_size=5,
    )
    slow = SlowStep(seeding._system_ranking)
    monkeypatch.setattr(seeding, "_system_ranking", slow)
    took = web_write_while(slow, lambda: learning_step.learning_step(plan_id=plan.pk))
    assert slow.in_transaction is False
    assert took < 2.0
    plan.refresh_from_db()
    assert "Walking down" in plan.status_message  # and the step did its work


def test_a_web_write_does_not_wait_while_the_worker_trains(plan_world, monkeypatch):
    project, topic, truth = plan_world
    docs = {d.docid: d for d in Document.objects.filter(collection=project.collection)}
    for docid in sorted(truth)[:2] + sorted(set(docs) - truth)[:2]:
        learning_plans.topic_seed_mark(
            topic=topic, document=docs[docid], relevance=2 * (docid in truth)
        )
    plan = learning_plans.learning_plan_create(
        project=project,
        topic=topic,
        budget=20,
        candidates=LearningPlan.Candidates.COLLECTION,
        batch_size=5,
    )
    slow = SlowStep(learning_step.active.train)
    monkeypatch.setattr(learning_step.active, "train", slow)
    took = web_write_while(slow, lambda: learning_step.learning_step(plan_id=plan.pk))
    assert slow.in_transaction is False
    assert took < 2.0
    assert plan.models.count() == 1


def test_reading_a_collection_for_an_index_leaves_no_cursor_open_between_chunks(plan_world):
    from annotate.selectors import collection_index_documents

    project, _topic, _truth = plan_world
    rows = collection_index_documents(collection=project.collection, chunk=50)
    first = next(rows)
    # Between two documents the index build reports progress, and an import may store
    # documents from another connection. An open read cursor refuses both on SQLite: under
    # it, the build's own write fails once another connection has committed (WAL), and
    # here (the tests' shared-cache database) another connection cannot write the table.
    done = threading.Event()

    def other():
        try:
            Document.objects.filter(collection=project.collection, docid="1").update(
                subject="edited by another connection"
            )
            done.set()
        finally:
            connection.close()

    thread = threading.Thread(target=other)
    thread.start()
    thread.join(30)
    assert done.is_set(), "another connection could not write while the read was open"
    Job.objects.create(kind=Job.Kind.INDEX, message="progress between chunks")
    assert len([first, *rows]) == 160
