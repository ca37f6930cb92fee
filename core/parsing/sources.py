"""Find email messages in files: RFC-822 files, directories of them (Maildir, Maildir++ and
Thunderbird-style mbox trees included), mbox, JSONL, zip, Outlook .msg and PST/OST, and EAXS.

Yields ``EmailItem`` for each message (parsed, with its problems) and ``Issue`` for each file,
line or member that could not be read. Sizes are checked before anything is read into memory.
"""

import email.utils
import json
import mailbox
import os
import re
import struct
import zipfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from core.parsing import MAX_DOCID_LENGTH, Issue, id_problem
from core.parsing.emails import (
    ParsedAttachment,
    ParsedEmail,
    clean_text,
    parse_date,
    sanitise_filename,
)
from core.parsing.html_text import html_to_text
from core.parsing.items import (  # noqa: F401 (re-exported: tests and callers use them)
    MAX_DOCID,
    EmailItem,
    Limits,
    _docid,
    _mb,
    _single,
    join_folder,
)

MBOX_SUFFIXES = {".mbox", ".mbx"}
JSONL_SUFFIXES = {".jsonl", ".ndjson"}
ZIP_SUFFIXES = {".zip"}
MSG_SUFFIXES = {".msg"}
PST_SUFFIXES = {".pst", ".ost"}
XML_SUFFIXES = {".xml"}
# Files that sit beside messages in common corpora and are not messages (".msf": the
# index Thunderbird keeps beside each mbox).
IGNORED_SUFFIXES = {".json", ".js", ".md", ".pdf", ".gz", ".tgz", ".tar", ".py", ".html", ".msf"}
# The first line of an mbox: "From " sender, then a date (the sender may be MAILER-DAEMON).
_MBOX_FROM_LINE = re.compile(rb"^From \S+ +\S.*\d\d:\d\d(:\d\d)? .*\d{4}\s*$")


# Below this many bytes out of a member, its compression ratio is not judged: a short
# message of repeated characters compresses far better than a bomb's ratio limit.
RATIO_FLOOR = 1024 * 1024


def looks_like_mbox(head: bytes) -> bool:
    """Return whether bytes start like an mbox (a ``From sender date`` line), for mbox
    files without a suffix (Thunderbird's "Inbox", "Sent")."""
    first = head.split(b"\n", 1)[0].rstrip(b"\r")
    return bool(_MBOX_FROM_LINE.match(first))


def iter_emails(
    path: Path,
    *,
    limits: Limits | None = None,
    label: str | None = None,
    known: Callable[[str], bool] | None = None,
):
    """Yield ``EmailItem`` or ``Issue`` for every message under ``path`` (file or folder).

    ``label`` names the source in reports and doc ids (defaults to the file name), so an
    uploaded temporary file is reported under the name the user gave it. Messages whose
    docid ``known`` accepts are not parsed again: they come back as ``EmailItem`` with
    ``email=None`` (a re-run then costs little more than listing the files).
    """
    limits = limits or Limits()
    limits.known = known
    path = Path(path)
    if path.is_symlink():
        yield Issue(label or path.name, "", "symbolic link not followed", "skipped")
        return
    if path.is_dir():
        yield from _iter_dir(path, limits)
        return
    if not path.exists():
        yield Issue(label or str(path), "", "no such file or directory")
        return
    yield from _iter_file(path, label or path.name, limits)


def folder_name(part: str) -> str:
    """Return a mailbox folder's name from a directory name: Thunderbird's ``X.sbd`` (the
    subfolders of mbox ``X``) is ``X``; Maildir++'s ``.Sent.2001`` is ``Sent/2001``."""
    if part.endswith(".sbd"):
        return part[: -len(".sbd")]
    if part.startswith(".") and len(part) > 1:
        return "/".join(p for p in part[1:].split(".") if p)
    return part


def _is_maildir(path: Path) -> bool:
    return (path / "cur").is_dir() and (path / "new").is_dir()


def _iter_dir(root: Path, limits: Limits) -> Iterator[EmailItem | Issue]:
    for entry in iter_dir_files(root):
        if isinstance(entry, Issue):
            yield entry
        else:
            yield from _read_unit(entry, limits)


