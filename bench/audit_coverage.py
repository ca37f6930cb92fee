"""Release audits simulated on labelled data: per-audit coverage of the bound (issue 33).

Every setting runs ``--audits`` independent audits (``core.simulate_audit.simulate``: the
calculator's n, a seeded simple random sample, the certificate) and reports coverage (the
share of audits whose upper bound U is at least the true number K of sensitive documents in
the frame), its one-sided 95% lower bound, the Clopper-Pearson bound's coverage, mean n,
mean U and the sensitive left visible once the found are withheld (K - k) with its bound
(U - k). Settings:

- **classifier frames**: CACM (sensitive = Computing Reviews category 4.1, as in
  docs/protection.md), Cranfield (sensitive = a NACA report, by its bibliography, as in
  docs/protection.md) and generated mail (``bench/mailgen.py``, its planted sensitive
  conversations). ``core.sensitivity`` is trained on a random half of the labelled documents
  (``--replicates`` times, each a different half and so a different frame); the frame is
  what the routing band leaves visible (``core.simulate_audit.visible_frame``: P below the
  band shown, inside it released by an oracle archivist when not sensitive, the training
  labels known). Audits are spread over the replicates' frames. Beside them the trivial
  baseline: publish every document with P(sensitive) < 0.5, no review, no audit, and the
  sensitive documents it exposes;
- **fixed frames**: N from 200 to 10^6 documents with exactly K = prevalence x N sensitive,
  the calculator planned at the true prevalence; the coverage computed exactly (sum of
  hypergeometric probabilities) beside the simulated one.

Confidences 0.90, 0.95, 0.99. Writes ``docs/release-audit/coverage.json``, ``coverage.csv``
and the plots ``coverage.png`` and ``calculator.png``.

    .venv/bin/python bench/audit_coverage.py [--audits 1000] [--replicates 3] [--workers 2]
"""

import argparse
import csv
import json
import math
import re
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from core import release_audit, sensitivity, simulate_audit  # noqa: E402
from core.parsing.items import Limits  # noqa: E402
from core.parsing.sources import iter_mbox_bytes  # noqa: E402
from core.parsing.trec import iter_smart  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "docs" / "release-audit"
CONFIDENCES = (0.90, 0.95, 0.99)
BANDS = ((0.05, 0.8), (0.2, 0.8))


# --- Labelled collections -----------------------------------------------------------------------


def _smart(path: Path):
    return [r for r in iter_smart(path.read_bytes(), path.name) if hasattr(r, "fields")]


def cacm(data: Path):
    """CACM: sensitive = a Computing Reviews code in 4.1 (4.1, 4.12, ...); documents without
    codes are not sensitive and not used for training (docs/protection.md)."""
    messages, truth, labelled = [], [], []
    for r in _smart(data / "cacm" / "cacm.all"):
        codes = re.findall(r"\d+(?:\.\d+)?", r.fields.get("C", ""))
        messages.append(
            sensitivity.Message(r.id, subject=r.fields.get("T", ""), body=r.fields.get("W", ""))
        )
        truth.append(any(c == "4.1" or c.startswith("4.1") for c in codes))
        labelled.append(bool(codes))
    return messages, np.array(truth), np.array(labelled)


def cranfield(data: Path):
    """Cranfield: sensitive = a NACA report (the bibliography starts with "naca");
    documents without a bibliography are not sensitive and not used for training."""
    messages, truth, labelled = [], [], []
    for r in _smart(data / "cranfield" / "cran.all.1400"):
        bib = " ".join(r.fields.get("B", "").split())
        messages.append(
            sensitivity.Message(r.id, subject=r.fields.get("T", ""), body=r.fields.get("W", ""))
        )
        truth.append(bool(re.search(r"^naca", bib, re.IGNORECASE)))
        labelled.append(bool(bib))
    return messages, np.array(truth), np.array(labelled)


def mail(count: int = 3000, seed: int = 1):
    """Generated mail (``bench/mailgen.py``): its planted sensitive conversations, every
    message labelled."""
    import mailgen

    folder = Path(tempfile.mkdtemp(prefix="sasc-audit-")) / "mail"
    mailgen.generate(folder, count, seed=seed)
    labels = {}
    for line in (folder.parent / "mail-sensitivity.txt").read_text().splitlines():
        _star, _zero, docid, label = line.split()
        labels[docid] = label == "1"
    messages, truth = [], []
    for path in sorted(folder.glob("*.mbox")):
        for item in iter_mbox_bytes(path.read_bytes(), f"mail/{path.name}", Limits()):
            e = item.email
            recipients = [a for key in ("to", "cc", "bcc") for a in e.addresses.get(key) or []]
            messages.append(
                sensitivity.Message(
                    item.docid,
                    subject=e.subject,
                    body=e.body,
                    attachments=" ".join(a.filename + " " + a.text for a in e.attachments),
                    attachment_count=len(e.attachments),
                    date=e.date,
                    sender=e.addresses.get("from") or "",
                    recipients=recipients,
                    reply=e.subject.lower().startswith("re:"),
                )
            )
            truth.append(labels[item.docid])
    return messages, np.array(truth), np.ones(len(truth), bool)


