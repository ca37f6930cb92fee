"""Latency of one protected query against bare BM25, in the same run: two protected paths.

A. The searcher's ranking (issue 14): BM25 over the visible documents only
   (``core.visible``: postings restricted to the visible rows, their own statistics),
   against Lucene's search of the whole index; and the time to rebuild the visible view, which
   is what an archivist's decision or a new classifier version costs before the searcher's
   ranking reflects it. Fails (exit 1) when the visible ranker's p95 is above 2x Lucene's.

B. The joint learning-to-rank path of the protection study: BM25 top 100 from Lucene, the
   ranking features of those 100 (two query fields x four document fields, from the
   per-field statistics held in memory), the stored P(sensitive) of each, a joint linear
   ranker (trained by coordinate ascent on nCS-DCG@10), and the dynamic cutoff. Bare: the
   same Lucene search alone.

1. Synthetic: 100,000 generated messages (Zipf-distributed words, 6-word subjects, 80-word
   bodies), P(sensitive) drawn per message; the joint ranker trained on 20 generated
   queries whose relevant documents hold both query words.
2. The demo collection (4,146 messages); P(sensitive) drawn per message (the demo has no
   persona labels to train a classifier from; scoring stored probabilities costs the same).

    .venv/bin/python bench/protection.py [--docs 100000] [--queries 300] [--skip-demo]
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from _setup import ROOT, demo_collection


def percentile(values, q):
    return float(np.percentile(np.asarray(values) * 1000, q))


def measure(index, features, p_sensitive, ranker, threshold, queries, *, lucene, ltr, protection):
    row_of = {d: i for i, d in enumerate(features.docids)}
    bare, protected = [], []
    queries = [q for q in queries if lucene.search(index, q, k=100)]  # warm, and drop no-hit
    for q in queries:
        t0 = time.perf_counter()
        lucene.search(index, q, k=100)
        bare.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        hits = lucene.search(index, q, k=100)
        docids = [h.docid for h in hits]
        rows = [row_of[d] for d in docids]
        terms = lucene.analyze(q)
        p = p_sensitive[rows]
        m = features.matrix({"title": terms, "title+desc": terms}, rows, p)
        f = np.hstack([ltr.normalise_per_query(m[:, :-2]), m[:, -2:]])
        query = protection.Query("q", docids, f, p)
        ranking = ranker.rank(query)
        ranking[: protection.dynamic_cutoff(query, threshold)]
        protected.append(time.perf_counter() - t0)
    return bare, protected


def report(label, bare, protected):
    b50, b95 = percentile(bare, 50), percentile(bare, 95)
    p50, p95 = percentile(protected, 50), percentile(protected, 95)
    print(
        f"{label:<26} bare BM25 p50 {b50:6.1f} ms p95 {b95:6.1f}   protected p50 {p50:6.1f} ms "
        f"p95 {p95:6.1f}   ({len(bare)} queries)"
    )


def train_joint(index, features, p_sensitive, queries, docs_words, *, lucene, ltr, protection):
    """A joint ranker trained by coordinate ascent on generated relevance and sensitivity."""
    row_of = {d: i for i, d in enumerate(features.docids)}
    training = []
    for q in queries:
        hits = lucene.search(index, q, k=100)
        docids = [h.docid for h in hits]
        rows = [row_of[d] for d in docids]
        terms = lucene.analyze(q)
        words = set(terms)
        relevance = {d: 1 for d, r in zip(docids, rows, strict=True) if words <= docs_words[r]}
        sensitive = {d: True for d, r in zip(docids, rows, strict=True) if p_sensitive[r] > 0.8}
        p = p_sensitive[rows]
        m = features.matrix({"title": terms, "title+desc": terms}, rows, p)
        f = np.hstack([ltr.normalise_per_query(m[:, :-2]), m[:, -2:]])
        training.append(protection.Query(q, docids, f, p, relevance, sensitive))
    t0 = time.perf_counter()
    ranker, value = protection.coordinate_ascent(training, "ncs_dcg", restarts=1, iterations=3)
    print(
        f"joint ranker: nCS-DCG@10 {value:.3f} on {len(training)} training queries, trained in "
        f"{time.perf_counter() - t0:.1f} s"
    )
    return ranker


def train_and_measure(label, index, features, p_sensitive, queries, words) -> None:
    """Train the joint ranker on the first 20 queries, time the others, print the figures."""
    from core import ltr, lucene, protection

    mods = {"lucene": lucene, "ltr": ltr, "protection": protection}
    ranker = train_joint(index, features, p_sensitive, queries[:20], words, **mods)
    bare, protected = measure(index, features, p_sensitive, ranker, 0.5, queries[20:], **mods)
    report(label, bare, protected)


def synthetic(n_docs: int, n_queries: int) -> None:
    import sys

    sys.path.insert(0, str(ROOT))
    from core import ltr, lucene

    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}x" for i in range(30_000)])
    weights = 1 / np.arange(1, len(vocab) + 1) ** 1.05
    weights /= weights.sum()
    subjects = rng.choice(len(vocab), (n_docs, 6), p=weights)
    bodies = rng.choice(len(vocab), (n_docs, 80), p=weights)
    docids = [f"s{i}" for i in range(n_docs)]
    folder = Path(tempfile.mkdtemp(prefix="sasc-bench-protection-"))
    t0 = time.perf_counter()
    lucene.build_index(
        folder / "lucene",
        (
            (d, " ".join(vocab[subjects[i]]) + "\n\n" + " ".join(vocab[bodies[i]]))
            for i, d in enumerate(docids)
        ),
    )
    print(f"synthetic: {n_docs:,} messages indexed in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    features = ltr.RankingFeatures.build(
        (
            (d, " ".join(vocab[subjects[i]]), " ".join(vocab[bodies[i]]), "")
            for i, d in enumerate(docids)
        ),
        str.split,
    )
    print(f"synthetic: per-field statistics built in {time.perf_counter() - t0:.1f} s")
    p_sensitive = rng.beta(0.5, 3.0, n_docs)
    mid = np.arange(200, 3000)
    queries = [" ".join(vocab[rng.choice(mid, 2, replace=False)]) for _ in range(n_queries)]
    words = [set(vocab[subjects[i]]) | set(vocab[bodies[i]]) for i in range(n_docs)]  # analysed
    visible_set.index = folder / "lucene"
    tokens = (list(vocab[subjects[i]]) + list(vocab[bodies[i]]) for i in range(n_docs))
    synthetic.ok = visible_set(docids, tokens, p_sensitive, queries)
    train_and_measure(
        f"synthetic {n_docs:,} messages", folder / "lucene", features, p_sensitive, queries, words
    )


def visible_set(docids, tokens, p_sensitive, queries, band_low=0.3) -> bool:
    """Part A: the searcher's ranking over the visible set against bare Lucene BM25."""
    from core import lucene, visible

    index = visible_set.index
    t0 = time.perf_counter()
    postings = visible.Postings.build(zip(docids, tokens, strict=True))
    print(
        f"visible set: postings of {len(docids):,} messages built in "
        f"{time.perf_counter() - t0:.1f} s"
    )
    shown = np.flatnonzero(p_sensitive < band_low)
    rebuilds = []
    for trial in range(5):
        rows = shown if trial % 2 == 0 else shown[1:]  # one decision withholds a document
        t0 = time.perf_counter()
        view = visible.VisibleIndex(postings, rows)
        rebuilds.append(time.perf_counter() - t0)
    print(
        f"visible set: {len(shown):,} of {len(docids):,} visible; view rebuilt after a decision "
        f"or a classifier version in median {np.median(rebuilds) * 1000:.0f} ms, max "
        f"{max(rebuilds) * 1000:.0f} ms"
    )
    bare, protected = [], []
    analysed = {q: lucene.analyze(q) for q in queries}
    for q in queries:  # warm
        lucene.search(index, q, k=100)
        view.search(analysed[q], 20)
    for q in queries:
        t0 = time.perf_counter()
        lucene.search(index, q, k=100)
        bare.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        view.search(lucene.analyze(q), 20)
        protected.append(time.perf_counter() - t0)
    report(f"visible-set ranker {len(docids):,}", bare, protected)
    ratio = percentile(protected, 95) / percentile(bare, 95)
    ok = ratio <= 2.0
    print(
        f"visible-set p95 / bare BM25 p95 = {ratio:.2f} (limit 2.00) -> {'PASS' if ok else 'FAIL'}"
    )
    return ok


