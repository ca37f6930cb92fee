"""Threads and folders of stored documents: assign ``thread_key``, list a message's thread.

``collection_threads_extend`` runs after every email import: it threads the documents that
have no key yet (the import's, or what an interrupted import left) together with only the
stored threads they can join, found through ``ThreadLink`` (each document's Message-ID, the
ids it cites and its subject group, ``core.parsing.mail_threads.thread_nodes``); the result
is the one a full re-thread gives (``tests/annotate/test_threads_incremental.py``).
``collection_threads_assign`` re-threads a whole collection (``manage.py assign_threads``,
after a restore or a change of the threading rules) and rewrites its links.
"""

import email
import email.policy
from collections.abc import Iterable, Iterator

from django.db import connection, transaction

from annotate.bulk import rows_insert
from annotate.models import Collection, Document, ThreadLink
from core.parsing.mail_threads import (
    ThreadInput,
    assign_threads,
    id_list,
    normalise_id,
    participants,
    thread_nodes,
)
from core.parsing.sources import folder_name, join_folder

UPDATE_BATCH = 2000
# Values in one ``IN (...)`` (under SQLite's limit of variables in one statement).
LOOKUP_CHUNK = 900
# The judging page shows at most this many messages of a thread (the nearest in time).
THREAD_SHOWN = 30
_FIELDS = (
    "pk",
    "docid",
    "message_id",
    "in_reply_to",
    "references",
    "subject",
    "date",
    "addresses",
    "thread_key",
)


def _inputs(rows, current: dict) -> Iterator[ThreadInput]:
    """ThreadInputs of ``_FIELDS`` rows; each row's stored thread key goes to ``current``."""
    for pk, docid, message_id, in_reply_to, references, subject, date, addresses, key in rows:
        current[pk] = key
        yield ThreadInput(
            key=pk,
            message_id=normalise_id(message_id),
            in_reply_to=in_reply_to,
            references=tuple(references or ()),
            subject=subject,
            # Strings compare whatever the dates: undated messages sort last.
            sort_key=(date.isoformat() if date else "~", docid),
            participants=participants(addresses),
        )


def _chunks(values: Iterable) -> Iterator[list]:
    values = list(values)
    for start in range(0, len(values), LOOKUP_CHUNK):
        yield values[start : start + LOOKUP_CHUNK]


def _keys_write(model, keys: dict, pks: list) -> None:
    """Set the thread keys of ``pks``: one ``UPDATE ... FROM (VALUES ...)`` per batch, where
    ``bulk_update``'s ``CASE WHEN`` took most of the threading time (PostgreSQL and SQLite
    3.33 on)."""
    table = connection.ops.quote_name(model._meta.db_table)
    for start in range(0, len(pks), UPDATE_BATCH):
        batch = pks[start : start + UPDATE_BATCH]
        values = ", ".join(["(%s, %s)"] * len(batch))
        with connection.cursor() as cursor:
            cursor.execute(
                f"WITH v(id, thread_key) AS (VALUES {values}) "  # noqa: S608 - no input in the names
                f"UPDATE {table} SET thread_key = v.thread_key FROM v WHERE {table}.id = v.id",
                [x for pk in batch for x in (pk, keys[pk])],
            )


def _save(model, link_model, collection, keys: dict, current: dict, linked: list) -> int:
    """Write the thread keys that changed and the links of ``linked`` (ThreadInputs), in one
    transaction: a document has its links exactly when it has its key."""
    changed = [pk for pk, key in keys.items() if current.get(pk) != key]
    with transaction.atomic():
        _keys_write(model, keys, changed)
        if link_model is not None:
            rows_insert(
                link_model,
                [
                    link_model(collection_id=collection.pk, document_id=m.key, node=node)
                    for m in linked
                    for node in sorted(thread_nodes(m))
                ],
                batch_size=UPDATE_BATCH,
            )
    return len(changed)


def collection_threads_assign(
    *, collection: Collection, model=Document, link_model=ThreadLink
) -> int:
    """Give every document of ``collection`` its ``thread_key`` and its links; return how many
    keys changed.

    ``model`` and ``link_model`` let data migrations pass their historical models (None: no
    links, before they existed).
    """
    rows = model.objects.filter(collection_id=collection.pk).values_list(*_FIELDS)
    current: dict = {}
    inputs = list(_inputs(rows.iterator(chunk_size=5000), current))
    keys = assign_threads(inputs)
    if link_model is not None:
        link_model.objects.filter(collection_id=collection.pk).delete()
    return _save(model, link_model, collection, keys, current, inputs)


def collection_threads_extend(
    *, collection: Collection, model=Document, link_model=ThreadLink
) -> int:
    """Thread the documents of ``collection`` that have no thread key yet with the stored
    threads they join; return how many keys changed (theirs and those of stored messages
    whose thread they merged or now start earlier).

    The stored documents threaded again are the closure of the new ones: every document
    sharing a link (an id or a subject group) with one already taken, with the whole of its
    thread. Threads outside it keep their keys, as a full re-thread would leave them (a
    thread changes only through a message linked to it); subject groups inside it are
    whole, so "a reply joins same-subject messages" decides as it would on everything.
    """
    docs = model.objects.filter(collection_id=collection.pk)
    current: dict = {}
    todo = list(docs.filter(thread_key="").values_list(*_FIELDS))
    taken: dict[object, ThreadInput] = {}
    new: list[ThreadInput] = []
    seen_nodes: set[str] = set()
    seen_keys: set[str] = {""}
    while todo:
        batch = list(_inputs(todo, current))
        if not taken:
            new = batch
        taken.update((m.key, m) for m in batch)
        nodes = {n for m in batch for n in thread_nodes(m)} - seen_nodes
        seen_nodes |= nodes
        found: set = set()
        for chunk in _chunks(nodes):
            found.update(
                link_model.objects.filter(collection_id=collection.pk, node__in=chunk).values_list(
                    "document_id", flat=True
                )
            )
        found -= taken.keys()
        thread_keys: set[str] = set()
        for chunk in _chunks(found):
            thread_keys.update(docs.filter(pk__in=chunk).values_list("thread_key", flat=True))
        thread_keys -= seen_keys
        seen_keys |= thread_keys
        for chunk in _chunks(thread_keys):
            found.update(docs.filter(thread_key__in=chunk).values_list("pk", flat=True))
        found -= taken.keys()
        todo = [
            row
            for chunk in _chunks(found)
            for row in docs.filter(pk__in=chunk).values_list(*_FIELDS)
        ]
    if not taken:
        return 0
    return _save(model, link_model, collection, assign_threads(taken.values()), current, new)


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


def collection_threading_backfill(
    *, collection: Collection, model=Document, link_model=ThreadLink
) -> int:
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
    collection_threads_assign(collection=collection, model=model, link_model=link_model)
    return filled
