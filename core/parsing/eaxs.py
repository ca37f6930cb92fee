"""Read EAXS, the Email Account XML Schema (TOMES / the North Carolina State Archives'
preservation format for one email account): its folders and their messages.

The file is read as a stream: only the message being read is held as elements, so memory
follows the largest message, not the account. An ``Account`` holds ``Folder`` elements, each
with a ``Name``, ``Message`` elements and sub-``Folder``s; a ``Message`` has ``MessageId``,
``OrigDate``, ``From``/``To``/``Cc``/``Bcc``, ``Subject``, ``InReplyTo``, ``References``
and either a ``SingleBody`` or a ``MultiBody`` (of ``SingleBody``s and ``MultiBody``s);
a ``SingleBody`` holds ``BodyContent`` (inline, maybe base64), ``ExtBodyContent`` (a file
beside the XML: never followed, its name and path are recorded) or ``ChildMessage`` (an
attached message). Namespaces (v1 and v2 of the schema) are ignored: elements are matched
by their local names. DTDs are refused, so no entity can expand or reach outside the file.
"""

import base64
import binascii
import quopri
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import datetime
from xml.parsers import expat

from core.parsing import Issue
from core.parsing.emails import (
    MAX_DEPTH,
    ParsedAttachment,
    ParsedEmail,
    attachment_from_bytes,
    clean_text,
    decode_bytes,
    nested_message_attachment,
    parse_date,
    sanitise_filename,
    set_addresses,
    set_body,
    utc_instant,
)
from core.parsing.items import EmailItem, _docid, _mb, join_folder
from core.parsing.mail_threads import id_list, normalise_id

MAX_FOLDER_DEPTH = 64
_FEED_CHUNK = 256 * 1024
_ROOT = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?Account[\s>/]")


class EaxsError(ValueError):
    """The XML is refused whole (a DTD, nesting too deep)."""


def looks_like_eaxs(head: bytes) -> bool:
    """Return whether the first bytes of an XML file open an EAXS ``Account``."""
    return _ROOT.search(head) is not None


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _child(el: ET.Element, name: str) -> ET.Element | None:
    for c in el:
        if _local(c.tag) == name:
            return c
    return None


def _children(el: ET.Element, name: str) -> list[ET.Element]:
    return [c for c in el if _local(c.tag) == name]


def _text(el: ET.Element | None) -> str:
    if el is None:
        return ""
    return clean_text("".join(el.itertext())).strip()


def _addresses_text(el: ET.Element | None) -> str:
    """Return an address header's text: its ``Mailbox``/``Group`` children or its text."""
    if el is None:
        return ""
    parts = [_text(c) for c in el if _text(c)]
    return ", ".join(parts) if parts else _text(el)


class _Target:
    """An ElementTree parser target that keeps only the message being read."""

    def __init__(self, parser_ref: list):
        self.parser_ref = parser_ref
        self.folders: list[str] = []
        self.depth_in_message = 0
        self.builder: ET.TreeBuilder | None = None
        self.in_folder_name = False
        self.name_text: list[str] = []
        self.done: list[tuple[ET.Element, str, str]] = []  # (message, folder, where)
        self.start_where = ""
        self.problems: list[str] = []
        self.stack: list[str] = []

    def _where(self) -> str:
        p = self.parser_ref[0]
        return f"line {p.CurrentLineNumber} (offset {p.CurrentByteIndex})"

    def start(self, tag, attrib):
        name = _local(tag)
        if self.builder is not None:
            self.builder.start(tag, attrib)
            self.depth_in_message += 1
        elif name == "Message" and self.stack and self.stack[-1] == "Folder":
            self.builder = ET.TreeBuilder()
            self.builder.start(tag, attrib)
            self.depth_in_message = 1
            self.start_where = self._where()
        elif name == "Folder":
            if len(self.folders) >= MAX_FOLDER_DEPTH:
                raise EaxsError(f"folders nested deeper than {MAX_FOLDER_DEPTH} levels")
            self.folders.append("")
        elif name == "Name" and self.stack and self.stack[-1] == "Folder":
            self.in_folder_name = True
            self.name_text = []
        self.stack.append(name)
        if len(self.stack) > 4 * MAX_FOLDER_DEPTH:
            raise EaxsError("elements nested deeper than any EAXS account holds")

    def end(self, tag):
        name = _local(tag)
        self.stack.pop()
        if self.builder is not None:
            self.builder.end(tag)
            self.depth_in_message -= 1
            if self.depth_in_message == 0:
                message = self.builder.close()
                self.builder = None
                folder = "/".join(f for f in self.folders if f)
                self.done.append((message, folder, self.start_where))
            return
        if name == "Name" and self.in_folder_name:
            self.in_folder_name = False
            if self.folders:
                cleaned = clean_text("".join(self.name_text)).strip().replace("/", "-")
                self.folders[-1] = cleaned[:200]
        elif name == "Folder" and self.folders:
            self.folders.pop()

    def data(self, text):
        if self.builder is not None:
            self.builder.data(text)
        elif self.in_folder_name:
            self.name_text.append(text)

    def close(self):
        return None


