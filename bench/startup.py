"""Start-up cost of the web side (`manage.py check`, importing the WSGI app) and of `make demo`.

Baseline in the same run: `python -c pass` (the interpreter alone). The demo part runs
`manage.py demo` twice on a fresh SASC_VAR_DIR: the first start (migrate, collect static
files, import the corpus, build the index, create users and projects, start web and
worker) and the second start with nothing changed, each timed until the web server answers
/health/, then stopped with SIGTERM (timed too). The corpus download is left out when a
cache exists (``--cache``, default var/cache): npm's download time is the network's.

    .venv/bin/python bench/startup.py [--no-demo] [--cache DIR]
"""

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(args, runs=5):
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(args, cwd=ROOT, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times), max(times)


def demo_start(var_dir: Path, port: int) -> tuple[float, float, str]:
    """Start `manage.py demo`; return seconds until it serves, seconds to stop, its output."""
    env = {**os.environ, "SASC_VAR_DIR": str(var_dir), "SASC_PORT": str(port)}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "demo"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    out = []
    for line in proc.stdout:
        out.append(line)
        if re.match(r"sasc is running at ", line):
            break
    else:
        proc.wait()
        raise SystemExit("the demo did not start:\n" + "".join(out))
    serving = time.perf_counter() - started
    stopping = time.perf_counter()
    os.killpg(proc.pid, signal.SIGTERM)  # as a terminal's Ctrl-C reaches the whole group
    out.append(proc.communicate(timeout=120)[0])
    return serving, time.perf_counter() - stopping, "".join(out)


def demo_rows(cache: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix="sasc-bench-demo-") as tmp:
        var_dir = Path(tmp)
        if cache is not None and cache.is_dir():
            shutil.copytree(cache, var_dir / "cache", symlinks=True)
        for label in ("first start (empty var/)", "second start (nothing changed)"):
            serving, stopping, out = demo_start(var_dir, 8790)
            ready = re.search(r"Demo ready \(([\d.]+) s\)", out)
            print(
                f"demo {label:<31} serving after {serving:6.1f} s (setup "
                f"{ready.group(1) if ready else '?'} s); stopped in {stopping:4.1f} s"
                + (" (a process killed after the grace)" if "killing it" in out else "")
            )
            for line in out.splitlines():
                if line.startswith("  (") and line.endswith(" s)"):
                    print(f"    {line.strip()}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-demo", action="store_true", help="only the web start-up rows")
    parser.add_argument(
        "--cache",
        type=Path,
        default=ROOT / "var" / "cache",
        help="a var/cache holding the downloaded corpus, copied to the fresh var/",
    )
    opts = parser.parse_args()
    py = sys.executable
    rows = [
        ("python -c pass (baseline)", [py, "-c", "pass"]),
        ("manage.py check", [py, "manage.py", "check"]),
        ("import config.wsgi", [py, "-c", "import config.wsgi, config.urls"]),
    ]
    for label, args in rows:
        median, worst = timed(args)
        print(f"{label:<28} median {median:5.2f} s   max {worst:5.2f} s")
    out = subprocess.run(
        [
            py,
            "-c",
            "import sys, config.wsgi, config.urls;"
            "print(any(m in sys.modules for m in ('pyserini', 'jnius', 'torch')))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    print(f"web process imported pyserini/JVM/torch at start-up: {out.stdout.strip()}")
    if not opts.no_demo:
        demo_rows(opts.cache)


if __name__ == "__main__":
    main()
