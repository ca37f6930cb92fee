"""The audit trail, as annotate writes to it: lead and annotator actions that change or take
out labels (edits, adjudications, imports, exports) are logged with the searches and
decisions (G9).

The log itself lives in ``review`` (``review.models.AuditEvent``, append-only), and annotate
may not import review (docs/architecture.md). So review registers the function that appends
a row when Django starts (``audit_recorder_set``), as it registers its label source with
``ranking.classifier``; annotate calls ``audit_record``.
"""

from collections.abc import Callable

_recorder: Callable | None = None


def audit_recorder_set(recorder: Callable) -> None:
    """Register the function that appends one audit row (review's ``services.audit``)."""
    global _recorder
    _recorder = recorder


def audit_record(*, user, action: str, collection=None, document=None, **detail):
    """Append one row to the audit log; call it inside the transaction of what it records.

    ``detail`` holds JSON values only (ids, names, numbers). Refuses to lose an event
    silently: with no recorder registered (review not installed) it raises.
    """
    if _recorder is None:
        raise RuntimeError("no audit recorder registered: review must be in INSTALLED_APPS")
    return _recorder(user=user, action=action, collection=collection, document=document, **detail)
