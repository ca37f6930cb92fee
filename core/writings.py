"""Every writing of a redacted value: one rule for "the same string", pure (no Django).

A redacted value must stay hidden wherever it is written again, however it is written: the
same phone in a reply's quote, an IBAN printed in groups and sent compact, an account number
split across a wrapped and quoted line, a number behind HTML entities, zero-width spaces or
soft hyphens. Redaction (the searcher's copy of a document), the copies an archivist is shown
and the searcher's index all match a value with this one rule:

- A value's **canonical form** (``key``) is the sequence of its letters and digits, lower
  case, compatibility-normalised (NFKC: a full-width ``１`` is ``1``), with everything else
  left out: ``(617) 555-0199``, ``617.555.0199`` and ``6175550199`` are one value, so are
  ``DE89 3704 0044 0532 0130 00`` and ``DE89370400440532013000``, ``Maeve Gallagher`` and
  ``MAEVE\\n> GALLAGHER``, ``john.smith@example.com`` in any case.
- A **writing** of it in a text is a stretch whose letters and digits, read in order, are the
  key, with any separators between them: spaces, line breaks with the quote markers of a
  reply (``\\n> ``), dashes, dots, slashes, parentheses, underscores, non-breaking,
  zero-width and other invisible format characters (soft hyphen, word joiner), and HTML
  entities (``&nbsp;``, ``&#45;``); a letter or digit itself may be written as a numeric
  entity or in its full-width form.
- Its edges are **whole**: a writing starting with a digit is not preceded by a digit, one
  starting with a letter not by a letter, and the same at its end (``12345678`` is not a
  writing inside ``123456789``; ``ann`` is not inside ``joann``). A digit next to a letter
  is an edge (``acct98765432101`` holds the account; ``redact`` then takes the whole word).
- A **phone number** has more than one key: its national number, with the country code and
  with the trunk or international prefix glued on (``+16175550199``, ``0044 20 7946 0123``,
  ``+44 (0)20 7946 0123``), read by libphonenumber (``phonenumbers``) from the value.

``redact`` replaces each found stretch by the same mark, whatever its length (``REDACTED``).
Tests: ``tests/core/test_writings.py`` (hypothesis: every writing generated from a value
is found and hidden; other values are not).
"""

import functools
import html
import re
import unicodedata
from collections.abc import Iterable

MARK = "\u2588"  # a full block: not a word character, so no analyser makes a term of it
# What every redacted span becomes, whatever its length: a secret of 3 characters and one of
# 30 leave the same text (pages, snippets) and no term (lengths, statistics).
REDACTED = MARK * 8

# Between two letters or digits of a writing: any character that is not a letter or digit
# (Python's \W holds punctuation, spaces of every kind, line breaks, and the invisible
# format characters: soft hyphen, zero-width space, word joiner), an underscore, or an HTML
# entity (named or numeric).
_GAP = r"(?:[\W_]|&[A-Za-z][A-Za-z0-9]{1,31};|&#[0-9]{1,7};|&#[xX][0-9A-Fa-f]{1,6};)*"


def key(value: str) -> str:
    """Return the canonical form of ``value``: its letters and digits, NFKC-normalised
    (digits of any script as ASCII digits) and lower-cased, in order (HTML entities read as
    the characters they stand for); empty when it holds none."""
    text = _normalised(html.unescape(value))[0].lower()
    return "".join(c for c in text if c.isalnum())


def keys(value: str) -> set[str]:
    """Return every key under which ``value`` is written: ``key(value)``; for a number with
    leading zeros, the number without them (a writing may pad it: ``0098765432101``); for a
    phone number its national number with and without the country code and prefixes, and
    its subscriber number without the area code; a phone written with an extension also
    without it; for an IBAN its national account number (BBAN) and the account part of it
    (``Kto. 0532013000`` writes ``DE89 3704 0044 0532 0130 00``); a person's two or three
    names also in the other orders people write them (``Quinlivan, Darragh``)."""
    k = key(value)
    if not k:
        return set()
    out = {k, *_phone_keys(value, k), *_iban_keys(k), *_name_keys(value)}
    base = _EXTENSION.sub("", value)
    if base != value:
        out |= keys(base)
    for x in list(out):
        core = x.lstrip("0")
        if x.isdigit() and core != x and len(core) >= 6:
            out.add(core)
    return out


# an extension written after a phone number: x214, ext. 45, extension 7, #12
_EXTENSION = re.compile(r"(?i)[\s,;]*(?:x|ext\.?|extn\.?|extension|#)\s*\d{1,6}\s*$")


