"""Outlook .msg, PST/OST, EAXS, Maildir and mbox trees: folders and threads kept, hostile
variants refused with the file and the place named."""

import base64
import shutil
import struct
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core.parsing import Issue
from core.parsing.sources import EmailItem, Limits, iter_emails
from tests.conftest import FIXTURES
from tests.msgwriter import MsgAttachment, MsgMessage, build_msg

PST = FIXTURES / "formats" / "dist-list.pst"
needs_readpst = pytest.mark.skipif(
    shutil.which("readpst") is None, reason="readpst (Debian pst-utils) is not installed"
)


def _read(path, **limits):
    items = list(iter_emails(Path(path), limits=Limits(**limits)))
    return (
        [i for i in items if isinstance(i, EmailItem)],
        [i for i in items if isinstance(i, Issue)],
    )


def _eml(subject, mid, *, parent="", body="Body"):
    headers = f"From: ann@example.org\nTo: bob@example.org\nSubject: {subject}\n"
    headers += f"Message-ID: <{mid}>\nDate: Mon, 14 May 2001 10:00:00 +0000\n"
    if parent:
        headers += f"In-Reply-To: <{parent}>\nReferences: <{parent}>\n"
    return (headers + f"\n{body}\n").encode()


# --- Outlook .msg -------------------------------------------------------------------------


