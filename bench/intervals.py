"""The exact intervals of ``ranking.stopping`` against frame size, old and new in the same run.

For a check sample of n = 385 (the +/-5% sample of a large frame) and several k, at frames
of N = 10^4 to 10^7 documents:

- new: ``stopping.hypergeometric_interval`` (bisection on each monotone tail), the median
  and the slowest of ``--repeat`` calls;
- old: the interval as computed before (both tails at every K the sample allows, the
  reference kept in ``tests/ranking/test_stopping.py``), timed once: at every k where
  N <= 10,000 (about a second each), and where N <= ``--old-max`` only at the k given by
  ``--old-k`` (a minute or more each at N = 100,000: the reason for the change; ten times
  that at 10^6); the table says where it was skipped, and whether old and new agree;
- ``stopping.clopper_pearson(k, n)`` (beta quantiles; its cost does not depend on N) and
  ``stopping.estimate`` (the lead's page: one interval and the recall it implies).

    .venv/bin/python bench/intervals.py [--old-max 100000] [--old-k 5] [--repeat 7] [--k 0 ...]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ranking import stopping  # noqa: E402
from tests.ranking.test_stopping import _every_k_interval  # noqa: E402

FRAMES = (10**4, 10**5, 10**6, 10**7)


def timed(fn, repeat: int) -> tuple[object, list[float]]:
    out, times = None, []
    for _ in range(repeat):
        started = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - started)
    return out, times


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=385, help="sample size")
    parser.add_argument("--k", type=int, action="append", help="relevant in the sample")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--old-max", type=int, default=10**5, help="largest N the old code is run at"
    )
    parser.add_argument(
        "--old-k", type=int, action="append", help="the k the old code is run at above 10,000"
    )
    args = parser.parse_args()
    ks = args.k or [0, 1, 5, 20, 100]
    old_ks = set(args.old_k or [5])
    n, c = args.n, args.confidence
    stopping.hypergeometric_interval(1, 10, 100)  # scipy's import is not the interval's cost
    stopping.clopper_pearson(1, 10)
    print(f"n = {n}, confidence {c:g}; new: median (max) of {args.repeat} calls; old: one call")
    header = (
        f"{'N':>10} {'k':>4} {'interval (L, U)':>22} {'new ms':>14} {'old s':>9} "
        f"{'same':>5} {'C-P ms':>7} {'estimate ms':>12}"
    )
    print(header)
    print("-" * len(header))
    worst = 0.0
    for population in FRAMES:
        for k in ks:
            new, times = timed(
                lambda k=k, population=population: stopping.hypergeometric_interval(
                    k, n, population, c
                ),
                args.repeat,
            )
            worst = max(worst, max(times))
            _cp, cp_times = timed(lambda k=k: stopping.clopper_pearson(k, n, c), args.repeat)
            _est, est_times = timed(
                lambda k=k, population=population: stopping.estimate(
                    frame=population,
                    sampled=n,
                    sample_relevant=k,
                    relevant_outside=0,
                    found=k,
                    confidence=c,
                ),
                args.repeat,
            )
            if population <= 10**4 or (population <= args.old_max and k in old_ks):
                old, old_times = timed(
                    lambda k=k, population=population: _every_k_interval(k, n, population, c), 1
                )
                old_s, same = f"{old_times[0]:9.2f}", "yes" if old == new else "NO"
            else:
                old_s, same = f"{'skipped':>9}", "-"
            new_ms = f"{statistics.median(times) * 1e3:.1f} ({max(times) * 1e3:.1f})"
            print(
                f"{population:>10,} {k:>4} {str(new):>22} {new_ms:>14} {old_s} {same:>5} "
                f"{statistics.median(cp_times) * 1e3:>7.2f} "
                f"{statistics.median(est_times) * 1e3:>12.1f}",
                flush=True,
            )
    print(
        f"slowest new call: {worst * 1e3:.1f} ms; old run at every k up to N = 10,000, at "
        f"k in {sorted(old_ks)} up to N = {args.old_max:,}, skipped elsewhere"
    )


if __name__ == "__main__":
    main()
