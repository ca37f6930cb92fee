"""Redacted copies (issue 20): what a searcher reads, and searches, of a redacted document.

An archivist picks spans of a document's subject and body (the recognisers' suggestions, or
words they type) and releases a redacted copy. The document itself never changes. Each save
is a new ``Redaction`` version for (persona, document); the newest counts while its ``until``
has not come. From it the searcher's text is made here, and only here:

- ``searcher_copy``: an unsaved copy of the document whose subject and body are redacted, for
  every searcher page (results, snippets, highlights, the document page);
- ``redacted_rows``: the analysed terms of the redacted text, which replace the document's
  row of the postings in the searcher's visible index (``review.visibility``), so the
  redacted words are not in the searcher's vocabulary, document frequencies, lengths or
  scores: a search for them finds nothing.

Every version is audited (``redact``, ``redaction-revert``) in the transaction that makes it.
"""

import copy
import html
import re
from datetime import date

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotate.models import Attachment, Document, Persona
from annotate.selectors import document_text
from ranking import entities as recognisers
from review.audit import audit
from review.models import Redaction, RedactionReason

FIELDS = ("subject", "body")
# Shown to searchers beside them: a redacted word goes from these too (never spans of their own).
HEADERS = ("from_header", "to_header", "cc_header", "bcc_header")


class RedactionError(ValueError):
    """A redaction that cannot be saved; the message says why."""


def redaction_in_force(redaction: Redaction | None, today: date) -> bool:
    """Whether a (newest) version redacts anything today: it has spans and has not ended."""
    return bool(redaction and redaction.spans) and (
        redaction.until is None or today < redaction.until
    )


def redactions_in_force(
    *, persona: Persona, today: date, collection=None, document_ids=None
) -> dict[int, Redaction]:
    """``{document id: newest version}`` of the redactions in force for ``persona``."""
    rows = Redaction.objects.filter(persona=persona)
    if collection is not None:
        rows = rows.filter(document__collection=collection)
    if document_ids is not None:
        rows = rows.filter(document_id__in=list(document_ids))
    newest: dict[int, Redaction] = {}
    for r in rows.order_by("document_id", "version").iterator():
        newest[r.document_id] = r
    return {d: r for d, r in newest.items() if redaction_in_force(r, today)}


def redacted_secrets(document: Document, redaction: Redaction | None) -> set[str]:
    """The words a redaction hides: the text of each of its spans in the original."""
    return {
        getattr(document, s["field"])[s["start"] : s["end"]]
        for s in (redaction.spans if redaction else [])
        if s["field"] in FIELDS
    }


def redacted_fields(document: Document, redaction: Redaction | None) -> dict[str, str]:
    """The document's subject and body with the redaction's spans marked out, and every
    other occurrence of the words they hide (``ranking.entities.redact_everywhere``)."""
    secrets = redacted_secrets(document, redaction)
    out = {}
    for field in FIELDS:
        text = getattr(document, field)
        spans = [
            (s["start"], s["end"])
            for s in (redaction.spans if redaction else [])
            if s["field"] == field
        ]
        if spans:
            text = recognisers.redact(text, spans)
        out[field] = recognisers.redact_everywhere(text, secrets) if secrets else text
    return out


def searcher_copy(document: Document, redaction: Redaction | None) -> Document:
    """The document as a searcher may read it: an unsaved copy with the redacted subject and
    body (``redacted`` True), or the document itself when nothing is redacted."""
    if redaction is None or not redaction.spans:
        return document
    doc = copy.copy(document)
    for field, text in redacted_fields(document, redaction).items():
        setattr(doc, field, text)
    # What the spans hid is hidden wherever a searcher could read it: the headers a page
    # shows and the attachments (their names and text), not only the subject and body.
    secrets = redacted_secrets(document, redaction)
    for field in HEADERS:
        setattr(doc, field, recognisers.redact_everywhere(getattr(document, field), secrets))
    doc.shown_attachments = [
        _attachment_copy(a, secrets) for a in document.attachments.all().order_by("position")
    ]
    doc.redacted = True
    doc.save = doc.delete = _read_only  # a copy for reading: never written back
    return doc


def _attachment_copy(attachment: Attachment, secrets: set[str]) -> Attachment:
    shown = copy.copy(attachment)
    shown.filename = recognisers.redact_everywhere(attachment.filename, secrets)
    shown.text = recognisers.redact_everywhere(attachment.text, secrets)
    shown.save = shown.delete = _read_only
    return shown


def _read_only(*args, **kwargs):
    raise RuntimeError("a searcher's redacted copy is never saved")


def searcher_copies(*, persona: Persona, documents: list[Document]) -> list[Document]:
    """``searcher_copy`` of each document, with the redactions in force today."""
    force = redactions_in_force(
        persona=persona, today=timezone.localdate(), document_ids=[d.pk for d in documents]
    )
    return [searcher_copy(d, force.get(d.pk)) for d in documents]


def redacted_rows(*, persona: Persona, collection, docids: set[str], today: date, analyze):
    """``{docid: analysed terms}`` of the redacted text of the visible documents with a
    redaction in force (``analyze``: the index's analysis, ``ranking.lucene.analyze``)."""
    force = redactions_in_force(persona=persona, today=today, collection=collection)
    if not force:
        return {}
    docs = [
        d
        for d in Document.objects.filter(pk__in=list(force)).only("docid", "subject", "body")
        if d.docid in docids
    ]
    attachments: dict[int, list[str]] = {}
    for doc_id, text in (
        Attachment.objects.filter(document__in=docs, is_text=True)
        .exclude(text="")
        .order_by("document_id", "position")
        .values_list("document_id", "text")
    ):
        attachments.setdefault(doc_id, []).append(text)
    out = {}
    for d in docs:
        fields = redacted_fields(d, force[d.pk])
        # the attachments' text is indexed with the message: the hidden words go there too
        secrets = redacted_secrets(d, force[d.pk])
        hidden = [recognisers.redact_everywhere(t, secrets) for t in attachments.get(d.pk, [])]
        out[d.docid] = analyze(document_text(fields["subject"], fields["body"], hidden))
    return out


