"""A synthetic archive end to end at size N, every figure beside a baseline from the same run.

Steps (each timed; the baseline in brackets):
1. generate N messages (``bench/mailgen.py``) unless ``--mail`` points at them;
2. import them with parallel parsing (``--workers`` processes) [the same importer, one
   process, on the first mbox file: messages per second];
3. build the index: Lucene, TF-IDF and the MinHash/LSH near-duplicate index;
4. near-duplicates of 200 documents from the index [the sparse product of one TF-IDF row
   with the whole matrix it replaced];
5. topics and qrels imported, a project pooled (18 systems, depth 25);
6. one active-learning step on one topic (CAL: train on the seeds, score every row, pick
   the next batch) [SPL: the random batch];
7. the donor's sensitivity classifier trained on the planted labels (networkx
   centralities, betweenness sampled from 1,000 sources beyond 1,000 nodes), and every
   document rescored [F1 of calling everything sensitive];
8. served, in this process through Django's test client (no network): protected search,
   the review queue, a document's review page and the judging page, p50/p95 over
   ``--requests`` requests each [the same pages on a 2,000-message archive built the same
   way in this run].
Peak memory: this process (Django, the JVM, the matrices) and the parsing workers.

    source .ci/services   # PostgreSQL (DATABASE_URL); without it, SQLite in a temp folder
    .venv/bin/python bench/scale.py --messages 20000 --workers 2
"""

import argparse
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _setup import PeakMemory, django_setup  # noqa: E402
from mailgen import generate  # noqa: E402


