"""T8 (RELIABILITY.md, G7): canary tokens planted in withheld, predicted-sensitive and
unreviewed-uncertain documents (subject, body, attachment name and text) never reach a
searcher: not on any page, API or export a searcher can request, not in a header, and a query
matching only canaries answers exactly like a query matching nothing."""

import html
import itertools
import re
from collections import deque

import pytest
from django.urls import reverse

from annotate.models import Attachment
from core import writings
from ranking.services import index_build
from review import redaction, releases
from review.models import Decision, ReviewRequest, SearchLog
from tests.acceptance.stack import report
from tests.reviewkit import searcher_search
from tests.routekit import named_routes

pytestmark = pytest.mark.lucene
TOKENS = ("qcanarysubj", "qcanarybody", "qcanaryattname", "qcanaryatttext", "qcanaryredact")
# issue 31: a number redacted in one released document, written in other ways in two visible
# documents nobody reviewed (a quote wrapped over lines, compact, behind entities and
# invisible characters, in a header, an attachment's name and text)
NUMBER = "4471 8823 9917"
WRITINGS = (
    "4471\n> 8823 9917",
    "447188239917",
    "4471&nbsp;8823&#45;9917",
    "4471\u200b8823\u00ad9917",
    "(4471) 8823-9917",
)
NUMBER_QUERIES = ("4471", "8823", "9917", "447188239917", "4471 8823 9917", "4471-8823-9917")


@pytest.fixture
def canaries(published, users):
    """Three hidden documents with canaries: one withheld by an archivist (the classifier
    calls it safe), one predicted sensitive, one uncertain and never reviewed."""
    c, persona, docs, kinds = published
    withheld = next(d for d in docs if kinds[d.pk] == "safe")
    sensitive = next(d for d in docs if kinds[d.pk] == "sensitive")
    uncertain = next(d for d in docs if kinds[d.pk] == "uncertain")
    hidden = [withheld, sensitive, uncertain]
    for n, doc in enumerate(hidden):
        doc.subject = f"{doc.subject} qcanarysubj{n}"
        doc.body = f"{doc.body}\nshared words qcanarybody{n}"
        doc.save(update_fields=["subject", "body"])
        Attachment.objects.create(
            document=doc,
            position=90 + n,
            filename=f"qcanaryattname{n}.txt",
            content_type="text/plain",
            size=20,
            is_text=True,
            text=f"qcanaryatttext{n}",
        )
    # issue 20: a visible document released as a redacted copy, the canary redacted from its
    # subject and body; the rest of it stays findable
    redacted = [d for d in docs if kinds[d.pk] == "safe"][1]
    redacted.subject = f"{redacted.subject} qcanaryredact3"
    redacted.body = f"{redacted.body}\nmy account is qcanaryredact3 thanks, ref {NUMBER}"
    redacted.save(update_fields=["subject", "body"])
    quoting, forwarding = [d for d in docs if kinds[d.pk] == "safe"][2:4]
    quoting.body = f"{quoting.body}\n> ref {WRITINGS[0]} and {WRITINGS[1]}\n"
    quoting.subject = f"{quoting.subject} {WRITINGS[2]}"
    forwarding.body = f"{forwarding.body}\nref {WRITINGS[3]} or {WRITINGS[4]}"
    forwarding.to_header = f"Ref {WRITINGS[1]} <billing@bank.example>"
    for d in (quoting, forwarding):
        d.save(update_fields=["subject", "body", "to_header"])
    Attachment.objects.create(
        document=forwarding,
        position=1,
        filename=f"statement {WRITINGS[1]}.txt",
        content_type="text/plain",
        size=40,
        is_text=True,
        text=f"statement for {WRITINGS[2]}",
    )
    index_build(collection_id=c.pk, force=True)
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=withheld, kind="withhold"
    )
    spans = [
        {"field": f, "start": m.start(), "end": m.end(), "kind": "typed", "reason": "financial"}
        for f in ("subject", "body")
        for m in re.finditer(f"qcanaryredact3|{NUMBER}", getattr(redacted, f))
    ]
    redaction.redaction_save(
        archivist=users["archivist"], persona=persona, document=redacted, spans=spans
    )
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=redacted, kind="release"
    )
    return c, persona, hidden


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


def _leaks(response, body: str, query: str = "") -> list[str]:
    """Canary tokens in the body (the searcher's own query aside) or the headers."""
    text = body.lower().replace(query.lower(), "") if query else body.lower()
    headers = " ".join(f"{k}: {v}" for k, v in response.items()).lower()
    found = [t for t in TOKENS if t in text or t in headers]
    return found + sorted(writings.scan([text, headers], [NUMBER]))


