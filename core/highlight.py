"""Escape untrusted text and mark the words a query matched, for snippets and documents.

Pure: the caller passes ``stem``, the analysis the index used (``core.lucene.stem``), so a
highlighted word is exactly a word the query matched. The output is HTML whose only markup is
``<mark>`` and ``<br>``; every character of the input is escaped.
"""

import html
import re
from collections.abc import Callable, Iterable

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)


def query_stems(query: str, stem: Callable[[str], str]) -> frozenset[str]:
    """Return the analysed terms of a query, without stopwords."""
    return frozenset(s for s in (stem(w) for w in _WORD.findall(query)) if s)


def _matches(text: str, stems: frozenset[str], stem: Callable[[str], str]):
    if not stems:
        return []
    return [m.span() for m in _WORD.finditer(text) if stem(m.group()) in stems]


def _render(text: str, spans: Iterable[tuple[int, int]], *, breaks: bool) -> str:
    out, pos = [], 0
    for start, end in spans:
        out.append(html.escape(text[pos:start]))
        out.append(f"<mark>{html.escape(text[start:end])}</mark>")
        pos = end
    out.append(html.escape(text[pos:]))
    rendered = "".join(out)
    return rendered.replace("\n", "<br>\n") if breaks else rendered


def highlight(text: str, stems: frozenset[str], stem: Callable[[str], str]) -> str:
    """Return all of ``text`` escaped, line breaks kept, matched words in ``<mark>``."""
    return _render(text, _matches(text, stems, stem), breaks=True)


def snippet(
    text: str, stems: frozenset[str], stem: Callable[[str], str], *, width: int = 240
) -> str:
    """Return an escaped window of about ``width`` characters holding the most matches."""
    flat = " ".join(text.split())
    spans = _matches(flat, stems, stem)
    if len(flat) <= width:
        return _render(flat, spans, breaks=False)
    if not spans:
        return html.escape(flat[:width].rsplit(" ", 1)[0]) + " …"
    best_start, best_count = spans[0][0], 0
    for i, (start, _end) in enumerate(spans):
        count = sum(1 for s, e in spans[i:] if e <= start + width)
        if count > best_count:
            best_start, best_count = start, count
    begin = max(0, best_start - width // 4)
    if begin:
        space = flat.find(" ", begin)
        begin = space + 1 if 0 <= space < best_start else begin
    end = min(len(flat), begin + width)
    if end < len(flat):
        space = flat.rfind(" ", begin, end)
        end = space if space > begin else end
    window = [(s - begin, e - begin) for s, e in spans if s >= begin and e <= end]
    prefix = "… " if begin else ""
    suffix = " …" if end < len(flat) else ""
    return prefix + _render(flat[begin:end], window, breaks=False) + suffix


_SUFFIXES = ("ing", "edly", "ed", "es", "s", "ly")


def light_stem(word: str) -> str:
    """Return a cheap English stem (lower case, common suffixes cut), '' for short stopwords.

    For pages that must not wait for the JVM (the judging page): close to, but not exactly,
    Lucene's Porter analysis.
    """
    w = word.lower()
    if w in _STOP or len(w) < 2:  # single letters and digits ("8.0") only add noise
        return ""
    for suffix in _SUFFIXES:
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            w = w[: -len(suffix)]
            break
    # "upgrade", "upgrades", "upgraded", "upgrading" all become "upgrad".
    return w[:-1] if len(w) > 3 and w.endswith("e") else w


_STOP = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "has", "have", "in",
    "into", "is", "it", "its", "of", "on", "or", "that", "the", "their", "there", "these",
    "they", "this", "to", "was", "were", "will", "with", "about", "after", "all", "also",
    "any", "can", "not",
})  # fmt: skip


def highlight_entities(
    text: str,
    entities,
    stems: frozenset[str] = frozenset(),
    stem: Callable[[str], str] | None = None,
    *,
    labels: dict[str, str] | None = None,
    first: int = 0,
) -> str:
    """Return all of ``text`` escaped, line breaks kept, each entity (``kind``, ``start``,
    ``end`` attributes, no overlaps) in ``<mark class="ent ent-KIND">`` numbered from
    ``first`` (``id="ent-N"``, for a key to jump between them), and the query's words
    marked outside them. ``labels``: kind -> what the mark's title says."""
    out, pos, n = [], 0, first
    for e in sorted(entities, key=lambda e: e.start):
        if e.start < pos or e.end > len(text):
            continue  # overlapping or stale (the text changed since): skip, never mis-mark
        gap = text[pos : e.start]
        out.append(_render(gap, _matches(gap, stems, stem) if stem else [], breaks=True))
        title = html.escape((labels or {}).get(e.kind, e.kind), quote=True)
        out.append(
            f'<mark class="ent ent-{html.escape(e.kind, quote=True)}" id="ent-{n}" '
            f'title="{title}">{html.escape(text[e.start : e.end]).replace(chr(10), "<br>")}</mark>'
        )
        n += 1
        pos = e.end
    rest = text[pos:]
    out.append(_render(rest, _matches(rest, stems, stem) if stem else [], breaks=True))
    return "".join(out)
