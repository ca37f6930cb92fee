"""The audit log, written (``audit``) and read as sentences: who did what to which
document, with names and links instead of the ids and JSON the rows keep
(``review.models.AuditEvent``; G9).

Each action has one describer; the names an event's detail refers to (personas, documents
of the shown lists) are read in bulk for the whole page, so a page of 200 events costs a few
queries, not one per event.
"""

from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from annotate.models import Answer, Document, Judgment, Persona
from review.models import AuditEvent


def audit(*, user, action: str, collection=None, document=None, **detail) -> AuditEvent:
    """Append one row to the audit log (call inside the transaction of what it records)."""
    return AuditEvent.objects.create(
        user=user,
        action=action,
        collection=collection,
        document=document,
        detail=detail,
        at=timezone.now(),
    )


RELEVANCE = dict(Judgment.Relevance.choices)
ANSWERS = dict(Answer.choices)


def _doc_link(doc: Document | None, fallback_id=None) -> SafeString:
    if doc is None:
        return format_html("document #{}", fallback_id) if fallback_id else mark_safe("")
    url = reverse("document-detail", args=[doc.collection.slug, doc.pk])
    label = doc.subject or doc.docid
    return format_html('<a href="{}">{}</a>', url, label[:80])


def _project_link(slug: str) -> SafeString:
    return format_html('<a href="{}">{}</a>', reverse("judging-dashboard", args=[slug]), slug)


def _value(facet: str, value) -> str:
    if facet == "relevance":
        return f"{value}" if value is not None else "undecided"
    if facet in ("persona_sensitive", "personal_sensitive"):
        return ANSWERS.get(value, value or "undecided")
    return repr(value) if value else "(empty)"


FACET_NAMES = {
    "relevance": "relevance",
    "persona_sensitive": "persona sensitive",
    "personal_sensitive": "personally sensitive",
    "comment": "comment",
}


class _Names:
    """Personas and documents an event's detail names by id, read once per page."""

    def __init__(self, events):
        persona_ids, doc_ids = set(), set()
        for e in events:
            d = e.detail or {}
            if isinstance(d.get("persona"), int):
                persona_ids.add(d["persona"])
            for key in ("shown",):
                if isinstance(d.get(key), list):
                    doc_ids.update(i for i in d[key][:5] if isinstance(i, int))
        self.personas = dict(Persona.objects.filter(pk__in=persona_ids).values_list("pk", "name"))
        self.docs = {
            d.pk: d for d in Document.objects.filter(pk__in=doc_ids).select_related("collection")
        }

    def persona(self, value) -> str:
        if isinstance(value, int):
            return self.personas.get(value, f"persona #{value}")
        return str(value or "")


def _who(e) -> SafeString:
    return format_html("<strong>{}</strong>", e.user.username if e.user else "the system")


def _search(e, d, names):
    shown = d.get("shown") or []
    return format_html(
        "{} searched {} for “{}”: {} shown",
        _who(e),
        e.collection.name if e.collection else "a collection",
        d.get("query", ""),
        len(shown),
    )


def _shown_after_review(e, d, names):
    shown = d.get("shown") or []
    links = format_html_join(", ", "{}", ((_doc_link(names.docs.get(i), i),) for i in shown[:5]))
    more = f" and {len(shown) - 5} more" if len(shown) > 5 else ""
    return format_html(
        "{} was shown {} document(s) after review (search #{}): {}{}",
        _who(e),
        len(shown),
        d.get("search", "?"),
        links,
        more,
    )


def _view(e, d, names):
    role = d.get("role")
    return format_html(
        "{}{} opened {}", _who(e), f" ({role})" if role else "", _doc_link(e.document)
    )


def _decision(e, d, names):
    until = f" until {d['until']}" if d.get("until") else ""
    note = f": “{str(d['note'])[:200]}”" if d.get("note") else ""
    return format_html(
        "{} decided <em>{}</em>{} on {} for persona {}{}",
        _who(e),
        str(d.get("kind", "")).replace("_", " "),
        until,
        _doc_link(e.document),
        names.persona(d.get("persona")),
        note,
    )


