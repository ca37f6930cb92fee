"""The archivist's queue as a reader needs it (sender, date, snippet, thread, why), the
truth about documents the current classifier has not scored, and the home page of each
role drawn from the data."""

import joblib
import pytest
from django.urls import reverse
from django.utils import timezone

from annotate.models import Collection
from annotate.threads import collection_threads_assign
from ranking import classifier
from ranking.models import SensitivityModel
from review import selectors, visibility
from review.models import Publication, ReviewRequest
from tests.reviewkit import review_requests_pending

pytestmark = pytest.mark.lucene


def _thread_docs(docs):
    a, b, c, d = docs[:4]
    for doc, subject, sender, to in (
        (a, "Salary review", "ann@corp.example", ["bob@corp.example"]),
        (b, "Re: [Staff] RE: salary review", "bob@corp.example", ["cat@corp.example"]),
        (c, "Salary review", "eve@else.example", ["fay@else.example"]),  # other people
        (d, "Lunch", "ann@corp.example", ["bob@corp.example"]),
    ):
        doc.subject = subject
        doc.from_header = f"{sender.split('@')[0].title()} <{sender}>"
        doc.addresses = {"from": sender, "to": to}
        doc.body = f"On Monday Ann wrote:\n> quoted words\n\nThe figures for {subject} are in."
        doc.in_reply_to, doc.references = "", []  # no header links: the subjects decide
        doc.save()
    collection_threads_assign(collection=a.collection)  # as an import does
    return a, b, c, d


def test_the_queue_groups_threads_and_shows_sender_date_snippet_and_why(
    published, login, users, django_assert_max_num_queries
):
    c, persona, docs, kinds = published
    # the thread's two messages among those the classifier is unsure of (P 0.5)
    a, b, cc, d = _thread_docs(sorted(docs, key=lambda x: kinds[x.pk] != "uncertain"))
    review_requests_pending(
        persona, users["searcher"], [(a, "salary"), (d, "lunch"), (b, "pay rise"), (cc, "x")]
    )
    review_requests_pending(persona, users["searcher"], [(a, "salary 2002")])
    with django_assert_max_num_queries(7):  # a fixed number, whatever the queue holds
        threads = selectors.review_queue_threads()
        assert all(i.document.subject for t in threads for i in t.items)
    assert [[i.document.pk for i in t.items] for t in threads] == [[a.pk, b.pk], [d.pk], [cc.pk]]
    assert threads[0].subject == "Salary review"
    first = threads[0].items[0]
    assert first.queries == ["salary", "salary 2002"] and first.searches == 2
    assert first.sender == "Ann <ann@corp.example>"
    assert first.snippet == f"The figures for {a.subject} are in."  # no quote, no intro line

    html = login(users["archivist"]).get(reverse("review-queue")).content.decode()
    assert "<strong>4 documents waiting</strong>, all shown, in 3 groups (threads and near" in html
    assert html.count('class="thread"') == 3 and "2 in the queue" in html
    section = html[html.index("Salary review") : html.index("Lunch")]
    for text in ("Ann &lt;ann@corp.example&gt;", "Bob &lt;bob@corp.example&gt;", "quoted") + (
        "“salary”",
        "“salary 2002”",
        "“pay rise”",
        "2 searches waiting",
        "for 30\xa0minutes;",  # the first of its searches asked 30 minutes ago
        "P(sensitive) 0.500 from classifier v1, inside the band [0.2, 0.8)",
    ):
        assert (text in section) is (text != "quoted"), text
    if a.date:
        assert a.date.strftime("%Y-%m-%d") in section
    # a search that has just asked: "under a minute", not "0 minutes"
    ReviewRequest.objects.filter(document=cc).update(requested_at=timezone.now())
    html = login(users["archivist"]).get(reverse("review-queue")).content.decode()
    assert "for under a minute;" in html and "for 0\xa0minutes" not in html


