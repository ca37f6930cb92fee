"""Release audits and their certificates (issue 33; docs/release-audit.md).

A lead asks how many sensitive messages the persona's searchers can reach. sasc draws a
simple random sample of what they can see now (the frame: ``review.visibility.view``, the
same set a search ranks), archivists judge each sampled message as a searcher would read it
(the redacted copy), and when the last one is judged the certificate's figures are fixed
(``core.release_audit.certificate``): the estimate and exact one-sided upper bounds on the
number and rate of sensitive messages among the visible, hypergeometric over the frame with
Clopper-Pearson beside it.

What the audit does not do, on purpose:
- its answers are not decisions: they change nothing a searcher sees and train nothing, now
  or later (a classifier that learnt from the sample would be judged by the next audit on
  the documents it learnt from). The sensitive messages it finds are listed for an archivist
  to withhold; a withholding is an ordinary decision, and trains like one;
- the bound describes the set as sampled. Any later change of the visible set (an import or
  re-index, a retrain, a band change, a decision, a redaction, a withholding that expired)
  makes the certificate **stale**, with the reason; withholding some or all of the messages the
  audit found does not (the visible set is then the frame without them, and the certificate
  already states the bound on what remains, ``remaining_upper``).
"""

import hashlib
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotate.models import Document
from core import release_audit
from review import visibility
from review.audit import audit
from review.models import Decision, Publication, ReleaseAudit, ReleaseAuditItem

CONFIDENCES = (0.9, 0.95, 0.99)
MARGINS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2)  # the rates a lead may choose to rule out


class AuditError(Exception):
    """A request the audit cannot take; the message says why and what to do, and ``field``
    names the form field at fault when one is (a page shows the defaults again)."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Frame:
    """What the persona's searchers can see now, and what it was built from."""

    docids: list[str]  # sorted
    digest: str
    basis: dict


def _digest(docids) -> str:
    h = hashlib.sha256()
    for d in sorted(docids):
        h.update(d.encode())
        h.update(b"\n")
    return h.hexdigest()


def frame_now(*, publication: Publication) -> Frame:
    """Return the visible set a search ranks now (raises ``IndexNotReady`` before the first
    index build) with its basis: the index and classifier versions, the band, the newest
    decision and redaction, the decisions recorded for the persona on the collection."""
    view = visibility.view(publication)
    key = view.key
    docids = sorted(view.docids)
    basis = {
        "index_version": key.index_version,
        "classifier_version": key.model[0] if key.model else None,
        "band_low": key.band_low,
        "band_high": publication.band_high,
        "newest_decision": key.newest_decision,
        "newest_redaction": key.newest_redaction,
        "decisions": Decision.objects.filter(
            persona=publication.persona, document__collection=publication.collection
        ).count(),
        "day": key.day.isoformat(),
    }
    return Frame(docids, _digest(docids), basis)


def release_audit_plan(
    *, publication: Publication, margin: float, confidence: float, prevalence: float = 0.0
) -> tuple[Frame, release_audit.SampleSize]:
    """Return the frame now and the calculator's answer for it (nothing is written)."""
    _check(margin, confidence, prevalence)
    frame = frame_now(publication=publication)
    if not frame.docids:
        raise AuditError(
            "Searchers can see nothing of this collection now: there is nothing to audit. "
            "Choose a band on the publish page first."
        )
    return frame, release_audit.sample_size(
        len(frame.docids), margin, confidence, prevalence=prevalence
    )


def _check(margin: float, confidence: float, prevalence: float) -> None:
    if confidence not in CONFIDENCES:
        raise AuditError(
            f"Confidence: choose one of {', '.join(f'{c:g}' for c in CONFIDENCES)}.", "confidence"
        )
    if margin not in MARGINS:
        raise AuditError(
            f"Margin: choose one of {', '.join(f'{m:.1%}' for m in MARGINS)}.", "margin"
        )
    if not 0 <= prevalence <= 0.5:
        raise AuditError("Planning prevalence: give a rate between 0 and 0.5.", "prevalence")


def release_audit_open(
    *,
    publication: Publication,
    user,
    margin: float,
    confidence: float,
    prevalence: float = 0.0,
    seed: int | None = None,
) -> ReleaseAudit:
    """Draw the sample and open the audit: one per publication at a time."""
    frame, size = release_audit_plan(
        publication=publication, margin=margin, confidence=confidence, prevalence=prevalence
    )
    sample = release_audit.draw_sample(frame.docids, size.n, seed)
    pks = dict(
        Document.objects.filter(
            collection=publication.collection, docid__in=sample.ids
        ).values_list("docid", "pk")
    )
    try:
        with transaction.atomic():
            opened = ReleaseAudit.objects.create(
                publication=publication,
                persona=publication.persona,
                confidence=confidence,
                margin=margin,
                frame_size=len(frame.docids),
                sample_size=size.n,
                seed=sample.seed,
                frame_digest=frame.digest,
                basis={**frame.basis, "prevalence": prevalence},
                created_by=user,
                created_at=timezone.now(),
            )
            ReleaseAuditItem.objects.bulk_create(
                ReleaseAuditItem(audit=opened, document_id=pks[d], position=i)
                for i, d in enumerate(sample.ids)
            )
            audit(
                user=user,
                action="release-audit-open",
                collection=publication.collection,
                audit_id=opened.pk,
                persona=publication.persona_id,
                frame=len(frame.docids),
                sample=size.n,
                margin=margin,
                confidence=confidence,
            )
    except IntegrityError:
        raise AuditError(
            "An audit of this publication is already being judged: finish or cancel it first."
        ) from None
    return opened


