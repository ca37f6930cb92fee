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


def _topics_collection():
    """Two topics of 40 documents each, every document two words of its topic's four: two
    documents of one topic may share no word, yet their words co-occur elsewhere."""
    rng = np.random.default_rng(0)
    words = {
        0: ["wing", "flutter", "airfoil", "lift"],
        1: ["parser", "compiler", "grammar", "lexer"],
    }
    docs = []
    for i in range(80):
        topic = i % 2
        docs.append((f"d{i}", " ".join(rng.choice(words[topic], 2, replace=False))))
    docs.append(("empty", "the of and"))  # stop words only: no term
    return features.build_tfidf(docs)


def test_latent_coordinates_put_documents_of_one_topic_together_without_a_shared_word(tmp_path):
    built = features.with_latent(_topics_collection(), 2)  # one dimension per topic
    z = built.latent
    assert z.shape == (81, 2) and z.dtype == np.float32
    assert np.allclose(np.linalg.norm(z[:80], axis=1), 1.0, atol=1e-5)
    assert not z[80].any(), "a document with no term has no coordinates"
    text = {
        d: set(built.vocabulary[j] for j in built.matrix[i].indices)
        for i, d in enumerate(built.docids)
    }
    # Two documents of one topic that share no word: the words' cosine is 0, the latent
    # coordinates' is high; and higher than with any document of the other topic.
    a = next(i for i in range(0, 80, 2) if text[f"d{i}"] == {"wing", "flutter"})
    b = next(i for i in range(0, 80, 2) if text[f"d{i}"] == {"airfoil", "lift"})
    assert (built.matrix[a] @ built.matrix[b].T).sum() == 0
    assert z[a] @ z[b] > 0.5
    assert z[a] @ z[b] > max(z[a] @ z[j] for j in range(1, 80, 2))
    # Saved beside the matrix, memory-mapped when read back; an index saved without them
    # (built before them) reads back with none.
    features.save(built, tmp_path / "with")
    loaded = features.load(tmp_path / "with")
    assert _mapped(loaded.latent) and np.array_equal(loaded.latent, z)
    features.save(_topics_collection(), tmp_path / "without")
    assert features.load(tmp_path / "without").latent is None


def test_latent_coordinates_ask_for_no_more_dimensions_than_the_matrix_has():
    built = features.build_tfidf([("a", "wing flutter"), ("b", "wing lift"), ("c", "lift")])
    assert features.latent_coordinates(built.matrix, 100).shape == (3, 2)
    assert features.latent_coordinates(built.matrix[:1], 100).shape == (1, 0)
    # Seeded: the same coordinates every time.
    big = _topics_collection().matrix
    assert np.array_equal(features.latent_coordinates(big, 3), features.latent_coordinates(big, 3))


def test_latent_coordinates_of_another_build_or_damaged_are_not_read(tmp_path, caplog):
    """A matrix saved without coordinates removes any left in its folder; coordinates that are
    not one finite row per document read back as none (the words alone), with a warning."""
    built = features.with_latent(_topics_collection(), 2)
    features.save(built, tmp_path / "v")
    features.save(_topics_collection(), tmp_path / "v")  # the same folder, no coordinates
    assert not (tmp_path / "v" / "latent.npy").exists()
    assert features.load(tmp_path / "v").latent is None

    for name, bad in (
        ("rows", np.ones((5, 2), dtype=np.float32)),  # another collection's
        ("nan", np.where(np.arange(81 * 2).reshape(81, 2) == 7, np.nan, 0.5)),
    ):
        features.save(built, tmp_path / name)
        np.save(tmp_path / name / "latent.npy", bad.astype(np.float32))
        with caplog.at_level("WARNING", logger="core.features"):
            assert features.load(tmp_path / name).latent is None
        assert "not used" in caplog.text
