"""Text written in an encoding: where a text holds another text encoded, and what it says.
Pure (standard library only: no Django, no app imports).

A redacted value must stay hidden when a message holds it encoded: a bounce quoting a raw MIME
part in base64, an inline uuencoded block, quoted-printable text (``617=20555=200199``, soft
line breaks ``=\\n``), a percent-encoded link (``617%20555%200199``), a MIME encoded word in a
quoted header (``=?utf-8?B?...?=``). ``encoded_regions`` finds every such stretch of a text
and decodes it; ``core.writings`` looks for a value's writings in the decoded texts
(``encoded_texts``) and marks out a region that holds one (``redact_encoded``).

What counts as a **region** (``Region(start, end, decoded)``, offsets into the text):

- **uuencode**: a ``begin NNN name`` line to its ``end`` line (or, without one, to the last
  line that looks uuencoded), read line by line with ``binascii.a2b_uu`` (bad lines skipped).
- **base64 blocks**: two or more consecutive lines of the base64 alphabet, each 16 characters
  or more, optionally quoted (``> ``; the quote markers are part of the region), with a
  shorter last line where it completes the block (MIME's last line); and single runs of 40
  or more base64 characters (URL-safe ones too), or of 16 or more ending in its padding
  (``NjE3NTU1MDE5OQ==``), that hold both upper and lower case letters.
  Base64 is taken only where the decoded bytes are **mostly printable text** (UTF-8, else
  Latin-1 mostly ASCII): a PGP signature, a key, a hash or a long word decodes to binary
  noise and is no region.
- **MIME encoded words** (RFC 2047): ``=?charset?B?...?=`` and ``=?charset?Q?...?=``, and
  runs of them.
- **quoted-printable**: consecutive lines holding a hex escape (``=XX``, other than one for a
  control character) or ending in a soft line break (``=``), and the line a soft break
  continues; decoded with ``quopri``. Lines that are base64 (padding ``=``) or a PGP armour
  checksum (``=AbCd``) are none; a URL's parameter (``?to=ACME``, ``&n=20``), a row of ``=``
  and a lone byte beyond ASCII inside a word (``Modified=E0824ED``) hold no escape.
- **percent-encoding**: a run of non-blank characters (a URL, a path, a word) holding a
  ``%XX`` escape; decoded with ``urllib.parse.unquote``.

Regions never overlap and come sorted by start. Where two candidates overlap, the one kept
is the first of: uuencode, base64 blocks, encoded words, quoted-printable, base64 runs,
percent-encoding (a base64 run or a percent escape inside a quoted-printable line is read in
that line's decoded text); a base64 block that decodes to binary is no region, and none of
its lines is read alone. ``decoded`` holds every reading of the region: the text it encodes
and, where that text holds encodings in turn (base64 of a message quoting a base64 part),
their decoded texts, each after a line break, down to ``MAX_DEPTH`` levels. The encoded text
itself stays in ``decoded`` too, so a value written literally inside it is still read.

Most mail holds none of this: a text without ``=``, ``%``, ``begin `` or a run of 14 base64
characters is answered at once; otherwise the candidates are found by byte and regular
expression searches (in C) and only they are looked at in Python. The 39 messages of
tests/fixtures/emails/sample cost under 0.1 ms each (median, raw or parsed), about 1 ms at
most.
"""

import base64
import binascii
import quopri
import re
from typing import NamedTuple
from urllib.parse import unquote

MAX_DEPTH = 3  # levels of encoding read: an encoding, one inside it, and one inside that


class Region(NamedTuple):
    start: int
    end: int
    decoded: str


# Quote markers of a reply at a line's start: "> ", ">> ", "> > ", indented or not.
_QUOTE = r"(?:[ \t]*>)*[ \t]*"

