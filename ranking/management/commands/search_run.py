"""Run every topic of a collection through Lucene, write a TREC run, evaluate it."""

import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand

from annotate.management import command_collection
from core import lucene, runs
from ranking.pooling import FIELDS
from ranking.services import index_paths, reference_qrels


class Command(BaseCommand):
    help = "Search every topic with BM25 or QL, write a TREC run and evaluate it on the qrels."

    def add_arguments(self, parser):
        parser.add_argument("collection")
        parser.add_argument("--model", choices=["bm25", "qld"], default="bm25")
        parser.add_argument("--rm3", action="store_true")
        parser.add_argument("--field", choices=list(FIELDS), default="title")
        parser.add_argument("--k", type=int, default=1000)
        parser.add_argument("--out", type=Path, help="TREC run file (default: stdout)")

    def handle(self, *args, **opts):
        collection = command_collection(opts["collection"], indexed=True)
        path = index_paths(collection=collection).lucene
        started = time.perf_counter()
        run = {}
        for topic in collection.topics.all():
            query = FIELDS[opts["field"]](topic)
            hits = lucene.search(path, query, k=opts["k"], model=opts["model"], rm3=opts["rm3"])
            run[topic.number] = [(h.docid, h.score) for h in hits]
        seconds = time.perf_counter() - started
        tag = f"{opts['model']}{'+rm3' if opts['rm3'] else ''}-{opts['field']}"
        if opts["out"]:
            with open(opts["out"], "w") as fh:
                runs.write_trec_run(run, fh, tag=tag)
        else:
            runs.write_trec_run(run, sys.stdout, tag=tag)
        qrels = reference_qrels(collection=collection)
        out = self.stderr if not opts["out"] else self.stdout
        out.write(f"{len(run)} topics searched in {seconds:.1f} s ({tag})")
        if qrels:
            for measure, value in runs.evaluate(qrels, run).items():
                out.write(f"{measure:<28} {value:.4f}   ({len(qrels)} judged topics)")
