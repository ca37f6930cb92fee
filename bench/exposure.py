"""One document's exposing queries at 100,000 messages, against brute force in the same run.

The collection is synthetic and says so: 100,000 messages of a 6-word subject and an 80-word
body drawn from a Zipf distribution (exponent 1.05) over 30,000 made-up pronounceable words
(letters only, so Lucene's analysis keeps them as words and the Porter stemmer sees real
suffixes now and then). P(sensitive) is drawn per message from Beta(0.5, 3); messages at or
above 0.3 are hidden from searchers, as a publication's band would hide them, so the searcher's
ranking runs over the visible set only (``core.visible``) and hidden messages are placed
where a release would put them, as the product does.

What is timed is what the worker does for one document once its process has the index
version's postings, the visible view and the candidate index loaded (the first task of a
worker process also starts the JVM and loads them: timed and printed apart):

    document_query (the document's terms) -> Lucene reverse search of the candidate queries
    (top 200, ``review.exposure.REVERSE_DEPTH``) -> each through the searcher's ranker (k 20,
    the publication default) -> ordered by rank.

Brute force is the same ranker over every candidate query; its one pass gives the ground
truth of every sampled document at once, so its time is the cost of one document's exact
answer. RELQ of the fast lists against that truth is printed with the times.

    .venv/bin/python bench/exposure.py [--docs 100000] [--sample 20] [--candidates 100000]
        [--generate-from N]  (candidates generated from the first N messages only: faster set-up)
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def words(n: int, rng) -> list[str]:
    onsets = list("bcdfghjklmnprstvwz") + ["ch", "sh", "th", "st", "br", "tr", "gr", "pl"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ou"]
    codas = ["", "n", "r", "s", "l", "t", "m", "nd", "ck", "ng"]
    out, seen = [], set()
    while len(out) < n:
        syllables = rng.integers(2, 4)
        w = "".join(
            onsets[rng.integers(len(onsets))]
            + vowels[rng.integers(len(vowels))]
            + codas[rng.integers(len(codas))]
            for _ in range(syllables)
        )
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--candidates", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=200)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--hidden-brute", action="store_true", help="also a hidden document")
    parser.add_argument("--profile", action="store_true", help="cProfile the timed loop")
    parser.add_argument(
        "--weighting", default="threshold", help="reverse query weighting (the product: threshold)"
    )
    parser.add_argument(
        "--generate-from", type=int, default=0, help="generate candidates from the first N (0: all)"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from core import exposing_queries, lucene
    from core.visible import Postings, VisibleIndex

    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    lucene.warm()
    print(f"JVM and pyserini loaded in {time.perf_counter() - t0:.1f} s (once per worker process)")
    vocab = words(30_000, rng)
    weights = 1 / np.arange(1, len(vocab) + 1) ** 1.05
    weights /= weights.sum()
    subjects = rng.choice(len(vocab), (args.docs, 6), p=weights)
    bodies = rng.choice(len(vocab), (args.docs, 80), p=weights)
    docids = [f"m{i:06d}" for i in range(args.docs)]
    vocab_arr = np.array(vocab, dtype=object)

    def text(i):
        return " ".join(vocab_arr[subjects[i]]) + "\n\n" + " ".join(vocab_arr[bodies[i]])

    t0 = time.perf_counter()
    stems = [lucene.stem(w) for w in vocab]  # Lucene's analysis of each (single-word) token
    postings = Postings.build(
        (
            docids[i],
            [stems[j] for j in np.concatenate([subjects[i], bodies[i]]).tolist() if stems[j]],
        )
        for i in range(args.docs)
    )
    print(f"postings of {args.docs:,} messages in {time.perf_counter() - t0:.1f} s")
    p = rng.beta(0.5, 3.0, args.docs)
    visible_rows = np.flatnonzero(p < 0.3)
    t0 = time.perf_counter()
    view = VisibleIndex(postings, visible_rows)
    print(
        f"visible view: {len(visible_rows):,} of {args.docs:,} messages "
        f"({time.perf_counter() - t0:.1f} s)"
    )

    t0 = time.perf_counter()
    generated = exposing_queries.generate_queries(
        lambda: ((docids[i], text(i)) for i in range(args.generate_from or args.docs)),
        lucene.stem,
        limit=args.candidates,
    )
    candidates = exposing_queries.merge_candidates([], generated, lucene.analyze)
    folder = Path(tempfile.mkdtemp(prefix="sasc-bench-exposure-"))
    lucene.build_index(folder / "candidates", ((str(c.qid), c.text) for c in candidates))
    print(
        f"{len(candidates):,} candidate queries generated and indexed in "
        f"{time.perf_counter() - t0:.1f} s (once per index version)"
    )

    sample_rows = rng.choice(args.docs, args.sample, replace=False)
    sample = [docids[r] for r in sample_rows.tolist()]
    rankers = {d: exposing_queries.ExposureRanker(view, postings, d, k=args.k) for d in sample}
    print(
        f"sample: {sum(r.visible for r in rankers.values())} visible, "
        f"{sum(not r.visible for r in rankers.values())} hidden documents"
    )

    deepened = {}

    def fast(d):
        """What the worker does (review.exposure): reverse search 200 deep, deepened while
        its tail still exposes (core.exposing_queries.expose_deepening)."""
        ranker = rankers[d]
        query = exposing_queries.document_query(
            postings, ranker.row, view, weighting=args.weighting, k=args.k
        )

        def search(depth):
            hits = lucene.reverse_search(folder / "candidates", query, k=depth)
            return [(int(h.docid), h.score) for h in hits]

        deepened[d] = exposing_queries.expose_deepening(
            ranker,
            candidates,
            search,
            whole_document=exposing_queries.whole_document(postings, ranker.row, query),
            depth=args.depth,
        )
        return deepened[d].found

    fast(sample[0])  # the searcher's first query from Python
    seconds, found = [], {}
    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
    for d in sample:
        t0 = time.perf_counter()
        found[d] = fast(d)
        seconds.append(time.perf_counter() - t0)

    if args.profile:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    ms = [s * 1000 for s in seconds]
    print(
        f"reverse search + verification (warm): median {statistics.median(ms):.0f} ms, "
        f"max {max(ms):.0f} ms",
        flush=True,
    )
    # Brute force: every candidate through the same ranker, for one visible document of the
    # sample (a hidden one too with --hidden-brute); each its own pass, the cost of one
    # document's exact answer.
    brute_docs = [next(d for d in sample if rankers[d].visible)]
    if args.hidden_brute:
        brute_docs += [d for d in sample if not rankers[d].visible][:1]
    brute, relq, recall = [], [], []
    for d in brute_docs:
        t0 = time.perf_counter()
        exact = exposing_queries.brute_force(rankers[d], candidates)
        brute.append(time.perf_counter() - t0)
        truth = {e.qid: e.rank for e in exact}
        assert all(truth.get(e.qid) == e.rank for e in found[d])
        relq.append(
            exposing_queries.relq_rbp(
                [e.qid for e in found[d]], truth, gamma_qd=0.5, gamma_dq=0.9, depth=100
            )
        )
        recall.append(len(found[d]) / len(truth) if truth else float("nan"))
        print(
            f"brute force, {'visible' if rankers[d].visible else 'hidden'} document {d}: "
            f"{brute[-1]:.1f} s, {len(truth)} exposing queries; reverse search found "
            f"{len(found[d])} (RELQ_RBP(0.5, 0.9) {relq[-1]:.3f})"
        )
    # Recall over the whole sample: brute force's answer from one sparse pass over every
    # candidate (``verify``, equal query by query to ``brute_force``, tested).
    pooled_truth = pooled_found = 0
    for d in sample:
        truth = {e.qid: e.rank for e in exposing_queries.verify(rankers[d], candidates)}
        assert all(truth.get(e.qid) == e.rank for e in found[d])
        pooled_truth += len(truth)
        pooled_found += len(found[d])
        if deepened[d].complete:
            assert len(found[d]) == len(truth), d  # "exact" must be exact
    depths = [deepened[d].depth for d in sample]
    print(
        f"recall in the first {args.k} over the {len(sample)} sampled documents: "
        f"{pooled_found / max(pooled_truth, 1):.3f} ({pooled_found} of {pooled_truth}); "
        f"count exact on {sum(deepened[d].complete for d in sample)}, a lower bound on the "
        f"rest; depth median {statistics.median(depths):.0f}, max {max(depths)}"
    )
    print(
        f"\nreverse search + verification, one document (warm worker, {len(sample)} documents):"
        f"\n  median {statistics.median(ms):.0f} ms, p95 {np.percentile(ms, 95):.0f} ms, "
        f"max {max(ms):.0f} ms; from {args.depth} ranker calls each, deepened"
        f"\nbrute force, one document (every candidate through the ranker): "
        f"{statistics.mean(brute):.1f} s mean, {len(candidates):,} ranker calls"
        f"\nspeed-up {statistics.mean(brute) / statistics.median(seconds):.0f}x; "
        f"RELQ_RBP(0.5, 0.9) {np.nanmean(relq):.3f}, exposing queries found "
        f"{np.nanmean(recall):.3f} of the true ones"
    )
    ok = max(ms) < 1000
    print("PASS: under 1 s" if ok else "FAIL: over 1 s")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
