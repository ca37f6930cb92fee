"""Concurrency scenarios T1-T3 of RELIABILITY.md on PostgreSQL, with real threads.

Each thread has its own database connection and HTTP client, like a gunicorn thread. SQLite
serialises writers with BEGIN IMMEDIATE instead of row locks; these run where CI runs them:
against PostgreSQL (DATABASE_URL).
"""

import random
import threading
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotate import judgments
from annotate.models import Assignment, Document, JudgedCount, Judgment, Task
from tests.stormkit import BODY, PAGE_FORM, run_threads

pytestmark = pytest.mark.needs_postgres("row-lock concurrency")


def test_t1_claim_storm_never_over_assigns_and_every_task_reaches_its_overlap(storm_project):
    project, annotators = storm_project
    statuses = Counter()
    lock = threading.Lock()
    rng = random.Random(7)
    abandon = {u.pk: rng.random() < 0.1 for u in annotators}  # 10% abandon one claim

    def annotate(user, may_abandon):
        client = Client()
        client.force_login(user)
        held: list[int] = []
        while True:
            url = reverse("api-task-next", args=[project.slug])
            r = client.post(
                url + "".join(f"{'&' if i else '?'}held={h}" for i, h in enumerate(held))
            )
            with lock:
                statuses[r.status_code] += 1
            if r.status_code == 204:
                return
            task_id = r.json()["task"]
            if may_abandon and not held:
                held.append(task_id)  # claimed and walked away: the lease stays until it expires
                continue
            r = client.post(
                reverse("api-judgment-submit", args=[task_id]),
                BODY,
                content_type="application/json",
                HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex,
            )
            with lock:
                statuses[r.status_code] += 1

    run_threads(annotate, [(u, abandon[u.pk]) for u in annotators])
    # Time passes: the abandoned leases expire and the others finish the work.
    Assignment.objects.filter(status="leased").update(expires_at=timezone.now() - timedelta(1))
    run_threads(annotate, [(u, False) for u in annotators])

    assert not [s for s in statuses if s >= 500], statuses
    per_task = Counter(Judgment.objects.values_list("task_id", flat=True))
    assert len(per_task) == 200, "every task judged"
    assert set(per_task.values()) == {2}, "every task reaches its overlap and no more"
    pairs = Counter(Judgment.objects.values_list("task_id", "annotator_id"))
    assert max(pairs.values()) == 1, "no duplicate (task, annotator)"
    assert set(Task.objects.values_list("claimed", flat=True)) == {2}
    # The progress counters (one row per annotator and batch) saw every judgment once.
    per_annotator = Counter(Judgment.objects.values_list("annotator_id", flat=True))
    counted = Counter()
    for annotator_id, judged in JudgedCount.objects.values_list("annotator_id", "judged"):
        counted[annotator_id] += judged
    assert counted == per_annotator
    assert sum(abandon.values()) >= 2, "the scenario must include abandoned claims"


@pytest.fixture
def one_task(transactional_db, make_project):
    project, (a, _) = make_project(n_tasks=1)
    assignment = judgments.task_claim(user=a, project=project)
    return project, a, assignment.task_id


def test_t2_parallel_duplicates_with_one_key_store_one_row(one_task):
    project, user, task_id = one_task
    key = uuid.uuid4().hex
    codes, ids = [], []
    lock = threading.Lock()
    barrier = threading.Barrier(20)

    def post():
        client = Client()
        client.force_login(user)
        barrier.wait()
        r = client.post(
            reverse("api-judgment-submit", args=[task_id]),
            BODY,
            content_type="application/json",
            HTTP_IDEMPOTENCY_KEY=key,
        )
        with lock:
            codes.append(r.status_code)
            if r.status_code in (200, 201):
                ids.append(r.json()["id"])

    run_threads(post, [()] * 20)
    assert Judgment.objects.filter(task_id=task_id).count() == 1
    assert sorted(codes) == [200] * 19 + [201], codes
    assert set(ids) == {Judgment.objects.get().pk}

    client = Client()
    client.force_login(user)
    altered = client.post(
        reverse("api-judgment-submit", args=[task_id]),
        {**BODY, "relevance": 2},
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY=key,
    )
    assert altered.status_code == 422
    assert altered.json()["code"] == "idempotency_key_reused"
    assert Judgment.objects.get().relevance == 1


def test_t2_double_click_on_the_judging_page_stores_one_row(one_task):
    project, user, task_id = one_task
    key = uuid.uuid4().hex
    form = PAGE_FORM
    codes = []
    barrier = threading.Barrier(2)

    def click():
        client = Client()
        client.force_login(user)
        barrier.wait()
        r = client.post(
            reverse("judge-submit", args=[project.slug, task_id]),
            form,
            HTTP_IDEMPOTENCY_KEY=key,
            HTTP_X_REQUESTED_WITH="fetch",
        )
        codes.append(r.status_code)

    run_threads(click, [(), ()])
    assert codes == [200, 200]
    assert Judgment.objects.filter(task_id=task_id).count() == 1


def test_t3_a_lost_response_is_retried_into_the_same_row_and_shown_saved(one_task):
    project, user, task_id = one_task
    client = Client()
    client.force_login(user)
    key = uuid.uuid4().hex
    url = reverse("api-judgment-submit", args=[task_id])
    first = client.post(url, BODY, content_type="application/json", HTTP_IDEMPOTENCY_KEY=key)
    # The server committed; the client never saw `first` and retries.
    retry = client.post(url, BODY, content_type="application/json", HTTP_IDEMPOTENCY_KEY=key)
    assert (first.status_code, retry.status_code) == (201, 200)
    assert retry.json()["id"] == first.json()["id"]
    assert Judgment.objects.filter(task_id=task_id).count() == 1
    page = client.get(reverse("judging-history", args=[project.slug])).content.decode()
    assert Document.objects.get(tasks__pk=task_id).subject[:30] in page
