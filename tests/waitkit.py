"""Waiting on a condition, never for a fixed time.

``until(predicate, timeout)`` polls until the predicate holds and returns its value, or
fails naming what it waited for once the deadline passes. It polls quickly at first and
backs off, so a condition that already holds costs a few milliseconds and a slow machine
still gets the whole timeout: a test neither flakes when the machine is busy nor waits
longer than the condition needs. The browser tests' page expressions
(``tests.browserkit.wait_for``) and the worker tests' ``tests.workerkit.wait_for`` poll
through it.
"""

import time

FIRST_INTERVAL = 0.01
MAX_INTERVAL = 0.25


def until(predicate, timeout: float = 10.0, what=None, max_interval: float = MAX_INTERVAL):
    """Call ``predicate()`` until it returns something truthy and return that; raise
    ``AssertionError`` naming ``what`` (a text, or a function giving one when it fails,
    for what is known only then; by default the predicate) when ``timeout`` seconds pass.
    The predicate is always asked once more at the deadline."""
    deadline = time.monotonic() + timeout
    interval = FIRST_INTERVAL
    while True:
        value = predicate()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            named = what() if callable(what) else what or predicate
            raise AssertionError(f"timed out after {timeout:g} s waiting for {named}")
        time.sleep(min(interval, left))
        interval = min(interval * 2, max_interval)
