import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from django.db import IntegrityError

from annotate import (
    import_documents,
    import_labels,
    import_personas,
    import_report,
    import_topics,
    services,
)
from annotate.models import (
    Attachment,
    Collection,
    Document,
    Persona,
    ReferenceRelevance,
    ReferenceSensitivity,
    Topic,
)
from tests.conftest import SAMPLE

EDGE = Path(__file__).parents[1] / "fixtures" / "emails" / "edge"
MSG = "From: a@example.org\nTo: b@example.org\nSubject: {s}\nMessage-ID: <{s}@x>\n\nBody {s}\n"


def test_importing_the_sample_stores_every_message_with_attachments(sample_collection):
    files = list(SAMPLE.glob("*.eml"))
    docs = Document.objects.filter(collection=sample_collection)
    assert docs.count() == len(files)
    assert Attachment.objects.filter(document__collection=sample_collection).exists()
    assert docs.filter(body_from_html=True).exists()
    assert docs.exclude(decode_problems=[]).exists()
    assert sample_collection.version == 1
    doc = docs.get(docid="sample/easy-ham-1-00001.eml")
    assert doc.subject == "Re: New Sequences Window"
    assert doc.addresses["from"] == "kre@munnari.oz.au"
    assert doc.date is not None and doc.content_hash


def test_a_second_run_imports_nothing_twice(sample_collection):
    before = Document.objects.count(), Attachment.objects.count()
    report = services.import_run(collection=sample_collection, fmt="emails", path=SAMPLE)
    assert report.created == 0
    assert report.unchanged == before[0]
    assert (Document.objects.count(), Attachment.objects.count()) == before
    sample_collection.refresh_from_db()
    assert sample_collection.version == 1, "nothing changed, so the version must not move"


def test_duplicates_by_content_or_message_id_are_stored_once_and_counted(collection, tmp_path):
    box = tmp_path / "box"
    box.mkdir()
    (box / "a.eml").write_text(MSG.format(s="one"))
    (box / "b.eml").write_text(MSG.format(s="one"))  # same content
    (box / "c.eml").write_text(MSG.format(s="one").replace("Body one", "Resent body"))
    (box / "d.eml").write_text(MSG.format(s="two"))
    report = services.import_run(collection=collection, fmt="emails", path=box)
    assert (report.created, report.duplicates) == (2, 2)
    kept = Document.objects.get(collection=collection, docid="box/a.eml")
    assert kept.duplicate_docids == ["box/b.eml", "box/c.eml"]
    assert {d["duplicate_of"] for d in report.duplicate_examples} == {"box/a.eml"}
    again = services.import_run(collection=collection, fmt="emails", path=box)
    assert (again.created, again.duplicates, again.unchanged) == (0, 0, 4)
    kept.refresh_from_db()
    assert kept.duplicate_docids == ["box/b.eml", "box/c.eml"], "a re-run counts nothing twice"


def _mbox(who: str, numbers) -> str:
    return "".join(
        f"From {who}@x.org Mon Jan  1 00:00:00 2001\nFrom: {who}@x.org\nTo: z@x.org\n"
        f"Subject: {who} message {i}\nMessage-ID: <{who}-{i}@x>\n\nHello from {who} {i}\n\n"
        for i in numbers
    )


