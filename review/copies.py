"""Copies of redacted words in other documents (issue 20).

An archivist redacts a string in document D; a near-duplicate, a reply quoting D, a forward
or any other message of the collection may hold it too. The searcher never finds it there
either: ``review.redaction`` hides every string redacted in the collection (for the persona)
in every document searchers see, unless a person released that document with them readable
(``Redaction.shows_elsewhere``). This module makes the copies visible to the archivist and
easy to redact for good, each as its own audited redaction version:

- ``copies_of``: the other documents holding a string D's redaction hides, with their state;
- ``redact_copies``: the same redaction (same reason) in each of them;
- ``held_elsewhere``: the strings redacted in other documents that a document holds (the
  release page warns about them), and ``same_redaction_add``: their redaction in it too, for
  ``review.releases.release_with_elsewhere`` (release it with the same redaction, or, a
  person's explicit choice, with them readable).

Copies are found by content, not by index terms (``redaction.holders``: a scan of every
document's subject, body, headers, id and attachments' names and text with the one rule of
``core.writings``): any writing of a value, compact or spaced, wrapped and quoted, in any
case, is a copy, whatever the analyser made of it.
"""

import contextlib
import re
from dataclasses import dataclass
from datetime import date

from django.utils import timezone

from annotate.models import Document, Persona
from core import writings
from ranking.services import IndexNotReady
from review import redaction, visibility
from review.models import Decision, Publication, ReviewRequest
from review.selectors import decisions_in_force_kinds

VISIBLE, READABLE, QUEUED, WITHHELD, HIDDEN = "visible", "readable", "queued", "withheld", "hidden"
STATE_WORDS = {
    VISIBLE: "visible to searchers (shown redacted)",
    READABLE: "visible to searchers and readable (a person chose to release it so)",
    QUEUED: "waiting in the review queue",
    WITHHELD: "withheld",
    HIDDEN: "not visible to searchers (above the classifier's band)",
}


@dataclass
class Copy:
    document: Document
    secrets: list[dict]  # {"text", "reason", "document_id"} of ``secrets_in_force``
    state: str
    redacted: bool  # its own redaction in force already hides them

    @property
    def state_words(self) -> str:
        return STATE_WORDS[self.state]


def _held(document: Document, secrets: list[dict]) -> list[dict]:
    """The secrets written in the document (any text a searcher can read or search)."""
    found = writings.scan(redaction.document_texts(document), [e["text"] for e in secrets])
    return [e for e in secrets if e["text"] in found]


def _keys(document: Document, own) -> set[str]:
    """The canonical form of each value the document's own redaction hides."""
    return {writings.key(t) for t in redaction.redacted_secrets(document, own)}


def copies_of(*, persona: Persona, document: Document, today: date | None = None) -> list[Copy]:
    """The other documents of the collection that hold a writing of a value the document's
    redaction in force hides, each with its state for the persona."""
    today = today or timezone.localdate()
    own = redaction.redactions_in_force(persona=persona, today=today, document_ids=[document.pk])
    if document.pk not in own:
        return []
    everything = redaction.secrets_in_force(
        persona=persona, collection=document.collection, today=today
    )
    secrets = [
        everything[key]
        for s in own[document.pk].spans
        if (key := writings.key(s.get("text", ""))) in everything
    ]
    secrets = list({id(e): e for e in secrets}.values())
    holding = redaction.holders(collection=document.collection, values=[e["text"] for e in secrets])
    candidates = Document.objects.filter(pk__in=list(holding)).exclude(pk=document.pk)
    candidates = candidates.order_by("id")
    found = [(d, [e for e in secrets if e["text"] in holding[d.pk]]) for d in candidates]
    return _with_states(persona=persona, found=found, today=today)


def _with_states(*, persona, found, today) -> list[Copy]:
    ids = [d.pk for d, _h in found]
    kinds = decisions_in_force_kinds(persona=persona, today=today, document_ids=ids)
    queued = set(
        ReviewRequest.objects.filter(
            persona=persona, document_id__in=ids, status=ReviewRequest.Status.PENDING
        ).values_list("document_id", flat=True)
    )
    force = redaction.redactions_in_force(persona=persona, today=today, document_ids=ids)
    readable = redaction.shows_elsewhere(persona=persona, document_ids=ids)
    visible: frozenset[str] = frozenset()
    if found:
        publication = Publication.objects.filter(
            collection=found[0][0].collection_id, persona=persona
        ).first()
        if publication is not None:
            with contextlib.suppress(IndexNotReady):
                visible = visibility.view(publication).docids
    out = []
    for d, held in found:
        if d.docid in visible:
            state = READABLE if d.pk in readable else VISIBLE
        elif kinds.get(d.pk) == Decision.Kind.WITHHOLD:
            state = WITHHELD
        elif d.pk in queued:
            state = QUEUED
        else:
            state = HIDDEN
        keys = _keys(d, force.get(d.pk))
        covered = all(writings.key(e["text"]) in keys for e in held)
        out.append(Copy(d, held, state, covered))
    return out


