import numpy as np

from core import features


def _mapped(array) -> bool:
    while array is not None:
        if isinstance(array, np.memmap):
            return True
        array = getattr(array, "base", None)
    return False


def test_tfidf_round_trip_is_memory_mapped_and_identical(tmp_path):
    words = ["flutter", "wing", "heat", "boundary", "layer", "compiler"]
    docs = [(f"d{i}", f"{words[i % 6]} {words[(i * 5) % 6]} number {i}") for i in range(60)]
    built = features.build_tfidf(docs)
    assert built.matrix.shape == (60, len(built.vocabulary))
    assert "flutter" in built.vocabulary
    assert "number" not in built.vocabulary, "a term in every document carries no weight"
    assert not any(term.isdigit() for term in built.vocabulary)
    features.save(built, tmp_path / "tfidf")
    loaded = features.load(tmp_path / "tfidf")
    # The big arrays are views of the mapped files, not copies (indptr is small and cast).
    assert _mapped(loaded.matrix.data) and _mapped(loaded.matrix.indices)
    assert loaded.docids == built.docids
    assert (loaded.matrix != built.matrix).nnz == 0
    assert features.load(tmp_path / "tfidf") is loaded, "loaded once per process"
    norms = np.sqrt(loaded.matrix.multiply(loaded.matrix).sum(axis=1)).A1
    assert np.allclose(norms[norms > 0], 1.0, atol=1e-5)


def test_tiny_and_empty_collections_still_get_a_matrix():
    small = features.build_tfidf([("a", "one word"), ("b", "another word")])
    assert small.matrix.shape[0] == 2 and small.vocabulary
    empty = features.build_tfidf([("a", ""), ("b", "the and of")])
    assert empty.matrix.shape == (2, 0)
    assert features.build_tfidf([]).docids == []
