"""The claim-storm world (T1): 40 annotators, 200 tasks (8 topics x 25 messages), overlap 2;
and the answers the judging scenarios send, through the API and the judging page."""

import threading

import pytest
from django.db import connection

from annotate import roles
from annotate.models import Document, Persona, Task, Topic
from tests.factories import ProjectFactory

BODY = {  # a judgment through the API (JSON)
    "relevance": 1,
    "persona_sensitive": "no",
    "personal_sensitive": "no",
    "comment": "",
    "active_seconds": 3.0,
    "started_at": "2026-11-21T10:00:00Z",
}
PAGE_FORM = {  # a judgment from the judging page (form fields)
    "relevance": "2",
    "persona_sensitive": "yes",
    "personal_sensitive": "no",
    "active_seconds": "4.0",
    "started_at": "2026-11-21T10:00:00+00:00",
}


@pytest.fixture
def storm_project(transactional_db, sample_collection, make_user):
    annotators = [make_user(f"storm{i}", roles.ANNOTATOR) for i in range(40)]
    persona = Persona.objects.create(name="P")
    topics = [
        Topic.objects.create(collection=sample_collection, number=str(n), title=f"t{n}")
        for n in range(1, 9)
    ]
    project = ProjectFactory(  # 8 topics x 25 documents = 200 tasks
        name="Storm",
        collection=sample_collection,
        personas=[persona],
        topics=topics,
        annotators=annotators,
        overlap=2,
        documents=Document.objects.filter(collection=sample_collection).order_by("id")[:25],
    )
    assert Task.objects.count() == 200
    return project, annotators


def run_threads(target, args_list):
    """Run ``target(*args)`` for each args in threads, each with its own connection; raise
    in the caller what any of them raised."""
    errors = []

    def wrap(*args):
        try:
            target(*args)
        except Exception as exc:  # surfaced in the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=wrap, args=a) for a in args_list]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
