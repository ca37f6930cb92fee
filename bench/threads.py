"""Threading speed: ``assign_threads`` over N synthetic messages (threads of 1-12 replies,
a third of replies without headers, linked by subject only), against a baseline that only
hashes each message's own id (the least any key assignment costs) in the same run.

    python bench/threads.py [N]    (default 500000)
"""

import hashlib
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.parsing.mail_threads import ThreadInput, assign_threads  # noqa: E402


def messages(n: int, seed: int = 19) -> list[ThreadInput]:
    rng = random.Random(seed)
    out: list[ThreadInput] = []
    thread = 0
    while len(out) < n:
        thread += 1
        root = f"t{thread}.0@example.org"
        subject = f"Topic {thread} of the quarter"
        out.append(ThreadInput(len(out), root, "", (), subject, (f"{thread:09d}.0", "")))
        parent = root
        for r in range(1, rng.randint(1, 12)):
            if len(out) >= n:
                break
            mid = f"t{thread}.{r}@example.org"
            if rng.random() < 0.33:  # a client that drops the headers
                item = ThreadInput(
                    len(out), mid, "", (), f"Re: {subject}", (f"{thread:09d}.{r}", "")
                )
            else:
                item = ThreadInput(
                    len(out),
                    mid,
                    parent,
                    (root, parent),
                    f"RE: {subject}",
                    (f"{thread:09d}.{r}", ""),
                )
            out.append(item)
            parent = mid
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500_000
    items = messages(n)
    started = time.perf_counter()
    baseline = {m.key: hashlib.sha256(m.message_id.encode()).hexdigest()[:32] for m in items}
    base_s = time.perf_counter() - started
    started = time.perf_counter()
    keys = assign_threads(items)
    took = time.perf_counter() - started
    threads = len(set(keys.values()))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"messages {n}, threads found {threads} (generated {items[-1].sort_key[0][:9].lstrip('0')})"
    )
    print(f"baseline (hash own id): {base_s:.2f} s, {n / base_s:,.0f} msg/s")
    print(f"assign_threads:         {took:.2f} s, {n / took:,.0f} msg/s")
    print(f"peak RSS {peak:.0f} MB; {len(baseline)} baseline keys")


if __name__ == "__main__":
    main()