def _iban_keys(k: str) -> set[str]:
    """An IBAN's BBAN, and its account part: the longest segment of the registry's BBAN
    structure after the first (the first is the bank's code, shared by every customer)."""
    if len(k) < 15 or not k[:2].isalpha() or not k[2:4].isdigit():
        return set()
    from stdnum import iban, numdb

    compact = k.upper()
    if not iban.is_valid(compact):
        return set()
    info = numdb.get("iban").info(compact[:2] + compact[4:])
    structure = info[0][1].get("bban", "") if info else ""
    out = {k[4:]}
    pos, segments = 4, []
    for length, _fixed, _kind in re.findall(r"(\d+)(!?)([nacs])", structure):
        segments.append(k[pos : pos + int(length)])
        pos += int(length)
    if len(segments) > 1:
        account = max(segments[1:], key=len)
        if len(account) >= 6:
            out.add(account)
    return out


def _name_keys(value: str) -> set[str]:
    """Other orders of a person's names: ``Darragh Quinlivan`` is also written
    ``Quinlivan, Darragh``; with a middle name, also without it."""
    words = [key(w) for w in value.split()]
    if not 2 <= len(words) <= 3 or not all(w.isalpha() and len(w) > 1 for w in words):
        return set()
    if len(words) == 2:
        return {words[1] + words[0]}
    first, middle, last = words
    return {first + last, last + first, last + first + middle}


# Where a number is written without its country, the first of these in which it is a valid
# number says which country it is (the archives sasc serves first: US, UK, Ireland, the EU).
_REGIONS = ("US", "GB", "IE", "DE", "FR", "NL", "BE", "ES", "IT", "AT", "CH", "SE", "PL")


@functools.lru_cache(maxsize=4096)
def _phone_keys(value: str, k: str) -> frozenset[str]:
    """The other writings of a phone number's digits: national significant number (NSN),
    country code + NSN, trunk prefix + NSN, and the international prefixes 00 and 011.
    Empty when the value is no valid phone number (libphonenumber's metadata)."""
    if not k.isdigit() or not 6 <= len(k) <= 17:
        return frozenset()
    import phonenumbers

    number = None
    for region in _REGIONS:
        try:
            parsed = phonenumbers.parse(value, region)
        except phonenumbers.NumberParseException:
            return frozenset()
        if phonenumbers.is_valid_number(parsed):
            number = parsed
            break
    if number is None:
        return frozenset()
    nsn = phonenumbers.national_significant_number(number)
    cc = str(number.country_code)
    out = {nsn, cc + nsn, "00" + cc + nsn, "011" + cc + nsn}
    # the subscriber number alone, as it is dialled within its area (555-0199)
    area = phonenumbers.length_of_geographical_area_code(number)
    if cc == "1" and len(nsn) == 10:
        area = 3
    if area and len(nsn) - area >= 6:
        out.add(nsn[area:])
    if cc == "1":
        out.add("1" + nsn)
    else:
        out |= {"0" + nsn, cc + "0" + nsn, "00" + cc + "0" + nsn}
    return frozenset(x for x in out if len(x) >= 6)


def _char(c: str) -> str:
    """A pattern for one character of a key: itself (either case), its full-width form, or
    a numeric HTML entity for it."""
    forms = {c, c.upper()}
    if c.isascii():
        forms |= {chr(ord(x) + 0xFEE0) for x in (c, c.upper())}
    alternatives = [re.escape(x) for x in sorted(forms)]
    codes = {ord(x) for x in (c, c.upper())}
    alternatives += [f"&#0*{n};" for n in sorted(codes)]
    alternatives += [f"&#[xX]0*{n:x};" for n in sorted(codes)]
    return "(?:" + "|".join(alternatives) + ")"


def _edge(c: str) -> tuple[str, str]:
    """The look-behind and look-ahead that make a writing whole at an edge character."""
    if c.isdigit():
        return r"(?<!\d)", r"(?!\d)"
    return r"(?<![^\W\d_])", r"(?![^\W\d_])"


def _key_pattern(k: str) -> str:
    before, _a = _edge(k[0])
    _b, after = _edge(k[-1])
    # a long number may be padded with zeros in front (fixed-width fields)
    padding = f"(?:0{_GAP})*" if len(k) >= 6 and k[0] in "123456789" else ""
    return before + padding + _GAP.join(_char(c) for c in k) + after


@functools.lru_cache(maxsize=1024)
def _compiled(all_keys: tuple[str, ...]) -> re.Pattern | None:
    if not all_keys:
        return None
    # longest first, so that where two keys start at one place the whole writing is taken
    ordered = sorted(all_keys, key=len, reverse=True)
    return re.compile("|".join(f"(?:{_key_pattern(k)})" for k in ordered))


