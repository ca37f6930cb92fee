"""Exposure when searchers can see nothing yet (a fresh publication: every result waits for
review): a release would put the document first for every query it matches. The batched
verification must say so, as the query-by-query ranker does."""

import numpy as np
import pytest

from core import exposing_queries, lucene
from core.visible import Postings, VisibleIndex

pytestmark = pytest.mark.lucene


def test_with_nothing_visible_a_hidden_document_ranks_first_for_every_query_it_matches():
    docs = [("a", "budget meeting on Monday"), ("b", "zebra crossing report")]
    postings = Postings.build((d, lucene.analyze(t)) for d, t in docs)
    view = VisibleIndex(postings, np.array([], dtype=np.int64))
    ranker = exposing_queries.ExposureRanker(view, postings, "a", k=10)
    queries = [lucene.analyze(q) for q in ("budget", "monday meeting", "zebra", "nothing here")]
    one_by_one = [ranker.rank(q) for q in queries]
    assert one_by_one == [0, 0, None, None]
    assert ranker.ranks(queries) == one_by_one
