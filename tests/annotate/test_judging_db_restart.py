"""T6: PostgreSQL restarted while annotators submit. Every acknowledged judgment is present,
retries with the same Idempotency-Key create no duplicates, and the application recovers
without being restarted (Django's connection health checks reconnect).

Restarts the machine's PostgreSQL cluster, so it runs only where that is allowed:
SASC_ALLOW_PG_RESTART=1 (``.ci/run`` sets it) and pg_ctlcluster present.
"""

import json
import os
import shutil
import subprocess
import threading
import time
import uuid

import pytest
from django.db import close_old_connections, connection
from django.test import Client
from django.urls import reverse

from annotate import roles
from annotate.models import Document, Judgment, Persona, Topic
from tests.factories import ProjectFactory
from tests.stormkit import BODY

pytestmark = [
    pytest.mark.needs_postgres("T6 restarts PostgreSQL"),
    pytest.mark.skipif(
        not (os.environ.get("SASC_ALLOW_PG_RESTART") == "1" and shutil.which("pg_ctlcluster")),
        reason="restarts PostgreSQL: needs SASC_ALLOW_PG_RESTART=1 and pg_ctlcluster",
    ),
]


def restart_postgres():
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"],
        check=True,
        timeout=120,
    )


def test_t6_postgres_restart_under_load_loses_and_duplicates_nothing(
    transactional_db, sample_collection, make_user
):
    annotators = [make_user(f"r{i}", roles.ANNOTATOR) for i in range(8)]
    topics = [
        Topic.objects.create(collection=sample_collection, number=str(n), title=f"t{n}")
        for n in range(1, 9)
    ]
    persona = Persona.objects.create(name="P")
    project = ProjectFactory(  # 8 topics x 39 messages: enough work to outlast the restarts
        name="Restart",
        collection=sample_collection,
        personas=[persona],
        topics=topics,
        annotators=annotators,
        documents=Document.objects.all(),
    )
    n_tasks = len(topics) * Document.objects.count()
    acknowledged: list[int] = []
    server_errors = []
    refused = []
    lock = threading.Lock()
    stop = threading.Event()

    def request(call):
        # The test client leaves out what Django's real handler does around each request
        # (it keeps the test database connection): close connections that broke. That is
        # the mechanism (with CONN_HEALTH_CHECKS) by which the server recovers on its own.
        close_old_connections()
        return call()

    def submit(client, task_id, key, via_page):
        if via_page:  # the judging page: store, then claim and render the next task
            return client.post(
                reverse("judge-submit", args=[project.slug, task_id]),
                BODY,
                HTTP_IDEMPOTENCY_KEY=key,
                HTTP_X_REQUESTED_WITH="fetch",
            )
        return client.post(
            reverse("api-judgment-submit", args=[task_id]),
            BODY,
            content_type="application/json",
            HTTP_IDEMPOTENCY_KEY=key,
        )

    def judgment_id(response, via_page):
        return json.loads(response["X-Judgment"])["id"] if via_page else response.json()["id"]

    def annotate(user, via_page):
        # Server errors come back as 500 responses, as a browser would see them.
        client = Client(raise_request_exception=False)
        client.force_login(user)
        try:
            while not stop.is_set():
                r = request(lambda: client.post(reverse("api-task-next", args=[project.slug])))
                if r.status_code == 204:
                    return
                if r.status_code >= 500:  # the database is restarting: try again
                    with lock:
                        server_errors.append(r.status_code)
                    time.sleep(0.2)  # a client's pause before it asks again
                    continue
                task_id, key = r.json()["task"], uuid.uuid4().hex
                for _attempt in range(100):  # a client retries with the same key
                    r = request(
                        lambda task_id=task_id, key=key: submit(client, task_id, key, via_page)
                    )
                    if r.status_code < 500:
                        break
                    with lock:
                        server_errors.append(r.status_code)
                    time.sleep(0.2)  # a client's pause before it retries
                with lock:
                    if r.status_code in (200, 201):
                        acknowledged.append(judgment_id(r, via_page))
                    else:  # a retry must get the stored judgment, never "already judged"
                        refused.append(r.status_code)
                time.sleep(0.05)  # the annotators' pace
        finally:
            connection.close()

    # Six of eight use the judging page, whose save also claims and renders the next task after its
    # commit: a restart in that moment loses a response whose judgment is stored, and the
    # retry must get that judgment back (G2), not "already judged".
    threads = [
        threading.Thread(target=annotate, args=(u, i % 4 != 0)) for i, u in enumerate(annotators)
    ]
    for t in threads:
        t.start()
    # Restart ten times mid-work: each restart catches some saves between their commit and
    # their response (a build without the Idempotency-Key lookup fails here most runs).
    for after in range(20, 320, 30):
        # Wait for the count, but restart after 60 s whatever it is (the scenario's schedule).
        deadline = time.monotonic() + 60
        while len(acknowledged) < after and time.monotonic() < deadline:
            time.sleep(0.02)
        restart_postgres()
    for t in threads:
        t.join(180)
    stop.set()
    connection.close()  # this thread's connection died with the server

    stored = set(Judgment.objects.values_list("id", flat=True))
    assert acknowledged and set(acknowledged) <= stored, "every acknowledged judgment is there"
    pairs = list(Judgment.objects.values_list("task_id", "annotator_id"))
    assert len(pairs) == len(set(pairs)), "no duplicate after retries"
    assert Judgment.objects.count() == n_tasks, "all tasks were judged"
    assert server_errors, "the restart must have been felt, or the test proves nothing"
    assert refused == [], "every retried submit got its stored judgment"
    # Recovered without a restart of the application: a fresh request works.
    client = Client()
    client.force_login(annotators[0])
    assert client.get(reverse("api-project-progress", args=[project.slug])).status_code == 200