def pattern(values: Iterable[str]) -> re.Pattern | None:
    """Return one pattern that finds every writing of any of ``values``, or None when no
    value holds a letter or digit."""
    all_keys: set[str] = set()
    for v in values:
        all_keys |= keys(v)
    return _compiled(tuple(sorted(all_keys)))


def find(text: str, values: Iterable[str]) -> list[tuple[int, int]]:
    """Return the ``(start, end)`` of every writing of any of ``values`` in ``text``.

    Only the keys found in the text's ``projection`` go into the pattern: a collection may
    hide thousands of values, a message holds few of them."""
    if not text:
        return []
    present = scanner(values).present(projection(text))
    if not present:
        return []
    p = _compiled(tuple(sorted(present)))
    if text.isascii():
        return _all_matches(p, text)
    # other writings of the same letters and digits (mathematical bold, superscripts,
    # Arabic-Indic digits...): matched on a character-for-character normal form, the spans
    # mapped back to the text
    normal, where = _normalised(text)
    return [(where[a], where[b - 1] + 1) for a, b in _all_matches(p, normal)]


_NONASCII_DIGIT = re.compile(r"(?![0-9])\d")


def _normalised(text: str) -> tuple[str, list[int]]:
    """``text`` with each character in its NFKC form and every decimal digit of any script
    as an ASCII digit, and, for each character of the result, the index of the character of
    ``text`` it comes from."""
    if unicodedata.is_normalized("NFKC", text) and not _NONASCII_DIGIT.search(text):
        return text, list(range(len(text)))
    out: list[str] = []
    where: list[int] = []
    for i, c in enumerate(text):
        if c.isascii():
            form = c
        else:
            d = unicodedata.decimal(c, None)
            form = str(d) if d is not None else unicodedata.normalize("NFKC", c)
        out.append(form)
        where.extend([i] * len(form))
    return "".join(out), where


def _all_matches(p: re.Pattern, text: str) -> list[tuple[int, int]]:
    """Every match, overlapping ones included: a scan resumes one character after each
    match's start, so a shorter key starting inside a longer writing is found too."""
    out = []
    pos = 0
    while m := p.search(text, pos):
        if m.end() > m.start():
            out.append(m.span())
        pos = m.start() + 1
    return out


_NOT_ALNUM = re.compile(r"[\W_]+")
_ASCII_NOT_ALNUM = bytes(b for b in range(128) if not chr(b).isalnum())


def projection(text: str) -> str:
    """Return the letters and digits of ``text`` in order (entities read, NFKC, lower case):
    every writing of a value holds its key as a substring of this. A fast first look
    (regular expressions and string search in C) before the exact match of ``find``."""
    if "&" in text:
        text = html.unescape(text)
    if text.isascii():  # most mail: bytes.translate deletes at memory speed
        return text.encode("ascii").translate(None, _ASCII_NOT_ALNUM).decode("ascii").lower()
    return _NOT_ALNUM.sub("", _normalised(text)[0]).lower()


class Scanner:
    """Which of a set of values a document's texts hold, exactly as ``find`` finds them,
    for scanning a whole collection: the projection of the texts first (a substring test
    of each key), the exact pattern only where a key occurs."""

    def __init__(self, values: Iterable[str]):
        self.by_key = {k: v for v in sorted(set(values)) for k in keys(v)}
        # many keys: look each place of a projection up by its first characters (one dict
        # look-up a character) instead of a substring search per key
        self.head = min((len(k) for k in self.by_key), default=0)
        self.head = min(self.head, 6)
        self.by_head: dict[str, list[str]] = {}
        for k in self.by_key:
            self.by_head.setdefault(k[: self.head], []).append(k)

    def __bool__(self) -> bool:
        return bool(self.by_key)

    def present(self, projected: str) -> list[str]:
        """The keys that occur in a projection (each a candidate writing to confirm)."""
        if len(self.by_key) <= 200:  # a substring search per key is C-fast up to a few hundred
            return [k for k in self.by_key if k in projected]
        found: set[str] = set()
        h, by_head = self.head, self.by_head
        for i in range(len(projected) - h + 1):
            ks = by_head.get(projected[i : i + h])
            if ks:
                found.update(k for k in ks if projected.startswith(k, i))
        return sorted(found)

    def held(self, texts: Iterable[str]) -> set[str]:
        """Return the values written in any of ``texts``."""
        if not self.by_key:
            return set()
        texts = [t for t in texts if t]
        texts += [d for t in texts for d in encoded_texts(t)]  # base64, uuencode, QP, %XX
        joined = "\x00".join(projection(t) for t in texts)
        found: set[str] = set()
        for k in sorted(self.present(joined), key=len, reverse=True):
            value = self.by_key[k]
            if value not in found and any(_compiled((k,)).search(t) for t in texts):
                found.add(value)
        return found


