"""Fill folders and threading headers of documents stored before they were kept, and
(re)assign the thread keys of a collection, or of every email collection."""

import time

from django.core.management.base import BaseCommand

from annotate.management import command_collection
from annotate.models import Collection
from annotate.threads import collection_threading_backfill


class Command(BaseCommand):
    help = "Backfill folder/In-Reply-To/References and assign thread_key (one or all collections)."

    def add_arguments(self, parser):
        parser.add_argument("collection", nargs="?", help="collection slug (default: all email)")

    def handle(self, *args, **opts):
        if opts["collection"]:
            collections = [command_collection(opts["collection"])]
        else:
            collections = list(Collection.objects.filter(kind=Collection.Kind.EMAIL))
        for collection in collections:
            started = time.perf_counter()
            filled = collection_threading_backfill(collection=collection)
            threads = (
                collection.documents.exclude(thread_key="").values("thread_key").distinct().count()
            )
            self.stdout.write(
                f"{collection.slug}: {filled} documents backfilled, {threads} threads "
                f"({time.perf_counter() - started:.1f} s)"
            )