def test_no_canary_reaches_a_searcher_anywhere(canaries, login, users):
    c, persona, hidden = canaries
    searcher = login(users["searcher"])
    checked, leaks = 0, []
    # Queries: each canary alone, with words the hidden documents share with others, and the
    # hidden documents' own subjects.
    queries = [f"{t}{n}" for t in TOKENS for n in range(4)]
    queries += ["shared words", "razor linux spam"] + [d.subject for d in hidden]
    queries += list(NUMBER_QUERIES)
    for q in queries:
        r = searcher_search(searcher, c, q)
        body = _body(r)
        checked += 1
        leaks += [(q, t) for t in _leaks(r, body, html.escape(q))]
    searches = list(SearchLog.objects.filter(searcher=users["searcher"]))
    # Whatever the classifier asked the archivist about, the searcher's pages hold none of it.
    assert ReviewRequest.objects.filter(document=hidden[2]).exists()
    for d in hidden:
        assert not any(d.pk in s.shown for s in searches)

    # Every route of the URL conf, filled with the hidden documents, the persona and searches.
    ints = [d.pk for d in hidden] + [persona.pk] + [s.pk for s in searches[:3]]
    values = {"slug": [c.slug], "number": ["1"], "name": ["qrels.txt", "chart"]}
    start = []
    for name, (_pattern, kwargs) in named_routes(admin=True).items():
        if name.endswith("logout"):
            continue
        pools = [values.get(k, ints) for k in kwargs]
        for combo in itertools.product(*pools):
            try:
                start.append(reverse(name, kwargs=dict(zip(kwargs, combo, strict=True))))
            except Exception:  # noqa: BLE001, S112 - admin routes with other converters
                continue
    start += [reverse("searcher-released", args=[c.slug, s.pk]) + "?have=0" for s in searches]
    # A results page repeats the searcher's own query, which may hold a canary they typed.
    own = {reverse("searcher-results", args=[c.slug, s.pk]): html.escape(s.query) for s in searches}
    # Then every same-origin link, htmx endpoint and form those pages lead to.
    seen, queue = set(), deque(start)
    while queue and len(seen) < 3000:
        url = queue.popleft()
        if url in seen:
            continue
        seen.add(url)
        for method in ("get", "post") if "?" not in url else ("get",):
            r = getattr(searcher, method)(url)
            body = _body(r)
            checked += 1
            leaks += [(method, url, t) for t in _leaks(r, body, own.get(url, ""))]
            assert r.status_code < 500, (method, url, r.status_code)
            if method == "get" and r.status_code == 200:
                for link in re.findall(r'(?:href|hx-get|action|src)="([^"#]+)', body):
                    link = html.unescape(link)
                    if (
                        link.startswith("/")
                        and not link.startswith(("//", "/static/"))
                        and "logout" not in link
                    ):
                        queue.append(link)
    report(
        "T8 canary withholding",
        not leaks and checked > 200,
        f"{checked} responses over {len(seen)} URLs and {len(queries)} searches, "
        f"{len(leaks)} canary hits",
    )
    assert leaks == [] and checked > 200
    for d in hidden:  # the hidden documents' own pages: 404, as for an id that does not exist
        assert searcher.get(reverse("searcher-document", args=[c.slug, d.pk])).status_code == 404
        assert searcher.get(reverse("api-document-detail", args=[d.pk])).status_code in (403, 404)


def test_a_query_matching_only_canaries_looks_like_a_query_matching_nothing(canaries, login, users):
    c, persona, hidden = canaries
    searcher = login(users["searcher"])

    def page(q):
        body = _body(searcher_search(searcher, c, q))
        search = SearchLog.objects.latest("created_at")
        # The parts that differ between any two searches: the query, the search's id and the
        # per-response CSRF token.
        body = body.replace(q, "Q").replace(f"/released/{search.pk}/", "/released/N/")
        body = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", body)
        return re.sub(r'"X-CSRFToken": "[^"]+"', "", body), search

    # withheld, predicted sensitive, uncertain (which also asks the archivist), and the word
    # redacted from a released document (issue 20)
    for n, token in enumerate(["qcanarybody"] * 3 + ["qcanaryredact"]):
        canary, canary_search = page(f"{token}{n}")
        nothing, nothing_search = page(f"qnomatchxxx{n}")
        assert canary_search.shown == [] and nothing_search.shown == []
        assert canary == nothing and len(canary) == len(nothing)
        if n == 2:
            assert ReviewRequest.objects.filter(search=canary_search, document=hidden[2]).exists()
    # issue 31: each part and writing of the redacted number, held by the visible copies too
    for n, query in enumerate(NUMBER_QUERIES):
        canary, canary_search = page(query)
        nothing, nothing_search = page(f"{n}qnomatchxxx")
        assert canary_search.shown == [] and nothing_search.shown == [], query
        assert canary == nothing and len(canary) == len(nothing), query
    assert Decision.objects.filter(document=hidden[0], kind="withhold").exists()
