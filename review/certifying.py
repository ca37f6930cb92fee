"""Pages of release audits: the lead opens one with the sample-size calculator, archivists
judge the sampled messages by keyboard, and the certificate is a page, a JSON and a CSV file
(``review.release_audits``; docs/release-audit.md). Searchers reach none of it."""

import csv
import json

from django.contrib import messages
from django.db.models import Count, Q
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from annotate import roles
from ranking.classifier import publish_inputs
from ranking.services import IndexNotReady
from review import release_audits, selectors
from review.models import Decision, ReleaseAudit
from review.publishing import publication_or_404
from review.redaction import searcher_copies

lead_required = roles.role_required(roles.LEAD)
judges_required = roles.role_required(roles.ARCHIVIST, roles.LEAD)

MARGINS = (0.005, 0.01, 0.02, 0.05)  # offered on the page (the service also takes 10%, 20%)


def _numbers(data) -> tuple[float, float, float]:
    """Margin, confidence and planning prevalence from a form, with the field named when one
    is not a number."""
    out = []
    for field, default in (("margin", 0.01), ("confidence", 0.95), ("prevalence", 0.0)):
        raw = (data.get(field) or "").strip()
        try:
            out.append(float(raw) if raw else default)
        except ValueError:
            raise release_audits.AuditError(
                f"{field.capitalize()}: {raw[:20]!r} is not a number.", field
            ) from None
    return tuple(out)


@require_http_methods(["GET", "HEAD", "POST"])
@lead_required
def audits(request, slug):
    """The publication's release audits, and a new one: the calculator answers live (an
    htmx GET of the ``calculator`` partial writes nothing); the POST draws the sample."""
    publication = publication_or_404(slug)
    error, plan, frame = None, None, None
    data = request.POST if request.method == "POST" else request.GET
    try:
        margin, confidence, prevalence = _numbers(data)
        if request.method == "POST":
            opened = release_audits.release_audit_open(
                publication=publication,
                user=request.user,
                margin=margin,
                confidence=confidence,
                prevalence=prevalence,
            )
            messages.info(
                request,
                f"Audit opened: {opened.sample_size:,} messages drawn from the "
                f"{opened.frame_size:,} searchers can see, for the archivists to judge.",
            )
            return redirect("release-audits", slug=slug)
        frame, plan = release_audits.release_audit_plan(
            publication=publication, margin=margin, confidence=confidence, prevalence=prevalence
        )
    except release_audits.AuditError as exc:
        error = str(exc)
        if exc.field is not None:  # a bad number: show the defaults; else keep the choices
            margin, confidence, prevalence = 0.01, 0.95, 0.0
    except IndexNotReady:
        error, margin, confidence, prevalence = "The collection has no index yet.", 0.01, 0.95, 0.0
    context = {
        "publication": publication,
        "collection": publication.collection,
        "plan": plan,
        "frame": frame,
        "error": error,
        "margin": margin,
        "confidence": confidence,
        "prevalence": prevalence,
        "margins": [(m, f"{m:.1%}".replace(".0%", "%")) for m in MARGINS],
        "confidences": [(c, f"{c:.0%}") for c in release_audits.CONFIDENCES],
        **_judging_time(publication, plan),
    }
    if request.htmx and request.method == "GET":  # the calculator alone: no list, no states
        return render(request, "review/_release_calculator.html", context)
    context["audits"] = [
        (a, release_audits.certificate_state(certified=a) if a.figures else None)
        for a in ReleaseAudit.objects.filter(publication=publication)
        .select_related("created_by", "certified_by")
        .annotate(judged=Count("items", filter=Q(items__sensitive__isnull=False)))[:20]
    ]
    return render(
        request,
        "review/release_audits.html",
        context,
        status=400 if error and request.method == "POST" else 200,
    )


def _judging_time(publication, plan) -> dict:
    if plan is None:
        return {}
    inputs = publish_inputs(collection=publication.collection, persona=publication.persona)
    return {
        "judging_minutes": max(1, round(plan.n * inputs.seconds_per_decision / 60)),
        "seconds_source": inputs.seconds_source,
    }


@require_http_methods(["GET", "HEAD", "POST"])
@judges_required
def judge(request, audit_id):
    """The next sampled message of an open audit, as a searcher reads it; ``s`` sensitive,
    ``n`` not sensitive (for the persona)."""
    opened = get_object_or_404(
        ReleaseAudit.objects.select_related("persona", "publication__collection"), pk=audit_id
    )
    if request.method == "POST":
        answer = request.POST.get("answer")
        item_id = request.POST.get("item")
        if answer not in ("sensitive", "not_sensitive") or not (item_id or "").isdigit():
            messages.error(request, "Answer: choose sensitive (s) or not sensitive (n).")
        else:
            try:
                release_audits.release_audit_judge(
                    item_id=int(item_id), user=request.user, sensitive=answer == "sensitive"
                )
            except release_audits.AuditError as exc:
                messages.error(request, str(exc))
        opened.refresh_from_db()
        if opened.status == ReleaseAudit.Status.CERTIFIED:
            messages.info(request, "Every sampled message is judged: the certificate is ready.")
            return redirect("release-certificate", audit_id=opened.pk)
        return redirect("release-audit-judge", audit_id=opened.pk)
    item = release_audits.release_audit_next(audit_id=opened.pk)
    if item is None:
        if opened.status == ReleaseAudit.Status.CERTIFIED:
            return redirect("release-certificate", audit_id=opened.pk)
        return render(request, "review/release_audit_judge.html", {"audit": opened, "item": None})
    doc = searcher_copies(persona=opened.persona, documents=[item.document])[0]
    judged, total = opened.items.filter(sensitive__isnull=False).count(), opened.sample_size
    return render(
        request,
        "review/release_audit_judge.html",
        {"audit": opened, "item": item, "doc": doc, "judged": judged, "total": total},
    )


