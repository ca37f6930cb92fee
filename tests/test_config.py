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
