"""T7 (routes): every page and API operation x every role, compared with the expected table
kept in ``tests/route_matrix.csv``. A route added to the URL conf, or an operation to the
OpenAPI schema, without a row there fails the first test.

Outcomes: ``allow`` (the view ran: 2xx, 400 for a refused body, or a redirect that is not to
the login page), ``login`` (redirected to log in), ``deny`` (401 / 403 / 404 / 405).
Object-level isolation (annotator A against B's task, judgment, export) is in
``tests/annotate/test_judging_access.py``; withheld documents in ``tests/review/test_canary.py``.

Regenerate after a deliberate change with ``SASC_WRITE_ROUTE_MATRIX=1 pytest
tests/test_route_matrix.py`` and review the diff.
"""

import csv
import os
from pathlib import Path

import pytest
from django.urls import get_resolver, reverse

from annotate import roles
from annotate.models import Job
from review.models import SearchLog

pytestmark = pytest.mark.lucene
TABLE = Path(__file__).with_name("route_matrix.csv")
ROLES = ("anonymous", "annotator", "archivist", "searcher", "lead")
METHODS = ("GET", "POST")


def _routes() -> dict[str, tuple[str, list[str]]]:
    """name -> (pattern, keyword names) for every named route outside the admin site."""

    def walk(patterns, prefix=""):
        for p in patterns:
            if hasattr(p, "url_patterns"):
                if p.namespace != "admin":
                    yield from walk(p.url_patterns, prefix + str(p.pattern))
            elif p.name:
                yield p.name, (prefix + str(p.pattern), list(p.pattern.converters))

    return dict(walk(get_resolver().url_patterns))


def _api_methods() -> dict[str, set[str]]:
    """Route name -> the methods the OpenAPI schema documents for it."""
    import re

    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    names = {
        "/" + re.sub(r"<[^>]+>", "{}", pattern): name for name, (pattern, _k) in _routes().items()
    }
    out: dict[str, set[str]] = {}
    for path, operations in schema["paths"].items():
        key = re.sub(r"\{[^}]+\}", "{}", path)
        assert key in names, f"API operation on {path} is not a named route"
        out.setdefault(names[key], set()).update(m.upper() for m in operations)
    return out


def _methods(name: str, api: dict[str, set[str]]) -> list[str]:
    return sorted(set(METHODS) | api.get(name, set()))


def _table() -> dict[tuple[str, str], dict[str, str]]:
    if not TABLE.exists():
        return {}
    with TABLE.open(newline="") as f:
        return {(r["route"], r["method"]): r for r in csv.DictReader(f)}


def test_every_route_and_api_operation_has_a_row():
    if os.environ.get("SASC_WRITE_ROUTE_MATRIX"):
        pytest.skip("writing the table")
    api = _api_methods()
    assert sum(len(m) for m in api.values()) >= 15  # the schema was read
    expected = {(name, m) for name in _routes() for m in _methods(name, api)}
    table = set(_table())
    assert not expected - table, f"routes without a row: {sorted(expected - table)}"
    assert not table - expected, f"rows without a route: {sorted(table - expected)}"


@pytest.fixture
def world(published, make_project, users, make_user):
    """One object of every kind a route takes, all visible to the roles that should see them:
    the published collection, a project whose annotator has a task and a judgment, a job, a
    searcher's search, the persona."""
    from annotate import services
    from annotate.models import Judgment

    c, persona, docs, kinds = published
    project, (annotator, _b) = make_project(n_tasks=4)
    task = services.task_claim(user=annotator, project=project).task_id
    judgment, _ = services.judgment_submit(
        user=annotator,
        task_id=task,
        idempotency_key="matrix",
        answers=services.Answers(relevance=1, persona_sensitive="no", personal_sensitive="no"),
        active_seconds=1,
        started_at=Judgment._meta.get_field("started_at").to_python("2026-11-21T10:00:00Z"),
    )
    job = Job.objects.create(kind=Job.Kind.INDEX, collection=c, created_by=users["lead"])
    safe = next(d for d in docs if kinds[d.pk] == "safe")
    search = SearchLog.objects.create(
        searcher=users["searcher"],
        collection=c,
        persona=persona,
        query="x",
        shown=[safe.pk],
        created_at=job.created_at,
    )
    values = {
        "collection": c.slug,
        "project": project.slug,
        "task_id": task,
        "judgment_id": judgment.pk,
        "pk": safe.pk,
        "document_id": safe.pk,
        "persona_id": persona.pk,
        "search_id": search.pk,
        "plan_id": 1,
        "number": "1",
        "name": "qrels.txt",
        "job": job.pk,
    }
    who = {
        "anonymous": None,
        "annotator": annotator,
        "archivist": users["archivist"],
        "searcher": users["searcher"],
        "lead": users["lead"],
    }
    return values, who


def _url(name, pattern, kwargs, values) -> str:
    args = {}
    for k in kwargs:
        if k == "slug":
            project = pattern.startswith(("annotate/", "api/projects/"))
            args[k] = values["project" if project else "collection"]
        elif k == "pk" and name == "job-detail":
            args[k] = values["job"]
        elif k == "name" and name == "project-chart":
            args[k] = "relevant-per-topic"
        else:
            args[k] = values[k]
    query = f"?project={values['project']}" if name == "api-judgment-list" else ""
    return reverse(name, kwargs=args) + query


def _outcome(response) -> str:
    code = response.status_code
    if code >= 500:
        return f"error {code}"
    if code in (301, 302, 303, 307, 308):
        return "login" if "/accounts/login/" in response["Location"] else "allow"
    if code in (401, 403, 404, 405):
        return "deny"
    return "allow"


def test_every_role_gets_what_the_table_says(client, world):
    values, who = world
    routes = _routes()
    api = _api_methods()
    table = _table()
    write = bool(os.environ.get("SASC_WRITE_ROUTE_MATRIX"))
    rows, wrong = [], []
    for role in ROLES:
        client.logout()
        if who[role] is not None:
            client.force_login(who[role])
        for name, (pattern, kwargs) in sorted(routes.items()):
            if name in ("logout", "login"):
                continue
            url = _url(name, pattern, kwargs, values)
            for method in _methods(name, api):
                response = getattr(client, method.lower())(url, content_type="application/json")
                got = _outcome(response)
                assert not got.startswith("error"), (role, method, url, got)
                rows.append((name, method, role, got))
                want = table.get((name, method), {}).get(role)
                if not write and want != got:
                    wrong.append(f"{method} {url} as {role}: expected {want}, got {got}")
    if write:
        grid = {}
        for name, method, role, got in rows:
            grid.setdefault((name, method), {})[role] = got
        for name in ("login", "logout"):
            for method in _methods(name, api):
                grid[(name, method)] = {r: "allow" for r in ROLES}
        with TABLE.open("w", newline="") as f:
            out = csv.writer(f, lineterminator="\n")
            out.writerow(["route", "method", *ROLES])
            for (name, method), got in sorted(grid.items()):
                out.writerow([name, method, *(got[r] for r in ROLES)])
        pytest.skip(f"wrote {TABLE}")
    print(f"T7 routes: {len(rows)} requests, {len(wrong)} differ from the table")
    assert not wrong, "\n".join(wrong)


def test_the_roles_are_the_products_roles():
    assert set(ROLES) - {"anonymous"} == {
        roles.ANNOTATOR,
        roles.ARCHIVIST,
        roles.SEARCHER,
        roles.LEAD,
    }
