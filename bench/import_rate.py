"""Import throughput of a synthetic archive, phase by phase, then a later import into it.

1. ``bench/mailgen.py`` writes N messages in mbox files of N/40; the last ``--later`` files
   are held back (replies in them answer messages of the earlier files);
2. the earlier files are imported with ``--workers`` parsing processes: msg/s, and the
   seconds spent waiting for the parsers, storing, threading and finding entities;
3. the held-back files are imported into the same collection: the same figures, with the
   incremental threading and the entities of the new messages only, against [baseline, this
   run] what an import did before: a full re-thread and the entities of every document;
4. the keys the incremental threading gave are checked against a full re-thread.

    source .ci/services   # PostgreSQL (DATABASE_URL); without it, SQLite in a temp folder
    .venv/bin/python bench/import_rate.py --messages 20000 --workers 2 [--profile]
"""

import argparse
import cProfile
import os
import pstats
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _setup import PeakMemory, django_setup  # noqa: E402
from mailgen import generate  # noqa: E402

SPENT: dict[str, float] = defaultdict(float)


def _timed(module, name, label, *, generator=False):
    """Wrap ``module.name`` so that its time (a generator's: the time its items take to come)
    adds up in ``SPENT[label]``."""
    inner = getattr(module, name)

    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            SPENT[label] += time.perf_counter() - started

    def generator_wrapper(*args, **kwargs):
        items = inner(*args, **kwargs)
        while True:
            started = time.perf_counter()
            item = next(items, wrapper)  # ``wrapper``: a sentinel no parser yields
            SPENT[label] += time.perf_counter() - started
            if item is wrapper:
                return
            yield item

    setattr(module, name, generator_wrapper if generator else wrapper)


def run_import(collection, path, workers, profile):
    from annotate import services

    SPENT.clear()
    profiler = cProfile.Profile() if profile else None
    load = os.getloadavg()[0]
    started = time.perf_counter()
    if profiler:
        profiler.enable()
    report = services.import_run(collection=collection, fmt="emails", path=path, workers=workers)
    if profiler:
        profiler.disable()
    seconds = time.perf_counter() - started
    phases = ", ".join(f"{k} {v:.1f} s" for k, v in SPENT.items())
    print(
        f"  {report.created} messages in {seconds:.1f} s: {report.created / seconds:.0f} msg/s "
        f"({phases}); {len(report.errors)} errors; load {load:.1f} -> {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    return seconds


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--later", type=int, default=2, help="files held back for import 2")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    work = django_setup("import")
    peaks = PeakMemory()
    from django.db import connection

    from annotate import entities, import_documents, import_emails, services, threads
    from annotate.models import Collection, Document

    _timed(import_emails, "_iter_parallel", "waiting for the parsers", generator=True)
    _timed(import_documents.DocumentWriter, "flush", "storing")
    _timed(import_documents, "collection_threads_extend", "threading")
    _timed(services, "collection_entities_detect", "entities")
    print(
        f"database {connection.vendor}; {os.cpu_count()} cores; {args.workers} parsing "
        f"processes; load {os.getloadavg()}",
        flush=True,
    )
    mail = work / "mail"
    print(generate(mail, args.messages, per_file=max(500, args.messages // 40)), flush=True)
    later = work / "later"
    later.mkdir()
    for file in sorted(mail.glob("*.mbox"))[-args.later :]:
        file.rename(later / file.name)
    collection = Collection.objects.create(name="Import", slug=f"import-rate-{os.getpid()}")
    print("import 1 (the earlier files):", flush=True)
    run_import(collection, mail, args.workers, args.profile)
    print("import 2 (the held-back files, replies to import 1 among them):", flush=True)
    run_import(collection, later, args.workers, args.profile)

    print("what import 2 did before [baseline, same run]:", flush=True)
    s = time.perf_counter()
    changed = threads.collection_threads_assign(collection=collection)
    full_thread = time.perf_counter() - s
    s = time.perf_counter()
    entities.collection_entities_detect(collection_id=collection.pk)
    full_entities = time.perf_counter() - s
    total = Document.objects.filter(collection=collection).count()
    print(
        f"  full re-thread of {total} documents {full_thread:.1f} s ({changed} keys changed: "
        f"must be 0); entities of every document {full_entities:.1f} s; load "
        f"{os.getloadavg()[0]:.1f}"
    )
    assert changed == 0, "the incremental threading differs from a full re-thread"
    print(
        f"peak memory: this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}"
        f" MB; largest parsing worker "
        f"{peaks.largest():.0f} MB"
    )


if __name__ == "__main__":
    main()