def rss_mb(who=resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def timed(label, fn, *args, **kwargs):
    started = time.perf_counter()
    out = fn(*args, **kwargs)
    seconds = time.perf_counter() - started
    print(f"  {label}: {seconds:.1f} s", flush=True)
    return out, seconds


def percentiles(values):
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
    return statistics.median(values) * 1000, p95 * 1000


def classify(collection, persona, sample: int | None) -> dict:
    """Train the donor's classifier on the planted labels (``sample``: a stratified random
    sample of that many), rescore every document, publish; return its figures."""
    from annotate.models import ReferenceSensitivity
    from ranking.classifier import sensitivity_model_train
    from review.models import Publication

    truth = dict(
        ReferenceSensitivity.objects.filter(
            persona=persona, document__collection=collection
        ).values_list("document_id", "sensitive")
    )
    labels = {d: int(s) for d, s in truth.items()}
    if sample and sample < len(labels):
        from sklearn.model_selection import train_test_split

        keys = sorted(labels)
        kept, _rest = train_test_split(
            keys, train_size=sample, stratify=[labels[k] for k in keys], random_state=0
        )
        labels = {k: labels[k] for k in kept}
    out = {"labels": len(labels)}
    trained, out["classifier_seconds"] = timed(
        f"sensitivity classifier ({len(labels)} labels; train + rescore every document)",
        sensitivity_model_train,
        collection=collection,
        persona=persona,
        source="reference",
        labels=labels,
    )
    out["classifier_report"] = {
        k: trained.report.get(k)
        for k in ("f1", "f2", "precision", "recall", "threshold", "graph")
        if k in trained.report
    }
    prevalence = sum(truth.values()) / max(1, len(truth))
    out["f1_all_sensitive"] = 2 * prevalence / (1 + prevalence)
    Publication.objects.create(
        collection=collection, persona=persona, published=True, band_low=0.2, band_high=0.8
    )
    return out


def resume(label) -> dict:
    """The archive ``label`` a run in this database built, up to its classifier."""
    from annotate.models import AnnotationProject, Collection, Persona

    collection = Collection.objects.get(slug=label)
    return {
        "collection": collection,
        "persona": Persona.objects.get(name=f"Donor {label}"),
        "project": AnnotationProject.objects.get(slug=f"{label}-p"),
        "messages": collection.documents.count(),
    }


def build(label, mail: Path, workers: int, users, *, baseline_rate: bool, labels_sample=None):
    """Import, index, pool, learn, classify and publish one archive; return its figures."""
    from annotate import services as annotate_services
    from annotate.models import AnnotationProject, Collection, Persona, Round
    from core import active, features, lucene
    from ranking.pooling import project_pool
    from ranking.services import collection_features, collection_near_duplicates, index_build

    out = {}
    print(f"[{label}] {mail}", flush=True)
    if baseline_rate:
        first = sorted(mail.glob("*.mbox"))[0]
        probe = Collection.objects.create(name=f"{label} probe", slug=f"{label}-probe")
        report, seconds = timed(
            "import, one process, first file",
            annotate_services.import_run,
            collection=probe,
            fmt="emails",
            path=first,
        )
        out["import_rate_one_process"] = report.created / seconds
        probe.delete()
    collection = Collection.objects.create(name=label, slug=label)
    report, seconds = timed(
        f"import, {workers} parsing processes",
        annotate_services.import_run,
        collection=collection,
        fmt="emails",
        path=mail,
        workers=workers,
    )
    out["messages"] = report.created
    out["import_seconds"] = seconds
    out["import_rate"] = report.created / seconds
    out["import_errors"] = len(report.errors)
    result, seconds = timed(
        "index (Lucene, TF-IDF, latent topics, near-duplicates)",
        index_build,
        collection_id=collection.pk,
    )
    out["index_seconds"] = seconds
    out["index"] = {
        k: result.get(k)
        for k in (
            "lucene_seconds",
            "features_seconds",
            "latent_seconds",
            "neardup_seconds",
            "near_duplicate_pairs",
            "terms",
        )
    }
    collection.refresh_from_db()

    # Near-duplicates: the index's neighbour list against the sparse product it replaced.
    fm = collection_features(collection=collection)
    near = collection_near_duplicates(collection=collection)
    rng = random.Random(0)
    sample = rng.sample(range(len(fm.docids)), min(200, len(fm.docids)))
    t = []
    for row in sample:
        s = time.perf_counter()
        near.neighbours_of(fm.docids[row])
        t.append(time.perf_counter() - s)
    out["neardup_ms"] = percentiles(t)
    t = []
    for row in sample[:50]:
        s = time.perf_counter()
        sim = (fm.matrix @ fm.matrix[row].T).toarray().ravel()
        np.flatnonzero(sim >= 0.8)
        t.append(time.perf_counter() - s)
    out["sparse_product_ms"] = percentiles(t)

    # Topics, qrels, a persona, the planted sensitivity truth.
    base = mail.parent / mail.name
    annotate_services.import_run(
        collection=collection, fmt="topics-trec", path=Path(f"{base}-topics.txt")
    )
    annotate_services.import_run(
        collection=collection, fmt="qrels-trec", path=Path(f"{base}-qrels.txt")
    )
    persona = Persona.objects.create(name=f"Donor {label}")
    annotate_services.import_run(
        collection=collection,
        fmt="sensitivity",
        path=Path(f"{base}-sensitivity.txt"),
        persona=persona,
    )

    project = AnnotationProject.objects.create(name=label, slug=f"{label}-p", collection=collection)
    project.personas.add(persona)
    project.topics.add(*collection.topics.all())
    project.annotators.add(users["annotator"])
    round_ = Round.objects.create(project=project, number=1)
    _pool, out["pool_seconds"] = timed(
        "pool (18 systems x topics, depth 25)",
        project_pool,
        project=project,
        round_=round_,
        depth=25,
    )

    # One active-learning step, topic 1: seeds from the qrels (5 relevant, 5 not).
    from ranking.services import reference_qrels

    qrels = reference_qrels(collection=collection).get("1", {})
    row_of = {d: i for i, d in enumerate(fm.docids)}
    relevant = [row_of[d] for d, g in qrels.items() if g > 0 and d in row_of][:5]
    others = [r for r in rng.sample(range(len(fm.docids)), 200) if fm.docids[r] not in qrels][:5]
    rows = relevant + others
    labels = [1] * len(relevant) + [0] * len(others)
    candidates = range(len(fm.docids))
    s = time.perf_counter()
    model = active.train(fm.matrix, rows, labels)
    p = model.probabilities(fm.matrix)
    active.select("cal", p, candidates, set(rows), 100)
    out["al_cal_seconds"] = time.perf_counter() - s
    s = time.perf_counter()
    active.select("spl", p, candidates, set(rows), 100)
    out["al_spl_seconds"] = time.perf_counter() - s
    print(
        f"  active learning step: CAL {out['al_cal_seconds']:.2f} s, "
        f"SPL {out['al_spl_seconds']:.3f} "
        f"s",
        flush=True,
    )

    out.update(classify(collection, persona, labels_sample))
    out["collection"], out["persona"], out["project"] = collection, persona, project
    del lucene, features
    return out


def serve(label, built, users, requests: int):
    """p50/p95 of the four pages, through Django's test client."""
    from django.test import Client
    from django.urls import reverse

    from review import services as review_services
    from review.models import ReviewRequest, SearchLog

    collection, project = built["collection"], built["project"]
    words = [
        "grant",
        "budget",
        "travel",
        "hotel",
        "renovation",
        "permit",
        "release",
        "server",
        "admissions",
        "exhibition",
        "board",
        "minutes",
        "archive",
        "scanner",
        "salary",
        "hospital",
        "lawsuit",
    ]
    rng = random.Random(1)
    searcher, archivist, annotator = Client(), Client(), Client()
    searcher.force_login(users["searcher"])
    archivist.force_login(users["archivist"])
    annotator.force_login(users["annotator"])
    times = {"search": [], "queue": [], "review item": [], "judging": []}
    searcher.post(reverse("searcher-search", args=[collection.slug]), {"q": "warm up"})
    for _ in range(requests):
        q = " ".join(rng.sample(words, 2))
        s = time.perf_counter()
        r = searcher.post(reverse("searcher-search", args=[collection.slug]), {"q": q}, follow=True)
        times["search"].append(time.perf_counter() - s)
        assert r.status_code == 200
    for search in SearchLog.objects.filter(collection=collection)[:requests]:
        review_services.review_requests_create(search_id=search.pk)
    pending = list(
        ReviewRequest.objects.filter(search__collection=collection, status="pending").values_list(
            "persona_id", "document_id"
        )[:requests]
    )
    for i in range(requests):
        s = time.perf_counter()
        r = archivist.get(reverse("review-queue"))
        times["queue"].append(time.perf_counter() - s)
        assert r.status_code == 200
        if pending:
            persona_id, doc_id = pending[i % len(pending)]
            s = time.perf_counter()
            r = archivist.get(reverse("review-item", args=[persona_id, doc_id]))
            times["review item"].append(time.perf_counter() - s)
            assert r.status_code == 200
        s = time.perf_counter()
        r = annotator.get(reverse("judge", args=[project.slug]))
        times["judging"].append(time.perf_counter() - s)
        assert r.status_code in (200, 302)
    return {page: percentiles(t) for page, t in times.items() if t}, len(pending)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--baseline-messages", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--mail", type=Path, default=None, help="a folder mailgen wrote")
    parser.add_argument(
        "--labels",
        type=int,
        default=None,
        help="train the big archive's classifier on a stratified sample of this many planted "
        "labels (default: every message's)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="reuse the two archives a stopped run built in this database (DATABASE_URL) "
        "up to their classifiers, then train what is missing and serve the pages",
    )
    args = parser.parse_args()
    # one import of the whole archive (the default cap is 250,000 documents an import)
    os.environ.setdefault("SASC_MAX_DOCUMENTS_PER_IMPORT", str(max(250_000, args.messages)))
    work = django_setup("scale")
    peaks = PeakMemory()
    from django.core.management import call_command
    from django.db import connection

    call_command("collectstatic", interactive=False, verbosity=0)  # pages name hashed files

    from django.contrib.auth import get_user_model

    from annotate import roles
    from annotate import services as annotate_services

    names = {"searcher": ("s", roles.SEARCHER), "archivist": ("a", roles.ARCHIVIST)}
    names["annotator"] = ("n", roles.ANNOTATOR)
    if args.resume:
        users = {k: get_user_model().objects.get(username=u) for k, (u, _r) in names.items()}
    else:
        users = {
            k: annotate_services.user_create(username=u, password="pw-bench-only", role_names=[r])
            for k, (u, r) in names.items()
        }
    print(
        f"database: {connection.vendor}; work folder {work}; cores {os.cpu_count()}; "
        f"load {os.getloadavg()}"
    )
    if args.resume:
        from review.models import Publication

        base, big = resume("small"), resume("big")
        for built, sample in ((base, None), (big, args.labels)):
            if not Publication.objects.filter(collection=built["collection"]).exists():
                built.update(classify(built["collection"], built["persona"], sample))
    else:
        mail = args.mail
        started = time.perf_counter()
        if mail is None:
            mail = work / f"mail{args.messages}"
            print(generate(mail, args.messages, per_file=max(1000, args.messages // 40)))
        print(f"  generate: {time.perf_counter() - started:.1f} s")
        small = work / f"mail{args.baseline_messages}"
        generate(small, args.baseline_messages, seed=2, per_file=500)
        base = build("small", small, args.workers, users, baseline_rate=False)
        big = build("big", mail, args.workers, users, baseline_rate=True, labels_sample=args.labels)
    base_pages, _ = serve("small", base, users, args.requests)
    big_pages, pending = serve("big", big, users, args.requests)

    print()
    print(
        f"=== {big['messages']} messages (baseline archive: {base['messages']}) on "
        f"{connection.vendor}, {args.workers} parsing processes; load average now "
        f"{os.getloadavg()}"
    )
    if not args.resume:  # those steps ran in the stopped run
        print(
            f"import: {big['import_rate']:.0f} msg/s parse + store in parallel [one process: "
            f"{big['import_rate_one_process']:.0f} msg/s]; {big['import_errors']} errors"
        )
        print(f"index: {big['index_seconds']:.1f} s {big['index']}")
        print(
            f"near-duplicates of a document: p50 {big['neardup_ms'][0]:.2f} ms, "
            f"p95 {big['neardup_ms'][1]:.2f} "
            f"ms [sparse product over the collection: p50 {big['sparse_product_ms'][0]:.1f} "
            f"ms, p95 {big['sparse_product_ms'][1]:.1f} ms]"
        )
        print(f"pool: {big['pool_seconds']:.1f} s [small archive: {base['pool_seconds']:.1f} s]")
        print(
            f"active-learning step (CAL, 100): {big['al_cal_seconds']:.2f} s "
            f"[SPL: {big['al_spl_seconds']:.3f} "
            f"s]"
        )
    print(
        f"sensitivity classifier ({big['labels']} labels) + rescore: "
        f"{big['classifier_seconds']:.1f} s; "
        f"{big['classifier_report']} "
        f"[F1 calling everything sensitive: {big['f1_all_sensitive']:.3f}]"
    )
    print(
        f"pages, {args.requests} requests each, ms p50/p95 "
        f"[same page on the {base['messages']}-message "
        f"archive]; {pending} documents pending review:"
    )
    for page, (p50, p95) in big_pages.items():
        b50, b95 = base_pages.get(page, (float("nan"), float("nan")))
        print(f"  {page:12s} {p50:7.1f} / {p95:7.1f}   [{b50:6.1f} / {b95:6.1f}]")
    print(
        f"peak memory: this process (web pages, JVM, index build, classifier) {rss_mb():.0f} "
        f"MB; largest parsing worker {peaks.largest():.0f} MB"
    )


if __name__ == "__main__":
    main()