class FolderUnit(NamedTuple):
    """One unit of a folder's import: a mail file, or a whole Maildir (``maildir``)."""

    path: Path
    label: str
    folder: str
    maildir: bool = False


def _read_unit(unit: FolderUnit, limits: Limits) -> Iterator[EmailItem | Issue]:
    if unit.maildir:
        return iter_maildir(unit.path, unit.label, unit.folder, limits)
    return _iter_file(unit.path, unit.label, limits, unit.folder)


def parse_file_job(job: tuple[FolderUnit, Limits]) -> list[EmailItem | Issue]:
    """Parse one unit of a folder in a worker process: ``(unit, limits)`` -> items
    (``annotate.import_emails.collection_import_emails`` with ``workers``)."""
    unit, limits = job
    return list(_read_unit(unit, limits))


def iter_dir_files(root: Path) -> Iterator[FolderUnit | Issue]:
    """The units of a folder an import reads (mail files, and Maildirs as one unit each), in
    reading order, and an ``Issue`` for each file it skips (links, suffixes that are not
    mail; dot files aside)."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        rel_dir = here.relative_to(root)
        folder = join_folder(*(folder_name(p) for p in rel_dir.parts))
        if _is_maildir(here):
            yield FolderUnit(here, f"{root.name}/{rel_dir.as_posix()}", folder, maildir=True)
            # cur/new/tmp were read (tmp holds deliveries not finished: never read); its
            # Maildir++ subfolders (".Sent") are walked as folders of their own.
            dirnames[:] = sorted(d for d in dirnames if d.startswith(".") and _is_maildir(here / d))
            continue
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            full = here / name
            # The folder's own name is kept so that two folders' 00001.eml stay distinct.
            rel = f"{root.name}/{full.relative_to(root).as_posix()}"
            if full.is_symlink():
                yield Issue(rel, "", "symbolic link not followed", "skipped")
                continue
            if full.suffix.lower() in IGNORED_SUFFIXES:
                yield Issue(rel, "", f"{full.suffix} files are not messages", "skipped")
                continue
            yield FolderUnit(full, rel, folder)


def iter_maildir(path: Path, label: str, folder: str, limits: Limits):
    """Yield the messages of one Maildir (``new`` and ``cur``; ``tmp`` is never read).

    Doc ids use the message's unique name without its ``:2,FLAGS`` suffix, so a message a
    mail client has since marked read is the same document on a re-run.
    """
    try:
        box = mailbox.Maildir(path, factory=None, create=False)
        keys = sorted(box.keys())
    except OSError as exc:
        yield Issue(label, "", f"cannot read Maildir: {exc.strerror or exc}")
        return
    label = label.rstrip("/").removesuffix("/.")
    for key in keys:
        docid = f"{label}/{key}"
        try:
            fh = box.get_file(key)
        except (KeyError, OSError) as exc:
            yield Issue(label, key, f"cannot read message: {exc}"[:300])
            continue
        with fh:
            # Read one byte past the limit, never more: a larger message is refused.
            data = fh.read(limits.max_message_bytes + 1)
        if len(data) > limits.max_message_bytes:
            if limits.known is not None and limits.known(_docid(docid)):
                yield EmailItem(_docid(docid), label, key, None, folder)
                continue
            yield Issue(label, key, f"message is over the {_mb(limits.max_message_bytes)} limit")
            continue
        if not data:
            yield Issue(label, key, "empty file")
            continue
        yield from _single(data, docid, label, key, limits, folder)


def _iter_file(
    path: Path, label: str, limits: Limits, folder: str = ""
) -> Iterator[EmailItem | Issue]:
    try:
        size = path.stat().st_size
    except OSError as exc:
        yield Issue(label, "", f"cannot read file: {exc.strerror}")
        return
    suffix = path.suffix.lower()
    if size > limits.max_file_bytes:
        yield Issue(label, "", f"file is {_mb(size)}, over the {_mb(limits.max_file_bytes)} limit")
        return
    if size == 0:
        yield Issue(label, "", "empty file")
        return
    if suffix in PST_SUFFIXES:
        # Read by readpst from disk, never into memory whole (core.parsing.pst).
        from core.parsing.pst import iter_pst

        yield from iter_pst(path, label, limits, folder)
        return
    if suffix in ZIP_SUFFIXES:
        yield from _iter_zip(path, label, limits)
        return
    try:
        data = path.read_bytes()
    except OSError as exc:
        yield Issue(label, "", f"cannot read file: {exc.strerror}")
        return
    yield from _iter_data(data, label, label, "", limits, folder, suffix, stem=path.stem)


def _iter_data(data, docid, source, where, limits, folder, suffix, *, stem):
    """Dispatch one file's (or zip member's) bytes on its suffix, then on its content."""
    if suffix in MBOX_SUFFIXES or (
        suffix not in JSONL_SUFFIXES | MSG_SUFFIXES | XML_SUFFIXES
        and looks_like_mbox(data[:1024])
        # One message with its envelope line stays a message file (its doc id unchanged).
        and re.search(rb"\n\r?\nFrom ", data) is not None
    ):
        # An mbox is a folder of its own: "Sent.mbox" in "Archive" is "Archive/Sent".
        yield from iter_mbox_bytes(data, docid, limits, join_folder(folder, stem))
    elif suffix in JSONL_SUFFIXES:
        yield from iter_jsonl_bytes(data, docid, limits, folder)
    elif suffix in MSG_SUFFIXES:
        from core.parsing.outlook import parse_msg_bytes

        yield from _single(data, docid, source, where, limits, folder, parse=parse_msg_bytes)
    elif suffix in XML_SUFFIXES:
        from core.parsing.eaxs import iter_eaxs_bytes, looks_like_eaxs

        if looks_like_eaxs(data[:4096]):
            yield from iter_eaxs_bytes(data, docid, limits, folder)
        else:
            yield Issue(source, where, "XML that is not an EAXS account (no <Account> root)")
    else:
        yield from _single(data, docid, source, where, limits, folder)


def iter_mbox_bytes(
    data: bytes, label: str, limits: Limits, folder: str = ""
) -> Iterator[EmailItem | Issue]:
    """Split an mbox (mboxo/mboxrd) on ``From `` lines and parse each message."""
    if not data.startswith(b"From "):
        yield Issue(label, "line 1", "not an mbox file: the first line does not start with 'From '")
        return
    starts: list[tuple[int, int]] = []  # (byte offset, line number)
    offset, line_no, previous_blank = 0, 1, True
    for line in data.splitlines(keepends=True):
        if previous_blank and line.startswith(b"From "):
            starts.append((offset, line_no))
        previous_blank = line in (b"\n", b"\r\n")
        offset += len(line)
        line_no += 1
    starts.append((len(data), line_no))
    for n, ((begin, first_line), (end, _)) in enumerate(zip(starts, starts[1:], strict=False), 1):
        chunk = data[begin:end]
        _from_line, _sep, message = chunk.partition(b"\n")
        # mboxrd quotes body lines that start with "From " as ">From "; undo one level.
        message = b"\n".join(
            ln[1:] if ln.startswith(b">") and ln.lstrip(b">").startswith(b"From ") else ln
            for ln in message.split(b"\n")
        )
        where = f"line {first_line} (offset {begin})"
        yield from _single(message, f"{label}#{n}", label, where, limits, folder)


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise ValueError("must be a string or a list of strings")


def _str_field(obj: dict, key: str) -> str:
    value = obj.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"field {key!r} must be a string")
    return clean_text(value)


def _email_from_json(obj: dict) -> ParsedEmail:
    """Build a ParsedEmail from a structured JSONL record (see docs/formats.md)."""
    out = ParsedEmail()
    out.message_id = _str_field(obj, "message_id")[:998]
    out.subject = _str_field(obj, "subject")
    out.from_header = _str_field(obj, "from")
    headers = {}
    for key in ("to", "cc", "bcc"):
        try:
            values = _as_list(obj.get(key))
        except ValueError as exc:
            raise ValueError(f"field {key!r} {exc}") from None
        joined = ", ".join(clean_text(v) for v in values)
        setattr(out, f"{key}_header", joined)
        headers[key] = joined
    pairs = email.utils.getaddresses([out.from_header]) if out.from_header else []
    out.addresses = {"from": pairs[0][1].lower() if pairs and "@" in pairs[0][1] else ""}
    for key, joined in headers.items():
        out.addresses[key] = [a.lower() for _n, a in email.utils.getaddresses([joined]) if "@" in a]
    date = _str_field(obj, "date")
    if date:
        try:
            parsed = datetime.fromisoformat(date)
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            out.date = parsed
        except ValueError:
            out.date = parse_date(date, out.problems)
    out.body = _str_field(obj, "body")
    if not out.body and obj.get("body_html"):
        out.body = html_to_text(_str_field(obj, "body_html"))
        out.body_from_html = True
    attachments = obj.get("attachments") or []
    if not isinstance(attachments, list):
        raise ValueError("field 'attachments' must be a list")
    for i, att in enumerate(attachments):
        if not isinstance(att, dict):
            raise ValueError(f"attachment {i + 1} must be an object")
        raw_name = _str_field(att, "filename")
        name, changed = sanitise_filename(raw_name, i)
        if changed:
            out.problems.append(f"attachment name {raw_name[:80]!r} replaced by {name!r}")
        text = _str_field(att, "text")
        out.attachments.append(
            ParsedAttachment(
                filename=name,
                content_type=(_str_field(att, "content_type") or "text/plain")[:255],
                size=len(text.encode("utf-8", "surrogatepass")),
                is_text=bool(text),
                text=text,
            )
        )
    if not (out.subject or out.body or out.from_header):
        raise ValueError("record has none of subject, body or from")
    return out


def iter_jsonl_bytes(
    data: bytes, label: str, limits: Limits, folder: str = ""
) -> Iterator[EmailItem | Issue]:
    """Yield one message per JSON line: either ``{"raw": "<RFC-822>"}`` or structured fields."""
    for line_no, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        where = f"line {line_no}"
        if len(line) > limits.max_message_bytes:
            yield Issue(label, where, f"line is {_mb(len(line))}, over the message limit")
            continue
        try:
            obj = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            yield Issue(label, where, f"not valid JSON ({exc})"[:300])
            continue
        if not isinstance(obj, dict):
            yield Issue(label, where, "each line must be a JSON object")
            continue
        # JSON may escape half of a character ("\\ud83d", an emoji cut in two), which no
        # database column or UTF-8 file can hold: it crashed the whole import's batch.
        repaired: list[str] = []
        obj = _without_surrogates(obj, "", repaired)
        docid = obj.get("id", obj.get("docid"))
        if docid is not None and not isinstance(docid, str | int) or isinstance(docid, bool):
            yield Issue(label, where, "field 'id' must be a string or a number")
            continue
        if docid not in (None, ""):
            # A given id is kept as it is, so it must already be one TREC field.
            docid = str(docid)
            if (problem := id_problem(docid, "document id", MAX_DOCID_LENGTH)) is not None:
                yield Issue(label, where, problem)
                continue
        else:
            docid = f"{label}#L{line_no}"
        raw = obj.get("raw")
        if raw is not None:
            if not isinstance(raw, str):
                yield Issue(label, where, "field 'raw' must be a string")
                continue
            raw_bytes = raw.encode("utf-8", "surrogateescape")
            yield from _single(raw_bytes, docid, label, where, limits, folder)
            continue
        docid = _docid(docid)
        if limits.known is not None and limits.known(docid):
            yield EmailItem(docid, label, where, None, folder)
            continue
        try:
            parsed = _email_from_json(obj)
        except ValueError as exc:
            yield Issue(label, where, str(exc))
            continue
        parsed.folder = folder
        parsed.problems += [
            f"{field}: half of a character (an unpaired UTF-16 surrogate) replaced by U+FFFD"
            for field in repaired
        ]
        yield EmailItem(docid, label, where, parsed, folder)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(value, path: str, repaired: list[str]):
    """``value`` (parsed JSON) with every unpaired surrogate replaced by U+FFFD; the path of
    each string changed (``body``, ``attachments[0].text``) goes on ``repaired``."""
    if isinstance(value, str):
        if _SURROGATE.search(value):
            repaired.append(path or "value")
            return _SURROGATE.sub("\ufffd", value)
        return value
    if isinstance(value, dict):
        return {
            _without_surrogates(k, path, []): _without_surrogates(
                v, f"{path}.{k}" if path else str(k), repaired
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_without_surrogates(v, f"{path}[{i}]", repaired) for i, v in enumerate(value)]
    return value


def _safe_member(name: str) -> str | None:
    """Return a normalised member path, or None if it would escape the archive's root."""
    normalised = name.replace("\\", "/")
    pure = PurePosixPath(normalised)
    if pure.is_absolute() or ".." in pure.parts or (pure.parts and ":" in pure.parts[0]):
        return None
    return pure.as_posix()


