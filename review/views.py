"""Searcher and archivist pages (htmx, keyboard-first for the archivist). Pages that only
read answer GET and HEAD; the decisions are POST only."""

import csv
import json
import math
from datetime import date, timedelta

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from annotate import entities, roles
from annotate.exports import csv_safe
from annotate.models import Collection
from core import explain, lucene
from core.highlight import query_stems
from core.params import id_param, id_params
from ranking.classifier import stored_scores
from ranking.services import result_snippet
from review import copies, exposure, redaction, releases, selectors, services
from review.audit import audit_described
from review.models import Decision, Exposure

searcher_required = roles.role_required(roles.SEARCHER)
archivist_required = roles.role_required(roles.ARCHIVIST)
lead_required = roles.role_required(roles.LEAD)


def _found(found):
    """What a selector found, or 404 (as ``get_object_or_404``)."""
    if found is None:
        raise Http404
    return found


def _published(slug) -> Collection:
    return _found(selectors.collection_published(slug=slug))


@require_safe
@searcher_required
def search_list(request):
    """List the collections the searcher may search."""
    return render(
        request,
        "review/search_list.html",
        {
            "collections": selectors.collections_published(),
            "notice": selectors.search_notice(publication=None),
        },
    )


@require_http_methods(["GET", "HEAD", "POST"])
@searcher_required
def search(request, slug):
    """The search form (GET: creates nothing, even with ``?q=``, which only fills the form);
    a POST runs the search, logs it and redirects to its results (post/redirect/get)."""
    collection = _published(slug)
    if request.method == "POST":
        query = request.POST.get("q", "").strip()[:500]
        if query:
            outcome = services.search_protected(
                user=request.user, collection=collection, query=query
            )
            return redirect("searcher-results", slug=slug, search_id=outcome.search.pk)
    else:
        query = request.GET.get("q", "").strip()[:500]
    return render(
        request,
        "review/search.html",
        {
            "collection": collection,
            "query": query,
            "outcome": None,
            "notice": selectors.search_notice(publication=collection.publication),
        },
    )


@never_cache  # what a searcher was shown stays out of shared caches
@require_safe
@searcher_required
def results(request, slug, search_id):
    """One of the searcher's own searches: what it showed that is still visible now."""
    collection = _published(slug)
    outcome = services.search_results(user=request.user, collection=collection, search_id=search_id)
    if outcome is None:
        raise Http404
    query = outcome.search.query
    stems = query_stems(query, lucene.stem)
    rows = [(doc, result_snippet(doc, stems), copies) for doc, copies in outcome.groups()]
    return render(
        request,
        "review/search.html",
        {
            "collection": collection,
            "query": query,
            "outcome": outcome,
            "results": rows,
            "notice": outcome.notice,
        },
    )


@never_cache  # what a searcher was shown stays out of shared caches
@require_safe
@searcher_required
def released(request, slug, search_id):
    """Return the search's documents released since it ran (polled by the results page)."""
    collection = _published(slug)
    search = _found(
        selectors.search_of(user=request.user, collection=collection, search_id=search_id)
    )
    already = set(id_params(request.GET.getlist("have")))
    found = services.released_for(user=request.user, search=search, already=already)
    stems = query_stems(search.query, lucene.stem)
    rows = [(doc, result_snippet(doc, stems), waited) for doc, waited in found]
    return render(
        request, "review/_released.html", {"collection": collection, "rows": rows, "search": search}
    )


@never_cache  # what a searcher was shown stays out of shared caches
@require_safe
@searcher_required
def document(request, slug, pk):
    """Show a document to a searcher if it is visible to them now, else 404 alike."""
    collection = _published(slug)
    doc = services.searcher_document(user=request.user, collection=collection, document_id=pk)
    if doc is None:
        raise Http404
    context = {"collection": collection, "doc": doc}
    if getattr(doc, "redacted", False):
        context["highlighted_body"] = redaction.marked_html(doc.body)
    return render(request, "review/document.html", context)


