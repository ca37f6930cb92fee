"""The demo's process supervisor: every process it started, and their children, stop with it.

Real processes throughout: a driver script runs a Supervisor over children that fork a
grandchild (as gunicorn forks its workers and Celery its pool) and then leave it behind when
they get SIGTERM, or ignore SIGTERM altogether (a task that does not finish). The driver is
then signalled the ways a user stops the demo, and no process of the tree may survive.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from config.demo.supervisor import LineFilter
from tests.waitkit import until

ROOT = Path(__file__).resolve().parents[1]

# A child that forks a grandchild and, on SIGTERM, exits at once without stopping it; in
# "stubborn" mode both ignore SIGTERM.
CHILD = textwrap.dedent(
    """
    import os, signal, sys, time
    stubborn = sys.argv[1] == "stubborn"
    if os.fork() == 0:
        if stubborn:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:  # the grandchild idles until it is killed
            time.sleep(1)
    signal.signal(signal.SIGTERM, signal.SIG_IGN if stubborn else lambda *a: os._exit(0))
    print("2026-11-23 10:00:00,000 INFO child: started", flush=True)
    print("2026-11-23 10:00:00,001 ERROR child: something broke", flush=True)
    print("Traceback (most recent call last):", flush=True)
    print("ValueError: boom", flush=True)
    print("2026-11-23 10:00:00,002 INFO child: carrying on", flush=True)
    while True:
        time.sleep(1)
    """
)

DRIVER = textwrap.dedent(
    """
    import json, sys
    from config.demo.supervisor import Stop, Supervisor
    log_dir, child, modes = sys.argv[1], sys.argv[2], sys.argv[3:]
    with Supervisor(log_dir, stop_timeout=3) as sup:
        try:
            for i, mode in enumerate(modes):
                sup.start(f"p{i}", [sys.executable, "-c", child, mode])
            print("PIDS", json.dumps([c.proc.pid for c in sup.children]), flush=True)
            sup.watch(interval=0.1)
        except Stop as stop:
            print("stopping on", stop, flush=True)
    print("stopped", flush=True)
    """
)


def _descendants(root: int) -> list[int]:
    """Live (non-zombie) descendants of ``root``, by parent pid."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            parents[int(entry.name)] = int(fields[1])
    out, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        kids = [child for child, parent in parents.items() if parent == pid]
        out += kids
        frontier += kids
    return out


def _start_driver(tmp_path, modes):
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(tmp_path / "log"), CHILD, *modes],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        # Its own group, as `make demo` has in a terminal, so the test can signal the group.
        start_new_session=True,
    )
    # The supervisor relays the children's errors to the same stdout, and a child may log
    # before the driver prints its pids: read up to the marked line.
    while not (line := driver.stdout.readline()).startswith("PIDS "):
        assert line, "the driver stopped before starting its children"
    json.loads(line.removeprefix("PIDS "))
    logs = [tmp_path / "log" / f"p{i}.log" for i in range(len(modes))]

    def started():
        """Every child has forked its grandchild and logged its lines: the tree."""
        tree = _descendants(driver.pid)
        logged = all(log.exists() and "carrying on" in log.read_text() for log in logs)
        return tree if len(tree) == 2 * len(modes) and logged else None

    # A loaded machine starts Python slowly: up to 30 s.
    tree = until(started, 30, "children and grandchildren to start")
    return driver, tree


def _survivors(tree, timeout):
    """The processes of ``tree`` still alive once they all ended or ``timeout`` passed."""

    def alive():
        return [pid for pid in tree if Path(f"/proc/{pid}").exists() and not _zombie(pid)]

    with contextlib.suppress(AssertionError):  # the caller names the survivors
        until(lambda: not alive(), timeout)
    return alive()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
@pytest.mark.parametrize(
    "how",
    ["SIGTERM to the demo alone", "SIGINT to the demo alone", "Ctrl-C", "SIGTERM to the group"],
)
def test_no_process_survives_the_demo_being_stopped(tmp_path, how):
    driver, tree = _start_driver(tmp_path, ["leaves-child", "stubborn"])
    try:
        if how == "SIGTERM to the demo alone":
            os.kill(driver.pid, signal.SIGTERM)
        elif how == "SIGINT to the demo alone":
            os.kill(driver.pid, signal.SIGINT)
        elif how == "Ctrl-C":  # the terminal sends SIGINT to the foreground group
            os.killpg(driver.pid, signal.SIGINT)
        else:
            os.killpg(driver.pid, signal.SIGTERM)
        out, _ = driver.communicate(timeout=30)
        assert "stopped" in out
        # The stubborn child and its grandchild take stop_timeout (3 s) and then SIGKILL.
        assert _survivors(tree, timeout=5) == []
    finally:
        for pid in tree:
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, signal.SIGKILL)
        if driver.poll() is None:
            driver.kill()


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_children_stop_when_the_demo_is_killed_outright(tmp_path):
    """SIGKILL cannot be handled: each child gets SIGTERM from the kernel (PDEATHSIG)."""
    driver, tree = _start_driver(tmp_path, ["leaves-child"])
    children = [pid for pid in tree if int(_ppid(pid)) == driver.pid]
    try:
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=10)
        assert _survivors(children, timeout=5) == []
    finally:
        for pid in tree:
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, signal.SIGKILL)


def _ppid(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]


def test_warnings_reach_the_console_with_their_traceback_and_info_stays_in_the_log(tmp_path):
    driver, tree = _start_driver(tmp_path, ["leaves-child"])
    try:
        os.kill(driver.pid, signal.SIGTERM)
        out, _ = driver.communicate(timeout=30)
    finally:
        for pid in tree:
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, signal.SIGKILL)
    assert "[p0] 2026-11-23 10:00:00,001 ERROR child: something broke" in out
    assert "[p0] Traceback (most recent call last):" in out
    assert "[p0] ValueError: boom" in out
    assert "child: started" not in out and "carrying on" not in out
    log = (tmp_path / "log" / "p0.log").read_text()
    assert "child: started" in log and "carrying on" in log and "ValueError: boom" in log


def test_line_filter_reads_celery_gunicorn_and_python_records():
    keep = LineFilter()
    lines = {
        "Traceback (most recent call last):": True,  # before any record: a crash at start
        "[2026-11-23 13:41:05,038: INFO/MainProcess] Task x received": False,
        "[2026-11-23 13:41:05,038: ERROR/ForkPoolWorker-1] Task x raised": True,
        '  File "ranking/tasks.py", line 3': True,  # its traceback
        "[2026-11-23 13:42:07 +0000] [18440] [INFO] Booting worker": False,
        "[2026-11-23 13:42:18 +0000] [18440] [WARNING] Worker was sent SIGABRT!": True,
        "2026-11-23 13:35:49,500 INFO  [main] index.SimpleIndexer - Stemmer: porter": False,
        "2026-11-23 13:35:55,858 CRITICAL django.request: down": True,
        "WARNING: sun.misc.Unsafe::invokeCleaner will be removed": False,  # known JVM notice
        "SEVERE: something in Java failed": True,
        # gunicorn's worker ending on the demo's own SIGTERM, and one that crashed
        "[2026-11-23 15:34:38 +0000] [28893] [ERROR] Worker (pid:28897) exited with code 143.": (
            False
        ),
        "[2026-11-23 15:34:38 +0000] [28893] [ERROR] Worker (pid:28897) exited with code 1": True,
    }
    assert {line: keep(line) for line in lines} == lines