class ArchiveLimitError(ValueError):
    """A zip member went over one of ``Limits``' caps; ``over_size`` when it was the byte cap,
    ``setting`` the name of the setting that holds the cap."""

    def __init__(self, message: str, *, over_size: bool = False, setting: str = ""):
        super().__init__(message)
        self.over_size = over_size
        self.setting = setting


# Compression methods whose decompressor zipfile can bound per read (ZIP_DEFLATED) or that
# need none (ZIP_STORED). zipfile decompresses bzip2 and LZMA members without an output
# bound, so a few kilobytes read can expand to hundreds of megabytes: those are refused.
_BOUNDED_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
_READ_CHUNK = 64 * 1024


def zip_member_count(path: Path, stop_after: int) -> int:
    """Return how many entries the zip's central directory holds, counting no further than
    ``stop_after + 1``, without building ``zipfile``'s per-member objects.

    The end record's own count is not trusted (``zipfile`` ignores it too): the entries are
    walked through their fixed 46-byte headers. Raise ``zipfile.BadZipFile`` for a file that
    is not a zip.
    """
    with open(path, "rb") as fp:
        # zipfile's reader of the end-of-central-directory record (zip64 included).
        endrec = zipfile._EndRecData(fp)
        if not endrec:
            raise zipfile.BadZipFile("File is not a zip file")
        size_cd, offset_cd = endrec[zipfile._ECD_SIZE], endrec[zipfile._ECD_OFFSET]
        start = endrec[zipfile._ECD_LOCATION] - size_cd
        if endrec[zipfile._ECD_SIGNATURE] == zipfile.stringEndArchive64:
            start -= zipfile.sizeEndCentDir64 + zipfile.sizeEndCentDir64Locator
        if start < 0 or offset_cd < 0:
            raise zipfile.BadZipFile("Bad offset for central directory")
        fp.seek(start)
        count = read = 0
        while read < size_cd and count <= stop_after:
            header = fp.read(zipfile.sizeCentralDir)
            if len(header) != zipfile.sizeCentralDir or header[:4] != zipfile.stringCentralDir:
                raise zipfile.BadZipFile("Truncated or bad central directory")
            fields = struct.unpack(zipfile.structCentralDir, header)
            skip = (
                fields[zipfile._CD_FILENAME_LENGTH]
                + fields[zipfile._CD_EXTRA_FIELD_LENGTH]
                + fields[zipfile._CD_COMMENT_LENGTH]
            )
            fp.seek(skip, os.SEEK_CUR)
            read += zipfile.sizeCentralDir + skip
            count += 1
        return count


