from pathlib import Path

import pytest

from core.parsing import Issue
from core.parsing.trec import (
    cranfield_grade,
    iter_qrels,
    iter_smart,
    iter_smart_queries,
    iter_trec_topics,
)

SMART = Path(__file__).parents[1] / "fixtures" / "smart"


def split(items):
    items = list(items)
    return [i for i in items if not isinstance(i, Issue)], [
        i for i in items if isinstance(i, Issue)
    ]


def test_smart_records_keep_every_field():
    records, issues = split(iter_smart((SMART / "mini.all").read_bytes(), "mini.all"))
    assert issues == []
    assert [r.id for r in records] == ["1", "2", "3", "4"]
    first = records[0].fields
    assert first["T"] == "boundary layer flow over a flat plate"
    assert first["C"] == "3.72 4.22"
    assert records[1].fields["A"] == "jones,a.\ndoe,b."


def test_smart_problems_are_named_by_line():
    data = b"stray text\n.I 1\n.W\nok\n.Z\nodd\n.I\n.I 1\n.W\ndup\n"
    records, issues = split(iter_smart(data, "f"))
    assert [r.id for r in records] == ["1"]
    assert [(i.where, i.reason, i.severity) for i in issues] == [
        ("line 1", "text before the first .I record", "error"),
        ("line 5", "unknown field .Z; ignored", "skipped"),
        ("line 7", ".I without an id", "error"),
        ("line 8", "duplicate record id '1'", "error"),
    ]


def test_smart_line_numbers_count_file_lines_not_unicode_separators():
    # U+0085 and U+2028 inside an abstract are text, not line ends.
    data = ".I 1\n.W\npage\u2028and\x85more\n.Z\n.I 2\r\n.W\r\nok\r.Q\r".encode()
    records, issues = split(iter_smart(data, "f"))
    assert records[0].fields["W"] == "page\u2028and\x85more"
    assert records[1].fields["W"] == "ok"
    assert [(i.where, i.reason) for i in issues] == [
        ("line 4", "unknown field .Z; ignored"),
        ("line 8", "unknown field .Q; ignored"),
    ]


def test_smart_queries_numbered_by_order_or_by_id():
    data = (SMART / "mini.qry").read_bytes()
    by_order, _ = split(iter_smart_queries(data, "q", number_by="order"))
    by_id, _ = split(iter_smart_queries(data, "q"))
    assert [t.number for t in by_order] == ["1", "2", "3"]
    assert [t.number for t in by_id] == ["1", "4", "9"]
    assert by_id[0].title == "heat transfer in boundary layers ."


def test_trec_topics_with_and_without_closing_tags():
    data = b"""<top>
<num> Number: 051
<title> Topic: airbus subsidies
<desc> Description:
Find documents about subsidies.
<narr> Narrative:
A relevant document names a subsidy.
</top>
<top><num>52</num><title>second</title><desc>d</desc><narr>n</narr></top>
"""
    topics, issues = split(iter_trec_topics(data, "t"))
    assert issues == []
    assert [(t.number, t.title, t.description, t.narrative) for t in topics] == [
        (
            "51",
            "Topic: airbus subsidies",
            "Find documents about subsidies.",
            "A relevant document names a subsidy.",
        ),
        ("52", "second", "d", "n"),
    ]


def test_trec_topics_problems():
    data = (
        b"<top>\n<title> no number\n</top>\n"
        b"<top>\n<num> 3\n<title> a\n</top>\n"
        b"<top>\n<num> 3\n<title> b\n</top>\n"
        b"<top>\n<num> 4\n<title> unclosed\n"
    )
    topics, issues = split(iter_trec_topics(data, "t"))
    assert [t.number for t in topics] == ["3"]
    assert [(i.where, i.reason) for i in issues] == [
        ("line 1", "topic has no <num>"),
        ("line 8", "duplicate topic number 3"),
        ("line 12", "<top> block is not closed with </top>"),
    ]
    _, issues = split(iter_trec_topics(b"just text", "t"))
    assert issues[0].reason == "no <top> blocks found: not a TREC topics file"


@pytest.mark.parametrize(("code", "grade"), [(1, 2), (2, 2), (3, 1), (4, 0), (-1, 0)])
def test_cranfield_codes_map_to_three_levels(code, grade):
    assert cranfield_grade(code) == grade


def test_qrels_formats():
    cran, issues = split(iter_qrels((SMART / "mini.rel").read_bytes(), "r", fmt="cranfield"))
    assert issues == []
    assert [(q.topic, q.docid, q.grade) for q in cran] == [
        ("1", "1", 2),
        ("1", "4", 1),
        ("2", "2", 2),
        ("3", "3", 0),
        ("3", "1", 0),
    ]
    cacm, _ = split(iter_qrels(b"01 1410  0 0\n", "r", fmt="cacm"))
    assert [(q.topic, q.docid, q.grade) for q in cacm] == [("1", "1410", 1)]
    trec, issues = split(iter_qrels(b"401 0 D-1 3\n401 0 D-2 -2\n401 0 D-1 1\n", "r"))
    assert [(q.docid, q.grade) for q in trec] == [("D-1", 2), ("D-2", 0)]
    assert issues[0].reason.startswith("duplicate judgment for topic 401, document D-1")
    with pytest.raises(ValueError, match="unknown qrels format"):
        list(iter_qrels(b"", "r", fmt="nope"))


def test_a_utf8_byte_order_mark_is_not_part_of_the_first_topic_or_document():
    # Windows editors start a UTF-8 file with one; kept, the first judgment's topic would be
    # "\ufeff401" and its topic would lose that judgment.
    bom = "\ufeff".encode()
    trec, issues = split(iter_qrels(bom + b"401 0 D-1 1\n401 0 D-2 0\n", "r"))
    assert issues == []
    assert [(q.topic, q.docid) for q in trec] == [("401", "D-1"), ("401", "D-2")]
    cacm, _ = split(iter_qrels(bom + "01 1410 0 0\n".encode("latin-1"), "r", fmt="cacm"))
    assert [q.topic for q in cacm] == ["1"]
    topics, issues = split(
        iter_trec_topics(bom + b"<top>\n<num> Number: 7\n<title> t\n</top>\n", "t")
    )
    assert [t.number for t in topics] == ["7"]
    docs, _ = split(iter_smart(bom + b".I 5\n.T\nA title\n", "d"))
    assert [d.id for d in docs] == ["5"]
