"""Import email archives (RFC-822, mbox, Maildir, JSONL, zip, Outlook .msg, PST/OST, EAXS)
within the upload limits, parsed in one process or several."""

from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

from annotate.import_documents import DocumentWriter
from annotate.import_report import ImportReport, Progress, items_consume
from annotate.models import Collection
from core.parsing import Issue
from core.parsing.sources import EmailItem, Limits, iter_dir_files, iter_emails, parse_file_job


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
    writer = DocumentWriter(collection, report, threads=True)

    def handle(item: EmailItem):
        writer.add(item.docid, item.email, f"{item.source}{':' + item.where if item.where else ''}")

    path = Path(path)
    if workers > 1 and path.is_dir() and not path.is_symlink():
        limits = _limits()  # no ``known`` callable: it cannot cross to another process
        items = _iter_parallel(path, limits, workers)
    else:
        items = iter_emails(path, limits=_limits(), label=label, known=writer.docids.__contains__)
    name = label or Path(path).name
    items_consume(_documents_capped(items, report, name), report, progress, handle)
    writer.finish()
    if report.unchanged:
        # Ids are made of file names (``<mbox>#n``, ``<zip>/<member>``), and a stored id is
        # not read again; so another file with the name of one imported before (two
        # custodians' Inbox.mbox) would pass for a re-import. Said, not guessed.
        report.add(
            Issue(
                name,
                "",
                f"{report.unchanged} message{'s' if report.unchanged != 1 else ''} had ids "
                "already stored and were not read again (a re-import). If this is not the "
                "file imported before under this name (another custodian's Inbox.mbox, say), "
                "its messages with those ids were not stored: rename it and import it again",
                "skipped",
            )
        )
    return report