def _refuse_dtd(*_args):
    raise EaxsError("the XML declares a DTD; DTDs are not read (entities could expand)")


def _messages(data: bytes, label: str) -> Iterator[tuple[ET.Element, str, str] | Issue]:
    # expat directly (ElementTree's C parser hides it): positions for every report, and
    # defusedxml's guard by hand: a DTD, an entity declaration or an external reference
    # raises before expat can expand or fetch anything.
    raw = expat.ParserCreate(namespace_separator="}")
    holder = [raw]
    target = _Target(holder)
    raw.StartElementHandler = target.start
    raw.EndElementHandler = target.end
    raw.CharacterDataHandler = target.data
    raw.StartDoctypeDeclHandler = _refuse_dtd
    raw.EntityDeclHandler = _refuse_dtd
    raw.ExternalEntityRefHandler = _refuse_dtd
    raw.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        for start in range(0, len(data), _FEED_CHUNK):
            raw.Parse(data[start : start + _FEED_CHUNK], False)
            yield from target.done
            target.done = []
        raw.Parse(b"", True)
        yield from target.done
    except EaxsError as exc:
        yield from target.done
        yield Issue(label, target._where(), f"{exc}; the rest of the file was not read")
    except expat.ExpatError as exc:
        yield from target.done
        where = f"line {exc.lineno} column {exc.offset}"
        reason = f"not well-formed XML ({expat.ErrorString(exc.code)}); the rest was not read"
        yield Issue(label, where, reason)


def _decode(content: str, encoding: str, problems: list[str], what: str) -> bytes:
    encoding = encoding.strip().lower()
    raw = content.encode("utf-8", "surrogatepass")
    if encoding == "base64":
        compact = re.sub(rb"\s+", b"", raw)
        try:
            return base64.b64decode(compact, validate=False)
        except (binascii.Error, ValueError):
            problems.append(f"{what}: base64 content could not be decoded")
            cut = compact[: len(compact) - len(compact) % 4]
            try:
                return base64.b64decode(cut)
            except (binascii.Error, ValueError):
                return b""
    if encoding == "quoted-printable":
        return quopri.decodestring(raw)
    return raw


class _Bodies:
    def __init__(self, out: ParsedEmail):
        self.out = out
        self.plain: list[str] = []
        self.html: list[str] = []

    def walk(self, el: ET.Element, depth: int) -> None:
        if depth > MAX_DEPTH:
            self.out.problems.append(f"MIME nesting deeper than {MAX_DEPTH} levels; rest skipped")
            return
        for part in el:
            kind = _local(part.tag)
            if kind == "MultiBody":
                self.walk(part, depth + 1)
            elif kind == "SingleBody":
                self.single(part, depth)

    def single(self, part: ET.Element, depth: int) -> None:
        problems = self.out.problems
        ctype = (_text(_child(part, "ContentType")) or "text/plain").lower()[:255]
        charset = _text(_child(part, "Charset"))
        filename = _text(_child(part, "DispositionFileName")) or _text(_child(part, "ContentName"))
        disposition = _text(_child(part, "Disposition")).lower()
        position = len(self.out.attachments)
        child = _child(part, "ChildMessage")
        if child is not None:
            nested = ParsedEmail()
            fill_message(nested, child, depth + 1)
            problems.extend(f"attached message: {p}" for p in nested.problems)
            self.out.attachments.append(nested_message_attachment(nested, position))
            return
        ext = _child(part, "ExtBodyContent")
        if ext is not None:
            name, _ = sanitise_filename(filename, position)
            rel = _text(_child(ext, "RelPath"))[:200]
            problems.append(f"attachment {name}: stored outside the XML ({rel!r}), not read")
            self.out.attachments.append(ParsedAttachment(name, ctype, 0, False, ""))
            return
        body = _child(part, "BodyContent")
        content = _text(_child(body, "Content")) if body is not None else ""
        encoding = _text(_child(body, "TransferEncoding")) if body is not None else ""
        encoding = encoding or _text(_child(part, "TransferEncoding"))
        what = f"part {ctype}"
        data = _decode(content, encoding, problems, what)
        is_attachment = disposition == "attachment" or bool(filename)
        if not is_attachment and ctype.startswith("text/"):
            text = clean_text(decode_bytes(data, charset, problems, what))
            (self.html if ctype == "text/html" else self.plain).append(text)
            return
        self.out.attachments.append(
            attachment_from_bytes(
                data,
                content_type=ctype,
                filename=filename,
                charset=charset,
                position=position,
                problems=problems,
            )
        )


