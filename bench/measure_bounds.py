"""How often the dissertation's greedy algorithms 1 and 2 (sec. 4.3), as printed, miss the
worst and best CS-DCG@k that brute force over every full-length ordering finds, on random
small queries (Cs = 12, binary sensitivity); ``core.measures.cs_dcg_bounds`` (exact
assignments over lists of every length up to k) against brute force over every such list;
and how many lists a system could return (any length up to k) score outside [0, 1] with
full-length bounds and with the any-length ones, in the same run.

    .venv/bin/python bench/measure_bounds.py [--cases 2000]
"""

import argparse
import itertools
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core import measures as m  # noqa: E402


def _fill(slots, docs, from_top: bool):
    order = range(len(slots)) if from_top else reversed(range(len(slots)))
    docs = list(docs)
    for i in order:
        if slots[i] is None and docs:
            slots[i] = docs.pop(0)


def _start(rel, sen, k):
    """Empty slots, the four (relevant?, sensitive?) groups, and a most-relevant-first sort."""
    docs = sorted(rel)
    group = {
        (r, s): [d for d in docs if (rel[d] > 0) == r and sen[d] == s]
        for r in (False, True)
        for s in (False, True)
    }
    return [None] * min(k, len(docs)), group, lambda ds: sorted(ds, key=lambda d: -rel[d])


def algorithm_1(rel, sen, k):
    """The worst ranking, as printed."""
    slots, group, highest_first = _start(rel, sen, k)
    _fill(slots, group[(False, True)], from_top=True)
    # "less relevant documents on top of higher relevant ones", filled from the bottom
    _fill(slots, highest_first(group[(True, True)]), from_top=False)
    _fill(slots, group[(False, False)], from_top=True)
    _fill(slots, highest_first(group[(True, False)]), from_top=False)
    return slots


def algorithm_2(rel, sen, k):
    """The best ranking, as printed."""
    slots, group, highest_first = _start(rel, sen, k)
    _fill(slots, highest_first(group[(True, False)]), from_top=True)
    _fill(slots, group[(False, False)], from_top=False)
    _fill(slots, highest_first(group[(True, True)]), from_top=True)
    _fill(slots, group[(False, True)], from_top=False)
    return slots


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=2000)
    args = parser.parse_args()
    rnd = random.Random(1)
    missed = {"algorithm 2 (best)": 0, "algorithm 1 (worst)": 0, "exact bounds": 0}
    outside = {"full-length bounds": 0, "any-length bounds": 0}
    lists_seen = 0
    for _ in range(args.cases):
        names = [f"d{i}" for i in range(rnd.randint(1, 6))]
        k = rnd.randint(1, 6)
        rel = {d: rnd.choice([0, 1, 2]) for d in names}
        sen = {d: rnd.random() < 0.4 for d in names}
        full = [m.cs_dcg(list(p), rel, sen, k=k) for p in itertools.permutations(names)]
        lists = [
            list(p) for n in range(min(k, len(names)) + 1) for p in itertools.permutations(names, n)
        ]
        values = [m.cs_dcg(p, rel, sen, k=k) for p in lists]
        if abs(m.cs_dcg(algorithm_2(rel, sen, k), rel, sen, k=k) - max(full)) > 1e-9:
            missed["algorithm 2 (best)"] += 1
        if abs(m.cs_dcg(algorithm_1(rel, sen, k), rel, sen, k=k) - min(full)) > 1e-9:
            missed["algorithm 1 (worst)"] += 1
        low, high = m.cs_dcg_bounds(rel, sen, k=k, candidates=names)
        if abs(low - min(values)) > 1e-9 or abs(high - max(values)) > 1e-9:
            missed["exact bounds"] += 1
        for name, (lo, hi) in (
            ("full-length bounds", (min(full), max(full))),
            ("any-length bounds", (low, high)),
        ):
            if hi - lo > 1e-12:
                outside[name] += sum(not -1e-9 <= (v - lo) / (hi - lo) <= 1 + 1e-9 for v in values)
        lists_seen += len(values)
    for name, n in missed.items():
        print(f"{name:<22} differs from brute force in {n:5d} of {args.cases} random queries")
    for name, n in outside.items():
        print(f"nCS-DCG with {name:<19} outside [0, 1] for {n:6d} of {lists_seen} lists")


if __name__ == "__main__":
    main()