def _reopen(e, d, names):
    return format_html(
        "{} reopened {} for persona {} (the decision in force was {})",
        _who(e),
        _doc_link(e.document),
        names.persona(d.get("persona")),
        str(d.get("reopened", "none")).replace("_", " "),
    )


def _redact(e, d, names):
    spans = d.get("spans") or []
    reasons = sorted({str(s.get("reason", "")) for s in spans})
    return format_html(
        "{} redacted {} span(s) of {} for persona {} (version {}; {}){}",
        _who(e),
        len(spans),
        _doc_link(e.document),
        names.persona(d.get("persona")),
        d.get("version"),
        ", ".join(reasons) or "no reason",
        f" until {d['until_day']}" if d.get("until_day") else "",
    )


def _redaction_revert(e, d, names):
    to = d.get("to_version")
    return format_html(
        "{} took the redaction of {} for persona {} back to {} (version {})",
        _who(e),
        _doc_link(e.document),
        names.persona(d.get("persona")),
        f"version {to}" if to else "no redaction",
        d.get("version"),
    )


def _redaction_show_elsewhere(e, d, names):
    return format_html(
        "{} released {} for persona {} with {} string(s) redacted in other documents left "
        "readable (version {})",
        _who(e),
        _doc_link(e.document),
        names.persona(d.get("persona")),
        d.get("strings"),
        d.get("version"),
    )


def _changes(changed: dict) -> str:
    parts = []
    for facet, pair in (changed or {}).items():
        if facet == "comment":
            parts.append("comment changed")
        elif isinstance(pair, list) and len(pair) == 2:
            old, new = (_value(facet, v) for v in pair)
            parts.append(f"{FACET_NAMES.get(facet, facet)} {old} → {new}")
    return "; ".join(parts) or "no answer changed"


def _judgment_edit(e, d, names):
    return format_html(
        "{} changed their judgment of {} for topic {} ({}) · persona {} · project {}",
        _who(e),
        _doc_link(e.document),
        d.get("topic", "?"),
        _changes(d.get("changed")),
        d.get("persona", ""),
        _project_link(d["project"]) if d.get("project") else "",
    )


def _adjudication(e, d, names):
    decided = []
    if d.get("relevance") is not None:
        decided.append(f"relevance {RELEVANCE.get(d['relevance'], d['relevance'])}")
    if d.get("persona_sensitive"):
        decided.append(f"persona sensitive {_value('persona_sensitive', d['persona_sensitive'])}")
    previous = d.get("previous")
    before = ""
    if previous:
        rel = previous.get("relevance")
        before = " (changing an earlier adjudication: relevance {}, persona sensitive {})".format(
            RELEVANCE.get(rel, "undecided") if rel is not None else "undecided",
            _value("persona_sensitive", previous.get("persona_sensitive")),
        )
    return format_html(
        "{} adjudicated {} for topic {}, persona {}: {}{} · “{}” · project {}",
        _who(e),
        _doc_link(e.document),
        d.get("topic", "?"),
        d.get("persona", ""),
        "; ".join(decided),
        before,
        d.get("reason", ""),
        _project_link(d["project"]) if d.get("project") else "",
    )


def _import(e, d, names):
    job = d.get("job")
    job_link = (
        format_html('<a href="{}">import #{}</a>', reverse("job-detail", args=[job]), job)
        if job
        else "an import"
    )
    return format_html(
        "{} imported {} ({}) into {}: {}{}",
        _who(e),
        d.get("label", ""),
        d.get("format", ""),
        e.collection.name if e.collection else "no collection",
        job_link,
        format_html(" · {}", d["summary"]) if d.get("summary") else "",
    )


def _export(e, d, names):
    hybrid = " (hybrid: with machine labels)" if d.get("machine_labels") else ""
    return format_html(
        "{} downloaded {} of project {}{}",
        _who(e),
        d.get("file", "the exports"),
        _project_link(d["project"]) if d.get("project") else "?",
        hybrid,
    )


