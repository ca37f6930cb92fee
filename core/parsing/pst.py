"""Read Outlook PST and OST files through ``readpst`` (Debian's ``pst-utils``, libpst).

Why readpst rather than the ``libpff-python`` binding: readpst runs in a child process, so a
hostile or corrupt PST that crashes or loops the parser costs that process, never the Celery
worker or the web server, and the child can be held to limits the parent cannot put on a C
extension running inside it (address space, bytes written, CPU and wall-clock time). It is
packaged and security-patched by Debian (``apt-get install pst-utils``), needs no compiler,
and writes each message as an RFC-822 file with its attachments as MIME parts, which the
same parser as every other email format then reads: one code path for bodies, charsets and
attachments. libpff is the more complete reader of damaged files, but its Python binding
is built from source and runs in-process.

readpst writes one directory per PST folder (the PST's own hierarchy, from its root
folder's display name down) and one ``N.eml`` per message; contacts, calendar items and
notes (``.vcf``, ``.ics``, ...) are reported as skipped. Problems readpst meets are reported
per folder (it says how many items it skipped), since it names no byte offsets.
"""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from core.parsing import Issue
from core.parsing.items import EmailItem, _docid, _mb, _single, join_folder

PST_SIGNATURE = b"!BDN"
# Address space of the child: generous for a large PST's index, finite for a hostile one.
MAX_EXTRACT_MEMORY = 4 * 1024**3
_SKIPPED = re.compile(
    r'^\s*"(?P<folder>[^"]*)" - (?P<done>\d+) items done, (?P<skipped>\d+) items skipped'
)
_NOT_MESSAGES = {
    ".vcf": "a contact",
    ".ics": "a calendar item",
    ".txt": "a note or journal entry",
}


def readpst_path() -> str | None:
    """Return the readpst executable, or None when pst-utils is not installed."""
    return shutil.which("readpst")


def _command(exe: str, out: Path, pst: Path, limits, budget: int) -> list[str]:
    # -e: one file per message, with extension, a directory per folder; -8: UTF-8 bodies
    # where the PST has them; -b: no RTF copy of each body as an attachment; -j 0: one
    # process. readpst's parallel folder jobs (its default) now and then skip a message:
    # on enron.pst (tests/annotate/test_pst_real.py) 2 runs of 110 reported "1 items
    # skipped" in the 47-message folder, against 0 of 90 with -j 0.
    command = [exe, "-j", "0", "-e", "-8", "-b", "-o", str(out), str(pst)]
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return command
    fsize = budget  # no one file may hold more than all of them may
    return [
        prlimit,
        f"--as={MAX_EXTRACT_MEMORY}",
        f"--fsize={fsize}",
        f"--cpu={limits.max_extract_seconds}",
        "--",
        *command,
    ]


def _tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def _run(exe: str, pst: Path, out: Path, log: Path, limits, budget: int) -> tuple[int | None, str]:
    """Run readpst; return (exit code or None if it was stopped, why it was stopped)."""
    started = time.monotonic()
    with open(log, "wb") as log_fh:
        proc = subprocess.Popen(
            _command(exe, out, pst, limits, budget),
            stdin=subprocess.DEVNULL,
            stdout=log_fh,
            stderr=subprocess.STDOUT,
            cwd=out,
            start_new_session=True,
        )
        interval = 0.2
        while True:
            try:
                return proc.wait(timeout=interval), ""
            except subprocess.TimeoutExpired:
                pass
            reason = ""
            if time.monotonic() - started > limits.max_extract_seconds:
                reason = (
                    f"readpst ran longer than {limits.max_extract_seconds} s "
                    "(SASC_MAX_EXTRACT_SECONDS) and was stopped"
                )
            else:
                measured = time.monotonic()
                if _tree_bytes(out) >= budget:
                    reason = (
                        f"readpst wrote more than {budget / 1024**2:.0f} MB "
                        "(SASC_MAX_ARCHIVE_BYTES, or three times the PST) and was stopped"
                    )
                # Measuring a large tree costs time: measure less often as it grows.
                interval = min(5.0, max(0.2, 4 * (time.monotonic() - measured)))
            if reason:
                # The whole session: readpst and anything it started.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return None, reason


def iter_pst(path: Path, label: str, limits, folder: str = "") -> Iterator:
    """Yield ``EmailItem`` or ``Issue`` for every message of a PST/OST file."""
    exe = readpst_path()
    if exe is None:
        yield Issue(
            label, "", "PST/OST files are read by readpst (Debian package pst-utils): not installed"
        )
        return
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        yield Issue(label, "", f"cannot read file: {exc.strerror}")
        return
    if head != PST_SIGNATURE:
        yield Issue(label, "offset 0", "not a PST/OST file (no '!BDN' signature)")
        return
    budget = max(limits.max_archive_bytes, 3 * size)
    with tempfile.TemporaryDirectory(prefix="sasc-pst-") as tmp:
        out = Path(tmp) / "out"
        out.mkdir()
        log = Path(tmp) / "readpst.log"
        code, stopped = _run(exe, path.resolve(), out, log, limits, budget)
        text = log.read_bytes()[-200_000:].decode("utf-8", "replace")
        if stopped:
            yield Issue(label, "", f"{stopped}; the messages it wrote before are imported")
        elif code != 0:
            tail = " ".join(line.strip() for line in text.splitlines()[-3:] if line.strip())
            why = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            yield Issue(
                label,
                "",
                f"readpst failed ({why}): {tail[:200] or 'no message'}; the messages it "
                "wrote before failing are imported",
            )
        for line in text.splitlines():
            match = _SKIPPED.match(line)
            if match and int(match["skipped"]):
                yield Issue(
                    label,
                    f"folder {match['folder']!r}",
                    f"readpst could not read {match['skipped']} item(s) of this folder "
                    "(corrupt, or not messages it exports)",
                )
        yield from _walk(out, label, limits, folder)


def _number(name: str) -> tuple[int, str]:
    stem = name.split(".", 1)[0]
    return (int(stem), name) if stem.isdigit() else (1 << 62, name)


def _walk(out: Path, label: str, limits, folder: str) -> Iterator:
    for dirpath, dirnames, filenames in os.walk(out, followlinks=False):
        dirnames.sort()
        rel = Path(dirpath).relative_to(out)
        inner = "/".join(rel.parts)
        path = join_folder(folder, inner)
        for name in sorted(filenames, key=_number):
            full = Path(dirpath) / name
            where = f"{inner}/{name}" if inner else name
            suffix = full.suffix.lower()
            if suffix != ".eml":
                what = _NOT_MESSAGES.get(suffix, "not a message")
                yield Issue(label, where, f"{what}: not imported", "skipped")
                continue
            docid = f"{label}/{inner}/{full.stem}" if inner else f"{label}/{full.stem}"
            if limits.known is not None and limits.known(_docid(docid)):
                yield EmailItem(_docid(docid), label, where, None, path)
                continue
            size = full.stat().st_size
            if size > limits.max_message_bytes:
                yield Issue(
                    label,
                    where,
                    f"message is {_mb(size)}, over the {_mb(limits.max_message_bytes)} limit",
                )
                continue
            yield from _single(full.read_bytes(), docid, label, where, limits, path)
