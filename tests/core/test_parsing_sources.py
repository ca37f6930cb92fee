import json
import os
import zipfile
from pathlib import Path

from core.parsing import Issue
from core.parsing.sources import EmailItem, Limits, iter_emails

EDGE = Path(__file__).parents[1] / "fixtures" / "emails" / "edge"
MSG = b"From: a@example.org\nTo: b@example.org\nSubject: %s\n\nBody %s\n"


def split(items):
    emails = [i for i in items if isinstance(i, EmailItem)]
    issues = [i for i in items if isinstance(i, Issue)]
    return emails, issues


def test_mbox_is_split_on_from_lines_and_a_bad_message_is_reported_by_line(tmp_path):
    mbox = tmp_path / "inbox.mbox"
    mbox.write_bytes(
        b"From a@example.org Mon Sep  2 10:00:00 2002\n"
        + MSG % (b"one", b"1")
        + b"\nFrom b@example.org Mon Sep  2 11:00:00 2002\n"
        + b"no headers here at all\n"
        + b"\nFrom c@example.org Mon Sep  2 12:00:00 2002\n"
        + MSG % (b"three", b"3")
        + b">From the archive, quoted.\n"
    )
    emails, issues = split(list(iter_emails(mbox)))
    assert [e.email.subject for e in emails] == ["one", "three"]
    assert [e.docid for e in emails] == ["inbox.mbox#1", "inbox.mbox#3"]
    assert "From the archive, quoted." in emails[1].email.body
    assert len(issues) == 1
    assert issues[0].source == "inbox.mbox"
    assert issues[0].where == "line 8 (offset 104)"
    assert issues[0].reason == "no RFC-822 header lines found"


def test_file_that_is_not_an_mbox_is_refused(tmp_path):
    path = tmp_path / "x.mbox"
    path.write_bytes(b"Subject: hi\n\nbody\n")
    _, issues = split(list(iter_emails(path)))
    assert [str(i) for i in issues] == [
        "x.mbox:line 1: not an mbox file: the first line does not start with 'From '"
    ]


def test_jsonl_reads_raw_and_structured_records_and_names_bad_lines(tmp_path):
    path = tmp_path / "mail.jsonl"
    lines = [
        json.dumps({"id": "m1", "raw": (MSG % (b"raw one", b"x")).decode()}),
        json.dumps(
            {
                "id": "m2",
                "subject": "structured",
                "from": "Ann <ann@example.org>",
                "to": ["b@example.org"],
                "date": "2002-09-01T10:00:00",
                "body": "hello",
                "attachments": [{"filename": "../a.txt", "text": "att"}],
            }
        ),
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"id": "m5", "to": 7, "subject": "bad to"}),
        "",
        json.dumps({"id": "m7", "body_html": "<p>only <b>html</b></p>", "from": "x@example.org"}),
    ]
    path.write_text("\n".join(lines))
    emails, issues = split(list(iter_emails(path)))
    assert [e.docid for e in emails] == ["m1", "m2", "m7"]
    structured = emails[1].email
    assert structured.addresses["from"] == "ann@example.org"
    assert structured.addresses["to"] == ["b@example.org"]
    assert structured.date.isoformat() == "2002-09-01T10:00:00+00:00"
    assert structured.attachments[0].filename == "a.txt"
    assert emails[2].email.body == "only html" and emails[2].email.body_from_html
    assert [(i.where, i.reason[:20]) for i in issues] == [
        ("line 3", "not valid JSON (Expe"),
        ("line 4", "each line must be a "),
        ("line 5", "field 'to' must be a"),
    ]


def test_zip_members_with_traversal_paths_are_skipped_and_never_written(tmp_path):
    path = tmp_path / "mail.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("inbox/1.eml", MSG % (b"one", b"1"))
        z.writestr("../../evil.eml", MSG % (b"evil", b"2"))
        z.writestr("/abs.eml", MSG % (b"abs", b"3"))
        z.writestr("inbox/box.mbox", b"From x Mon Sep 2 2002\n" + MSG % (b"boxed", b"4"))
    before = set(os.listdir(tmp_path))
    emails, issues = split(list(iter_emails(path)))
    assert set(os.listdir(tmp_path)) == before
    assert [e.email.subject for e in emails] == ["one", "boxed"]
    assert [e.docid for e in emails] == ["mail.zip/inbox/1.eml", "mail.zip/inbox/box.mbox#1"]
    assert sorted(i.reason for i in issues) == ["unsafe path in archive; member skipped"] * 2


def test_corrupt_zip_is_reported(tmp_path):
    path = tmp_path / "broken.zip"
    path.write_bytes(b"PK\x03\x04 definitely not a zip")
    _, issues = split(list(iter_emails(path)))
    assert issues[0].reason.startswith("not a readable zip archive")


def test_files_over_the_limit_are_refused_before_reading(tmp_path):
    big = tmp_path / "huge.mbox"
    with open(big, "wb") as f:
        f.truncate(51 * 1024 * 1024)  # sparse: 51 MB on paper, nothing read
    _, issues = split(list(iter_emails(big, limits=Limits())))
    assert [str(i) for i in issues] == ["huge.mbox: file is 51.0 MB, over the 50.0 MB limit"]


def test_directory_walk_names_files_by_folder_and_skips_links_and_sidecars(tmp_path):
    root = tmp_path / "box"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "1.eml").write_bytes(MSG % (b"one", b"1"))
    (root / "2.txt").write_bytes(MSG % (b"two", b"2"))
    (root / "2.json").write_text("{}")
    (root / "empty.eml").write_bytes(b"")
    (root / ".hidden.eml").write_bytes(MSG % (b"hidden", b"h"))
    (root / "link.eml").symlink_to(root / "2.txt")
    emails, issues = split(list(iter_emails(root)))
    assert sorted(e.docid for e in emails) == ["box/2.txt", "box/sub/1.eml"]
    assert sorted((str(i), i.severity) for i in issues) == [
        ("box/2.json: .json files are not messages", "skipped"),
        ("box/empty.eml: empty file", "error"),
        ("box/link.eml: symbolic link not followed", "skipped"),
    ]