def _queue_order(request) -> str:
    """The archivist's chosen queue order (kept in their session)."""
    order = request.GET.get("order")
    if order in selectors.QUEUE_ORDERS:
        request.session["review_order"] = order
    return request.session.get("review_order", "waiting")


QUEUE_MAX_SHOWN = 5_000  # the most one page renders; the total is always said


def _queue_shown(request) -> int:
    """How many queued documents the archivist asked to see (``?shown=``, in pages of
    ``SASC_QUEUE_PAGE``); a value that is not a whole number from 1 to the maximum is
    refused naming what was wrong."""
    page = settings.SASC_QUEUE_PAGE
    raw = request.GET.get("shown", "").strip()
    if not raw:
        return page
    try:
        shown = int(raw)
    except ValueError:
        raise QueueParamError(
            f"shown must be a whole number of documents, not “{raw[:40]}”"
        ) from None
    if not 1 <= shown <= QUEUE_MAX_SHOWN:
        raise QueueParamError(f"shown must be from 1 to {QUEUE_MAX_SHOWN} documents, not {shown}")
    return shown


class QueueParamError(ValueError):
    """A queue page parameter the archivist (or a crafted link) got wrong."""


@require_safe
@archivist_required
def queue(request):
    """Show the archivist's review queue in the chosen order: the first ``shown`` documents
    grouped by thread, with the true total waiting (``review_queue_summary``, the count the
    home page shows) and a link that shows a page more."""
    order = _queue_order(request)
    try:
        shown = _queue_shown(request)
    except QueueParamError as exc:
        return HttpResponse(f"Review queue: {exc}.", status=400, content_type="text/plain")
    threads = selectors.review_queue_threads(order=order, limit=shown)
    template = "review/_queue.html" if request.htmx else "review/queue.html"
    orders = [(key, label) for key, (label, _k) in selectors.QUEUE_ORDERS.items()]
    listed = sum(len(t.items) for t in threads)
    # Counted after listing: a document decided in between is gone from both, one queued in
    # between may be listed and not yet counted, so the total is never below the list.
    total = max(listed, selectors.review_queue_summary()["documents"])
    more = min(settings.SASC_QUEUE_PAGE, max(0, total - listed), QUEUE_MAX_SHOWN - listed)
    response = render(
        request,
        template,
        {
            "threads": threads,
            "total": total,
            "listed": listed,
            "shown": shown,
            "more": more,
            "more_shown": listed + more,
            "default_shown": settings.SASC_QUEUE_PAGE,
            "focus_more": request.htmx and request.GET.get("focus") == "more",
            "order": order,
            "order_label": selectors.QUEUE_ORDERS[order][0],
            "orders": orders,
            "audits": selectors.release_audits_open(),
        },
    )
    # One address, two answers (the list alone to htmx, the page to a browser): no cache
    # may give one for the other.
    patch_vary_headers(response, ("HX-Request",))
    return response


def _in_words(pairs, stored=None) -> list[tuple[str, float]]:
    """(feature, weight or contribution) pairs as (phrase, number) for the archivist
    (``core.explain``); with ``stored``, the numbers are one document's contributions and
    their direction comes from the classifier's weights. A name no phrase covers (a stored
    version from an older featurizer) is shown as it is rather than failing the page."""
    out = []
    for name, value in pairs:
        try:
            if stored is None:
                phrase = explain.feature_phrase(name)
            else:
                phrase = explain.contribution_phrase(name, value, stored.weight(name))
        except ValueError:
            phrase = name
        out.append((phrase, value))
    return out


