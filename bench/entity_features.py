"""Held-out F1 of the sensitivity classifier with and without the entity-count features
(issue 20), on CACM (category 4.1 as the sensitive class, as in docs/protection.md) and on
the demo's fallback corpus (the 39 sample messages, all ham: the demo persona's labels come
from its annotators, so offline there are none to measure against; the run says so).
Cross-validated F1 (``sensitivity.train``'s report: 5-fold out-of-fold predictions at the
tuned threshold), three seeds each; the baseline in the same run is the same classifier
without the entity features, and calling everything sensitive.

    python bench/entity_features.py
"""

import time
from pathlib import Path

from _setup import ROOT, django_setup

MAILGEN_MESSAGES = 3000
CACM = ROOT.parent / "shared" / "data" / "cacm" / "cacm.all"  # ../shared, as the docs say


def measure(label: str, collection, labels: dict[int, int], seeds=(0, 1, 2)) -> None:
    from django.conf import settings

    from core import sensitivity
    from ranking.classifier import collection_messages

    messages, ids = collection_messages(collection=collection)
    rows = [i for i, pk in enumerate(ids) if pk in labels]
    y = [labels[ids[i]] for i in rows]
    with_entities = sum(1 for i in rows if any(messages[i].entities.values()))
    print(
        f"{label}: {len(rows)} labelled, {sum(y)} sensitive; {with_entities} hold an entity; "
        f"entities by kind: {_kinds(messages, rows)}"
    )
    if min(sum(y), len(y) - sum(y)) < 3:
        print("  not measured: cross-validation needs at least 3 labels of each class")
        return
    for flag in (False, True):
        f1s, started = [], time.perf_counter()
        for seed in seeds:
            featurizer = sensitivity.Featurizer(settings.SASC_INTERNAL_DOMAINS, entities=flag)
            matrix = featurizer.fit_transform(messages)
            trained = sensitivity.train(matrix[rows], y, featurizer.names, seed=seed)
            f1s.append(trained.report.f1)
            baseline = trained.report.baseline_f1
        mean = sum(f1s) / len(f1s)
        print(
            f"  {'with' if flag else 'without'} entity features: F1 "
            f"{' '.join(f'{f:.4f}' for f in f1s)} (mean {mean:.4f}); "
            f"all-sensitive baseline {baseline:.4f}; {time.perf_counter() - started:.1f} s"
        )


def _kinds(messages, rows) -> dict:
    total: dict[str, int] = {}
    for i in rows:
        for k, n in messages[i].entities.items():
            total[k] = total.get(k, 0) + n
    return dict(sorted(total.items(), key=lambda kv: -kv[1]))


def main() -> None:
    django_setup("entities")
    from annotate import services
    from annotate.models import Collection, Document
    from ranking.classifier import _in_category

    cacm = Collection.objects.create(name="CACM", slug="cacm", kind="smart")
    started = time.perf_counter()
    report = services.import_run(collection=cacm, fmt="smart", path=CACM)
    if not report.created:
        raise SystemExit(f"CACM not imported from {CACM}: {report.summary()}")
    print(f"CACM imported with its entities in {time.perf_counter() - started:.1f} s")
    labels = {}
    for pk, meta in Document.objects.filter(collection=cacm).values_list("pk", "metadata"):
        codes = (meta or {}).get("categories") or []
        if codes:
            labels[pk] = int(any(_in_category(c, "4.1") for c in codes))
    measure("CACM, category 4.1", cacm, labels)

    sample = Collection.objects.create(name="Demo sample", slug="sample")
    services.import_run(
        collection=sample, fmt="emails", path=ROOT / "tests" / "fixtures" / "emails" / "sample"
    )
    labels = {
        pk: int("spam" in docid)
        for pk, docid in Document.objects.filter(collection=sample).values_list("pk", "docid")
    }
    measure("demo sample (spam as the only surrogate label it has)", sample, labels)

    # A labelled mailbox: bench/mailgen.py's synthetic archive, whose planted sensitive
    # conversations (health, salary, family, gossip, legal) are its truth. The stand-in for
    # the demo, whose real mail has no sensitivity labels until annotators judge it.
    import tempfile

    from mailgen import generate

    folder = Path(tempfile.mkdtemp(prefix="sasc-entities-")) / "mail"
    generate(folder, MAILGEN_MESSAGES, seed=3)
    mail = Collection.objects.create(name="Synthetic mailbox", slug="mailgen")
    services.import_run(collection=mail, fmt="emails", path=folder)
    truth = {}
    for line in (folder.parent / "mail-sensitivity.txt").read_text().splitlines():
        _topic, _zero, docid, label = line.split()
        truth[docid] = int(label)
    labels = {
        pk: truth[docid]
        for pk, docid in Document.objects.filter(collection=mail).values_list("pk", "docid")
        if docid in truth
    }
    measure(f"synthetic mailbox ({MAILGEN_MESSAGES:,} messages, planted truth)", mail, labels)


if __name__ == "__main__":
    main()
