"""Read Outlook ``.msg`` files (MS-OXMSG, one message in a compound file) with extract-msg.

The message's own transport headers (``PR_TRANSPORT_MESSAGE_HEADERS``, kept when Outlook
received it by SMTP) are preferred for Message-ID, In-Reply-To, References and the address
headers; a message that never crossed SMTP (a draft, a message saved from Exchange) is read
from its MAPI properties instead. Attached messages (``.msg`` inside ``.msg``) become text
attachments, at most ``MAX_DEPTH`` levels deep.
"""

import email
import email.policy
import logging

from core.parsing.emails import (
    MAX_DEPTH,
    EmailParseError,
    ParsedEmail,
    attachment_from_bytes,
    clean_text,
    nested_message_attachment,
    parse_date,
    set_addresses,
    set_thread_headers,
)
from core.parsing.html_text import html_to_text

# The first bytes of every compound file (MS-CFB 2.2).
CFB_SIGNATURE = bytes.fromhex("D0CF11E0A1B11AE1")
# extract-msg logs every oddity of a file at WARNING; the import report lists ours instead.
logging.getLogger("extract_msg").setLevel(logging.ERROR)


def _stream(msg, prop: str) -> str:
    try:
        value = msg.getStringStream(f"__substg1.0_{prop}")
    except Exception:
        return ""
    return clean_text(value or "").strip()


def _address(name: str, addr: str) -> str:
    if addr and "@" in addr and addr not in name:
        return f"{name} <{addr}>" if name else addr
    return name or addr


def _fill(out: ParsedEmail, msg, depth: int) -> None:
    problems = out.problems
    headers = None
    text = ""
    try:
        text = clean_text(msg.headerText or "")
    except Exception:
        text = ""
    if text.strip() and ":" in text:
        headers = email.message_from_string(text.strip() + "\n\n", policy=email.policy.compat32)
        out.raw_headers = text[:200_000]
    out.subject = clean_text(msg.subject or "").strip()
    sender_name = _stream(msg, "0C1A") or _stream(msg, "0042")
    sender_addr = _stream(msg, "0C1F") or _stream(msg, "0065")
    out.from_header = _address(sender_name, sender_addr) or clean_text(msg.sender or "").strip()
    out.to_header = clean_text(msg.to or "").strip()
    out.cc_header = clean_text(msg.cc or "").strip()
    out.bcc_header = clean_text(msg.bcc or "").strip()
    out.message_id = (_stream(msg, "1035") or clean_text(msg.messageId or "").strip())[:998]
    in_reply_to = _stream(msg, "1042")
    references = _stream(msg, "1039")
    if headers is not None:
        # The SMTP headers are what the sender wrote: they win where present.
        for attr, name in (("from_header", "From"), ("to_header", "To"), ("cc_header", "Cc")):
            value = clean_text(str(headers.get(name, "") or "")).strip()
            if value:
                setattr(out, attr, value)
        out.message_id = clean_text(str(headers.get("Message-ID", "") or "")).strip()[:998] or (
            out.message_id
        )
        in_reply_to = str(headers.get("In-Reply-To", "") or "") or in_reply_to
        references = str(headers.get("References", "") or "") or references
        out.date = parse_date(str(headers.get("Date", "") or ""), problems)
    set_thread_headers(out, in_reply_to, references)
    if out.date is None:
        try:
            out.date = msg.date
        except Exception:
            problems.append("the message's sent date could not be read")
    set_addresses(out)
    body = clean_text(msg.body or "")
    if not body.strip():
        html = msg.htmlBody
        if html:
            out.body = html_to_text(
                html.decode("utf-8", "replace") if isinstance(html, bytes) else html
            )
            out.body_from_html = True
        elif msg.exists("__substg1.0_10090102"):
            # Not decompressed: compressed RTF expands many times over, and is not read.
            problems.append("the body is only in RTF, which is not read")
    else:
        out.body = body.strip("\n")
    for position, att in enumerate(msg.attachments):
        data = att.data
        name = None
        try:
            name = att.getFilename()
        except Exception:
            name = getattr(att, "longFilename", None) or getattr(att, "shortFilename", None)
        if hasattr(data, "attachments") and hasattr(data, "subject"):  # an attached message
            if depth >= MAX_DEPTH:
                problems.append(f"attached messages nested deeper than {MAX_DEPTH}; rest skipped")
                continue
            nested = ParsedEmail()
            _fill(nested, data, depth + 1)
            problems.extend(f"attached message: {p}" for p in nested.problems)
            out.attachments.append(nested_message_attachment(nested, position))
            continue
        if not isinstance(data, bytes):
            problems.append(f"attachment {name or position + 1}: kind {att.type!s} not read")
            data = b""
        out.attachments.append(
            attachment_from_bytes(
                data,
                content_type=getattr(att, "mimetype", None) or "application/octet-stream",
                filename=name,
                charset=None,
                position=position,
                problems=problems,
            )
        )


def parse_msg_bytes(data: bytes) -> ParsedEmail:
    """Parse one Outlook .msg file; raise EmailParseError if it is not one or is unreadable."""
    import extract_msg  # heavy (olefile, RTF, BeautifulSoup): loaded on the first .msg only
    from extract_msg.exceptions import ExMsgBaseException

    if not data.startswith(CFB_SIGNATURE):
        raise EmailParseError("not an Outlook .msg file (no compound-file signature)")
    try:
        msg = extract_msg.openMsg(data, delayAttachments=False)
    except (ExMsgBaseException, OSError, ValueError, KeyError, IndexError) as exc:
        raise EmailParseError(f"unreadable .msg ({type(exc).__name__}: {exc})"[:300]) from None
    except RecursionError:
        raise EmailParseError(
            "unreadable .msg: its storages refer to each other in a loop"
        ) from None
    out = ParsedEmail()
    try:
        with msg:
            if not hasattr(msg, "body"):
                raise EmailParseError(f"the .msg holds a {type(msg).__name__}, not an email")
            _fill(out, msg, 0)
    except EmailParseError:
        raise
    except RecursionError:
        raise EmailParseError(
            "unreadable .msg: its storages refer to each other in a loop"
        ) from None
    except Exception as exc:  # olefile/extract-msg on hostile bytes: one message lost, reported
        raise EmailParseError(f"unreadable .msg ({type(exc).__name__}: {exc})"[:300]) from None
    if not (out.subject or out.body or out.from_header or out.message_id):
        raise EmailParseError("the .msg has no subject, sender, body or Message-ID")
    out.problems = list(dict.fromkeys(out.problems))
    return out
