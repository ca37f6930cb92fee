"""Exposing queries on real test collections: recall against brute force, claims against an
independent BM25, time against brute force (issue 34, item 5).

For each collection (CACM and Cranfield from ../shared/data): the documents are analysed by
Lucene, a seeded third is hidden from searchers (as a band would hide them), candidate queries
are generated from the collection (``core.exposing_queries.generate_queries``) beside the
collection's own queries as topics, and indexed for reverse search. For a seeded sample of
documents, visible and hidden:

- **fast**: what the worker does (``review.exposure``): the document as a reverse-search
  query, then ``expose_deepening`` (200 deep, doubling while the last half verified still
  exposes);
- **brute force**: every candidate through the searcher's ranker (``verify`` over all of
  them, equal query by query to ``brute_force``, tested); recall in the first k is the share
  of brute force's exposing queries the fast list holds; for a few documents the paper's
  one-query-at-a-time ``brute_force`` is timed, the cost the issue compares with;
- **independent BM25**: every claim of a sample of documents recomputed from the formula in
  double precision over the visible documents plus the released one (plain Python, not
  ``core.visible``); a claim agrees when its rank is the same (near-ties within 1e-5 relative
  are counted apart).

The depth-200 reverse search without deepening (the build before issue 34) is run on the same
documents as the baseline.

    .venv/bin/python bench/exposure_recall.py [--sample 120] [--k 20] [--hidden 0.3]
        [--verify-all-below 10000]
"""

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
K1, B = 0.9, 0.4


def collections():
    from core.parsing.trec import iter_smart, iter_smart_queries

    def docs(path):
        return [
            (r.id, f"{r.fields.get('T', '')}\n\n{r.fields.get('W', '')}")
            for r in iter_smart(path.read_bytes(), path.name)
            if hasattr(r, "fields")
        ]

    def topics(path):
        return [
            r.title for r in iter_smart_queries(path.read_bytes(), path.name) if hasattr(r, "title")
        ]

    yield "CACM", docs(DATA / "cacm" / "cacm.all"), topics(DATA / "cacm" / "query.text")
    yield (
        "Cranfield",
        docs(DATA / "cranfield" / "cran.all.1400"),
        topics(DATA / "cranfield" / "cran.qry"),
    )


def independent_rank(tokens, shown, docid, query, k):
    """BM25 from the formula, double precision, over ``shown`` (which holds ``docid``)."""
    from core.visible import decode_length, encode_length

    n = len(shown)
    q = Counter(query)
    df = Counter()
    for d in shown:
        df.update(set(tokens[d]) & q.keys())
    avgdl = sum(len(tokens[d]) for d in shown) / n
    scores = {}
    for d in shown:
        tf = Counter(t for t in tokens[d] if t in q)
        if not tf:
            continue
        dl = decode_length(encode_length(len(tokens[d])))
        scores[d] = sum(
            boost
            * math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            * tf[t]
            / (tf[t] + K1 * (1 - B + B * dl / avgdl))
            for t, boost in q.items()
            if tf.get(t)
        )
    if docid not in scores:
        return None, math.inf
    mine = scores[docid]
    gap = min((abs(s - mine) / mine for d, s in scores.items() if d != docid), default=math.inf)
    ahead = sum(1 for d, s in scores.items() if s > mine or (s == mine and d < docid))
    return (ahead if ahead < k else None), gap