def read_zip_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, *, limit: int, max_ratio: int
) -> bytes:
    """Return a member's bytes, read in chunks and counted as they come out of the
    decompressor: the sizes in the member's headers are not trusted.

    Raise ``ArchiveLimitError`` (naming the limit) as soon as more than ``limit`` bytes come
    out, or more than ``max_ratio`` times the compressed size once past one megabyte, so
    memory stays bounded by ``limit`` whatever the headers claim.
    """
    method = _BOUNDED_METHODS.get(info.compress_type)
    if method is None:
        raise ArchiveLimitError(
            f"compression method {info.compress_type} is not read (only stored and deflate)"
        )
    if info.file_size > limit:
        raise ArchiveLimitError(
            f"member is {_mb(info.file_size)}, over the {_mb(limit)} limit", over_size=True
        )
    compressed = max(info.compress_size, 1)

    def over_ratio(size: int) -> ArchiveLimitError | None:
        if size > RATIO_FLOOR and size > max_ratio * compressed:
            return ArchiveLimitError(
                f"member expands more than {max_ratio} times its compressed size "
                f"(the compression-ratio limit): a zip bomb?",
                setting="SASC_MAX_COMPRESSION_RATIO",
            )
        return None

    if (error := over_ratio(info.file_size)) is not None:
        raise error
    out = bytearray()
    # Small reads: zipfile asks zlib for at most this much per read, while ``read()`` of a
    # whole member asks for up to 1 GB at once, then cuts it to the declared size.
    with archive.open(info) as fh:
        while chunk := fh.read(_READ_CHUNK):
            out += chunk
            if len(out) > limit:
                raise ArchiveLimitError(
                    f"member expands to more than {_mb(limit)} (the limit), whatever its "
                    f"header says ({_mb(info.file_size)}); not read further",
                    over_size=True,
                )
            if (error := over_ratio(len(out))) is not None:
                raise error
    return bytes(out)