@require_safe
@archivist_required
def item(request, persona_id, document_id):
    """Show one queued document with the classifier's reasons and the exposing queries."""
    persona, doc = _found(selectors.review_pair(persona_id=persona_id, document_id=document_id))
    model, stored = stored_scores(collection=doc.collection, persona=persona)
    towards, away = stored.contributions(doc.docid) if stored else ([], [])
    publication = selectors.publication_of(collection=doc.collection, persona=persona)
    services.review_item_viewed(archivist=request.user, document=doc)
    # The worker finds the exposing queries: the page asks (an htmx POST on load, so that
    # this GET writes nothing but the audit row) and polls; nothing is computed here.
    found = exposure.exposure_current(document=doc, persona=persona)
    return render(
        request,
        "review/item.html",
        {
            **_redaction_context(doc, persona),
            "persona": persona,
            "doc": doc,
            "p": stored.p.get(doc.docid) if stored else None,
            "model": model,
            "version": model.version if model else None,
            "band": (publication.band_low, publication.band_high) if publication else None,
            "towards": _in_words(towards, stored),
            "away": _in_words(away, stored),
            "top_sensitive": _in_words(model.report.get("top_sensitive", [])[:10] if model else []),
            "top_not_sensitive": _in_words(
                model.report.get("top_not_sensitive", [])[:10] if model else []
            ),
            "queries": selectors.exposing_queries(document=doc, persona=persona),
            "exposure": {**_exposure_context(doc, persona, found, publication), "ask": True},
            "earlier": selectors.decisions_on(document=doc, persona=persona),
            # What the page saw: a decision recorded after it is not overturned unseen.
            "seen_decision": Decision.objects.filter(persona=persona, document=doc)
            .order_by("-id")
            .values_list("id", flat=True)
            .first()
            or 0,
            "tomorrow": _tomorrow(),
        },
    )


def _exposure_context(doc, persona, found, publication) -> dict:
    return {
        "doc": doc,
        "persona": persona,
        "row": found,
        "published": publication is not None and publication.persona_id == persona.pk,
        "polling": found is not None
        and found.status in (Exposure.Status.QUEUED, Exposure.Status.RUNNING),
        "overview": exposure.exposure_overview(found)
        if found is not None and found.status == Exposure.Status.READY
        else None,
    }


@require_http_methods(["GET", "HEAD", "POST"])
@roles.role_required(roles.ARCHIVIST, roles.LEAD)
def exposure_panel(request, document_id, persona_id=None):
    """A document's exposing queries for an archivist or a lead (htmx partial, polled while
    the worker computes them); a POST asks for them (again, with ``again``). Without a
    persona: the persona the collection is published for (a lead's document page)."""
    if persona_id is None:
        doc = _found(selectors.document_with_collection(document_id=document_id))
        publication = selectors.publication_of(collection=doc.collection)
        if publication is None:
            return render(request, "review/_exposure.html", {"exposure": None})
        persona = publication.persona
    else:
        persona, doc = _found(selectors.review_pair(persona_id=persona_id, document_id=document_id))
        publication = selectors.publication_of(collection=doc.collection, persona=persona)
    if request.method == "POST" and publication is not None:
        found = exposure.exposure_request(
            user=request.user, document=doc, persona=persona, again=bool(request.POST.get("again"))
        )
    else:
        found = exposure.exposure_current(document=doc, persona=persona)
    back = request.POST.get("back") or request.GET.get("back", "")
    if back not in ("review", "document"):
        back = "review" if roles.has_role(request.user, roles.ARCHIVIST) else "document"
    if request.method == "POST" and not request.htmx:
        if back == "review":
            return redirect("review-item", persona_id=persona.pk, document_id=doc.pk)
        return redirect("document-detail", slug=doc.collection.slug, pk=doc.pk)
    return render(
        request,
        "review/_exposure.html",
        {"exposure": _exposure_context(doc, persona, found, publication), "back": back},
    )


