"""Group messages into threads: Message-ID / In-Reply-To / References, then subjects.

Pure code, no Django. ``assign_threads`` takes every message of a collection (a few fields
each) and returns each one's ``thread_key``, a short stable string the archivist's queue
groups by. The method follows Zawinski's threading algorithm (the one most mail readers use,
and RFC 5256's REFERENCES): messages linked by their headers share a thread, whether or not
every message between them is in the collection; messages with no such link join the thread
of others with the same subject once the prefixes ("Re:", "Fwd:", "AW:", ...) are removed,
and only when one of them *is* a reply or forward (two unrelated "Minutes" stay apart) and,
where addresses are known, only messages that share a participant (other people's "Salary
review" stays apart).
"""

import hashlib
import re
from collections.abc import Iterable
from typing import NamedTuple

# At most this many ids of a References header are kept: the first (the thread's root) and
# the last ones (the nearest ancestors). A header of thousands of ids is hostile or broken.
MAX_REFERENCES = 50
MAX_ID_LENGTH = 998  # RFC 5322 line length; also Document.message_id's column
THREAD_KEY_LENGTH = 32

_ID = re.compile(r"<([^<>\s]{1,998})>")
# Reply and forward prefixes in the languages archives meet most, with counters ("Re[2]:")
# and mailing-list tags ("[list] Re: ...").
_PREFIX = re.compile(
    r"^\s*(?:\[[^\]]{0,60}\]\s*)?"
    r"(?:re|fw|fwd|aw|wg|sv|vs|antw|ref|rif|tr|odp|r|enc|res)(?:\[\d+\]|\(\d+\))?\s*:\s*",
    re.IGNORECASE,
)
_LIST_TAG = re.compile(r"^\s*\[[^\]]{0,60}\]\s*")


def normalise_id(value: str) -> str:
    """Return a Message-ID without its angle brackets and surrounding space ("" if none)."""
    value = (value or "").strip()
    match = _ID.search(value)
    if match:
        return match.group(1)[:MAX_ID_LENGTH]
    value = value.strip("<> \t\r\n")
    return "" if not value or any(c.isspace() for c in value) else value[:MAX_ID_LENGTH]


def id_list(value: str) -> list[str]:
    """Return the ids of a References or In-Reply-To header, in order, without repeats.

    Only ``<...>`` tokens count (RFC 5322 §3.6.4); comments and phrases around them, which
    some clients add to In-Reply-To, are dropped. Long lists keep their first id and the
    last ``MAX_REFERENCES - 1``.
    """
    ids = list(dict.fromkeys(_ID.findall(value or "")))
    if len(ids) > MAX_REFERENCES:
        ids = ids[:1] + ids[-(MAX_REFERENCES - 1) :]
    return ids


def base_subject(subject: str) -> tuple[str, bool]:
    """Return the subject without reply/forward prefixes and list tags, case-folded, and
    whether any reply or forward prefix was removed."""
    text = " ".join((subject or "").split())
    replied = False
    for _ in range(20):  # "Re: Fwd: Re: ..." chains; bounded for hostile subjects
        match = _PREFIX.match(text)
        if match:
            text = text[match.end() :]
            replied = True
            continue
        tag = _LIST_TAG.match(text)
        if tag and tag.end() < len(text):
            text = text[tag.end() :]
            continue
        break
    return text.strip().casefold(), replied


class ThreadInput(NamedTuple):
    """What threading needs of one message. ``key`` is any hashable (a database id)."""

    key: object
    message_id: str
    in_reply_to: str
    references: tuple[str, ...]
    subject: str
    sort_key: tuple = ()  # (date, docid): the earliest message names the thread
    # Addresses of sender and recipients: a subject joins only messages that share one (two
    # teams' "Salary review" threads stay apart). Empty: the subject alone decides.
    participants: frozenset = frozenset()


