"""T7: every page and API operation x every role x the objects it takes (annotator A's or
annotator B's project, task and judgment; a document shown to the searcher or one an
archivist withheld), compared with the expected table kept in ``tests/route_matrix.csv``. A
route added to the URL conf, or an operation to the OpenAPI schema, without rows there fails
the first test.

Outcomes: ``allow`` (the view ran: 2xx, or a redirect that is not to the login page),
``login`` (redirected to log in), ``deny`` (401 / 403 / 404 / 405), ``refuse N`` (another 4xx:
the view reached the object and refused what was asked, e.g. 409 already judged). API writes
are sent with valid bodies, so that the object is looked up.
Variants: ``-`` (the route takes no object that belongs to someone), ``a`` / ``b`` (the
project, task or judgment of annotator A / B, each in a project of their own), ``shown`` /
``withheld`` (a document the searcher was shown / one an archivist withheld, which is also
predicted sensitive). Roles: anonymous, annotator A, annotator B, archivist, searcher, lead.

Regenerate after a deliberate change with ``SASC_WRITE_ROUTE_MATRIX=1 pytest
tests/test_route_matrix.py`` and review the diff.
"""

import csv
import html
import os
from pathlib import Path

import pytest
from django.urls import reverse

from annotate import roles
from annotate.models import Job
from review.models import SearchLog
from tests.acceptance.stack import report
from tests.routekit import named_routes
from tests.stormkit import BODY

pytestmark = pytest.mark.lucene
TABLE = Path(__file__).with_name("route_matrix.csv")
ROLES = ("anonymous", "annotator_a", "annotator_b", "archivist", "searcher", "lead")
PROJECT_KEYS = {"task_id", "judgment_id"}
# Valid bodies, so that "allow" means the view acted on the object, not that it refused the
# body before looking the object up.
BODIES = {
    ("api-judgment-submit", "POST"): BODY,
    ("api-judgment-edit", "PATCH"): {**BODY, "relevance": 2, "version": 1},
    ("api-task-skip", "POST"): {"reason": "matrix"},
}
DOCUMENT_KEYS = {"document_id"}
METHODS = ("GET", "POST")


def _api_methods() -> dict[str, set[str]]:
    """Route name -> the methods the OpenAPI schema documents for it."""
    import re

    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    names = {
        "/" + re.sub(r"<[^>]+>", "{}", pattern): name
        for name, (pattern, _k) in named_routes(admin=False).items()
    }
    out: dict[str, set[str]] = {}
    for path, operations in schema["paths"].items():
        key = re.sub(r"\{[^}]+\}", "{}", path)
        assert key in names, f"API operation on {path} is not a named route"
        out.setdefault(names[key], set()).update(m.upper() for m in operations)
    return out


def _methods(name: str, api: dict[str, set[str]]) -> list[str]:
    return sorted(set(METHODS) | api.get(name, set()))


def _variants(name: str, pattern: str, kwargs: list[str]) -> list[str]:
    """Whose objects the route is asked about."""
    if set(kwargs) & DOCUMENT_KEYS or ("document" in name and "pk" in kwargs):
        return ["shown", "withheld"]
    if set(kwargs) & PROJECT_KEYS or (
        "slug" in kwargs and pattern.startswith(("annotate/", "api/projects/"))
    ):
        return ["a", "b"]
    return ["-"]


def _rows(api) -> set[tuple[str, str, str]]:
    return {
        (name, method, variant)
        for name, (pattern, kwargs) in named_routes(admin=False).items()
        for method in _methods(name, api)
        for variant in _variants(name, pattern, kwargs)
    }


def _table() -> dict[tuple[str, str], dict[str, str]]:
    if not TABLE.exists():
        return {}
    with TABLE.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return {(r["route"], r["method"], r.get("variant", "-")): r for r in rows}


def test_every_route_and_api_operation_has_a_row():
    if os.environ.get("SASC_WRITE_ROUTE_MATRIX"):
        pytest.skip("writing the table")
    api = _api_methods()
    assert sum(len(m) for m in api.values()) >= 15  # the schema was read
    expected = _rows(api)
    table = set(_table())
    assert not expected - table, f"routes without a row: {sorted(expected - table)}"
    assert not table - expected, f"rows without a route: {sorted(table - expected)}"


