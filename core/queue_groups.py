"""Threads of the archivist's queue, pure: no Django.

Two queued messages are in one group when
- they carry the same thread key (the importer's Message-ID / In-Reply-To / References
  thread, when the caller gives one), or
- their subjects are the same once normalised (reply and forward prefixes and mailing-list
  tags stripped, case and spacing folded) and they share at least one participant (sender
  or recipient); messages without any participant group by subject alone, or
- they are in one near-duplicate cluster (``core.neardup``: the same text sent, forwarded
  or pasted again, whatever the subject says).
Grouping is transitive: A and B share Ann, B and C share Bob, so A, B and C are one group.
Each group says which of these joined it (``reasons``), so the archivist knows whether they
are reading one conversation or one text many times.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

# "Re:", "RE[2]:", "Fwd:", "Fw:", "AW:" (German), "SV:" (Scandinavian), "WG:", "TR:", and
# mailing-list tags such as "[Razor-users]", in any order and repeated.
_PREFIX = re.compile(
    r"^\s*(?:(?:re|fwd?|aw|sv|wg|tr|antw)\s*(?:\[\d+\]|\(\d+\))?\s*:|\[[^\]]{1,40}\])\s*",
    re.IGNORECASE,
)


def subject_normalised(subject: str) -> str:
    """Return the subject without reply/forward prefixes and list tags, spaces folded
    (case kept for showing; ``thread_key`` folds it)."""
    text = " ".join((subject or "").split())
    while True:
        stripped = _PREFIX.sub("", text, count=1)
        if stripped == text:
            return text
        text = stripped


@dataclass
class Thread:
    """Queue items of one thread, in the order they were given."""

    subject: str  # normalised, as the first item has it
    participants: set[str] = field(default_factory=set)
    items: list = field(default_factory=list)
    reasons: set[str] = field(default_factory=set)  # "thread", "subject", "near-duplicate"


def threads_group(
    items: Iterable, *, subject, participants, thread=None, cluster=None
) -> list[Thread]:
    """Group ``items`` into threads, in the order of each thread's first item.

    ``subject(item)`` and ``participants(item)`` (addresses, compared case-insensitively) say
    what an item is; ``thread(item)`` its thread key and ``cluster(item)`` its near-duplicate
    cluster, when given (a falsy key joins nothing). The items of a thread keep their given
    order."""
    items = list(items)
    parent = list(range(len(items)))
    joined: list[tuple[int, str]] = []  # (item, why it joined another)

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int, why: str) -> None:
        joined.append((i, why))
        a, b = find(i), find(j)
        if a != b:
            parent[max(a, b)] = min(a, b)  # the earliest item stays the root

    for key_of, why in ((thread, "thread"), (cluster, "near-duplicate")):
        if key_of is None:
            continue
        first: dict = {}
        for i, it in enumerate(items):
            key = key_of(it)
            if key:
                if key in first:
                    union(first[key], i, why)
                else:
                    first[key] = i

    people = [{p.strip().lower() for p in participants(it) if p and p.strip()} for it in items]
    by_subject: dict[str, dict[str, int]] = {}  # subject -> participant -> first item
    alone: dict[str, int] = {}  # subject -> first item without participants
    for i, it in enumerate(items):
        s = subject_normalised(subject(it)).casefold()
        if not people[i]:
            if s in alone:
                union(alone[s], i, "subject")
            else:
                alone[s] = i
            continue
        seen = by_subject.setdefault(s, {})
        for person in people[i]:
            if person in seen:
                union(seen[person], i, "subject")
            else:
                seen[person] = i
    groups: dict[int, Thread] = {}
    for i, it in enumerate(items):
        root = find(i)
        if root not in groups:
            groups[root] = Thread(subject_normalised(subject(items[root])))
        groups[root].items.append(it)
        groups[root].participants |= people[i]
    for i, why in joined:
        groups[find(i)].reasons.add(why)
    return list(groups.values())


_QUOTE_INTRO = re.compile(r"^\s*(on .{0,120}wrote:|-+\s*original message\s*-+)\s*$", re.I)


def body_snippet(body: str, length: int = 220) -> str:
    """Return the opening of a message's own words: quoted lines (``>``), the line that
    introduces a quote, and blank lines left out, spaces folded, cut at a word near
    ``length`` characters (an ellipsis marks the cut). A message that is all quote gives
    its quote."""
    lines = (body or "").splitlines()
    own = [
        ln
        for ln in lines
        if ln.strip() and not ln.lstrip().startswith(">") and not _QUOTE_INTRO.match(ln)
    ]
    text = " ".join(" ".join(own or lines).split())
    if len(text) <= length:
        return text
    cut = text.rfind(" ", 0, length)
    return text[: cut if cut > length // 2 else length].rstrip(" ,;:") + "…"
