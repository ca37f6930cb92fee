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
