"""Calibration of the sensitivity classifier on the CACM and Cranfield surrogates
(docs/publishing.md): isotonic against sigmoid by number of labels, and the full-label
calibration's Brier scores, reliability table and band preview.

For each surrogate (CACM: Computing Reviews category 4.1; Cranfield: NACA reports), the
collection is imported into a throwaway database and featurized once as training does
(``ranking.classifier.collection_matrix``). Then, for stratified subsamples of n labels (and
every label), ``core.sensitivity.train`` gives out-of-fold probabilities, and
``core.calibration.assess`` measures the cross-fitted Brier score of each method on them.
Last, the full-label classifier is calibrated by the rule of ``core.calibration.fit``, its
reliability bins printed, every document scored, and ``core.routing.band_preview`` and
``band_rule`` run on the calibrated scores.

    .venv/bin/python bench/calibration.py [--sizes 60 120 240 480 960] [--seeds 3] [--json F]

(``--sizes`` with no value: the full-label part alone.)
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import ROOT, django_setup  # noqa: E402

DATA = ROOT.parent / "shared" / "data"


def surrogates():
    from django.core.management import call_command

    from annotate.models import Collection
    from ranking.classifier import metadata_labels, sensitivity_labels

    out = {}
    for name, path in (
        ("CACM", DATA / "cacm" / "cacm.all"),
        ("Cranfield", DATA / "cranfield" / "cran.all.1400"),
    ):
        call_command("import_data", "smart", str(path), create=name, kind="smart", verbosity=0)
    cacm = Collection.objects.get(slug="cacm")
    out["cacm 4.1"] = (
        cacm,
        sensitivity_labels(collection=cacm, persona=None, source="categories", categories=["4.1"]),
    )
    cran = Collection.objects.get(slug="cranfield")
    out["cranfield naca"] = (cran, metadata_labels(collection=cran, match="bibliography=^naca"))
    return out


def subsample(ids, y, n, rng):
    """n labels, stratified (the prevalence kept), at least 3 of each class."""
    pos, neg = ids[y == 1], ids[y == 0]
    k = max(3, round(n * len(pos) / len(ids)))
    return np.concatenate(
        [rng.choice(pos, k, replace=False), rng.choice(neg, n - k, replace=False)]
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[60, 120, 240, 480, 960])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    django_setup("calibration")
    from core import calibration, routing, sensitivity
    from ranking.classifier import collection_matrix

    results = {}
    for name, (collection, labels) in surrogates().items():
        started = time.perf_counter()
        messages, ids, featurizer, matrix, _graph = collection_matrix(collection=collection)
        rows = np.array([i for i, d in enumerate(ids) if d in labels])
        y = np.array([labels[ids[i]] for i in rows])
        print(
            f"\n{name}: {len(ids):,} documents, {len(y):,} labelled, {int(y.sum())} sensitive "
            f"({y.mean():.1%}); featurized in {time.perf_counter() - started:.1f} s"
        )
        print("  n labels | positives | Brier raw | sigmoid | isotonic   (cross-fitted, mean)")
        table = []
        for n in [*[s for s in args.sizes if s < len(y)], len(y)]:
            got = {"raw": [], "sigmoid": [], "isotonic": [], "positives": []}
            for seed in range(args.seeds if n < len(y) else 1):
                rng = np.random.default_rng(seed)
                take = subsample(np.arange(len(y)), y, n, rng) if n < len(y) else np.arange(len(y))
                trained = sensitivity.train(matrix[rows[take]], y[take], featurizer.names)
                oof, yy = trained.oof, y[take]
                got["raw"].append(calibration.brier(oof, yy))
                got["positives"].append(int(yy.sum()))
                for method in ("sigmoid", "isotonic"):
                    fitted = calibration.cross_fitted(oof, yy, method=method, seed=seed)
                    got[method].append(calibration.brier(fitted, yy))
            row = {k: float(np.mean(v)) for k, v in got.items()}
            row["n"] = n
            table.append(row)
            print(
                f"  {n:8,} | {row['positives']:9.0f} | {row['raw']:.4f}    | "
                f"{row['sigmoid']:.4f}  | {row['isotonic']:.4f}"
            )
        # The full-label classifier, as training stores it.
        trained = sensitivity.train(matrix[rows], y, featurizer.names)
        c = trained.report.calibration
        after = c["brier_after"] if c["brier_after"] is not None else c["brier_before"]
        print(
            f"  all labels: {c['description']}; Brier {c['brier_before']:.4f} -> "
            f"{after:.4f} (cross-fitted)"
        )
        for title, key in (("before", "bins_before"), ("after, cross-fitted", "bins")):
            print(f"  reliability {title}:")
            print("  | P range | labels | sensitive | mean P | observed | 95% interval |")
            for b in c[key]:
                print(
                    f"  | {b['low']:.4f}-{b['high']:.4f} | {b['count']} | {b['positives']} | "
                    f"{b['mean_predicted']:.4f} | {b['observed']:.4f} | "
                    f"{b['observed_low']:.3f}-{b['observed_high']:.3f} |"
                )
        print("  " + c["trust"])
        p = trained.probabilities(matrix)
        scores = {m.docid: float(v) for m, v in zip(messages, p, strict=True)}
        raw = trained.raw_probabilities(matrix)
        own = {m.docid: float(v) for m, v in zip(messages, raw, strict=True)}
        for low, high, which in ((0.02, 0.8, own), (0.02, 0.8, scores), (0.05, 0.8, scores)):
            pv = routing.band_preview(which, low=low, high=high, seconds_per_decision=36.0)
            kind = "model's own P" if which is own else "calibrated P"
            print(
                f"  band {low}-{high} on the {kind}: visible {pv.visible:,}, review {pv.review:,} "
                f"({pv.review_hours:.1f} h), withheld {pv.withheld:,}; expected sensitive among "
                f"the visible {pv.expected_sensitive:.1f} [{pv.expected_low:.0f}, "
                f"{pv.expected_high:.0f}]"
            )
        t0 = time.perf_counter()
        rule = routing.band_rule(
            scores, max_sensitive_share=0.01, max_review_hours=8, seconds_per_decision=36.0
        )
        ms = (time.perf_counter() - t0) * 1000
        pv = rule.preview
        print(
            f"  band rule (1% of the visible, 8 h of review at 36 s): {rule.low:.3f}-"
            f"{rule.high:.3f}: visible {pv.visible:,}, expected sensitive "
            f"{pv.expected_sensitive:.1f}, review {pv.review:,}, withheld {pv.withheld:,} "
            f"({ms:.1f} ms)"
        )
        results[name] = {"sizes": table, "calibration": c, "rule": [rule.low, rule.high]}
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
