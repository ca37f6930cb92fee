"""Replay a collection's topics through the archivist loop with an oracle archivist."""

import json
import time
from pathlib import Path

import numpy as np
from django.core.management.base import BaseCommand, CommandError

from annotate.management import command_collection
from core import lucene, sensitivity
from core.simulate_review import simulate
from ranking.classifier import ClassifierError, collection_matrix, sensitivity_labels_named
from ranking.services import index_paths, reference_qrels, topics_with_relevant


class Command(BaseCommand):
    help = (
        "Replay the topics through protected search round after round with an oracle "
        "archivist deciding from sensitivity labels; report how the classifier's F1, the "
        "reviews, the sensitive documents shown and O-CS-DCG evolve over the retrains."
    )

    def add_arguments(self, parser):
        parser.add_argument("--collection", required=True)
        labels = parser.add_mutually_exclusive_group(required=True)
        labels.add_argument("--categories", help="comma-separated codes = sensitive")
        labels.add_argument("--persona", help="a persona's labels (annotations + imported)")
        parser.add_argument("--rounds", type=int, default=5)
        parser.add_argument(
            "--seed-fraction", type=float, default=0.1, help="labels known before the loop"
        )
        parser.add_argument("--band-low", type=float, default=0.02)
        parser.add_argument("--band-high", type=float, default=0.8)
        parser.add_argument("--k", type=int, default=10)
        parser.add_argument("--effort", type=float, default=0.1, help="O-CS-DCG cost per review")
        parser.add_argument(
            "--most-uncertain",
            type=int,
            default=None,
            help="ask about at most n per query, the most uncertain among the top k",
        )
        parser.add_argument("--random-seed", type=int, default=0)
        parser.add_argument("--out", type=Path, default=Path("var/simulate_review"))

    def handle(self, *args, **opts):
        started = time.perf_counter()
        collection = command_collection(opts["collection"], indexed=True)
        if not 0 <= opts["band_low"] <= opts["band_high"] <= 1:
            raise CommandError("the band needs 0 <= --band-low <= --band-high <= 1")
        try:
            by_pk = sensitivity_labels_named(
                collection=collection,
                categories=opts["categories"],
                persona=opts["persona"],
                source="decisions",
            )
        except ClassifierError as exc:
            raise CommandError(str(exc)) from None
        messages, ids, featurizer, matrix, _graph = collection_matrix(collection=collection)
        docid_of = {pk: m.docid for pk, m in zip(ids, messages, strict=True)}
        truth = {docid_of[pk]: bool(v) for pk, v in by_pk.items()}
        row = {m.docid: i for i, m in enumerate(messages)}
        rng = np.random.default_rng(opts["random_seed"])
        labelled = sorted(truth)
        pos = [d for d in labelled if truth[d]]
        neg = [d for d in labelled if not truth[d]]
        take = lambda xs: rng.permutation(xs)[: max(3, round(len(xs) * opts["seed_fraction"]))]  # noqa: E731
        seed_labels = {str(d): int(truth[d]) for d in [*take(pos), *take(neg)]}

        def train(labels):
            docs = sorted(labels)
            trained = sensitivity.train(
                matrix[[row[d] for d in docs]], [labels[d] for d in docs], featurizer.names
            )
            p = trained.model.predict_proba(matrix)[:, 1]
            return {
                m.docid: float(v) for m, v in zip(messages, p, strict=True)
            }, trained.report.as_dict()

        qrels = reference_qrels(collection=collection)
        index = index_paths(collection=collection).lucene
        topics = topics_with_relevant(collection=collection, qrels=qrels)
        topics = [topics[i] for i in rng.permutation(len(topics))]  # dealt into rounds
        rankings = {
            t.number: [h.docid for h in lucene.search(index, t.title, k=100)] for t in topics
        }
        rounds = simulate(
            rankings=rankings,
            relevance=qrels,
            truth=truth,
            seed_labels=seed_labels,
            train=train,
            rounds=opts["rounds"],
            band_low=opts["band_low"],
            band_high=opts["band_high"],
            k=opts["k"],
            effort=opts["effort"],
            most_uncertain=opts["most_uncertain"],
        )
        out = opts["out"]
        out.mkdir(parents=True, exist_ok=True)
        report = {
            "collection": collection.slug,
            "labels": opts["categories"] or opts["persona"],
            "queries": len(rankings),
            "seed_labels": len(seed_labels),
            "band": [opts["band_low"], opts["band_high"]],
            "k": opts["k"],
            "effort": opts["effort"],
            "most_uncertain": opts["most_uncertain"],
            "rounds": rounds,
            "seconds": round(time.perf_counter() - started, 1),
        }
        (out / "simulate_review.json").write_text(json.dumps(report, indent=1))
        self._plot(rounds, out / f"{collection.slug}-review-loop.png")
        self.stdout.write(
            f"{len(rankings)} queries, {len(seed_labels)} seed labels, band "
            f"{opts['band_low']}-{opts['band_high']}, k {opts['k']}, effort {opts['effort']}"
        )
        self.stdout.write(
            "round  queries  F1 (cv)  F1 (held out)  labels  shown/q  reviewed/q  "
            "sensitive shown  O-CS-DCG"
        )
        for r in rounds:
            self.stdout.write(
                f"{r['round']:>5}  {r['queries']:>7}  {r['classifier_f1']:>7.3f}  "
                f"{r['heldout_f1']:>13.3f}  {r['labels']:>6}  "
                f"{r['shown_mean']:>7.2f}  {r['reviewed_mean']:>10.2f}  "
                f"{r['sensitive_shown']:>15}  {r['o_cs_dcg_mean']:8.3f}"
            )
        self.stdout.write(f"wrote {out}/simulate_review.json and a plot in {report['seconds']} s")

    def _plot(self, rounds, path: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        x = [r["round"] for r in rounds]
        fig, axes = plt.subplots(1, 4, figsize=(14, 3.4))
        axes[0].plot(x, [r["heldout_f1"] for r in rounds], marker="s", label="held out")
        for ax, key, title in zip(
            axes,
            ("classifier_f1", "reviewed_mean", "sensitive_shown", "o_cs_dcg_mean"),
            (
                "classifier F1 (cv: circles, held out: squares)",
                "documents reviewed",
                "sensitive shown",
                "O-CS-DCG@k",
            ),
            strict=True,
        ):
            ax.plot(x, [r[key] for r in rounds], marker="o")
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("round (retrain)")
            ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