def test_a_reimport_says_which_messages_it_did_not_read_again(collection, tmp_path):
    """Two custodians' Inbox.mbox into one collection (fresh-eye finding): ids are
    ``<file>#<n>`` and a stored id is not read again, so Bob's first messages passed for
    Alice's, counted "already present", and the import said nothing. The import cannot tell
    without reading them (a parser change alters a message's hash; a shared first message
    matches), so it says so: a note counts the messages not read again and tells what to do
    if the file is not the one imported before. Renamed, Bob's mailbox is imported."""
    alice, bob = tmp_path / "alice", tmp_path / "bob"
    alice.mkdir(), bob.mkdir()
    (alice / "Inbox.mbox").write_text(_mbox("alice", [1, 2, 3]))
    (bob / "Inbox.mbox").write_text(_mbox("bob", [1, 2, 3, 4]))
    first = services.import_run(collection=collection, fmt="emails", path=alice / "Inbox.mbox")
    assert first.created == 3 and not first.issues
    # A mailbox that grew: its new messages stored, the rest noted as not read again.
    (alice / "Inbox.mbox").write_text(_mbox("alice", [1, 2, 3, 4]))
    grown = services.import_run(collection=collection, fmt="emails", path=alice / "Inbox.mbox")
    assert (grown.created, grown.unchanged, len(grown.issues)) == (1, 3, 1)
    report = services.import_run(collection=collection, fmt="emails", path=bob / "Inbox.mbox")
    assert (report.created, report.unchanged) == (0, 4) and report.ok
    [note] = report.issues
    assert (note.source, note.severity) == ("Inbox.mbox", "skipped")
    assert note.reason.startswith(
        "4 messages had ids already stored and were not read again (a re-import). If this "
        "is not the file imported before under this name (another custodian's Inbox.mbox, "
        "say), its messages with those ids were not stored: rename it and import it again"
    )
    (bob / "Inbox.mbox").rename(bob / "bob-Inbox.mbox")
    renamed = services.import_run(collection=collection, fmt="emails", path=bob / "bob-Inbox.mbox")
    assert (renamed.created, renamed.issues) == (4, [])


def test_dates_with_offsets_the_database_cannot_store_keep_their_instant(collection, tmp_path):
    # RFC 5322 allows offsets to +-99:59, PostgreSQL +-15:59; the SpamAssassin corpus has -1600
    box = tmp_path / "zones"
    box.mkdir()
    dates = {"far": "Wed, 21 Aug 2002 20:31:57 -1600", "near": "Wed, 21 Aug 2002 20:31:57 +0200"}
    for name, date in dates.items():
        (box / f"{name}.eml").write_text(MSG.format(s=name).replace("\n\n", f"\nDate: {date}\n\n"))
    report = services.import_run(collection=collection, fmt="emails", path=box)
    assert report.created == 2 and report.ok
    stored = dict(Document.objects.filter(collection=collection).values_list("docid", "date"))
    assert stored["zones/far.eml"] == datetime(2002, 8, 22, 12, 31, 57, tzinfo=UTC)
    assert stored["zones/near.eml"] == datetime(2002, 8, 21, 18, 31, 57, tzinfo=UTC)


@pytest.mark.needs_postgres("PostgreSQL refuses the value (SQLite stores it)")
def test_a_value_the_database_refuses_costs_its_message_only(collection, tmp_path, monkeypatch):
    from core.parsing import emails

    parse_date = emails.parse_date
    far = timezone(timedelta(hours=-16))  # as the parser once passed it on

    def unnormalised(value, problems):
        return datetime(2002, 8, 21, tzinfo=far) if "1999" in value else parse_date(value, problems)

    monkeypatch.setattr(emails, "parse_date", unnormalised)
    box = tmp_path / "refused"
    box.mkdir()
    for name, year in (("a", 2001), ("b", 1999), ("c", 2002)):
        date = f"Wed, 21 Aug {year} 20:31:57 +0000"
        (box / f"{name}.eml").write_text(MSG.format(s=name).replace("\n\n", f"\nDate: {date}\n\n"))
    report = services.import_run(collection=collection, fmt="emails", path=box)
    assert report.created == 2 and not report.ok
    assert [str(i) for i in report.issues] == [
        'refused/b.eml: refused by the database: time zone displacement out of range: "2002-08-21'
        ' 00:00:00-16:00"'
    ]
    stored = Document.objects.filter(collection=collection).values_list("docid", flat=True)
    assert sorted(stored) == ["refused/a.eml", "refused/c.eml"]


