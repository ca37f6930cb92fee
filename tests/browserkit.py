"""Shared helpers for the browser tests: Debian's Chromium driven by Playwright."""

import os
import shutil
import time

import pytest

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
def browser():
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync API runs a loop
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
    """Poll a page expression from Python: the CSP forbids the eval of wait_for_function."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if page.evaluate(expression):
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {expression}")