@pytest.fixture
def world(published, make_project, users):
    """Annotator A and annotator B, each with a project, a task and a judgment of their own;
    the published collection with a document shown to the searcher and one withheld; a job,
    a search, the persona."""
    from annotate import judgments
    from annotate.models import Judgment
    from review import releases

    c, persona, docs, kinds = published
    mine = {}
    for side in ("a", "b"):
        project, (annotator,) = make_project(annotators=1, n_tasks=3, name=f"Side{side}")
        task = judgments.task_claim(user=annotator, project=project).task_id
        judgment, _ = judgments.judgment_submit(
            user=annotator,
            task_id=task,
            idempotency_key=f"matrix-{side}",
            answers=judgments.Answers(relevance=1, persona_sensitive="no", personal_sensitive="no"),
            active_seconds=1,
            started_at=Judgment._meta.get_field("started_at").to_python("2026-11-21T10:00:00Z"),
        )
        judgments.task_claim(user=annotator, project=project)  # a live lease too
        mine[side] = {
            "project": project.slug,
            "task_id": task,
            "judgment_id": judgment.pk,
            "user": annotator,
        }
    job = Job.objects.create(kind=Job.Kind.INDEX, collection=c, created_by=users["lead"])
    shown = next(d for d in docs if kinds[d.pk] == "safe")
    withheld = next(d for d in docs if kinds[d.pk] == "sensitive")
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=withheld, kind="withhold"
    )
    search = SearchLog.objects.create(
        searcher=users["searcher"],
        collection=c,
        persona=persona,
        query="x",
        shown=[shown.pk],
        created_at=job.created_at,
    )
    from review import release_audits

    opened = release_audits.release_audit_open(
        publication=c.publication, user=users["lead"], margin=0.2, confidence=0.95
    )
    common = {
        "audit_id": opened.pk,
        "collection": c.slug,
        "persona_id": persona.pk,
        "search_id": search.pk,
        "plan_id": 1,
        "number": "1",
        "name": "qrels.txt",
        "job": job.pk,
    }
    values = {
        "-": {**common, **mine["a"], "pk": shown.pk, "document_id": shown.pk},
        "a": {**common, **mine["a"], "pk": shown.pk, "document_id": shown.pk},
        "b": {**common, **mine["b"], "pk": shown.pk, "document_id": shown.pk},
        "shown": {**common, **mine["a"], "pk": shown.pk, "document_id": shown.pk},
        "withheld": {**common, **mine["a"], "pk": withheld.pk, "document_id": withheld.pk},
    }
    who = {
        "anonymous": None,
        "annotator_a": mine["a"]["user"],
        "annotator_b": mine["b"]["user"],
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
    if code >= 400:  # the view found the object and refused the request (409, 422, ...)
        return f"refuse {code}"
    return "allow"


# What a GET may write: the audit log (an access record of what was viewed, G9) and the
# session (a page's display preferences). Nothing else: no search, request, claim or job.
GET_MAY_WRITE = {"review.auditevent", "sessions.session"}


def _state() -> str:
    """A digest of every row of every other table."""
    import hashlib

    from django.apps import apps

    digest = hashlib.sha256()
    for model in sorted(apps.get_models(), key=lambda m: m._meta.label_lower):
        if model._meta.label_lower in GET_MAY_WRITE or not model._meta.managed:
            continue
        digest.update(model._meta.label_lower.encode())
        digest.update(repr(list(model.objects.order_by("pk").values_list())).encode())
    return digest.hexdigest()


def _as_each_role(client, who):
    """Yield every (role, route name, pattern, keyword names), logged in as that role;
    login and logout are left out (they change who is logged in)."""
    routes = named_routes(admin=False)
    for role in ROLES:
        client.logout()
        if who[role] is not None:
            client.force_login(who[role])
        for name, (pattern, kwargs) in sorted(routes.items()):
            if name not in ("logout", "login"):
                yield role, name, pattern, kwargs


def test_every_role_gets_what_the_table_says(client, world):
    values, who = world
    api = _api_methods()
    table = _table()
    write = bool(os.environ.get("SASC_WRITE_ROUTE_MATRIX"))
    rows, wrong, changed = [], [], []
    for role, name, pattern, kwargs in _as_each_role(client, who):
        for variant in _variants(name, pattern, kwargs):
            url = _url(name, pattern, kwargs, values[variant])
            for method in _methods(name, api):
                before = _state() if method == "GET" else None
                response = getattr(client, method.lower())(
                    url,
                    BODIES.get((name, method), {}),
                    content_type="application/json",
                    HTTP_IDEMPOTENCY_KEY=f"matrix-{role}-{name}-{variant}",
                )
                got = _outcome(response)
                assert not got.startswith("error"), (role, method, url, got)
                if before is not None and _state() != before:
                    changed.append(f"GET {url} as {role} changed the database")
                rows.append((name, method, variant, role, got))
                want = table.get((name, method, variant), {}).get(role)
                if not write and want != got:
                    wrong.append(
                        f"{method} {url} ({variant}) as {role}: expected {want}, got {got}"
                    )
    if write:
        grid = {}
        for name, method, variant, role, got in rows:
            grid.setdefault((name, method, variant), {})[role] = got
        for name in ("login", "logout"):
            for method in _methods(name, api):
                grid[(name, method, "-")] = {r: "allow" for r in ROLES}
        with TABLE.open("w", newline="") as f:
            out = csv.writer(f, lineterminator="\n")
            out.writerow(["route", "method", "variant", *ROLES])
            for key, got in sorted(grid.items()):
                out.writerow([*key, *(got[r] for r in ROLES)])
        pytest.skip(f"wrote {TABLE}")
    gets = sum(1 for row in rows if row[1] == "GET")
    report(
        "T7 authorisation matrix",
        not wrong and not changed,
        f"{len(rows)} requests over {len(table)} rows x {len(ROLES)} roles, "
        f"{len(wrong)} differ from the table; {len(changed)} of {gets} GETs changed state "
        "(beyond the audit log and the session)",
    )
    assert not wrong, "\n".join(wrong)
    assert not changed, "\n".join(changed)


def test_the_roles_are_the_products_roles():
    assert {r.removesuffix("_a").removesuffix("_b") for r in ROLES} - {"anonymous"} == {
        roles.ANNOTATOR,
        roles.ARCHIVIST,
        roles.SEARCHER,
        roles.LEAD,
    }


HOSTILE = {
    "topic": "99999999999999999999",
    "round": "²",
    "persona": "99999999999999999999",
    "have": "²",
    "held": "99999999999999999999",
    "version": "²",
    "relevance": "99999999999999999999",
    "page": "99999999999999999999",
    "project": "99999999999999999999",
    # The list APIs' pages, the loop report's numbers, the judging page's timer, a depth.
    "limit": "²",
    "offset": "-1",
    "k": "99999999999999999999",
    "effort": "nan",
    "cost": "inf",
    "active_seconds": "nan",
    "depth": "99999999999999999999",
}


def test_hostile_numbers_in_any_parameter_are_refused_never_a_server_error(client, world):
    """Every route, method and role with numbers no id can hold, or that only look like
    digits ("²"), in the query string and the body, and OPTIONS on every route: a 4xx, a page
    without that filter or a redirect, never a 500 (issue 21: 14 endpoints and OPTIONS on
    the API docs answered 500)."""
    from urllib.parse import urlencode

    values, who = world
    api = _api_methods()
    errors = []
    for role, name, pattern, kwargs in _as_each_role(client, who):
        url = _url(name, pattern, kwargs, values["a"])
        url += ("&" if "?" in url else "?") + urlencode(HOSTILE)
        for method in [*_methods(name, api), "OPTIONS"]:
            response = getattr(client, method.lower())(
                url, HOSTILE, HTTP_IDEMPOTENCY_KEY=f"hostile-{role}-{name}-{method}"
            )
            if response.status_code >= 500:
                errors.append(f"{method} {url} as {role}: {response.status_code}")
    assert errors == []


def test_a_nul_character_in_any_parameter_is_a_400_naming_it(client, world):
    """Free text (comments, notes, reasons, searches) with NUL: PostgreSQL refuses to store
    it, which was a 500 wherever a view read ``request.POST`` itself."""
    values, who = world
    for role, name, pattern, kwargs in _as_each_role(client, who):
        url = _url(name, pattern, kwargs, values["a"])
        for method in ("get", "post"):
            response = getattr(client, method)(url, {"note": "a\x00b"})
            assert response.status_code == 400, (role, method, url)
            page = html.unescape(response.content.decode())
            assert "'note' holds a NUL character" in page
            # A page of the site, with its way back, not a bare text.
            assert response["Content-Type"].startswith("text/html") and "Back to the start" in page
        break  # one role and route shows the middleware; it runs before any view


def test_report_numbers_that_are_not_finite_fall_back_to_the_default(rf):
    from review.views import _number

    for raw, expected in (("nan", 0.1), ("inf", 0.1), ("-inf", 0.1), ("500", 100.0), ("2.5", 2.5)):
        request = rf.get("/", {"effort": raw})
        assert _number(request, "effort", 0.1, float, 0.0, 100.0) == expected, raw


@pytest.mark.parametrize("huge", ["99999999999999999999", "2147483648", "9223372036854775808"])
def test_an_id_in_a_path_no_row_can_have_is_a_404_for_every_role(client, world, huge):
    """Ids in paths go through ``core.params.IdConverter``: one no integer column can hold
    matches no route (``<int:...>`` let it reach the views, and the searcher's document page
    and the skip and resume actions answered 500)."""
    import re

    values, who = world
    api = _api_methods()
    checked, errors = 0, []
    for role, name, pattern, kwargs in _as_each_role(client, who):
        if "<id:" not in pattern:
            continue
        # the route's real URL, then each id segment replaced by the huge number
        real = _url(name, pattern, kwargs, values["a"]).split("?")[0].strip("/").split("/")
        parts = pattern.strip("/").split("/")
        path = (
            "/"
            + "/".join(
                huge if part.startswith("<id:") else seg
                for part, seg in zip(parts, real, strict=True)
            )
            + "/"
        )
        assert re.search(rf"/{huge}/", path), path
        for method in [*_methods(name, api), "OPTIONS"]:
            response = getattr(client, method.lower())(path, HTTP_IDEMPOTENCY_KEY=f"huge-{huge}")
            checked += 1
            if response.status_code != 404:
                errors.append(f"{method} {path} as {role}: {response.status_code}")
    assert checked > 100 and errors == []


# Every method a page or an API might be sent; OPTIONS is left to Django (class views answer
# it with their Allow header) and to DRF.
EVERY_METHOD = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
# Who asks, first that the table lets in: so a 405 is not hidden behind a login or a 404.
ASKERS = ("lead", "archivist", "searcher", "annotator_a")


def _served(name: str, table) -> set[str]:
    """The methods the table says reach the view for some role (any outcome but ``deny``:
    the view ran, refused after looking, or sent the anonymous visitor to log in); HEAD goes
    with GET."""
    served = {
        method
        for (route, method, _variant), row in table.items()
        if route == name and any(row[r] != "deny" for r in ROLES)
    }
    if name == "logout":  # the table lets everyone log in and out; Django logs out on POST
        served = {"POST"}
    return served | ({"HEAD"} if "GET" in served else set())


def _asker(name: str, variant: str, served: set[str], table) -> str:
    """The first of ``ASKERS`` the table lets in on the route; the lead where no one is (the
    learning plan's actions on a plan the world does not have: 404 after the method check)."""
    for role in ASKERS:
        outcomes = [table[(name, m, variant)][role] for m in served if (name, m, variant) in table]
        if any(o == "allow" or o.startswith("refuse") for o in outcomes):
            return role
    return "lead"


def test_every_route_answers_405_with_allow_to_the_methods_it_does_not_serve(client, world):
    """Issue 34: PUT, PATCH and DELETE on page views answered 200 (114 cases on 21 routes).
    Every route, pages and API alike, is asked every method it does not serve, by a role
    the table lets in, and must answer 405 naming the methods it does serve in ``Allow``."""
    values, who = world
    table = _table()
    routes = named_routes(admin=False)
    wrong, asked = [], 0
    for name, (pattern, kwargs) in sorted(routes.items()):
        served = _served(name, table)
        assert served, f"{name}: no method of it lets anyone in; the table is stale"
        variant = _variants(name, pattern, kwargs)[0]
        role = _asker(name, variant, served, table)
        client.logout()
        client.force_login(who[role])
        url = _url(name, pattern, kwargs, values[variant])
        for method in sorted(set(EVERY_METHOD) - served):
            asked += 1
            response = client.generic(method, url, HTTP_IDEMPOTENCY_KEY=f"405-{name}-{method}")
            allow = {m.strip() for m in response.get("Allow", "").split(",") if m.strip()}
            if response.status_code != 405 or not served <= allow or method in allow:
                wrong.append(
                    f"{method} {url} as {role}: {response.status_code}, "
                    f"Allow {sorted(allow)}, serves {sorted(served)}"
                )
    assert asked > 150
    assert not wrong, f"{len(wrong)} of {asked}:\n" + "\n".join(wrong)