def test_bad_files_are_reported_and_the_rest_imported(collection, tmp_path):
    box = tmp_path / "mixed"
    box.mkdir()
    (box / "good.eml").write_text(MSG.format(s="good"))
    (box / "empty.eml").write_bytes(b"")
    (box / "binary.eml").write_bytes(bytes(range(256)) * 4)
    (box / "noheaders.eml").write_text("hello\nworld\n")
    report = services.import_run(collection=collection, fmt="emails", path=box)
    assert report.created == 1
    assert sorted(str(i) for i in report.errors) == [
        "mixed/binary.eml: binary data (NUL bytes), not an RFC-822 message",
        "mixed/empty.eml: empty file",
        "mixed/noheaders.eml: no RFC-822 header lines found",
    ]
    assert not report.ok


def test_a_failed_batch_leaves_no_document_without_its_attachments(
    collection, tmp_path, monkeypatch
):
    box = tmp_path / "att"
    box.mkdir()
    (box / "a.eml").write_bytes((EDGE / "attachments.eml").read_bytes())

    insert = import_documents.rows_insert

    def fail(model, objs, **kwargs):
        if model is Attachment:
            raise RuntimeError("disk full while writing attachments")
        return insert(model, objs, **kwargs)

    monkeypatch.setattr(import_documents, "rows_insert", fail)
    with pytest.raises(RuntimeError):
        services.import_run(collection=collection, fmt="emails", path=box)
    assert not Document.objects.filter(collection=collection).exists()
    monkeypatch.undo()
    report = services.import_run(collection=collection, fmt="emails", path=box)
    assert report.created == 1
    assert Attachment.objects.filter(document__collection=collection).count() == 3


def test_concurrent_insert_of_the_same_docid_falls_back_to_one_by_one(collection, tmp_path):
    box = tmp_path / "race"
    box.mkdir()
    for s in ("one", "two"):
        (box / f"{s}.eml").write_text(MSG.format(s=s))
    writer = import_documents.DocumentWriter(collection, import_report.ImportReport())
    from core.parsing.sources import iter_emails

    for item in iter_emails(box):
        writer.add(item.docid, item.email, item.source)
    # Another importer stores "race/one.eml" between our read and our write.
    Document.objects.create(collection=collection, docid="race/one.eml", content_hash="x")
    writer.finish()
    assert writer.report.created == 1 and writer.report.unchanged == 1
    assert Document.objects.filter(collection=collection).count() == 2
    with pytest.raises(IntegrityError):
        Document.objects.create(collection=collection, docid="race/one.eml", content_hash="y")


def test_half_a_character_in_a_jsonl_record_costs_nothing_and_is_noted(collection, tmp_path):
    """JSON may escape half of a character (an emoji cut in two, ``\\ud83d``), which no
    database column holds (fresh-eye finding): its batch's write raised UnicodeEncodeError
    out of the import, the records after it were never stored, and a re-run crashed again
    at the same place. Now the half character becomes U+FFFD, noted on the document, and
    the writer turns any value the driver cannot encode into an error for that message."""
    import json

    lines = [
        json.dumps({"id": f"m{i}", "subject": f"s{i}", "from": "a@x.org", "body": body})
        for i, body in enumerate(["ok", "ok", "cut \ud83d", "ok", "ok"])
    ]
    path = tmp_path / "mail.jsonl"
    path.write_text("\n".join(lines) + "\n")
    report = services.import_run(collection=collection, fmt="emails", path=path)
    assert report.created == 5 and report.ok, [str(i) for i in report.issues]
    cut = Document.objects.get(collection=collection, docid="m2")
    assert cut.body == "cut \ufffd"
    assert cut.decode_problems == [
        "body: half of a character (an unpaired UTF-16 surrogate) replaced by U+FFFD"
    ]
    # Whatever other reader lets one through, the writer costs that message only.
    from core.parsing.emails import ParsedEmail

    writer = import_documents.DocumentWriter(collection, import_report.ImportReport())
    for n, body in enumerate(["fine", "bad \udc80 half", "fine too"]):
        writer.add(f"w{n}", ParsedEmail(subject=f"w{n}", body=body), "w.jsonl")
    writer.finish()
    assert writer.report.created == 2
    assert [i.source for i in writer.report.issues] == ["w1"]


