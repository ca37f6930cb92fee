"""BM25 over the documents a searcher may see, and nothing else (issue 14), pure: no Django.

Protected search must not let hidden documents shape what a searcher receives: not the
candidate list, not its length, not any score, and not the statistics that feed a score.
Ranking Lucene's top k over the whole index and dropping hidden hits afterwards fails all
three (a hidden hit takes a slot; document frequencies and the average length count hidden
documents; hidden hits cost time). So the searcher's ranking is computed here, over a view of
the postings that holds the visible documents only.

``Postings``: the term counts of every indexed document, from Lucene's own analysis of exactly
the text the index holds, with each document's field length (the number of analysed terms,
as Lucene counts it). Built with the index, saved beside it.

``VisibleIndex``: the postings restricted to a set of rows, with its own vocabulary (terms
that occur in a visible document), document frequencies, document count and average length;
scoring is Lucene's ``BM25Similarity`` (k1 0.9, b 0.4, as ``core.lucene.search``) to the
bit: idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``, lengths through Lucene's one-byte norm
(``SmallFloat.intToByte4``), single-precision arithmetic, a query term repeated n times
weighted n (Anserini's bag-of-words query), ties broken by docid and scores rounded to 1e-4
(Anserini's ``ScoreTiesAdjusterReranker``). The equality with a Lucene index built from the
visible documents alone is tested (``tests/core/test_visible.py``).

A query's work depends on the visible postings only: a term that only hidden documents hold is
not in the view's vocabulary, exactly like a word that no document holds.
"""

from array import array
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

K1, B = np.float32(0.9), np.float32(0.4)


def _long_to_int4(i: int) -> int:
    bits = i.bit_length()
    if bits < 4:
        return i  # subnormal
    shift = bits - 4
    encoded = (i >> shift) & 0x07  # the leading bit is implicit
    return encoded | ((shift + 1) << 3)