def participants(addresses) -> frozenset:
    """The addresses of a message, lower-cased, from a ``{"from": a, "to": [b, ...]}`` dict
    (``Document.addresses``, ``core.parsing.emails.ParsedEmail.addresses``)."""
    if not isinstance(addresses, dict):
        return frozenset()
    found = []
    for value in addresses.values():
        found.extend(value if isinstance(value, list) else [value])
    return frozenset(a.lower() for a in found if isinstance(a, str) and a)


class _UnionFind:
    def __init__(self):
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        parent = self.parent
        parent.setdefault(x, x)
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # Deterministic: the smaller name wins, so the same input gives the same roots.
            if rb < ra:
                ra, rb = rb, ra
            self.parent[rb] = ra


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:THREAD_KEY_LENGTH]


def _links(m: ThreadInput) -> list[str]:
    """The ids a message cites, other than its own."""
    links = [r for r in m.references if r and r != m.message_id]
    if m.in_reply_to and m.in_reply_to != m.message_id:
        links.append(m.in_reply_to)
    return links


def thread_nodes(m: ThreadInput) -> set[str]:
    """The hashed names through which ``assign_threads`` can join ``m`` to other messages:
    its own Message-ID, every id it cites, and, for a message that cites none, its base
    subject. Two messages ``assign_threads`` puts in one thread are connected through a
    chain of messages sharing such names, so the stored threads a new message can join are
    those of the stored messages sharing one of its names (``annotate.threads``)."""
    links = _links(m)
    names = [f"m:{i}" for i in links]
    if m.message_id:
        names.append(f"m:{m.message_id}")
    if not links:
        subject, _replied = base_subject(m.subject)
        if subject:
            names.append(f"s:{subject}")
    return {_key(n) for n in names}


def assign_threads(messages: Iterable[ThreadInput]) -> dict[object, str]:
    """Return ``{message key: thread_key}`` for every message.

    Messages that share an id through Message-ID, In-Reply-To or References are one thread;
    a message with neither In-Reply-To nor References (or whose only link is to itself) is
    then joined by subject: a reply-prefixed subject to the thread of every message with the
    same base subject. Empty subjects never join anything. The key of a thread is a hash of
    the id of its earliest message (by ``sort_key``), so it stays put when later messages
    arrive and differs between collections only if their messages differ.
    """
    uf = _UnionFind()
    nodes: dict[object, str] = {}
    unlinked: list[tuple[ThreadInput, str]] = []
    items = list(messages)
    for m in items:
        own = f"m:{m.message_id}" if m.message_id else f"k:{m.key}"
        nodes[m.key] = own
        uf.find(own)
        links = _links(m)
        for ref in links:
            uf.union(own, f"m:{ref}")
        if not links:
            unlinked.append((m, own))
    # Subjects: only for messages whose headers link them to nothing.
    by_subject: dict[str, list[tuple[str, bool, frozenset]]] = {}
    for m, own in unlinked:
        subject, replied = base_subject(m.subject)
        if subject:
            by_subject.setdefault(subject, []).append((own, replied, m.participants))
    for subject, members in by_subject.items():
        if len(members) > 1 and any(replied for _own, replied, _p in members):
            everyone = [f"s:{subject}:{p}" for _o, _r, ps in members for p in ps]
            for own, _replied, participants in members:
                # joined through each address it shares with another message of the subject;
                # a message whose addresses are unknown cannot tell, so the subject decides
                anchors = [f"s:{subject}:{p}" for p in participants] or everyone
                for anchor in anchors or [f"s:{subject}"]:
                    uf.union(own, anchor)
    # Name each thread after its earliest message (one find and one hash per thread).
    roots: dict[object, str] = {}
    earliest: dict[str, tuple[tuple, str]] = {}
    for m in items:
        node = nodes[m.key]
        root = roots[m.key] = uf.find(node)
        candidate = (m.sort_key, node)
        best = earliest.get(root)
        if best is None or candidate < best:
            earliest[root] = candidate
    names = {root: _key(node) for root, (_sort, node) in earliest.items()}
    return {key: names[root] for key, root in roots.items()}
