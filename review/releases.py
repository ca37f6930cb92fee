"""The release rules: the archivist's decisions on a document for a persona (release,
withhold, not relevant), a group's decision applied to its members, a lead's reopening, and
a release that holds words redacted elsewhere (docs/domain.md §9, docs/archivist-loop.md).

Every decision is a ``Decision`` row and a ``decision`` audit row written in one transaction
with the requests it resolves (G9); a retrain is asked for after ``retrain_every`` of them.
"""

from dataclasses import dataclass, field
from datetime import date

from django.db import transaction
from django.utils import timezone

from annotate.models import Collection, Document, Persona
from ranking.classifier import sensitivity_scores
from ranking.models import SensitivityModel
from review import copies, redaction
from review.audit import audit
from review.models import AuditEvent, Decision, Publication, ReviewRequest
from review.selectors import decisions_in_force_kinds


class DecisionError(ValueError):
    """A decision that cannot be recorded; the message says why. ``held``: the documents a
    group's release had left out before it was refused (``review_decide_group``)."""

    def __init__(self, message: str, held: list[Document] | None = None):
        super().__init__(message)
        self.held = held or []


def _decision_check(*, kind: str, until: date | None, note: str) -> None:
    if kind not in (Decision.Kind.RELEASE, Decision.Kind.WITHHOLD, Decision.Kind.NOT_RELEVANT):
        raise DecisionError("decide release, withhold or not relevant")
    if until is not None and kind != Decision.Kind.WITHHOLD:
        raise DecisionError("only a withholding can have an end date")
    if until is not None and until <= timezone.localdate():
        raise DecisionError("a withholding must end after today")
    if len(note) > 10_000:
        raise DecisionError("the note is longer than 10,000 characters")


def review_decide(
    *,
    archivist,
    persona: Persona,
    document: Document,
    kind: str,
    until: date | None = None,
    note: str = "",
    seen: int | None = None,
) -> Decision:
    """Record a decision, resolve every pending request for the document and persona, and
    ask for a retrain after ``retrain_every`` new decisions.

    ``seen``: the latest decision on the document and persona the archivist's page showed
    (its id, 0: none). A decision recorded since (in another tab, by another archivist) is
    not overturned unseen: ``DecisionError`` names it, and the page shows it."""
    _decision_check(kind=kind, until=until, note=note)
    now = timezone.now()
    p, _version = sensitivity_scores(collection=document.collection, persona=persona)
    status = {
        Decision.Kind.RELEASE: ReviewRequest.Status.RELEASED,
        Decision.Kind.WITHHOLD: ReviewRequest.Status.WITHHELD,
        Decision.Kind.NOT_RELEVANT: ReviewRequest.Status.NOT_RELEVANT,
    }[kind]
    with transaction.atomic():
        again = _check_not_decided_since(
            persona=persona,
            document=document,
            seen=seen,
            archivist=archivist,
            repeat=(archivist.pk, kind, until),
        )
        if again is not None:
            return again  # the same decision sent twice (a second click): recorded once
        decision = Decision.objects.create(
            persona=persona,
            document=document,
            kind=kind,
            until=until,
            note=note,
            decided_by=archivist,
            decided_at=now,
            p_sensitive=p.get(document.docid),
        )
        resolved = ReviewRequest.objects.filter(
            persona=persona, document=document, status=ReviewRequest.Status.PENDING
        ).update(status=status, decided_at=now)
        audit(
            user=archivist,
            action="decision",
            collection=document.collection,
            document=document,
            kind=kind,
            until=until.isoformat() if until else None,
            persona=persona.pk,
            requests=resolved,
            note=note,
        )
        _retrain_when_due(archivist, persona, document.collection)
    return decision


def _lock_document(document: Document) -> None:
    """Lock the document's row for the decision being made (FOR NO KEY UPDATE: the foreign
    keys of the rows a decision inserts still take their share). Every path to a decision
    takes it first, before its requests or a redaction lock their rows, so decisions on one
    document take turns and no two paths lock in opposite orders (a deadlock is a 503)."""
    list(
        Document.objects.select_for_update(no_key=True)
        .filter(pk=document.pk)
        .values_list("pk", flat=True)
    )


