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
import threading
from datetime import date

from django.db import transaction
from django.db.models import Count, Max
from django.utils import timezone

from annotate.models import Attachment, Document, Persona
from annotate.selectors import document_text
from core import writings
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


def newest_versions(*, persona: Persona, collection=None, document_ids=None) -> dict:
    """``{document id: newest version}`` of the persona's redactions (in force or not)."""
    rows = Redaction.objects.filter(persona=persona)
    if collection is not None:
        rows = rows.filter(document__collection=collection)
    if document_ids is not None:
        rows = rows.filter(document_id__in=list(document_ids))
    newest: dict[int, Redaction] = {}
    for r in rows.order_by("document_id", "version").iterator():
        newest[r.document_id] = r
    return newest


def redactions_in_force(
    *, persona: Persona, today: date, collection=None, document_ids=None
) -> dict[int, Redaction]:
    """``{document id: newest version}`` of the redactions in force for ``persona``."""
    newest = newest_versions(persona=persona, collection=collection, document_ids=document_ids)
    return {d: r for d, r in newest.items() if redaction_in_force(r, today)}


def secrets_in_force(*, persona: Persona, collection, today: date) -> dict[str, dict]:
    """Every value redacted in the collection for the persona today, under its canonical
    form (``core.writings.key``): ``{key: {"text", "reason", "document_id"}}`` (the
    first document, by id, that redacts it)."""
    out: dict[str, dict] = {}
    force = redactions_in_force(persona=persona, today=today, collection=collection)
    for doc_id in sorted(force):
        for s in force[doc_id].spans:
            key = writings.key(s.get("text", ""))
            if key:
                out.setdefault(
                    key, {"text": s["text"], "reason": s.get("reason", ""), "document_id": doc_id}
                )
    return out


def shows_elsewhere(*, persona: Persona, document_ids) -> set[int]:
    """The documents a person released with the words redacted elsewhere left readable."""
    newest = newest_versions(persona=persona, document_ids=document_ids)
    return {d for d, r in newest.items() if r.shows_elsewhere}


def redacted_secrets(document: Document, redaction: Redaction | None) -> set[str]:
    """The words a redaction hides: the text of each of its spans in the original."""
    return {
        getattr(document, s["field"])[s["start"] : s["end"]]
        for s in (redaction.spans if redaction else [])
        if s["field"] in FIELDS
    }


def redacted_fields(
    document: Document, redaction: Redaction | None, elsewhere=()
) -> dict[str, str]:
    """The document's subject and body with the redaction's spans marked out, and every
    writing of the values they hide and of ``elsewhere`` (values redacted in other
    documents) (``core.writings.redact_everywhere``)."""
    secrets = redacted_secrets(document, redaction) | set(elsewhere)
    return {
        field: writings.redact_everywhere(text, secrets) if secrets else text
        for field, text in spans_marked(document, redaction).items()
    }


def spans_marked(document: Document, redaction: Redaction | None) -> dict[str, str]:
    """The document's subject and body with only the redaction's own spans marked out."""
    out = {}
    for field in FIELDS:
        spans = [
            (s["start"], s["end"])
            for s in (redaction.spans if redaction else [])
            if s["field"] == field
        ]
        text = getattr(document, field)
        out[field] = writings.redact(text, spans) if spans else text
    return out