def _redaction_context(doc, persona) -> dict:
    """The review page's entity highlights, legend and redaction form (``_redaction.html``)."""
    view = entities.document_entity_view(document=doc, persona=persona)
    history = redaction.redaction_history(persona=persona, document=doc)
    found = copies.copies_of(persona=persona, document=doc)
    return {
        "highlighted_body": view.highlighted_body,
        "entity_legend": view.legend,
        "suggestions": [
            (e, entities.KIND_WORDS.get(e.kind, e.kind), e.kind in entities.SUGGESTED)
            for e in view.entities
        ],
        "reasons": redaction.reasons(),
        "redaction_now": history[0] if history and history[0].spans else None,
        "redaction_history": history,
        "copies": found,
        "copies_todo": sum(not c.redacted for c in found),
        "held_elsewhere": copies.held_elsewhere(persona=persona, document=doc),
    }


def _ticked_spans(request) -> list[dict]:
    """The spans an archivist ticked (``field:start:end:kind``)."""
    spans = []
    for value in request.POST.getlist("span"):
        field, _sep, rest = value.partition(":")
        start, _sep, rest = rest.partition(":")
        end, _sep, kind = rest.partition(":")
        spans.append({"field": field, "start": start, "end": end, "kind": kind})
    return spans


def _tomorrow() -> date:
    """The first day an end date (withholding, redaction) may be: it must be after today."""
    return timezone.localdate() + timedelta(days=1)


def _end_date(value: str, error: type[ValueError]) -> date | None:
    """An end date typed in a form (empty: none), after today as the services require and
    as the forms' ``min`` says; ``error`` (the caller's exception) says what was wrong."""
    if not value.strip():
        return None
    try:
        until = date.fromisoformat(value.strip())
    except ValueError:
        raise error(f"The end date must be a date (YYYY-MM-DD), not “{value[:20]}”.") from None
    if until < _tomorrow():
        raise error(
            f"The end date must be after today: {_tomorrow().isoformat()} at the earliest, "
            f"not {until.isoformat()}."
        )
    return until


@require_POST
@archivist_required
def redact(request, persona_id, document_id):
    """Release a redacted copy of the document: save the chosen spans as a new version of its
    redaction and release it, in one transaction (a searcher never sees it unredacted)."""
    persona, doc = _found(selectors.review_pair(persona_id=persona_id, document_id=document_id))
    try:
        made = releases.review_redact_release(
            archivist=request.user,
            persona=persona,
            document=doc,
            until=_end_date(request.POST.get("until", ""), redaction.RedactionError),
            spans=_ticked_spans(request),
            phrases=[p.strip() for p in request.POST.get("phrases", "").splitlines() if p.strip()],
            reason=request.POST.get("reason", ""),
            note=request.POST.get("note", ""),
            seen=_seen_decision(request),
        )
    except (redaction.RedactionError, releases.DecisionError) as exc:
        messages.error(request, str(exc))
        return redirect("review-item", persona_id=persona.pk, document_id=doc.pk)
    messages.success(
        request,
        f"Released a redacted copy of “{doc.subject or '(no subject)'}” ({doc.docid}) for "
        f"{persona.name}: {len(made.spans)} span(s) redacted, version {made.version}.",
    )
    found = [c for c in copies.copies_of(persona=persona, document=doc) if not c.redacted]
    if found:
        messages.warning(
            request,
            f"{len(found)} other document{'s' if len(found) != 1 else ''} of the collection "
            f"{'hold' if len(found) != 1 else 'holds'} the words you redacted: see “Copies of "
            "the redacted words” below.",
        )
        return redirect("review-item", persona_id=persona.pk, document_id=doc.pk)
    return _next_in_queue(request)