def release_audit_next(*, audit_id: int) -> ReleaseAuditItem | None:
    """Return the open audit's first unjudged message, in draw order, or None."""
    return (
        ReleaseAuditItem.objects.filter(
            audit_id=audit_id, audit__status=ReleaseAudit.Status.OPEN, sensitive__isnull=True
        )
        .select_related("document", "audit")
        .order_by("position")
        .first()
    )


def release_audit_judge(*, item_id: int, user, sensitive: bool) -> ReleaseAudit:
    """Record an archivist's answer on a sampled message (a later answer replaces an earlier
    one while the audit is open); the last answer certifies the audit."""
    with transaction.atomic():
        item = (
            ReleaseAuditItem.objects.select_for_update()
            .select_related("audit", "audit__publication__collection")
            .filter(pk=item_id)
            .first()
        )
        if item is None:
            raise AuditError("No such sampled message.")
        opened = ReleaseAudit.objects.select_for_update().get(pk=item.audit_id)
        if opened.status != ReleaseAudit.Status.OPEN:
            raise AuditError(
                f"This audit is {opened.get_status_display().lower()}: it takes no answers."
            )
        item.sensitive = sensitive
        item.judged_by = user
        item.judged_at = timezone.now()
        item.save(update_fields=["sensitive", "judged_by", "judged_at"])
        audit(
            user=user,
            action="release-audit-judgment",
            collection=item.audit.publication.collection,
            document=item.document,
            audit_id=opened.pk,
            sensitive=sensitive,
        )
        if not opened.items.filter(sensitive__isnull=True).exists():
            _certify(opened, user)
    return opened


def _certify(opened: ReleaseAudit, user) -> None:
    counts = opened.items.aggregate(found=Count("pk", filter=Q(sensitive=True)), n=Count("pk"))
    figures = release_audit.certificate(
        opened.frame_size, counts["n"], counts["found"], opened.confidence
    )
    found_docids = list(
        opened.items.filter(sensitive=True)
        .order_by("position")
        .values_list("document__docid", flat=True)
    )
    opened.figures = {
        **figures._asdict(),
        "sentence": figures.sentence(),
        "found_docids": found_docids,
        "judges": sorted(set(opened.items.values_list("judged_by__username", flat=True)) - {None}),
    }
    opened.status = ReleaseAudit.Status.CERTIFIED
    opened.certified_by = user
    opened.certified_at = timezone.now()
    opened.save(update_fields=["figures", "status", "certified_by", "certified_at"])
    audit(
        user=user,
        action="release-audit-certified",
        collection=opened.publication.collection,
        audit_id=opened.pk,
        frame=figures.frame,
        sample=figures.sample,
        found=figures.found,
        upper=figures.upper_number,
        confidence=figures.confidence,
    )


def release_audit_cancel(*, audit_id: int, user) -> None:
    """Cancel an open audit (its answers stay, read-only)."""
    with transaction.atomic():
        opened = ReleaseAudit.objects.select_for_update().filter(pk=audit_id).first()
        if opened is None or opened.status != ReleaseAudit.Status.OPEN:
            raise AuditError("Only an audit being judged can be cancelled.")
        opened.status = ReleaseAudit.Status.CANCELLED
        opened.save(update_fields=["status"])
        audit(
            user=user,
            action="release-audit-cancel",
            collection=opened.publication.collection,
            audit_id=opened.pk,
        )


@dataclass(frozen=True)
class State:
    """Whether a certificate still describes what searchers can see, and why not."""

    stale: bool
    reasons: list[str]
    frame_now: int | None  # documents searchers can see now (None: no index)


def certificate_state(*, certified: ReleaseAudit) -> State:
    """Compare the visible set now with the one sampled: current when it is the same set,
    or the same set without exactly the messages the audit found (withheld since); stale
    otherwise, with every difference of basis in words."""
    from ranking.services import IndexNotReady

    try:
        frame = frame_now(publication=certified.publication)
    except IndexNotReady:
        return State(True, ["the collection has no index now"], None)
    figures = certified.figures or {}
    # Current when the set is the one sampled, or that set less some or all of the messages
    # the audit found (withheld since, as the certificate asks): adding them back gives the
    # frame again.
    found = set(figures.get("found_docids", []))
    if frame.digest == certified.frame_digest or (
        found and _digest(set(frame.docids) | found) == certified.frame_digest
    ):
        return State(False, [], len(frame.docids))
    was, now = certified.basis, frame.basis
    reasons = []
    if was.get("index_version") != now["index_version"]:
        reasons.append(
            f"the index was rebuilt (version {was.get('index_version')} -> "
            f"{now['index_version']}): documents were imported or re-indexed"
        )
    if was.get("classifier_version") != now["classifier_version"]:
        reasons.append(
            f"the classifier was retrained (version {was.get('classifier_version')} -> "
            f"{now['classifier_version']})"
        )
    if was.get("band_low") != now["band_low"]:
        reasons.append(
            f"the band's lower edge changed ({was.get('band_low'):g} -> {now['band_low']:g})"
        )
    if was.get("newest_decision") != now["newest_decision"]:
        since = Decision.objects.filter(
            persona=certified.persona,
            document__collection=certified.publication.collection,
            pk__gt=was.get("newest_decision") or 0,
        )
        kinds = dict(since.order_by().values_list("kind").annotate(n=Count("pk")))
        words = ", ".join(f"{n} {Decision.Kind(k).label.lower()}" for k, n in sorted(kinds.items()))
        reasons.append(f"{since.count()} decision(s) since the sample was drawn ({words})")
    if was.get("newest_redaction") != now["newest_redaction"]:
        reasons.append("a redaction was saved or reverted since the sample was drawn")
    if not reasons:
        reasons.append("a withholding ended (its date passed), so a document came back")
    return State(True, reasons, len(frame.docids))
