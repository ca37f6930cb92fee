"""Parse untrusted email bytes into plain values: never crash, report what was lost.

Only the standard library's ``email`` package is used. Every decoding fallback is recorded in
``ParsedEmail.problems`` so an import report can list each message that was not decoded
exactly. Nothing here touches the database.
"""

import base64
import binascii
import email
import email.policy
import email.utils
import functools
import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.headerregistry import UnstructuredHeader
from email.message import Message

from core.names import ADDR_SPEC, ADDRESS_LIST, MAILBOX
from core.parsing.html_text import html_to_text
from core.parsing.mail_threads import id_list, normalise_id

# Charsets tried, in order, after the declared one fails; latin-1 decodes any byte string.
FALLBACK_CHARSETS = ("utf-8", "cp1252", "latin-1")
MAX_DEPTH = 12  # nested multiparts / attached messages
MAX_ATTACHMENT_TEXT = 1_000_000  # characters kept per text attachment
TEXT_ATTACHMENT_TYPES = {
    "application/json",
    "application/xml",
    "application/x-sh",
    "application/x-perl",
    "application/x-python",
    "application/pgp-signature",
}
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ADDRESS_HEADERS = ("to", "cc", "bcc")


# Header values. The standard library's header registry (``email.policy.default``) decodes
# each header into an object: four fifths of parsing a message went there (bench/scale.py's
# profile), re-parsing Content-Type at every look. Only the value's text is ever read here,
# so ``_POLICY`` answers with the registry's text computed without it where the value's shape
# makes that text certain (plain ASCII, no encoded words; simple address lists, message ids
# and dates), and with the registry's own text, remembered per value, for everything else.
# ``tests/annotate/test_header_fast_path.py`` holds the two equal, value by value and
# message by message.
_MESSAGE_ID = re.compile(rf"<{ADDR_SPEC}>")
_SPECIALS = frozenset('()<>@,:;."[]')
_ADDRESS_NAMES = frozenset(
    ("from", "to", "cc", "bcc", "sender", "reply-to")
    + ("resent-from", "resent-to", "resent-cc", "resent-bcc", "resent-sender")
)
_DATE_NAMES = frozenset(("date", "resent-date", "orig-date"))
_REGISTRY = email.policy.default.header_factory
_LINESEP = re.compile(r"\n|\r")  # as email.policy's: not str.splitlines


def _mailbox_text(m: re.Match) -> str:
    if m["bare"]:
        return m["bare"]
    name = m["atoms"] or m["quoted"]
    if not _SPECIALS.isdisjoint(name):
        name = f'"{name}"'
    return f"{name} <{m['addr']}>"


@functools.lru_cache(maxsize=4096)
def _registry_text(name: str, value: str) -> str:
    return str(_REGISTRY(name, value))


def header_text(name: str, value: str) -> str:
    """Return ``str(email.policy.default.header_factory(name, value))``, cheaply where the
    value's shape allows; raise what the registry raises."""
    key = name.lower()
    if value.isascii() and "=?" not in value:  # encoded words are the registry's to decode
        if key in _ADDRESS_NAMES:
            if ADDRESS_LIST.fullmatch(value):
                return ", ".join(_mailbox_text(m) for m in MAILBOX.finditer(value))
        elif key in _DATE_NAMES:
            if not value:
                return ""
            try:
                return email.utils.format_datetime(email.utils.parsedate_to_datetime(value))
            except ValueError:
                return value
            except Exception:
                return _registry_text(key, value)  # raises what it raised before
        elif key == "message-id":
            if _MESSAGE_ID.fullmatch(value):
                return value
        elif issubclass(_REGISTRY.registry.get(key, _REGISTRY.default_class), UnstructuredHeader):
            return value
    return _registry_text(key, value)


