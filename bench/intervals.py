"""The exact intervals of ``core.stopping`` against frame size, old and new in the same run.

For a check sample of n = 385 (the +/-5% sample of a large frame) and several k, at frames
of N = 10^4 to 10^7 documents:

- new: ``stopping.hypergeometric_interval`` (each end searched for on its monotone tail),
  the median and the slowest of ``--repeat`` calls;
- old: the interval as computed before (both tails at every K the sample allows, the
  reference kept in ``tests/core/test_stopping.py``), timed once, and whether old and
  new agree. Its cost is first predicted from the tails at 200 K spread over the range
  (scipy's hypergeometric is exact by prime factorisation, and slow, below N of about
  104,700, and a fast approximation above, so the cost is not linear in N); it is run
  where the prediction is within ``--old-budget`` seconds, and always at the k given by
  ``--old-k`` (so that every N has one measured old call); elsewhere the table says
  "skipped" with the prediction;
- ``stopping.clopper_pearson(k, n)`` (beta quantiles; its cost does not depend on N) and
  ``stopping.estimate`` (the lead's page: one interval and the recall it implies).

Then the release audit's one-sided bound (docs/release-audit.md), at the same frames and at
samples of 149 and 459 (the zero-failure samples for 2% at 95% and 1% at 99%) and 2,000:
``stopping.hypergeometric_upper`` (median and slowest of ``--repeat`` calls, which must stay
under 100 ms at N = 10^7), the whole ``release_audit.certificate`` and ``sample_size``, and
the brute force beside it (the cdf at every K the sample allows, as
``tests/core/test_release_audit.py`` does), run in the same way where its predicted cost is
within ``--old-budget`` and always at n = 149, k = 0; whether the two agree.

    .venv/bin/python bench/intervals.py [--old-budget 10] [--old-k 5] [--repeat 7] [--k 0 ...]
        [--skip-two-sided]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core import release_audit, stopping  # noqa: E402
from tests.core.test_release_audit import _every_k_upper  # noqa: E402
from tests.core.test_stopping import _every_k_interval  # noqa: E402

FRAMES = (10**4, 10**5, 10**6, 10**7)


def timed(fn, repeat: int) -> tuple[object, list[float]]:
    out, times = None, []
    for _ in range(repeat):
        started = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - started)
    return out, times


def predicted_old_seconds(k: int, n: int, population: int, probes: int = 200) -> float:
    """The old code's time, from both tails at ``probes`` K spread over its range."""
    from scipy.stats import hypergeom

    first, last = k, population - (n - k)
    ks = np.unique(np.linspace(first, last, probes).astype(np.int64))
    started = time.perf_counter()
    hypergeom.sf(k - 1, population, ks, n)
    hypergeom.cdf(k, population, ks, n)
    return (time.perf_counter() - started) / len(ks) * (last - first + 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=385, help="sample size")
    parser.add_argument("--k", type=int, action="append", help="relevant in the sample")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--old-budget",
        type=float,
        default=10.0,
        help="run the old code where it is predicted to take at most this many seconds",
    )
    parser.add_argument(
        "--old-k", type=int, action="append", help="run the old code at this k at every N"
    )
    parser.add_argument("--skip-two-sided", action="store_true")
    args = parser.parse_args()
    if not args.skip_two_sided:
        two_sided(args)
    one_sided(args)


def predicted_brute_upper_seconds(k: int, n: int, population: int, probes: int = 200) -> float:
    """The brute force's time, from the cdf at ``probes`` K spread over its range."""
    from scipy.stats import hypergeom

    first, last = k, population - (n - k)
    ks = np.unique(np.linspace(first, last, probes).astype(np.int64))
    started = time.perf_counter()
    hypergeom.cdf(k, population, ks, n)
    return (time.perf_counter() - started) / len(ks) * (last - first + 1)


