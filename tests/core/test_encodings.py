"""Values written encoded (core.encodings): base64 (a MIME part quoted in a bounce, a
token), uuencode, quoted-printable, percent-encoding, MIME encoded words, nested; what is no
encoding gives no region; core.writings reads and redacts them (encoded_texts,
redact_encoded)."""

import base64
import binascii
import hashlib
import quopri
import secrets
from email.mime.text import MIMEText
from pathlib import Path
from urllib.parse import quote

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from core.encodings import Region, encoded_regions
from core.parsing.emails import parse_email_bytes
from core.writings import REDACTED, encoded_texts, redact_encoded, scan

SECRET = "Account: 98765432101 / IBAN DE89 3704 0044 0532 0130 00 / Phone: (617) 555-0199"
VALUES = ["98765432101", "DE89 3704 0044 0532 0130 00", "(617) 555-0199"]
SAMPLE = Path(__file__).parents[1] / "fixtures" / "emails" / "sample"

# A real detached signature (tests/fixtures/emails/sample/easy-ham-1-00014.eml).
PGP = """-----BEGIN PGP SIGNATURE-----
Version: GnuPG v1.0.6 (GNU/Linux)
Comment: Exmh version 2.2_20000822 06/23/2000

iD8DBQE9ZQJ/K9b4h5R0IUIRAiPuAJwL4mUus5whLNQZC8MsDlGpEdKNrACcDfZH
PcGgN9frLIM+C5Z3vagi2wE=
=qJoJ
-----END PGP SIGNATURE-----
"""


def only(text: str) -> Region:
    regions = encoded_regions(text)
    assert len(regions) == 1, regions
    return regions[0]


def test_base64_mime_part_quoted_in_a_bounce():
    part = MIMEText(SECRET + "\nZoë Gallagher\n" + SECRET, "plain", "utf-8")
    assert part["Content-Transfer-Encoding"] == "base64"
    quoted = "".join(f"> {line}\n" for line in part.as_string().splitlines())
    bounce = f"Delivery to the following recipient failed.\n\n{quoted}>\n> -- \nPostmaster\n"
    body = part.get_payload().strip().splitlines()
    assert len(body) > 2
    r = only(bounce)
    assert r.start == bounce.index("> " + body[0])
    assert r.end == bounce.index(body[-1]) + len(body[-1])
    assert r.decoded == SECRET + "\nZoë Gallagher\n" + SECRET


def test_base64_block_and_single_runs():
    block = base64.encodebytes(SECRET.encode()).decode()
    text = f"Content-Transfer-Encoding: base64\n\n{block}\n--boundary--\n"
    r = only(text)
    assert (r.start, r.end) == (text.index(block), text.index(block) + len(block) - 1)
    assert r.decoded == SECRET

    token = base64.b64encode(SECRET.encode()).decode()
    text = f"open https://pay.example/t/{token} today"
    r = only(text)
    assert (r.start, r.end, r.decoded) == (text.index(token), text.index(" today"), SECRET)

    urlsafe = base64.urlsafe_b64encode(("???" + SECRET).encode()).decode()
    assert urlsafe.startswith("Pz8_")
    assert only(f"id={urlsafe}&x=1").decoded == "???" + SECRET

    short = base64.b64encode(b"6175550199").decode()  # NjE3NTU1MDE5OQ==: its padding
    r = only(f"ref {short}.")
    assert (r.start, r.end, r.decoded) == (4, 4 + len(short), "6175550199")


def test_uuencode_block():
    data = SECRET.encode()
    lines = [binascii.b2a_uu(data[i : i + 45]).decode() for i in range(0, len(data), 45)]
    block = "begin 644 payee.txt\n" + "".join(lines) + "`\nend"
    text = f"The payee file:\n{block}\nthanks\n"
    r = only(text)
    assert (r.start, r.end, r.decoded) == (16, 16 + len(block), SECRET)
    # quoted, a line damaged, no end line
    bad = ["> " + x for x in (block.splitlines()[:2] + ["M!!!!!!!!", "`"])]
    quoted = "\n".join(bad)
    r = only(f"On Monday you wrote:\n{quoted}\n\nok")
    assert r.decoded.startswith(SECRET[:45])
    assert (r.start, r.end) == (21, 21 + len(quoted))


