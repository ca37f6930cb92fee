"""How fast the copies of a redacted string are found in the index (issue 20,
docs/redaction.md): ``Postings.holding`` over synthetic postings of 100,000 documents of 150
terms each (Zipf-like word frequencies), a rare term and a two-common-word phrase.

    python bench/redaction_copies.py
"""

import random
import sys
import time

from _setup import ROOT

sys.path.insert(0, str(ROOT))
from ranking.visible import Postings  # noqa: E402


def main(n_docs: int = 100_000, n_terms: int = 150, vocabulary: int = 50_000) -> None:
    rng = random.Random(1)
    words = [f"w{i}" for i in range(vocabulary)]
    docs = [
        (f"d{i}", [words[int(rng.paretovariate(1.2)) % vocabulary] for _ in range(n_terms)])
        for i in range(n_docs)
    ]
    for i in (5, n_docs - 7):
        docs[i][1].append("8876543210")
    t = time.perf_counter()
    postings = Postings.build(docs)
    print(f"postings of {n_docs:,} documents built in {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    found = postings.holding(["8876543210"])
    print(f"first look-up (builds the CSC form once): {(time.perf_counter() - t) * 1000:.0f} ms")
    assert found == {"d5", f"d{n_docs - 7}"}
    t = time.perf_counter()
    for _ in range(100):
        postings.holding(["8876543210"])
        postings.holding(["w3", "w1000"])
    per = (time.perf_counter() - t) * 1000 / 100
    print(f"a rare term and a two-common-word phrase: {per:.1f} ms per pair of look-ups")


if __name__ == "__main__":
    main()
