"""Find the sensitive entities of a collection's stored documents again (after the
recognisers changed: person names and the library-backed recognisers of issue 31)."""

import os
import time

from django.core.management.base import BaseCommand

from annotate.entities import collection_entities_detect
from annotate.management import command_collection


class Command(BaseCommand):
    help = (
        "Recompute the stored entities (the spans the judging and review pages highlight and "
        "offer for redaction) of every document of a collection. Redactions already saved "
        "are not touched: what searchers read does not change."
    )

    def add_arguments(self, parser):
        parser.add_argument("collection", help="collection slug")
        parser.add_argument(
            "--workers",
            type=int,
            default=max(1, (os.cpu_count() or 1) - 1),
            help="processes running the recognisers (default: the cores less one)",
        )

    def handle(self, *args, **opts):
        collection = command_collection(opts["collection"])
        started = time.perf_counter()
        rows = collection_entities_detect(collection_id=collection.pk, workers=opts["workers"])
        self.stdout.write(
            f"{rows} entities found in {collection.slug} in {time.perf_counter() - started:.1f} s"
        )