TOPICS = b"""<top>
<num> Number: 7
<title> first topic
<desc> Description:
What the first topic is about.
<narr> Narrative:
Relevant: documents about it.
</top>
<top>
<num> Number: 8
<title>
</top>
<top>
<num> Number: 9
<title> ninth
</top>
"""


def test_topics_import_reports_bad_blocks_by_line_and_updates_on_rerun(collection, tmp_path):
    path = tmp_path / "topics.txt"
    path.write_bytes(TOPICS)
    report = import_topics.topics_import(collection=collection, path=path)
    assert report.created == 2
    assert [str(i) for i in report.errors] == ["topics.txt:line 9: topic 8 has no <title>"]
    t7 = Topic.objects.get(collection=collection, number="7")
    assert (t7.title, t7.description, t7.narrative) == (
        "first topic",
        "What the first topic is about.",
        "Relevant: documents about it.",
    )
    path.write_bytes(TOPICS.replace(b"ninth", b"ninth, revised"))
    report = import_topics.topics_import(collection=collection, path=path)
    assert (report.created, report.updated, report.unchanged) == (0, 1, 1)


def test_an_import_never_rewrites_a_judged_topic(make_project, sample_collection, tmp_path):
    """A re-import rewrote a topic's title under the judgments made against the old one,
    reported only as "1 updated" (fresh-eye finding). Now a judged topic's statement is kept
    and named as an error; an unjudged one in the same file still updates."""
    from tests.learningkit import judge_next

    project, (annotator, _other) = make_project(n_tasks=2)
    assert judge_next(project, annotator, truth=set()) is not None
    Topic.objects.create(collection=sample_collection, number="2", title="old two")
    path = tmp_path / "topics.txt"
    path.write_text(
        "<top>\n<num> 1\n<title> something else entirely\n</top>\n"
        "<top>\n<num> 2\n<title> new two\n</top>\n"
    )
    report = import_topics.topics_import(collection=sample_collection, path=path)
    assert (report.created, report.updated) == (0, 1)
    assert [str(i) for i in report.errors] == [
        "topics.txt:line 1: topic 1 not changed: 1 judgment was made against its title, "
        "description and narrative as they are. To judge against the new text, import it "
        "under a new topic number"
    ]
    titles = dict(Topic.objects.filter(collection=sample_collection).values_list("number", "title"))
    assert titles == {"1": "sequences window", "2": "new two"}


def test_qrels_import_names_unknown_topics_and_documents_and_never_duplicates(
    sample_collection, tmp_path
):
    Topic.objects.create(collection=sample_collection, number="1", title="t")
    docid = "sample/easy-ham-1-00001.eml"
    path = tmp_path / "q.txt"
    path.write_text(
        f"1 0 {docid} 2\n1 0 no-such-doc 1\n99 0 {docid} 1\n1 0 {docid}\n1 0 {docid} high\n"
    )
    report = import_labels.qrels_import(collection=sample_collection, path=path)
    assert report.created == 1
    assert [str(i) for i in report.errors] == [
        "q.txt:line 2: unknown document 'no-such-doc' in this collection",
        "q.txt:line 3: unknown topic '99' in this collection",
        "q.txt:line 4: expected 4 columns, found 3",
        "q.txt:line 5: grade 'high' is not an integer",
    ]
    import_labels.qrels_import(collection=sample_collection, path=path)
    assert ReferenceRelevance.objects.count() == 1
    path.write_text(f"1 0 {docid} 1\n")
    report = import_labels.qrels_import(collection=sample_collection, path=path)
    assert report.updated == 1
    assert ReferenceRelevance.objects.get().grade == 1


