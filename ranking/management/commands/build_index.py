"""Build the Lucene index and TF-IDF features of a collection (skipped when current)."""

import time

from django.core.management.base import BaseCommand
from tqdm import tqdm

from annotate.management import command_collection
from ranking.services import index_recorded


class Command(BaseCommand):
    help = "Build the Lucene index and TF-IDF matrix of a collection's current version."

    def add_arguments(self, parser):
        parser.add_argument("collection", help="collection slug")
        parser.add_argument("--force", action="store_true", help="rebuild even if current")

    def handle(self, *args, **opts):
        collection = command_collection(opts["collection"])
        started = time.perf_counter()
        with tqdm(desc="index", unit="doc", disable=None) as bar:

            def progress(done, total, bar=bar):
                bar.total = total
                bar.update(done - bar.n)

            result = index_recorded(collection=collection, progress=progress, force=opts["force"])
        if result.get("skipped"):
            self.stdout.write(
                f"Index of {collection.slug} is current (version {result['version']})"
            )
            return
        self.stdout.write(
            f"Indexed {result['documents']} documents of {collection.slug} (version "
            f"{result['version']}) in {time.perf_counter() - started:.1f} s: Lucene "
            f"{result['lucene_seconds']} s, TF-IDF {result['features_seconds']} s, "
            f"latent topics {result['latent_seconds']} s, "
            f"{result['terms']} terms, {result['nonzeros']} non-zeros"
        )