class _HeaderTextPolicy(email.policy.EmailPolicy):
    """``email.policy.default`` whose headers are their registry text (``header_text``)."""

    def header_fetch_parse(self, name, value):
        if hasattr(value, "name"):
            return value
        return header_text(name, "".join(_LINESEP.split(value)))


_POLICY = _HeaderTextPolicy()


class EmailParseError(ValueError):
    """The bytes are not an email message at all (empty, binary, no headers)."""


@dataclass
class ParsedAttachment:
    filename: str
    content_type: str
    size: int
    is_text: bool
    text: str = ""


@dataclass
class ParsedEmail:
    message_id: str = ""
    subject: str = ""
    from_header: str = ""
    to_header: str = ""
    cc_header: str = ""
    bcc_header: str = ""
    addresses: dict = field(default_factory=dict)
    date: datetime | None = None
    body: str = ""
    body_from_html: bool = False
    raw_headers: str = ""
    attachments: list[ParsedAttachment] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Threading (core.parsing.mail_threads): ids without angle brackets.
    in_reply_to: str = ""
    references: list[str] = field(default_factory=list)
    # The mailbox folder the message was filed in ("Inbox/Projects"), "" if none.
    folder: str = ""

    @property
    def content_hash(self) -> str:
        """Return a hash of what a reader sees, so resent copies of a message collide."""
        h = hashlib.sha256()
        for part in (self.from_header, self.to_header, self.cc_header, self.subject):
            h.update(part.strip().lower().encode("utf-8", "surrogatepass"))
            h.update(b"\x1f")
        h.update((self.date.isoformat() if self.date else "").encode())
        h.update(b"\x1f")
        h.update(_normalise_ws(self.body).encode("utf-8", "surrogatepass"))
        for att in self.attachments:
            h.update(f"\x1e{att.filename}\x1f{att.content_type}\x1f{att.size}".encode())
        return h.hexdigest()


def _normalise_ws(text: str) -> str:
    return " ".join(text.split())


def clean_text(text: str) -> str:
    """Drop NUL and other control characters that databases and browsers choke on."""
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def decode_bytes(data: bytes, declared: str | None, problems: list[str], what: str) -> str:
    """Decode bytes with the declared charset, falling back and recording it when that fails."""
    declared = (declared or "").strip().strip('"').lower()
    if declared:
        try:
            return data.decode(declared)
        except LookupError:
            problems.append(f"{what}: unknown charset {declared!r}")
        except UnicodeDecodeError:
            problems.append(f"{what}: bytes are not valid {declared}")
    for charset in FALLBACK_CHARSETS:
        try:
            text = data.decode(charset)
        except UnicodeDecodeError:
            continue
        if declared:
            problems.append(f"{what}: decoded as {charset} instead")
        elif charset != "utf-8":
            problems.append(f"{what}: no charset declared and not UTF-8, decoded as {charset}")
        return text
    raise AssertionError("latin-1 decodes every byte string")


def sanitise_filename(name: str | None, position: int) -> tuple[str, bool]:
    """Return a safe display name for an attachment and whether it had to be changed.

    Names are never used as paths, but a name like ``../../etc/passwd`` or one with control
    characters is still cut down to its last component so nothing downstream trusts it.
    """
    fallback = f"attachment-{position + 1}"
    if not name:
        return fallback, False
    cleaned = _CONTROL.sub("", name).replace("\\", "/").split("/")[-1].strip()
    cleaned = cleaned.lstrip(".").strip() or fallback
    cleaned = cleaned[:255]
    return cleaned, cleaned != name