def _group_decision(e, d, names):
    kind = {"release": "released", "withhold": "withheld", "not_relevant": "marked not relevant"}
    n = len(d.get("documents") or [])
    skipped = len(d.get("skipped") or [])
    return format_html(
        "{} {} a group of {} document{} at once in {} (each decision is its own row below){}",
        _who(e),
        kind.get(d.get("kind"), d.get("kind", "decided")),
        n,
        "" if n == 1 else "s",
        e.collection.name if e.collection else "no collection",
        format_html("; {} skipped", skipped) if skipped else "",
    )


def _other(e, d, names):
    pairs = "; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in sorted((d or {}).items()))
    on = format_html(" on {}", _doc_link(e.document)) if e.document_id else ""
    return format_html("{} {}{}{}", _who(e), e.action, on, f" ({pairs})" if pairs else "")


def _audit_link(d) -> SafeString:
    if not d.get("audit_id"):
        return mark_safe("a release audit")
    url = reverse("release-certificate", args=[d["audit_id"]])
    return format_html('<a href="{}">release audit {}</a>', url, d["audit_id"])


def _release_audit_open(e, d, names):
    return format_html(
        "{} opened {}: {} of the {} messages searchers could see drawn for persona {} "
        "(margin {}, confidence {})",
        _who(e),
        _audit_link(d),
        d.get("sample"),
        d.get("frame"),
        names.persona(d.get("persona")),
        d.get("margin"),
        d.get("confidence"),
    )


def _release_audit_judgment(e, d, names):
    return format_html(
        "{} judged {} {} in {}",
        _who(e),
        _doc_link(e.document),
        "sensitive" if d.get("sensitive") else "not sensitive",
        _audit_link(d),
    )


def _release_audit_certified(e, d, names):
    return format_html(
        "{} certified by the last answer: {} sensitive of {} sampled from {}; at most {} "
        "(confidence {})",
        _audit_link(d),
        d.get("found"),
        d.get("sample"),
        d.get("frame"),
        d.get("upper"),
        d.get("confidence"),
    )


def _release_audit_cancel(e, d, names):
    return format_html("{} cancelled {}", _who(e), _audit_link(d))


def _band(b) -> str:
    if not isinstance(b, dict):
        return "?"
    shown = "published" if b.get("published") else "not published"
    return f"[{b.get('low', '?')}, {b.get('high', '?')}), {shown}"


def _band_change(e, d, names):
    link = (
        format_html(
            '<a href="{}">{}</a>', reverse("review-publish", args=[e.collection.slug]), e.collection
        )
        if e.collection
        else "a collection"
    )
    return format_html(
        "{} changed the band of {} for {} from {} to {}{}",
        _who(e),
        link,
        names.persona(d.get("persona")),
        _band(d.get("old")),
        _band(d.get("new")),
        f" ({d['why']})" if d.get("why") else "",
    )


DESCRIBERS = {
    "band-change": _band_change,
    "release-audit-open": _release_audit_open,
    "release-audit-judgment": _release_audit_judgment,
    "release-audit-certified": _release_audit_certified,
    "release-audit-cancel": _release_audit_cancel,
    "search": _search,
    "shown-after-review": _shown_after_review,
    "view": _view,
    "decision": _decision,
    "reopen": _reopen,
    "group-decision": _group_decision,
    "redact": _redact,
    "redaction-revert": _redaction_revert,
    "redaction-show-elsewhere": _redaction_show_elsewhere,
    "judgment-edit": _judgment_edit,
    "adjudication": _adjudication,
    "import": _import,
    "export": _export,
}


def audit_described(events) -> list[tuple]:
    """Return ``(event, sentence)`` for each event; the sentence is safe HTML."""
    events = list(events)
    names = _Names(events)
    out = []
    for e in events:
        describe = DESCRIBERS.get(e.action, _other)
        try:
            text = describe(e, e.detail if isinstance(e.detail, dict) else {}, names)
        except (KeyError, TypeError, ValueError):  # an old row of another shape
            text = _other(e, e.detail if isinstance(e.detail, dict) else {}, names)
        out.append((e, text))
    return out