@require_POST
@archivist_required
def redact_copies(request, persona_id, document_id):
    """Give the chosen copies of a document's redacted words the same redaction (same
    reason), each its own audited version."""
    persona, doc = _found(selectors.review_pair(persona_id=persona_id, document_id=document_id))
    ids = id_params(request.POST.getlist("copy"))
    if not ids:
        messages.error(request, "No copies were chosen: tick the documents to redact.")
        return redirect("review-item", persona_id=persona.pk, document_id=doc.pk)
    try:
        done = copies.redact_copies(archivist=request.user, persona=persona, document=doc, ids=ids)
    except redaction.RedactionError as exc:
        messages.error(request, str(exc))
        return redirect("review-item", persona_id=persona.pk, document_id=doc.pk)
    n = len(done["redacted"])
    messages.success(
        request, f"The same redaction is now in {n} other document{'s' if n != 1 else ''}."
    )
    if done["headers_only"]:
        messages.info(
            request,
            f"{len(done['headers_only'])} hold the words only in headers or attachments: "
            "searchers see them redacted there, no span was added.",
        )
    return redirect("review-item", persona_id=persona.pk, document_id=doc.pk)


def _next_in_queue(request, nxt=None):
    """Go on to the next document of the archivist's queue, or to the queue when it is empty."""
    if nxt is None:
        nxt = selectors.review_queue(order=_queue_order(request), limit=1)
    if nxt:
        return redirect(
            "review-item", persona_id=nxt[0]["persona_id"], document_id=nxt[0]["document_id"]
        )
    return redirect("review-queue")


@require_safe
@lead_required
def redactions(request):
    """Redacted documents, newest first, with every version, for a lead to review."""
    labels = selectors.redaction_reason_labels()
    rows = selectors.redactions_recent()
    for row in rows:
        for r in row["versions"]:
            r.shown_spans = [{**s, "reason_label": labels.get(s.get("reason"))} for s in r.spans]
    changed = [
        (collection, persona, found)
        for collection, persona in selectors.redacted_collections()
        if (found := copies.rule_change(persona=persona, collection=collection))
    ]
    return render(request, "review/redactions.html", {"rows": rows, "rule_changed": changed})


@require_POST
@lead_required
def redaction_revert(request, persona_id, document_id):
    """Go back to an earlier version of a document's redaction (0: none) (lead)."""
    persona, doc = _found(selectors.review_pair(persona_id=persona_id, document_id=document_id))
    try:
        to_version = int(request.POST.get("to_version", ""))
    except ValueError:
        messages.error(request, f"{doc.docid}: choose the version to go back to (or none).")
        return redirect("review-redactions")
    if not request.POST.get("confirm"):
        messages.error(
            request, f"{doc.docid}: not changed. Tick “I confirm” to go back to that version."
        )
        return redirect("review-redactions")
    try:
        made = redaction.redaction_revert(
            lead=request.user,
            persona=persona,
            document=doc,
            to_version=to_version,
            note=request.POST.get("note", ""),
        )
    except redaction.RedactionError as exc:
        messages.error(request, str(exc))
    else:
        what = "no redaction" if not made.spans else f"the spans of version {to_version}"
        messages.success(request, f"{doc.docid}: now {what} (version {made.version}).")
    return redirect("review-redactions")


_DONE = {"release": "Released", "withhold": "Withheld", "not_relevant": "Marked not relevant:"}


def _decision_fields(request) -> dict:
    """The decision form's kind, end date and note; ``DecisionError`` for a bad date."""
    return {
        "kind": request.POST.get("kind", ""),
        "until": _end_date(request.POST.get("until", ""), releases.DecisionError),
        "note": request.POST.get("note", ""),
    }


def _seen_decision(request) -> int | None:
    """The latest decision the review page showed (``seen_decision``; 0: none), or None
    from a form without it."""
    return id_param(request.POST.get("seen_decision", ""))


def _group_pairs(values) -> list[tuple[int, int]]:
    """``persona-document`` id pairs of a group (repeated ``item`` parameter), in order,
    each once, at most 200; anything else in the list is ignored."""
    pairs: list[tuple[int, int]] = []
    for value in values[:400]:
        persona, _, document = str(value).partition("-")
        ids = id_params([persona, document])
        if len(ids) == 2 and ids not in pairs:
            pairs.append(ids)
    return pairs[:200]