def test_a_qrels_file_grading_pairs_unlike_another_source_is_warned_and_the_last_counts(
    sample_collection, tmp_path
):
    """Two qrels files that disagree were merged without a word, and evaluation took
    whichever row the database returned last (fresh-eye finding). Now the second import
    warns, naming the other source and one pair, and evaluation takes the grade of the
    source that added the pair last, whatever order the database reads them in."""
    from ranking.services import reference_qrels

    Topic.objects.create(collection=sample_collection, number="1", title="t")
    a, b = "sample/easy-ham-1-00001.eml", "sample/easy-ham-1-00014.eml"
    (tmp_path / "qrels-2024.txt").write_text(f"1 0 {a} 2\n1 0 {b} 0\n")
    (tmp_path / "qrels-2024-fixed.txt").write_text(f"1 0 {a} 0\n1 0 {b} 0\n")
    first = import_labels.qrels_import(
        collection=sample_collection, path=tmp_path / "qrels-2024.txt"
    )
    assert first.ok and not first.issues
    report = import_labels.qrels_import(
        collection=sample_collection, path=tmp_path / "qrels-2024-fixed.txt"
    )
    assert report.ok and report.created == 2
    assert [str(i) for i in report.issues] == [
        "qrels-2024-fixed.txt: 1 pair graded differently by the qrels source “qrels-2024.txt” "
        f"(topic 1, {a}: 2 there). Evaluation takes the grade of the source that added the pair "
        "last; to replace “qrels-2024.txt”, import the corrected file under that file name"
    ]
    assert reference_qrels(collection=sample_collection) == {"1": {a: 0, b: 0}}


def test_qrels_errors_name_the_file_line_whatever_separators_a_line_holds(
    sample_collection, tmp_path
):
    """A form feed (or another separator str.splitlines knows) split a line in two, so the
    errors after it named the wrong line (fresh-eye finding: "line 3: expected 4 columns"
    where file line 3 was imported). Old Mac files (\\r alone) still split."""
    Topic.objects.create(collection=sample_collection, number="1", title="t")
    a, b = "sample/easy-ham-1-00001.eml", "sample/easy-ham-1-00014.eml"
    path = tmp_path / "q.txt"
    path.write_bytes(f"1 0 {a} 1\x0c\n1 0 {b} 1\n1 0 {a}\n".encode())
    report = import_labels.qrels_import(collection=sample_collection, path=path)
    assert report.created == 2
    assert [str(i) for i in report.errors] == ["q.txt:line 3: expected 4 columns, found 3"]
    path.write_bytes(f"1 0 {a} 2\r1 0 {b} 2\r1 0 {a}\r".encode())
    report = import_labels.qrels_import(collection=sample_collection, path=path)
    assert report.updated == 2
    assert [str(i) for i in report.errors] == ["q.txt:line 3: expected 4 columns, found 3"]


def test_trec_grades_outside_0_to_2_are_stored_as_the_nearest_and_said_so(
    sample_collection, tmp_path
):
    """A 0-4 scale collapsed to 0-2 without a word (fresh-eye finding)."""
    Topic.objects.create(collection=sample_collection, number="1", title="t")
    a, b = "sample/easy-ham-1-00001.eml", "sample/easy-ham-1-00014.eml"
    path = tmp_path / "q.txt"
    path.write_text(f"1 0 {a} 4\n1 0 {b} -3\n")
    report = import_labels.qrels_import(collection=sample_collection, path=path)
    assert report.ok and report.created == 2
    assert [str(i) for i in report.issues] == [
        "q.txt: 2 grades outside 0-2 stored as the nearest (first, line 1: 4 counted as 2): "
        "sasc grades relevance 0, 1 or 2"
    ]
    grades = ReferenceRelevance.objects.order_by("document__docid").values_list("grade", flat=True)
    assert list(grades) == [2, 0]
    # The evaluation commands read such a file as before: a note is not an error.
    from ranking.services import read_qrels_file

    assert read_qrels_file(path) == {"1": {a: 2, b: 0}}


