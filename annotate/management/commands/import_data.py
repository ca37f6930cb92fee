"""Import a file or folder into a collection: emails, SMART, topics, qrels, labels, personas."""

from collections import Counter
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils.text import slugify
from tqdm import tqdm

from annotate import services
from annotate.models import Collection, Persona


class Command(BaseCommand):
    help = (
        "Import data with one of the formats: "
        + ", ".join(services.IMPORT_FORMATS)
        + ". Prints every problem with its file and line; exits 1 if any error occurred."
    )

    def add_arguments(self, parser):
        parser.add_argument("format", choices=list(services.IMPORT_FORMATS))
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--collection", help="slug of the collection")
        parser.add_argument("--create", metavar="NAME", help="create the collection with this name")
        parser.add_argument(
            "--kind", default="email", choices=[k for k, _ in Collection.Kind.choices]
        )
        parser.add_argument("--persona", help="persona name (sensitivity labels)")
        parser.add_argument("--max-issues", type=int, default=50, help="problems to print")

    def handle(self, *args, **opts):
        fmt = opts["format"]
        collection = None
        if fmt != "personas":
            slug = opts["collection"] or (slugify(opts["create"]) if opts["create"] else None)
            if not slug:
                raise CommandError("give --collection SLUG (or --create NAME)")
            collection = Collection.objects.filter(slug=slug).first()
            if collection is None:
                if not opts["create"]:
                    raise CommandError(f"no collection {slug!r}; use --create NAME to make one")
                collection = Collection.objects.create(
                    name=opts["create"], slug=slug, kind=opts["kind"]
                )
                self.stdout.write(f"Created collection {slug!r}")
        persona = None
        if opts["persona"]:
            persona = Persona.objects.filter(name=opts["persona"]).first()
            if persona is None:
                raise CommandError(f"no persona named {opts['persona']!r}")
        failed = False
        for path in opts["paths"]:
            total = services.count_files(path) or None
            with tqdm(total=total, desc=path.name, unit="item", disable=None) as bar:

                def progress(n, bar=bar):
                    bar.update(n - bar.n)

                _job, report = services.import_recorded(
                    collection=collection,
                    fmt=fmt,
                    path=path,
                    persona=persona,
                    progress=progress,
                )
                if total:
                    bar.update(total - bar.n)
            self.stdout.write(f"{path}: {report.summary()}")
            self._print_issues(report, opts["max_issues"])
            failed = failed or not report.ok
        if failed:
            raise CommandError(
                "some input could not be imported (see the errors above)", returncode=1
            )

    def _print_issues(self, report, limit):
        errors = report.errors
        for issue in errors[:limit]:
            self.stdout.write(f"  error: {issue}")
        if len(errors) > limit:
            self.stdout.write(f"  ... and {len(errors) - limit} more errors")
        reasons = Counter(issue.reason for issue in report.skipped)
        for reason, count in reasons.most_common(10):
            self.stdout.write(f"  skipped {count}: {reason}")
        if report.duplicates:
            examples = ", ".join(
                f"{d['docid']} = {d['duplicate_of']}" for d in report.duplicate_examples[:5]
            )
            self.stdout.write(f"  duplicates stored once: {report.duplicates} (e.g. {examples})")
        if report.partly_decoded:
            self.stdout.write(f"  not fully decoded: {len(report.partly_decoded)}, e.g.")
            for item in report.partly_decoded[:5]:
                self.stdout.write(f"    {item['docid']}: {'; '.join(item['problems'][:3])}")
