"""Evaluate every protection approach with a trained and an oracle sensitivity classifier."""

import csv
import json
import time
from pathlib import Path

import numpy as np
from django.core.management.base import BaseCommand, CommandError

from annotate.management import command_collection
from core import ltr, lucene, measures, protection, protection_eval, sensitivity
from core.parsing.trec import QREL_FORMATS
from core.runs import topic_key
from ranking.classifier import (
    ClassifierError,
    collection_matrix,
    metadata_labels,
    out_of_fold_scores,
    ranking_document_features,
    sensitivity_labels_named,
)
from ranking.services import (
    collection_features,
    index_paths,
    read_qrels_file,
    relevance_qrels,
    topics_with_relevant,
)


class Command(BaseCommand):
    help = (
        "Five-fold evaluation over topics of the protection approaches (relevance only, "
        "filters, demotion, joint learning to rank, cluster replacement, cutoffs) with a "
        "trained and an oracle sensitivity classifier; writes CSV, JSON and a PNG."
    )

    def add_arguments(self, parser):
        parser.add_argument("--collection", required=True)
        labels = parser.add_mutually_exclusive_group(required=True)
        labels.add_argument("--categories", help="comma-separated category codes = sensitive")
        labels.add_argument("--persona", help="a persona's final labels (annotations)")
        labels.add_argument("--sensitivity", type=Path, help="a file in the sensitivity format")
        labels.add_argument(
            "--metadata",
            metavar="FIELD=REGEX",
            help="sensitive when a metadata field matches (e.g. bibliography=^naca)",
        )
        parser.add_argument("--source", choices=["annotations", "reference"], default="annotations")
        parser.add_argument(
            "--qrels", type=Path, help="relevance qrels file (default: the imported qrels)"
        )
        parser.add_argument("--qrels-format", choices=QREL_FORMATS, default="trec")
        parser.add_argument("--depth", type=int, default=100, help="BM25 candidates per topic")
        parser.add_argument(
            "--restarts", type=int, default=5, help="coordinate-ascent restarts (sec. 5.2: 5)"
        )
        parser.add_argument("--workers", type=int, default=2)
        parser.add_argument("--clusters", type=int, default=20)
        parser.add_argument(
            "--cost",
            type=float,
            help="Cs of nCS-DCG (default: the dissertation's rule, sec. 5.4.1: 12/13.63 of the "
            "topics' mean ideal DCG@10)",
        )
        parser.add_argument(
            "--joint-objective",
            choices=[o for o in protection.OBJECTIVES if o != "ndcg"],
            default="ncs_dcg",
            help="the measure (at 10) the joint ranker optimises",
        )
        parser.add_argument("--objective", choices=["f1", "f2"], default="f1")
        parser.add_argument("--topics", type=int, help="only the first N topics (quick runs)")
        parser.add_argument("--out", type=Path, default=Path("var/protection"))

    def handle(self, *args, **opts):
        started = time.perf_counter()
        collection = command_collection(opts["collection"], indexed=True)
        docs = list(collection.documents.order_by("id").prefetch_related("attachments"))
        by_pk = {d.pk: d.docid for d in docs}
        labels = self._labels(collection, opts)  # document pk -> 0/1
        truth = {by_pk[pk]: bool(v) for pk, v in labels.items() if pk in by_pk}
        self.stderr.write(f"{sum(truth.values())} sensitive of {len(truth)} labelled documents")
        # read and featurized once: the classifier's folds and the ranker's message features
        data = collection_matrix(collection=collection)
        try:
            p_all, threshold, classifier = out_of_fold_scores(
                collection=collection, labels=labels, objective=opts["objective"], data=data
            )
        except ClassifierError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"classifier (held out): {classifier}")
        try:
            grades = relevance_qrels(
                collection=collection, path=opts["qrels"], fmt=opts["qrels_format"]
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        topics = sorted(
            topics_with_relevant(collection=collection, qrels=grades),
            key=lambda t: topic_key(t.number),
        )
        if opts["topics"]:
            topics = topics[: opts["topics"]]
        if len(topics) < 5:
            raise CommandError(f"{len(topics)} topics with relevant documents: five folds need 5")
        rule = measures.dissertation_cost({t.number: grades[t.number] for t in topics})
        cost = rule["cost"] if opts["cost"] is None else opts["cost"]
        if not cost > 0:
            raise CommandError("--cost must be above 0")
        self.stderr.write(
            f"Cs = {cost:.2f} ({'given' if opts['cost'] is not None else rule['rule']}; "
            f"mean ideal DCG@10 {rule['mean_ideal_dcg']:.2f})"
        )
        vectors = collection_features(collection=collection)
        vector_row = {d: i for i, d in enumerate(vectors.docids)}
        features = ltr.RankingFeatures.build(
            (
                (d.docid, d.subject, d.body, " ".join(a.text for a in d.attachments.all()))
                for d in docs
            ),
            lucene.analyze,
        )
        row_of = {d: i for i, d in enumerate(features.docids)}
        # email: what the ranker reads of each message beside relevance (Table 3.12)
        per_doc = ranking_document_features(collection=collection, data=data)
        if per_doc is not None:
            self.stderr.write(f"{len(sensitivity.RANKING)} message features beside relevance")
        index = index_paths(collection=collection).lucene
        data, p_trained, p_oracle = [], {}, {}
        for topic in topics:
            hits = lucene.search(index, topic.title, k=opts["depth"])
            docids = [h.docid for h in hits if h.docid in row_of]
            terms = {"title": lucene.analyze(topic.title)}
            terms["title+desc"] = lucene.analyze(f"{topic.title} {topic.description}")
            m = features.matrix(terms, [row_of[d] for d in docids], np.zeros(len(docids)))[:, :-2]
            if per_doc is not None:
                m = np.hstack([m, np.array([per_doc[d] for d in docids]).reshape(len(docids), -1)])
            data.append(
                protection_eval.Topic(
                    qid=topic.number,
                    docids=docids,
                    bm25=np.array([h.score for h in hits if h.docid in row_of]),
                    features=ltr.normalise_per_query(m),
                    relevance=grades[topic.number],
                    sensitive={d: True for d in docids if truth.get(d)},
                    vectors=vectors.matrix[[vector_row[d] for d in docids]],
                )
            )
            p_trained[topic.number] = np.array([p_all.get(d, 0.0) for d in docids])
            p_oracle[topic.number] = np.array([1.0 if truth.get(d) else 0.0 for d in docids])
        self.stderr.write(f"{len(data)} topics, {opts['depth']} candidates each; training rankers")
        report = {
            "collection": collection.slug,
            "labels": self._label_name(opts),
            "joint_objective": opts["joint_objective"],
            "cost": cost,
            "cost_rule": {**rule, "used": opts["cost"] is None},
            "classifier": classifier,
            "features": [*ltr.NAMES[:-2], *(sensitivity.RANKING if per_doc is not None else [])],
        }
        per_query = {}
        for name, p, t in (("trained", p_trained, threshold), ("oracle", p_oracle, 0.5)):
            results = protection_eval.run(
                data,
                p,
                t,
                classifier=name,
                restarts=opts["restarts"],
                workers=opts["workers"],
                clusters=opts["clusters"],
                joint_objective=opts["joint_objective"],
                cost=cost,
                progress=lambda i, n, c: self.stderr.write(f"  {c}: fold {i} of {n}"),
            )
            report[name] = protection_eval.summary(results)
            per_query[name] = results
        report["seconds"] = round(time.perf_counter() - started, 1)
        report["sensitive_share_of_candidates"] = float(
            np.mean([np.mean(p_oracle[t.qid]) for t in data])
        )
        out = opts["out"]
        out.mkdir(parents=True, exist_ok=True)
        (out / "protection.json").write_text(
            json.dumps({**report, "per_query": per_query}, indent=1)
        )
        with open(out / "protection.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(
                [
                    "classifier",
                    "approach",
                    *protection_eval.MEASURES,
                    "tern + / 0 / -",
                    "p vs best",
                    "ncs_dcg@10 - P-sort",
                    "p vs P-sort (ncs_dcg@10)",
                    "ndcg@10 - P-sort",
                    "p vs P-sort (ndcg@10)",
                ]
            )
            for name in ("trained", "oracle"):
                for approach, row in report[name]["table"].items():
                    w.writerow(
                        [
                            name,
                            approach,
                            *(f"{row[m]:.4f}" for m in protection_eval.MEASURES),
                            "/".join(map(str, row["tern +/0/-"])),
                            row["p vs best"],
                            *_versus(row["vs baseline"]),
                        ]
                    )
        self._plot(report, out / f"{collection.slug}-protection.png")
        for name in ("trained", "oracle"):
            self.stdout.write(f"\n{name} classifier (best on nCS-DCG@10: {report[name]['best']})")
            self.stdout.write(
                f"{'approach':<28} {'nDCG':>6} {'TERN1':>6} {'SENS1':>6} {'nCSDCG':>6}  "
                "TERN+/0/-  p vs best  vs P-sort: nCSDCG (p)  nDCG (p)"
            )
            for approach, row in report[name]["table"].items():
                p = "" if row["p vs best"] is None else f"{row['p vs best']:.3g}"
                versus = row["vs baseline"]
                if versus is None:
                    against = "(the baseline)"
                else:
                    n, d = versus["ncs_dcg@10"], versus["ndcg@10"]
                    against = f"{n['difference']:+.3f} ({n['p']:.2g})  "
                    against += f"{d['difference']:+.3f} ({d['p']:.2g})"
                self.stdout.write(
                    f"{approach:<28} {row['ndcg@10']:6.3f} {row['tern@10 M=1']:6.3f} "
                    f"{row['sens@10 M=1']:6.3f} {row['ncs_dcg@10']:6.3f}  "
                    f"{'/'.join(map(str, row['tern +/0/-'])):<9}  {p:<9}  {against}"
                )
        self.stdout.write(
            f"\nwrote {out}/protection.csv, protection.json and a plot in {report['seconds']} s"
        )

    def _label_name(self, opts) -> str:
        if opts["categories"]:
            return f"categories:{opts['categories']}"
        if opts["persona"]:
            return f"persona:{opts['persona']} ({opts['source']})"
        if opts["metadata"]:
            return f"metadata:{opts['metadata']}"
        return f"file:{opts['sensitivity']}"

    def _labels(self, collection, opts) -> dict[int, int]:
        """Document id -> 1 sensitive / 0 not, from categories, a persona or a file."""
        try:
            if opts["categories"] or opts["persona"]:
                return sensitivity_labels_named(
                    collection=collection,
                    categories=opts["categories"],
                    persona=opts["persona"],
                    source=opts["source"],
                )
            if opts["metadata"]:
                return metadata_labels(collection=collection, match=opts["metadata"])
        except ClassifierError as exc:
            raise CommandError(str(exc)) from None
        try:
            per_topic = read_qrels_file(opts["sensitivity"], "binary")
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        pks = dict(collection.documents.values_list("docid", "pk"))
        unknown = sorted({d for docs in per_topic.values() for d in docs if d not in pks})
        if unknown:
            raise CommandError(
                f"{opts['sensitivity'].name}: unknown documents: {', '.join(unknown[:20])}"
            )
        labels: dict[int, int] = {}
        for docs in per_topic.values():  # the label holds whatever the topic column says
            for docid, value in docs.items():
                labels[pks[docid]] = max(labels.get(pks[docid], 0), value)
        return labels

    def _plot(self, report, path: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        approaches = list(report["trained"]["table"])
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
        for ax, measure in zip(axes, ("ncs_dcg@10", "tern@10 M=1"), strict=True):
            x = np.arange(len(approaches))
            for offset, name in ((-0.2, "trained"), (0.2, "oracle")):
                values = [report[name]["table"][a][measure] for a in approaches]
                ax.bar(x + offset, values, width=0.4, label=f"{name} classifier")
            ax.set_xticks(x, approaches, rotation=60, ha="right", fontsize=8)
            ax.set_title(measure)
            ax.grid(axis="y", alpha=0.3)
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)


def _versus(versus) -> list:
    """The CSV cells of an approach against the P(sensitive) sort (blank for the baseline)."""
    if versus is None:
        return ["", "", "", ""]
    n, d = versus["ncs_dcg@10"], versus["ndcg@10"]
    return [f"{n['difference']:.4f}", n["p"], f"{d['difference']:.4f}", d["p"]]
