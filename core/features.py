"""TF-IDF document features: built once per collection version, memory-mapped by readers.

The matrix is stored as three ``.npy`` arrays (CSR data, indices, indptr) plus the docids and
the vocabulary, and each row's latent coordinates (``latent.npy``, n x 50 float32), so every
worker process maps the same file pages instead of holding a copy, and active learning never
recomputes them per iteration. Pure: no Django.
"""

import json
import logging
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    import scipy.sparse as sp

_cache: dict[str, "FeatureMatrix"] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class FeatureMatrix:
    """A TF-IDF matrix with the docid of each row and the term of each column, and each
    row's latent coordinates (``latent_coordinates``; None for an index built before them)."""

    matrix: "sp.csr_matrix"
    docids: list[str]
    vocabulary: list[str]
    latent: np.ndarray | None = None


# The screening picker reads each row's coordinates on the collection's first 50 singular
# vectors beside its words (core.active.Latent): measured against the words alone on the
# tuning topics of Cranfield, CACM, the mail and the news (docs/active-learning.md, "Eighth
# round"; 100 did no better on average and costs more per step). 50 float32 per document: 200
# bytes, 100 MB at 500,000 messages.
LATENT_DIMENSIONS = 50


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


def latent_coordinates(matrix, k: int = LATENT_DIMENSIONS, *, seed: int = 0) -> np.ndarray:
    """Each row's coordinates on the matrix's first ``k`` singular vectors (latent semantic
    analysis, Deerwester et al. 1990: a truncated SVD, scikit-learn's randomized solver,
    seeded), L2-normalised, float32: rows that share few words but the same latent topics
    get close coordinates. Fewer columns when the matrix has fewer than ``k + 1`` rows or
    terms; a row with no term gets a row of zeros."""
    from sklearn.decomposition import TruncatedSVD
    from threadpoolctl import threadpool_limits

    n, d = matrix.shape
    k = min(k, n - 1, d - 1)
    if k < 1:
        return np.zeros((n, 0), dtype=np.float32)
    # One BLAS thread: the build runs in a worker beside others, and at 500,000 rows two
    # OpenBLAS threads on a busy two-core host took 331 s against 44 s for one
    # (docs/performance.md, "Index and features"). The limit holds for the whole process
    # while the SVD runs: in a worker (one task at a time) that is the build alone.
    with threadpool_limits(limits=1, user_api="blas"):
        z = TruncatedSVD(n_components=k, random_state=seed).fit_transform(matrix)
    norms = np.linalg.norm(z, axis=1, keepdims=True)
    return (z / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def with_latent(features: FeatureMatrix, k: int = LATENT_DIMENSIONS) -> FeatureMatrix:
    """``features`` with its rows' ``latent_coordinates``."""
    return replace(features, latent=latent_coordinates(features.matrix, k))


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
    latent = directory / "latent.npy"
    if features.latent is not None:
        np.save(latent, np.asarray(features.latent, dtype=np.float32))
    else:  # never leave another build's coordinates beside this matrix
        latent.unlink(missing_ok=True)
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
            _latent_load(d / "latent.npy", matrix.shape[0]),
        )
        _cache[key] = features
        return features


def _latent_load(path: Path, rows: int) -> np.ndarray | None:
    """The latent coordinates saved beside a matrix of ``rows`` rows, memory-mapped; None
    (the picker reads the words alone) when there are none, or when they are not one finite
    row per document (a file from another build, or damaged: logged)."""
    if not path.exists():
        return None
    latent = np.load(path, mmap_mode="r")
    if latent.ndim != 2 or latent.shape[0] != rows or not np.isfinite(latent).all():
        logger.warning(
            "%s: %s coordinates for a matrix of %d rows, or not finite; not used",
            path,
            "x".join(map(str, latent.shape)),
            rows,
        )
        return None
    return latent


def forget(directory: Path) -> None:
    """Drop a cached matrix (its files are about to be removed)."""
    with _lock:
        _cache.pop(os.fspath(Path(directory).resolve()), None)
