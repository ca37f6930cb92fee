"""TF-IDF document features: built once per collection version, memory-mapped by readers.

The matrix is stored as three ``.npy`` arrays (CSR data, indices, indptr) plus the docids and
the vocabulary, so every worker process maps the same file pages instead of holding a copy,
and active learning never recomputes it per iteration. Pure: no Django.
"""

import json
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

_cache: dict[str, "FeatureMatrix"] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class FeatureMatrix:
    """A TF-IDF matrix with the docid of each row and the term of each column."""

    matrix: "sp.csr_matrix"
    docids: list[str]
    vocabulary: list[str]


# Terms start with a letter: bare numbers (dates, prices, ids) left out.
WORDS = r"(?u)\b[^\W\d_][\w'-]*[^\W_]\b|\b[^\W\d_]\b"
# Numbers kept too: any run of two or more word characters, or one letter.
WORDS_AND_NUMBERS = r"(?u)\b\w[\w'-]*\w\b|\b[^\W\d_]\b"


def build_tfidf(
    docs: Iterable[tuple[str, str]],
    *,
    min_df: int = 2,
    max_df: float = 0.95,
    ngrams: int = 1,
    numbers: bool = False,
    stop_words: bool = True,
) -> FeatureMatrix:
    """Fit a TF-IDF model on ``(docid, text)`` pairs and return the row-normalised matrix.

    Sublinear tf and English stop words, as usual for relevance classifiers on email
    (Rahman et al. use TF-IDF with logistic regression). ``min_df`` falls back to 1 for tiny
    collections so that every document still gets features. ``ngrams`` 2 adds word pairs;
    ``numbers`` keeps terms that start with a digit, ``stop_words`` False keeps English stop
    words (all measured for screening in docs/active-learning.md).
    """
    import scipy.sparse as sp  # loaded lazily: the web process rarely needs them
    from sklearn.feature_extraction.text import TfidfVectorizer

    docids: list[str] = []
    texts: list[str] = []
    for docid, text in docs:
        docids.append(docid)
        texts.append(text)
    if not docids:
        return FeatureMatrix(sp.csr_matrix((0, 0), dtype=np.float32), [], [])
    vectorizer = TfidfVectorizer(
        sublinear_tf=True,
        stop_words="english" if stop_words else None,
        min_df=min_df if len(docids) >= 50 else 1,
        max_df=max_df if len(docids) >= 50 else 1.0,
        dtype=np.float32,
        ngram_range=(1, ngrams),
        token_pattern=WORDS_AND_NUMBERS if numbers else WORDS,
    )
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError:  # every document empty or only stop words
        return FeatureMatrix(sp.csr_matrix((len(docids), 0), dtype=np.float32), docids, [])
    vocabulary = vectorizer.get_feature_names_out().tolist()
    matrix = sp.csr_matrix(matrix, dtype=np.float32)
    matrix.sort_indices()
    return FeatureMatrix(matrix, docids, vocabulary)


def save(features: FeatureMatrix, directory: Path) -> None:
    """Write the matrix to ``directory`` (created) in the memory-mappable layout."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    m = features.matrix
    np.save(directory / "data.npy", m.data.astype(np.float32, copy=False))
    np.save(directory / "indices.npy", m.indices.astype(np.int32, copy=False))
    np.save(directory / "indptr.npy", m.indptr.astype(np.int64, copy=False))
    meta = {"shape": list(m.shape), "nnz": int(m.nnz)}
    (directory / "meta.json").write_text(json.dumps(meta))
    (directory / "docids.json").write_text(json.dumps(features.docids))
    (directory / "vocabulary.json").write_text(json.dumps(features.vocabulary))


def load(directory: Path) -> FeatureMatrix:
    """Return the matrix in ``directory``, memory-mapped, loaded once per process."""
    import scipy.sparse as sp

    key = os.fspath(Path(directory).resolve())
    with _lock:
        cached = _cache.get(key)
        if cached is not None:
            return cached
        d = Path(key)
        meta = json.loads((d / "meta.json").read_text())
        arrays = [
            np.load(d / f"{name}.npy", mmap_mode="r") for name in ("data", "indices", "indptr")
        ]
        matrix = sp.csr_matrix(tuple(arrays), shape=tuple(meta["shape"]), copy=False)
        features = FeatureMatrix(
            matrix,
            json.loads((d / "docids.json").read_text()),
            json.loads((d / "vocabulary.json").read_text()),
        )
        _cache[key] = features
        return features


def forget(directory: Path) -> None:
    """Drop a cached matrix (its files are about to be removed)."""
    with _lock:
        _cache.pop(os.fspath(Path(directory).resolve()), None)
