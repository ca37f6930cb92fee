"""Threads and folders of stored documents: assign ``thread_key``, list a message's thread.

``collection_threads_assign`` runs after every email import (and from ``manage.py
assign_threads`` for documents stored before threading existed): it reads a few columns of
every document of the collection, threads them with the pure
``annotate.parsing.threads.assign_threads`` and writes only the keys that changed.
"""

import email
import email.policy
from collections.abc import Iterator

from django.db import transaction

from annotate.models import Collection, Document
from annotate.parsing.sources import folder_name, join_folder
from annotate.parsing.threads import ThreadInput, assign_threads, id_list, normalise_id

UPDATE_BATCH = 2000
# The judging page shows at most this many messages of a thread (the nearest in time).
THREAD_SHOWN = 30


def _inputs(rows) -> Iterator[ThreadInput]:
    for pk, docid, message_id, in_reply_to, references, subject, date, addresses in rows:
        yield ThreadInput(
            key=pk,
            message_id=normalise_id(message_id),
            in_reply_to=in_reply_to,
            references=tuple(references or ()),
            subject=subject,
            # Strings compare whatever the dates: undated messages sort last.
            sort_key=(date.isoformat() if date else "~", docid),
            participants=_participants(addresses),
        )


def _participants(addresses) -> frozenset:
    """The normalised addresses of a document (``Document.addresses``), lower-cased."""
    if not isinstance(addresses, dict):
        return frozenset()
    found = []
    for value in addresses.values():
        found.extend(value if isinstance(value, list) else [value])
    return frozenset(a.lower() for a in found if isinstance(a, str) and a)


def collection_threads_assign(*, collection: Collection, model=Document) -> int:
    """Give every document of ``collection`` its ``thread_key``; return how many changed.

    ``model`` lets the data migration pass its historical Document model.
    """
    rows = model.objects.filter(collection_id=collection.pk).values_list(
        "pk", "docid", "message_id", "in_reply_to", "references", "subject", "date", "addresses"
    )
    keys = assign_threads(_inputs(rows.iterator(chunk_size=5000)))
    current = dict(
        model.objects.filter(collection_id=collection.pk).values_list("pk", "thread_key")
    )
    changed = [pk for pk, key in keys.items() if current.get(pk) != key]
    for start in range(0, len(changed), UPDATE_BATCH):
        batch = [model(pk=pk, thread_key=keys[pk]) for pk in changed[start : start + UPDATE_BATCH]]
        with transaction.atomic():
            model.objects.bulk_update(batch, ["thread_key"])
    return len(changed)


def headers_threading(raw_headers: str) -> tuple[str, list[str]]:
    """Return (In-Reply-To id, References ids) read from a document's stored raw headers."""
    if not raw_headers:
        return "", []
    msg = email.message_from_string(raw_headers + "\n\n", policy=email.policy.compat32)
    parents = id_list(str(msg.get("In-Reply-To", "") or ""))
    return (parents[0] if parents else ""), id_list(str(msg.get("References", "") or ""))


def folder_from_docid(docid: str) -> str:
    """Return the folder of a document stored before folders were kept: the directory part
    of its doc id below the imported root (``box/Inbox/1.eml`` -> ``Inbox``)."""
    path, _hash, number = docid.partition("#")
    parts = path.split("/")
    if number.isdigit() and not parts[-1].lower().endswith((".jsonl", ".ndjson", ".xml")):
        # "<root>/Archive/Sent.mbox#3", Thunderbird's "<root>/Inbox#3": an mbox is a folder.
        inner = parts[1:-1] if len(parts) > 1 else []
        name = parts[-1]
        if name.lower().endswith((".mbox", ".mbx")):
            name = name.rsplit(".", 1)[0]
        parts = [*inner, name]
    else:
        parts = parts[1:-1]  # drop the imported root's own name and the file name
    return join_folder(*(folder_name(p) for p in parts if p not in ("cur", "new", "tmp")))


def collection_threading_backfill(*, collection: Collection, model=Document) -> int:
    """Fill ``in_reply_to``, ``references`` and ``folder`` of documents stored before they
    were kept (from their raw headers and doc ids), then thread the collection; return how
    many documents were filled. Documents that have them already are left as they are."""
    filled = 0
    batch = []
    todo = model.objects.filter(collection_id=collection.pk, in_reply_to="", folder="")
    rows = todo.values_list("pk", "raw_headers", "docid", "references")
    for pk, raw_headers, docid, stored_references in rows.iterator(chunk_size=2000):
        if stored_references:
            continue
        in_reply_to, references = headers_threading(raw_headers)
        folder = folder_from_docid(docid)
        if not (in_reply_to or references or folder):
            continue
        batch.append(model(pk=pk, in_reply_to=in_reply_to, references=references, folder=folder))
        if len(batch) >= UPDATE_BATCH:
            model.objects.bulk_update(batch, ["in_reply_to", "references", "folder"])
            filled += len(batch)
            batch = []
    if batch:
        model.objects.bulk_update(batch, ["in_reply_to", "references", "folder"])
        filled += len(batch)
    collection_threads_assign(collection=collection, model=model)
    return filled
