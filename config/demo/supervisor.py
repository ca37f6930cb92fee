"""Run the demo's processes (web server, Celery worker) and stop all of them, children included.

Each process starts in its own session, so it leads a process group that holds everything it
forks (gunicorn's workers, Celery's pool processes). Stopping sends SIGTERM to the whole
group, waits, then SIGKILLs whatever is left of it: killing only the leader would orphan a
pool process in the middle of a task, which is how a stopped demo used to leave a worker
running. Because the children are in their own groups, a Ctrl-C at the terminal or a SIGTERM
to the demo's group reaches the supervisor alone, which then stops them in order; a SIGTERM
or SIGINT sent to the demo process by itself does the same. On Linux each child also gets
SIGTERM if the supervisor dies without cleaning up (SIGKILL).

Each process's output goes to its log file in full; lines at WARNING and above (with the
traceback that follows them) and anything that is not a log record (a crash before logging
is set up) are also written to the console, prefixed with the process's name.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "WARN": 30, "ERROR": 40, "CRITICAL": 50}
# A line that starts a log record: Python's logging ("2026-11-23 13:35:55,858 WARNING x: ..."),
# Celery ("[2026-11-23 13:35:55,858: WARNING/MainProcess] ...") and gunicorn
# ("[2026-11-23 13:35:55 +0000] [12] [INFO] ...").
_RECORD = re.compile(r"^\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d")
_LEVEL = re.compile(r"\b(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b")
# java.util.logging and the JVM print "WARNING: ..." / "SEVERE: ..." lines of their own.
_BARE_LEVEL = re.compile(r"^(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|SEVERE):")
# Known and harmless: the JVM's notices about Lucene 9 on Java 22+ (pyserini's jar), printed
# by every process that loads Lucene. They stay in the log file.
NOISE = re.compile(
    r"You are running with Java 22 or later|sun\.misc\.Unsafe|"
    r"MappedByteBufferIndexInputProvider|MMapDirectory lookupProvider|"
    # kombu on the quickstart's folder broker, whose URL has no host by design
    r"No hostname was supplied|"
    # gunicorn's worker ending on the SIGTERM that stops the demo (143 = 128 + SIGTERM)
    r"Worker \(pid:\d+\) exited with code 143"
)


class LineFilter:
    """Decide, line by line, whether a process's output belongs on the console.

    A log record's level carries over to the lines that follow it (a traceback), until the
    next record starts. Lines seen before any record are shown: they are what a process
    prints when it fails before its logging is configured.
    """

    def __init__(self, threshold: int = LEVELS["WARNING"]):
        self.threshold = threshold
        self.current: int | None = None

    def __call__(self, line: str) -> bool:
        if NOISE.search(line):
            return False
        bare = _BARE_LEVEL.match(line)
        if bare:
            self.current = LEVELS.get(bare.group(1), LEVELS["ERROR"])
        elif _RECORD.match(line):
            level = _LEVEL.search(line[:80])
            self.current = LEVELS[level.group(1)] if level else LEVELS["INFO"]
        return self.current is None or self.current >= self.threshold


def _death_signal_prefix() -> list[str]:
    """The command prefix that makes a child get SIGTERM when the supervisor dies.

    util-linux's ``setpriv --pdeathsig`` sets Linux's PR_SET_PDEATHSIG and then execs the
    command, which keeps it. A ``preexec_fn`` doing the same would run Python in the forked
    child of a process whose relay threads are running, and such a child can deadlock on a
    lock another thread held at the fork: the demo then hung while starting its second
    process, once in CI. Where setpriv is missing, children simply do not get the signal.
    """
    if not sys.platform.startswith("linux"):
        return []
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--"] if setpriv else []


_DEATH_SIGNAL = _death_signal_prefix()


@dataclass
class Child:
    name: str
    proc: subprocess.Popen
    log_path: Path
    tail: collections.deque = field(default_factory=lambda: collections.deque(maxlen=30))
    relay: threading.Thread | None = None

    @property
    def pgid(self) -> int:
        # start_new_session: the child leads a group whose id is its pid.
        return self.proc.pid


class Stop(Exception):
    """Raised in the main thread by the signal handlers: stop everything."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Supervisor:
    """Start named processes, relay their warnings, and stop every one of them on exit.

    Use as a context manager: leaving the block (normally, by an exception, or by SIGINT,
    SIGTERM or SIGHUP, which raise :class:`Stop`) stops every process group it started.
    """

    def __init__(
        self,
        log_dir: Path,
        *,
        console: Callable[[str], None] | None = None,
        stop_timeout: float = 10.0,
    ):
        self.log_dir = Path(log_dir)
        self.console = console or (lambda text: print(text, flush=True))
        self.stop_timeout = stop_timeout
        self.children: list[Child] = []
        self._old_handlers: dict[int, object] = {}
        self._lock = threading.Lock()

    # --- lifecycle ------------------------------------------------------------------------
    def __enter__(self) -> Supervisor:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self._old_handlers[signum] = signal.signal(signum, self._on_signal)
        return self

    def __exit__(self, *exc) -> bool:
        # A second Ctrl-C while stopping must not leave the job half done.
        for signum in self._old_handlers:
            signal.signal(signum, signal.SIG_IGN)
        try:
            self.stop_all()
        finally:
            for signum, handler in self._old_handlers.items():
                signal.signal(signum, handler)
        return False

    def _on_signal(self, signum, frame):
        raise Stop(signum)

    def start(self, name: str, args: Sequence[str], *, env=None, cwd=None) -> Child:
        """Start ``args`` as the leader of a new process group, its output relayed."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{name}.log"
        proc = subprocess.Popen(
            [*_DEATH_SIGNAL, *args],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            text=True,
            errors="replace",
            bufsize=1,
        )
        child = Child(name, proc, log_path)
        child.relay = threading.Thread(
            target=self._relay, args=(child,), name=f"relay-{name}", daemon=True
        )
        child.relay.start()
        self.children.append(child)
        return child

    def _relay(self, child: Child) -> None:
        keep = LineFilter()
        with open(child.log_path, "a", encoding="utf-8") as log:
            for line in child.proc.stdout:
                line = line.rstrip("\n")
                log.write(line + "\n")
                log.flush()
                child.tail.append(line)
                if keep(line):
                    with self._lock:
                        self.console(f"[{child.name}] {line}")

    def exited(self) -> Child | None:
        """Return a child that has stopped, if any."""
        return next((c for c in self.children if c.proc.poll() is not None), None)

    def watch(self, interval: float = 0.5) -> Child:
        """Block until a child stops; return it (signals raise :class:`Stop` meanwhile)."""
        while True:
            child = self.exited()
            if child is not None:
                if child.relay is not None:
                    child.relay.join(timeout=2)
                return child
            time.sleep(interval)

    # --- stopping -------------------------------------------------------------------------
    def stop_all(self) -> None:
        """Stop every child and everything it started.

        SIGTERM goes to each leader first, so gunicorn stops its workers and Celery its
        pool in their own orderly way; whatever of a group is still there after
        ``stop_timeout`` (a task that does not finish, an orphaned pool process) gets
        SIGKILL, the whole group at once.
        """
        for child in self.children:
            if child.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    child.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout
        while time.monotonic() < deadline:
            for child in self.children:
                child.proc.poll()  # reap leaders, so that a finished group counts as empty
            if not any(_group_alive(child.pgid) for child in self.children):
                break
            time.sleep(0.1)
        for child in self.children:
            if _group_alive(child.pgid):
                self.console(
                    f"[{child.name}] still running {self.stop_timeout:.0f} s after SIGTERM: "
                    "killing it"
                )
            for _ in range(100):
                child.proc.poll()
                if not _group_alive(child.pgid):
                    break
                _signal_group(child.pgid, signal.SIGKILL)
                time.sleep(0.05)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.proc.wait(timeout=5)
            if child.relay is not None:
                child.relay.join(timeout=2)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group is still running (zombies do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # killpg(0) succeeds while only zombies are left; look at the group's members.
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after the last ')'.
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return not Path("/proc").is_dir()