def test_quoted_printable_escapes_and_soft_breaks():
    encoded = quopri.encodestring((SECRET + "  " + SECRET).encode(), quotetabs=True).decode()
    assert "=\n" in encoded and "=20" in encoded
    text = f"Content-Transfer-Encoding: quoted-printable\n\n{encoded}\n\n--b--\n"
    r = only(text)
    assert (r.start, r.end) == (text.index(encoded), text.index(encoded) + len(encoded))
    assert r.decoded == SECRET + "  " + SECRET

    line = "Call me on 617=20555=200199, or wire to DE89=203704=200044=200532=200130=2000."
    text = f"Hi,\n{line}\nBye"
    r = only(text)
    assert (r.start, r.end) == (4, 4 + len(line))
    assert r.decoded == "Call me on 617 555 0199, or wire to DE89 3704 0044 0532 0130 00."

    quoted = "> Account: 9876543=\n> 2101 and caf=C3=A9 latt=C3=A9\n> ok"
    r = only("wrote:\n" + quoted)
    assert (r.start, r.end) == (7, 7 + quoted.index("\n> ok"))
    assert r.decoded == "Account: 98765432101 and café latté"
    assert only("Caf=E9 ouvert").decoded == "Café ouvert"  # Latin-1


def test_percent_encoding_in_a_url_and_a_word():
    url = "https://pay.example/send?to=" + quote(SECRET, safe="") + "&lang=en"
    text = f"Click <{url}> to pay."
    r = only(text)
    assert (r.start, r.end) == (text.index(url), text.index(url) + len(url))
    assert r.decoded == "https://pay.example/send?to=" + SECRET + "&lang=en"
    r = only("ring 617%20555%200199 later")
    assert (r.start, r.end, r.decoded) == (5, 21, "617 555 0199")


def test_encoded_words_and_nested_encodings():
    word = "=?utf-8?B?" + base64.b64encode(b"98765432101").decode() + "?="
    text = f"> Subject: Re: {word} =?utf-8?Q?Zo=C3=AB?=\n"
    r = only(text)
    assert r.decoded == "98765432101Zoë"
    assert text[r.start : r.end].startswith("=?utf-8?B?")

    inner = "\n".join(f"> {x}" for x in base64.encodebytes(SECRET.encode()).decode().split())
    outer = base64.encodebytes(f"Forwarded:\n{inner}\n".encode()).decode()
    r = only(f"x\n{outer}\ny")
    assert SECRET in r.decoded and r.decoded.startswith("Forwarded:\n> QWNj")

    qp_in_b64 = base64.b64encode(b"Phone: 617=20555=200199 / see %28617%29").decode()
    assert "617 555 0199" in only(qp_in_b64).decoded


NOT_ENCODED = [
    "The quick brown fox jumps over the lazy dog; see you at 10:30 on Monday.",
    "Get 50% off today! a = b, x == y, score=5, 100%, 3 % 2 and %d items",
    "=====================================================================",
    "--_===6628399====mx1.yipes.com===_--",
    "https://www.example.com/search?q=ACME&n=20&hl=en&id=FF00 and ?to=Account",
    "%description\nModified=E0824ED43364C201DE",
    "Pneumonoultramicroscopicsilicovolcanoconiosis Antidisestablishmentarianism",
    "AbstractSingletonProxyFactoryBeanImplementationHelperManagerX509Http",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b (HEAD -> main)",
    "sha256 " + hashlib.sha256(b"x").hexdigest() + " md5 9dd4e461268c8034f5c8564e155c67a6",
    "/usr/local/lib/python3.11/site-packages/django/contrib/admin",
    PGP,
    "> " + PGP.replace("\n", "\n> "),
]


def test_no_region_in_ordinary_text():
    for text in NOT_ENCODED:
        assert encoded_regions(text) == [], text
    assert encoded_regions("") == []


def test_binary_base64_is_no_region():
    for n in (20, 45, 57, 58, 100, 300, 2000):
        for _ in range(50):
            data = secrets.token_bytes(n)
            assert encoded_regions(base64.encodebytes(data).decode()) == []
            assert encoded_regions("key: " + base64.b64encode(data).decode() + ";") == []
            assert encoded_regions(secrets.token_hex(20) + " " + secrets.token_hex(32)) == []


def test_sample_mail_holds_few_regions():
    """The sample's parsed messages: only a URL with percent escapes is an encoding."""
    found = []
    for path in sorted(SAMPLE.glob("*.eml")):
        msg = parse_email_bytes(path.read_bytes())
        text = "\n".join([msg.subject, msg.raw_headers, msg.body])
        found += [text[r.start : r.end] for r in encoded_regions(text)]
    assert len(found) == 1 and found[0].startswith("http://216.239.39.100/search?q=cache")