_MARKS = re.compile(f"{recognisers.MARK}+")


def marked_html(text: str) -> str:
    """Escape a redacted text for a page, each redaction as a labelled mark, lines kept."""
    escaped = html.escape(text)
    marked = _MARKS.sub(
        lambda m: (
            f'<span class="redacted" title="Redacted" aria-label="redacted">{m.group()}</span>'
        ),
        escaped,
    )
    return marked.replace("\n", "<br>\n")


def reasons() -> list[RedactionReason]:
    """The reasons archivists may give, as the lead keeps them."""
    return list(RedactionReason.objects.filter(active=True))


def phrase_spans(document: Document, phrases: list[str]) -> list[dict]:
    """Spans of every occurrence of each typed phrase (case-insensitive, whole words) in
    the subject and body."""
    spans = []
    for phrase in phrases:
        words = phrase.split()
        if not words:
            continue
        pattern = re.compile(
            r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words) + r"(?!\w)", re.IGNORECASE
        )
        for field in FIELDS:
            for m in pattern.finditer(getattr(document, field)):
                spans.append({"field": field, "start": m.start(), "end": m.end(), "kind": "typed"})
    return spans


def _check_spans(document: Document, spans: list[dict], reason_codes: set[str]) -> list[dict]:
    clean = []
    for s in spans:
        field = s.get("field")
        if field not in FIELDS:
            raise RedactionError(f"a span names the field {field!r}; use subject or body")
        try:
            start, end = int(s["start"]), int(s["end"])
        except (KeyError, TypeError, ValueError) as exc:
            raise RedactionError("a span needs whole-number start and end offsets") from exc
        size = len(getattr(document, field))
        if not 0 <= start < end <= size:
            raise RedactionError(f"the span {start}-{end} is outside the {field} ({size} chars)")
        reason = s.get("reason", "")
        if reason not in reason_codes:
            raise RedactionError(f"“{reason}” is not one of the redaction reasons")
        clean.append(
            {
                "field": field,
                "start": start,
                "end": end,
                "kind": str(s.get("kind", "typed"))[:16],
                "reason": reason,
                "text": getattr(document, field)[start:end][:200],
            }
        )
    # the same span ticked and typed: once, as first given (a ticked one keeps its kind)
    unique = {}
    for s in clean:
        unique.setdefault((s["field"], s["start"], s["end"]), s)
    return sorted(unique.values(), key=lambda s: (s["field"], s["start"], s["end"]))


def _next_version(persona, document) -> int:
    top = Redaction.objects.filter(persona=persona, document=document).aggregate(v=Max("version"))
    return (top["v"] or 0) + 1


def _version_add(*, user, persona, document, action: str, kept, until, note, reverts, **detail):
    """Store the next version and its audit row in one transaction (versions are numbered
    one at a time per persona: the persona row is locked)."""
    with transaction.atomic():
        Persona.objects.select_for_update().get(pk=persona.pk)
        redaction = Redaction.objects.create(
            persona=persona,
            document=document,
            version=_next_version(persona, document),
            spans=kept,
            until=until,
            note=note,
            reverts=reverts,
            made_by=user,
            made_at=timezone.now(),
        )
        audit(
            user=user,
            action=action,
            collection=document.collection,
            document=document,
            persona=persona.pk,
            version=redaction.version,
            **detail,
        )
    return redaction


def redaction_save(
    *,
    archivist,
    persona: Persona,
    document: Document,
    spans: list[dict],
    until: date | None = None,
    note: str = "",
) -> Redaction:
    """Save a new version of the document's redaction for the persona (spans: field, start,
    end, kind, reason), audited. An empty list lifts the redaction."""
    codes = set(RedactionReason.objects.filter(active=True).values_list("code", flat=True))
    clean = _check_spans(document, spans, codes)
    if until is not None and until <= timezone.localdate():
        raise RedactionError("a redaction must end after today")
    if len(note) > 10_000:
        raise RedactionError("the note is longer than 10,000 characters")
    return _version_add(
        user=archivist,
        persona=persona,
        document=document,
        action="redact",
        kept=clean,
        until=until,
        note=note,
        reverts=None,
        spans=[{k: s[k] for k in ("field", "start", "end", "kind", "reason")} for s in clean],
        until_day=until.isoformat() if until else None,
    )


def redaction_revert(
    *, lead, persona: Persona, document: Document, to_version: int, note: str = ""
) -> Redaction:
    """A lead goes back to an earlier version (0: no redaction) as a new version, audited."""
    if to_version:
        earlier = Redaction.objects.filter(
            persona=persona, document=document, version=to_version
        ).first()
        if earlier is None:
            raise RedactionError(f"there is no version {to_version} to go back to")
        spans, until = earlier.spans, earlier.until
    else:
        spans, until = [], None
    return _version_add(
        user=lead,
        persona=persona,
        document=document,
        action="redaction-revert",
        kept=spans,
        until=until,
        note=note[:10_000],
        reverts=to_version,
        to_version=to_version,
    )


def redaction_history(*, persona: Persona, document: Document) -> list[Redaction]:
    """Every version, newest first."""
    return list(
        Redaction.objects.filter(persona=persona, document=document)
        .select_related("made_by")
        .order_by("-version")
    )