def searcher_copy(document: Document, redaction: Redaction | None, elsewhere=()) -> Document:
    """The document as a searcher may read it: an unsaved copy with every writing of the
    redacted values marked out of every field a page shows (subject, body, headers, the
    document id, the attachments' names and text, and the size shown for an attachment
    whose text changed: it would tell the hidden value's length) (``redacted`` True), or
    the document itself when nothing is redacted in it. ``elsewhere``: values redacted in
    other documents of the collection, hidden here too."""
    own = redaction if redaction is not None and redaction.spans else None
    secrets = redacted_secrets(document, own) | set(elsewhere)
    if not secrets:
        return document
    doc = copy.copy(document)
    for field, text in redacted_fields(document, own, elsewhere).items():
        setattr(doc, field, unwrapped(text))
    for field in HEADERS:
        setattr(doc, field, writings.redact_everywhere(getattr(document, field), secrets))
    # the id is shown on the page (a zip member named after its subject holds its words);
    # ``docid`` itself stays the key the search uses
    doc.shown_docid = writings.redact_everywhere(document.docid, secrets)
    attachments = list(document.attachments.all().order_by("position"))
    doc.shown_attachments = [_attachment_copy(a, secrets) for a in attachments]
    changed = own is not None or doc.shown_docid != document.docid
    changed = changed or any(getattr(doc, f) != getattr(document, f) for f in (*FIELDS, *HEADERS))
    changed = changed or any(
        (a.filename, a.text) != (b.filename, b.text)
        for a, b in zip(attachments, doc.shown_attachments, strict=True)
    )
    if not changed:
        return document
    doc.redacted = True
    doc.save = doc.delete = _read_only  # a copy for reading: never written back
    return doc


def _attachment_copy(attachment: Attachment, secrets: set[str]) -> Attachment:
    shown = copy.copy(attachment)
    shown.filename = writings.redact_everywhere(attachment.filename, secrets)
    shown.text = unwrapped(writings.redact_everywhere(attachment.text, secrets))
    if shown.text != attachment.text:
        shown.size = len(shown.text.encode("utf-8"))  # the redacted text's, not the original's
    shown.save = shown.delete = _read_only
    return shown


_QUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)*")


def unwrapped(text: str) -> str:
    """``text`` with each paragraph that holds a redaction mark joined into one line (its
    quote markers kept once): mail is wrapped at a fixed width, so where a line holding a
    mark breaks would tell how long the hidden value was (a 4-digit PIN leaves a line
    shorter than a 20-digit one). The page wraps the joined line itself."""
    if writings.MARK not in text:
        return text
    out: list[str] = []
    for block in re.split(r"(\n[ \t>]*\n)", text):
        if writings.MARK not in block or block.startswith("\n"):
            out.append(block)
            continue
        lines = block.split("\n")
        runs: list[tuple[str, list[str]]] = []
        for line in lines:
            prefix = _QUOTE.match(line).group()
            rest = line[len(prefix) :].strip()
            if runs and runs[-1][0].strip() == prefix.strip() and rest:
                runs[-1][1].append(rest)
            else:
                runs.append((prefix, [rest] if rest else []))
        out.append("\n".join(prefix + " ".join(words) for prefix, words in runs))
    return "".join(out)


def _read_only(*args, **kwargs):
    raise RuntimeError("a searcher's redacted copy is never saved")


def searcher_copies(*, persona: Persona, documents: list[Document]) -> list[Document]:
    """``searcher_copy`` of each document, with the redactions in force today: its own, and
    the values redacted in other documents of its collection (unless a person released it
    with them readable)."""
    if not documents:
        return []
    today = timezone.localdate()
    ids = [d.pk for d in documents]
    force = redactions_in_force(persona=persona, today=today, document_ids=ids)
    elsewhere = {
        collection: [
            e["text"]
            for e in secrets_in_force(persona=persona, collection=collection, today=today).values()
        ]
        for collection in {d.collection_id for d in documents}
    }
    shown = shows_elsewhere(persona=persona, document_ids=ids)
    return [
        searcher_copy(d, force.get(d.pk), () if d.pk in shown else elsewhere[d.collection_id])
        for d in documents
    ]


# --- which documents hold a value: a scan of their content ---------------------------------

_holders_lock = threading.Lock()
_holders_cache: dict[tuple, dict[int, frozenset[str]]] = {}


def document_texts(document) -> list[str]:
    """Every text of a document a searcher can read or search: subject, body, headers, its
    id, and its attachments' names and text."""
    return [*(getattr(document, f) for f in FIELDS), *other_texts(document)]


def other_texts(document) -> list[str]:
    """The texts of a document a searcher can read besides its subject and body: headers,
    its id, its attachments' names and text."""
    return [
        *(getattr(document, f) for f in HEADERS),
        document.docid,
        *(t for a in document.attachments.all() for t in (a.filename, a.text)),
    ]