def _frames(job):
    """Train on a random half of the labelled documents; return P(sensitive) of all."""
    name, matrix, truth, labelled, replicate = job
    rng = np.random.default_rng(1000 + replicate)
    candidates = np.flatnonzero(labelled)
    train = np.zeros(len(truth), bool)
    train[rng.choice(candidates, len(candidates) // 2, replace=False)] = True
    names = [str(i) for i in range(matrix.shape[1])]
    trained = sensitivity.train(matrix[train], truth[train].astype(int), names, seed=replicate)
    p = trained.model.predict_proba(matrix)[:, 1]
    return name, replicate, p, train, trained.report.f1


def classifier_frames(replicates: int, workers: int):
    loaders = {
        "CACM (category 4.1)": lambda: cacm(DATA),
        "Cranfield (NACA reports)": lambda: cranfield(DATA),
        "generated mail (planted)": lambda: mail(),
    }
    jobs, truths = [], {}
    for name, load in loaders.items():
        messages, truth, labelled = load()
        matrix = sensitivity.Featurizer().fit_transform(messages)
        truths[name] = truth
        jobs += [(name, matrix, truth, labelled, r) for r in range(replicates)]
        print(
            f"{name}: {len(truth):,} documents, {int(truth.sum()):,} sensitive "
            f"({truth.mean():.1%}), {int(labelled.sum()):,} labelled",
            flush=True,
        )
    out: dict[str, list] = {name: [] for name in loaders}
    with ProcessPoolExecutor(workers) as pool:
        for name, replicate, p, train, f1 in pool.map(_frames, jobs):
            out[name].append((p, train, f1))
            print(f"  {name} replicate {replicate}: cross-validated F1 {f1:.3f}", flush=True)
    return out, truths


# --- Settings ---------------------------------------------------------------------------------


def _run(job):
    setting, frames, kwargs, exact_args = job
    started = time.perf_counter()
    result = simulate_audit.simulate(frames, **kwargs).as_dict()
    if exact_args is not None:
        result["exact"] = simulate_audit.exact_coverage(*exact_args)
    result["seconds"] = time.perf_counter() - started
    return {**setting, **result}


def settings(args, trained, truths):
    jobs, seed = [], 0
    for name, replicates in trained.items():
        truth = truths[name]
        for low, high in BANDS:
            visible = [
                simulate_audit.visible_frame(p, truth, train, band_low=low, band_high=high)
                for p, train, _f1 in replicates
            ]
            frames = [v.labels for v in visible]
            info = {
                "setting": name,
                "kind": "classifier",
                "band": f"{low:g}-{high:g}",
                "f1_mean": float(np.mean([f1 for _p, _t, f1 in replicates])),
                "reviewed_mean": float(np.mean([v.reviewed for v in visible])),
                "baseline_exposed_mean": float(np.mean([v.baseline_exposed for v in visible])),
                "baseline_visible_mean": float(np.mean([v.baseline_visible for v in visible])),
            }
            for c in CONFIDENCES:
                seed += 1
                kwargs = dict(
                    confidence=c, margin=0.02, prevalence=0.01, audits=args.audits, seed=seed
                )
                jobs.append((info, frames, kwargs, None))
    fixed = [
        (200, 0.1, 0.05),
        (1_000, 0.01, 0.02),
        (1_000, 0.2, 0.05),
        (100_000, 0.001, 0.01),
        (100_000, 0.05, 0.02),
        (100_000, 0.2, 0.05),
        (1_000_000, 0.01, 0.01),
        (1_000_000, 0.3, 0.02),
    ]
    for size, prevalence, margin in fixed:
        sensitive = round(size * prevalence)
        frame = simulate_audit.fixed_frame(size, sensitive, seed=size)
        for c in CONFIDENCES:
            seed += 1
            n = release_audit.sample_size(size, margin, c, prevalence=prevalence).n
            info = {
                "setting": f"fixed N={size:,} p={prevalence:g}",
                "kind": "fixed",
                "band": "",
            }
            kwargs = dict(
                confidence=c, margin=margin, prevalence=prevalence, audits=args.audits, seed=seed
            )
            jobs.append((info, [frame], kwargs, (size, sensitive, n, c)))
    return jobs


# --- Output -------------------------------------------------------------------------------------


def table(rows) -> str:
    head = (
        "| setting | band | nominal | audits | coverage (95% low) | C-P coverage | exact | N | "
        "K | mean n | mean k | mean U | mean U / N | K - k | mean U - k | baseline exposed |"
    )
    lines = [head, "|" + "---|" * 16]
    for r in rows:
        exact = f"{r['exact']:.3f}" if "exact" in r else ""
        baseline = f"{r['baseline_exposed_mean']:.1f}" if "baseline_exposed_mean" in r else ""
        lines.append(
            f"| {r['setting']} | {r['band']} | {r['confidence']:.2f} | {r['audits']:,} | "
            f"{r['coverage']:.3f} ({r['coverage_low']:.3f}) | {r['cp_coverage']:.3f} | {exact} | "
            f"{r['frame_mean']:,.0f} | {r['true_mean']:,.1f} | {r['n_mean']:,.0f} | "
            f"{r['found_mean']:.2f} | {r['upper_mean']:,.1f} | {r['upper_rate_mean']:.4f} | "
            f"{r['remaining_mean']:,.1f} | {r['remaining_upper_mean']:,.1f} | {baseline} |"
        )
    return "\n".join(lines)


def plots(rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5.5))
    labels = sorted({(r["kind"], r["setting"], r["band"]) for r in rows})
    colours = {0.90: "tab:blue", 0.95: "tab:orange", 0.99: "tab:green"}
    for i, key in enumerate(labels):
        for r in rows:
            if (r["kind"], r["setting"], r["band"]) != key:
                continue
            c = r["confidence"]
            ax.errorbar(
                i + {0.90: -0.2, 0.95: 0, 0.99: 0.2}[c],
                r["coverage"],
                yerr=[[r["coverage"] - r["coverage_low"]], [0]],
                fmt="o",
                color=colours[c],
                ms=4,
            )
    for c, colour in colours.items():
        ax.axhline(c, color=colour, lw=1, ls="--", label=f"nominal {c:.2f}")
        ax.axhline(c - 0.02, color=colour, lw=0.6, ls=":")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(
        [f"{s}\nband {b}" if b else s for _k, s, b in labels], rotation=60, ha="right", fontsize=7
    )
    ax.set_ylabel("share of audits whose bound covers the true K")
    ax.set_ylim(0.85, 1.005)
    ax.set_title("Release audit: per-audit coverage of the exact upper bound (dots: 95% low)")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(OUT / "coverage.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    margins = np.linspace(0.005, 0.1, 40)
    for c, colour in colours.items():
        for p, ls in ((0.0, "-"), (0.05, "--")):
            ns = [release_audit.sample_size(10**6, m, c, prevalence=p).n for m in margins]
            rule = "zero-failure" if p == 0 else f"planned p = {p:g}"
            ax.plot(margins, ns, ls, color=colour, label=f"{c:.2f}, {rule}")
    ax.set_yscale("log")
    ax.set_xlabel("margin on the rate")
    ax.set_ylabel("sample size n (N = 10^6)")
    ax.set_title("The calculator: n against the margin")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "calculator.png", dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--audits", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-classifier", action="store_true", help="fixed frames only")
    args = parser.parse_args()
    started = time.perf_counter()
    OUT.mkdir(parents=True, exist_ok=True)
    trained, truths = (
        ({}, {}) if args.no_classifier else classifier_frames(args.replicates, args.workers)
    )
    jobs = settings(args, trained, truths)
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(pool.map(_run, jobs))
    print(table(rows))
    low = min(r["coverage"] - r["confidence"] for r in rows)
    print(
        f"{len(rows)} settings, {sum(r['audits'] for r in rows):,} audits; lowest coverage minus "
        f"nominal {low:+.3f}; {time.perf_counter() - started:.0f} s"
    )
    (OUT / "coverage.json").write_text(json.dumps(rows, indent=1))
    with (OUT / "coverage.csv").open("w", newline="") as f:
        fields = sorted({k for r in rows for k in r})
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(rows)
    plots(rows)
    if low < -0.02 - 1e-9:
        sys.exit("coverage below nominal - 0.02")
    assert math.isfinite(low)


if __name__ == "__main__":
    main()
