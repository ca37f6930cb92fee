import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.env import ConfigError, env_bool, env_int, env_list

ROOT = Path(__file__).parents[1]


def test_env_helpers_read_and_refuse(monkeypatch):
    monkeypatch.setenv("X_BOOL", "yes")
    monkeypatch.setenv("X_INT", "12")
    monkeypatch.setenv("X_LIST", " a, b ,,c ")
    assert env_bool("X_BOOL") is True
    assert env_int("X_INT", 1, minimum=1) == 12
    assert env_list("X_LIST") == ["a", "b", "c"]
    monkeypatch.setenv("X_BOOL", "maybe")
    with pytest.raises(ConfigError, match="X_BOOL='maybe' is not a boolean"):
        env_bool("X_BOOL")
    monkeypatch.setenv("X_INT", "0")
    with pytest.raises(ConfigError, match="X_INT=0 must be at least 1"):
        env_int("X_INT", 1, minimum=1)
    monkeypatch.setenv("X_INT", "ten")
    with pytest.raises(ConfigError, match="is not an integer"):
        env_int("X_INT", 1)


def _run(*args, env=None, **kwargs):
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        **kwargs,
    )


def test_bad_database_url_fails_loudly():
    out = _run("check", env={"DATABASE_URL": "nosuchdb://x"})
    assert out.returncode != 0
    assert "DATABASE_URL is not usable" in out.stderr


def test_a_bad_jvm_heap_stops_start_up_and_a_good_one_reaches_lucene():
    out = _run("check", env={"SASC_JVM_HEAP": "lots"})
    assert out.returncode != 0 and "SASC_JVM_HEAP='lots' is not a heap size" in out.stderr
    out = _run(
        "shell",
        "-c",
        "from core import lucene; print(lucene._jvm['heap'])",
        env={"SASC_JVM_HEAP": "768m"},
        check=True,
    )
    assert out.stdout.strip().endswith("768m")


def test_production_needs_a_secret_key():
    out = _run("check", env={"SASC_PRODUCTION": "1", "SECRET_KEY": ""})
    assert out.returncode != 0 and "SECRET_KEY must be set" in out.stderr


def test_manage_py_check_passes():
    # Its start-up time is measured by bench/startup.py, not asserted here.
    assert "no issues" in _run("check", check=True).stdout


def test_celery_accepts_json_only():
    from config.celery import app

    assert app.conf.accept_content == ["json"]
    assert app.conf.task_serializer == "json"
    assert app.conf.task_acks_late is True


def _production(**extra):
    import secrets

    return {
        "SASC_PRODUCTION": "1",
        "SECRET_KEY": secrets.token_urlsafe(60),
        "ALLOWED_HOSTS": "sasc.example.org",
        **extra,
    }


def test_production_settings_pass_the_deploy_checks():
    ok = _run(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        env=_production(CACHE_URL="redis://:secret@127.0.0.1:6379/1"),
    )
    assert ok.returncode == 0, ok.stderr + ok.stdout
    # Without a shared cache the login limit would count per process: a warning fails it.
    local = _run("check", "--deploy", "--fail-level", "WARNING", env=_production())
    assert local.returncode != 0 and "sasc.W001" in local.stderr + local.stdout
    from tests.acceptance.stack import report

    report(
        "T12 production settings",
        True,
        "check --deploy --fail-level WARNING: 0 issues (and sasc.W001 without a shared cache); "
        "headers, JSON-only Celery and the login limit in the tests beside it",
    )


