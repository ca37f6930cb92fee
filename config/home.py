"""The landing page: what each of the user's roles can do now, whichever app it belongs to
(annotate's collections and projects, review's search, queue and loop reports)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_safe

from annotate import roles
from annotate import selectors as annotate_selectors
from review import selectors as review_selectors


@require_safe
@login_required
def home(request):
    """Show each of the user's roles what it can do now, from the data: a searcher the
    collections open for search, an archivist the queue, a lead and an archivist the
    collections, an annotator their projects. Nothing a searcher sees here depends on
    hidden documents (no counts of documents, pending or withheld)."""
    user_roles = roles.user_roles(request.user)
    context = {
        "collections": annotate_selectors.collections_for_user(request.user),
        "projects": annotate_selectors.projects_for_user(request.user),
        "published": [],
        "queue": None,
        "notice": None,
    }
    if roles.SEARCHER in user_roles:
        context["published"] = review_selectors.collections_published()
        context["notice"] = review_selectors.search_notice(publication=None)
    if roles.ARCHIVIST in user_roles:
        context["queue"] = review_selectors.review_queue_summary()
    if roles.LEAD in user_roles:
        context["loop_collections"] = review_selectors.collections_with_publication()
    return render(request, "annotate/home.html", context)
