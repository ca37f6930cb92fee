"""Which uncertain documents a search asks the archivist about (issue 14): a function of the
document and the visible set alone. A release then tells the searcher that document and
nothing else: no withheld or predicted-sensitive document can push it out of the requests,
whatever words they hold (the attack an independent tester found through the poll)."""

import pytest

from annotate.models import Collection, Document, Persona
from ranking.services import index_build
from review import services
from review.models import Publication, ReviewRequest, SearchLog
from tests.reviewkit import FILLER, store_scores

pytestmark = pytest.mark.lucene


def _body(head: list[str], n: int) -> str:
    return " ".join([*head, *(FILLER * 10)[:n]])


@pytest.fixture
def world(db, tmp_path, users):
    c = Collection.objects.create(name="Requests", slug="requests")
    docs = []
    for i in range(6):  # visible, dense in "common": they lead every "common" query
        docs.append((f"vis{i}", _body(["common", "common"], 4), 0.05))
    for i in range(4):  # uncertain, one "common" in a medium text: asked about for "common"
        docs.append((f"unc{i}", _body(["common"], 12), 0.5))
    for i in range(20):  # predicted sensitive: "common" once in a long text, "hiddenword" thrice
        docs.append((f"hid{i}", _body(["common", *["hiddenword"] * 3], 40), 0.95))
    Document.objects.bulk_create(
        [
            Document(collection=c, docid=d, subject="Note", from_header="a@example.org", body=b)
            for d, b, _p in docs
        ]
    )
    index_build(collection_id=c.pk)
    c.refresh_from_db()
    persona = Persona.objects.create(name="Requests donor")
    store_scores(
        c, persona, [d for d, _b, _p in docs], [x for *_r, x in docs], tmp_path / "scores.joblib"
    )
    Publication.objects.create(
        collection=c, persona=persona, published=True, band_low=0.2, band_high=0.8, review_k=10
    )
    return c, users["searcher"]


def _asked(c, user, query) -> list[tuple[int, str]]:
    outcome = services.search_protected(user=user, collection=c, query=query)
    services.review_requests_create(search_id=outcome.search.pk)
    return list(
        ReviewRequest.objects.filter(search=outcome.search)
        .order_by("rank", "document__docid")
        .values_list("rank", "document__docid")
    )


def test_hidden_documents_cannot_push_an_uncertain_one_out_of_the_requests(world):
    c, searcher = world
    plain = _asked(c, searcher, "common qznothing")
    probed = _asked(c, searcher, "common hiddenword")
    # the four uncertain documents, below the six visible ones, in both searches alike
    assert [d for _r, d in plain] == ["unc0", "unc1", "unc2", "unc3"]
    assert probed == plain
    assert {r for r, _d in plain} == {6}
    assert SearchLog.objects.count() == 2


def test_a_search_asks_about_at_most_review_k(world):
    c, searcher = world
    # nothing visible: the six and the four are all uncertain now, the twenty still above
    Publication.objects.filter(collection=c).update(band_low=0.0)
    asked = _asked(c, searcher, "common")
    assert sorted(d for _r, d in asked) == [f"unc{i}" for i in range(4)] + [
        f"vis{i}" for i in range(6)
    ]
    Publication.objects.filter(collection=c).update(review_k=3)
    assert [d for _r, d in _asked(c, searcher, "common")] == ["vis0", "vis1", "vis2"]