def held_elsewhere(*, persona: Persona, document: Document) -> list[dict]:
    """The strings redacted in other documents of the collection (in force) that this
    document holds and its own redaction does not hide."""
    today = timezone.localdate()
    own = redaction.redactions_in_force(persona=persona, today=today, document_ids=[document.pk])
    hidden = _keys(document, own.get(document.pk))
    secrets = [
        e
        for key, e in redaction.secrets_in_force(
            persona=persona, collection=document.collection, today=today
        ).items()
        if e["document_id"] != document.pk and key not in hidden
    ]
    return _held(document, secrets)


def same_redaction_add(
    *, archivist, persona, document, secrets, note
) -> redaction.Redaction | None:
    """Add the occurrences of ``secrets`` in the document's subject and body (with their
    reason) to its redaction in force (``redaction.redaction_save`` adds), as a new audited
    version; None when they occur only in headers or attachments (hidden there by the
    searcher's copy all the same)."""
    spans = [
        {"field": field, "start": start, "end": end, "kind": "copy", "reason": e["reason"]}
        for e in secrets
        for field in redaction.FIELDS
        for start, end in writings.find(getattr(document, field), [e["text"]])
    ]
    if not spans:
        return None
    today = timezone.localdate()
    current = redaction.redactions_in_force(
        persona=persona, today=today, document_ids=[document.pk]
    ).get(document.pk)
    # redaction_save adds the spans to the redaction in force (whose spans it keeps as they
    # are, a retired reason included); the copy's own end date stays.
    return redaction.redaction_save(
        archivist=archivist,
        persona=persona,
        document=document,
        spans=spans,
        until=current.until if current else None,
        note=note,
    )


def redact_copies(*, archivist, persona: Persona, document: Document, ids: list[int]) -> dict:
    """Give each chosen copy of the document's redacted strings the same redaction (same
    reason), each its own audited version. ``{"redacted": [...], "headers_only": [...]}``."""
    chosen = {c.document.pk: c for c in copies_of(persona=persona, document=document)}
    out: dict[str, list[Document]] = {"redacted": [], "headers_only": []}
    for pk in ids:
        c = chosen.get(pk)
        if c is None or c.redacted:
            continue
        made = same_redaction_add(
            archivist=archivist,
            persona=persona,
            document=c.document,
            secrets=c.secrets,
            note=f"the same redaction as {document.docid}",
        )
        out["redacted" if made else "headers_only"].append(c.document)
    return out


# --- what the rule of every writing (issue 31) changed ---------------------------------------


def _issue20_pattern(value: str) -> re.Pattern | None:
    """The rule before issue 31, kept only to show a lead what the new one changed: a
    value's words with punctuation between them, a number's digits with at most one space,
    dot, dash or slash between two of them, whole words, any case."""
    chunks = re.findall(r"[^\W_]+", value)
    if not chunks:
        return None
    edge_l, edge_r = r"(?<![^\W_])", r"(?![^\W_])"
    if all(c.isdigit() for c in chunks):
        return re.compile(edge_l + r"[\s.\-/]?".join("".join(chunks)) + edge_r)
    body = r"[\W_]+".join(re.escape(c) for c in chunks)
    return re.compile(edge_l + body + edge_r, re.IGNORECASE)


def _issue20_redacted(text: str, value: str) -> str:
    p = _issue20_pattern(value)
    return writings.redact(text, [m.span() for m in p.finditer(text)]) if p else text


def rule_change(*, persona: Persona, collection, today: date | None = None) -> list[Copy]:
    """The documents of the collection in which the rule of every writing (issue 31) hides
    a value redacted for the persona that the rule before it left readable and searchable:
    each with those values and its state. Nothing stored changes with the rule; this is
    what searchers stopped seeing when it came."""
    today = today or timezone.localdate()
    secrets = list(
        redaction.secrets_in_force(persona=persona, collection=collection, today=today).values()
    )
    holding = redaction.holders(collection=collection, values=[e["text"] for e in secrets])
    found = []
    force = redaction.redactions_in_force(persona=persona, today=today, document_ids=list(holding))
    for d in (
        Document.objects.filter(pk__in=list(holding)).prefetch_related("attachments").order_by("id")
    ):
        # its own spans hid what they cover under either rule
        marked = redaction.spans_marked(d, force.get(d.pk))
        texts = [t for t in (*marked.values(), *redaction.other_texts(d)) if t]
        newly = [
            e
            for e in secrets
            if e["text"] in holding[d.pk]
            and any(
                _issue20_redacted(t, e["text"]) != writings.redact_everywhere(t, [e["text"]])
                for t in texts
            )
        ]
        if newly:
            found.append((d, newly))
    return _with_states(persona=persona, found=found, today=today)