def _header(msg: Message, name: str, problems: list[str]) -> str:
    """Return a decoded header, falling back to its raw text if the parser rejects it."""
    try:
        raw = _raw_8bit(msg, name)
        if raw is not None:
            # Raw 8-bit bytes (no encoded word): the registry would turn each byte of a
            # Latin-1 or cp1252 header into U+FFFD. Decoded as a body without a charset is.
            text = decode_bytes(raw, None, problems, f"header {name}")
            return clean_text(header_text(name, "".join(_LINESEP.split(text)))).strip()
        value = msg.get(name)
        if value is None:
            return ""
        return clean_text(str(value)).strip()
    except Exception as exc:  # the header registry raises many types on malformed input
        problems.append(f"header {name}: could not be decoded ({type(exc).__name__})")
        for key, raw in msg.raw_items():
            if key.lower() == name.lower():
                return clean_text(str(raw)).strip()
        return ""


_ESCAPED = re.compile("[\udc80-\udcff]")  # what the bytes parser makes of a byte above 127


def _raw_8bit(msg: Message, name: str) -> bytes | None:
    """The bytes of the first ``name`` header when they hold raw 8-bit bytes (the parser
    keeps them as surrogate escapes); None otherwise."""
    for key, value in msg.raw_items():
        if key.lower() == name.lower():
            if isinstance(value, str) and _ESCAPED.search(value):
                return value.encode("utf-8", "surrogateescape")
            return None
    return None


def _addresses(value: str) -> list[str]:
    if value.isascii() and "=?" not in value and ADDRESS_LIST.fullmatch(value):
        return [(m["bare"] or m["addr"]).lower() for m in MAILBOX.finditer(value)]
    pairs = email.utils.getaddresses([value]) if value else []
    return [addr.strip().lower() for _name, addr in pairs if addr and "@" in addr]


def parse_date(value: str, problems: list[str]) -> datetime | None:
    """Parse a Date header to its UTC instant (None, with a problem noted, if unreadable)."""
    if not value:
        return None
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        problems.append(f"header Date: unparseable value {value[:80]!r}")
        return None
    return utc_instant(parsed, value, problems, "header Date")


def utc_instant(parsed: datetime, value: str, problems: list[str], what: str) -> datetime | None:
    """Return ``parsed`` as its UTC instant (naive values are taken as UTC); None, noted, if
    it cannot be one."""
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    # RFC 5322 allows offsets up to +-99:59, PostgreSQL stores at most +-15:59 and refuses
    # the whole batch otherwise ("-1600" is in the SpamAssassin corpus).
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        problems.append(f"{what}: out of range {value[:80]!r}")
        return None


def _part_payload(part: Message, problems: list[str], what: str) -> bytes:
    """Return the transfer-decoded bytes of a leaf part, noting broken encodings."""
    try:
        payload = part.get_payload(decode=True)
    except Exception as exc:
        problems.append(f"{what}: payload could not be decoded ({type(exc).__name__})")
        raw = part.get_payload()
        return raw.encode("latin-1", "replace") if isinstance(raw, str) else b""
    if payload is None:
        return b""
    base64_broken = False
    for defect in getattr(part, "defects", []):
        name = type(defect).__name__
        if "Base64" in name or "Padding" in name or "Invalid" in name:
            problems.append(f"{what}: {name}")
            base64_broken = base64_broken or "Base64" in name
    if base64_broken and part.get("Content-Transfer-Encoding", "").strip().lower() == "base64":
        # The stdlib hands back the undecoded text here; keep what decodes (a truncated tail).
        raw = part.get_payload()
        if isinstance(raw, str):
            compact = "".join(raw.split())
            compact = compact[: len(compact) - len(compact) % 4]
            try:
                return base64.b64decode(compact)
            except (binascii.Error, ValueError):
                problems.append(f"{what}: base64 text could not be decoded")
    return payload


def _content_type(part: Message) -> str:
    try:
        return part.get_content_type()
    except Exception:
        return "application/octet-stream"


def _filename(part: Message, problems: list[str]) -> str | None:
    try:
        return part.get_filename()
    except Exception as exc:
        problems.append(f"attachment name could not be decoded ({type(exc).__name__})")
        return None


def _is_attachment(part: Message, ctype: str, filename: str | None) -> bool:
    disposition = (part.get("Content-Disposition") or "").split(";")[0].strip().lower()
    if disposition == "attachment" or filename:
        return True
    return not ctype.startswith("text/")