# base64 characters as "a", others as " ": runs of them found by a byte search (C)
_B64_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_MASK = bytes(ord("a") if b in _B64_CHARS else ord(" ") for b in range(256))
_URLSAFE_MASK = bytes(ord("a") if b in _B64_CHARS + b"-_" else ord(" ") for b in range(256))
# a line of base64 (group 1: its quote markers, 2: the base64), \r of a CRLF text left out
_B64_LINE = re.compile(rf"^({_QUOTE})([A-Za-z0-9+/]{{16,}}={{0,2}})[ \t]*(?=\r?$)", re.M)
_B64_TAIL = re.compile(rf"({_QUOTE})([A-Za-z0-9+/]+={{0,2}})[ \t]*(?=\r?$)", re.M)
_B64_ONLY = re.compile(rf"{_QUOTE}[A-Za-z0-9+/]+={{0,2}}[ \t]*\r?")
_A_RUN = re.compile(rb"a*")
_UU_BEGIN = re.compile(r"begin [0-7]{3,4} [^\r\n]*")
_ENCODED_WORD = r"=\?[A-Za-z0-9_.:-]+(?:\*[A-Za-z-]+)?\?([BbQq])\?([^?\s]*)\?="
_ENCODED_WORDS = re.compile(rf"{_ENCODED_WORD}(?:\s+{_ENCODED_WORD})*")
_ONE_ENCODED_WORD = re.compile(_ENCODED_WORD)
# upper case, as RFC 2045 writes them; not in a row of "=" ("_===6628399===_", "=====")
_QP_ESCAPE = re.compile(r"(?<!=)=([0-9A-F]{2})")
# a soft line break; not an encoded word's end "?=", nor a row of "="
_QP_SOFT = re.compile(r"(?<![?=])=[ \t]*\r?$", re.M)
# a line ending in base64 and its padding: "=" no soft line break
_B64_END = re.compile(r"(?<![A-Za-z0-9+/])([A-Za-z0-9+/]{14,}={1,2})[ \t]*\r?\Z")
_QP_HINT = re.compile(r"=(?:[0-9A-F]{2}|[ \t]*\r?$)", re.M)
_PGP_CHECKSUM = re.compile(rf"{_QUOTE}=[A-Za-z0-9+/]{{4}}[ \t]*\r?")
# a URL's query parameter, "?to=" or "&amount=": its "=" is no escape ("?to=ACME", "&n=20")
_PARAM = re.compile(r"[?&;][A-Za-z_][\w.\-\[\]]{0,40}=")
_TOKEN_END = re.compile(r"[^\s<>\"]*")  # a URL, a path, a word: up to a blank or <>"
_PERCENT_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
# control bytes no text escapes (tab, line feed and carriage return are text)
_CONTROL_BYTES = frozenset(set(range(32)) - {9, 10, 13} | {127})


def encoded_regions(text: str) -> list[Region]:
    """Return every stretch of ``text`` that encodes another text, with what it says
    (module docstring: the encodings read, when base64 is taken, nesting)."""
    return _regions(text, 1)


def _regions(text: str, depth: int) -> list[Region]:
    if not text:
        return []
    ascii_text = text.encode("ascii", "replace")  # one byte a character
    mask = ascii_text.translate(_B64_MASK)
    has_b64 = b"a" * 14 in mask  # the shortest run read: 14 and its padding
    if not ("=" in text or "%" in text or "begin " in text or has_b64):
        return []  # most mail
    found: list[tuple[int, int, str | None]] = []
    # the surest first; a quoted-printable line holding a base64 run or a percent escape is
    # read as a whole (the run is then found in its decoded text)
    if "begin " in text:
        _keep(found, _uuencoded(text))
    if has_b64:
        _keep(found, _base64_blocks(text, mask))
    if "=?" in text:
        _keep(found, _encoded_words(text))
    if "=" in text:
        _keep(found, _quoted_printable(text))
    if has_b64:
        _keep(found, _base64_runs(text, ascii_text.translate(_URLSAFE_MASK)))
    if "%" in text:
        _keep(found, _percent(text))
    out = []
    for start, end, decoded in sorted(found):
        if decoded is None:
            continue  # base64 of binary data: no text
        if depth < MAX_DEPTH:
            inner = _regions(decoded, depth + 1)
            decoded = "".join([decoded, *("\n" + r.decoded for r in inner)])
        out.append(Region(start, end, decoded))
    return out


def _keep(found: list[tuple[int, int, str | None]], candidates) -> None:
    """Add the candidates that overlap none already found."""
    for start, end, decoded in candidates:
        if end > start and not any(start < e and s < end for s, e, _d in found):
            found.append((start, end, decoded))


def _line(text: str, pos: int) -> tuple[int, int]:
    """The ``(start, end)`` of the line holding ``pos``, its line break (LF or CRLF) left
    out."""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    end = len(text) if end < 0 else end
    if end > start and text[end - 1] == "\r":
        end -= 1
    return start, end


def _next_line(text: str, end: int) -> int | None:
    """Where the line after the one ending at ``end`` starts (None at the text's end)."""
    nl = text.find("\n", end)
    return None if nl < 0 else nl + 1


# ---- reading bytes as text --------------------------------------------------------------


