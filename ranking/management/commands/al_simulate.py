"""Simulate active learning on a collection with reference qrels (finite-pool evaluation)."""

import json
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotate.management import command_collection
from core import active, simulate_learning, simulate_stopping, stopping
from core.parsing.trec import QREL_FORMATS
from core.runs import topic_key
from ranking import pooling
from ranking.services import collection_features, index_paths, relevance_qrels

MEASURES = {
    "f1": "F1 of the labels",
    "recall": "recall of the labels",
    "tau": "Kendall tau (MAP, qrels over the pool)",
    "tau_infap": "Kendall tau (infAP, qrels over the pool)",
}


class Command(BaseCommand):
    help = (
        "Simulate CAL, SAL and SPL with IS or RDS seeds, annotators answering from the "
        "reference qrels; write the curves (JSON and one PNG per measure) to --out."
    )

    def add_arguments(self, parser):
        parser.add_argument("--collection", required=True, help="slug of an indexed collection")
        parser.add_argument(
            "--qrels", type=Path, help="reference qrels file (default: the imported qrels)"
        )
        parser.add_argument("--qrels-format", choices=QREL_FORMATS, default="trec")
        parser.add_argument(
            "--strategy", action="append", choices=active.STRATEGIES, help="repeatable"
        )
        parser.add_argument(
            "--seed-mode", action="append", choices=["is", "rds"], help="repeatable"
        )
        parser.add_argument("--batch-pct", type=float, default=10.0)
        parser.add_argument("--candidates", choices=["pool", "collection"], default="pool")
        parser.add_argument("--depth", type=int, default=25, help="pool depth per system")
        parser.add_argument(
            "--rds-system",
            default="bm25.title",
            choices=[s.name for s in pooling.SYSTEMS],
            help="the ranking RDS walks down",
        )
        parser.add_argument("--rds-max", type=int, default=25)
        parser.add_argument("--topics", type=int, help="only the first N topics (quick runs)")
        parser.add_argument(
            "--topic",
            action="append",
            metavar="NUMBER",
            help="only these topics, by number (repeatable, or comma-separated: --topic 1,5,9)",
        )
        parser.add_argument("--out", type=Path, default=Path("var/al_simulate"))
        parser.add_argument("--random-seed", type=int, default=0)
        parser.add_argument(
            "--c",
            type=float,
            default=simulate_learning.PAPER_C,
            help="inverse regularisation strength of the classifier (default 1e8: Rahman et al.'s "
            f"lambda = 1e-8; the live product uses {active.DEFAULT_C:g})",
        )
        parser.add_argument(
            "--labeller",
            choices=simulate_learning.LABELLERS,
            default="selection",
            help="what gives the machine labels: the selection classifier (Rahman et al.) or "
            "sasc's labeller with presumed non-relevant documents (the live product's)",
        )
        parser.add_argument(
            "--min-topic-relevant",
            type=int,
            default=simulate_learning.IS_RELEVANT,
            help="leave out topics with fewer relevant documents in their qrels (Rahman et al.: "
            "5; 1 keeps every topic with any)",
        )

        parser.add_argument(
            "--stopping",
            action="store_true",
            help="evaluate the stopping rules instead of the learning curves: per topic and "
            "seed, recall at stop, failures below the target, cost against an oracle, and "
            "the estimate's interval coverage",
        )
        parser.add_argument(
            "--target", type=float, action="append", help="recall target (repeatable; 0.8, 0.9)"
        )
        parser.add_argument("--confidence", type=float, default=0.95)
        parser.add_argument(
            "--seeds", type=int, default=3, help="random seeds per topic (--stopping)"
        )
        parser.add_argument(
            "--sample-pct", type=float, default=20.0, help="check sample, %% of the frame"
        )
        parser.add_argument(
            "--stop-batch-pct", type=float, default=5.0, help="review batch, %% of the pool"
        )

    def handle(self, *args, **opts):
        collection = command_collection(opts["collection"], indexed=True)
        if not 0 < opts["batch_pct"] <= 100:
            raise CommandError("--batch-pct must be above 0 and at most 100")
        if not 1 <= opts["depth"] <= 1000:
            raise CommandError("--depth must be between 1 and 1000")
        if not opts["c"] > 0:
            raise CommandError("--c must be above 0")
        started = time.perf_counter()
        features = collection_features(collection=collection)
        row_of = {d: i for i, d in enumerate(features.docids)}
        grades = self._qrels(collection, opts)
        topics = sorted(
            (t for t in collection.topics.all() if t.number in grades),
            key=lambda t: topic_key(t.number),
        )
        if opts["topic"]:
            wanted = [n.strip() for arg in opts["topic"] for n in arg.split(",") if n.strip()]
            known = {t.number for t in collection.topics.all()}
            unknown = [n for n in wanted if n not in known]
            if unknown:
                raise CommandError(f"--topic: no topic numbered {', '.join(unknown)}")
            without = [n for n in wanted if n not in grades]
            if without:
                raise CommandError(f"--topic: no reference qrels for topic {', '.join(without)}")
            topics = [t for t in topics if t.number in set(wanted)]
        if opts["topics"]:
            topics = topics[: opts["topics"]]
        if not topics:
            raise CommandError("no topic of the collection has reference qrels")
        self.stderr.write(f"running {len(pooling.SYSTEMS)} systems over {len(topics)} topics")
        runs = pooling.system_runs(
            index=index_paths(collection=collection).lucene, topics=topics, k=1000
        )
        run_rows = {
            name: {t: [row_of[d] for d, _s in hits if d in row_of] for t, hits in run.items()}
            for name, run in runs.items()
        }
        data = []
        for topic in topics:
            if opts["candidates"] == "collection":
                pool = list(range(len(features.docids)))
            else:
                pool = sorted(
                    {
                        r
                        for run in run_rows.values()
                        for r in run.get(topic.number, [])[: opts["depth"]]
                    }
                )
            data.append(
                simulate_learning.TopicData(
                    number=topic.number,
                    pool=simulate_learning.np.asarray(pool, dtype=simulate_learning.np.int64),
                    grades={row_of[d]: g for d, g in grades[topic.number].items() if d in row_of},
                    ranking=run_rows[opts["rds_system"]].get(topic.number, []),
                )
            )
        if opts["stopping"]:
            return self._stopping(collection, features, data, opts, started)
        results = []
        for seed_mode in opts["seed_mode"] or ["is", "rds"]:
            for strategy in opts["strategy"] or list(active.STRATEGIES):
                t0 = time.perf_counter()
                result = simulate_learning.simulate(
                    features.matrix,
                    data,
                    simulate_learning.Settings(
                        strategy=strategy,
                        seed_mode=seed_mode,
                        batch_pct=opts["batch_pct"],
                        random_seed=opts["random_seed"],
                        rds_max=opts["rds_max"],
                        c=opts["c"],
                        labeller=opts["labeller"],
                        min_topic_relevant=opts["min_topic_relevant"],
                    ),
                    runs=run_rows,
                )
                result["seconds"] = round(time.perf_counter() - t0, 1)
                results.append(result)
                a = result["auc"]
                self.stdout.write(
                    f"{seed_mode:<4} {strategy:<4} topics {result['topics']:>3} "
                    f"(< {opts['min_topic_relevant']} relevant: "
                    f"{len(result['topics_with_too_few_relevant'])})  "
                    f"AUC F1 hybrid {a['f1_hybrid']:.3f} human {a['f1_human']:.3f} "
                    f"(10-100%: {result['auc_from_10']['f1_hybrid']:.3f} / "
                    f"{result['auc_from_10']['f1_human']:.3f})  "
                    f"tau MAP hybrid {a['tau_hybrid']:.3f} human {a['tau_human']:.3f}  "
                    f"infAP {a['tau_infap_hybrid']:.3f} / {a['tau_infap_human']:.3f}  "
                    f"(full qrels MAP {a['tau_full_hybrid']:.3f} / {a['tau_full_human']:.3f}, "
                    f"infAP {a['tau_full_infap_hybrid']:.3f} / {a['tau_full_infap_human']:.3f})  "
                    f"F1>=0.9 at {result['f1_0.9_at']['hybrid']}%  ({result['seconds']} s)"
                )
        out = opts["out"]
        out.mkdir(parents=True, exist_ok=True)
        report = {
            "collection": collection.slug,
            "qrels": str(opts["qrels"]) if opts["qrels"] else "imported reference qrels",
            "candidates": opts["candidates"],
            "depth": opts["depth"],
            "systems": [s.name for s in pooling.SYSTEMS],
            "rds_system": opts["rds_system"],
            "c": opts["c"],
            "labeller": opts["labeller"],
            "results": results,
            "seconds": round(time.perf_counter() - started, 1),
        }
        (out / "al_simulate.json").write_text(json.dumps(report, indent=1, allow_nan=True))
        for measure, label in MEASURES.items():
            self._plot(results, measure, label, out / f"{collection.slug}-{measure}.png")
        self.stdout.write(f"wrote {out / 'al_simulate.json'} and {len(MEASURES)} plots")

    def _stopping(self, collection, features, data, opts, started) -> None:
        targets = tuple(opts["target"] or (0.8, 0.9))
        if not all(0 < t < 1 for t in targets):
            raise CommandError("--target must be between 0 and 1")
        if not 0 < opts["confidence"] < 1:
            raise CommandError("--confidence must be between 0 and 1")
        if not 0 < opts["sample_pct"] <= 100 or not 0 < opts["stop_batch_pct"] <= 100:
            raise CommandError("--sample-pct and --stop-batch-pct must be above 0 and at most 100")
        if opts["seeds"] < 1:
            raise CommandError("--seeds must be at least 1")
        settings = simulate_stopping.StopSettings(
            strategy=(opts["strategy"] or ["cal"])[0],
            batch_pct=opts["stop_batch_pct"],
            sample_pct=opts["sample_pct"],
            targets=targets,
            confidence=opts["confidence"],
            c=opts["c"] if opts["c"] != simulate_learning.PAPER_C else active.DEFAULT_C,
            # the 5 relevant seeds, and at least one relevant left for the review to find
            min_topic_relevant=max(opts["min_topic_relevant"], simulate_learning.IS_RELEVANT + 1),
        )
        seeds = [opts["random_seed"] + i for i in range(opts["seeds"])]
        result = simulate_stopping.simulate_stopping(features.matrix, data, settings, seeds)
        summary = result["summary"]
        self.stdout.write(
            f"{collection.slug}: {summary['runs']} runs (topics x seeds), "
            f"{len(result['left_out'])} topics left out (< {settings.min_topic_relevant} relevant "
            f"in the pool); mean pool {summary['mean_pool']:.0f}, relevant "
            f"{summary['mean_relevant']:.1f}, check sample {summary['mean_sample']:.0f} "
            f"({summary['mean_sample_relevant']:.1f} relevant); interval coverage "
            f"{summary['coverage_mean']:.3f} averaged over batches, "
            f"{summary['coverage_first_look']:.3f} at the first look"
        )
        self.stdout.write(
            "coverage: recall at the first stop meets the target (all runs); fail|fired: "
            "runs below the target among those where the rule fired; ci|fired: the interval "
            "shown when the rule fired held the true recall"
        )
        self.stdout.write(
            f"{'rule':<20}{'target':>7}{'fired':>7}{'recall':>8}{'p5':>7}{'fail':>7}"
            f"{'cover':>7}{'fail|fired':>12}{'ci|fired':>9}{'cost':>8}{'oracle':>8}{'ratio':>7}"
        )
        for row in summary["rules"].values():
            when_fired = f"{row['failures_when_fired']}/{row['fired_runs']}"
            self.stdout.write(
                f"{stopping.NAMES[row['rule']]:<20}{row['target']:>7g}{row['fired']:>7.2f}"
                f"{row['recall_mean']:>8.3f}{row['recall_p5']:>7.3f}{row['failure_rate']:>7.3f}"
                f"{row['coverage']:>7.3f}{when_fired:>12}"
                f"{row['interval_coverage_when_fired']:>9.3f}"
                f"{row['cost_mean']:>8.1f}{row['oracle_cost_mean']:>8.1f}"
                f"{row['cost_ratio_mean']:>7.2f}"
            )
        out = opts["out"]
        out.mkdir(parents=True, exist_ok=True)
        report = {
            "collection": collection.slug,
            "settings": {
                "strategy": settings.strategy,
                "batch_pct": settings.batch_pct,
                "sample_pct": settings.sample_pct,
                "targets": list(targets),
                "confidence": settings.confidence,
                "c": settings.c,
                "seeds": seeds,
                "depth": opts["depth"],
                "candidates": opts["candidates"],
            },
            "left_out": result["left_out"],
            "summary": summary,
            "runs": result["runs"],
            "seconds": round(time.perf_counter() - started, 1),
        }
        path = out / f"{collection.slug}-stopping.json"
        path.write_text(json.dumps(report, indent=1, allow_nan=True))
        self._plot_stopping(summary, targets, out / f"{collection.slug}-stopping.png")
        self.stdout.write(f"wrote {path} and {collection.slug}-stopping.png")

    def _plot_stopping(self, summary, targets, path: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        rows = list(summary["rules"].values())
        labels = [f"{stopping.NAMES[r['rule']]}\n@{r['target']:g}" for r in rows]
        axes[0].boxplot([r["recalls"] for r in rows], showfliers=True)
        axes[0].set_xticks(range(1, len(rows) + 1), labels, fontsize=7)
        for t in targets:
            axes[0].axhline(t, color="#b00", linestyle="--", linewidth=0.8)
        axes[0].set_ylabel("recall at stop")
        axes[0].set_title("recall at stop (dashed: targets)")
        axes[1].bar(range(len(rows)), [r["cost_ratio_mean"] for r in rows], color="#4a7")
        axes[1].axhline(1, color="black", linewidth=0.8)
        axes[1].set_xticks(range(len(rows)), labels, fontsize=7)
        axes[1].set_ylabel("judgments / oracle's")
        axes[1].set_title("cost relative to an oracle stopping at the target")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)

    def _qrels(self, collection, opts) -> dict[str, dict[str, int]]:
        try:
            grades = relevance_qrels(
                collection=collection, path=opts["qrels"], fmt=opts["qrels_format"]
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if not grades:
            raise CommandError(f"no reference qrels for {collection.slug!r}; pass --qrels")
        return grades

    def _plot(self, results, measure: str, label: str, path: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
        for ax, kind in zip(axes, ("hybrid", "human"), strict=True):
            for r in results:
                ax.plot(
                    r["points"],
                    r["curves"][f"{measure}_{kind}"],
                    marker="o",
                    markersize=3,
                    linestyle="-" if r["seed_mode"] == "is" else "--",
                    label=f"{r['strategy'].upper()} ({r['seed_mode'].upper()})",
                )
            ax.set_title(f"{kind} labels")
            ax.set_xlabel("% of the pool judged")
            ax.grid(alpha=0.3)
        axes[0].set_ylabel(label)
        axes[1].legend(loc="lower right", fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
