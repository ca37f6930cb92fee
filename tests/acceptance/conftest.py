"""The acceptance stack as fixtures; each scenario's figures are printed again at the end."""

import os

import pytest

from tests.acceptance.stack import RESULTS, Web
from tests.conftest import ON_POSTGRES
from tests.workerkit import Worker


def pytest_collection_modifyitems(config, items):
    needs = "DATABASE_URL (PostgreSQL) and REDIS_URL (Redis): make acceptance"
    have = ON_POSTGRES and os.environ.get("REDIS_URL")
    for item in items:
        if "tests/acceptance/" in str(item.fspath):
            item.add_marker(pytest.mark.acceptance)
            if not have:
                item.add_marker(pytest.mark.skip(reason=f"needs {needs}"))


@pytest.fixture
def web(worker_env, tmp_path):
    """gunicorn 2 x 4 on the test database."""
    server = Web({**worker_env, "GUNICORN_ACCESS_LOG": ""}, tmp_path / "gunicorn.log").start()
    yield server
    server.stop()


@pytest.fixture
def worker(worker_env, tmp_path):
    w = Worker(tmp_path / "worker.log", worker_env).start()
    yield w
    w.stop()


def pytest_terminal_summary(terminalreporter):
    if RESULTS:
        terminalreporter.section("acceptance scenarios")
        for r in RESULTS:
            terminalreporter.write_line(r["line"])