@pytest.mark.parametrize("fmt", ["topics-trec", "qrels-trec", "sensitivity"])
def test_a_utf16_file_is_named_as_utf16(sample_collection, tmp_path, fmt):
    """A UTF-16 file (Windows Notepad's "Unicode") was refused as "binary data"."""
    path = tmp_path / "f.txt"
    path.write_bytes("1 0 sample/easy-ham-1-00001.eml 1\n".encode("utf-16"))
    persona = Persona.objects.create(name="P") if fmt == "sensitivity" else None
    report = services.import_run(collection=sample_collection, fmt=fmt, path=path, persona=persona)
    assert [i.reason for i in report.errors] == [
        "UTF-16 text (what Windows Notepad saves as “Unicode”), not UTF-8: save the file as "
        "UTF-8 and import it again"
    ]
    path.write_bytes("1 0 sample/easy-ham-1-00001.eml 1\n".encode("utf-16-le"))  # no BOM
    report = services.import_run(collection=sample_collection, fmt=fmt, path=path, persona=persona)
    assert report.errors[0].reason.startswith("UTF-16 text")


def test_sensitivity_labels_per_topic_and_for_all_topics(sample_collection, tmp_path):
    persona = Persona.objects.create(name="P")
    topic = Topic.objects.create(collection=sample_collection, number="1", title="t")
    docid = "sample/easy-ham-1-00001.eml"
    path = tmp_path / "s.txt"
    other = "sample/easy-ham-1-00014.eml"
    path.write_text(f"* 0 {docid} 1\n1 0 {docid} 0\n1 0 {other} 2\n")
    report = import_labels.sensitivity_import(
        collection=sample_collection, persona=persona, path=path
    )
    assert report.created == 2
    assert [str(i) for i in report.errors] == ["s.txt:line 3: label must be 0 or 1, not 2"]
    import_labels.sensitivity_import(collection=sample_collection, persona=persona, path=path)
    assert ReferenceSensitivity.objects.count() == 2
    assert ReferenceSensitivity.objects.get(topic__isnull=True).sensitive is True
    path.write_text(f"* 0 {docid} 0\n1 0 {docid} 1\n1 0 {other} 1\n")
    report = import_labels.sensitivity_import(
        collection=sample_collection, persona=persona, path=path
    )
    assert (report.created, report.updated) == (1, 2)
    assert sorted(
        ReferenceSensitivity.objects.values_list("topic_id", "document__docid", "sensitive"),
        key=str,
    ) == sorted([(None, docid, False), (topic.pk, docid, True), (topic.pk, other, True)], key=str)


def test_personas_import_validates_fields(tmp_path, db):
    path = tmp_path / "p.json"
    path.write_text(
        '[{"name": "Ann", "occupation": "Clerk"}, {"name": ""}, {"name": "B", "age": 3},'
        ' "x", {"name": "C", "goals": 5}]'
    )
    report = import_personas.personas_import(path=path)
    assert report.created == 1
    assert [(i.where, i.reason) for i in report.errors] == [
        ("item 2", "persona needs a non-empty 'name'"),
        ("item 3", "unknown fields: age"),
        ("item 4", "each persona must be a JSON object"),
        ("item 5", "every persona field must be a string"),
    ]
    path.write_text("{broken")
    assert import_personas.personas_import(path=path).errors[0].reason.startswith("not valid JSON")
    # A line separator or a direction override in a short field: a line break, or text shown
    # reversed, in every list that names the persona.
    path.write_text(json.dumps([{"name": "Maeve\u2028Gallagher"}, {"name": "A\u202eB"}]))
    report = import_personas.personas_import(path=path)
    assert report.created == 0
    assert [(i.where, i.reason.split(";")[0]) for i in report.errors] == [
        ("item 1", "field 'name' holds a control character (U+2028"),
        ("item 2", "field 'name' holds a control character (U+202E"),
    ]