def test_security_headers_on_every_response(client, settings, db):
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_SSL_REDIRECT = False
    for url in ("/accounts/login/", "/health/", "/no-such-page/"):
        r = client.get(url, secure=True)
        assert r["Strict-Transport-Security"].startswith("max-age=31536000"), url
        csp = r["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp, url
        assert "object-src 'none'" in csp and "frame-ancestors 'none'" in csp, url
        assert r["X-Content-Type-Options"] == "nosniff", url
        assert r["Referrer-Policy"] == "same-origin", url
        assert r["X-Frame-Options"] == "DENY", url


def test_the_forwarded_header_is_believed_from_trusted_proxies_only(settings, rf):
    from config.login import client_address

    settings.SASC_TRUSTED_PROXIES = ["10.0.0.0/8", "::1"]

    def address(remote, forwarded=None):
        request = rf.get("/", REMOTE_ADDR=remote)
        if forwarded is not None:
            request.META["HTTP_X_FORWARDED_FOR"] = forwarded
        return client_address(request)

    assert address("203.0.113.5", "1.2.3.4") == "203.0.113.5"  # a client forging it
    assert address("10.0.0.1", "198.51.100.7") == "198.51.100.7"
    # The client's own claim left of its real address is not believed; chained proxies are.
    assert address("10.0.0.1", "6.6.6.6, 198.51.100.7, 10.0.0.9") == "198.51.100.7"
    assert address("10.0.0.1", "") == "10.0.0.1"
    assert address("10.0.0.1", "junk, 10.0.0.2") == "10.0.0.2"
    assert address("::1", "2001:db8::1") == "2001:db8::1"


def test_a_bad_trusted_proxy_setting_is_named():
    env = {**os.environ, "SASC_TRUSTED_PROXIES": "10.0.0.0/8,proxy.local"}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os; "
            "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); django.setup()",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[1],
    )
    assert out.returncode != 0 and "SASC_TRUSTED_PROXIES: 'proxy.local'" in out.stderr


def test_an_unreachable_database_answers_503_with_retry_after(rf, db):
    from django.db import InterfaceError, OperationalError

    from config.middleware import DatabaseUnavailableMiddleware

    middleware = DatabaseUnavailableMiddleware(lambda request: None)
    api = middleware.process_exception(rf.post("/api/tasks/1/judgment/"), OperationalError("x"))
    assert api.status_code == 503 and api["Retry-After"] == "5"
    assert b'"code": "unavailable"' in api.content
    page = middleware.process_exception(rf.get("/annotate/"), InterfaceError("closed"))
    assert page.status_code == 503 and b"try again" in page.content
    assert middleware.process_exception(rf.get("/"), ValueError("other")) is None


def test_gunicorn_holds_idle_connections_longer_than_a_proxy_does():
    # gunicorn's default keep-alive (2 s) reset a request of T1's claim storm in CI: a client
    # reused an idle connection as the server closed it. nginx keeps upstream ones 60 s.
    import runpy

    settings = runpy.run_path(str(Path(__file__).parents[1] / "config" / "gunicorn.py"))
    assert settings["keepalive"] > 60 and settings["worker_class"] == "gthread"


def test_the_sqlite_quickstart_writes_beside_readers_and_takes_the_write_lock_at_begin(tmp_path):
    # WAL: readers never wait for the writer; BEGIN IMMEDIATE: a transaction that will write
    # queues on the busy timeout at its start instead of failing when a read upgrades.
    code = (
        "from django.db import connection, transaction\n"
        "with transaction.atomic():\n"
        "    c = connection.cursor(); c.execute('PRAGMA journal_mode'); mode = c.fetchone()[0]\n"
        "    c.execute('PRAGMA busy_timeout'); timeout = c.fetchone()[0]\n"
        "print(mode, timeout, connection.transaction_mode)\n"
    )
    out = _run(
        "shell",
        "-c",
        code,
        env={
            "SASC_VAR_DIR": str(tmp_path),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        },
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1].split() == ["wal", "30000", "IMMEDIATE"]


def test_error_pages_lead_back_and_say_nothing_of_what_is_there(client, django_user_model):
    """404 and 403 in the app's frame with a way back; the 500 page renders with no context
    (Django gives it none); none of them repeats the exception's text."""
    from django.template.loader import render_to_string

    user = django_user_model.objects.create_user("someone", password="pw")
    client.force_login(user)
    r = client.get("/jobs/2147483647/")
    body = r.content.decode()
    assert r.status_code == 404 and "Back to the start page" in body and 'class="top"' in body
    assert "matches the given query" not in body and "No Job" not in body
    page = render_to_string("500.html")
    assert "Something went wrong" in page and 'href="/"' in page
