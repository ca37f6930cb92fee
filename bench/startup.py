"""Start-up cost of the web side: `manage.py check` and importing the WSGI app.

Baseline in the same run: `python -c pass` (the interpreter alone).

    .venv/bin/python bench/startup.py
"""

import statistics
import subprocess
import sys
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


def main():
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


if __name__ == "__main__":
    main()