def run(name, documents, topic_texts, args, rng):
    from core import exposing_queries, lucene
    from core.visible import Postings, VisibleIndex

    tokens = {d: lucene.analyze(text) for d, text in documents}
    postings = Postings.build(tokens.items())
    hidden_rows = rng.random(len(postings.docids)) < args.hidden
    view = VisibleIndex(postings, np.flatnonzero(~hidden_rows))
    visible = {postings.docids[i] for i in np.flatnonzero(~hidden_rows).tolist()}
    generated = exposing_queries.generate_queries(lambda: iter(documents), lucene.stem)
    candidates = exposing_queries.merge_candidates(
        [("topic", t) for t in topic_texts], generated, lucene.analyze
    )
    folder = Path(tempfile.mkdtemp(prefix="sasc-bench-eqr-"))
    lucene.build_index(folder / "candidates", ((str(c.qid), c.text) for c in candidates))
    sample = rng.choice(len(postings.docids), args.sample, replace=False).tolist()
    print(
        f"\n== {name}: {len(postings.docids):,} documents, {len(visible):,} visible; "
        f"{len(candidates):,} candidate queries; sample {len(sample)}",
        flush=True,
    )

    def search_of(weights):
        def search(depth):
            hits = lucene.reverse_search(folder / "candidates", weights, k=depth)
            return [(int(h.docid), h.score) for h in hits]

        return search

    rows = []
    for row in sample:
        docid = postings.docids[row]
        ranker = exposing_queries.ExposureRanker(view, postings, docid, k=args.k)
        weights = exposing_queries.document_query(
            postings, row, view, weighting="threshold", k=args.k
        )
        search = search_of(weights)
        t0 = time.perf_counter()
        deep = exposing_queries.expose_deepening(
            ranker,
            candidates,
            search,
            whole_document=exposing_queries.whole_document(postings, row, weights),
            verify_all_below=args.verify_all_below,
        )
        fast_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        old = exposing_queries.expose(ranker, candidates, search(200))
        old_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        truth = {e.qid: e.rank for e in exposing_queries.verify(ranker, candidates)}
        truth_s = time.perf_counter() - t0
        got = {e.qid: e.rank for e in deep.found}
        assert all(truth[q] == r for q, r in got.items()), docid  # same ranker
        rows.append(
            dict(
                docid=docid,
                visible=ranker.visible,
                truth=len(truth),
                fast=len(got),
                old=sum(1 for e in old if e.qid in truth),
                complete=deep.complete,
                depth=deep.depth,
                fast_s=fast_s,
                old_s=old_s,
                truth_s=truth_s,
                ranker=ranker,
                found=deep.found,
            )
        )
    with_truth = [r for r in rows if r["truth"]]
    recall = sum(r["fast"] for r in with_truth) / sum(r["truth"] for r in with_truth)
    recall_old = sum(r["old"] for r in with_truth) / sum(r["truth"] for r in with_truth)
    per_doc = statistics.mean(r["fast"] / r["truth"] for r in with_truth)
    per_doc_old = statistics.mean(r["old"] / r["truth"] for r in with_truth)
    honest = all(r["complete"] == (r["fast"] == r["truth"]) or not r["complete"] for r in rows)
    exact_but_short = sum(1 for r in rows if r["complete"] and r["fast"] != r["truth"])
    missed_unlabelled = sum(1 for r in rows if r["fast"] < r["truth"] and r["complete"])
    print(
        f"recall in the first {args.k} (pooled over documents): deepening {recall:.3f}, "
        f"depth 200 {recall_old:.3f}; mean per document {per_doc:.3f} vs {per_doc_old:.3f}\n"
        f"documents with exposing queries {len(with_truth)}; count said exact on "
        f"{sum(r['complete'] for r in rows)}, of which short of brute force {exact_but_short} "
        f"(must be 0); lower bound said on {sum(not r['complete'] for r in rows)}; "
        f"depth: median {statistics.median(r['depth'] for r in rows):.0f}, "
        f"max {max(r['depth'] for r in rows)}",
        flush=True,
    )
    # Claims against the independent BM25, on the hidden documents of the sample (and a few
    # visible ones), every claim each.
    agree = differ = near = 0
    checked_docs = [r for r in rows if not r["visible"]][: args.claim_docs] + [
        r for r in rows if r["visible"]
    ][:5]
    for r in checked_docs:
        shown = visible | {r["docid"]}
        for e in r["found"]:
            query = list(candidates[e.qid].terms)
            truth_rank, gap = independent_rank(tokens, shown, r["docid"], query, args.k)
            if 0 < gap < 1e-5:
                near += 1
            elif truth_rank == e.rank:
                agree += 1
            else:
                differ += 1
    print(
        f"claims against an independent BM25 ({len(checked_docs)} documents, "
        f"{sum(1 for r in checked_docs if not r['visible'])} hidden): {agree} agree, "
        f"{differ} differ, {near} near-ties set apart",
        flush=True,
    )
    # Time: the paper's brute force, one query at a time, on a few documents.
    brute = []
    for r in rows[: args.brute_docs]:
        t0 = time.perf_counter()
        exposing_queries.brute_force(r["ranker"], candidates)
        brute.append(time.perf_counter() - t0)
    fast_ms = statistics.median(r["fast_s"] for r in rows) * 1000
    mean_fast = statistics.mean(r["fast_s"] for r in rows)
    print(
        f"time per document: deepening median {fast_ms:.0f} ms (mean "
        f"{mean_fast * 1000:.0f} ms), depth 200 median "
        f"{statistics.median(r['old_s'] for r in rows) * 1000:.0f} ms; brute force one query "
        f"at a time {statistics.mean(brute):.1f} s ({len(brute)} documents), all candidates in "
        f"one sparse pass {statistics.median(r['truth_s'] for r in rows) * 1000:.0f} ms; "
        f"deepening mean / brute force = 1/{statistics.mean(brute) / mean_fast:.0f}",
        flush=True,
    )
    return dict(
        recall=recall,
        exact_but_short=exact_but_short,
        differ=differ,
        ratio=statistics.mean(brute) / mean_fast,
        honest=honest and not missed_unlabelled,
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", type=int, default=120)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--hidden", type=float, default=0.3)
    parser.add_argument("--claim-docs", type=int, default=20)
    parser.add_argument("--brute-docs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--verify-all-below",
        type=int,
        default=0,
        help="verify every candidate when there are fewer (the product's rule: 10,000); "
        "0, the default here, measures the deepening search itself",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from core import lucene

    lucene.warm()
    ok = True
    for name, documents, topics in collections():
        res = run(name, documents, topics, args, np.random.default_rng(args.seed))
        # The time target (1/100 of brute force) is checked at 100,000 messages by
        # bench/exposure.py: here brute force takes about a second a document, less than the
        # reverse search's own fixed cost.
        good = res["recall"] >= 0.95 and res["exact_but_short"] == 0 and res["differ"] == 0
        print(f"{name}: {'PASS' if good else 'FAIL'} (recall >= 0.95, claims exact)")
        ok &= good
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
