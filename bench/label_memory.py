"""Memory and time of the label and topic importers on generated files of a million lines.

A collection of ``--docs`` documents and ``--topics`` topics; a TREC qrels file naming every
(topic, document) pair once (``--topics`` x ``--docs`` lines, a million by default), imported
twice (the second run changes nothing); then a topics file of a million lines (200,000
topics), which must be refused before anything is stored. Prints the growth of the process's
peak RSS of each step and, with ``--trace``, the tracemalloc peak (tracing slows the import
several times and adds its own bookkeeping to the RSS: measure RSS without it).

    .venv/bin/python bench/label_memory.py [--docs 10000 --topics 100] [--trace]
"""

import argparse
import resource
import time
import tracemalloc

from _setup import django_setup


def rss_mb() -> float:
    """The process's peak resident set so far, in MB (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


TRACE = False


def measured(name, func):
    before = rss_mb()
    if TRACE:
        tracemalloc.start()
    started = time.perf_counter()
    result = func()
    seconds = time.perf_counter() - started
    traced = ""
    if TRACE:
        traced = f"tracemalloc peak {tracemalloc.get_traced_memory()[1] / 2**20:6.1f} MB   "
        tracemalloc.stop()
    print(
        f"{name:<26} {seconds:6.1f} s   peak RSS +{rss_mb() - before:5.0f} MB   "
        f"{traced}{result.summary()}"
    )
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--trace", action="store_true", help="also report tracemalloc peaks")
    args = parser.parse_args()
    global TRACE
    TRACE = args.trace
    work = django_setup("labels")
    from django.db import connection

    from annotate import import_labels, import_topics
    from annotate.models import Collection, Document, Topic

    collection = Collection.objects.create(name="bench", slug="bench")
    Document.objects.bulk_create(
        Document(collection=collection, docid=f"DOC-{n:07d}", content_hash=f"{n:064x}")
        for n in range(args.docs)
    )
    Topic.objects.bulk_create(
        Topic(collection=collection, number=str(n), title=f"topic {n}")
        for n in range(1, args.topics + 1)
    )
    qrels = work / "big.qrels"
    with open(qrels, "w") as out:
        for t in range(1, args.topics + 1):
            out.writelines(f"{t} 0 DOC-{n:07d} {n % 3}\n" for n in range(args.docs))
    lines = args.topics * args.docs
    size = qrels.stat().st_size / 2**20
    print(f"database: {connection.vendor}; qrels file: {lines:,} lines, {size:.0f} MB")
    print(f"baseline peak RSS: {rss_mb():.0f} MB")

    def qrels_import():
        return import_labels.qrels_import(collection=collection, path=qrels)

    measured("qrels import", qrels_import)
    measured("qrels import again", qrels_import)

    topics = work / "million.topics"
    with open(topics, "w") as out:
        for n in range(200_000):
            out.write(f"<top>\n<num> {n}\n<title> t{n}\n</top>\n")
    before = Topic.objects.count()
    report = measured(
        "topics file, 10^6 lines",
        lambda: import_topics.topics_import(collection=collection, path=topics),
    )
    print(f"  refused: {report.errors[0].reason}")
    print(f"  topics stored before/after: {before}/{Topic.objects.count()}")


if __name__ == "__main__":
    main()
