"""TREC runs and their evaluation with ir_measures (pure: no Django).

Conventions (docs/domain.md §7): grades 0/1/2, gain 2^rel - 1, discount 1/log2(i + 2); that is
ir_measures' ``nDCG(dcg='exp-log2')``.
"""

import re
from collections.abc import Iterable, Mapping
from typing import TextIO

Run = Mapping[str, list[tuple[str, float]]]  # topic -> [(docid, score)] best first
Qrels = Mapping[str, Mapping[str, int]]  # topic -> docid -> grade

DEFAULT_MEASURES = ("nDCG(dcg='exp-log2')@10", "P@10", "AP", "R@100")


# What may not stand inside one field of a TREC file (qrels, runs, sensitivity labels): any
# whitespace (the field separator; Unicode's too, since ``str.split`` splits on it, and the
# line breaks ``str.splitlines`` knows) and control characters (NUL, escape, C1 controls).
_UNSAFE = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


def field_problem(value: str) -> str | None:
    """Return why ``value`` cannot be one field of a TREC file, or None when it can."""
    if not value:
        return "is empty"
    match = _UNSAFE.search(value)
    if match is None:
        return None
    char = match.group()
    kind = "whitespace" if char.isspace() else "a control character"
    return f"holds {kind} ({char!r}) at position {match.start() + 1}"


def trec_field(value) -> str:
    """Return ``value`` as one field of a TREC file: each whitespace or control character
    percent-encoded (``a b`` -> ``a%20b``), so an id stored before ids were checked can
    never split a line or add one."""
    text = str(value)
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), text)


def write_trec_run(run: Run, out: TextIO, *, tag: str = "sasc") -> None:
    """Write ``topic Q0 docno rank score tag`` lines, ranks from 1, topics in natural order;
    fields pass through ``trec_field``."""
    tag = trec_field(tag)
    for topic in sorted(run, key=topic_key):
        name = trec_field(topic)
        for rank, (docid, score) in enumerate(run[topic], 1):
            out.write(f"{name} Q0 {trec_field(docid)} {rank} {score:.6f} {tag}\n")


def topic_key(number: str):
    """Topics sort by number: numerically when they are numbers, else as text."""
    return (0, int(number), "") if number.isascii() and number.isdigit() else (1, 0, number)


def evaluate(qrels: Qrels, run: Run, measures: Iterable[str] = DEFAULT_MEASURES) -> dict:
    """Return the mean of each measure over the topics that have judgments.

    Topics in the run without any judgment are left out, as trec_eval does.
    """
    import ir_measures

    parsed = [ir_measures.parse_measure(m) for m in measures]
    qrels_list = [
        ir_measures.Qrel(str(t), str(d), int(g))
        for t, docs in qrels.items()
        for d, g in docs.items()
    ]
    run_list = [
        ir_measures.ScoredDoc(str(t), str(d), float(s))
        for t, hits in run.items()
        if t in qrels
        for d, s in hits
    ]
    results = ir_measures.calc_aggregate(parsed, qrels_list, run_list)
    return {str(m): float(results.get(m, 0.0)) for m in parsed}