def one_sided(args):
    c = args.confidence
    print()
    print(
        f"one-sided (release audit), confidence {c:g}; median (max) of {args.repeat} calls; "
        f"brute force: one call where predicted <= {args.old_budget:g} s, and at n = 149, k = 0"
    )
    header = (
        f"{'N':>10} {'n':>5} {'k':>4} {'U':>9} {'upper ms':>14} {'certificate ms':>15} "
        f"{'brute s':>16} {'same':>5}"
    )
    print(header)
    print("-" * len(header))
    worst = 0.0
    for population in FRAMES:
        for n in (149, 459, 2000):
            for k in sorted({0, 1, 5, n // 50, n // 10}):
                upper, times = timed(
                    lambda k=k, n=n, population=population: stopping.hypergeometric_upper(
                        k, n, population, c
                    ),
                    args.repeat,
                )
                worst = max(worst, max(times))
                _cert, cert_times = timed(
                    lambda k=k, n=n, population=population: release_audit.certificate(
                        population, n, k, c
                    ),
                    args.repeat,
                )
                predicted = predicted_brute_upper_seconds(k, n, population)
                if predicted <= args.old_budget or (k == 0 and n == 149):
                    brute, brute_times = timed(
                        lambda k=k, n=n, population=population: _every_k_upper(k, n, population, c),
                        1,
                    )
                    brute_s = f"{brute_times[0]:.2f}"
                    same = "yes" if brute == upper else "NO"
                else:
                    brute_s, same = f"skipped (~{predicted:.0f})", "-"
                ms = f"{statistics.median(times) * 1e3:.1f} ({max(times) * 1e3:.1f})"
                cert_ms = f"{statistics.median(cert_times) * 1e3:.1f}"
                print(
                    f"{population:>10,} {n:>5} {k:>4} {upper:>9,} {ms:>14} {cert_ms:>15} "
                    f"{brute_s:>16} {same:>5}",
                    flush=True,
                )
    print(f"slowest hypergeometric_upper call: {worst * 1e3:.1f} ms (limit 100 ms)")
    print()
    print("sample_size (the calculator) at N = 10^7: median (max) ms")
    for margin, confidence, prevalence in (
        (0.02, 0.95, 0.0),
        (0.01, 0.99, 0.0),
        (0.02, 0.95, 0.05),
        (0.01, 0.99, 0.05),
    ):
        size, times = timed(
            lambda m=margin, cc=confidence, p=prevalence: release_audit.sample_size(
                10**7, m, cc, prevalence=p
            ),
            args.repeat,
        )
        print(
            f"  margin {margin:g}, confidence {confidence:g}, prevalence {prevalence:g}: "
            f"n = {size.n:,}; {statistics.median(times) * 1e3:.1f} ({max(times) * 1e3:.1f}) ms"
        )


def two_sided(args):
    ks = args.k or [0, 1, 5, 20, 100]
    old_ks = set(args.old_k or [5])
    n, c = args.n, args.confidence
    stopping.hypergeometric_interval(1, 10, 100)  # scipy's import is not the interval's cost
    stopping.clopper_pearson(1, 10)
    print(
        f"n = {n}, confidence {c:g}; new: median (max) of {args.repeat} calls; old: one call "
        f"where predicted <= {args.old_budget:g} s, and at k in {sorted(old_ks)}"
    )
    header = (
        f"{'N':>10} {'k':>4} {'interval (L, U)':>22} {'new ms':>14} {'old s':>16} "
        f"{'same':>5} {'C-P ms':>7} {'estimate ms':>12}"
    )
    print(header)
    print("-" * len(header))
    worst, slowest_old = 0.0, 0.0
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
            predicted = predicted_old_seconds(k, n, population)
            if predicted <= args.old_budget or k in old_ks:
                old, old_times = timed(
                    lambda k=k, population=population: _every_k_interval(k, n, population, c), 1
                )
                slowest_old = max(slowest_old, old_times[0])
                old_s, same = f"{old_times[0]:.2f}", "yes" if old == new else "NO"
            else:
                old_s, same = f"skipped (~{predicted:.0f})", "-"
            new_ms = f"{statistics.median(times) * 1e3:.1f} ({max(times) * 1e3:.1f})"
            print(
                f"{population:>10,} {k:>4} {str(new):>22} {new_ms:>14} {old_s:>16} {same:>5} "
                f"{statistics.median(cp_times) * 1e3:>7.2f} "
                f"{statistics.median(est_times) * 1e3:>12.1f}",
                flush=True,
            )
    print(f"slowest new call: {worst * 1e3:.1f} ms; slowest old call run: {slowest_old:.1f} s")


if __name__ == "__main__":
    main()