def demo(n_queries: int) -> None:
    collection = demo_collection("protection")
    from annotate.models import Document
    from core import ltr, lucene
    from ranking.services import index_paths

    docs = list(
        Document.objects.filter(collection=collection)
        .order_by("id")
        .prefetch_related("attachments")
    )
    features = ltr.RankingFeatures.build(
        ((d.docid, d.subject, d.body, " ".join(a.text for a in d.attachments.all())) for d in docs),
        lucene.analyze,
    )
    rng = np.random.default_rng(1)
    p_sensitive = rng.beta(0.5, 3.0, len(docs))
    subjects = [d.subject for d in docs if len(d.subject.split()) >= 2]
    queries = [
        " ".join(rng.choice(s.split(), 2, replace=False)) for s in rng.choice(subjects, n_queries)
    ]
    words = [set(lucene.analyze(f"{d.subject} {d.body}")) for d in docs]
    index = index_paths(collection=collection).lucene
    train_and_measure(f"demo {len(docs):,} messages", index, features, p_sensitive, queries, words)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--skip-demo", action="store_true")
    args = parser.parse_args()
    if not args.skip_demo:
        demo(args.queries)
    synthetic(args.docs, args.queries)
    print("(medians and 95th percentiles over the queries; one process, warm caches)")
    if not synthetic.ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
