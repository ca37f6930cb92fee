"""Pages for browsing collections, reading documents and importing (a collection's search
page and index rebuild are ranking's: ``ranking/views.py``)."""

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.db import IntegrityError, transaction
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from annotate import entities, jobs, roles, selectors, services
from annotate.forms import ImportForm
from annotate.models import Collection, Job
from core import lucene
from core.highlight import highlight, query_stems
from core.params import id_param
from core.recognisers import lexicon_terms

BROWSE = (roles.LEAD, roles.ARCHIVIST)
browse_required = roles.role_required(*BROWSE)
PAGE = 20


def _collection(request, slug) -> Collection:
    return get_object_or_404(selectors.collections_for_user(request.user), slug=slug)


@require_safe
@browse_required
def collection_list(request):
    """List the collections open to the user."""
    return render(
        request,
        "annotate/collection_list.html",
        {
            "collections": selectors.collections_for_user(request.user),
        },
    )


@require_safe
@browse_required
def collection_detail(request, slug):
    """Show one collection to a user who may browse it."""
    collection = _collection(request, slug)
    docs = selectors.documents_for_user(request.user, collection=collection).only(
        "id", "docid", "subject", "from_header", "date", "collection_id"
    )
    page = Paginator(docs.order_by("id"), 50).get_page(request.GET.get("page"))
    jobs.jobs_fail_stale()
    return render(
        request,
        "annotate/collection_detail.html",
        {
            "collection": collection,
            "stats": selectors.collection_stats(collection=collection),
            "jobs": selectors.collection_jobs(collection=collection),
            "topics": collection.topics.all()[:200],
            "page": page,
        },
    )


@require_safe
@browse_required
def document_detail(request, slug, pk):
    """Show one document of a collection to a lead or archivist."""
    collection = _collection(request, slug)
    doc = selectors.document_get(user=request.user, pk=pk, collection=collection)
    if doc is None:
        raise Http404
    query = request.GET.get("q", "")[:500]
    body = (
        highlight(doc.body, query_stems(query, lucene.stem), lucene.stem)
        if (query and lucene.is_loaded())
        else None
    )
    return render(
        request,
        "annotate/document_detail.html",
        {
            "collection": collection,
            "doc": doc,
            "query": query,
            "highlighted_body": body,
        },
    )


@require_http_methods(["GET", "HEAD", "POST"])
@roles.role_required(roles.LEAD)
def import_page(request):
    """Upload a file to import as a background job, and list the recent imports."""
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        upload = data["file"]
        with transaction.atomic():
            collection = data.get("collection")
            if collection is None and data.get("new_collection"):
                collection = Collection.objects.create(
                    name=data["new_collection"].strip(),
                    slug=data["new_slug"],
                    kind=data["new_kind"],
                )
            path = services.upload_store(uploaded=upload, original_name=upload.name)
            job = services.job_import_create(
                collection=collection,
                fmt=data["format"],
                path=path,
                label=upload.name[:200],
                user=request.user,
                persona=data.get("persona"),
            )
        messages.info(request, f"Import of {upload.name} queued.")
        return redirect("job-detail", pk=job.pk)
    max_mb = f"{settings.SASC_MAX_IMPORT_FILE_BYTES / (1024 * 1024):.0f} MB"
    return render(request, "annotate/import.html", {"form": form, "max_mb": max_mb})


@require_http_methods(["GET", "HEAD", "POST"])
@roles.role_required(roles.LEAD)
def lexicons(request):
    """Each persona's own sensitive terms, which the recognisers find (lead)."""
    if request.method == "POST":
        named = request.POST.get("lexicon")
        found = entities.lexicon_target(
            persona_id=id_param(request.POST.get("persona", "")) or 0,
            lexicon_id=(id_param(named) or 0) if named else None,
        )
        if found is None:
            messages.error(request, "The lexicon was not saved: no such persona or list.")
            return redirect("review-lexicons")
        persona, lexicon = found
        try:
            entities.lexicon_save(
                persona=persona,
                name=request.POST.get("name", ""),
                terms=request.POST.get("terms", ""),
                lexicon=lexicon,
            )
        except (ValueError, IntegrityError) as exc:
            messages.error(request, f"The lexicon was not saved: {exc}")
        else:
            messages.success(
                request, "Saved. The worker is finding its terms in every collection again."
            )
        return redirect("review-lexicons")
    personas = entities.personas_with_lexicons()
    for persona in personas:
        for lexicon in persona.lexicons.all():  # every term in sight: the box fits them
            lexicon.lines = lexicon.terms.count("\n") + 2
            lexicon.n_terms = len(lexicon_terms(lexicon.terms))
    return render(request, "annotate/lexicons.html", {"personas": personas})


@require_safe
@roles.role_required(roles.LEAD)
def job_detail(request, pk):
    """Show a job's status, progress and report (polled by htmx while it runs)."""
    jobs.jobs_fail_stale()  # a job whose worker died says so instead of "Running"
    job = get_object_or_404(Job.objects.select_related("collection"), pk=pk)
    template = "annotate/_job.html" if request.htmx else "annotate/job_detail.html"
    return render(request, template, {"job": job})
