"""T7 (annotation part): every annotation operation x role x own / another's object."""

import uuid

import pytest
from django.urls import reverse

from annotate import judgments, roles
from annotate.models import Judgment
from tests.stormkit import BODY


@pytest.fixture
def world(make_project, make_user, users):
    """Annotator A holds and judged task 1; annotator B (same project) holds task 2."""
    project, (a, b) = make_project(n_tasks=4)
    outsider = make_user("outsider", roles.ANNOTATOR)  # an annotator of no project
    t1 = judgments.task_claim(user=a, project=project).task_id
    j1, _ = judgments.judgment_submit(
        user=a,
        task_id=t1,
        idempotency_key="a1",
        answers=judgments.Answers(relevance=2, persona_sensitive="no", personal_sensitive="no"),
        active_seconds=1,
        started_at=Judgment._meta.get_field("started_at").to_python("2026-11-21T10:00:00Z"),
    )
    t2 = judgments.task_claim(user=b, project=project).task_id
    t3 = judgments.task_claim(user=a, project=project).task_id  # A's live lease
    return {
        "project": project,
        "a": a,
        "b": b,
        "outsider": outsider,
        "t1": t1,
        "t2": t2,
        "t3": t3,
        "j1": j1,
        **users,
    }


def call(client, op, w):
    p = w["project"].slug
    api_json = {"content_type": "application/json"}
    ops = {
        "next": lambda: client.post(reverse("api-task-next", args=[p])),
        "submit_own": lambda: client.post(
            reverse("api-judgment-submit", args=[w["t3"]]),
            BODY,
            **api_json,
            HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex,
        ),
        "submit_other": lambda: client.post(
            reverse("api-judgment-submit", args=[w["t2"]]),
            BODY,
            **api_json,
            HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex,
        ),
        "skip_other": lambda: client.post(
            reverse("api-task-skip", args=[w["t2"]]), {"reason": "x"}, **api_json
        ),
        "list": lambda: client.get(reverse("api-judgment-list"), {"project": p}),
        "read_judgment_of_a": lambda: client.get(reverse("api-judgment-edit", args=[w["j1"].pk])),
        "edit_judgment_of_a": lambda: client.patch(
            reverse("api-judgment-edit", args=[w["j1"].pk]), {**BODY, "version": 1}, **api_json
        ),
        "progress": lambda: client.get(reverse("api-project-progress", args=[p])),
        "page_judge": lambda: client.get(reverse("judge", args=[p])),
        "page_history": lambda: client.get(reverse("judging-history", args=[p])),
        "page_edit_judgment_of_a": lambda: client.get(
            reverse("judgment-edit", args=[p, w["j1"].pk])
        ),
        "page_dashboard": lambda: client.get(reverse("judging-dashboard", args=[p])),
        "agreement": lambda: client.get(reverse("api-project-agreement", args=[p])),
        "exports": lambda: client.get(reverse("api-project-exports", args=[p])),
        "export_qrels": lambda: client.get(reverse("api-project-export", args=[p, "qrels.txt"])),
        "export_zip": lambda: client.get(reverse("api-project-export", args=[p, "export.zip"])),
        "page_agreement": lambda: client.get(reverse("agreement", args=[p])),
        "page_export": lambda: client.get(reverse("project-export", args=[p])),
        "page_adjudicate": lambda: client.post(
            reverse("adjudicate", args=[p, w["t1"]]), {"relevance": "1", "reason": "x"}
        ),
        "page_submit_other": lambda: client.post(
            reverse("judge-submit", args=[p, w["t2"]]),
            {**BODY, "idempotency_key": "z"},
            HTTP_X_REQUESTED_WITH="fetch",
        ),
    }
    return ops[op]().status_code


# Expected status codes. "a" owns t1, t3 and j1; "b" shares the project and holds t2 (the
# "other" task, seen from a); the outsider is an annotator of no project; the other roles
# hold no annotator role.
EXPECTED = {
    #  op                        a    b    outsider lead archivist searcher norole
    "next":                    (200, 200, 404,     404, 404,      404,     404),
    "submit_own":              (201, 404, 404,     404, 404,      404,     404),
    "submit_other":            (404, 201, 404,     404, 404,      404,     404),
    "skip_other":              (404, 204, 404,     404, 404,      404,     404),
    "list":                    (200, 200, 404,     404, 404,      404,     404),
    "read_judgment_of_a":      (200, 404, 404,     404, 404,      404,     404),
    "edit_judgment_of_a":      (200, 404, 404,     404, 404,      404,     404),
    "progress":                (200, 200, 404,     200, 404,      404,     404),
    "page_judge":              (200, 200, 404,     404, 404,      404,     404),
    "page_history":            (200, 200, 404,     404, 404,      404,     404),
    "page_edit_judgment_of_a": (200, 404, 404,     404, 404,      404,     404),
    "page_dashboard":          (404, 404, 404,     200, 404,      404,     404),
    "agreement":               (404, 404, 404,     200, 404,      404,     404),
    "exports":                 (404, 404, 404,     200, 404,      404,     404),
    "export_qrels":            (404, 404, 404,     200, 404,      404,     404),
    "export_zip":              (404, 404, 404,     200, 404,      404,     404),
    "page_agreement":          (404, 404, 404,     200, 404,      404,     404),
    "page_export":             (404, 404, 404,     200, 404,      404,     404),
    "page_adjudicate":         (404, 404, 404,     302, 404,      404,     404),
    "page_submit_other":       (404, 200, 404,     404, 404,      404,     404),
}  # fmt: skip
WHO = ["a", "b", "outsider", "lead", "archivist", "searcher", "norole"]


@pytest.mark.parametrize("op", list(EXPECTED))
@pytest.mark.parametrize("who", WHO)
def test_annotation_authorisation_matrix(client, world, op, who):
    client.force_login(world[who])
    assert call(client, op, world) == EXPECTED[op][WHO.index(who)]


@pytest.mark.parametrize("op", list(EXPECTED))
def test_anonymous_callers_get_nothing(client, world, op):
    assert call(client, op, world) in (302, 403)


def test_lists_and_pages_show_only_own_work(client, world):
    client.force_login(world["b"])
    assert (
        client.get(reverse("api-judgment-list"), {"project": world["project"].slug}).json()[
            "results"
        ]
        == []
    )
    page = client.get(reverse("judging-history", args=[world["project"].slug])).content.decode()
    assert "No judgments yet." in page
    client.force_login(world["a"])
    mine = client.get(reverse("api-judgment-list"), {"project": world["project"].slug}).json()
    assert [j["id"] for j in mine["results"]] == [world["j1"].pk] and mine["count"] == 1
    # pages: at most the limit asked for, and a limit over the maximum is refused by name
    one = client.get(reverse("api-judgment-list"), {"project": world["project"].slug, "limit": 1})
    assert len(one.json()["results"]) == 1
    r = client.get(reverse("api-judgment-list"), {"project": world["project"].slug, "limit": 10**6})
    assert r.status_code == 400 and "limit" in r.json()["fields"]