def _as_text(data: bytes) -> str:
    """Bytes read as UTF-8 where they are, else as Latin-1 (every byte a character)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _readable(data: bytes | None) -> str | None:
    """The text ``data`` holds, or None when it is no text (binary: a signature, a key,
    compressed data, or a token that only looks like base64). Text here is 95% printable
    (line breaks and tabs count) and 60% letters, digits and blanks (random printable bytes
    are about half); read as Latin-1, it must also be 80% ASCII (a European message in
    Latin-1 is; random bytes are half ASCII)."""
    if data is None or len(data) < 4:
        return None
    text = _as_text(data)
    printable = sum(1 for c in text if c.isprintable() or c in "\t\n\r")
    wordy = sum(1 for c in text if c.isalnum() or c.isspace())
    if printable < 0.95 * len(text) or wordy < 0.6 * len(text):
        return None
    latin1 = not text.isascii() and len(text) == len(data)
    if latin1 and sum(1 for b in data if b < 128) < 0.8 * len(data):
        return None
    return text


def _b64decode(chars: str) -> bytes | None:
    chars = chars.rstrip("=")
    if len(chars) % 4 == 1:
        chars = chars[:-1]
    chars = chars.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(chars + "=" * (-len(chars) % 4))
    except (binascii.Error, ValueError):
        return None


# ---- the encodings ----------------------------------------------------------------------


def _uuencoded(text: str):
    """``begin NNN name`` to ``end`` (or to the last line that looks uuencoded)."""
    for m in _UU_BEGIN.finditer(text):
        prefix = text[_line(text, m.start())[0] : m.start()]
        if not re.fullmatch(_QUOTE, prefix):
            continue  # "begin 644 x" within a line is no uuencode
        data, end = [], m.end()
        pos = _next_line(text, m.end())
        while pos is not None:
            s, e = _line(text, pos)
            line = text[s:e]
            if prefix:  # a quoted block: each line quoted the same way
                if not line.startswith(prefix):
                    break
                line = line[len(prefix) :]
            if line.rstrip() == "end":
                end = e
                break
            if not line or not all(" " <= c <= "`" for c in line):
                break
            data.append(_uu_line(line))
            end = e
            pos = _next_line(text, e)
        if end > m.end():
            yield m.start() - len(prefix), end, _as_text(b"".join(data))


def _uu_line(line: str) -> bytes:
    try:
        return binascii.a2b_uu(line)
    except binascii.Error:
        # a line with trailing garbage (some encoders pad it): read as many characters as
        # its length character says
        n = (((ord(line[0]) - 32) & 63) * 4 + 5) // 3
        try:
            return binascii.a2b_uu(line[:n])
        except binascii.Error:
            return b""


def _runs(mask: bytes, length: int):
    """The ``(start, end)`` of each run of ``length`` or more "a" in a mask (a byte search,
    then the run's end)."""
    needle = b"a" * length
    pos = mask.find(needle)
    while pos >= 0:
        end = _A_RUN.match(mask, pos).end()
        yield pos, end
        pos = mask.find(needle, end)


def _base64_blocks(text: str, mask: bytes):
    """Runs of two or more base64 lines of 16 characters or more, up to a padded one; a
    short last line joins the block when the lines before it are of one length (MIME's
    fixed wrapping: its last line)."""
    lines, done = [], -1
    for pos, _end in _runs(mask, 16):
        if pos < done:
            continue
        s, done = _line(text, pos)
        if m := _B64_LINE.match(text, s):
            lines.append(m)
    runs: list[list[re.Match]] = []
    for m in lines:
        last = runs[-1][-1] if runs else None
        if (
            last is not None
            and not last.group(2).endswith("=")
            and _next_line(text, last.end()) == m.start()
        ):
            runs[-1].append(m)
        else:
            runs.append([m])
    for run in runs:
        options = [run] if len(run) >= 2 else []
        nxt = _next_line(text, run[-1].end())
        if nxt is not None and not run[-1].group(2).endswith("="):
            tail = _B64_TAIL.match(text, nxt)
            fixed = tail is not None and len({len(r.group(2)) for r in run}) == 1
            if fixed and (len(run) >= 2 or len(run[0].group(2)) >= 40):
                options.insert(0, [*run, tail])
        if not options:
            continue
        for block in options:
            readable = _readable(_b64decode("".join(m.group(2) for m in block)))
            if readable is not None:
                yield block[0].start(), block[-1].end(2), readable
                break
        else:  # binary (an attachment, a signature): none of its lines is read alone
            yield run[0].start(), options[0][-1].end(2), None


def _base64_runs(text: str, mask: bytes):
    """Single runs of 40 base64 characters or more (URL-safe ones too), or of 16 or more
    ending in padding (``NjE3NTU1MDE5OQ==``: a short text), with their padding."""
    for start, end in _runs(mask, 14):
        after = text[end : end + 3]
        pad = len(after) - len(after.lstrip("="))
        if pad > 2:
            continue
        # a URL's path before the base64 ("/t/QWNj..."): read from after a slash too
        cuts = [start] + [i + 1 for i in range(start, end) if text[i] == "/"][:3]
        for cut in cuts:
            got = _base64_run(text[cut:end], pad)
            if got is not None:
                yield cut, end + pad, got
                break


def _base64_run(body: str, pad: int) -> str | None:
    short = len(body) < 40
    if short and (pad == 0 or (len(body) + pad) % 4 or len(body) + pad < 16):
        return None
    if body.isupper() or body.islower() or body.isdigit():
        return None  # a hash, a long word, a number: base64 of text mixes cases
    readable = _readable(_b64decode(body))
    if readable is None or short and not _plain(_b64decode(body)):
        return None
    return readable


def _plain(data: bytes) -> bool:
    """A short text read from base64: UTF-8 and every character printable (a few random
    bytes often pass the shares of ``_readable``, seldom this)."""
    try:
        return data.decode("utf-8").isprintable()
    except UnicodeDecodeError:
        return False


def _encoded_words(text: str):
    """MIME encoded words (RFC 2047), a run of them read as one text."""
    for m in _ENCODED_WORDS.finditer(text):
        parts = []
        for w in _ONE_ENCODED_WORD.finditer(m.group()):
            if w.group(1) in "Bb":
                parts.append(_b64decode(w.group(2)) or b"")
            else:
                parts.append(quopri.decodestring(w.group(2).encode("utf-8"), header=True))
        yield m.start(), m.end(), _as_text(b"".join(parts))


def _escapes(line: str, m: re.Match, lone: bool = True) -> bool:
    """Whether a ``=XX`` (or ``%XX``) is an escape: of a text character (no control), or of a
    byte of a character beyond ASCII: one of a row of escapes (UTF-8, ``=C3=A9``) or, where
    ``lone``, one alone at a word's end (Latin-1, ``Caf=E9 ``; not ``Modified=E0824E``)."""
    byte = int(m.group(1), 16)
    if byte < 0x80:
        return byte not in _CONTROL_BYTES
    after = line[m.end() : m.end() + 1]
    return after == line[m.start()] or lone and not after.isalnum()


def _qp_line(line: str) -> tuple[bool, bool]:
    """Whether a line holds a quoted-printable escape, and whether it ends in a soft line
    break."""
    if _B64_ONLY.fullmatch(line) or _PGP_CHECKSUM.fullmatch(line):
        return False, False  # base64 (its padding), a PGP armour's checksum
    params = {m.end() - 1 for m in _PARAM.finditer(line)}
    escape = any(
        (m.start() not in params or line.startswith(('=3D"', "=3D'"), m.start()))
        and _escapes(line, m)
        for m in _QP_ESCAPE.finditer(line)
    )
    soft = _QP_SOFT.search(line) is not None
    if soft and (b64 := _B64_END.search(line)) and len(b64.group(1)) % 4 == 0:
        soft = False
    return escape, soft


def _quoted_printable(text: str):
    """Consecutive lines holding an escape or ending in a soft line break, with the line a
    soft break continues."""
    stretches: list[list[int]] = []  # [start, end] of each, in order
    seen = -1
    for hint in _QP_HINT.finditer(text):
        if hint.start() < seen:
            continue  # a line already looked at
        s, e = _line(text, hint.start())
        seen = e
        escape, soft = _qp_line(text[s:e])
        if not (escape or soft):
            continue
        while soft and (nxt := _next_line(text, e)) is not None:
            e = _line(text, nxt)[1]  # the line a soft break continues, and so on
            seen = e
            soft = _qp_line(text[nxt:e])[1]
        if stretches and (
            s <= stretches[-1][1] or _next_line(text, stretches[-1][1]) == s
        ):  # the line after the stretch (or one it already holds)
            stretches[-1][1] = max(e, stretches[-1][1])
        else:
            stretches.append([s, e])
    for s, e in stretches:
        yield s, e, _qp_decode(text[s:e])


def _qp_decode(stretch: str) -> str:
    """The text of quoted-printable lines, their quote markers (the first line's) taken off
    each first."""
    quote = re.match(_QUOTE, stretch).group()
    lines = stretch.split("\n")
    if ">" in quote:
        lines = [x[len(quote) :] if x.startswith(quote) else x for x in lines]
    return _as_text(quopri.decodestring("\n".join(lines).encode("utf-8")))


def _percent(text: str):
    """Runs of non-blank characters holding a ``%XX`` escape (of an ASCII character, or a row
    of them: UTF-8)."""
    done = -1
    for escape in _PERCENT_ESCAPE.finditer(text):
        if escape.start() < done:
            continue  # in a token already read
        start = escape.start()
        while start > 0 and not (text[start - 1].isspace() or text[start - 1] in '<>"'):
            start -= 1
        done = end = _TOKEN_END.match(text, escape.start()).end()
        while end > escape.end() and text[end - 1] in ".,;:!?'":
            end -= 1  # the sentence's punctuation after a URL
        token = text[start:end]
        if any(_escapes(token, e, lone=False) for e in _PERCENT_ESCAPE.finditer(token)):
            try:
                yield start, end, unquote(token, errors="strict")
            except UnicodeDecodeError:
                yield start, end, unquote(token, encoding="latin-1")
