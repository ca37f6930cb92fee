"""T10 (RELIABILITY.md): schemathesis generates requests for every operation of the OpenAPI
schema, as every role, against gunicorn; no answer may be a 5xx or break the schema (status
code, content type, body)."""

from collections import Counter

from hypothesis import HealthCheck, given, settings

from tests.acceptance.stack import Browser, Figures

EXAMPLES = 25


def _fuzz(operation, role, http, headers, base_url, fig, violations) -> None:
    from schemathesis.checks import (
        content_type_conformance,
        not_a_server_error,
        response_schema_conformance,
        status_code_conformance,
    )

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy())
    def run(case):
        response = fig.timed(
            case.call, base_url=base_url, headers=headers, cookies=dict(http.cookies)
        )
        try:
            case.validate_response(
                response,
                checks=[
                    not_a_server_error,
                    status_code_conformance,
                    content_type_conformance,
                    response_schema_conformance,
                ],
            )
        except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - failure groups
            violations.append(
                f"{role} {operation.label} -> {response.status_code}: "
                f"{str(exc).splitlines()[0][:200]}"
            )

    run()


def test_t10_schemathesis_against_the_schema_per_role(storm_project, published, users, web):
    import requests
    import schemathesis

    project, annotators = storm_project
    fig = Figures(f"T10 schemathesis, {EXAMPLES} cases per operation and role")
    lead = Browser(web, users["lead"])
    raw = lead.get("/api/schema/", headers={"Accept": "application/vnd.oai.openapi+json"})
    assert raw.status_code == 200, raw.status_code
    schema = schemathesis.openapi.from_dict(raw.json())
    sessions = {
        "anonymous": None,
        "annotator": Browser(web, annotators[0]),
        "archivist": Browser(web, users["archivist"]),
        "searcher": Browser(web, users["searcher"]),
        "lead": lead,
    }
    violations: list[str] = []
    operations = 0
    for role, session in sessions.items():
        http = session or requests.Session()
        headers = {"X-CSRFToken": http.cookies.get("csrftoken", ""), "Referer": web.url + "/"}
        for result in schema.get_all_operations():
            operation = result.ok()
            operations += 1

            _fuzz(operation, role, http, headers, web.url, fig, violations)
    kinds = Counter(v.split(":")[0] for v in violations)
    fig.notes.update(operations_x_roles=operations, violations=len(violations))
    passed = fig.server_errors == 0 and not violations
    fig.done(passed)
    assert passed, "\n".join(f"{n} x {k}" for k, n in kinds.most_common(40))