def _decided_since(since: Decision, persona: Persona, archivist=None) -> DecisionError:
    """The refusal of a decision from a page older than ``since``. When ``since`` is the
    deciding archivist's own (a second click on another button, or another of their
    pages), the message says "you": naming themselves read as someone else's decision."""
    when = timezone.localtime(since.decided_at).strftime("%Y-%m-%d %H:%M")
    own = archivist is not None and since.decided_by_id == archivist.pk
    who = "you" if own else since.decided_by.username
    if since.kind == Decision.Kind.REOPEN:
        what = f"{who} reopened this document"
    else:
        what = f"{who} decided “{since.get_kind_display()}” on this document"
    where = " (from another of your pages, or a second click)" if own else ""
    return DecisionError(
        f"Not recorded: {what} for {persona.name} at {when}, after this page was "
        f"shown{where}. It is shown below; decide again if it should change."
    )


def _check_not_decided_since(
    *, persona: Persona, document: Document, seen: int | None, archivist=None, repeat=None
) -> Decision | None:
    """Lock the document (``_lock_document``) and refuse, by name (``DecisionError``), a
    decision from a page older than the document's latest decision for ``persona``:
    ``seen`` is the latest the page showed (None: not checked). Of two pages deciding at
    once, the second sees the first's decision. ``repeat`` (archivist id, kind, end date):
    a latest decision by that archivist of that kind and end date is the same one sent
    twice (a second click), returned instead of refused. ``archivist``: the one deciding,
    whose own earlier decision the refusal calls "yours"."""
    _lock_document(document)
    if seen is None:
        return None
    since = (
        Decision.objects.filter(persona=persona, document=document, id__gt=seen)
        .select_related("decided_by")
        .order_by("-id")
        .first()
    )
    if since is None:
        return None
    if repeat is not None and (since.decided_by_id, since.kind, since.until) == repeat:
        return since
    raise _decided_since(since, persona, archivist)


def _release_again(*, archivist, persona, document, seen, same):
    """``_check_not_decided_since`` for a release from a page that saw ``seen``: None when
    nothing was decided since; when this archivist released the document since, what
    ``same(that decision)`` returns, the request being the same one sent twice, or the
    refusal (``DecisionError``) when it returns None."""
    again = _check_not_decided_since(
        persona=persona,
        document=document,
        seen=seen,
        archivist=archivist,
        repeat=(archivist.pk, Decision.Kind.RELEASE, None),
    )
    if again is None:
        return None
    found = same(again)
    if found is None:
        raise _decided_since(again, persona, archivist)
    return found


@dataclass
class GroupOutcome:
    decided: list[Decision]
    skipped: list[tuple[Document, str]]  # (document, why it was not decided)
    # not released: they hold words redacted in another document (``review_decide_document``)
    held: list[Document] = field(default_factory=list)


def review_decide_group(
    *,
    archivist,
    items: list[tuple[Persona, Document]],
    kind: str,
    until: date | None = None,
    note: str = "",
) -> GroupOutcome:
    """Apply one decision to a group of queued documents the archivist has viewed: each
    (persona, document) gets its own ``review_decide`` (its own Decision row and audit row,
    its requests resolved), all in one transaction, plus one ``group-decision`` audit row
    naming them. A document is skipped, and said why, when it is no longer pending (another
    archivist decided it since the page was shown) or when this archivist has not viewed it
    since it was queued: a group decision is for documents seen, never for ones only listed.

    A release leaves out, in ``held``, the documents holding words redacted in another
    document: those are released only on their own page, redacted or readable as a person
    chooses (``review_decide_document``). When every one is held, nothing is decided and
    nothing refused; a refusal of the rest (``DecisionError``) names them too."""
    held = []
    if kind == Decision.Kind.RELEASE:
        held = [(p, d) for p, d in items if copies.held_elsewhere(persona=p, document=d)]
        items = [i for i in items if i not in held]
    held_documents = [d for _p, d in held]
    if held and not items:
        return GroupOutcome([], [], held_documents)
    try:
        if not items:
            raise DecisionError("choose at least one document of the group")
        if len(items) > 500:
            raise DecisionError("a group decision covers at most 500 documents")
        _decision_check(kind=kind, until=until, note=note)
    except DecisionError as exc:
        exc.held = held_documents
        raise
    decided, skipped = [], []
    with transaction.atomic():
        # In document order, each document's row locked before its requests, as every path
        # to a decision does: no two decisions lock in opposite orders (a deadlock).
        for persona, document in sorted(items, key=lambda pair: (pair[1].pk, pair[0].pk)):
            _lock_document(document)
            # Lock the pending requests: two archivists deciding one group at once must not
            # both decide a document (the second finds nothing pending and skips it).
            pending = list(
                ReviewRequest.objects.select_for_update()
                .filter(persona=persona, document=document, status=ReviewRequest.Status.PENDING)
                .order_by("requested_at")
            )
            if not pending:
                skipped.append((document, "no longer waiting: decided since the page was shown"))
                continue
            seen = AuditEvent.objects.filter(
                user=archivist,
                action="view",
                document=document,
                detail__role="archivist",
                at__gte=pending[0].requested_at,
            ).exists()
            if not seen:
                skipped.append((document, "not viewed since it was queued"))
                continue
            decided.append(
                review_decide(
                    archivist=archivist,
                    persona=persona,
                    document=document,
                    kind=kind,
                    until=until,
                    note=note,
                )
            )
        if decided:
            audit(
                user=archivist,
                action="group-decision",
                collection=decided[0].document.collection,
                kind=kind,
                decisions=[d.pk for d in decided],
                documents=[d.document_id for d in decided],
                skipped=[doc.pk for doc, _why in skipped],
            )
    return GroupOutcome(decided, skipped, held_documents)


