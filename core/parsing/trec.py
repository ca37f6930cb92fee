"""Parse SMART collections (Cranfield, CACM), SMART queries, TREC topics and qrels files."""

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from core.parsing import MAX_DOCID_LENGTH, MAX_TOPIC_NUMBER_LENGTH, Issue, id_problem
from core.parsing.emails import clean_text

SMART_DOC_FIELDS = set("TAWBNXKC")
SMART_QUERY_FIELDS = set("WANTB")
_SMART_TAG = re.compile(r"^\.([A-Z])(?:\s+(.*))?$")


@dataclass
class SmartRecord:
    id: str
    line: int
    fields: dict[str, str] = field(default_factory=dict)


def decode_text_file(data: bytes) -> str:
    """Decode a text file as UTF-8, falling back to Latin-1 (CACM is Latin-1). A UTF-8
    byte-order mark (Windows editors write one) is dropped: left in, it would become part of
    the first topic number or document id."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _binary(data: bytes, label: str) -> Issue | None:
    head = data[:8192]
    if b"\x00" not in head:
        return None
    if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) or _utf16_like(head):
        return Issue(
            label,
            "",
            "UTF-16 text (what Windows Notepad saves as “Unicode”), not UTF-8: save the file "
            "as UTF-8 and import it again",
        )
    return Issue(label, "", "binary data (NUL bytes), not a text file")


def _utf16_like(head: bytes) -> bool:
    """Whether ``head`` looks like UTF-16 without a byte-order mark: every other byte NUL
    (ASCII text in UTF-16), in its first 64 bytes."""
    sample = head[:64]
    return len(sample) >= 8 and (set(sample[1::2]) == {0} or set(sample[0::2]) == {0})


_FILE_LINES = re.compile(r"\r\n|\r|\n")


def iter_smart(data: bytes, label: str, allowed: set[str] = SMART_DOC_FIELDS):
    """Yield ``SmartRecord`` for each ``.I`` record, ``Issue`` for each malformed part."""
    if (issue := _binary(data, label)) is not None:
        yield issue
        return
    text = decode_text_file(data)
    current: SmartRecord | None = None
    tag: str | None = None
    seen: set[str] = set()
    buf: list[str] = []

    def flush():
        if current is not None and tag is not None:
            value = "\n".join(buf).strip()
            if tag in current.fields:
                current.fields[tag] += "\n" + value
            else:
                current.fields[tag] = value

    records: list[SmartRecord] = []
    # Lines end at \n, \r\n or \r only: str.splitlines also ends one at a U+2028 or a
    # U+0085 inside an abstract, so the line numbers errors name came out wrong.
    for line_no, line in enumerate(_FILE_LINES.split(text.removesuffix("\n")), 1):
        match = _SMART_TAG.match(line.rstrip())
        if match:
            letter, rest = match.group(1), (match.group(2) or "").strip()
            flush()
            buf = []
            if letter == "I":
                if not rest:
                    yield Issue(label, f"line {line_no}", ".I without an id")
                    current, tag = None, None
                    continue
                current = SmartRecord(id=rest.split()[0], line=line_no)
                records.append(current)
                tag = None
                continue
            if current is None:
                yield Issue(label, f"line {line_no}", f".{letter} before the first .I record")
                continue
            if letter not in allowed:
                yield Issue(
                    label, f"line {line_no}", f"unknown field .{letter}; ignored", "skipped"
                )
                tag = None
                continue
            tag = letter
            if rest:
                buf.append(rest)
            continue
        if current is None:
            if line.strip():
                yield Issue(label, f"line {line_no}", "text before the first .I record")
            continue
        if tag is not None:
            buf.append(line)
    flush()
    if not records:
        yield Issue(label, "", "no .I records found: not a SMART file")
        return
    for record in records:
        if (problem := id_problem(record.id, "record id", MAX_DOCID_LENGTH)) is not None:
            yield Issue(label, f"line {record.line}", problem)
            continue
        if record.id in seen:
            yield Issue(label, f"line {record.line}", f"duplicate record id {record.id!r}")
            continue
        seen.add(record.id)
        record.fields = {k: clean_text(v) for k, v in record.fields.items()}
        yield record


_TOPIC_STARTS = {"trec": re.compile(rb"<top>", re.I), "smart": re.compile(rb"^\.I\b", re.M)}


def topic_count(data: bytes, fmt: str) -> int:
    """Return how many topics a file holds at most (``<top>`` tags, or ``.I`` lines of SMART
    queries), counted on the bytes before anything is parsed, so an oversized file is refused
    in the time a regular expression takes to scan it."""
    return sum(1 for _ in _TOPIC_STARTS[fmt].finditer(data))


@dataclass
class TopicRecord:
    number: str
    title: str
    description: str = ""
    narrative: str = ""
    line: int = 0


def normalise_number(number: str) -> str:
    """Return a topic number without leading zeros when it is numeric ("007" -> "7")."""
    number = number.strip()
    return str(int(number)) if number.isascii() and number.isdigit() else number


def iter_smart_queries(data: bytes, label: str, *, number_by: str = "id"):
    """Yield ``TopicRecord`` for each SMART query.

    ``number_by="order"`` numbers queries 1..n in file order (Cranfield's qrels do this,
    because the ids in ``cran.qry`` are not consecutive); ``"id"`` keeps the ``.I`` id.
    """
    if number_by not in ("id", "order"):
        raise ValueError("number_by must be 'id' or 'order'")
    n = 0
    for item in iter_smart(data, label, SMART_QUERY_FIELDS):
        if isinstance(item, Issue):
            yield item
            continue
        text = " ".join(item.fields.get("W", "").split())
        if not text:
            yield Issue(
                label, f"line {item.line}", f"query {item.id!r} has no .W text; skipped", "skipped"
            )
            continue
        n += 1
        number = str(n) if number_by == "order" else normalise_number(item.id)
        if (problem := id_problem(number, "topic number", MAX_TOPIC_NUMBER_LENGTH)) is not None:
            yield Issue(label, f"line {item.line}", problem)
            continue
        yield TopicRecord(number=number, title=text, line=item.line)


_TREC_TAG = re.compile(r"<(/?)(top|num|title|desc|narr)>", re.IGNORECASE)
_PREFIXES = {"num": r"number\s*:", "desc": r"description\s*:", "narr": r"narrative\s*:"}


def iter_trec_topics(data: bytes, label: str) -> Iterator[TopicRecord | Issue]:
    """Yield ``TopicRecord`` for each ``<top>`` block of a TREC topics file.

    Accepts the classic format (unclosed ``<num>``, ``<title>``, ``<desc>``, ``<narr>`` tags) and
    the variant with closing tags.
    """
    if (issue := _binary(data, label)) is not None:
        yield issue
        return
    text = decode_text_file(data)
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_of(pos: int) -> int:
        lo, hi = 0, len(line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    blocks = list(re.finditer(r"<top>(.*?)(</top>|(?=<top>)|\Z)", text, re.I | re.S))
    if not blocks:
        yield Issue(label, "", "no <top> blocks found: not a TREC topics file")
        return
    seen: set[str] = set()
    for block in blocks:
        where = f"line {line_of(block.start())}"
        if not block.group(2):
            yield Issue(label, where, "<top> block is not closed with </top>")
            continue
        body = block.group(1)
        fields: dict[str, str] = {}
        num_at = block.start()  # where the <num> tag is, for an error about the number
        tags = list(_TREC_TAG.finditer(body))
        for i, tag in enumerate(tags):
            if tag.group(1):  # a closing tag
                continue
            name = tag.group(2).lower()
            end = tags[i + 1].start() if i + 1 < len(tags) else len(body)
            value = body[tag.end() : end]
            if name == "num":
                num_at = block.start(1) + tag.start()
            if name in _PREFIXES:
                value = re.sub(r"^\s*" + _PREFIXES[name], "", value, count=1, flags=re.I)
            fields[name] = " ".join(clean_text(value).split())
        number = normalise_number(fields.get("num", ""))
        if not number:
            yield Issue(label, where, "topic has no <num>")
            continue
        if (problem := id_problem(number, "topic number", MAX_TOPIC_NUMBER_LENGTH)) is not None:
            yield Issue(label, f"line {line_of(num_at)}", problem)
            continue
        if not fields.get("title"):
            yield Issue(label, where, f"topic {number} has no <title>")
            continue
        if number in seen:
            yield Issue(label, where, f"duplicate topic number {number}")
            continue
        seen.add(number)
        yield TopicRecord(
            number=number,
            title=fields["title"],
            description=fields.get("desc", ""),
            narrative=fields.get("narr", ""),
            line=line_of(block.start()),
        )


@dataclass(frozen=True)
class QrelLine:
    topic: str
    docid: str
    grade: int
    line: int


QREL_FORMATS = ("trec", "cranfield", "cacm", "binary")


def cranfield_grade(code: int) -> int:
    """Map Cranfield's relevance codes to this project's 0-2 scale.

    1-2 (complete answer, high relevance) -> 2; 3 (useful background) -> 1; 4 (minimal
    interest) and -1 -> 0. See ``../shared/data/cranfield/cranqrel.readme``.
    """
    if code in (1, 2):
        return 2
    if code == 3:
        return 1
    return 0


_OLD_MAC_LINES = re.compile(r"\r\n?")


def _text_lines(source: bytes | BinaryIO) -> Iterator[str]:
    """Yield the lines of a text file one at a time, each decoded as UTF-8 or else Latin-1
    (``decode_text_file`` per line), never holding the whole file."""
    raw_lines = source.splitlines() if isinstance(source, bytes) else source
    for raw in raw_lines:
        text = decode_text_file(raw).removesuffix("\n").removesuffix("\r")
        # Old Mac files (\r only). Not str.splitlines: it also splits at a form feed and
        # other separators, so the line numbers errors name came out wrong.
        yield from _OLD_MAC_LINES.split(text)


def _head(source: bytes | BinaryIO) -> bytes:
    if isinstance(source, bytes):
        return source[:8192]
    start = source.tell()
    head = source.read(8192)
    source.seek(start)
    return head


def iter_qrels(
    data: bytes | BinaryIO, label: str, *, fmt: str = "trec", duplicates: bool = True
) -> Iterator[QrelLine | Issue]:
    """Yield ``QrelLine`` for each judgment line of ``data`` (bytes, or a binary file read
    line by line, so a large file is never held in memory).

    Formats: ``trec`` (``topic iteration docno grade``; grades below 0 become 0 and above 2
    become 2), ``cranfield`` (``query doc code``, mapped by ``cranfield_grade``) and ``cacm``
    (``query doc 0 0``: every listed pair is relevant, grade 1); ``binary`` is the TREC layout
    with labels that must be 0 or 1 (sensitivity files). Topic numbers and document ids must
    be TREC fields (``core.parsing.id_problem``). With ``duplicates`` false, a pair seen
    twice is not reported here (the caller checks, in less memory than a set of strings).
    """
    if fmt not in QREL_FORMATS:
        raise ValueError(f"unknown qrels format {fmt!r}; use one of {', '.join(QREL_FORMATS)}")
    if (issue := _binary(_head(data), label)) is not None:
        yield issue
        return
    seen: dict[tuple[str, str], int] = {}
    expected = 3 if fmt == "cranfield" else 4
    outside, first_outside = 0, ""  # TREC grades outside 0-2, stored as the nearest
    for line_no, line in enumerate(_text_lines(data), 1):
        parts = line.split()
        if not parts or line.lstrip().startswith("#"):
            continue
        where = f"line {line_no}"
        if len(parts) != expected:
            yield Issue(label, where, f"expected {expected} columns, found {len(parts)}")
            continue
        if fmt in ("trec", "binary"):
            topic, _iteration, docid, grade_text = parts
        else:
            topic, docid, grade_text = parts[0], parts[1], parts[2]
        try:
            grade = int(grade_text)
        except ValueError:
            yield Issue(label, where, f"grade {grade_text[:40]!r} is not an integer")
            continue
        if fmt == "cranfield":
            grade = cranfield_grade(grade)
        elif fmt == "cacm":
            grade = 1
        elif fmt == "binary":
            if grade not in (0, 1):
                yield Issue(label, where, f"label must be 0 or 1, not {grade}")
                continue
        else:
            clamped = max(0, min(2, grade))
            if clamped != grade:
                outside += 1
                first_outside = first_outside or f"{where}: {grade} counted as {clamped}"
            grade = clamped
        topic = normalise_number(topic)
        if fmt in ("cranfield", "cacm"):
            docid = normalise_number(docid)
        problem = id_problem(topic, "topic", MAX_TOPIC_NUMBER_LENGTH) or id_problem(
            docid, "document id", MAX_DOCID_LENGTH
        )
        if problem is not None:
            yield Issue(label, where, problem)
            continue
        if duplicates:
            key = (topic, docid)
            if key in seen:
                yield Issue(
                    label,
                    where,
                    f"duplicate judgment for topic {topic}, document {docid} "
                    f"(first on line {seen[key]})",
                )
                continue
            seen[key] = line_no
        yield QrelLine(topic=topic, docid=docid, grade=grade, line=line_no)
    if outside:
        yield Issue(
            label,
            "",
            f"{outside} grade{'s' if outside != 1 else ''} outside 0-2 stored as the nearest "
            f"(first, {first_outside}): sasc grades relevance 0, 1 or 2",
            "skipped",
        )
