"""TREC runs and their evaluation with ir_measures (pure: no Django).

Conventions (DOMAIN.md §7): grades 0/1/2, gain 2^rel - 1, discount 1/log2(i + 2); that is
ir_measures' ``nDCG(dcg='exp-log2')``.
"""

from collections.abc import Iterable, Mapping
from typing import TextIO

Run = Mapping[str, list[tuple[str, float]]]  # topic -> [(docid, score)] best first
Qrels = Mapping[str, Mapping[str, int]]  # topic -> docid -> grade

DEFAULT_MEASURES = ("nDCG(dcg='exp-log2')@10", "P@10", "AP", "R@100")


def write_trec_run(run: Run, out: TextIO, *, tag: str = "sasc") -> None:
    """Write ``topic Q0 docno rank score tag`` lines, ranks from 1, topics in natural order."""
    for topic in sorted(run, key=topic_key):
        for rank, (docid, score) in enumerate(run[topic], 1):
            out.write(f"{topic} Q0 {docid} {rank} {score:.6f} {tag}\n")


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