def holders(*, collection, values, chunk: int = 2000) -> dict[int, frozenset[str]]:
    """``{document id: the values it holds}`` for every document of the collection holding
    a writing of one of ``values`` (``core.writings``) in any text a searcher can read or
    search (``document_texts``). A scan of the collection's content, not of its index terms:
    a copy writing a value in another way is found whatever the analyser made of it. Kept
    per process for the same values and the same documents (count and largest ids)."""
    scanner = writings.Scanner(values)
    if not scanner:
        return {}
    # a document's texts never change once imported: its count and largest ids say whether
    # the collection is the one scanned
    docs = Document.objects.filter(collection=collection).aggregate(n=Count("id"), top=Max("id"))
    attachments = Attachment.objects.filter(document__collection=collection).aggregate(
        top=Max("id")
    )
    cache_key = (
        collection.pk,
        frozenset(scanner.by_key),
        docs["n"],
        docs["top"],
        attachments["top"],
    )
    with _holders_lock:
        if cache_key in _holders_cache:
            return _holders_cache[cache_key]
    found: dict[int, frozenset[str]] = {}
    fields = ("id", "docid", *FIELDS, *HEADERS)
    last = 0
    while True:
        rows = list(
            Document.objects.filter(collection=collection, id__gt=last)
            .order_by("id")
            .values_list(*fields)[:chunk]
        )
        if not rows:
            break
        last = rows[-1][0]
        extra: dict[int, list[str]] = {}
        for doc_id, name, text in Attachment.objects.filter(
            document_id__in=[r[0] for r in rows]
        ).values_list("document_id", "filename", "text"):
            extra.setdefault(doc_id, []).extend((name, text))
        for doc_id, *texts in rows:
            held = scanner.held([*texts, *extra.get(doc_id, [])])
            if held:
                found[doc_id] = frozenset(held)
    with _holders_lock:
        if len(_holders_cache) > 32:
            _holders_cache.clear()
        _holders_cache[cache_key] = found
    return found


def holders_forget() -> None:
    """Drop this process's scans (tests)."""
    with _holders_lock:
        _holders_cache.clear()


def redacted_rows(
    *, persona: Persona, collection, docids: set[str], today: date, analyze
) -> dict[str, list[str]]:
    """``{docid: analysed terms}`` of the redacted text of the visible documents
    with a redaction in force, or holding a writing of a value redacted in another document
    of the collection (``holders``: found by content); ``analyze``: the index's analysis,
    ``core.lucene.analyze``. A mark is no term: the row's length is that of the words
    left, whatever the redacted values' length."""
    force = redactions_in_force(persona=persona, today=today, collection=collection)
    if not force:
        return {}
    elsewhere = [
        e["text"]
        for e in secrets_in_force(persona=persona, collection=collection, today=today).values()
    ]
    holding = holders(collection=collection, values=elsewhere)
    docs = [
        d
        for d in Document.objects.filter(pk__in=[*force, *holding]).order_by("id")
        if d.docid in docids
    ]
    shown = shows_elsewhere(persona=persona, document_ids=[d.pk for d in docs])
    attachments: dict[int, list[str]] = {}
    for doc_id, text in (
        Attachment.objects.filter(document__in=[d.pk for d in docs], is_text=True)
        .exclude(text="")
        .order_by("document_id", "position")
        .values_list("document_id", "text")
    ):
        attachments.setdefault(doc_id, []).append(text)
    out = {}
    for d in docs:
        extra = () if d.pk in shown else elsewhere
        fields = redacted_fields(d, force.get(d.pk), extra)
        # the attachments' text is indexed with the message: the hidden values go there too
        secrets = redacted_secrets(d, force.get(d.pk)) | set(extra)
        hidden = [writings.redact_everywhere(t, secrets) for t in attachments.get(d.pk, [])]
        text = document_text(fields["subject"], fields["body"], hidden)
        if d.pk in force or text != document_text(d.subject, d.body, attachments.get(d.pk, [])):
            out[d.docid] = analyze(text)
    return out


_MARKS = re.compile(f"{writings.MARK}+")


