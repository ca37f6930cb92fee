"""Exposing queries: which searches would put a document in a searcher's top k (Li et al.,
WWW 2022, ``seeds/001``; docs/domain.md §10), pure: no Django.

Exposing query identification (EQI) reverses document retrieval: given a document d, return
the queries of a candidate set Q ranked by how strongly each exposes d in the document
ranker, i.e. by the rank rho(d, sigma_q) that q gives d. Three steps, as in the paper's
traditional-search setting:

1. **Candidates** (``generate_queries`` plus the caller's topics and query log): queries a
   searcher plausibly types. Generated offline from the collection itself: per document the
   unigrams and adjacent-word bigrams with the highest tf x idf (collection statistics), kept
   when at least ``min_df`` documents hold them (a phrase that only one message holds is a
   needle, not a query), each weighted by the tf-idf mass of the documents that chose it.
   No doc2query: it needs a seq2seq model download and a GPU-sized budget per document,
   neither available offline on these machines; BM25 only ever matches words the document
   holds, so the document's own n-grams are the support of every exposing query.
2. **Reverse search** ("BM25-reverse", sec. 5): the candidates are indexed as documents
   (Lucene, ``core.lucene.reverse_search``) and the document is the query, each of its
   analysed terms weighted by its frequency in the document (Anserini's bag of words), the
   ``max_terms`` with the highest tf x idf kept (Lucene refuses more than 1024 clauses).
3. **Verification**: each retrieved candidate is run through the searcher's real ranker
   (``ExposureRanker``: ``core.visible.VisibleIndex``, BM25 over the visible set only, as
   ``review.services.search_protected`` ranks). A visible document's rank is its place in
   that ranking; a hidden one (withheld, predicted sensitive, in the review band) gets the
   place a release would give it, scored under the visible set's statistics exactly as
   ``review.services.review_requests_create`` places a document it asks about. Queries whose
   top k does not hold d are dropped; the rest are ordered by the rank-biased weight
   gamma^rho(d, sigma_q) (RBP's user, sec. 3.1), i.e. by rank, ties by query text.

``brute_force`` runs every candidate through the same ranker: the exact answer, the paper's
baseline, and the ground truth of ``relq_rbp`` / ``relq_exh_ndcg`` (eq. 3 and 4).
"""

import bisect
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from core.visible import (
    Postings,
    VisibleIndex,
    average_length,
    bm25_idf,
    encode_length,
    norm_cache,
)

SOURCES = ("topic", "log", "generated")
CHUNK = 2_000  # queries ranked together in one sparse product (ExposureRanker.ranks)
VERIFY_ALL_WORK = 40_000_000  # candidates x visible documents verified whole (CACM: 17.7 M)
_WORD = re.compile(r"[^\W\d_]{2,30}", re.UNICODE)


@dataclass(frozen=True)
class Candidate:
    """One candidate query: its text as a searcher would type it, where it came from, its
    analysed terms (what the ranker sees) and its collection weight (generated ones)."""

    qid: int
    text: str
    source: str
    terms: tuple[str, ...]
    weight: float = 0.0


def save_candidates(candidates: Sequence[Candidate], path: Path) -> None:
    """Write candidates as JSON lines (one object each)."""
    with Path(path).open("w", encoding="utf-8") as out:
        for c in candidates:
            out.write(json.dumps(asdict(c), ensure_ascii=False) + "\n")


def load_candidates(path: Path) -> list[Candidate]:
    """Read candidates written by ``save_candidates``."""
    out = []
    with Path(path).open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            out.append(
                Candidate(
                    row["qid"], row["text"], row["source"], tuple(row["terms"]), row["weight"]
                )
            )
    return out


def merge_candidates(
    given: Iterable[tuple[str, str]],
    generated: Iterable[tuple[str, float]],
    analyze: Callable[[str], list[str]],
) -> list[Candidate]:
    """Number the candidates: ``given`` (source, text) pairs first (topics, the query log),
    then ``generated`` (text, weight). A query whose analysed terms, as a bag, equal an
    earlier one's is the same query for a bag-of-words ranker and is kept once; a query
    with no analysed term (only stopwords) matches nothing and is dropped."""
    seen: set[tuple[str, ...]] = set()
    out: list[Candidate] = []
    rows = [(s, t, 0.0) for s, t in given] + [("generated", t, w) for t, w in generated]
    for source, text, weight in rows:
        text = " ".join(text.split())
        terms = tuple(analyze(text)) if text else ()
        key = tuple(sorted(terms))
        if not terms or key in seen:
            continue
        seen.add(key)
        out.append(Candidate(len(out), text, source, terms, float(weight)))
    return out