def _budget_msg(**changes) -> MsgMessage:
    fields = dict(
        subject="Re: Budget",
        body="The budget is attached.",
        sender_name="Bob Smith",
        sender_email="bob@example.org",
        to=[("Ann Lee", "ann@example.org")],
        cc=[("Cy", "cy@example.org")],
        message_id="<m2@example.org>",
        in_reply_to="<m1@example.org>",
        references="<m0@example.org> <m1@example.org>",
        date=datetime(2001, 5, 14, 10, 0, tzinfo=UTC),
        attachments=[
            MsgAttachment("notes.txt", b"salary figures " * 400, "text/plain"),
            MsgAttachment("chart.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 100, "image/png"),
            MsgAttachment("inner.msg", message=MsgMessage(subject="Earlier", body="old text")),
        ],
    )
    fields.update(changes)
    return MsgMessage(**fields)


def test_an_outlook_msg_keeps_headers_thread_attachments_and_its_folder(tmp_path):
    folder = tmp_path / "box" / "Finance"
    folder.mkdir(parents=True)
    (folder / "budget.msg").write_bytes(build_msg(_budget_msg()))
    items, issues = _read(tmp_path / "box")
    assert not [i for i in issues if i.severity == "error"]
    (item,) = items
    parsed = item.email
    assert item.docid == "box/Finance/budget.msg" and item.folder == "Finance"
    assert parsed.subject == "Re: Budget" and parsed.body == "The budget is attached."
    assert parsed.addresses == {
        "from": "bob@example.org",
        "to": ["ann@example.org"],
        "cc": ["cy@example.org"],
        "bcc": [],
    }
    assert parsed.date == datetime(2001, 5, 14, 10, 0, tzinfo=UTC)
    assert parsed.message_id == "<m2@example.org>"
    assert parsed.in_reply_to == "m1@example.org"
    assert parsed.references == ["m0@example.org", "m1@example.org"]
    notes, chart, inner = parsed.attachments
    assert notes.is_text and "salary figures" in notes.text
    assert (chart.is_text, chart.content_type, chart.size) == (False, "image/png", 108)
    assert inner.content_type == "message/rfc822" and "old text" in inner.text


def test_a_msg_that_is_not_a_compound_file_or_is_cut_short_is_refused_by_name(tmp_path):
    whole = build_msg(_budget_msg())
    (tmp_path / "text.msg").write_bytes(b"From: a@b\n\nnot outlook")
    (tmp_path / "cut.msg").write_bytes(whole[: len(whole) // 3])
    (tmp_path / "header-only.msg").write_bytes(whole[:512])
    items, issues = _read(tmp_path)
    assert items == []
    reasons = {i.source.split("/")[-1]: i.reason for i in issues}
    assert "not an Outlook .msg file" in reasons["text.msg"]
    assert reasons["cut.msg"].startswith("unreadable .msg")
    assert reasons["header-only.msg"].startswith("unreadable .msg")


def _entry_offset(data: bytes, name: str) -> int:
    at = data.find(name.encode("utf-16-le") + b"\0\0")
    assert at > 0 and (at - 512) % 128 == 0
    return at


def test_a_msg_whose_directory_lies_about_a_stream_size_costs_that_message_only(tmp_path):
    data = bytearray(build_msg(_budget_msg()))
    at = _entry_offset(data, "__substg1.0_1000001F")  # the body's directory entry
    data[at + 120 : at + 128] = struct.pack("<Q", 0x7FFF_FFF0)  # 2 GB, in a 10 kB file
    (tmp_path / "lies.msg").write_bytes(bytes(data))
    (tmp_path / "fine.msg").write_bytes(build_msg(_budget_msg(message_id="<ok@x>")))
    items, issues = _read(tmp_path)
    by_name = {i.docid.split("/")[-1]: i for i in items}
    assert by_name["fine.msg"].email.body == "The budget is attached."
    if "lies.msg" in by_name:  # read, without the body it cannot have
        assert by_name["lies.msg"].email.body == ""
    else:
        assert any(i.source.endswith("lies.msg") for i in issues)


def test_a_msg_whose_directory_loops_back_on_itself_is_refused(tmp_path):
    data = bytearray(build_msg(_budget_msg()))
    at = _entry_offset(data, "__attach_version1.0_#00000000")
    index = (at - 1024) // 128  # the directory starts in sector 1 for this small file
    data[at + 76 : at + 80] = struct.pack("<I", index)  # its child is itself
    (tmp_path / "loop.msg").write_bytes(bytes(data))
    items, issues = _read(tmp_path)
    if items:  # olefile may refuse the loop or skip the looping entry: never hang or crash
        assert items[0].email.subject == "Re: Budget"
    else:
        assert issues and issues[0].source.endswith("loop.msg")


def test_messages_attached_inside_messages_stop_at_the_nesting_limit(tmp_path):
    nested = MsgMessage(subject="level 30", body="deepest")
    for level in range(29, 0, -1):
        nested = MsgMessage(
            subject=f"level {level}", attachments=[MsgAttachment("m.msg", message=nested)]
        )
    (tmp_path / "deep.msg").write_bytes(build_msg(nested))
    (item,), _issues = _read(tmp_path)
    assert any("nested deeper than" in p for p in item.email.problems)
    assert "deepest" not in str(item.email.attachments)


# --- EAXS ---------------------------------------------------------------------------------

EAXS_NS = "https://github.com/StateArchivesOfNorthCarolina/tomes-eaxs-2"


def _eaxs_message(local_id, mid, subject, *, parent="", extra=""):
    reply = f"<InReplyTo>&lt;{parent}&gt;</InReplyTo><References>&lt;{parent}&gt;</References>"
    return f"""
    <Message><RelPath>x</RelPath><LocalId>{local_id}</LocalId>
      <MessageId>&lt;{mid}&gt;</MessageId><OrigDate>2001-05-14T10:00:00-05:00</OrigDate>
      <From>Ann Lee &lt;ann@example.org&gt;</From><To>bob@example.org</To>
      {reply if parent else ""}<Subject>{subject}</Subject>
      <Header><Name>X-Folder</Name><Value>kept</Value></Header>
      {extra}
    </Message>"""


def _eaxs(body: str) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<Account xmlns="{EAXS_NS}">'
        f"<EmailAddress>ann@example.org</EmailAddress><GlobalId>acct-1</GlobalId>{body}</Account>"
    ).encode()


def _multibody():
    attachment = base64.b64encode(b"Quarterly salary table\n").decode()
    return f"""<MultiBody><ContentType>multipart/mixed</ContentType>
      <SingleBody><ContentType>text/plain</ContentType><Charset>utf-8</Charset>
        <BodyContent><Content>Figures for Q3.</Content></BodyContent></SingleBody>
      <SingleBody><ContentType>text/plain</ContentType><DispositionFileName>../../q3.txt</DispositionFileName>
        <BodyContent><Content>{attachment}</Content><TransferEncoding>base64</TransferEncoding></BodyContent></SingleBody>
      <SingleBody><ContentType>application/pdf</ContentType><DispositionFileName>scan.pdf</DispositionFileName>
        <ExtBodyContent><RelPath>attachments/scan.pdf</RelPath></ExtBodyContent></SingleBody>
      <SingleBody><ContentType>message/rfc822</ContentType>
        <ChildMessage><MessageId>&lt;c@x&gt;</MessageId><Subject>Forwarded</Subject>
          <SingleBody><ContentType>text/plain</ContentType>
            <BodyContent><Content>inner words</Content></BodyContent></SingleBody>
        </ChildMessage></SingleBody>
    </MultiBody>"""


def test_an_eaxs_account_keeps_its_folder_tree_threads_and_attachments(tmp_path):
    body = f"""<Folder><Name>Inbox</Name>
        {_eaxs_message(1, "q3@x", "Q3", extra=_multibody())}
        <Folder><Name>Projects</Name>{_eaxs_message(2, "re@x", "Re: Q3", parent="q3@x")}</Folder>
      </Folder><Folder><Name>Sent</Name></Folder>"""
    (tmp_path / "account.xml").write_bytes(_eaxs(body))
    items, issues = _read(tmp_path / "account.xml")
    assert [i.reason for i in issues] == []
    first, second = items
    assert (first.docid, first.folder) == ("account.xml#1", "Inbox")
    assert (second.docid, second.folder) == ("account.xml#2", "Inbox/Projects")
    assert first.where.startswith("line ")
    q3 = first.email
    assert q3.message_id == "<q3@x>" and q3.subject == "Q3" and q3.body == "Figures for Q3."
    assert q3.date == datetime(2001, 5, 14, 15, 0, tzinfo=UTC)
    assert q3.addresses["from"] == "ann@example.org"
    assert "X-Folder: kept" in q3.raw_headers
    names = [a.filename for a in q3.attachments]
    assert names == ["q3.txt", "scan.pdf", "Forwarded.eml"]
    assert q3.attachments[0].text == "Quarterly salary table\n"
    assert any("stored outside the XML" in p for p in q3.problems)
    assert "inner words" in q3.attachments[2].text
    assert second.email.in_reply_to == "q3@x" and second.email.references == ["q3@x"]


def test_an_eaxs_file_with_a_dtd_is_refused_before_any_entity_expands(tmp_path):
    laughs = '<!DOCTYPE Account [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;">]>'
    data = _eaxs(f"<Folder><Name>&b;</Name>{_eaxs_message(1, 'a@x', 'Hi')}</Folder>")
    data = data.replace(b"\n<Account", b"\n" + laughs.encode() + b"<Account", 1)
    (tmp_path / "laughs.xml").write_bytes(data)
    external = _eaxs("").replace(
        b"\n<Account", b'\n<!DOCTYPE Account SYSTEM "file:///etc/passwd"><Account', 1
    )
    (tmp_path / "external.xml").write_bytes(external)
    items, issues = _read(tmp_path)
    assert items == []
    assert len(issues) == 2
    assert all("DTD" in i.reason and i.where.startswith("line 2") for i in issues)


def test_a_truncated_eaxs_file_keeps_the_messages_before_the_cut_and_names_where(tmp_path):
    body = "<Folder><Name>Inbox</Name>" + "".join(
        _eaxs_message(n, f"m{n}@x", f"Message {n}") for n in range(1, 4)
    )
    data = _eaxs(body + "</Folder>")
    cut = data.index(b"<Subject>Message 3")
    (tmp_path / "cut.xml").write_bytes(data[:cut])
    items, issues = _read(tmp_path / "cut.xml")
    assert [i.email.subject for i in items] == ["Message 1", "Message 2"]
    (issue,) = issues
    assert issue.source == "cut.xml" and "not well-formed XML" in issue.reason
    assert issue.where.startswith("line ")


def test_eaxs_folders_nested_past_the_limit_and_oversized_messages_are_refused(tmp_path):
    deep = "<Folder><Name>f</Name>" * 80 + "</Folder>" * 80
    (tmp_path / "deep.xml").write_bytes(_eaxs(deep))
    big = _eaxs_message(
        1,
        "big@x",
        "Big",
        extra="<SingleBody><BodyContent><Content>"
        + "x" * 5000
        + "</Content></BodyContent></SingleBody>",
    )
    (tmp_path / "big.xml").write_bytes(_eaxs(f"<Folder><Name>In</Name>{big}</Folder>"))
    (tmp_path / "other.xml").write_bytes(b"<?xml version='1.0'?><rss><channel/></rss>")
    items, issues = _read(tmp_path, max_message_bytes=4000)
    assert items == []
    reasons = {i.source.split("/")[-1]: i.reason for i in issues}
    assert "nested deeper than 64" in reasons["deep.xml"]
    assert "over the message limit" in reasons["big.xml"]
    assert "not an EAXS account" in reasons["other.xml"]


# --- Maildir and mbox trees ---------------------------------------------------------------


def _maildir(path: Path, messages: dict[str, bytes], *, where="cur"):
    for sub in ("cur", "new", "tmp"):
        (path / sub).mkdir(parents=True, exist_ok=True)
    for name, data in messages.items():
        (path / where / name).write_bytes(data)


def test_a_maildir_plus_plus_tree_keeps_folders_and_never_reads_tmp(tmp_path):
    root = tmp_path / "mail"
    _maildir(root, {"1001.a.host:2,S": _eml("Plan", "p@x")})
    _maildir(root, {"1002.b.host": _eml("Fresh", "f@x")}, where="new")
    (root / "tmp" / "1003.c.host").write_bytes(_eml("Half-delivered", "h@x"))
    _maildir(root / ".Sent", {"2001.a.host:2,S": _eml("Re: Plan", "r@x", parent="p@x")})
    _maildir(root / ".Archive.2001", {"3001.a.host:2,RS": _eml("Old", "o@x")})
    items, issues = _read(root)
    assert [i.reason for i in issues if i.severity == "error"] == []
    got = {i.email.subject: (i.docid, i.folder) for i in items}
    assert got == {
        "Plan": ("mail/1001.a.host", ""),
        "Fresh": ("mail/1002.b.host", ""),
        "Re: Plan": ("mail/.Sent/2001.a.host", "Sent"),
        "Old": ("mail/.Archive.2001/3001.a.host", "Archive/2001"),
    }


def test_a_maildir_message_marked_read_since_keeps_its_doc_id(tmp_path):
    root = tmp_path / "mail"
    _maildir(root, {"1001.a.host": _eml("Plan", "p@x")}, where="new")
    (before,), _ = _read(root)
    (root / "new" / "1001.a.host").rename(root / "cur" / "1001.a.host:2,RS")
    (after,), _ = _read(root)
    assert before.docid == after.docid == "mail/1001.a.host"


def test_a_thunderbird_tree_of_mbox_files_keeps_its_folders(tmp_path):
    root = tmp_path / "Local Folders"
    (root / "Archives.sbd").mkdir(parents=True)

    def mbox(*messages):
        return b"".join(b"From - Mon May 14 10:00:00 2001\n" + m + b"\n" for m in messages)

    (root / "Inbox").write_bytes(mbox(_eml("One", "1@x"), _eml("Re: One", "2@x", parent="1@x")))
    (root / "Inbox.msf").write_bytes(b'// <!-- <mdb:mork:z v="1.4"/> -->')
    (root / "Archives.sbd" / "2001").write_bytes(mbox(_eml("Old", "3@x"), _eml("Older", "4@x")))
    (root / "Sent.mbox").write_bytes(mbox(_eml("Sent one", "5@x")))
    # One message with its envelope line is a message file, as before (doc id unchanged).
    (root / "single").write_bytes(b"From ann@x Mon May 14 10:00:00 2001\n" + _eml("Single", "6@x"))
    items, issues = _read(root)
    got = {i.email.subject: (i.docid, i.folder) for i in items}
    assert got == {
        "One": ("Local_Folders/Inbox#1", "Inbox"),
        "Re: One": ("Local_Folders/Inbox#2", "Inbox"),
        "Old": ("Local_Folders/Archives.sbd/2001#1", "Archives/2001"),
        "Older": ("Local_Folders/Archives.sbd/2001#2", "Archives/2001"),
        "Sent one": ("Local_Folders/Sent.mbox#1", "Sent"),
        "Single": ("Local_Folders/single", ""),
    }
    assert [(i.source, i.severity) for i in issues] == [("Local Folders/Inbox.msf", "skipped")]
    assert items[1].where.startswith("line ") and "offset" in items[1].where


def test_zip_members_keep_their_folders_and_outlook_messages(tmp_path):
    import zipfile

    with zipfile.ZipFile(tmp_path / "export.zip", "w") as zf:
        zf.writestr("Inbox/a.eml", _eml("A", "a@x"))
        zf.writestr("Inbox/Project X/b.msg", build_msg(_budget_msg()))
        zf.writestr("maildir/.Sent/cur/1.host:2,S", _eml("S", "s@x"))
        zf.writestr("maildir/tmp/2.host", _eml("T", "t@x"))
        zf.writestr("big.pst", b"!BDN")
    items, issues = _read(tmp_path / "export.zip")
    assert {i.email.subject: i.folder for i in items} == {
        "A": "Inbox",
        "Re: Budget": "Inbox/Project X",
        "S": "maildir/Sent",
    }
    reasons = {i.where: i.reason for i in issues}
    assert "unfinished delivery" in reasons["maildir/tmp/2.host"]
    assert "PST inside a zip" in reasons["big.pst"]


# --- PST / OST ----------------------------------------------------------------------------


@needs_readpst
def test_a_pst_is_read_folder_by_folder_and_its_non_mail_items_are_reported(tmp_path):
    items, issues = _read(PST)
    assert items == []  # this PST holds a contact, a list and a calendar item, no email
    skipped = {(i.where, i.reason) for i in issues if i.severity == "skipped"}
    assert ("Personal Folders/Calendar/1.ics", "a calendar item: not imported") in skipped
    assert ("Personal Folders/Contacts/1.vcf", "a contact: not imported") in skipped
    # The distribution list readpst cannot export is named with its folder.
    errors = [i for i in issues if i.severity == "error"]
    assert [(i.source, i.where) for i in errors] == [("dist-list.pst", "folder 'Contacts'")]


@needs_readpst
def test_hostile_psts_are_refused_with_the_reason(tmp_path):
    whole = PST.read_bytes()
    (tmp_path / "cut.pst").write_bytes(whole[:100_000])
    (tmp_path / "magic-only.ost").write_bytes(b"!BDN" + b"\x5a" * 20_000)
    (tmp_path / "renamed.pst").write_bytes(b"From: a@b\n\nnot a pst")
    items, issues = _read(tmp_path)
    assert items == []
    reasons = {i.source.split("/")[-1]: i.reason for i in issues}
    assert reasons["renamed.pst"] == "not a PST/OST file (no '!BDN' signature)"
    assert reasons["cut.pst"].startswith("readpst failed (exit status 1)")
    assert "Could not get root record" in reasons["cut.pst"]
    assert reasons["magic-only.ost"].startswith("readpst failed")


def _fake_readpst(tmp_path, monkeypatch, script: str) -> None:
    exe = tmp_path / "fake-readpst"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(0o755)
    monkeypatch.setattr("core.parsing.pst.readpst_path", lambda: str(exe))


def test_a_readpst_that_hangs_is_stopped_at_the_time_limit(tmp_path, monkeypatch):
    # A stand-in for readpst looping on a hostile PST: it never ends by itself.
    _fake_readpst(tmp_path, monkeypatch, "exec sleep 60\n")
    (tmp_path / "box.pst").write_bytes(b"!BDN" + b"\0" * 1000)
    items, issues = _read(tmp_path / "box.pst", max_extract_seconds=1)
    assert items == []
    assert "longer than 1 s (SASC_MAX_EXTRACT_SECONDS) and was stopped" in issues[0].reason


def test_a_pst_that_expands_without_bound_is_stopped_at_the_byte_limit(tmp_path, monkeypatch):
    # A stand-in for a PST whose blocks are referenced again and again (a bomb): readpst
    # would write without end; the parent measures its output and stops it.
    _fake_readpst(
        tmp_path,
        monkeypatch,
        'while [ "$1" != "-o" ]; do shift; done; mkdir -p "$2/Inbox"\n'
        'while true; do head -c 1000000 /dev/zero | tr "\\\\0" a >> "$2/Inbox/1.eml"; done\n',
    )
    (tmp_path / "bomb.pst").write_bytes(b"!BDN" + b"\0" * 1000)
    items, issues = _read(
        tmp_path / "bomb.pst", max_archive_bytes=5_000_000, max_message_bytes=2_000_000
    )
    assert "wrote more than 5 MB" in issues[0].reason
    # What it wrote is still judged by the message limit: nothing half-written is stored.
    assert items == [] and "over the" in issues[-1].reason


def test_without_readpst_a_pst_is_refused_with_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr("core.parsing.pst.readpst_path", lambda: None)
    (tmp_path / "box.pst").write_bytes(b"!BDN" + b"\0" * 100)
    _items, (issue,) = _read(tmp_path / "box.pst")
    assert "pst-utils" in issue.reason
