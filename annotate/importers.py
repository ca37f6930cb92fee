"""Store what the parsers read: emails, SMART collections, topics, personas and labels.

Every importer follows the same contract (RELIABILITY.md, "Bad input"):
- each malformed file, line or record becomes an ``Issue`` naming the file and place, and the
  rest of the input is still imported;
- a document is written together with its attachments in one transaction, so nothing is
  stored half-way;
- a re-run imports nothing twice (documents are keyed by docid, labels by their natural key).
"""

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import DataError, IntegrityError, connection, transaction
from django.db.models import F

from annotate.bulk import rows_insert, statistics_refresh
from annotate.models import (
    Attachment,
    Collection,
    Document,
    Persona,
    ReferenceRelevance,
    ReferenceSensitivity,
    ThreadLink,
    Topic,
)
from annotate.threads import collection_threads_extend
from core.parsing import Issue
from core.parsing.emails import ParsedEmail
from core.parsing.sources import EmailItem, Limits, iter_dir_files, iter_emails, parse_file_job
from core.parsing.trec import (
    SmartRecord,
    TopicRecord,
    iter_qrels,
    iter_smart,
    iter_smart_queries,
    iter_trec_topics,
    topic_count,
)

BATCH = 250
# Label lines are resolved, checked and written this many at a time (under SQLite's limit of
# variables in one statement, with room to spare).
LABEL_CHUNK = 1000
Progress = Callable[[int], None]
MAX_REPORTED_ISSUES = 2000