def _idf(n: int, df: int) -> float:
    """BM25's idf as Lucene computes it (positive even for a word every document holds)."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def generate_queries(
    documents: Callable[[], Iterable[tuple[str, str]]],
    stem: Callable[[str], str],
    *,
    unigrams: int = 5,
    bigrams: int = 5,
    min_df: int = 2,
    limit: int = 100_000,
) -> list[tuple[str, float]]:
    """Return up to ``limit`` (query text, weight) pairs generated from the collection.

    ``documents`` is called twice (document frequencies, then each document's choices) and
    yields (docid, text); ``stem`` is the index's analysis of one word ('' for a stopword).
    Per document the ``unigrams`` words and ``bigrams`` adjacent word pairs with the highest
    tf x idf (Lucene's BM25 idf) among those at least ``min_df`` documents hold; a
    candidate's weight is the sum of those values over the documents that chose it, the heaviest
    ``limit`` are kept, heaviest first. Each stem is written as its most frequent word.
    """
    df_uni: Counter = Counter()
    df_bi: Counter = Counter()
    forms: dict[str, Counter] = {}
    n = 0

    def grams(text: str):
        uni: Counter = Counter()
        bi: Counter = Counter()
        previous = ""
        for word in _WORD.findall(text.lower()):
            s = stem(word)
            if not s:
                previous = ""
                continue
            uni[s] += 1
            forms.setdefault(s, Counter())[word] += 1
            if previous and previous != s:
                bi[(previous, s)] += 1
            previous = s
        return uni, bi

    for _docid, text in documents():
        uni, bi = grams(text)
        df_uni.update(uni.keys())
        df_bi.update(bi.keys())
        n += 1
    if not n:
        return []
    weights: Counter = Counter()
    for _docid, text in documents():
        uni, bi = grams(text)
        scored = [(tf * _idf(n, df_uni[s]), (s,)) for s, tf in uni.items() if df_uni[s] >= min_df]
        scored.sort(reverse=True)
        for value, key in scored[:unigrams]:
            weights[key] += value
        scored = [(tf * _idf(n, df_bi[p]), p) for p, tf in bi.items() if df_bi[p] >= min_df]
        scored.sort(reverse=True)
        for value, key in scored[:bigrams]:
            weights[key] += value
    word = {s: c.most_common(1)[0][0] for s, c in forms.items()}
    ranked = sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return [(" ".join(word[s] for s in key), round(float(w), 4)) for key, w in ranked]


def document_query(
    postings: Postings,
    row: int,
    view: VisibleIndex,
    *,
    weighting: str = "bm25",
    max_terms: int = 1000,
    k: int = 20,
) -> dict[str, float]:
    """The document at ``row`` as a reverse-search query (term -> weight), its ``max_terms``
    heaviest terms.

    ``weighting="tf"``: each term weighted by its frequency in the document, Anserini's bag of
    words of the document (the paper's BM25-reverse). ``"bm25"``: each term weighted by what
    it adds to the document's BM25 score in the searcher's ranking (the visible set's idf and
    average length; Lucene's formula), so that the query index favours candidates made of
    the terms that lift this document above the others, not of the terms that are merely
    rare among queries. ``"threshold"`` (the product's): that contribution divided by the
    ``k``-th best visible score for the term alone (``term_thresholds``, at most 4), so that
    candidates made of terms on which this document competes for the first ``k`` come
    first (recall in the first 20 at 40,000 messages 0.994 against bm25's 0.892,
    ``bench/exposure.py``). The verification step decides the rank either way."""
    if weighting not in ("tf", "bm25", "threshold"):
        raise ValueError(f"unknown weighting {weighting!r}; use tf, bm25 or threshold")
    counts = postings.counts
    start, end = counts.indptr[row], counts.indptr[row + 1]
    cols = counts.indices[start:end]
    tf = counts.data[start:end].astype(np.float64)
    terms = postings.terms[cols].tolist()
    df = np.array([_visible_df(view, t) for t in terms], dtype=np.int64)
    idf = view.idf(df).astype(np.float64)
    norm = float(view.norm_cache[encode_length(int(postings.lengths[row]))])
    contribution = idf * tf * norm / (1 + tf * norm)
    weights = tf if weighting == "tf" else contribution
    if weighting == "threshold":
        # How the document's score for each term compares with the k-th best visible score
        # for that term alone: candidates made of terms where it competes come first.
        kth = term_thresholds(view, k)
        cols_v = [view.vocabulary.get(t) for t in terms]
        tau = np.array([kth[c] if c is not None else 0.0 for c in cols_v], dtype=np.float64)
        weights = np.minimum(contribution / np.maximum(tau, 1e-9), 4.0)
    keep = np.argsort(-contribution, kind="stable")[:max_terms]
    return {terms[i]: float(weights[i]) for i in keep.tolist()}


def whole_document(postings: Postings, row: int, weights: dict[str, float]) -> bool:
    """Whether the reverse query ``weights`` (``document_query``, which keeps at most
    ``max_terms``) holds every term of the document at ``row``: the condition under which
    a reverse search that ran out of candidates has seen every query that can expose it."""
    return len(weights) == int(postings.counts.indptr[row + 1] - postings.counts.indptr[row])


def term_thresholds(view: VisibleIndex, k: int) -> np.ndarray:
    """Per term of the view, the ``k``-th best BM25 score among the visible documents for
    that term alone (0 when fewer than ``k`` hold it); computed once per view and k."""
    cache = view.__dict__.setdefault("_thresholds", {})
    if k not in cache:
        counts = view.counts
        idf = view.idf(view.df)
        out = np.zeros(counts.shape[1], dtype=np.float64)
        for j in range(counts.shape[1]):
            start, end = counts.indptr[j], counts.indptr[j + 1]
            if end - start < k:
                continue
            rows = counts.indices[start:end]
            freq = counts.data[start:end]
            scores = idf[j] - idf[j] / (np.float32(1) + freq * view.norm_inverse[rows])
            out[j] = float(np.partition(scores, len(scores) - k)[len(scores) - k])
        cache[k] = out
    return cache[k]


def _visible_df(view: VisibleIndex, term: str) -> int:
    col = view.vocabulary.get(term)
    return int(view.df[col]) if col is not None else 0


def _document_frequencies(postings: Postings) -> np.ndarray:
    if not hasattr(postings, "_df"):
        postings._df = np.bincount(postings.counts.indices, minlength=postings.counts.shape[1])
    return postings._df


@dataclass(frozen=True)
class Exposing:
    """A query that exposes the document: its 0-based rank in the query's ranking, and the
    rank-biased weight gamma^rank of that place (the searcher's RBP user)."""

    qid: int
    text: str
    source: str
    rank: int
    weight: float


class ExposureRanker:
    """The searcher's ranker seen from one document: the rank a query gives it.

    ``view``: the visible set's index (``core.visible.VisibleIndex``), ``postings``: the
    whole index version's (for a hidden document's terms), ``k``: how many results a
    searcher is shown. ``visible`` says whether the document is in the view now.

    A hidden document's rank is the one its release would give it: the ranking of the
    visible set with the document added, under the statistics that set has (one more
    document, one more in the document frequency of each of its terms, the average length
    with its length in it), ties by docid as every ranking breaks them. ``rank`` builds that
    released view as a release builds it (``VisibleIndex`` over the visible rows and this
    one); ``ranks`` computes the same statistics without copying the view (tested equal,
    and against an independent BM25 in ``tests/core/test_exposing_queries_release.py``)."""

    def __init__(self, view: VisibleIndex, postings: Postings, docid: str, *, k: int):
        if not hasattr(view, "_positions"):
            view._positions = {d: i for i, d in enumerate(view.docids)}
        self.view, self.postings, self.docid, self.k = view, postings, docid, k
        self.visible = docid in view._positions
        rows = postings.rows([docid])
        if not len(rows) and not self.visible:
            raise KeyError(f"document {docid!r} is not in this index version")
        self.row = int(rows[0]) if len(rows) else None
        self._released: VisibleIndex | None = None
        if self.visible:
            position = view._positions[docid]
            self._position = position
            self._n = view.n
            self._norm_inverse = view.norm_inverse
            self._own: dict[str, float] = {}
            self._own_norm = None
            # ties: a document whose docid sorts first is ranked first
            self._before = view.rank_of < view.rank_of[position]
        else:
            self._position = view.n  # the document's row after the visible ones
            self._n = view.n + 1
            self._own = self._own_terms()
            length = int(postings.lengths[self.row])
            cache = norm_cache(average_length(view.total + length, self._n))
            self._norm_inverse = cache[view.norms].astype(np.float32)
            self._own_norm = np.array([cache[encode_length(length)]], dtype=np.float32)
            ordered = [view.docids[i] for i in view.order.tolist()]
            self._before = view.rank_of < bisect.bisect_left(ordered, docid)

    def released_view(self) -> VisibleIndex:
        """The visible set with this (hidden) document released, built as a release builds
        it; the visible view itself for a visible document."""
        if self.visible:
            return self.view
        if self._released is None:
            self._released = VisibleIndex(self.postings, np.append(self.view.rows, self.row))
        return self._released

    def rank(self, terms: Sequence[str]) -> int | None:
        """The 0-based place the query gives the document among the first ``k`` results (a
        hidden one: where its release would put it), or None when it is not among them."""
        hits = self.released_view().search(list(terms), self.k)
        return next((i for i, h in enumerate(hits) if h.docid == self.docid), None)

    def ranks(self, queries: Sequence[Sequence[str]]) -> list[int | None]:
        """``rank`` of many queries at once, equal to it query by query (tested): the BM25
        contribution of each (term, repeats) pair is computed once, as
        ``VisibleIndex.search`` computes it in single precision, and the queries' scores
        are sums of those columns (a sparse product), so the ranker's work is shared by all
        queries that hold a term. A hidden document is one more row, every column under the
        statistics its release gives the visible set."""
        import scipy.sparse as sp

        if len(queries) > CHUNK:
            # The product holds one score per (query, matching document): in chunks, so
            # that 100,000 candidates over 100,000 documents do not need tens of GB.
            return [
                r for i in range(0, len(queries), CHUNK) for r in self.ranks(queries[i : i + CHUNK])
            ]
        view = self.view
        pairs: dict[tuple[str, int], int] = {}
        rows_of_queries: list[list[int]] = []
        for terms in queries:
            rows_of_queries.append(
                [pairs.setdefault(tb, len(pairs)) for tb in Counter(terms).items()]
            )
        if not pairs:
            return [None] * len(queries)
        n, own, position = self._n, self._own, self._position
        data, indices, indptr = [], [], [0]
        for term, boost in pairs:
            col = view.vocabulary.get(term)
            held = own.get(term)
            df = (int(view.df[col]) if col is not None else 0) + (1 if held else 0)
            added = 0
            if df:
                weight = np.float32(boost) * bm25_idf(n, df)
                if col is not None:
                    start, end = view.counts.indptr[col], view.counts.indptr[col + 1]
                    rows = view.counts.indices[start:end]
                    freq = view.counts.data[start:end]
                    term_scores = weight - weight / (
                        np.float32(1) + freq * self._norm_inverse[rows]
                    )
                    data.append(term_scores.astype(np.float32).astype(np.float64))
                    indices.append(rows.astype(np.int64))
                    added += len(rows)
                if held:
                    freq = np.array([held], dtype=np.float32)
                    term_scores = weight - weight / (np.float32(1) + freq * self._own_norm)
                    data.append(term_scores.astype(np.float32).astype(np.float64))
                    indices.append(np.array([position], dtype=np.int64))
                    added += 1
            indptr.append(indptr[-1] + added)
        flat = lambda parts, dtype: np.concatenate(parts) if parts else np.zeros(0, dtype)  # noqa: E731
        height = view.n + (0 if self.visible else 1)
        columns = sp.csc_matrix(
            (flat(data, np.float64), flat(indices, np.int64), np.array(indptr)),
            shape=(height, len(pairs)),
        )
        chooser = sp.csc_matrix(
            (
                np.ones(sum(len(r) for r in rows_of_queries)),
                np.concatenate([np.array(r, dtype=np.int64) for r in rows_of_queries])
                if rows_of_queries
                else np.zeros(0, np.int64),
                np.cumsum([0] + [len(r) for r in rows_of_queries]),
            ),
            shape=(len(pairs), len(queries)),
        )
        # Each query's column holds the scores of the documents that match it, in no
        # particular order: nothing below needs them sorted (sorting was two thirds of the
        # time at 100,000 messages, bench/exposure.py).
        scores = (columns @ chooser).tocsc()
        before = self._before if self.visible else np.append(self._before, False)
        out: list[int | None] = []
        for j in range(len(queries)):
            start, end = scores.indptr[j], scores.indptr[j + 1]
            rows = scores.indices[start:end]
            final = scores.data[start:end].astype(np.float32)
            at = np.flatnonzero(rows == position)
            if not len(at):
                out.append(None)
                continue
            mine = final[at[0]]
            ahead = int((final > mine).sum()) + int(((final == mine) & before[rows]).sum())
            out.append(ahead if ahead < self.k else None)
        return out

    def _own_terms(self) -> dict[str, float]:
        counts = self.postings.counts
        start, end = counts.indptr[self.row], counts.indptr[self.row + 1]
        cols = counts.indices[start:end].tolist()
        return dict(
            zip(self.postings.terms[cols].tolist(), counts.data[start:end].tolist(), strict=True)
        )


def _ordered(found: list[Exposing]) -> list[Exposing]:
    return sorted(found, key=lambda e: (e.rank, e.text, e.qid))


def verify(
    ranker: ExposureRanker, candidates: Iterable[Candidate], *, gamma: float = 0.5
) -> list[Exposing]:
    """Run each candidate through the ranker; return those that expose the document, most
    exposing first (rank, then query text)."""
    candidates = list(candidates)
    found = []
    for c, rank in zip(candidates, ranker.ranks([c.terms for c in candidates]), strict=True):
        if rank is not None:
            found.append(Exposing(c.qid, c.text, c.source, rank, gamma**rank))
    return _ordered(found)


def brute_force(
    ranker: ExposureRanker, candidates: Sequence[Candidate], *, gamma: float = 0.5
) -> list[Exposing]:
    """Exact EQI: every candidate through the ranker one query at a time, each a search of
    the visible set as the searcher's (the paper's brute-force baseline)."""
    found = []
    for c in candidates:
        rank = ranker.rank(c.terms)
        if rank is not None:
            found.append(Exposing(c.qid, c.text, c.source, rank, gamma**rank))
    return _ordered(found)


def expose(
    ranker: ExposureRanker,
    candidates: Sequence[Candidate],
    retrieved: Sequence[tuple[int, float]],
    *,
    extra: Iterable[Candidate] = (),
    gamma: float = 0.5,
) -> list[Exposing]:
    """Reverse search then verification: verify the ``retrieved`` candidates ((qid, reverse
    score) from the candidate index, best first) and ``extra`` ones (queries logged since the
    index was built, verified exhaustively); return the exposing ones, most exposing first."""
    chosen = {qid: candidates[qid] for qid, _score in retrieved}
    for c in extra:
        chosen.setdefault(c.qid, c)
    return verify(ranker, chosen.values(), gamma=gamma)


@dataclass(frozen=True)
class Deepened:
    """What a deepening reverse search verified: the exposing queries, most exposing first;
    how deep it went; how many candidates it verified; and whether the list is every
    exposing query of the candidate set (``complete``) or a lower bound."""

    found: list[Exposing]
    depth: int
    verified: int
    complete: bool


def expose_deepening(
    ranker: ExposureRanker,
    candidates: Sequence[Candidate],
    search: Callable[[int], Sequence[tuple[int, float]]],
    *,
    whole_document: bool,
    extra: Iterable[Candidate] = (),
    depth: int = 200,
    max_depth: int = 25_600,
    verify_all_below: int = 10_000,
    patience: int = 2,
    gamma: float = 0.5,
) -> Deepened:
    """Reverse search, verified, deepened until its tail stops finding exposing queries.

    ``search(n)`` returns the first ``n`` (qid, reverse score) of the reverse search, best
    first. The first ``depth`` are verified; the depth doubles and the new ones are verified
    until ``patience`` tails in a row (the last half of what was verified) held no exposing
    query, up to ``max_depth``. A query
    exposes a document only if the document holds one of its terms, so when the reverse
    search returns fewer than it was asked for (it ran out of candidates sharing a term with
    the document) and the reverse query held every term of the document
    (``whole_document``), every candidate that can expose it has been verified: the list is
    ``complete``. Otherwise it is a lower bound, and the card says "at least". ``extra``
    (queries logged since the candidate index was built) are verified exhaustively.

    A candidate set of fewer than ``verify_all_below`` queries is verified whole, in one
    sparse pass, when the candidates times the visible documents stay within
    ``VERIFY_ALL_WORK``: on a collection of a few thousand documents that costs what the
    deepening search costs (CACM's 7,866 candidates: 110 ms against 64-125 ms, ``bench/
    exposure_recall.py``) and the count is exact."""
    if len(candidates) < verify_all_below and len(candidates) * ranker.view.n <= VERIFY_ALL_WORK:
        every = [*candidates, *(c for c in extra if c.qid >= len(candidates))]
        found = verify(ranker, every, gamma=gamma)
        return Deepened(found, len(candidates), len(every), True)
    verified: dict[int, int | None] = {}
    chosen: dict[int, Candidate] = {}
    for c in extra:
        chosen.setdefault(c.qid, c)
    if chosen:
        ids = list(chosen)
        verified.update(zip(ids, ranker.ranks([chosen[q].terms for q in ids]), strict=True))
    done = empty = 0
    while True:
        hits = list(search(depth))
        new = [qid for qid, _score in hits[done:] if qid not in verified]
        for qid in new:
            chosen[qid] = candidates[qid]
        verified.update(zip(new, ranker.ranks([candidates[q].terms for q in new]), strict=True))
        exhausted = len(hits) < depth
        tail = hits[max(done, len(hits) // 2) :]
        empty = 0 if any(verified.get(qid) is not None for qid, _score in tail) else empty + 1
        done = len(hits)
        if exhausted or empty >= patience or depth >= max_depth:
            break
        depth = min(depth * 2, max_depth)
    found = [
        Exposing(qid, chosen[qid].text, chosen[qid].source, rank, gamma**rank)
        for qid, rank in verified.items()
        if rank is not None
    ]
    return Deepened(_ordered(found), depth, len(verified), bool(exhausted and whole_document))


# --- RELQ (sec. 3.1) ----------------------------------------------------------------------------


def relq_rbp(
    retrieved: Sequence[int],
    exposing: dict[int, int],
    *,
    gamma_qd: float,
    gamma_dq: float,
    depth: int = 100,
) -> float:
    """RELQ_RBP,RBP (eq. 3): the exposure list ``retrieved`` (qids, best first) against the
    ground truth ``exposing`` (qid -> 0-based rank the query gives the document). The EQI user
    reads the list with persistence ``gamma_dq``, a query's gain is the searcher's RBP weight
    ``gamma_qd``^rank; the ideal list is the ground truth by rank. Both lists are cut at
    ``depth`` (n_d->q). NaN when the document has no exposing query."""
    ideal = sorted(exposing.values())[:depth]
    best = sum(gamma_dq**i * gamma_qd**r for i, r in enumerate(ideal))
    if best == 0:
        return math.nan
    got = sum(
        gamma_dq**i * gamma_qd ** exposing[q]
        for i, q in enumerate(retrieved[:depth])
        if q in exposing
    )
    return got / best


def relq_exh_ndcg(retrieved: Sequence[int], exposing: dict[int, int], *, depth: int = 100) -> float:
    """RELQ_EXH,NDCG (eq. 4): an exhaustive EQI user; a query's gain is nDCG's discount of the
    place it gives the document, 1 / log2(rank + 2). NaN with no exposing query."""
    ideal = sorted(exposing.values())[:depth]
    best = sum(1 / math.log2(r + 2) for r in ideal)
    if best == 0:
        return math.nan
    got = sum(1 / math.log2(exposing[q] + 2) for q in retrieved[:depth] if q in exposing)
    return got / best