def release_with_elsewhere(
    *,
    archivist,
    persona: Persona,
    document: Document,
    choice: str,
    note: str = "",
    seen: int | None = None,
) -> Decision:
    """Release a document holding strings redacted elsewhere, as a person chose: ``redact``
    them here too (a new redaction version), or ``show`` them (a version that records the
    choice, ``shows_elsewhere``; audited ``redaction-show-elsewhere``)."""
    held = copies.held_elsewhere(persona=persona, document=document)
    if choice not in ("redact", "show"):
        raise redaction.RedactionError(
            "choose whether to redact the words redacted elsewhere, or to release them readable"
        )
    with transaction.atomic():
        # The same choice sent twice (both requests from one page): the first's decision,
        # when what it made is in force (read again: it was read before the lock).
        again = _release_again(
            archivist=archivist,
            persona=persona,
            document=document,
            seen=seen,
            same=lambda d: d if _elsewhere_done(archivist, persona, document, choice) else None,
        )
        if again is not None:
            return again
        if choice == "redact":
            copies.same_redaction_add(
                archivist=archivist,
                persona=persona,
                document=document,
                secrets=held,
                note=note or "the same redaction as elsewhere in the collection",
            )
        else:
            redaction.shows_elsewhere_save(
                user=archivist, persona=persona, document=document, texts=[e["text"] for e in held]
            )
        # Checked above, under the document's lock this transaction still holds.
        return review_decide(
            archivist=archivist, persona=persona, document=document, kind="release", note=note
        )


def _elsewhere_done(archivist, persona, document, choice) -> bool:
    """Whether the document's newest redaction version is ``archivist``'s ``choice`` about
    the words redacted elsewhere: ``redact``, none of them left readable; ``show``, a
    version recording that they are released readable."""
    if choice == "redact":
        return not copies.held_elsewhere(persona=persona, document=document)
    newest = redaction.newest_version(persona, document)
    return newest is not None and newest.made_by_id == archivist.pk and newest.shows_elsewhere


def review_decide_document(
    *,
    archivist,
    persona: Persona,
    document: Document,
    kind: str,
    until: date | None = None,
    note: str = "",
    elsewhere: str = "",
    seen: int | None = None,
) -> Decision:
    """Record the archivist's decision on one document from its review page. A document
    holding words redacted in another document is never released silently: its release
    waits for a person's choice, ``elsewhere``: ``redact`` them here too or ``show`` them
    (``release_with_elsewhere``); any other decision is ``review_decide``."""
    held = kind == Decision.Kind.RELEASE and copies.held_elsewhere(
        persona=persona, document=document
    )
    if not held:
        return review_decide(
            archivist=archivist,
            persona=persona,
            document=document,
            kind=kind,
            until=until,
            note=note,
            seen=seen,
        )
    if elsewhere not in ("redact", "show"):
        words = ", ".join(f"“{e['text']}”" for e in held)
        raise DecisionError(
            f"Not released: it holds {words}, redacted in another document. Choose "
            "to redact it here too, or to release it readable."
        )
    return release_with_elsewhere(
        archivist=archivist,
        persona=persona,
        document=document,
        choice=elsewhere,
        note=note,
        seen=seen,
    )