def marked_html(text: str) -> str:
    """Escape a redacted text for a page, each redaction as the same labelled mark (its
    width fixed, whatever it hides), lines kept."""
    escaped = html.escape(text)
    marked = _MARKS.sub(
        lambda m: (
            '<span class="redacted" title="Redacted by the archive">[redacted]</span>'
            * (len(m.group()) // len(writings.REDACTED) or 1)
        ),
        escaped,
    )
    return marked.replace("\n", "<br>\n")


def reasons() -> list[RedactionReason]:
    """The reasons archivists may give, as the lead keeps them."""
    return list(RedactionReason.objects.filter(active=True))


def phrase_spans(document: Document, phrases: list[str]) -> list[dict]:
    """Spans of every writing of each typed phrase or number in the subject and body
    (``core.writings``: any case, separators, wrapping; ``617 555 0199`` finds
    ``(617) 555-0199``)."""
    spans = []
    for phrase in phrases:
        for field in FIELDS:
            for start, end in writings.find(getattr(document, field), [phrase]):
                spans.append({"field": field, "start": start, "end": end, "kind": "typed"})
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
        if not reason:
            raise RedactionError("choose a reason for the redaction")
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


def newest_version(persona, document) -> Redaction | None:
    """The document's newest redaction version for the persona (in force or not)."""
    return Redaction.objects.filter(persona=persona, document=document).order_by("-version").first()


def _next_version(persona, document) -> int:
    top = Redaction.objects.filter(persona=persona, document=document).aggregate(v=Max("version"))
    return (top["v"] or 0) + 1


def _version_add(
    *, user, persona, document, action: str, kept, until, note, reverts, shows=False, **detail
):
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
            shows_elsewhere=shows,
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
    end, kind, reason), audited. The new version adds to the redaction in force: what an
    archivist redacted stays redacted until a lead reverts it (``redaction_revert``), never
    lifted as a side effect of redacting more; it ends at the later of the two end dates.
    An empty list is refused."""
    codes = set(RedactionReason.objects.filter(active=True).values_list("code", flat=True))
    clean = _check_spans(document, spans, codes)
    if not clean:
        raise RedactionError("choose the spans to redact, or type the words")
    if until is not None and until <= timezone.localdate():
        raise RedactionError("a redaction must end after today")
    if len(note) > 10_000:
        raise RedactionError("the note is longer than 10,000 characters")
    with transaction.atomic():
        # The version in force is read under the lock _version_add takes, so two archivists
        # redacting at once each add to what the other saved, never to an older version.
        Persona.objects.select_for_update().get(pk=persona.pk)
        now = newest_version(persona, document)
        if redaction_in_force(now, timezone.localdate()):
            given = {(s["field"], s["start"], s["end"]) for s in clean}
            kept = [s for s in now.spans if (s["field"], s["start"], s["end"]) not in given]
            clean = sorted(kept + clean, key=lambda s: (s["field"], s["start"], s["end"]))
            until = None if until is None or now.until is None else max(until, now.until)
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
    now = newest_version(persona, document)
    if now is not None and (now.spans, now.until) == (spans, until):
        what = f"is the same as version {to_version}" if to_version else "redacts nothing"
        raise RedactionError(
            f"{document.docid}: nothing changed: the newest version (v{now.version}) already "
            f"{what}."
        )
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


def shows_elsewhere_save(*, user, persona: Persona, document: Document, texts: list[str]):
    """Record that a person releases the document with the strings redacted in other
    documents left readable: a new version keeping its own spans, audited
    (``redaction-show-elsewhere``, with how many strings, not the strings)."""
    current = redactions_in_force(
        persona=persona, today=timezone.localdate(), document_ids=[document.pk]
    ).get(document.pk)
    return _version_add(
        user=user,
        persona=persona,
        document=document,
        action="redaction-show-elsewhere",
        kept=current.spans if current else [],
        until=current.until if current else None,
        note="released with the words redacted elsewhere readable",
        reverts=None,
        shows=True,
        strings=len(texts),
    )


def redaction_history(*, persona: Persona, document: Document) -> list[Redaction]:
    """Every version, newest first."""
    return list(
        Redaction.objects.filter(persona=persona, document=document)
        .select_related("made_by")
        .order_by("-version")
    )