@require_safe
@judges_required
def certificate(request, audit_id):
    """The certificate: a page (printable), or ``?format=json`` / ``?format=csv``."""
    certified = get_object_or_404(
        ReleaseAudit.objects.select_related(
            "persona", "publication__collection", "created_by", "certified_by"
        ),
        pk=audit_id,
    )
    if certified.figures is None:
        return redirect("release-audit-judge", audit_id=certified.pk)
    state = release_audits.certificate_state(certified=certified)
    record = _record(certified, state)
    fmt = request.GET.get("format")
    name = f"certificate-{certified.publication.collection.slug}-{certified.pk}"
    if fmt == "json":
        response = HttpResponse(
            json.dumps(record, indent=2, ensure_ascii=False), content_type="application/json"
        )
        response["Content-Disposition"] = f'attachment; filename="{name}.json"'
        return response
    if fmt == "csv":
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
        writer = csv.writer(response)
        writer.writerow(["field", "value"])
        for key, value in record.items():
            if key != "found":
                writer.writerow([key, "; ".join(value) if isinstance(value, list) else value])
        writer.writerow(["found", "; ".join(d["docid"] for d in record["found"])])
        return response
    found = list(
        certified.items.filter(sensitive=True).select_related("document").order_by("position")
    )
    withheld_now = _withheld_now(certified, [f.document_id for f in found])
    plan = None
    if state.stale and state.frame_now:
        try:
            _frame, plan = release_audits.release_audit_plan(
                publication=certified.publication,
                margin=certified.margin,
                confidence=certified.confidence,
                prevalence=certified.basis.get("prevalence", 0.0),
            )
        except release_audits.AuditError:
            plan = None
    return render(
        request,
        "review/certificate.html",
        {
            "audit": certified,
            "record": record,
            "state": state,
            "found": [(f, f.document_id in withheld_now) for f in found],
            "plan": plan,
        },
    )


def _withheld_now(certified: ReleaseAudit, document_ids: list[int]) -> set[int]:
    kinds = selectors.decisions_in_force_kinds(
        persona=certified.persona,
        collection=certified.publication.collection,
        today=timezone.localdate(),
        document_ids=document_ids,
    )
    return {d for d in document_ids if kinds.get(d) == Decision.Kind.WITHHOLD}


def _record(a: ReleaseAudit, state) -> dict:
    """Everything the certificate states, as the downloads write it."""
    f = a.figures
    return {
        "collection": a.publication.collection.name,
        "collection_slug": a.publication.collection.slug,
        "persona": a.persona.name,
        "frame_size": f["frame"],
        "sample_size": f["sample"],
        "found_sensitive": f["found"],
        "estimate_rate": round(f["rate"], 6),
        "estimate_number": round(f["number"], 2),
        "confidence": f["confidence"],
        "upper_number": f["upper_number"],
        "upper_rate": round(f["upper_rate"], 6),
        "clopper_pearson_upper_rate": round(f["cp_upper_rate"], 6),
        "clopper_pearson_upper_number": f["cp_upper_number"],
        "remaining_upper_after_withholding_found": f["remaining_upper"],
        "margin_planned": a.margin,
        "seed": str(a.seed),
        "index_version": a.basis.get("index_version"),
        "classifier_version": a.basis.get("classifier_version"),
        "band_low": a.basis.get("band_low"),
        "band_high": a.basis.get("band_high"),
        "decisions_recorded": a.basis.get("decisions"),
        "sampled_at": a.created_at.isoformat(),
        "certified_at": a.certified_at.isoformat() if a.certified_at else None,
        "requested_by": a.created_by.username,
        "judged_by": f.get("judges", []),
        "statement": f["sentence"] + " The bound describes the visible set as sampled.",
        "stale": state.stale,
        "stale_reasons": state.reasons,
        "found": [{"docid": d} for d in f.get("found_docids", [])],
    }


@require_POST
@lead_required
def cancel(request, audit_id):
    """Cancel an audit being judged."""
    opened = get_object_or_404(
        ReleaseAudit.objects.select_related("publication__collection"), pk=audit_id
    )
    try:
        release_audits.release_audit_cancel(audit_id=opened.pk, user=request.user)
        messages.info(request, "Audit cancelled.")
    except release_audits.AuditError as exc:
        messages.error(request, str(exc))
    return redirect("release-audits", slug=opened.publication.collection.slug)
