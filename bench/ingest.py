"""Ingest throughput on the real SpamAssassin corpus: parse + store, messages per second.

Baseline in the same run: the floor of parsing alone with the standard library
(``email.message_from_bytes`` with the default policy, walking every part), so the
figure shows what the importer adds on top of the parser it cannot avoid.

    .venv/bin/python bench/ingest.py [--folders easy-ham-1 ...]
"""

import argparse
import email
import email.policy
import time

from _setup import corpus_root, django_setup


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--folders", nargs="+", default=None)
    args = parser.parse_args()
    django_setup("ingest")
    from annotate import services
    from annotate.models import Collection, Document
    from config.demo import corpus

    root = corpus_root()
    folders = args.folders or list(corpus.ALL_FOLDERS)
    files = [p for f in folders for p in sorted((root / f).glob("*.txt"))]
    data = [p.read_bytes() for p in files]

    started = time.perf_counter()
    for raw in data:
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        for part in msg.walk():
            if not part.is_multipart():
                part.get_payload(decode=True)
    floor = time.perf_counter() - started

    collection = Collection.objects.create(name="bench", slug="bench")
    started = time.perf_counter()
    reports = [
        services.import_run(collection=collection, fmt="emails", path=root / f) for f in folders
    ]
    full = time.perf_counter() - started
    stored = Document.objects.filter(collection=collection).count()
    errors = sum(len(r.errors) for r in reports)
    partly = sum(len(r.partly_decoded) for r in reports)
    dups = sum(r.duplicates for r in reports)

    started = time.perf_counter()
    for f in folders:
        services.import_run(collection=collection, fmt="emails", path=root / f)
    rerun = time.perf_counter() - started

    n = len(files)
    print(f"messages read:             {n} ({', '.join(folders)})")
    print(
        f"stored / duplicates:       {stored} / {dups}; errors {errors}; not fully decoded {partly}"
    )
    print(f"baseline parse only:       {floor:6.2f} s  {n / floor:7.0f} msg/s")
    print(f"import (parse + store):    {full:6.2f} s  {n / full:7.0f} msg/s  ({full / floor:.2f}x)")
    print(f"re-run (nothing new):      {rerun:6.2f} s  {n / rerun:7.0f} msg/s")


if __name__ == "__main__":
    main()
