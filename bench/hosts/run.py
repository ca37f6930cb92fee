"""Run sasc on several hosts of this machine, break them on purpose, and stop everything.

    sudo .venv/bin/python bench/hosts/run.py [--scenarios kill-storm,release,index,...]
        [--broken stale-view|publish-first|no-acks-late] [--keep-going]
    make hosts

A database host (its own PostgreSQL 15 cluster and Redis), two application hosts (gunicorn
and Celery workers on the queues of ``CELERY_TASK_ROUTES``) and an nginx load balancer, each
in its own network namespace (``bench/hosts/cluster.py``); then the scenarios of
``bench/hosts/scenarios.py``, each printing one line of figures and PASS or FAIL. Whatever
happens (a failure, Ctrl-C, SIGTERM) every process, namespace, link and temporary folder
made here is removed before it exits; the last line says so. Needs root (``ip netns``).
Exit status: 0 if every scenario passed, 1 if one failed, 2 if the hosts did not start.
"""

import argparse
import os
import signal
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.hosts import scenarios  # noqa: E402
from bench.hosts.broken import BROKEN  # noqa: E402
from bench.hosts.cluster import Cluster, live_runs, sweep_leftovers  # noqa: E402


class Stop(BaseException):
    """SIGINT or SIGTERM arrived: unwind to the cleanup."""


def _raise_stop(signum, frame):
    raise Stop(signal.Signals(signum).name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scenarios",
        default=",".join(scenarios.ORDER),
        help=f"comma-separated, of {', '.join(scenarios.ORDER)} (default: all, in that order)",
    )
    parser.add_argument("--broken", default="", help=f"a broken build: {', '.join(BROKEN)}")
    parser.add_argument("--workers-per-host", type=int, default=1)
    args = parser.parse_args()
    chosen = [s for s in args.scenarios.split(",") if s]
    unknown = [s for s in chosen if s not in scenarios.ORDER]
    if unknown:
        known = ", ".join(scenarios.ORDER)
        parser.error(f"unknown scenario {', '.join(unknown)}: expected one of {known}")
    if args.broken and args.broken not in BROKEN:
        parser.error(f"--broken {args.broken!r}: expected one of {', '.join(sorted(BROKEN))}")
    if os.geteuid() != 0:
        print("bench/hosts/run.py needs root (ip netns, veth links, a PostgreSQL cluster)")
        return 2
    if live_runs():
        print(f"another run of the harness is going on (driver {sorted(live_runs())}): wait")
        return 2
    for what in sweep_leftovers():
        print(f"removed a leftover of an earlier run: {what}")
    signal.signal(signal.SIGINT, _raise_stop)
    signal.signal(signal.SIGTERM, _raise_stop)
    cluster = Cluster(workers_per_host=args.workers_per_host)
    cluster.broken = args.broken
    results: list[scenarios.Result] = []
    status = 0
    started = time.monotonic()
    try:
        print(f"==> starting the hosts (folder {cluster.tmp})", flush=True)
        try:
            cluster.start()
        except Exception:
            traceback.print_exc()
            status = 2
            return status
        print(
            f"==> up in {time.monotonic() - started:.0f} s: db {cluster.db.back}, "
            f"lb {cluster.lb.front}, a {cluster.a.front}/{cluster.a.back}, "
            f"b {cluster.b.front}/{cluster.b.back}; worker queues {cluster._queues}"
            + (f"; BROKEN BUILD {args.broken}" if args.broken else ""),
            flush=True,
        )
        world = scenarios.World.make(cluster)
        for name in chosen:
            t0 = time.monotonic()
            try:
                result = scenarios.SCENARIOS[name](cluster, world)
            except Stop:
                raise
            except Exception as exc:
                traceback.print_exc()
                result = scenarios.Result(name, False, f"raised {type(exc).__name__}: {exc}")
            result.seconds = time.monotonic() - t0
            results.append(result)
            print(result.line(), flush=True)
            scenarios.heal(cluster)
        status = 0 if all(r.passed for r in results) else 1
    except Stop as why:
        print(f"==> stopped by {why}", flush=True)
        status = 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the cleanup itself is not interrupted
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        scenarios.close_django()
        left = cluster.stop()
        print("==> scenarios:")
        for r in results:
            print("   " + r.line())
        print(
            f"==> stopped everything it started in {time.monotonic() - started:.0f} s"
            if not left
            else f"==> COULD NOT REMOVE: {', '.join(left)}",
            flush=True,
        )
        if left:
            status = status or 1
    return status


if __name__ == "__main__":
    sys.exit(main())
