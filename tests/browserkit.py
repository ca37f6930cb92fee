"""Shared helpers for the browser tests: Debian's Chromium driven by Playwright."""

import os
import shutil

import pytest

from tests.waitkit import until

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# The flags this machine kind needs: no sandbox as root, and no background network traffic
# (the machine has no network; Chromium would keep trying).
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
needs_chromium = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium is not installed"),
]


@pytest.fixture
def browser(monkeypatch):
    # Playwright's sync API runs a loop; only for this test (a later `check --deploy` in a
    # subprocess would inherit it and refuse it).
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def watch(page, origin: str, events: list) -> None:
    """Record dialogs, console messages, page errors and requests leaving the origin."""
    page.on("dialog", lambda d: (events.append(f"dialog {d.message}"), d.dismiss()))
    page.on("console", lambda m: events.append(f"console {m.type}: {m.text}"))
    page.on("pageerror", lambda e: events.append(f"pageerror {e}"))
    page.on(
        "request",
        lambda r: (
            None if r.url.startswith((origin, "data:")) else events.append(f"request {r.url}")
        ),
    )


def login(page, url: str, username: str, password: str) -> None:
    page.goto(f"{url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button:has-text('Log in')")
    page.wait_for_url(f"{url}/")


def wait_for(page, expression: str, timeout: float = 10.0) -> None:
    """Poll a page expression from Python (``tests.waitkit.until``): the CSP forbids the
    eval of wait_for_function."""
    until(lambda: page.evaluate(expression), timeout, expression)


def judge_by_keyboard(page, answers, stored) -> list[int]:
    """On an open judging page, judge one task per entry of ``answers`` (the keys to press,
    then Enter) and return the task ids judged.

    The page saves in the background and its save status may still show the previous save,
    so this waits until ``stored()`` (the judgments the server holds) reaches the count.
    """
    seen = []
    for keys in answers:
        page.wait_for_selector("#current section.task")
        task_id = page.evaluate("document.querySelector('#current section.task').dataset.taskId")
        seen.append(int(task_id))
        for key in keys:
            page.keyboard.press(key)
        page.keyboard.press("Enter")
        wait_for(
            page,
            f"(document.querySelector('#current section.task')?.dataset.taskId ?? '') "
            f"!== '{task_id}'",
        )
    until(lambda: _count(stored) >= len(answers), 15, f"{len(answers)} saves to arrive")
    wait_for(page, "!document.getElementById('save-status').textContent.includes('Saving')")
    return seen


def _count(stored) -> int:
    from django.db import OperationalError

    try:
        return stored()
    except OperationalError:
        # The test database is SQLite in memory, where a read that meets the server's write
        # fails at once ("table is locked") instead of waiting: ask again.
        return -1


@pytest.fixture
def audit_log_emptied(transactional_db):
    """Let a live-server test on SQLite write audit rows (edits, adjudications, exports);
    every such test gets it (``tests/conftest.py``).

    The append-only trigger refuses the DELETE with which such a test empties an SQLite
    database afterwards (PostgreSQL empties with TRUNCATE). Torn down before that flush: lift
    the delete trigger, remove this test's rows, and put the trigger back as it was.
    """
    yield
    from importlib import import_module

    from django.db import connection

    if connection.vendor != "sqlite":
        return
    create = import_module("review.migrations.0001_initial").APPEND_ONLY["sqlite"][1]
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER IF EXISTS review_auditevent_no_delete")
        cursor.execute("DELETE FROM review_auditevent")
        cursor.execute(create)