# text as people write it: words (letters, digits, a few beyond ASCII) and separators
WORD = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789éßЖ"),
               min_size=1, max_size=12)  # fmt: skip
SEP = st.sampled_from([" ", ", ", ". ", ": ", " / ", " - ", " (", ") "])
TEXT = st.lists(st.tuples(WORD, SEP), min_size=1, max_size=40).map(
    lambda ws: "".join(w + s for w, s in ws).strip()
)
AROUND = st.sampled_from([("", ""), ("Dear team,\n\n", "\n\nRegards\n"), ("> wrote:\n", "\n> ok")])


def holds(text: str, t: str) -> bool:
    return any(t in r.decoded for r in encoded_regions(text))


@settings(max_examples=150, deadline=None)
@given(TEXT, AROUND)
def test_any_text_encoded_is_read(t, around):
    before, after = around
    data = t.encode()
    if len(base64.b64encode(data)) >= 40:
        assert holds(before + base64.encodebytes(data).decode() + after, t)
        assert holds(before + "data " + base64.b64encode(data).decode() + after, t)
    uu = "".join(binascii.b2a_uu(data[i : i + 45]).decode() for i in range(0, len(data), 45))
    assert holds(f"{before}begin 600 t.txt\n{uu}`\nend{after}", t)
    qp = quopri.encodestring(data, quotetabs=True).decode()
    assert holds(before + qp + after, t) if qp != t else t in before + qp + after
    pct = quote(t, safe="")
    url = f"https://x.example/p?q={pct}&lang=en"
    assert holds(f"{before}see {url}{after}", t) if pct != t else True


@settings(max_examples=60, deadline=None)
@given(TEXT)
def test_short_base64_with_padding_is_read(t):
    encoded = base64.b64encode(t.encode()).decode()
    assume(encoded.endswith("=") and len(encoded) >= 16)
    assume(not (encoded.isupper() or encoded.islower()))
    assert holds(f"ref {encoded} ok", t)


# ---- core.writings: encoded_texts, redact_encoded ------------------------------------


def test_encoded_texts_are_scanned():
    text = "Hi,\n" + base64.encodebytes(SECRET.encode()).decode() + "\nbye 617%20555%200199"
    texts = encoded_texts(text)
    assert texts == [SECRET, "617 555 0199"]
    # the scanner reads a text's encodings too (issue 31: a bounce quoting a base64 part)
    assert scan([text], VALUES) == set(VALUES)
    assert encoded_texts("plain words") == []


def test_redact_encoded_marks_whole_regions():
    block = "".join(f"> {x}\n" for x in base64.encodebytes(SECRET.encode()).decode().split())
    text = f"The bounce:\n{block}> --\nand 617%20555%200199, caf%C3%A9, 42%20apples"
    out = redact_encoded(text, VALUES)
    assert out == f"The bounce:\n{REDACTED}\n> --\nand {REDACTED}, caf%C3%A9, 42%20apples"
    assert redact_encoded(text, ["nobody"]) == text
    assert redact_encoded("no encodings, 617 555 0199", VALUES) == "no encodings, 617 555 0199"


def test_redact_encoded_uu_qp_and_nested():
    data = SECRET.encode()
    uu = "".join(binascii.b2a_uu(data[i : i + 45]).decode() for i in range(0, len(data), 45))
    text = f"x\nbegin 644 a.txt\n{uu}`\nend\ny"
    assert redact_encoded(text, ["98765432101"]) == f"x\n{REDACTED}\ny"
    qp = "Wire to DE89=203704=200044=200532=200130=2000 please"
    assert redact_encoded(f"a\n{qp}\nb", VALUES) == f"a\n{REDACTED}\nb"
    nested = base64.b64encode(b"tel: 617=20555=200199, thanks").decode()
    assert redact_encoded(f"[{nested}]", VALUES) == f"[{REDACTED}]"


def test_redact_encoded_writing_across_a_region_edge():
    """A value half written plainly, half encoded: the region and the plain part go."""
    assert redact_encoded("call 617 555%200199 now", VALUES) == f"call {REDACTED} now"
    assert redact_encoded("call (617) 555%200199 now", VALUES) == f"call {REDACTED} now"
    text = "Tel 617=20555\n0199 thanks\nbye"  # a hard line break inside quoted-printable
    assert redact_encoded(text, VALUES) == f"{REDACTED} thanks\nbye"
