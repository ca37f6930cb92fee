"""Import reference labels: relevance judgments (qrels) and a persona's sensitivity labels,
read line by line, checked and written ``LABEL_CHUNK`` lines at a time in one transaction."""

from collections.abc import Iterator
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Exists, OuterRef

from annotate.bulk import rows_insert
from annotate.import_report import ImportReport
from annotate.models import (
    Collection,
    Document,
    Persona,
    ReferenceRelevance,
    ReferenceSensitivity,
    Topic,
)
from core.parsing import Issue
from core.parsing.trec import iter_qrels

# Label lines are resolved, checked and written this many at a time (under SQLite's limit of
# variables in one statement, with room to spare).
LABEL_CHUNK = 1000


def _open_label_file(path: Path, label: str, report: ImportReport):
    """Return the label file opened for reading line by line, after checking its size, that it
    holds text and its line count against ``SASC_MAX_QRELS_LINES`` (one pass in 1 MB
    blocks); None, with the reason reported, when it is refused."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        report.add(Issue(label, "", f"cannot read file: {exc.strerror or exc}"))
        return None
    if size > settings.SASC_MAX_IMPORT_FILE_BYTES:
        report.add(
            Issue(
                label,
                "",
                f"file is {size} bytes, over the {settings.SASC_MAX_IMPORT_FILE_BYTES} byte limit",
            )
        )
        return None
    cap = settings.SASC_MAX_QRELS_LINES
    lines, text, last = 0, False, b"\n"
    try:
        handle = open(path, "rb")  # noqa: SIM115 - handed to the caller, who closes it
    except OSError as exc:
        report.add(Issue(label, "", f"cannot read file: {exc.strerror or exc}"))
        return None
    while block := handle.read(1024 * 1024):
        lines += block.count(b"\n")
        text = text or bool(block.strip())
        last = block[-1:]
    lines += last != b"\n"
    if not text:
        handle.close()
        report.add(Issue(label, "", "empty file"))
        return None
    if lines > cap:
        handle.close()
        report.add(
            Issue(
                label,
                "",
                f"file has {lines} lines, over the {cap} line limit (SASC_MAX_QRELS_LINES); "
                "nothing was stored",
            )
        )
        return None
    handle.seek(0)
    return handle


class _SeenPairs:
    """The (topic, document) pairs a label file named so far, with the line that first named
    each: sorted int64 keys and int32 lines, 12 bytes a pair where a dict of string tuples
    took some 250 (a million-line qrels file grew the worker by 880 MB)."""

    def __init__(self):
        self.keys = np.empty(0, dtype=np.int64)
        self.lines = np.empty(0, dtype=np.int32)

    def check(self, chunk: list[tuple[int, tuple]]) -> tuple[list[tuple], list[tuple[tuple, int]]]:
        """Split ``chunk`` (``(key, item)`` in line order, ``item[3]`` its line) into the
        items named for the first time, which are remembered, and ``(item, first line)`` of
        the repeated ones."""
        fresh: dict[int, tuple] = {}
        repeated: list[tuple[tuple, int]] = []
        for key, item in chunk:
            if key in fresh:
                repeated.append((item, fresh[key][3]))
            else:
                fresh[key] = item
        keys = np.fromiter(fresh, dtype=np.int64, count=len(fresh))
        lines = np.fromiter((i[3] for i in fresh.values()), dtype=np.int32, count=len(fresh))
        pos = np.searchsorted(self.keys, keys)
        known = pos < len(self.keys)
        known[known] = self.keys[pos[known]] == keys[known]
        items = list(fresh.values())
        for i in np.flatnonzero(known):
            repeated.append((items[i], int(self.lines[pos[i]])))
        new = ~known
        order = np.argsort(keys[new], kind="stable")
        new_keys, new_lines = keys[new][order], lines[new][order]
        at = np.searchsorted(self.keys, new_keys)
        self.keys = np.insert(self.keys, at, new_keys)
        self.lines = np.insert(self.lines, at, new_lines)
        return [items[i] for i in np.flatnonzero(new)], repeated


def _label_chunks(
    *,
    collection: Collection,
    path: Path,
    label: str,
    fmt: str,
    report: ImportReport,
    all_topics: bool = False,
) -> Iterator[list[tuple[int | None, int, int, int]]]:
    """Yield lists of ``(topic_id, document_id, grade, line)``, ``LABEL_CHUNK`` lines at a
    time, for the usable label lines of a file read line by line.

    Lines naming a topic or document the collection does not have, or a pair an earlier line
    named, are reported by line. With ``all_topics``, ``*`` (or ``0``) in the topic column
    stands for every topic (None).
    """
    handle = _open_label_file(Path(path), label, report)
    if handle is None:
        return
    topics = dict(Topic.objects.filter(collection=collection).values_list("number", "id"))
    docs = dict(Document.objects.filter(collection=collection).values_list("docid", "id"))
    seen = _SeenPairs()

    def checked(chunk):
        fresh, repeated = seen.check(chunk)
        for (_t, _d, _g, line, topic, docid), first in sorted(repeated, key=lambda r: r[0][3]):
            report.add(
                Issue(
                    label,
                    f"line {line}",
                    f"duplicate judgment for topic {topic}, document {docid} "
                    f"(first on line {first})",
                )
            )
        return [item[:4] for item in sorted(fresh, key=lambda i: i[3])]

    chunk: list[tuple[int, tuple]] = []
    with handle:
        for item in iter_qrels(handle, label, fmt=fmt, duplicates=False):
            if isinstance(item, Issue):
                report.add(item)
                continue
            where = f"line {item.line}"
            if all_topics and item.topic in ("*", "0"):
                topic_id = None
            else:
                topic_id = topics.get(item.topic)
                if topic_id is None:
                    hint = " (use * for all topics)" if all_topics else " in this collection"
                    report.add(Issue(label, where, f"unknown topic {item.topic!r}{hint}"))
                    continue
            doc_id = docs.get(item.docid)
            if doc_id is None:
                report.add(
                    Issue(label, where, f"unknown document {item.docid!r} in this collection")
                )
                continue
            key = ((topic_id or 0) << 32) | doc_id
            chunk.append((key, (topic_id, doc_id, item.grade, item.line, item.topic, item.docid)))
            if len(chunk) >= LABEL_CHUNK:
                yield checked(chunk)
                chunk = []
    if chunk:
        yield checked(chunk)


def _source_name(name: str) -> str:
    """Return the label source a file name gives, cut to its column (an uploaded file's name
    may be longer than the 200 characters the database keeps)."""
    return name[: ReferenceRelevance._meta.get_field("source").max_length]


def _counted_change(report: ImportReport, previous, value) -> bool:
    """Count a label as created, updated or unchanged; return whether it must be written."""
    if previous == value:
        report.unchanged += 1
        return False
    if previous is None:
        report.created += 1
    else:
        report.updated += 1
    return True


# The table of ReferenceRelevance; ON CONFLICT ... DO UPDATE is spelled alike by PostgreSQL
# and SQLite (3.24 on).
_RELEVANCE_UPSERT = (
    "INSERT INTO annotate_referencerelevance (topic_id, document_id, grade, source) "
    "VALUES (%s, %s, %s, %s) ON CONFLICT (topic_id, document_id, source) "
    "DO UPDATE SET grade = excluded.grade"
)


def _relevance_upsert(rows: list[tuple[int, int, int, str]]) -> None:
    """Write ``(topic_id, document_id, grade, source)`` rows, a grade replacing the one the
    same source gave before: one statement run for the whole chunk, without building a
    model instance per line (two thirds of the time of a million-line import)."""
    if not rows:
        return
    with connection.cursor() as cursor:
        cursor.executemany(_RELEVANCE_UPSERT, rows)


def qrels_import(
    *,
    collection: Collection,
    path: Path,
    fmt: str = "trec",
    source: str | None = None,
    label: str | None = None,
) -> ImportReport:
    """Import reference relevance judgments; a line naming an unknown topic or document fails.

    The file is read, checked and written ``LABEL_CHUNK`` lines at a time inside one
    transaction, so memory does not grow with the file and a failure stores nothing.
    """
    report = ImportReport()
    label = label or Path(path).name
    source = _source_name(source or label)
    with transaction.atomic():
        # A first import of a source has nothing to compare with: no query per chunk (the
        # file's own pairs never meet twice, ``_SeenPairs`` sees to that).
        stored = ReferenceRelevance.objects.filter(
            source=source, topic__collection=collection
        ).exists()
        for chunk in _label_chunks(
            collection=collection, path=path, label=label, fmt=fmt, report=report
        ):
            existing = {}
            if stored:
                existing = dict(
                    ((t, d), g)
                    for t, d, g in ReferenceRelevance.objects.filter(
                        source=source,
                        topic_id__in={t for t, _, _, _ in chunk},
                        document_id__in={d for _, d, _, _ in chunk},
                    ).values_list("topic_id", "document_id", "grade")
                )
            rows = [
                (t, d, grade, source)
                for t, d, grade, _line in chunk
                if _counted_change(report, existing.get((t, d)), grade)
            ]
            _relevance_upsert(rows)
        _report_disagreeing_sources(collection, source, label, report)
    return report


def _report_disagreeing_sources(collection, source: str, label: str, report) -> None:
    """Name, as a warning, each other source of the collection's qrels that grades pairs of
    this one differently: evaluation reads all sources as one, the grade of the source that
    added a pair last counting (``ranking.services.reference_qrels``), and a pair a corrected
    file drops still counts from the old one unless it is imported under the same file name
    (a source is named by its file)."""
    theirs = (
        ReferenceRelevance.objects.filter(topic__collection=collection)
        .exclude(source=source)
        .filter(
            Exists(
                ReferenceRelevance.objects.filter(
                    source=source, topic=OuterRef("topic"), document=OuterRef("document")
                ).exclude(grade=OuterRef("grade"))
            )
        )
    )
    counts = theirs.values("source").annotate(n=Count("id")).order_by("source")
    for other, n in ((c["source"], c["n"]) for c in counts):
        example = theirs.filter(source=other).select_related("topic", "document").first()
        report.add(
            Issue(
                label,
                "",
                f"{n} pair{'s' if n != 1 else ''} graded differently by the qrels source "
                f"“{other}” (topic {example.topic.number}, {example.document.docid}: "
                f"{example.grade} there). Evaluation takes the grade of the source that "
                f"added the pair last; to replace “{other}”, import the corrected file "
                "under that file name",
                "skipped",
            )
        )


def sensitivity_import(
    *,
    collection: Collection,
    persona: Persona,
    path: Path,
    source: str | None = None,
    label: str | None = None,
) -> ImportReport:
    """Import sensitivity labels (``topic-or-* 0 docno 0|1``, see docs/formats.md), read and
    written ``LABEL_CHUNK`` lines at a time in one transaction."""
    report = ImportReport()
    label = label or Path(path).name
    source = _source_name(source or label)
    with transaction.atomic():
        for chunk in _label_chunks(
            collection=collection,
            path=path,
            label=label,
            fmt="binary",
            report=report,
            all_topics=True,
        ):
            existing = dict(
                ((t, d), s)
                for t, d, s in ReferenceSensitivity.objects.filter(
                    persona=persona,
                    source=source,
                    document_id__in={d for _, d, _, _ in chunk},
                ).values_list("topic_id", "document_id", "sensitive")
            )
            new = []
            for topic_id, doc_id, value, _line in chunk:
                before = existing.get((topic_id, doc_id))
                if not _counted_change(report, before, bool(value)):
                    continue
                if before is None:
                    new.append(
                        ReferenceSensitivity(
                            persona=persona,
                            topic_id=topic_id,
                            document_id=doc_id,
                            source=source,
                            sensitive=bool(value),
                        )
                    )
                else:
                    ReferenceSensitivity.objects.filter(
                        persona=persona, topic_id=topic_id, document_id=doc_id, source=source
                    ).update(sensitive=bool(value))
            # One insert a chunk, not a query per line (500,000 labels: minutes of
            # update_or_create, bench/scale.py)
            rows_insert(ReferenceSensitivity, new)
    return report