def _int4_to_long(i: int) -> int:
    bits = i & 0x07
    shift = (i >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


_FREE = 255 - _long_to_int4(2**31 - 1)  # byte values that encode a length exactly


def encode_length(n: int) -> int:
    """Lucene's ``SmallFloat.intToByte4``: a field length as one byte (exact below 24)."""
    if n < 0:
        raise ValueError("a length cannot be negative")
    return n if n < _FREE else _FREE + _long_to_int4(n - _FREE)


def decode_length(byte: int) -> int:
    """Lucene's ``SmallFloat.byte4ToInt``: the length a norm byte stands for."""
    return byte if byte < _FREE else _FREE + _int4_to_long(byte - _FREE)


LENGTH_TABLE = np.array([decode_length(b) for b in range(256)], dtype=np.float32)


@dataclass
class Postings:
    """Term counts of a collection version: ``counts`` documents x terms (CSR)."""

    docids: list[str]
    terms: np.ndarray  # column -> term (str objects)
    counts: object  # scipy.sparse.csr_matrix, float32
    lengths: np.ndarray  # int64, analysed terms per document

    @classmethod
    def build(cls, documents) -> "Postings":
        """``documents``: (docid, analysed terms) pairs, in index order."""
        builder = PostingsBuilder()
        for docid, tokens in documents:
            builder.add(docid, tokens)
        return builder.finish()

    def save(self, path: Path) -> None:
        import scipy.sparse as sp

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        sp.save_npz(path / "counts.npz", self.counts, compressed=False)
        np.save(path / "lengths.npy", self.lengths)
        (path / "docids.txt").write_text("\n".join(self.docids), encoding="utf-8")
        (path / "terms.txt").write_text("\n".join(self.terms.tolist()), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> "Postings":
        import scipy.sparse as sp

        path = Path(path)
        docids = (path / "docids.txt").read_text(encoding="utf-8").split("\n")
        terms = np.array((path / "terms.txt").read_text(encoding="utf-8").split("\n"), dtype=object)
        counts = sp.load_npz(path / "counts.npz").tocsr()
        if docids == [""] and counts.shape[0] == 0:
            docids = []
        return cls(docids, terms, counts, np.load(path / "lengths.npy"))

    def column(self, term: str) -> int | None:
        """The column of an analysed term, or None (the term map is built on first use)."""
        if not hasattr(self, "_columns"):
            self._columns = {t: j for j, t in enumerate(self.terms.tolist())}
        return self._columns.get(term)

    def replaced(self, rows: dict[str, list[str]]) -> "Postings":
        """A copy in which the documents of ``rows`` (docid -> analysed terms) hold those
        terms instead: a redacted copy's row (issue 20). A term the replacement holds that
        no document held gets a new column; every other row, and this object, is unchanged.
        """
        import scipy.sparse as sp

        where = {d: i for i, d in enumerate(self.docids)}
        changed = {where[d]: tokens for d, tokens in rows.items() if d in where}
        if not changed:
            return self
        vocabulary = {t: j for j, t in enumerate(self.terms.tolist())}
        extra: list[str] = []
        lil_rows, lil_cols, lil_data = [], [], []
        lengths = self.lengths.copy()
        for row, tokens in changed.items():
            for term, n in Counter(tokens).items():
                col = vocabulary.get(term)
                if col is None:
                    col = vocabulary[term] = len(vocabulary)
                    extra.append(term)
                lil_rows.append(row)
                lil_cols.append(col)
                lil_data.append(n)
            lengths[row] = len(tokens)
        width = len(vocabulary)
        keep = np.ones(self.counts.shape[0], dtype=np.float32)
        keep[list(changed)] = 0
        base = sp.diags(keep) @ self.counts
        base = sp.csr_matrix(base, shape=(base.shape[0], width))
        base.resize(base.shape[0], width)
        new = sp.csr_matrix(
            (np.array(lil_data, dtype=np.float32), (lil_rows, lil_cols)),
            shape=(base.shape[0], width),
        )
        counts = (base + new).tocsr()
        counts.eliminate_zeros()
        terms = np.concatenate([self.terms, np.array(extra, dtype=object)]) if extra else self.terms
        return Postings(list(self.docids), terms, counts.astype(np.float32), lengths)

    def rows(self, docids) -> np.ndarray:
        """Row numbers of ``docids`` (those in the postings), sorted."""
        where = {d: i for i, d in enumerate(self.docids)}
        return np.array(sorted(where[d] for d in docids if d in where), dtype=np.int64)


class PostingsBuilder:
    """Collects one document at a time in compact arrays (4 bytes a posting), so that an
    index build of half a million messages does not hold their terms as Python objects."""

    def __init__(self):
        self.vocabulary: dict[str, int] = {}
        self.docids: list[str] = []
        self.lengths = array("q")
        self.indptr = array("q", [0])
        self.indices = array("i")
        self.data = array("f")

    def add(self, docid: str, tokens: list[str]) -> None:
        vocabulary = self.vocabulary
        row = Counter(vocabulary.setdefault(t, len(vocabulary)) for t in tokens)
        self.docids.append(docid)
        self.lengths.append(len(tokens))
        self.indices.extend(row.keys())
        self.data.extend(row.values())
        self.indptr.append(len(self.indices))

    def finish(self) -> Postings:
        import scipy.sparse as sp

        width = max(1, len(self.vocabulary))
        counts = sp.csr_matrix(
            (
                np.frombuffer(self.data, dtype=np.float32),
                np.frombuffer(self.indices, dtype=np.int32),
                np.frombuffer(self.indptr, dtype=np.int64),
            ),
            shape=(len(self.docids), width),
        )
        terms = np.empty(width, dtype=object)
        terms[:] = ""
        for term, col in self.vocabulary.items():
            terms[col] = term
        return Postings(self.docids, terms, counts, np.frombuffer(self.lengths, dtype=np.int64))


def bm25_idf(n: int, df) -> np.ndarray:
    """Lucene's BM25 idf of document frequencies ``df`` among ``n`` documents, single
    precision: ln(1 + (n - df + 0.5) / (df + 0.5)), computed in double and then rounded."""
    df = np.asarray(df, dtype=np.float64)
    return np.log(1 + (n - df + 0.5) / (df + 0.5)).astype(np.float32)


def average_length(total: int, n: int) -> np.float32:
    """Lucene: avgdl = (float) (sumTotalTermFreq / (double) docCount), 1 for an empty field."""
    return np.float32(total / n) if n and total else np.float32(1)


def norm_cache(avgdl: np.float32) -> np.ndarray:
    """1 / (k1 (1 - b + b |d| / avgdl)) for each of the 256 one-byte length norms, as
    Lucene's BM25Similarity caches it, single precision."""
    return np.float32(1) / (K1 * ((np.float32(1) - B) + B * LENGTH_TABLE / avgdl)).astype(
        np.float32
    )


@dataclass(frozen=True)
class Hit:
    docid: str
    score: float


class VisibleIndex:
    """The postings of the visible rows only, with their own statistics."""

    def __init__(self, postings: Postings, rows: np.ndarray):
        rows = np.unique(np.asarray(rows, dtype=np.int64))
        sub = postings.counts[rows].tocsc()
        df = np.diff(sub.indptr)
        present = np.flatnonzero(df > 0)
        self.counts = sub[:, present].tocsc()  # visible documents x visible terms
        self.counts.sort_indices()
        self.vocabulary = {t: j for j, t in enumerate(postings.terms[present].tolist())}
        self.docids = [postings.docids[r] for r in rows.tolist()]
        self.order = np.argsort(np.array(self.docids, dtype=object), kind="stable")
        self.rank_of = np.empty(len(rows), dtype=np.int64)  # docid order, for ties
        self.rank_of[self.order] = np.arange(len(rows))
        self.rows = rows  # the postings rows of the visible documents, ascending
        self.n = len(rows)
        self.df = df[present].astype(np.int64)
        lengths = postings.lengths[rows]
        self.total = int(lengths.sum())
        self.avgdl = average_length(self.total, self.n)
        self.norms = np.array([encode_length(int(n)) for n in lengths], dtype=np.uint8)
        self.norm_cache = norm_cache(self.avgdl)
        self.norm_inverse = self.norm_cache[self.norms].astype(np.float32)  # per visible document

    def __len__(self) -> int:
        return self.n

    def idf(self, df) -> np.ndarray:
        """Lucene's BM25 idf over the visible documents, single precision."""
        return bm25_idf(self.n, df)

    def search(self, terms: list[str], k: int) -> list[Hit]:
        """The top ``k`` visible documents for analysed query ``terms``, best first."""
        if k <= 0 or not self.n:
            return []
        scores = np.zeros(self.n, dtype=np.float64)
        matched = np.zeros(self.n, dtype=bool)
        for term, boost in Counter(terms).items():
            col = self.vocabulary.get(term)
            if col is None:
                continue
            start, end = self.counts.indptr[col], self.counts.indptr[col + 1]
            rows = self.counts.indices[start:end]
            freq = self.counts.data[start:end]
            weight = np.float32(boost) * self.idf(self.df[col])
            term_scores = weight - weight / (np.float32(1) + freq * self.norm_inverse[rows])
            scores[rows] += term_scores.astype(np.float32)
            matched[rows] = True
        found = np.flatnonzero(matched)
        if not len(found):
            return []
        final = scores[found].astype(np.float32)
        if len(found) > k:
            # keep every document tied with the k-th score, then break ties by docid
            kth = np.partition(final, len(found) - k)[len(found) - k]
            keep = final >= kth
            found, final = found[keep], final[keep]
        order = np.lexsort((self.rank_of[found], -final))[:k]
        return [
            Hit(self.docids[found[i]], float(s))
            for i, s in zip(order, _adjust_ties(final[order]), strict=True)
        ]


def outside_scores(view: VisibleIndex, postings: Postings, rows, terms: list[str]) -> np.ndarray:
    """BM25 of documents outside the view (``rows`` of ``postings``) for analysed query
    ``terms``, each under the view's statistics: the visible documents' number, document
    frequencies (0 for a term no visible document holds) and average length. Each score is a
    function of that document and the visible set alone, whatever else is hidden."""
    rows = np.asarray(rows, dtype=np.int64)
    scores = np.zeros(len(rows), dtype=np.float32)
    if not len(rows):
        return scores
    sub = postings.counts[rows]
    norms = np.array([encode_length(int(n)) for n in postings.lengths[rows]], dtype=np.uint8)
    norm_inverse = view.norm_cache[norms].astype(np.float32)
    for term, boost in Counter(terms).items():
        col = postings.column(term)
        if col is None:
            continue
        freq = np.asarray(sub[:, col].todense(), dtype=np.float32).ravel()
        held = freq > 0
        visible_col = view.vocabulary.get(term)
        df = view.df[visible_col] if visible_col is not None else 0
        weight = np.float32(boost) * view.idf(df)
        scores[held] += weight - weight / (np.float32(1) + freq[held] * norm_inverse[held])
    return scores


def _adjust_ties(scores: np.ndarray) -> list[np.float32]:
    """Anserini's ``ScoreTiesAdjusterReranker``: round to 1e-4, then take 1e-6 off each
    further document of a tie, so that the scores sort as the list does."""
    out: list[np.float32] = []
    dup = 0
    for score in scores.astype(np.float32):
        value = np.float32(np.floor(score * np.float32(1e4) + np.float32(0.5)) / np.float32(1e4))
        if not out or out[-1] - value > np.float32(1e-4):
            dup = 0
        else:
            dup += 1
            value = np.float32(value - np.float32(1e-6) * np.float32(dup))
        out.append(value)
    return out