def _iter_zip(path: Path, label: str, limits: Limits) -> Iterator[EmailItem | Issue]:
    """Read messages from a zip in memory; member names are never used as file-system paths.

    Every cap of ``Limits`` is counted on what is actually read: entries in the central
    directory (before ``zipfile`` builds an object per member), bytes out of the
    decompressor per member and for the whole archive, and the compression ratio.
    """
    try:
        members = zip_member_count(path, limits.max_archive_members)
    except (zipfile.BadZipFile, OSError, struct.error) as exc:
        yield Issue(label, "", f"not a readable zip archive ({exc})")
        return
    if members > limits.max_archive_members:
        yield Issue(
            label,
            "",
            f"archive has more than {limits.max_archive_members} members "
            "(SASC_MAX_ARCHIVE_MEMBERS); nothing was read",
        )
        return
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        yield Issue(label, "", f"not a readable zip archive ({exc})")
        return
    total = 0
    with archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            member = _safe_member(info.filename)
            if member is None:
                yield Issue(label, info.filename[:200], "unsafe path in archive; member skipped")
                continue
            name = PurePosixPath(member).name
            if name.startswith(".") or PurePosixPath(member).suffix.lower() in IGNORED_SUFFIXES:
                yield Issue(label, member, "not a message file", "skipped")
                continue
            if PurePosixPath(member).suffix.lower() in PST_SUFFIXES:
                yield Issue(label, member, "a PST inside a zip is not read: import it alone")
                continue
            if PurePosixPath(member).parent.name == "tmp":
                yield Issue(label, member, "Maildir tmp/ (unfinished delivery)", "skipped")
                continue
            left = limits.max_archive_bytes - total
            try:
                data = read_zip_member(
                    archive,
                    info,
                    limit=min(limits.max_message_bytes, left),
                    max_ratio=limits.max_compression_ratio,
                )
            except ArchiveLimitError as exc:
                if exc.over_size and left < limits.max_message_bytes:
                    yield Issue(
                        label,
                        member,
                        f"archive expands to more than {_mb(limits.max_archive_bytes)} "
                        "(SASC_MAX_ARCHIVE_BYTES); this member and the rest were not read",
                    )
                    return
                setting = exc.setting or ("SASC_MAX_MESSAGE_BYTES" if exc.over_size else "")
                named = f" ({setting})" if setting else ""
                yield Issue(label, member, f"{exc}{named}; member skipped")
                continue
            except zipfile.BadZipFile as exc:
                # zipfile stops at the size the header declares; a member that holds more
                # (or less) then fails its checksum.
                reason = f"member is corrupt or its header lies about its size ({exc})"
                yield Issue(label, member, reason[:300])
                continue
            except Exception as exc:  # encryption, truncation, bad local headers
                yield Issue(label, member, f"member could not be read ({exc})"[:300])
                continue
            total += len(data)
            pure = PurePosixPath(member)
            folder = join_folder(*(folder_name(p) for p in pure.parent.parts))
            folder = "/".join(p for p in folder.split("/") if p not in ("cur", "new"))
            yield from _iter_data(
                data,
                f"{label}/{member}",
                label,
                member,
                limits,
                folder,
                pure.suffix.lower(),
                stem=pure.stem,
            )