@dataclass
class ImportReport:
    """What an import did, in numbers and with every problem it met."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    duplicates: int = 0
    issues: list[Issue] = field(default_factory=list)
    # Documents stored, but not decoded exactly: {"docid": ..., "problems": [...]}.
    partly_decoded: list[dict] = field(default_factory=list)
    duplicate_examples: list[dict] = field(default_factory=list)

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def skipped(self) -> list[Issue]:
        return [i for i in self.issues if i.severity != "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def add(self, issue: Issue) -> None:
        self.issues.append(issue)

    def summary(self) -> str:
        parts = [f"{self.created} created"]
        if self.updated:
            parts.append(f"{self.updated} updated")
        parts.append(f"{self.unchanged} already present")
        if self.duplicates:
            parts.append(f"{self.duplicates} duplicates stored once")
        if self.partly_decoded:
            parts.append(f"{len(self.partly_decoded)} not fully decoded")
        parts.append(f"{len(self.errors)} error{'' if len(self.errors) == 1 else 's'}")
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped")
        return ", ".join(parts)

    def as_dict(self) -> dict:
        return {
            "summary": self.summary(),
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "duplicates": self.duplicates,
            "error_count": len(self.errors),
            "skipped_count": len(self.skipped),
            "issues": [i.as_dict() for i in self.issues[:MAX_REPORTED_ISSUES]],
            "partly_decoded": self.partly_decoded[:MAX_REPORTED_ISSUES],
            "duplicate_examples": self.duplicate_examples[:100],
        }


def _limits() -> Limits:
    return Limits(
        max_file_bytes=settings.SASC_MAX_IMPORT_FILE_BYTES,
        max_message_bytes=settings.SASC_MAX_MESSAGE_BYTES,
        max_archive_bytes=settings.SASC_MAX_ARCHIVE_BYTES,
        max_archive_members=settings.SASC_MAX_ARCHIVE_MEMBERS,
        max_compression_ratio=settings.SASC_MAX_COMPRESSION_RATIO,
        max_extract_seconds=settings.SASC_MAX_EXTRACT_SECONDS,
    )


def _documents_capped(items: Iterator, report: ImportReport, label: str) -> Iterator:
    """Pass ``items`` on until more than ``SASC_MAX_DOCUMENTS_PER_IMPORT`` documents came by;
    then report it and stop reading (what was read is kept: a re-run skips it)."""
    cap = settings.SASC_MAX_DOCUMENTS_PER_IMPORT
    seen = 0
    try:
        for item in items:
            if not isinstance(item, Issue):
                seen += 1
                if seen > cap:
                    report.add(
                        Issue(
                            label,
                            "",
                            f"more than {cap} documents in one import "
                            f"(SASC_MAX_DOCUMENTS_PER_IMPORT): the first {cap} were read, "
                            f"the rest was not; split the input",
                        )
                    )
                    return
            yield item
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()


def _bump_version(collection: Collection) -> None:
    Collection.objects.filter(pk=collection.pk).update(version=F("version") + 1)
    collection.refresh_from_db(fields=["version"])


class _DocumentWriter:
    """Buffer new documents and write each batch, with its attachments, atomically."""

    def __init__(
        self,
        collection: Collection,
        report: ImportReport,
        *,
        dedupe: bool = True,
        threads: bool = False,
    ):
        self.collection = collection
        self.dedupe = dedupe
        self.threads = threads
        self.report = report
        rows = Document.objects.filter(collection=collection).values_list(
            "docid", "content_hash", "message_id", "subject", "duplicate_docids"
        )
        # Both maps point at the docid of the copy that is kept.
        self.docids: set[str] = set()
        self.by_hash: dict[str, str] = {}
        self.by_msgid: dict[tuple[str, str], str] = {}
        for docid, content_hash, message_id, subject, duplicate_docids in rows:
            self.docids.add(docid)
            # Copies found by earlier runs count as imported, so a re-run skips them too.
            self.docids.update(duplicate_docids)
            self.by_hash.setdefault(content_hash, docid)
            if message_id:
                self.by_msgid.setdefault((message_id, subject), docid)
        self.pending: list[tuple[Document, list[Attachment]]] = []
        self.duplicate_hits: dict[str, list[str]] = {}

    def add(self, docid: str, parsed: ParsedEmail | None, source: str, *, metadata=None) -> None:
        if docid in self.docids or parsed is None:
            self.report.unchanged += 1
            return
        content_hash = parsed.content_hash
        key = (parsed.message_id, parsed.subject)
        original = self.by_hash.get(content_hash) if self.dedupe else None
        if original is None and parsed.message_id and self.dedupe:
            original = self.by_msgid.get(key)
        if original is not None:
            self.report.duplicates += 1
            self.duplicate_hits.setdefault(original, []).append(docid)
            if len(self.report.duplicate_examples) < 100:
                self.report.duplicate_examples.append({"docid": docid, "duplicate_of": original})
            self.docids.add(docid)
            return
        doc = Document(
            collection=self.collection,
            docid=docid,
            message_id=parsed.message_id,
            subject=parsed.subject,
            from_header=parsed.from_header,
            to_header=parsed.to_header,
            cc_header=parsed.cc_header,
            bcc_header=parsed.bcc_header,
            addresses=parsed.addresses,
            date=parsed.date,
            body=parsed.body,
            body_from_html=parsed.body_from_html,
            raw_headers=parsed.raw_headers,
            content_hash=content_hash,
            source_path=source,
            decode_problems=parsed.problems,
            metadata=metadata or {},
            folder=parsed.folder[:500],
            in_reply_to=parsed.in_reply_to[:998],
            references=parsed.references,
        )
        attachments = [
            Attachment(
                position=i,
                filename=a.filename,
                content_type=a.content_type,
                size=a.size,
                is_text=a.is_text,
                text=a.text,
            )
            for i, a in enumerate(parsed.attachments)
        ]
        self.docids.add(docid)
        self.by_hash[content_hash] = docid
        if parsed.message_id:
            self.by_msgid.setdefault(key, docid)
        if parsed.problems:
            self.report.partly_decoded.append({"docid": docid, "problems": parsed.problems})
        self.pending.append((doc, attachments))
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        batch, self.pending = self.pending, []
        try:
            with transaction.atomic():
                self._write(batch)
        except (IntegrityError, DataError):
            # Another import stored some of these meanwhile, or one holds a value the database
            # refuses: fall back to one by one, so that one message cannot cost the batch.
            for item in batch:
                try:
                    with transaction.atomic():
                        self._write([item])
                except IntegrityError:
                    self.report.unchanged += 1
                except DataError as exc:
                    reason = str(exc).splitlines()[0]
                    self.report.add(Issue(item[0].docid, "", f"refused by the database: {reason}"))

    def _write(self, batch) -> None:
        docs = rows_insert(Document, [d for d, _ in batch])
        attachments = []
        for doc, atts in zip(docs, (a for _, a in batch), strict=True):
            for att in atts:
                att.document = doc
                attachments.append(att)
        rows_insert(Attachment, attachments)
        self.report.created += len(docs)

    def finish(self) -> None:
        self.flush()
        statistics_refresh(Document, Attachment, rows=self.report.created)
        with transaction.atomic():
            for doc in Document.objects.select_for_update().filter(
                collection=self.collection, docid__in=list(self.duplicate_hits)
            ):
                doc.duplicate_docids = doc.duplicate_docids + self.duplicate_hits[doc.docid]
                doc.save(update_fields=["duplicate_docids"])
        if self.report.created:
            if self.threads:
                # New messages join (or link) the stored threads they cite or are cited by.
                collection_threads_extend(collection=self.collection)
                statistics_refresh(ThreadLink, rows=self.report.created)
            _bump_version(self.collection)


def _consume(items: Iterable, report: ImportReport, progress: Progress | None, handle) -> None:
    for n, item in enumerate(items, 1):
        if isinstance(item, Issue):
            report.add(item)
        else:
            handle(item)
        if progress is not None and n % 50 == 0:
            progress(n)


def _iter_parallel(path: Path, limits, workers: int) -> Iterator:
    """``iter_emails`` of a folder with its files parsed by ``workers`` processes, in the
    same order as one process reads them (so docids, reports and re-runs are the same)."""
    import multiprocessing

    listing = list(iter_dir_files(path))
    jobs = [(e, limits) for e in listing if not isinstance(e, Issue)]
    # Not fork: the importing process may hold a JVM (an index build earlier in a worker),
    # and a child forked from a process with its threads can hang on a lock one of them held
    # (it did, in bench/scale.py). The forkserver starts clean, imports the parser only
    # (no Django), and forks the workers from that.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["core.parsing.sources"])
    with context.Pool(workers) as pool:
        parsed = pool.imap(parse_file_job, jobs, chunksize=1)  # in the order of ``jobs``
        for entry in listing:
            if isinstance(entry, Issue):
                yield entry
            else:
                yield from next(parsed)


def collection_import_emails(
    *,
    collection: Collection,
    path: Path,
    label: str | None = None,
    progress: Progress = None,
    workers: int = 1,
) -> ImportReport:
    """Import every message in a file or folder (RFC-822, mbox, Maildir, JSONL, zip, Outlook
    .msg and PST/OST, EAXS) into a collection, keeping folders, and thread the collection.

    With ``workers`` > 1 and a folder, its files (a Maildir: the whole Maildir) are parsed by
    that many processes while this one stores what they return (parsing is most of an
    import's work: ``bench/scale.py``); a file is one unit of work, so a folder of few big
    files uses few workers. A re-run in parallel parses again what the stored docids would
    have let one process skip, then stores nothing twice all the same."""
    report = ImportReport()
    writer = _DocumentWriter(collection, report, threads=True)

    def handle(item: EmailItem):
        writer.add(item.docid, item.email, f"{item.source}{':' + item.where if item.where else ''}")

    path = Path(path)
    if workers > 1 and path.is_dir() and not path.is_symlink():
        limits = _limits()  # no ``known`` callable: it cannot cross to another process
        items = _iter_parallel(path, limits, workers)
    else:
        items = iter_emails(path, limits=_limits(), label=label, known=writer.docids.__contains__)
    _consume(_documents_capped(items, report, label or Path(path).name), report, progress, handle)
    writer.finish()
    return report


_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        1,
    )
}


def _smart_date(bibliography: str) -> datetime | None:
    """Read "CACM December, 1958" (or a bare year) as a date, for time-based features."""
    match = re.search(r"([A-Za-z]+)\s*,?\s*(1[89]\d\d|20\d\d)", bibliography)
    if match and match.group(1).lower() in _MONTHS:
        return datetime(int(match.group(2)), _MONTHS[match.group(1).lower()], 1, tzinfo=UTC)
    year = re.search(r"\b(1[89]\d\d|20\d\d)\b", bibliography)
    return datetime(int(year.group(1)), 1, 1, tzinfo=UTC) if year else None


def smart_record_to_email(record: SmartRecord) -> tuple[ParsedEmail, dict]:
    """Map a SMART record onto the document fields: .T subject, .W body, .A authors as From."""
    f = record.fields
    parsed = ParsedEmail(
        subject=" ".join(f.get("T", "").split()),
        from_header="; ".join(a.strip() for a in f.get("A", "").splitlines() if a.strip()),
        body=f.get("W", ""),
        date=_smart_date(f.get("B", "")),
    )
    metadata = {}
    if f.get("B"):
        metadata["bibliography"] = " ".join(f["B"].split())
    if f.get("K"):
        metadata["keywords"] = [k.strip() for k in re.split(r"[,\n]", f["K"]) if k.strip()]
    if f.get("C"):
        metadata["categories"] = re.findall(r"\d+(?:\.\d+)?", f["C"])
    if f.get("N"):
        metadata["entry"] = " ".join(f["N"].split())
    return parsed, metadata


def collection_import_smart(
    *, collection: Collection, path: Path, label: str | None = None, progress: Progress = None
) -> ImportReport:
    """Import a SMART-format document file (Cranfield ``cran.all.1400``, CACM ``cacm.all``)."""
    report = ImportReport()
    label = label or Path(path).name
    data = _read_limited(Path(path), label, report)
    if data is None:
        return report
    cap = settings.SASC_MAX_DOCUMENTS_PER_IMPORT
    if (count := topic_count(data, "smart")) > cap:
        report.add(
            Issue(
                label,
                "",
                f"file holds {count} records, over the {cap} documents one import may bring "
                "(SASC_MAX_DOCUMENTS_PER_IMPORT); nothing was stored",
            )
        )
        return report
    # Test collections are judged by docid: two records with the same text stay two documents.
    writer = _DocumentWriter(collection, report, dedupe=False)

    def handle(record: SmartRecord):
        parsed, metadata = smart_record_to_email(record)
        writer.add(record.id, parsed, f"{label}:line {record.line}", metadata=metadata)

    _consume(iter_smart(data, label), report, progress, handle)
    writer.finish()
    return report


def _read_limited(path: Path, label: str, report: ImportReport) -> bytes | None:
    try:
        size = path.stat().st_size
        if size > settings.SASC_MAX_IMPORT_FILE_BYTES:
            report.add(
                Issue(
                    label,
                    "",
                    f"file is {size} bytes, over the "
                    f"{settings.SASC_MAX_IMPORT_FILE_BYTES} byte limit",
                )
            )
            return None
        data = path.read_bytes()
    except OSError as exc:
        report.add(Issue(label, "", f"cannot read file: {exc.strerror or exc}"))
        return None
    if not data.strip():
        report.add(Issue(label, "", "empty file"))
        return None
    return data


def _topic_cap_issue(label: str, what: str, cap: int) -> Issue:
    return Issue(
        label,
        "",
        f"{what}: over the {cap} topics a collection may hold "
        "(SASC_MAX_TOPICS_PER_COLLECTION); nothing was stored",
    )


def topics_import(
    *,
    collection: Collection,
    path: Path,
    fmt: str = "trec",
    number_by: str = "id",
    label: str | None = None,
) -> ImportReport:
    """Create or update topics from a TREC topics file or a SMART queries file."""
    report = ImportReport()
    label = label or Path(path).name
    data = _read_limited(Path(path), label, report)
    if data is None:
        return report
    if fmt == "trec":
        items = iter_trec_topics(data, label)
    elif fmt == "smart":
        items = iter_smart_queries(data, label, number_by=number_by)
    else:
        raise ValueError(f"unknown topics format {fmt!r}")
    cap = settings.SASC_MAX_TOPICS_PER_COLLECTION
    # Counted on the bytes first: a file of a million lines is refused before it is parsed.
    if (count := topic_count(data, fmt)) > cap:
        report.add(_topic_cap_issue(label, f"file holds {count} topics", cap))
        return report
    records: list[TopicRecord] = []
    for item in items:
        if isinstance(item, Issue):
            report.add(item)
        else:
            records.append(item)
    existing = {t.number: t for t in Topic.objects.filter(collection=collection)}
    added = len({rec.number for rec in records} - set(existing))
    if len(existing) + added > cap:
        report.add(
            _topic_cap_issue(
                label, f"the collection has {len(existing)} topics and this file adds {added}", cap
            )
        )
        return report
    with transaction.atomic():
        for rec in records:
            values = {
                "title": rec.title,
                "description": rec.description,
                "narrative": rec.narrative,
            }
            topic = existing.get(rec.number)
            if topic is None:
                Topic.objects.create(collection=collection, number=rec.number, **values)
                report.created += 1
            elif any(getattr(topic, k) != v for k, v in values.items()):
                for k, v in values.items():
                    setattr(topic, k, v)
                topic.save(update_fields=list(values))
                report.updated += 1
            else:
                report.unchanged += 1
    return report


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
    return report


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


# Longest text a persona's free-text fields may hold (the short ones have their column's
# max_length); names and short fields may not hold control characters (a newline in a name
# would reach file names and reports).
MAX_PERSONA_TEXT = 10_000
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

PERSONA_FIELDS = (
    "name",
    "nickname",
    "occupation",
    "institution",
    "background",
    "email_use",
    "why_it_matters",
    "audience",
    "pain_points",
    "goals",
)


def _persona_problem(item: dict) -> str | None:
    """Return what is wrong with a persona's field lengths or characters, or None."""
    for key, value in item.items():
        column = Persona._meta.get_field(key)
        limit = column.max_length or MAX_PERSONA_TEXT
        if len(value) > limit:
            return f"field {key!r} is {len(value)} characters, over the {limit} limit"
        if column.max_length and _CONTROL.search(value):
            return f"field {key!r} holds a control character (newline, tab, NUL...)"
    return None


def personas_import(*, path: Path, label: str | None = None) -> ImportReport:
    """Create or update personas from a JSON list of objects with the persona fields."""
    report = ImportReport()
    label = label or Path(path).name
    data = _read_limited(Path(path), label, report)
    if data is None:
        return report
    try:
        items = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        report.add(Issue(label, "", f"not valid JSON ({exc})"))
        return report
    if not isinstance(items, list):
        report.add(Issue(label, "", "expected a JSON list of persona objects"))
        return report
    with transaction.atomic():
        for i, item in enumerate(items, 1):
            where = f"item {i}"
            if not isinstance(item, dict):
                report.add(Issue(label, where, "each persona must be a JSON object"))
                continue
            unknown = set(item) - set(PERSONA_FIELDS)
            if unknown:
                report.add(Issue(label, where, f"unknown fields: {', '.join(sorted(unknown))}"))
                continue
            if not isinstance(item.get("name"), str) or not item["name"].strip():
                report.add(Issue(label, where, "persona needs a non-empty 'name'"))
                continue
            if any(not isinstance(v, str) for v in item.values()):
                report.add(Issue(label, where, "every persona field must be a string"))
                continue
            if (problem := _persona_problem(item)) is not None:
                report.add(Issue(label, where, problem))
                continue
            values = {k: item.get(k, "") for k in PERSONA_FIELDS if k != "name"}
            persona, created = Persona.objects.get_or_create(
                name=item["name"].strip(), defaults=values
            )
            if created:
                report.created += 1
            elif any(getattr(persona, k) != v for k, v in values.items()):
                Persona.objects.filter(pk=persona.pk).update(**values)
                report.updated += 1
            else:
                report.unchanged += 1
    return report
