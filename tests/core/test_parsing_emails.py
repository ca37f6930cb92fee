from pathlib import Path

import pytest

from core.parsing.emails import EmailParseError, parse_email_bytes, sanitise_filename
from core.parsing.html_text import html_to_text

EDGE = Path(__file__).parents[1] / "fixtures" / "emails" / "edge"
SAMPLE = Path(__file__).parents[1] / "fixtures" / "emails" / "sample"


def parse(name):
    return parse_email_bytes((EDGE / name).read_bytes())


def test_multipart_alternative_prefers_the_plain_part_and_decodes_headers():
    msg = parse("multipart-alternative.eml")
    assert msg.subject == "Café meeting"
    assert msg.body == "Let's meet at the café at ten."
    assert not msg.body_from_html
    assert msg.addresses == {
        "from": "alice@example.org",
        "to": ["bob@example.com", "carol@example.net"],
        "cc": ["dave@example.org"],
        "bcc": [],
    }
    assert msg.date.isoformat() == "2002-09-03T09:15:00+00:00"  # 10:15 +0100, as its UTC instant
    assert msg.message_id == "<alt-1@example.org>"
    assert msg.problems == []


def test_html_only_message_becomes_text_without_scripts_or_styles():
    msg = parse("html-only.eml")
    assert msg.body_from_html
    assert "Headline" in msg.body and "First paragraph & more." in msg.body
    assert "alert" not in msg.body and "color:red" not in msg.body and "<" not in msg.body


def test_unknown_charset_falls_back_and_is_reported():
    msg = parse("unknown-charset.eml")
    assert msg.body == "Schöne Grüße aus München."
    assert any("unknown charset 'x-unknown-charset'" in p for p in msg.problems)


def test_undeclared_non_utf8_subject_is_decoded_not_dropped():
    # Raw Latin-1 bytes in the Subject (no encoded word): each byte became U+FFFD, unnoted.
    msg = parse("unknown-charset.eml")
    assert msg.subject == "Grüße"
    assert "header Subject: no charset declared and not UTF-8, decoded as cp1252" in msg.problems


def test_raw_8bit_headers_decode_as_utf8_first_then_cp1252_with_encoded_words_kept():
    head = (
        "From: Ren\u00e9 <r@example.ie>\nTo: b@example.org\n"
        "Subject: Caf\u00e9 =?utf-8?q?n=C3=A1?=\n"
    )
    for charset, noted in (("utf-8", False), ("latin-1", True)):
        msg = parse_email_bytes(
            (head + "Date: Tue, 1 Dec 2026 10:00:00 +0000\n\nx\n").encode(charset)
        )
        assert msg.subject == "Café ná"  # the encoded word is still decoded
        assert msg.from_header == "René <r@example.ie>"
        assert msg.addresses["from"] == "r@example.ie"
        notes = [p for p in msg.problems if p.startswith("header ")]
        assert notes == (
            [
                "header Subject: no charset declared and not UTF-8, decoded as cp1252",
                "header From: no charset declared and not UTF-8, decoded as cp1252",
            ]
            if noted
            else []
        )


def test_text_attachments_are_extracted_and_binary_ones_recorded_by_name_only():
    msg = parse("attachments.eml")
    assert msg.body == "See the attached notes and photo."
    names = [(a.filename, a.content_type, a.is_text) for a in msg.attachments]
    assert names == [
        ("notes.txt", "text/plain", True),
        ("passwd.png", "image/png", False),
        ("The forwarded one.eml", "message/rfc822", True),
    ]
    notes, image, inner = msg.attachments
    assert notes.text == "The budget is 1200 euros.\n"
    assert image.text == "" and image.size == 70
    assert "Inner body text about budgets." in inner.text
    assert "From: inner@example.org" in inner.text
    assert any("'../../etc/passwd.png' replaced by 'passwd.png'" in p for p in msg.problems)


def test_markup_in_headers_is_kept_as_text():
    msg = parse("xss.eml")
    assert msg.subject == "<img src=x onerror=alert('subject')>"
    assert "<script>alert('body')</script>" in msg.body


def test_truncated_base64_is_imported_with_a_problem_noted():
    msg = parse("truncated-base64.eml")
    assert msg.body.startswith("This is truncated")
    assert msg.problems, "a decoding problem must be recorded"


def test_unparseable_date_is_dropped_and_reported():
    msg = parse("bad-date.eml")
    assert msg.date is None
    assert any("Date" in p for p in msg.problems)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty message"),
        (b"   \n\n", "empty message"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary data"),
        (b"Just words without headers.\nAnother line.\n", "no RFC-822 header"),
        (b"X-Foo: bar\n\nbody", "none of From, To, Subject, Date or Message-ID"),
    ],
)
def test_non_messages_are_refused_with_a_reason(data, reason):
    with pytest.raises(EmailParseError, match=reason):
        parse_email_bytes(data)


@pytest.mark.parametrize(
    ("name", "expected", "changed"),
    [
        ("report.pdf", "report.pdf", False),
        ("../../etc/passwd", "passwd", True),
        ("C:\\Windows\\system32\\evil.exe", "evil.exe", True),
        (".bashrc", "bashrc", True),
        ("a\x00b\x1f.txt", "ab.txt", True),
        ("..", "attachment-3", True),
        (None, "attachment-3", False),
        ("x" * 300, "x" * 255, True),
    ],
)
def test_attachment_names_are_cut_to_a_safe_last_component(name, expected, changed):
    assert sanitise_filename(name, 2) == (expected, changed)


def test_every_sample_message_parses_with_headers_and_text():
    files = sorted(SAMPLE.glob("*.eml"))
    assert len(files) >= 30
    for path in files:
        msg = parse_email_bytes(path.read_bytes())
        assert msg.from_header, path.name
        assert msg.body or msg.attachments, path.name
        assert "\x00" not in msg.body


def test_html_to_text_keeps_block_structure():
    text = html_to_text("<div>a</div><div>b<br>c</div><ul><li>d</li></ul>")
    assert text.split() == ["a", "b", "c", "d"]
    assert "a\n" in text


def test_attached_message_is_named_after_its_whole_subject():
    raw = (
        b"From: a@example.org\nSubject: fwd\nMIME-Version: 1.0\n"
        b'Content-Type: multipart/mixed; boundary="b"\n\n--b\nContent-Type: text/plain\n\nsee\n'
        b"--b\nContent-Type: message/rfc822\n\nFrom: c@example.org\n"
        b"Subject: error exmh 2.5 07/13/2001\n\ninner\n--b--\n"
    )
    msg = parse_email_bytes(raw)
    assert msg.attachments[0].filename == "error exmh 2.5 07-13-2001.eml"