@require_safe
@archivist_required
def group(request):
    """A group of the queue (one thread or near-duplicate cluster) read in full, each
    document's view audited, with one decision form for the whole group."""
    pairs = _group_pairs(request.GET.getlist("item"))
    threads = selectors.review_queue_threads(pairs=pairs, limit=len(pairs) or 1) if pairs else []
    items = [i for t in threads for i in t.items]
    personas = selectors.personas_by_id(ids=[i.persona_id for i in items])
    services.review_group_viewed(
        archivist=request.user, items=[(personas[i.persona_id], i.document) for i in items]
    )
    for i in items:  # the entity highlights and legend, as on the review page
        view = entities.document_entity_view(document=i.document, persona=personas[i.persona_id])
        i.highlighted_body, i.entity_legend = view.highlighted_body, view.legend
    return render(
        request,
        "review/group.html",
        {
            "items": items,
            "reasons": sorted({r for t in threads for r in t.reasons}),
            "gone": len(pairs) - len(items),
            "tomorrow": _tomorrow(),
        },
    )


def _held_warnings(request, held) -> None:
    for doc in held:
        messages.warning(
            request,
            f"Not released: “{doc.subject or doc.docid}” holds words redacted in another "
            "document; release it on its own page, redacted or readable.",
        )


@require_POST
@archivist_required
def group_decide(request):
    """Apply one decision to the documents of a group the archivist has just read (each
    recorded and audited as its own decision)."""
    items = selectors.review_pairs(pairs=_group_pairs(request.POST.getlist("item")))
    try:
        outcome = releases.review_decide_group(
            archivist=request.user, items=items, **_decision_fields(request)
        )
    except releases.DecisionError as exc:
        _held_warnings(request, exc.held)
        messages.error(request, str(exc))
        return redirect("review-queue")
    _held_warnings(request, outcome.held)
    if outcome.held and not (outcome.decided or outcome.skipped):
        return redirect("review-queue")
    n = len(outcome.decided)
    messages.success(
        request,
        f"{_DONE.get(request.POST['kind'], 'Decided on')} {n} document{'s' if n != 1 else ''}.",
    )
    for doc, why in outcome.skipped:
        messages.warning(request, f"Not decided: “{doc.subject or doc.docid}”: {why}.")
    return redirect("review-queue")


@require_POST
@archivist_required
def decide(request, persona_id, document_id):
    """Record the archivist's decision on a document (release, withhold, not relevant)."""
    persona, doc = _found(selectors.review_pair(persona_id=persona_id, document_id=document_id))
    try:
        decision = releases.review_decide_document(
            archivist=request.user,
            persona=persona,
            document=doc,
            elsewhere=request.POST.get("elsewhere", ""),
            seen=_seen_decision(request),
            **_decision_fields(request),
        )
    except (releases.DecisionError, redaction.RedactionError) as exc:
        messages.error(request, str(exc))
        return redirect("review-item", persona_id=persona.pk, document_id=doc.pk)
    done = _DONE.get(request.POST["kind"], "Decided on")
    until = f" until {decision.until.isoformat()}" if decision.until else ""
    what = f"{done} “{doc.subject or '(no subject)'}” ({doc.docid}) for {persona.name}{until}."
    nxt = selectors.review_queue(order=_queue_order(request), limit=1)
    messages.success(request, what + (" Below: the next document in the queue." if nxt else ""))
    return _next_in_queue(request, nxt)


@require_safe
@roles.role_required(roles.ARCHIVIST, roles.LEAD)
def decisions(request):
    """Decisions in force: a lead reviews and reopens them; an archivist finds one made in
    error, to ask a lead to reopen it."""
    kind = request.GET.get("kind", "")
    kinds = [(k, label) for k, label in Decision.Kind.choices if k != Decision.Kind.REOPEN]
    return render(
        request,
        "review/decisions.html",
        {"decisions": selectors.decisions_in_force(kind=kind), "kind": kind, "kinds": kinds},
    )


