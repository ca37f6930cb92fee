"""T9 (RELIABILITY.md, G8): the XSS corpus (``tests/fixtures/emails/xss``: script in headers
and body, ``onerror=``, SVG, ``javascript:`` links, HTML and SVG attachments, an HTML body
with remote images, style imports, forms and objects) imported as a collection and opened
in every role in Debian's Chromium: the lead's collection pages, the annotator's judging
page, the archivist's queue and review pages, the searcher's results and document pages.
No dialog, console message, page error or request leaving the origin; every page carries
the enforced CSP."""

import pytest
from django.urls import reverse

from annotate import judgments, services
from annotate.models import Assignment, Judgment, Persona, Topic
from ranking.services import index_build
from review import releases
from review.models import Publication, ReviewRequest
from tests.acceptance.stack import report
from tests.browserkit import login, needs_chromium, watch
from tests.conftest import FIXTURES
from tests.factories import ProjectFactory
from tests.reviewkit import make_review_requests

pytestmark = [
    *needs_chromium,
    pytest.mark.lucene,
    pytest.mark.needs_postgres("the audit trigger refuses the SQLite live server's DELETE flush"),
]
PASSWORD = "pw-browser"


HOSTILE = (
    "article.email script, article.email svg, article.email img, article.email iframe, "
    "article.email object, article.email form, article.email style"
)


def test_hostile_mail_stays_inert_in_every_role(browser, live_server, collection, users):
    imported = services.import_run(
        collection=collection, fmt="emails", path=FIXTURES / "emails" / "xss"
    )
    assert imported.ok, [str(i) for i in imported.errors]
    index_build(collection_id=collection.pk)
    collection.refresh_from_db()
    docs = list(collection.documents.order_by("id"))
    assert len(docs) == 3
    persona = Persona.objects.create(name="Donor")
    topic = Topic.objects.create(collection=collection, number="1", title="quarterly figures")
    project = ProjectFactory(
        name="Hostile",
        collection=collection,
        personas=[persona],
        topics=[topic],
        annotators=[users["annotator"]],
        documents=docs,
    )
    Publication.objects.create(collection=collection, persona=persona, published=True)
    for user in users.values():
        user.set_password(PASSWORD)
        user.save()
    url = live_server.url
    events: list[str] = []
    visited = []

    def as_role(role):
        page = browser.new_context().new_page()
        watch(page, url, events)
        login(page, url, users[role].username, PASSWORD)
        return page

    def visit(page, path, role):
        response = page.goto(url + path)
        assert response.status == 200, (role, path, response.status)
        csp = response.headers.get("content-security-policy", "")
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp, (role, path)
        assert response.headers.get("x-content-type-options") == "nosniff", (role, path)
        # Content is text: no element of the message became markup.
        hostile = page.locator(HOSTILE)
        assert hostile.count() == 0, (role, path)
        visited.append((role, path))

    lead = as_role("lead")
    for d in docs:
        visit(lead, reverse("document-detail", args=[collection.slug, d.pk]), "lead")
    visit(lead, reverse("search", args=[collection.slug]) + "?q=quarterly+figures+alert", "lead")

    annotator = as_role("annotator")
    for _ in docs:  # the judging page shows each task in turn (it may hold one ahead)
        visit(annotator, reverse("judge", args=[project.slug]), "annotator")
        # GET claims nothing: the page's script claims the next task by POST and shows it
        annotator.locator("article.email").first.wait_for(timeout=15000)
        assert annotator.locator(HOSTILE).count() == 0
        leases = Assignment.objects.filter(annotator=users["annotator"], status="leased")
        first = leases.order_by("leased_at", "id").first()
        if first is None:
            break
        judgments.judgment_submit(
            user=users["annotator"],
            task_id=first.task_id,
            idempotency_key=f"t9-{first.task_id}",
            answers=judgments.Answers(relevance=1, persona_sensitive="no", personal_sensitive="no"),
            active_seconds=1,
            started_at=Judgment._meta.get_field("started_at").to_python("2026-11-21T10:00:00Z"),
        )
    assert Judgment.objects.filter(annotator=users["annotator"]).count() >= 2
    visit(annotator, reverse("judging-history", args=[project.slug]), "annotator")

    searcher = as_role("searcher")
    query = "?q=quarterly+figures+alert+script+svg"
    visit(searcher, reverse("searcher-search", args=[collection.slug]) + query, "searcher")
    searcher.locator("form.search button").click()
    searcher.wait_for_url("**/results/*/")
    make_review_requests()  # what the worker does after the response
    requested = {r.document_id for r in ReviewRequest.objects.all()}
    assert requested == {d.pk for d in docs}  # no classifier yet: everything waits for review

    archivist = as_role("archivist")
    visit(archivist, reverse("review-queue"), "archivist")
    for d in docs:
        visit(archivist, reverse("review-item", args=[persona.pk, d.pk]), "archivist")
        releases.review_decide(
            archivist=users["archivist"], persona=persona, document=d, kind="release"
        )
    visit(archivist, reverse("document-detail", args=[collection.slug, docs[0].pk]), "archivist")

    visit(searcher, reverse("searcher-search", args=[collection.slug]) + query, "searcher")
    searcher.locator("form.search button").click()
    searcher.wait_for_url("**/results/*/")
    make_review_requests()  # what the worker does after the response
    assert searcher.locator("#results li").count() == len(docs)  # released: shown at once
    for d in docs:
        visit(searcher, reverse("searcher-document", args=[collection.slug, d.pk]), "searcher")
    roles = {role for role, _p in visited}
    report(
        "T9 XSS corpus in every role",
        not events and len(roles) == 4,
        f"{len(visited)} pages as {', '.join(sorted(roles))}, {len(events)} dialogs, console "
        "messages, page errors or outside requests",
    )
    assert events == [], events
    assert {role for role, _p in visited} == {"lead", "annotator", "searcher", "archivist"}
