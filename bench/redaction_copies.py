"""How fast the documents holding a redacted value are found by content (issue 31,
docs/redaction.md): ``core.writings.Scanner`` (the letters-and-digits projection of each
text, a substring test of each key, the exact pattern only where one occurs) against the
exact pattern alone on every text, over generated mail (``bench/mailgen.py``) with a few
planted writings of the values, in one run.

    python bench/redaction_copies.py [--messages 20000]
"""

import argparse
import mailbox
import sys
import tempfile
import time
from pathlib import Path

from _setup import ROOT

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import mailgen  # noqa: E402

from core import writings  # noqa: E402

VALUES = ["(617) 555-0199", "DE89 3704 0044 0532 0130 00", "98765432101", "Maeve Gallagher"]
PLANTED = [
    "call 617 - 555 - 0199",
    "IBAN DE89370400440532013000",
    "acct 98765\n> 432101",
    "MAEVE\n> GALLAGHER",
]


def texts(n: int) -> list[list[str]]:
    """``n`` generated messages as the texts a scan reads (subject, body, headers)."""
    with tempfile.TemporaryDirectory() as tmp:
        mailgen.generate(Path(tmp), n, seed=7)
        out = []
        for path in sorted(Path(tmp).glob("*.mbox")):
            for message in mailbox.mbox(path):
                # the text a collection stores: its text parts decoded (attachments apart)
                parts = [p for p in message.walk() if p.get_content_maintype() == "text"]
                body = "\n".join(
                    (p.get_payload(decode=True) or b"").decode("utf-8", "replace") for p in parts
                )
                out.append(
                    [str(message["subject"] or ""), str(body), str(message["from"] or "")]
                    + [str(message["to"] or ""), str(message["cc"] or "")]
                )
    return out[:n]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=20_000)
    args = parser.parse_args()
    docs = texts(args.messages)
    step = max(1, len(docs) // len(PLANTED))
    for i, line in enumerate(PLANTED):
        docs[i * step][1] += "\n" + line
    size = sum(len(t) for d in docs for t in d) / 1e6
    print(f"{len(docs):,} generated messages, {size:.1f} MB of text")

    scanner = writings.Scanner(VALUES)
    t = time.perf_counter()
    found = {i for i, d in enumerate(docs) if scanner.held(d)}
    scan = time.perf_counter() - t
    assert {i * step for i in range(len(PLANTED))} <= found, found

    pattern = writings.pattern(VALUES)
    t = time.perf_counter()
    exact = {i for i, d in enumerate(docs) if any(pattern.search(x) for x in d if x)}
    alone = time.perf_counter() - t
    assert exact == found, exact ^ found

    per_k = 1000 / len(docs)
    print(
        f"scanner (projection, then the exact pattern): {scan:.2f} s, "
        f"{scan * per_k * 1000:.1f} ms per 1,000 messages, {size / scan:.0f} MB/s"
    )
    print(
        f"baseline, the exact pattern alone:            {alone:.2f} s, "
        f"{alone * per_k * 1000:.1f} ms per 1,000 messages, {size / alone:.1f} MB/s"
    )
    print(
        f"found the same {len(found)} messages; scanner {alone / scan:.1f}x faster; "
        f"at 500,000 such messages: {scan / len(docs) * 500_000:.0f} s "
        f"(baseline {alone / len(docs) * 500_000:.0f} s)"
    )


if __name__ == "__main__":
    main()
