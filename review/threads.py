"""Threads of the archivist's queue, pure: no Django.

A first, simple grouping (a later issue adds near-duplicate clusters): two queued messages
are in one thread when their subjects are the same once normalised (reply and forward
prefixes and mailing-list tags stripped, case and spacing folded) and they share at least
one participant (sender or recipient). Sharing is transitive: A and B share Ann, B and C
share Bob, so A, B and C are one thread. Messages without any participant group by subject
alone.
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


def threads_group(items: Iterable, *, subject, participants) -> list[Thread]:
    """Group ``items`` into threads, in the order of each thread's first item.

    ``subject(item)`` and ``participants(item)`` (addresses, compared case-insensitively) say
    what an item is; the items of a thread keep their given order."""
    items = list(items)
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        a, b = find(i), find(j)
        if a != b:
            parent[max(a, b)] = min(a, b)  # the earliest item stays the root

    people = [{p.strip().lower() for p in participants(it) if p and p.strip()} for it in items]
    by_subject: dict[str, dict[str, int]] = {}  # subject -> participant -> first item
    alone: dict[str, int] = {}  # subject -> first item without participants
    for i, it in enumerate(items):
        s = subject_normalised(subject(it)).casefold()
        if not people[i]:
            if s in alone:
                union(alone[s], i)
            else:
                alone[s] = i
            continue
        seen = by_subject.setdefault(s, {})
        for person in people[i]:
            if person in seen:
                union(seen[person], i)
            else:
                seen[person] = i
    groups: dict[int, Thread] = {}
    for i, it in enumerate(items):
        root = find(i)
        if root not in groups:
            groups[root] = Thread(subject_normalised(subject(items[root])))
        groups[root].items.append(it)
        groups[root].participants |= people[i]
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