def test_a_personas_file_changes_only_the_fields_it_gives_and_names_a_persona_named_twice(
    tmp_path, db
):
    """A re-import with fewer fields blanked the others (fresh-eye finding: the pain points,
    which say what the persona finds sensitive, silently erased, "1 updated"); and a name
    given twice in one file let the later item blank the earlier's fields. Now a field left
    out keeps its text, an empty one clears it, and the second item of a name is refused."""
    import json

    path = tmp_path / "p.json"
    full = {"name": "Ann Lee", "occupation": "Clerk", "pain_points": "her divorce"}
    path.write_text(json.dumps([full]))
    assert import_personas.personas_import(path=path).created == 1
    path.write_text(json.dumps([{"name": "Ann Lee", "goals": "a quiet life"}]))
    report = import_personas.personas_import(path=path)
    assert report.updated == 1
    ann = Persona.objects.get(name="Ann Lee")
    assert (ann.occupation, ann.pain_points, ann.goals) == ("Clerk", "her divorce", "a quiet life")
    path.write_text(json.dumps([{"name": "Ann Lee", "occupation": ""}]))
    import_personas.personas_import(path=path)
    ann.refresh_from_db()
    assert (ann.occupation, ann.pain_points) == ("", "her divorce")  # cleared as asked
    path.write_text(json.dumps([{"name": "Bo", "goals": "x"}, {"name": " Bo ", "goals": "y"}]))
    report = import_personas.personas_import(path=path)
    assert [(i.where, i.reason) for i in report.errors] == [
        ("item 2", "persona “Bo” is named twice (item 1)")
    ]
    assert Persona.objects.get(name="Bo").goals == "x"


@pytest.mark.parametrize("fmt", [f for f in services.IMPORT_FORMATS if f != "emails"])
def test_every_importer_refuses_a_file_over_the_size_limit(collection, tmp_path, settings, fmt):
    settings.SASC_MAX_IMPORT_FILE_BYTES = 100
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 101)
    report = _run(collection, fmt, path)
    assert [i.reason for i in report.errors] == ["file is 101 bytes, over the 100 byte limit"]
    assert Collection.objects.get(pk=collection.pk).version == 0


ALL_FORMATS = list(services.IMPORT_FORMATS)


def _run(collection, fmt, path):
    persona = Persona.objects.get_or_create(name="P")[0] if fmt == "sensitivity" else None
    return services.import_run(collection=collection, fmt=fmt, path=path, persona=persona)


@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_every_importer_refuses_binary_files_and_stores_nothing(collection, tmp_path, fmt):
    path = tmp_path / "bin.dat"
    path.write_bytes(b"\x00\x01\x02\xff" * 50)
    report = _run(collection, fmt, path)
    assert report.errors and report.created == 0
    assert any(w in report.errors[0].reason for w in ("binary data", "not valid JSON"))
    assert not Document.objects.exists() and not Topic.objects.exists()


@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_every_importer_reports_an_empty_file(collection, tmp_path, fmt):
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    report = _run(collection, fmt, path)
    assert [i.reason for i in report.errors] == ["empty file"]


@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_every_importer_reports_a_missing_file(collection, tmp_path, fmt):
    report = _run(collection, fmt, tmp_path / "nope.txt")
    assert report.errors and report.created == 0
    assert "no such file" in report.errors[0].reason.lower()


def test_parsing_in_parallel_stores_what_one_process_stores(db, tmp_path):
    from bench.mailgen import generate

    mail = tmp_path / "mail"
    generate(mail, 300, per_file=60)
    (mail / "notes.md").write_text("not mail")
    (mail / "broken.mbox").write_bytes(b"not an mbox\n")
    reports, stored = [], []
    for workers in (1, 2):
        c = Collection.objects.create(name=f"w{workers}", slug=f"w{workers}")
        reports.append(services.import_run(collection=c, fmt="emails", path=mail, workers=workers))
        stored.append(
            list(c.documents.order_by("id").values_list("docid", "subject", "content_hash"))
        )
        again = services.import_run(collection=c, fmt="emails", path=mail, workers=workers)
        assert again.created == 0 and again.unchanged == 300
    assert stored[0] == stored[1] and len(stored[0]) == 300
    assert [str(i) for i in reports[0].issues] == [str(i) for i in reports[1].issues]
    assert any("not an mbox" in str(i) for i in reports[1].issues)