def _date(value: str, problems: list[str]) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return parse_date(value, problems)
    return utc_instant(parsed, value, problems, "OrigDate")


def fill_message(out: ParsedEmail, el: ET.Element, depth: int = 0) -> None:
    """Fill ``out`` from an EAXS ``Message`` (or ``ChildMessage``) element."""
    problems = out.problems
    out.message_id = _text(_child(el, "MessageId"))[:998]
    out.subject = _text(_child(el, "Subject"))
    out.from_header = _addresses_text(_child(el, "From")) or _addresses_text(_child(el, "Sender"))
    for key, name in (("to", "To"), ("cc", "Cc"), ("bcc", "Bcc")):
        setattr(out, f"{key}_header", _addresses_text(_child(el, name)))
    out.date = _date(_text(_child(el, "OrigDate")), problems)
    parents = [normalise_id(_text(p)) for p in _children(el, "InReplyTo")]
    parents = [p for p in parents if p]
    references: list[str] = []
    for ref in _children(el, "References"):
        text = _text(ref)
        references.extend(id_list(text) or ([normalise_id(text)] if normalise_id(text) else []))
    out.in_reply_to = parents[0] if parents else ""
    out.references = list(dict.fromkeys(references))[:50]
    set_addresses(out)
    headers = [
        f"{_text(_child(h, 'Name'))}: {_text(_child(h, 'Value'))}" for h in _children(el, "Header")
    ]
    out.raw_headers = "\n".join(headers)[:200_000]
    bodies = _Bodies(out)
    bodies.walk(el, depth)
    set_body(out, bodies.plain, bodies.html)
    for incomplete in _children(el, "Incomplete"):
        problems.append(f"EAXS marks the message incomplete: {_text(incomplete)[:200]}")


def iter_eaxs_bytes(data: bytes, label: str, limits, folder: str = ""):
    """Yield ``EmailItem`` or ``Issue`` for every message of an EAXS account file."""
    n = 0
    for item in _messages(data, label):
        if isinstance(item, Issue):
            yield item
            continue
        element, inner, where = item
        n += 1
        local_id = _text(_child(element, "LocalId"))
        docid = _docid(f"{label}#{local_id or n}")
        path = join_folder(folder, inner)
        if limits.known is not None and limits.known(docid):
            yield EmailItem(docid, label, where, None, path)
            continue
        size = sum(len(t) for t in element.itertext())
        if size > limits.max_message_bytes:
            yield Issue(label, where, f"message is {_mb(size)}, over the message limit")
            continue
        out = ParsedEmail()
        try:
            fill_message(out, element)
        except Exception as exc:  # hostile content: report the message, keep reading
            yield Issue(label, where, f"unreadable message ({type(exc).__name__}: {exc})"[:300])
            continue
        if not (out.subject or out.body or out.from_header or out.message_id):
            yield Issue(label, where, "message has none of MessageId, From, Subject or a body")
            continue
        out.problems = list(dict.fromkeys(out.problems))
        out.folder = path
        yield EmailItem(docid, label, where, out, path)
