"""Evaluate exposing-query identification against brute force (Li et al., WWW 2022, sec. 6)."""

import csv
import json
import math
import time
from pathlib import Path

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotate.management import command_collection
from annotate.models import Topic
from annotate.selectors import collection_index_documents
from core import exposing_queries, lucene
from core.visible import Postings, VisibleIndex
from ranking.services import index_paths

MEASURES = {
    "relq_rbp_0.5_0.5": dict(gamma_qd=0.5, gamma_dq=0.5),
    "relq_rbp_0.5_0.9": dict(gamma_qd=0.5, gamma_dq=0.9),
    "relq_rbp_1_1": dict(gamma_qd=1.0, gamma_dq=1.0),
}
GRID_K1 = (0.3, 0.6, 0.9, 1.2, 2.0)
GRID_B = (0.0, 0.2, 0.4, 0.75, 1.0)


class Command(BaseCommand):
    help = (
        "Exposing queries: brute-force ground truth (every candidate query through the "
        "searcher's BM25), then RELQ of reverse search (BM25-reverse, BM25-tuned, reverse "
        "search + verification) and of baselines (topics only, random) against it; writes "
        "JSON, CSV and a PNG."
    )

    def add_arguments(self, parser):
        parser.add_argument("--collection", action="append", required=True, help="repeatable")
        parser.add_argument("--docs", type=int, default=300, help="test documents per collection")
        parser.add_argument("--tune-docs", type=int, default=60, help="documents to tune k1, b on")
        parser.add_argument("--k", type=int, default=100, help="n_q->d: results per query")
        parser.add_argument("--depth", type=int, default=100, help="n_d->q: queries per list")
        parser.add_argument(
            "--verify", default="100,200,500", help="reverse-search depths handed to verification"
        )
        parser.add_argument("--limit", type=int, default=100_000, help="generated candidates")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--out", type=Path, default=None, help="default: <var>/exposure")

    def handle(self, *args, **opts):
        out = opts["out"] or Path(settings.SASC_VAR_DIR) / "exposure"
        out.mkdir(parents=True, exist_ok=True)
        try:
            verify_depths = [int(v) for v in opts["verify"].split(",") if v.strip()]
        except ValueError as exc:
            raise CommandError("--verify takes comma-separated whole numbers") from exc
        if opts["docs"] < 1 or opts["k"] < 1 or opts["depth"] < 1:
            raise CommandError("--docs, --k and --depth must be at least 1")
        started = time.perf_counter()
        report = {
            "settings": {k: opts[k] for k in ("docs", "tune_docs", "k", "depth", "limit", "seed")}
        }
        report["settings"]["verify"] = verify_depths
        report["collections"] = {}
        for slug in opts["collection"]:
            collection = command_collection(slug, indexed=True)
            report["collections"][slug] = self._evaluate(collection, out, verify_depths, opts)
        report["seconds"] = round(time.perf_counter() - started, 1)
        (out / "exposure.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
        with (out / "exposure.csv").open("w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            names = [*MEASURES, "relq_exh_ndcg"]
            writer.writerow(["collection", "method", *names, "ranker_calls", "ms_per_doc"])
            for slug, result in report["collections"].items():
                for method, row in result["methods"].items():
                    writer.writerow(
                        [
                            slug,
                            method,
                            *(f"{row[m]:.4f}" for m in names),
                            row["ranker_calls"],
                            row["ms_per_doc"],
                        ]
                    )
        self._plot(report, out / "exposure.png")
        self.stdout.write(
            f"wrote {out}/exposure.json, exposure.csv and exposure.png in {report['seconds']} s"
        )

    def _evaluate(self, collection, out: Path, verify_depths: list[int], opts) -> dict:
        say = self.stdout.write
        rng = np.random.default_rng(opts["seed"])
        k, depth = opts["k"], opts["depth"]
        postings = Postings.load(index_paths(collection=collection).postings)
        view = VisibleIndex(postings, np.arange(len(postings.docids)))
        t0 = time.perf_counter()
        given = []
        for title, description in Topic.objects.filter(collection=collection).values_list(
            "title", "description"
        ):
            given.append(("topic", title))
            if description.strip():
                given.append(("topic", description))
        generated = exposing_queries.generate_queries(
            lambda: collection_index_documents(collection=collection),
            lucene.stem,
            limit=opts["limit"],
        )
        candidates = exposing_queries.merge_candidates(given, generated, lucene.analyze)
        index = out / collection.slug / "candidates"
        lucene.build_index(index, ((str(c.qid), c.text) for c in candidates))
        built = time.perf_counter() - t0
        by_source = {
            s: sum(1 for c in candidates if c.source == s) for s in exposing_queries.SOURCES
        }
        say(
            f"{collection.slug}: {len(candidates):,} candidate queries {by_source} in {built:.1f} s"
        )

        # Ground truth: every candidate through the ranker (the brute-force baseline).
        t0 = time.perf_counter()
        truth: dict[str, dict[int, int]] = {}
        for c in candidates:
            for rank, hit in enumerate(view.search(list(c.terms), k)):
                truth.setdefault(hit.docid, {})[c.qid] = rank
        brute_seconds = time.perf_counter() - t0
        say(f"{collection.slug}: brute force, {len(candidates):,} queries, {brute_seconds:.1f} s")
        exposed = sorted(truth)
        order = rng.permutation(len(exposed))
        tune = [exposed[i] for i in order[: opts["tune_docs"]]]
        test = [exposed[i] for i in order[opts["tune_docs"] : opts["tune_docs"] + opts["docs"]]]
        if not test:
            raise CommandError(f"{collection.slug}: no document is exposed by any candidate")
        row_of = {d: i for i, d in enumerate(postings.docids)}
        weights = {
            (d, w): exposing_queries.document_query(postings, row_of[d], view, weighting=w)
            for d in tune + test
            for w in ("tf", "bm25")
        }
        topics = [c.qid for c in candidates if c.source == "topic"]
        max_depth = max([depth, *verify_depths])

        def reverse(d, n, k1=0.9, b=0.4, weighting="tf"):
            query = weights[(d, weighting)]
            hits = lucene.reverse_search(index, query, k=n, k1=k1, b=b)
            return [(int(h.docid), h.score) for h in hits]

        # The real ranker agrees with the ground truth (the verification step's ranker).
        for d in test[:5]:
            ranker = exposing_queries.ExposureRanker(view, postings, d, k=k)
            qids = [qid for qid, _s in reverse(d, 50)]
            ranks = ranker.ranks([candidates[q].terms for q in qids])
            assert ranks == [truth[d].get(q) for q in qids], d

        # BM25-tuned: the (k1, b) with the best mean RELQ_RBP(0.5, 0.9) on the tuning documents.
        best, tuned = -1.0, (0.9, 0.4)
        for k1 in GRID_K1:
            for b in GRID_B:
                values = [
                    exposing_queries.relq_rbp(
                        [q for q, _ in reverse(d, depth, k1, b)],
                        truth[d],
                        depth=depth,
                        **MEASURES["relq_rbp_0.5_0.9"],
                    )
                    for d in tune
                ]
                mean = float(np.nanmean(values)) if values else 0.0
                if mean > best + 1e-9:
                    best, tuned = mean, (k1, b)
        say(f"{collection.slug}: BM25-tuned k1={tuned[0]} b={tuned[1]} (tuning RELQ {best:.3f})")

        lists: dict[str, dict[str, list[int]]] = {}
        calls: dict[str, float] = {}
        ms: dict[str, list[float]] = {}

        def timed(name, d, fn):
            t = time.perf_counter()
            result = fn()
            ms.setdefault(name, []).append((time.perf_counter() - t) * 1000)
            lists.setdefault(name, {})[d] = result

        def verified(qids, d):
            found = [(truth[d][q], candidates[q].text, q) for q in qids if q in truth[d]]
            return [q for _r, _t, q in sorted(found)]

        for d in test:
            timed("BM25-reverse", d, lambda d=d: [q for q, _ in reverse(d, depth)])
            timed("BM25-tuned", d, lambda d=d: [q for q, _ in reverse(d, depth, *tuned)])
            timed(
                "BM25-weighted reverse",
                d,
                lambda d=d: [q for q, _ in reverse(d, depth, weighting="bm25")],
            )
            for n in verify_depths:
                ranker = exposing_queries.ExposureRanker(view, postings, d, k=k)

                def run(d=d, n=n, ranker=ranker):
                    retrieved = reverse(d, n, weighting="bm25")
                    found = exposing_queries.expose(ranker, candidates, retrieved)
                    return [e.qid for e in found]

                timed(f"reverse+verify@{n}", d, run)
            timed("topics only (verified)", d, lambda d=d: verified(topics, d))
            timed(
                "random",
                d,
                lambda d=d: [
                    int(q)
                    for q in rng.choice(len(candidates), min(depth, len(candidates)), replace=False)
                ],
            )
            lists.setdefault("brute force", {})[d] = verified(truth[d].keys(), d)
        calls = {
            "BM25-reverse": 0,
            "BM25-tuned": 0,
            "BM25-weighted reverse": 0,
            **{f"reverse+verify@{n}": n for n in verify_depths},
            "topics only (verified)": len(topics),
            "random": 0,
            "brute force": len(candidates),
        }
        ms["brute force"] = [brute_seconds * 1000]  # all documents at once: per collection
        methods = {}
        for name, per_doc in lists.items():
            row = {}
            for measure, params in MEASURES.items():
                values = [
                    exposing_queries.relq_rbp(per_doc[d], truth[d], depth=depth, **params)
                    for d in test
                ]
                row[measure] = float(np.nanmean(values))
            values = [
                exposing_queries.relq_exh_ndcg(per_doc[d], truth[d], depth=depth) for d in test
            ]
            row["relq_exh_ndcg"] = float(np.nanmean(values))
            row["ranker_calls"] = calls[name]
            row["ms_per_doc"] = round(float(np.mean(ms.get(name, [math.nan]))), 2)
            methods[name] = row
            say(
                f"  {name:24s} "
                + " ".join(f"{m}={row[m]:.3f}" for m in [*MEASURES, "relq_exh_ndcg"])
                + f" calls={row['ranker_calls']} ms={row['ms_per_doc']}"
            )
        exposing = [len(truth[d]) for d in test]
        return {
            "documents": len(postings.docids),
            "candidates": len(candidates),
            "by_source": by_source,
            "candidates_seconds": round(built, 1),
            "brute_force_seconds": round(brute_seconds, 1),
            "exposed_documents": len(exposed),
            "test_documents": len(test),
            "exposing_per_document": {
                "mean": round(float(np.mean(exposing)), 1),
                "median": float(np.median(exposing)),
                "max": int(np.max(exposing)),
            },
            "tuned": {"k1": tuned[0], "b": tuned[1], "tuning_relq": round(best, 4)},
            "methods": methods,
            "max_depth": max_depth,
        }

    def _plot(self, report, path: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        slugs = list(report["collections"])
        measures = ["relq_rbp_0.5_0.5", "relq_rbp_0.5_0.9", "relq_rbp_1_1", "relq_exh_ndcg"]
        labels = ["RBP,RBP (0.5,0.5)", "RBP,RBP (0.5,0.9)", "RBP,RBP (1,1)", "EXH,NDCG"]
        fig, axes = plt.subplots(
            1, len(slugs), figsize=(6.5 * len(slugs), 4.8), sharey=True, squeeze=False
        )
        for ax, slug in zip(axes[0], slugs, strict=True):
            methods = report["collections"][slug]["methods"]
            names = list(methods)
            width = 0.8 / len(measures)
            x = np.arange(len(names))
            for i, (m, label) in enumerate(zip(measures, labels, strict=True)):
                ax.bar(
                    x + i * width - 0.4 + width / 2,
                    [methods[n][m] for n in names],
                    width,
                    label=label,
                )
            ax.set_xticks(x)
            ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
            ax.set_title(f"{slug}: RELQ against brute force")
            ax.set_ylim(0, 1.05)
            ax.grid(axis="y", alpha=0.3)
        axes[0][0].set_ylabel("mean RELQ")
        axes[0][0].legend(fontsize=8, loc="upper left")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
