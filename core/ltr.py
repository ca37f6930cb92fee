"""Ranking features for learning to rank (issue 6), pure: no Django, no JVM.

Per (query, document): for each query field (title, title + description) against each
document field (subject, body, attachments, the whole message), BM25 (k1 0.9, b 0.4, as the
index searches), query likelihood with Dirichlet smoothing (mu 1000), and term statistics
over the query terms: sum / min / max of tf, idf and tf-idf, and coverage (the share of
query terms present). Then P(sensitive) and 1 - P(sensitive). Terms are Lucene's analysis
(the caller passes analysed tokens: ``core.lucene.analyze``), so the statistics are those
of the index; they are kept per field as a sparse count matrix built once per collection
version, and a query only slices the candidate rows and query-term columns.
"""

from dataclasses import dataclass

import numpy as np

DOC_FIELDS = ("subject", "body", "attachments", "message")
QUERY_FIELDS = ("title", "title+desc")
STATS = (
    "bm25",
    "ql",
    "tf_sum",
    "tf_min",
    "tf_max",
    "idf_sum",
    "idf_min",
    "idf_max",
    "tfidf_sum",
    "tfidf_min",
    "tfidf_max",
    "coverage",
)
NAMES = [f"{q}:{f}:{s}" for q in QUERY_FIELDS for f in DOC_FIELDS for s in STATS] + [
    "p_sensitive",
    "p_not_sensitive",
]
K1, B, MU = 0.9, 0.4, 1000.0


@dataclass
class FieldStats:
    """Term counts of one document field over a collection."""

    counts: "object"  # scipy.sparse.csr_matrix, documents x terms
    vocabulary: dict[str, int]
    lengths: np.ndarray
    df: np.ndarray
    cf: np.ndarray

    @property
    def n(self) -> int:
        return self.counts.shape[0]

    @classmethod
    def build(cls, token_lists: list[list[str]]) -> "FieldStats":
        import scipy.sparse as sp

        vocabulary: dict[str, int] = {}
        indptr, indices, data = [0], [], []
        for tokens in token_lists:
            row: dict[int, int] = {}
            for t in tokens:
                col = vocabulary.setdefault(t, len(vocabulary))
                row[col] = row.get(col, 0) + 1
            indices.extend(row)
            data.extend(row.values())
            indptr.append(len(indices))
        counts = sp.csr_matrix(
            (np.asarray(data, dtype=np.float32), np.asarray(indices, dtype=np.int32), indptr),
            shape=(len(token_lists), max(1, len(vocabulary))),
        )
        return cls(
            counts,
            vocabulary,
            np.asarray(counts.sum(axis=1)).ravel(),
            np.bincount(counts.indices, minlength=counts.shape[1]).astype(np.float64),
            np.asarray(counts.sum(axis=0)).ravel().astype(np.float64),
        )

    def stats(self, terms: list[str], rows: np.ndarray) -> np.ndarray:
        """The STATS of ``rows`` for the query ``terms``: (len(rows), len(STATS))."""
        out = np.zeros((len(rows), len(STATS)))
        cols = [self.vocabulary[t] for t in terms if t in self.vocabulary]
        if not terms or len(rows) == 0:
            return out
        n = max(self.n, 1)
        lengths = self.lengths[rows]
        avgdl = max(float(self.lengths.mean()) if self.n else 0.0, 1e-9)
        total = max(float(self.cf.sum()), 1.0)
        # Query terms absent from the field: tf 0, and the largest idf (never seen).
        tf = np.zeros((len(rows), len(terms)))
        df = np.zeros(len(terms))
        cf = np.zeros(len(terms))
        present = [i for i, t in enumerate(terms) if t in self.vocabulary]
        if cols:
            tf[:, present] = self.counts[rows][:, cols].toarray()
            df[present] = self.df[cols]
            cf[present] = self.cf[cols]
        idf = bm25_idf(n, df)
        norm = K1 * (1 - B + B * lengths / avgdl)
        bm25 = (idf * tf / (tf + norm[:, None])).sum(axis=1)  # Lucene 8+: no (k1 + 1)
        p_collection = (cf + 1) / (total + len(self.vocabulary) + 1)  # never zero
        ql = np.log((tf + MU * p_collection) / (lengths[:, None] + MU)).sum(axis=1)
        tfidf = tf * idf
        out[:, 0], out[:, 1] = bm25, ql
        for j, values in enumerate((tf, np.broadcast_to(idf, tf.shape), tfidf)):
            out[:, 2 + 3 * j] = values.sum(axis=1)
            out[:, 3 + 3 * j] = values.min(axis=1)
            out[:, 4 + 3 * j] = values.max(axis=1)
        out[:, 11] = (tf > 0).sum(axis=1) / len(terms)
        return out


@dataclass
class RankingFeatures:
    """Every document field's statistics over one collection."""

    fields: dict[str, FieldStats]
    docids: list[str]

    @classmethod
    def build(cls, documents, analyze) -> "RankingFeatures":
        """``documents``: (docid, subject, body, attachments text); ``analyze``: text -> terms."""
        docids, tokens = [], {f: [] for f in DOC_FIELDS}
        for docid, subject, body, attachments in documents:
            docids.append(docid)
            s, b, a = analyze(subject), analyze(body), analyze(attachments)
            for name, value in (("subject", s), ("body", b), ("attachments", a)):
                tokens[name].append(value)
            tokens["message"].append(s + b + a)
        return cls({f: FieldStats.build(tokens[f]) for f in DOC_FIELDS}, docids)

    def matrix(self, queries: dict[str, list[str]], rows, p_sensitive) -> np.ndarray:
        """Feature rows (NAMES) of the documents ``rows`` for analysed query fields."""
        rows = np.asarray(rows, dtype=np.int64)
        blocks = [
            self.fields[f].stats(queries.get(q, []), rows) for q in QUERY_FIELDS for f in DOC_FIELDS
        ]
        p = np.asarray(p_sensitive, dtype=float).reshape(-1, 1)
        return np.hstack([*blocks, p, 1 - p])


def normalise_per_query(features: np.ndarray) -> np.ndarray:
    """Z-scores of each feature within one query's candidates (constant features: 0), as
    listwise rankers want features comparable across queries."""
    mean = features.mean(axis=0)
    std = features.std(axis=0)
    return np.where(std > 0, (features - mean) / np.where(std > 0, std, 1), 0.0)


def bm25_idf(n, df):
    """Lucene's BM25 idf, log(1 + (N - df + 0.5) / (df + 0.5)); numbers or arrays."""
    return np.log(1 + (n - df + 0.5) / (df + 0.5))
