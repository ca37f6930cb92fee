"""Ranking features: BM25 over the whole message equals Lucene's own scores; the term
statistics follow their definitions on a hand-made collection."""

import math
from pathlib import Path

import numpy as np
import pytest

from core import ltr

SMART = Path(__file__).parents[1] / "fixtures" / "smart"


def test_term_statistics_on_a_hand_made_collection():
    stats = ltr.FieldStats.build([["a", "b", "a"], ["b"], [], ["c", "a"]])
    out = dict(zip(ltr.STATS, stats.stats(["a", "z"], np.array([0, 2]))[0], strict=True))
    n, df_a = 4, 2
    idf_a, idf_z = ltr.bm25_idf(n, df_a), ltr.bm25_idf(n, 0)
    assert out["tf_sum"] == 2 and out["tf_min"] == 0 and out["tf_max"] == 2
    assert out["idf_min"] == pytest.approx(idf_a) and out["idf_max"] == pytest.approx(idf_z)
    assert out["tfidf_sum"] == pytest.approx(2 * idf_a)
    assert out["coverage"] == 0.5
    avgdl = 6 / 4
    assert out["bm25"] == pytest.approx(idf_a * 2 / (2 + 0.9 * (1 - 0.4 + 0.4 * 3 / avgdl)))
    # Query likelihood (Dirichlet, add-one collection model): a document of length 0 scores
    # each term by the collection model alone.
    empty = dict(zip(ltr.STATS, stats.stats(["a"], np.array([2]))[0], strict=True))
    p_a = (3 + 1) / (6 + 3 + 1)
    assert empty["ql"] == pytest.approx(math.log(p_a))
    assert empty["coverage"] == 0 and empty["bm25"] == 0


@pytest.mark.lucene
@pytest.mark.django_db
def test_bm25_of_the_whole_message_is_what_lucene_scores():
    from annotate import services
    from annotate.models import Collection
    from core import lucene
    from ranking.services import index_build, index_paths

    c = Collection.objects.create(name="Mini", slug="mini-ltr", kind="smart")
    services.import_run(collection=c, fmt="smart", path=SMART / "mini.all")
    index_build(collection_id=c.pk)
    c.refresh_from_db()
    docs = list(c.documents.order_by("id"))
    features = ltr.RankingFeatures.build(
        [(d.docid, d.subject, d.body, "") for d in docs], lucene.analyze
    )
    query = "boundary layer heat transfer"
    hits = lucene.search(index_paths(collection=c).lucene, query, k=10)
    assert len(hits) >= 2
    rows = [features.docids.index(h.docid) for h in hits]
    terms = lucene.analyze(query)
    matrix = features.matrix({"title": terms}, rows, np.zeros(len(rows)))
    ours = matrix[:, ltr.NAMES.index("title:message:bm25")]
    theirs = np.array([h.score for h in hits])
    # Lucene stores document lengths lossily (one byte): scores agree within a few percent.
    assert ours == pytest.approx(theirs, rel=0.05)
    assert matrix.shape == (len(rows), len(ltr.NAMES))
    assert (matrix[:, -2] + matrix[:, -1] == 1).all()
