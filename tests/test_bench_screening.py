"""bench/screening.py reading a reviewer's own data (``--dataset``, ``--docs`` with
``--qrels``): what it takes, what it refuses and the message it gives, and a whole run of
sasc's default on such a file."""

import json
import sys

import numpy as np
import pytest

from bench import screening as bench
from tests.conftest import needs_shared_data


def _write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def test_an_asreview_labelled_csv_gives_its_texts_and_one_topic(tmp_path):
    path = _write(
        tmp_path / "review.csv",
        "record_id,title,abstract,label_included\n"
        '1,"Sorting, fast","Quick\nsort in place",1\n'
        "2,Tables,,0\n"
        "3,,Hashing by chains,1.0\n",
    )
    texts, topics = bench.labelled_dataset(path)
    assert texts == ["Sorting, fast Quick sort in place", "Tables", "Hashing by chains"]
    assert topics == {"review": {0, 2}}


def test_a_jsonl_dataset_with_one_text_column_and_boolean_labels(tmp_path):
    lines = [{"text": "a b", "Included": True}, {"text": "c", "Included": False}]
    path = _write(tmp_path / "r.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n\n")
    assert bench.labelled_dataset(path) == (["a b", "c"], {"r": {0}})


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("a.csv", "title,abstract\nx,y\n", "no label column (looked for label_included"),
        ("b.csv", "label_included,year\n1,2001\n", "no text column"),
        ("c.csv", "title,included\nx,1\ny,maybe\n", "line 3: label 'maybe' in column 'included'"),
        ("d.csv", "title,included\nx,1,extra\n", "line 2: more fields than the header's 2"),
        ("e.jsonl", '{"text": "x", "label": 1}\n[1, 2]\n', "line 2: a JSON object was expected"),
        ("f.jsonl", '{"text": "x", "label": 1}\n{oops\n', "line 2: not JSON"),
        ("g.csv", "", "empty, or no header line"),
        ("h.csv", "title,included\n", "no records"),
    ],
)
def test_a_dataset_that_cannot_be_read_is_named_with_its_line(tmp_path, name, content, message):
    path = _write(tmp_path / name, content)
    with pytest.raises(bench.DataError) as caught:
        bench.labelled_dataset(path)
    assert str(path) in str(caught.value)
    assert message in str(caught.value)


def test_a_dataset_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("title,included\ncaf\u00e9,1\n".encode("latin-1"))
    with pytest.raises(bench.DataError, match="not UTF-8"):
        bench.labelled_dataset(path)


def test_documents_and_trec_qrels_give_one_topic_per_qrels_topic(tmp_path, capsys):
    docs = _write(
        tmp_path / "docs.jsonl",
        "\n".join(
            json.dumps({"id": i, "contents": c})
            for i, c in [("d1", "one"), ("d2", "two"), ("d3", "three")]
        ),
    )
    qrels = _write(tmp_path / "q.txt", "7 0 d1 1\n7 0 d2 0\n8 0 d3 2\n8 0 d9 1\n9 0 d2 0\n")
    texts, topics = bench.documents_with_qrels(docs, qrels)
    assert texts == ["one", "two", "three"]
    assert topics == {"7": {0}, "8": {2}, "9": set()}
    assert "1 judgments name documents not in" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("docs", "qrels", "message"),
    [
        ("id,text\nd1,a\nd1,b\n", "1 0 d1 1\n", "line 3: document id 'd1' seen twice"),
        ("id,text\n,a\n", "1 0 d1 1\n", "line 2: no document id"),
        ("id,text\nd1,a\n", "1 0 d1\n", "q.txt, line 1: expected 4 columns, found 3"),
        ("id,text\nd1,a\n", "1 0 d1 high\n", "line 1: grade 'high' is not an integer"),
        ("id,text\nd1,a\n", "1 0 zz 1\n", "no judgment names a document of"),
        ("name,text\nd1,a\n", "1 0 d1 1\n", "no id column"),
    ],
)
def test_documents_or_qrels_that_cannot_be_read_are_named(tmp_path, docs, qrels, message):
    d = _write(tmp_path / "d.csv", docs)
    q = _write(tmp_path / "q.txt", qrels)
    with pytest.raises(bench.DataError) as caught:
        bench.documents_with_qrels(d, q)
    assert message in str(caught.value)


def _synthetic_review(path, n=300, relevant=12, seed=0):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(400)]
    marked = set(rng.choice(n, relevant, replace=False).tolist())
    with path.open("w", encoding="utf-8") as f:
        f.write("title,abstract,label_included\n")
        for i in range(n):
            body = rng.choice(words[20:], 15).tolist()
            if i in marked:
                body += rng.choice(words[:20], 5).tolist()
            f.write(f"doc {i},{' '.join(body)},{int(i in marked)}\n")
    return marked


def test_a_whole_run_on_a_labelled_dataset_finds_every_relevant_document(
    tmp_path, monkeypatch, capsys
):
    path = tmp_path / "mine.csv"
    marked = _synthetic_review(path)
    out = tmp_path / "out.json"
    argv = ["screening.py", "--dataset", str(path), "--priors", "2", "--no-asreview"]
    monkeypatch.setattr(sys, "argv", [*argv, "--variants", "sasc", "--out", str(out)])
    bench.main()
    result = json.loads(out.read_text())["dataset-mine"]
    assert result["topics"] == ["mine"] and result["relevant"] == {"mine": len(marked)}
    runs = result["runs"]["sasc"]
    assert len(runs) == 2
    for run in runs:
        # Every relevant document found, far sooner than reading in order (about 290 of 300).
        assert run["docs"]["1.0"] < 120, run
        assert run["docs"]["0.8"] <= run["docs"]["1.0"]
    assert "dataset-mine: documents to 80/90/95/100% recall" in capsys.readouterr().out


def test_the_run_stops_with_the_file_and_line_of_a_bad_record(tmp_path, monkeypatch):
    path = _write(tmp_path / "bad.csv", "title,included\nx,1\ny,2\n")
    monkeypatch.setattr(sys, "argv", ["screening.py", "--dataset", str(path), "--no-asreview"])
    with pytest.raises(SystemExit, match=r"bad.csv, line 3: label '2'"):
        bench.main()


@needs_shared_data("cacm")
def test_cacm_written_as_docs_and_qrels_reads_back_as_the_built_in_collection(tmp_path):
    texts, topics = bench.smart_collection("cacm")
    docs = tmp_path / "cacm.jsonl"
    docs.write_text(
        "".join(json.dumps({"id": f"C{i}", "contents": t}) + "\n" for i, t in enumerate(texts))
    )
    qrels = tmp_path / "cacm.qrels"
    qrels.write_text(
        "".join(f"{t} 0 C{r} 1\n" for t, rows in sorted(topics.items()) for r in sorted(rows))
    )
    again, topics_again = bench.documents_with_qrels(docs, qrels)
    assert again == texts
    assert topics_again == topics
    assert bench.pick_topics(topics_again, 10) == bench.pick_topics(topics, 10)


@needs_shared_data("cacm")
def test_cacm_categories_are_topics_over_the_abstracts_that_carry_codes():
    texts, topics = bench.categories_collection()
    assert len(texts) == 1425  # the abstracts with .C codes (of 3,204)
    assert len(topics["4.22"]) == 148  # the largest category
    assert all(len(t) for t in texts)
    # A code split over two lines ("3.72 \n3.73,") still counts for both.
    assert all(rows <= set(range(len(texts))) for rows in topics.values())
    assert bench.pick_topics(topics, 10)[:3] == ["1.0", "2.40", "3.20"]
