"""The caps an import reads within and the ids it accepts (docs/formats.md, "Limits").

Each cap is met by a file one over it: the report names the limit's setting and nothing is
stored (documents: what was read before the cap stays). Ids that would split or add a line
of a TREC file (whitespace, newline, NUL) are refused at import with the line, and written
percent-encoded by the exports when they were stored before they were checked.
"""

import json
import time
import tracemalloc
import zipfile

import pytest

from annotate import exports, import_labels, import_personas, import_topics, services
from annotate.labels import FinalLabels
from annotate.models import Document, Persona, ReferenceRelevance, ReferenceSensitivity, Topic
from core.parsing import Issue
from core.parsing.trec import iter_qrels

MSG = "From: a@example.org\nTo: b@example.org\nSubject: {s}\n\nBody {s}\n"


def topics_file(path, numbers):
    path.write_text("".join(f"<top>\n<num> {n}\n<title> topic {n}\n</top>\n" for n in numbers))
    return path


def test_a_topics_file_over_the_cap_is_refused_before_anything_is_parsed(
    collection, tmp_path, settings
):
    settings.SASC_MAX_TOPICS_PER_COLLECTION = 5
    report = import_topics.topics_import(
        collection=collection, path=topics_file(tmp_path / "t.txt", range(6))
    )
    assert [i.reason for i in report.errors] == [
        "file holds 6 topics: over the 5 topics a collection may hold "
        "(SASC_MAX_TOPICS_PER_COLLECTION); nothing was stored"
    ]
    assert not Topic.objects.exists()


def test_the_topic_cap_counts_the_topics_a_collection_already_has(collection, tmp_path, settings):
    settings.SASC_MAX_TOPICS_PER_COLLECTION = 5
    import_topics.topics_import(collection=collection, path=topics_file(tmp_path / "a", range(3)))
    # 1 and 2 are already there (updated, not added): 3 + 2 new = 5 is allowed, 3 + 3 is not.
    report = import_topics.topics_import(
        collection=collection, path=topics_file(tmp_path / "b", [1, 2, 3, 4])
    )
    assert report.ok and report.created == 2
    report = import_topics.topics_import(
        collection=collection, path=topics_file(tmp_path / "c", [9])
    )
    assert [i.reason for i in report.errors] == [
        "the collection has 5 topics and this file adds 1: over the 5 topics a collection may "
        "hold (SASC_MAX_TOPICS_PER_COLLECTION); nothing was stored"
    ]
    assert Topic.objects.count() == 5


def test_a_million_line_topics_file_is_refused_in_well_under_a_second(collection, tmp_path):
    """The issue's file: 10^6 lines, 200,000 topics, once accepted whole."""
    path = topics_file(tmp_path / "million.txt", range(200_000))
    started = time.perf_counter()
    report = import_topics.topics_import(collection=collection, path=path)
    assert time.perf_counter() - started < 3
    assert "file holds 200000 topics" in report.errors[0].reason
    assert not Topic.objects.exists()


def test_a_qrels_file_over_the_line_cap_is_refused_and_nothing_stored(
    sample_collection, tmp_path, settings
):
    Topic.objects.create(collection=sample_collection, number="1", title="t")
    settings.SASC_MAX_QRELS_LINES = 3
    path = tmp_path / "q.txt"
    path.write_text("1 0 sample/easy-ham-1-00001.eml 1\n" * 4)
    report = import_labels.qrels_import(collection=sample_collection, path=path)
    assert [i.reason for i in report.errors] == [
        "file has 4 lines, over the 3 line limit (SASC_MAX_QRELS_LINES); nothing was stored"
    ]
    assert not ReferenceRelevance.objects.exists()


def test_an_email_import_stops_at_the_document_cap_and_keeps_what_it_read(
    collection, tmp_path, settings
):
    settings.SASC_MAX_DOCUMENTS_PER_IMPORT = 3
    box = tmp_path / "box"
    box.mkdir()
    for n in range(5):
        (box / f"{n}.eml").write_text(MSG.format(s=n))
    report = services.import_run(collection=collection, fmt="emails", path=box)
    assert report.created == 3
    assert [i.reason for i in report.errors] == [
        "more than 3 documents in one import (SASC_MAX_DOCUMENTS_PER_IMPORT): the first 3 "
        "were read, the rest was not; split the input"
    ]