def test_a_document_imported_after_the_training_is_not_called_classifier_less(
    published, login, users
):
    c, persona, docs, kinds = published
    model = SensitivityModel.objects.get(collection=c, persona=persona)
    newcomer = docs[0]
    stored = joblib.load(model.path)
    keep = [i for i, docid in enumerate(stored["docids"]) if docid != newcomer.docid]
    stored["docids"] = [stored["docids"][i] for i in keep]
    stored["scores"] = (
        stored["scores"][keep]
        if hasattr(stored["scores"], "shape")
        else [stored["scores"][i] for i in keep]
    )
    joblib.dump(stored, model.path)
    classifier._stored.cache_clear()
    visibility.forget()
    review_requests_pending(persona, users["searcher"], [(newcomer, "anything")])
    archivist = login(users["archivist"])
    page = archivist.get(reverse("review-item", args=[persona.pk, newcomer.pk])).content.decode()
    assert "not yet scored by the current classifier (version 1)" in page
    assert "no classifier" not in page
    queue = archivist.get(reverse("review-queue")).content.decode()
    assert "not yet scored by the current classifier (version 1)" in queue
    # and with no classifier at all, the page says so
    SensitivityModel.objects.all().delete()
    page = archivist.get(reverse("review-item", args=[persona.pk, newcomer.pk])).content.decode()
    assert "no classifier trained yet" in page and "not yet scored" not in page


def test_each_role_sees_on_home_what_it_can_do_from_the_data(published, login, users):
    c, persona, docs, kinds = published
    closed = Collection.objects.create(name="Closed mail", slug="closed-mail")
    Publication.objects.create(collection=closed, persona=persona, published=False)
    html = login(users["searcher"]).get(reverse("home")).content.decode()
    assert f'href="{reverse("searcher-search", args=[c.slug])}"' in html
    assert f"Search {c.name}" in html and "Closed mail" not in html
    assert "No collection is open" not in html and "within a working day" in html
    assert "waiting for review" not in html  # nothing about the queue for a searcher
    Publication.objects.filter(collection=c).update(published=False)
    html = login(users["searcher"]).get(reverse("home")).content.decode()
    assert "No collection is open for search yet" in html

    archivist = login(users["archivist"])
    assert "Nothing is waiting for review" in archivist.get(reverse("home")).content.decode()
    review_requests_pending(
        persona, users["searcher"], [(docs[0], "a"), (docs[1], "b"), (docs[0], "c")]
    )
    html = archivist.get(reverse("home")).content.decode()
    assert "2 documents waiting for review" in html and "for 3 searches" in html
    html = login(users["lead"]).get(reverse("home")).content.decode()
    assert reverse("review-loop", args=[c.slug]) in html and "Search Test mail" not in html


def test_a_queue_longer_than_a_page_says_the_true_total_and_shows_the_rest_on_request(
    published, login, users, settings
):
    c, persona, docs, kinds = published
    settings.SASC_QUEUE_PAGE = 4
    waiting = docs[:9]
    review_requests_pending(persona, users["searcher"], [(d, f"q{d.pk}") for d in waiting])
    review_requests_pending(persona, users["searcher"], [(waiting[0], "again")])  # same pair
    assert selectors.review_queue_summary()["documents"] == 9
    client = login(users["archivist"])
    home = client.get(reverse("home")).content.decode()
    assert "9 documents waiting for review" in home
    html = client.get(reverse("review-queue")).content.decode()
    assert "<strong>9 documents waiting</strong>; showing the first 4 (" in html
    assert html.count('class="queue-item"') == 4
    assert '<a class="button" href="?shown=8"' in html and ">Show 4 more</a>" in html
    assert "4 of 9 shown" in html
    assert f'hx-get="{reverse("review-queue")}?shown=4"' in html  # the refresh keeps 4
    html = client.get(reverse("review-queue"), {"shown": "8"}).content.decode()
    assert html.count('class="queue-item"') == 8 and ">Show 1 more</a>" in html
    part = client.get(
        reverse("review-queue"), {"shown": "9", "focus": "more"}, headers={"HX-Request": "true"}
    ).content.decode()
    assert 'id="queue"' in part  # the partial replaces the whole list, refresh included
    assert "<strong>9 documents waiting</strong>, all shown, in " in part
    assert part.count('class="queue-item"') == 9 and "more</a>" not in part
    assert "All 9 shown." in part  # the focus lands past the list, not on the page's top
    for bad, why in (
        ("lots", "shown must be a whole number of documents, not “lots”"),
        ("0", "shown must be from 1 to 5000 documents, not 0"),
        ("99999", "shown must be from 1 to 5000 documents, not 99999"),
    ):
        r = client.get(reverse("review-queue"), {"shown": bad})
        assert r.status_code == 400 and why in r.content.decode()