def review_redact_release(
    *,
    archivist,
    persona: Persona,
    document: Document,
    spans: list[dict],
    phrases: list[str],
    reason: str,
    until: date | None = None,
    note: str = "",
    seen: int | None = None,
) -> redaction.Redaction:
    """Release a redacted copy of the document: the spans ticked (``field``, ``start``,
    ``end``, ``kind``) and every writing of the phrases typed (at most 100), all with the
    ``reason``, saved as a new version of its redaction and the release recorded, in one
    transaction (a searcher never sees it unredacted). A typed phrase the subject and body
    do not hold refuses the whole redaction: releasing it would let the archivist believe
    the phrase hidden."""
    spans = [{**s, "reason": reason} for s in spans]
    missing = []
    for phrase in phrases[:100]:
        found = redaction.phrase_spans(document, [phrase])
        missing += [] if found else [phrase]
        spans += [{**s, "reason": reason} for s in found]
    if missing:
        names = ", ".join(f"“{p[:60]}”" for p in missing[:5])
        raise redaction.RedactionError(
            f"Nothing was redacted or released: {names} "
            f"{'is' if len(missing) == 1 else 'are'} not in this message's subject or body "
            "(in any writing: any case, spacing or punctuation). Check the spelling, or tick "
            "what the recognisers found."
        )
    if not spans:
        raise redaction.RedactionError("Choose the spans to redact, or type the words, first.")
    with transaction.atomic():
        # Before the redaction is saved (it locks the persona's row after the document's,
        # as every path to a decision does). The same form sent twice: the redaction in
        # force, theirs, already hides all it asks for.
        covered = _release_again(
            archivist=archivist,
            persona=persona,
            document=document,
            seen=seen,
            same=lambda _d: _redaction_covering(archivist, persona, document, spans, until),
        )
        if covered is not None:
            return covered
        made = redaction.redaction_save(
            archivist=archivist,
            persona=persona,
            document=document,
            spans=spans,
            until=until,
            note=note,
        )
        review_decide(
            archivist=archivist, persona=persona, document=document, kind="release", note=note
        )
    return made


def _redaction_covering(archivist, persona, document, spans, until) -> redaction.Redaction | None:
    """The newest redaction version of the document, when ``archivist`` made it, it is in
    force, and it hides every span asked for, with the same reasons, at least as long."""
    newest = redaction.newest_version(persona, document)
    if newest is None or newest.made_by_id != archivist.pk:
        return None
    if not redaction.redaction_in_force(newest, timezone.localdate()):
        return None
    have = {(s["field"], s["start"], s["end"], s.get("reason")) for s in newest.spans}
    want = {(s["field"], s["start"], s["end"], s["reason"]) for s in spans}
    if not want <= have:
        return None
    if newest.until is not None and (until is None or until > newest.until):
        return None
    return newest


def review_reopen(*, lead, persona: Persona, document: Document, note: str = "") -> Decision:
    """A lead takes back the decision in force on a document: it is routed by the classifier
    again, and asked about when it is uncertain."""
    in_force = decisions_in_force_kinds(
        persona=persona, document_ids=[document.pk], today=timezone.localdate()
    )
    if document.pk not in in_force:
        raise DecisionError("there is no decision in force on this document to reopen")
    if len(note) > 10_000:
        raise DecisionError("the note is longer than 10,000 characters")
    p, _version = sensitivity_scores(collection=document.collection, persona=persona)
    with transaction.atomic():
        decision = Decision.objects.create(
            persona=persona,
            document=document,
            kind=Decision.Kind.REOPEN,
            note=note,
            decided_by=lead,
            decided_at=timezone.now(),
            p_sensitive=p.get(document.docid),
        )
        audit(
            user=lead,
            action="reopen",
            collection=document.collection,
            document=document,
            persona=persona.pk,
            reopened=in_force[document.pk],
        )
    return decision


def _retrain_when_due(user, persona: Persona, collection: Collection) -> None:
    publication = Publication.objects.filter(collection=collection, persona=persona).first()
    if publication is None:
        return
    last = (
        SensitivityModel.objects.filter(collection=collection, persona=persona)
        .order_by("-version")
        .values_list("trained_at", flat=True)
        .first()
    )
    decisions = Decision.objects.filter(persona=persona, document__collection=collection)
    if last is not None:
        decisions = decisions.filter(decided_at__gt=last)
    if decisions.count() >= publication.retrain_every:
        from annotate.models import Job
        from ranking.classifier import job_sensitivity_create

        busy = Job.objects.filter(
            kind=Job.Kind.SENSITIVITY,
            collection=collection,
            status__in=[Job.Status.QUEUED, Job.Status.RUNNING],
        ).exists()
        if not busy:
            job_sensitivity_create(
                collection=collection, persona=persona, source="decisions", user=user
            )