def scanner(values: Iterable[str]) -> Scanner:
    """The ``Scanner`` of a set of values, kept for the sets last used (a page renders many
    fields with the same values)."""
    return _scanner(frozenset(values))


@functools.lru_cache(maxsize=64)
def _scanner(values: frozenset[str]) -> Scanner:
    return Scanner(values)


def scan(texts: Iterable[str], values: Iterable[str]) -> set[str]:
    """Return the ``values`` written in any of ``texts`` (exactly as ``find`` finds them)."""
    return scanner(values).held(texts)


def redact(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """Return ``text`` with each ``(start, end)`` span replaced by the same mark,
    ``REDACTED`` (it does not tell the length of the secret).

    A span that reaches into a word takes the whole word: what is left of a redacted word
    must not be searchable (``"12345678"`` redacted inside ``"acct12345678"`` leaves no
    ``acct``-prefixed fragment). Overlapping or touching spans merge into one mark; spans
    outside the text are clipped."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        start, end = max(0, start), min(len(text), end)
        if end <= start:
            continue
        # what opens a writing goes with it: a page showing "(████" or "+████" would tell
        # the value's format
        while start > 0 and text[start - 1] in "+(":
            start -= 1
        while start > 0 and text[start - 1].isalnum() and text[start].isalnum():
            start -= 1
        while end < len(text) and text[end].isalnum() and text[end - 1].isalnum():
            end += 1
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, pos = [], 0
    for start, end in merged:
        out.append(text[pos:start])
        out.append(REDACTED)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def redact_everywhere(text: str, values: Iterable[str]) -> str:
    """Return ``text`` with every writing of each of ``values`` redacted (``redact``).

    A redaction hides values, not offsets: the same account number repeated later in the
    message, quoted in a reply, written compact or in groups, in the subject, a header or an
    attachment must not stay readable or searchable."""
    values = list(values)
    text = redact_encoded(text, values)  # a base64 block, a quoted-printable line... holding one
    spans = find(text, values)
    return redact(text, spans) if spans else text


# ---- values written encoded (core.encodings): base64, uuencode, quoted-printable, percent


def encoded_texts(text: str) -> list[str]:
    """Return the texts ``text`` holds encoded (``core.encodings.encoded_regions``: base64,
    uuencode, quoted-printable, percent-encoding, MIME encoded words, nested ones read too),
    to be scanned with the text itself: a value written only encoded is held all the same."""
    from core.encodings import encoded_regions

    return [r.decoded for r in encoded_regions(text)]


def redact_encoded(text: str, values: Iterable[str]) -> str:
    """Return ``text`` with each encoded region that holds a writing of one of ``values``
    replaced by one mark (``REDACTED``), the whole region: what is left of a base64 block
    or an escaped URL must not be decodable. A writing that runs from the text into a region
    (``617 555%200199``, a number split by a hard line break in quoted-printable) takes the
    region and the text's part of it. Writings outside every region are left to
    ``redact_everywhere``."""
    import bisect

    from core.encodings import encoded_regions

    values = list(values)
    regions = encoded_regions(text)
    spans = [(r.start, r.end) for r in regions if scan([r.decoded], values)]
    if regions:
        # the text with each region read: a writing found there maps back to the regions
        # it touches and the text between
        pieces, starts, pos = [], [], 0  # (view start, text start, region or None)
        view, length = [], 0
        for r in regions:
            for part, region in ((text[pos : r.start], None), (r.decoded, r)):
                pieces.append((length, pos if region is None else r.start, region))
                starts.append(length)
                view.append(part)
                length += len(part)
            pos = r.end
        pieces.append((length, pos, None))
        starts.append(length)
        view.append(text[pos:])

        def back(at: int, end: bool) -> tuple[int, bool]:
            v, t, region = pieces[bisect.bisect_right(starts, at - end) - 1]
            if region is None:
                return t + at - v, False
            return (region.end if end else region.start), True

        for a, b in find("".join(view), values):
            (start, in_a), (stop, in_b) = back(a, False), back(b, True)
            if in_a or in_b or any(start < r.end and r.start < stop for r in regions):
                spans.append((start, stop))
    return redact(text, spans) if spans else text