def attachment_from_bytes(
    data: bytes,
    *,
    content_type: str,
    filename: str | None,
    charset: str | None,
    position: int,
    problems: list[str],
) -> ParsedAttachment:
    """Return an attachment from its decoded bytes: a safe name, and its text when it is a
    text type (HTML converted, cut to ``MAX_ATTACHMENT_TEXT``); binary kept by size only."""
    name, changed = sanitise_filename(filename, position)
    if changed:
        problems.append(f"attachment name {filename[:80]!r} replaced by {name!r}")
    ctype = (content_type or "application/octet-stream").lower()
    is_text = ctype.startswith("text/") or ctype in TEXT_ATTACHMENT_TYPES
    text = ""
    if is_text and b"\x00" not in data[:4096]:
        text = clean_text(decode_bytes(data, charset, problems, f"attachment {name}"))
        if ctype == "text/html":
            text = html_to_text(text)
        if len(text) > MAX_ATTACHMENT_TEXT:
            problems.append(f"attachment {name}: text cut to {MAX_ATTACHMENT_TEXT} chars")
            text = text[:MAX_ATTACHMENT_TEXT]
    else:
        is_text = False
    return ParsedAttachment(
        filename=name, content_type=ctype[:255], size=len(data), is_text=is_text, text=text
    )


def nested_message_attachment(nested: "ParsedEmail", position: int) -> ParsedAttachment:
    """Return an attached message as a text attachment: its headers, body and the text of
    its own attachments (its problems are the caller's to keep)."""
    # A subject is not a path: its slashes ("07/13/2001") must not cut the name short.
    name = (nested.subject or f"message-{position + 1}").replace("/", "-").replace("\\", "-")
    name, _ = sanitise_filename(name[:250] + ".eml", position)
    text = "\n".join(
        line
        for line in (
            f"From: {nested.from_header}" if nested.from_header else "",
            f"To: {nested.to_header}" if nested.to_header else "",
            f"Date: {nested.date.isoformat()}" if nested.date else "",
            f"Subject: {nested.subject}" if nested.subject else "",
            "",
            nested.body,
        )
    ).strip()
    for att in nested.attachments:
        if att.text:
            text += f"\n\n[{att.filename}]\n{att.text}"
    return ParsedAttachment(
        filename=name,
        content_type="message/rfc822",
        size=len(text.encode("utf-8", "surrogatepass")),
        is_text=True,
        text=text[:MAX_ATTACHMENT_TEXT],
    )


