"""What every email reader yields: ``EmailItem`` (a parsed message, or a known one not read
again), the ``Limits`` it reads within, and the helpers that make doc ids and folder paths.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass

from core.parsing import MAX_DOCID_LENGTH, Issue
from core.parsing.emails import EmailParseError, ParsedEmail, clean_text, parse_email_bytes

MAX_DOCID = MAX_DOCID_LENGTH
MAX_FOLDER = 500  # Document.folder
# Whitespace and control characters: a file name may hold them, a TREC doc id may not.
_NOT_IN_DOCID = re.compile(r"[\s\x00-\x1f\x7f-\x9f]+")


@dataclass
class Limits:
    """The caps an import reads within (``config/settings.py`` sets them from the env)."""

    max_file_bytes: int = 50 * 1024 * 1024
    max_message_bytes: int = 25 * 1024 * 1024
    # An archive: bytes out of all its members, entries in it, and bytes out per byte in.
    max_archive_bytes: int = 200 * 1024 * 1024
    max_archive_members: int = 100_000
    max_compression_ratio: int = 100
    # An external extractor (readpst): wall-clock seconds it may run.
    max_extract_seconds: int = 1800
    known: Callable[[str], bool] | None = None


@dataclass
class EmailItem:
    docid: str
    source: str
    where: str
    email: ParsedEmail | None
    folder: str = ""


def join_folder(*parts: str) -> str:
    """Return a folder path ("Inbox/Projects") from parts, each cleaned of control
    characters and surrounding slashes; bounded to the column's length."""
    cleaned = [clean_text(p).strip().strip("/") for p in parts]
    return "/".join(p for p in cleaned if p)[:MAX_FOLDER]


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB"


def _docid(text: str) -> str:
    """Return a doc id made from a path (``<folder>/<file>``, ``<zip>/<member>``, ``<mbox>#n``):
    each run of whitespace or control characters becomes ``_``, so the id is one TREC field."""
    text = _NOT_IN_DOCID.sub("_", clean_text(text).strip())
    if len(text) > MAX_DOCID:  # keep ids unique but bounded: the tail is the distinctive part
        text = text[-MAX_DOCID:]
    return text


def _single(
    data: bytes,
    docid: str,
    source: str,
    where: str,
    limits: Limits,
    folder="",
    *,
    parse=parse_email_bytes,
):
    docid = _docid(docid)
    if limits.known is not None and limits.known(docid):
        yield EmailItem(docid, source, where, None, folder)
        return
    if len(data) > limits.max_message_bytes:
        yield Issue(
            source,
            where,
            f"message is {_mb(len(data))}, over the {_mb(limits.max_message_bytes)} limit",
        )
        return
    try:
        parsed = parse(data)
    except EmailParseError as exc:
        yield Issue(source, where, str(exc))
        return
    except Exception as exc:  # the stdlib parser on hostile input: report, never crash
        yield Issue(source, where, f"unreadable message ({type(exc).__name__}: {exc})"[:300])
        return
    parsed.folder = folder
    yield EmailItem(docid, source, where, parsed, folder)