def test_a_smart_file_over_the_document_cap_is_refused_whole(collection, tmp_path, settings):
    settings.SASC_MAX_DOCUMENTS_PER_IMPORT = 2
    path = tmp_path / "docs.all"
    path.write_text("".join(f".I {n}\n.T\ntitle {n}\n.W\nbody\n" for n in range(3)))
    report = services.import_run(collection=collection, fmt="smart", path=path)
    assert "file holds 3 records, over the 2 documents" in report.errors[0].reason
    assert not Document.objects.exists()


def test_zip_uploads_read_the_archive_limits_from_settings(collection, tmp_path, settings):
    settings.SASC_MAX_ARCHIVE_MEMBERS = 2
    path = tmp_path / "mail.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for n in range(3):
            archive.writestr(f"{n}.eml", MSG.format(s=n))
    report = services.import_run(collection=collection, fmt="emails", path=path)
    assert [i.reason for i in report.errors] == [
        "archive has more than 2 members (SASC_MAX_ARCHIVE_MEMBERS); nothing was read"
    ]


# --- ids ---------------------------------------------------------------------------------


def test_a_document_id_with_a_space_is_refused_at_import_with_its_line(collection, tmp_path):
    path = tmp_path / "mail.jsonl"
    lines = [
        {"id": "ok-1", "subject": "fine", "body": "b"},
        {"id": "two words", "subject": "spaced", "body": "b"},
        {"id": "line\nbreak", "subject": "broken", "body": "b"},
        {"id": "x" * 256, "subject": "long", "body": "b"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    report = services.import_run(collection=collection, fmt="emails", path=path)
    assert list(Document.objects.values_list("docid", flat=True)) == ["ok-1"]
    assert [(i.where, i.reason) for i in report.errors] == [
        ("line 2", "document id 'two words' holds whitespace (' ') at position 4"),
        ("line 3", "document id 'line\\nbreak' holds whitespace ('\\n') at position 5"),
        ("line 4", f"document id {'x' * 40!r}... is 256 characters, over the 255 limit"),
    ]


def test_ids_made_from_file_names_lose_their_whitespace(collection, tmp_path):
    box = tmp_path / "my box"
    box.mkdir()
    (box / "a message.eml").write_text(MSG.format(s="one"))
    services.import_run(collection=collection, fmt="emails", path=box)
    assert list(Document.objects.values_list("docid", flat=True)) == ["my_box/a_message.eml"]


def test_qrels_and_topic_ids_that_are_not_one_field_are_refused_by_line(collection, tmp_path):
    items = list(iter_qrels(b"1 0 ok 1\n1 0 bad\x07id 1\n" + b"7" * 40 + b" 0 d 1\n", "q"))
    assert [str(i) for i in items if isinstance(i, Issue)] == [
        "q:line 2: document id 'bad\\x07id' holds a control character ('\\x07') at position 4",
        f"q:line 3: topic {'7' * 40!r}... is 40 characters, over the 32 limit",
    ]
    path = tmp_path / "t.txt"
    path.write_text("<top>\n<num> Number: 401 extra\n<title> t\n</top>\n")
    report = import_topics.topics_import(collection=collection, path=path)
    assert [str(i) for i in report.errors] == [
        "t.txt:line 2: topic number '401 extra' holds whitespace (' ') at position 4"
    ]
    path.write_text(".I 1\n.W\nq\n.I " + "9" * 33 + "\n.W\nq\n")
    report = import_topics.topics_import(collection=collection, path=path, fmt="smart")
    assert report.created == 1 and "over the 32 limit" in report.errors[0].reason


def test_an_id_with_a_newline_cannot_add_a_line_to_qrels_txt():
    """Ids stored before they were checked still come out one field each."""
    labels = FinalLabels(
        relevance={("1", "evil\n2 0 injected"): (2, "single"), ("1", "a b"): (1, "single")},
        sensitivity={
            ("Ann", "1", "x\ty"): (1, "single"),
        },
    )
    qrels = exports.qrels_text(labels)
    assert qrels == "1 0 a%20b 1\n1 0 evil%0A2%200%20injected 2\n"
    assert all(len(line.split()) == 4 for line in qrels.splitlines())
    assert exports.sensitivity_texts(labels) == {"Ann": "1 0 x%09y 1\n"}


def test_persona_names_that_slug_alike_get_a_file_each():
    labels = FinalLabels(
        relevance={},
        sensitivity={("Ann Lee", "1", "d"): (1, "single"), ("ann-lee", "1", "d"): (0, "single")},
    )
    assert exports.sensitivity_files(labels) == {
        "sensitivity-ann-lee.txt": "1 0 d 1\n",
        "sensitivity-ann-lee-2.txt": "1 0 d 0\n",
    }


def test_personas_with_control_characters_or_overlong_fields_are_refused(tmp_path, db):
    path = tmp_path / "p.json"
    path.write_text(
        json.dumps(
            [
                {"name": "Ann\nInjected"},
                {"name": "Bea", "nickname": "n" * 101},
                {"name": "Cy", "background": "b" * 10_001},
                {"name": "Di", "background": "line one\nline two"},
            ]
        )
    )
    report = import_personas.personas_import(path=path)
    assert [(i.where, i.reason) for i in report.errors] == [
        (
            "item 1",
            "field 'name' holds a control character (U+000A; newline, tab, line separator, "
            "text direction...)",
        ),
        ("item 2", "field 'nickname' is 101 characters, over the 100 limit"),
        ("item 3", "field 'background' is 10001 characters, over the 10000 limit"),
    ]
    assert list(Persona.objects.values_list("name", flat=True)) == ["Di"]


# --- qrels memory ------------------------------------------------------------------------


@pytest.fixture
def labelled(collection):
    Document.objects.bulk_create(
        Document(collection=collection, docid=f"D{n}", content_hash=f"{n:064x}")
        for n in range(2000)
    )
    Topic.objects.bulk_create(
        Topic(collection=collection, number=str(t), title="t") for t in range(1, 51)
    )
    return collection


def _qrels(path, topics, docs=2000):
    with open(path, "w") as out:
        for t in range(1, topics + 1):
            out.writelines(f"{t} 0 D{n} {n % 3}\n" for n in range(docs))
    return path


def _peak(func):
    tracemalloc.start()
    try:
        func()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_qrels_import_memory_does_not_grow_with_the_file(labelled, tmp_path):
    """4,000 and 40,000 lines: the peak of Python allocations stays nearly the same (it grew
    by some 880 bytes a line when every line was held as a model instance)."""
    small = _peak(
        lambda: import_labels.qrels_import(
            collection=labelled, path=_qrels(tmp_path / "s", 2), source="s"
        )
    )
    large = _peak(
        lambda: import_labels.qrels_import(
            collection=labelled, path=_qrels(tmp_path / "l", 20), source="l"
        )
    )
    assert ReferenceRelevance.objects.filter(source="l").count() == 40_000
    # 36,000 more lines may add their 12-byte keys and little else.
    assert large - small < 36_000 * 60, (small, large)


def test_duplicate_label_lines_across_chunks_are_reported_with_their_first_line(
    labelled, tmp_path, monkeypatch
):
    monkeypatch.setattr(import_labels, "LABEL_CHUNK", 3)
    path = tmp_path / "q.txt"
    path.write_text("1 0 D1 1\n1 0 D2 1\n1 0 D3 1\n1 0 D4 1\n1 0 D1 2\n1 0 D4 0\n")
    report = import_labels.qrels_import(collection=labelled, path=path)
    assert report.created == 4
    assert [str(i) for i in report.errors] == [
        "q.txt:line 5: duplicate judgment for topic 1, document D1 (first on line 1)",
        "q.txt:line 6: duplicate judgment for topic 1, document D4 (first on line 4)",
    ]
    assert ReferenceRelevance.objects.get(document__docid="D1").grade == 1


def test_sensitivity_labels_are_read_in_chunks_too(labelled, tmp_path, monkeypatch):
    monkeypatch.setattr(import_labels, "LABEL_CHUNK", 2)
    persona = Persona.objects.create(name="P")
    path = tmp_path / "s.txt"
    path.write_text("* 0 D1 1\n1 0 D1 0\n2 0 D2 1\n* 0 D1 0\n")
    report = import_labels.sensitivity_import(collection=labelled, persona=persona, path=path)
    assert report.created == 3
    assert [i.where for i in report.errors] == ["line 4"]
    again = import_labels.sensitivity_import(collection=labelled, persona=persona, path=path)
    assert (again.created, again.unchanged) == (0, 3)
    assert ReferenceSensitivity.objects.count() == 3