class _Walker:
    """Collect body parts and attachments of one message tree."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        self.plain: list[str] = []
        self.html: list[str] = []
        self.attachments: list[ParsedAttachment] = []

    def walk(self, part: Message, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            self.problems.append(f"MIME nesting deeper than {MAX_DEPTH} levels; rest skipped")
            return
        ctype = _content_type(part)
        if ctype == "message/rfc822" or (ctype.startswith("message/") and part.is_multipart()):
            self._nested_message(part, depth)
            return
        if part.is_multipart():
            payload = part.get_payload()
            if not isinstance(payload, list):
                return
            for sub in payload:
                if isinstance(sub, Message):
                    self.walk(sub, depth + 1)
            return
        filename = _filename(part, self.problems)
        what = f"part {ctype}"
        if not _is_attachment(part, ctype, filename):
            data = _part_payload(part, self.problems, what)
            text = clean_text(decode_bytes(data, part.get_content_charset(), self.problems, what))
            (self.html if ctype == "text/html" else self.plain).append(text)
            return
        self._attachment(part, ctype, filename)

    def _attachment(self, part: Message, ctype: str, filename: str | None) -> None:
        data = _part_payload(part, self.problems, f"attachment {filename or ''}".strip())
        self.attachments.append(
            attachment_from_bytes(
                data,
                content_type=ctype,
                filename=filename,
                charset=part.get_content_charset(),
                position=len(self.attachments),
                problems=self.problems,
            )
        )

    def _nested_message(self, part: Message, depth: int) -> None:
        payload = part.get_payload()
        inner = payload[0] if isinstance(payload, list) and payload else None
        if not isinstance(inner, Message):
            self.problems.append("attached message is empty or unreadable")
            return
        nested = ParsedEmail()
        _fill(nested, inner, depth + 1)
        self.problems.extend(f"attached message: {p}" for p in nested.problems)
        self.attachments.append(nested_message_attachment(nested, len(self.attachments)))


def set_body(out: ParsedEmail, plain: list[str], html: list[str]) -> None:
    """Set the body from the text/plain parts, else from the HTML parts as text (flagged)."""
    if plain:
        out.body = "\n\n".join(t.strip("\n") for t in plain)
    elif html:
        out.body = "\n\n".join(html_to_text(t) for t in html)
        out.body_from_html = True


def set_addresses(out: ParsedEmail) -> None:
    """Set ``out.addresses`` (normalised, lower-case) from its From/To/Cc/Bcc headers."""
    from_addrs = _addresses(out.from_header)
    out.addresses = {"from": from_addrs[0] if from_addrs else ""}
    for key in _ADDRESS_HEADERS:
        out.addresses[key] = _addresses(getattr(out, f"{key}_header"))


def set_thread_headers(out: ParsedEmail, in_reply_to: str, references: str) -> None:
    """Store the ids of In-Reply-To (its first) and References on ``out``."""
    parents = id_list(in_reply_to)
    out.in_reply_to = parents[0] if parents else normalise_id(in_reply_to)
    out.references = id_list(references)


def _fill(out: ParsedEmail, msg: Message, depth: int = 0) -> None:
    problems = out.problems
    out.subject = _header(msg, "Subject", problems)
    out.from_header = _header(msg, "From", problems)
    out.to_header = _header(msg, "To", problems)
    out.cc_header = _header(msg, "Cc", problems)
    out.bcc_header = _header(msg, "Bcc", problems)
    out.message_id = _header(msg, "Message-ID", problems)[:998]
    out.date = parse_date(_header(msg, "Date", problems), problems)
    set_thread_headers(
        out, _header(msg, "In-Reply-To", problems), _header(msg, "References", problems)
    )
    set_addresses(out)
    walker = _Walker(problems)
    walker.walk(msg, depth)
    set_body(out, walker.plain, walker.html)
    out.attachments = walker.attachments


def parse_email_bytes(data: bytes) -> ParsedEmail:
    """Parse one RFC-822 message; raise EmailParseError if it is not an email at all.

    Broken charsets, encodings and headers do not raise: they are decoded as well as possible
    and listed in ``problems``.
    """
    if not data or not data.strip():
        raise EmailParseError("empty message")
    if b"\x00" in data[:8192]:
        raise EmailParseError("binary data (NUL bytes), not an RFC-822 message")
    msg = email.message_from_bytes(data, policy=_POLICY)
    if not msg.keys():
        raise EmailParseError("no RFC-822 header lines found")
    if not any(k.lower() in {"from", "to", "subject", "date", "message-id"} for k in msg):
        raise EmailParseError("none of From, To, Subject, Date or Message-ID is present")
    out = ParsedEmail()
    head, _sep, _rest = data.partition(b"\n\n")
    if not _sep:
        head, _sep, _rest = data.partition(b"\r\n\r\n")
    out.raw_headers = clean_text(decode_bytes(head, "utf-8", [], "headers"))[:200_000]
    _fill(out, msg)
    for defect in msg.defects:
        out.problems.append(f"message: {type(defect).__name__}")
    # Keep the report readable: one line per distinct problem.
    out.problems = list(dict.fromkeys(out.problems))
    return out
