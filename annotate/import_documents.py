"""Store parsed documents: new ones buffered and written a batch at a time, each with its
attachments, in one transaction; copies (same content, or same Message-ID and subject)
stored once; the collection's version bumped and, for email, its threads extended."""

from django.db import DataError, IntegrityError, transaction
from django.db.models import F

from annotate.bulk import rows_insert, statistics_refresh
from annotate.import_report import ImportReport
from annotate.models import Attachment, Collection, Document, ThreadLink
from annotate.threads import collection_threads_extend
from core.parsing import Issue
from core.parsing.emails import ParsedEmail

BATCH = 250


def _bump_version(collection: Collection) -> None:
    Collection.objects.filter(pk=collection.pk).update(version=F("version") + 1)
    collection.refresh_from_db(fields=["version"])


def _source(docid: str) -> str:
    """The file a docid was read from, as far as the id tells: what comes before its first
    ``#`` (``<mbox>#n``) or ``/`` (``<zip>/<member>``, ``<folder>/<file>``); else the id."""
    cut = min((i for i in (docid.find("#"), docid.find("/")) if i > 0), default=len(docid))
    return docid[:cut]


def _same_message(stored: tuple[str, str, str], parsed: ParsedEmail) -> bool:
    """Whether a parsed message is the one stored (content hash, Message-ID, subject): the
    same content, or the same Message-ID and subject (a later parser may decode it
    differently)."""
    content_hash, message_id, subject = stored
    if parsed.content_hash == content_hash:
        return True
    return bool(message_id) and (message_id, subject) == (parsed.message_id, parsed.subject)


class DocumentWriter:
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
        # What each stored docid holds, to tell a re-import from another file of the same
        # name (two custodians' Inbox.mbox: ids are "<file>#<n>").
        self.stored: dict[str, tuple[str, str, str]] = {}
        for docid, content_hash, message_id, subject, duplicate_docids in rows:
            self.docids.add(docid)
            self.stored[docid] = (content_hash, message_id, subject)
            # Copies found by earlier runs count as imported, so a re-run skips them too.
            self.docids.update(duplicate_docids)
            self.by_hash.setdefault(content_hash, docid)
            if message_id:
                self.by_msgid.setdefault((message_id, subject), docid)
        # Per source: whether its first stored message read again was the one stored; the
        # messages of a source found different are refused, with a count.
        self.verdicts: dict[str, bool] = {}
        self.refused: dict[str, int] = {}
        self.refused_first: dict[str, tuple[str, str]] = {}  # its first: (docid, where read)
        self.pending: list[tuple[Document, list[Attachment]]] = []
        self.duplicate_hits: dict[str, list[str]] = {}

    def known(self, docid: str) -> bool:
        """The readers' ``known``: a stored docid not to read again. The first stored one of
        each source (``_source``) is read and compared all the same: a file with the name
        of one imported before may be another file (two custodians' Inbox.mbox; ids are
        ``<file>#<n>``), and only its messages tell."""
        if docid not in self.docids:
            return False
        return docid not in self.stored or self.verdicts.get(_source(docid)) is True

    def add(self, docid: str, parsed: ParsedEmail | None, source: str, *, metadata=None) -> None:
        origin = _source(docid)
        if self.verdicts.get(origin) is False:
            self.refused[origin] = self.refused.get(origin, 0) + 1
            return
        if docid in self.docids or parsed is None:
            stored = self.stored.get(docid)
            if parsed is not None and stored is not None:
                same = _same_message(stored, parsed)
                self.verdicts.setdefault(origin, same)
                if not same:
                    self.verdicts[origin] = False
                    self.refused[origin] = self.refused.get(origin, 0) + 1
                    self.refused_first.setdefault(origin, (docid, source))
                    return
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
        except (IntegrityError, DataError, UnicodeError):
            # Another import stored some of these meanwhile, or one holds a value the database
            # (or its driver's encoding) refuses: fall back to one by one, so that one message
            # cannot cost the batch, nor end the import.
            for item in batch:
                try:
                    with transaction.atomic():
                        self._write([item])
                except IntegrityError:
                    self.report.unchanged += 1
                except (DataError, UnicodeError) as exc:
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
        for origin, count in self.refused.items():
            docid, read_at = self.refused_first[origin]
            # ``add``'s source is "<file>:<place>" (the readers' Issue.source and .where).
            file, _colon, where = read_at.partition(":")
            self.report.add(
                Issue(
                    file,
                    where,
                    f"{count} message{'s' if count != 1 else ''} not imported: "
                    f"{docid} holds another message than the one "
                    "stored under that id (an earlier import of another file with the same "
                    "name, another custodian's mailbox say, or ids reused). Rename the file "
                    "(or give the records other ids) and import it again",
                )
            )
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
