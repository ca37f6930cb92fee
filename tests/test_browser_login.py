"""The login throttling in Chromium at 1280x720 (issue 34 item 2): after an attacker's 50
failed logins with random names from the browser's own address, a fresh browser's page does
its puzzle by itself and the right password gets in; an account in back-off shows the wait.
Screenshots in docs/screenshots/login-*.png."""

import re
import time
from pathlib import Path

import pytest
from django.test import Client

from config import login as throttle
from tests.browserkit import needs_chromium, watch
from tests.test_login import attempt

pytestmark = needs_chromium
SHOTS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"


@pytest.fixture
def counts(settings):
    from django.core.cache import cache

    cache.clear()
    yield settings
    cache.clear()


def test_a_fresh_browser_gets_in_at_an_attacked_address_and_sees_a_throttled_account(
    browser, live_server, users, counts
):
    address = "127.0.0.1"  # the live server sees the browser at loopback
    counts.SASC_LOGIN_PUZZLE_BITS = 8  # the attacker's puzzles, solved by the test
    attacker = Client()
    for i in range(50):
        r = attempt(attacker, f"random{i}", "x", address=address)
        assert r.status_code == 200, i
    assert throttle.source_failures(address) == 50
    counts.SASC_LOGIN_PUZZLE_BITS = 18  # the default, for the page's own JavaScript

    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    events = []
    watch(page, live_server.url, events)
    # The page's own puzzle time, over a few loads (2**18 hashes expected each).
    times = []
    for _ in range(8):
        page.goto(f"{live_server.url}/accounts/login/")
        assert page.locator("form[data-puzzle-nonce]").count() == 1
        page.wait_for_selector("form[data-puzzle-solved='1']", state="attached")
        times.append(float(page.inner_text("#puzzle-status").split(" in ")[1].split(" s")[0]))
    print(f"18-bit puzzle in Chromium: mean {sum(times) / len(times):.2f} s, max {max(times)} s")
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "lead")
    page.fill("input[name=password]", "pw-for-tests-only")
    started = time.monotonic()
    page.click("button:has-text('Log in')")  # at once: the form waits for the puzzle
    page.wait_for_url(f"{live_server.url}/", timeout=60_000)
    took = time.monotonic() - started
    print(f"fresh browser at the attacked address: in after {took:.1f} s (18-bit puzzle)")
    context.close()

    # The searcher's account guessed five times: a fresh browser is told how long to wait.
    counts.SASC_LOGIN_PUZZLE_BITS = 8
    for _ in range(5):
        assert attempt(attacker, "search", "guess", address=address).status_code == 200
    counts.SASC_LOGIN_PUZZLE_BITS = 18
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    watch(page, live_server.url, events)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "search")
    page.fill("input[name=password]", "pw-for-tests-only")
    page.click("button:has-text('Log in')")
    page.wait_for_selector("p.error")
    shown = page.inner_text("p.error")
    assert re.match(r"Too many failed logins for this account; try again in \d+ seconds", shown)
    page.wait_for_selector("form[data-puzzle-solved='1']", state="attached")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "login-throttled.png"))
    context.close()
    # Nothing but Chromium noting the 429 page itself.
    assert [e for e in events if "status of 429" not in e] == [], events