@require_POST
@lead_required
def reopen(request, persona_id, document_id):
    """Take back the decision in force on a document (lead)."""
    persona, doc = _found(selectors.review_pair(persona_id=persona_id, document_id=document_id))
    try:
        releases.review_reopen(
            lead=request.user, persona=persona, document=doc, note=request.POST.get("note", "")
        )
    except releases.DecisionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Reopened: the document will be asked about again if uncertain.")
    # Back to the list as the lead filtered it.
    kind = request.POST.get("kind", "")
    if kind in Decision.Kind.values:
        return redirect(f"{reverse('review-decisions')}?kind={kind}")
    return redirect("review-decisions")


def _number(request, name, default, cast, low, high):
    """A report parameter from the query string, clamped; the default when it is not one."""
    try:
        value = cast(request.GET.get(name, default))
    except (TypeError, ValueError):
        return default
    if not math.isfinite(value):  # "nan" passes float() and every comparison
        return default
    return min(max(value, low), high)


@require_safe
@lead_required
def loop_report(request, slug):
    """Per search session and overall: O-CS-DCG@k, shown, reviewed, sensitive shown, waits."""
    collection = _found(selectors.collection_with_publication(slug=slug))
    params = {
        "k": _number(request, "k", 10, int, 1, 100),
        "effort": _number(request, "effort", 0.1, float, 0.0, 100.0),
        "cost": _number(request, "cost", 12.0, float, 0.0, 1000.0),
    }
    rows, totals = selectors.loop_sessions(collection=collection, **params)
    if request.GET.get("format") == "csv":
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="loop-{collection.slug}.csv"'
        writer = csv.writer(response)
        writer.writerow(
            [
                "search",
                "at",
                "searcher",
                "query",
                "relevance_from",
                "shown",
                "requests",
                "reviewed",
                "released",
                "pending",
                "sensitive_shown",
                "wait_mean_s",
                "o_cs_dcg",
            ]
        )
        for r in rows:
            writer.writerow(
                [
                    r.search.pk,
                    r.search.created_at.isoformat(),
                    csv_safe(r.search.searcher.username),
                    csv_safe(r.search.query),
                    r.relevance_from,
                    r.shown,
                    r.requests,
                    r.reviewed,
                    r.released,
                    r.pending,
                    r.sensitive_shown,
                    "" if r.mean_wait is None else f"{r.mean_wait:.1f}",
                    "" if r.o_cs_dcg is None else f"{r.o_cs_dcg:.4f}",
                ]
            )
        return response
    return render(
        request,
        "review/loop_report.html",
        {"collection": collection, "rows": rows, "totals": totals, "params": params},
    )


@require_safe
@lead_required
def audit_log(request):
    """The audit log for leads: the newest events, filtered by action; CSV of all of them."""
    action = request.GET.get("action", "")
    events = selectors.audit_events(action=action)
    if request.GET.get("format") == "csv":

        class Echo:
            def write(self, value):
                return value

        writer = csv.writer(Echo())

        def rows():
            yield writer.writerow(["at", "action", "user", "collection", "document", "detail"])
            for e in events.iterator(chunk_size=2000):
                yield writer.writerow(
                    [
                        e.at.isoformat(),
                        e.action,
                        csv_safe(e.user.username) if e.user else "",
                        e.collection.slug if e.collection else "",
                        e.document_id or "",
                        json.dumps(e.detail, sort_keys=True),
                    ]
                )

        response = StreamingHttpResponse(rows(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="audit.csv"'
        return response
    return render(
        request,
        "review/audit.html",
        {
            "events": audit_described(events.select_related("document__collection")[:200]),
            "action": action,
            "actions": selectors.audit_actions(),
            "published": selectors.collections_with_publication(),
        },
    )
