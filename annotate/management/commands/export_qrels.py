"""Write a project's qrels, sensitivity labels and annotation table from one snapshot."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotate import exports
from annotate.models import AnnotationProject

# The files an export wrote, so that the next export into the folder removes those it does
# not write again.
MANIFEST = ".sasc-export.json"


class Command(BaseCommand):
    help = (
        "Export a project's TREC qrels (qrels.txt), persona sensitivity labels "
        "(sensitivity-<persona>.txt), every judgment (annotations.csv, .jsonl) and the "
        "agreement and prevalence charts (PNG) into a folder."
    )

    def add_arguments(self, parser):
        parser.add_argument("project", help="the project's slug")
        parser.add_argument("--out", type=Path, required=True, help="folder to write into")
        parser.add_argument(
            "--machine-labels",
            choices=["exclude", "include"],
            default="exclude",
            help="include: hybrid qrels, adding the active-learning model's labels of "
            "documents nobody judged, flagged in machine-labels.txt (default: exclude)",
        )
        parser.add_argument(
            "--snapshot",
            help="PostgreSQL snapshot id to read (from pg_export_snapshot), for an export "
            "identical to another one taken from the same snapshot",
        )

    def handle(self, *args, **opts):
        project = AnnotationProject.objects.filter(slug=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project {opts['project']!r}")
        out: Path = opts["out"]
        if out.exists() and not out.is_dir():
            raise CommandError(f"{out} exists and is not a folder")
        files = exports.export_files(
            project,
            snapshot_id=opts["snapshot"],
            machine_labels=opts["machine_labels"] == "include",
        )
        out.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            # Written whole, then renamed: a reader never sees half a file.
            tmp = out / f".{name}.tmp"
            if isinstance(content, bytes):
                tmp.write_bytes(content)
                size = f"{len(content):,} bytes"
            else:
                tmp.write_text(content, encoding="utf-8")
                size = f"{content.count(chr(10))} lines"
            tmp.replace(out / name)
            self.stdout.write(f"{out / name}: {size}")
        # The files of an earlier export into this folder that this one did not write (a
        # persona renamed, machine labels left out) would sit beside it as if of the same
        # snapshot: they go. Only files an export listed in its manifest are touched.
        manifest = out / MANIFEST
        try:
            earlier = json.loads(manifest.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            earlier = {}
        listed = earlier.get("files") if isinstance(earlier, dict) else None
        if not isinstance(listed, list) or earlier.get("project") != project.slug:
            listed = []  # a manifest not written by an export of this project: left alone
        for name in sorted({n for n in listed if isinstance(n, str)} - set(files)):
            stale = out / name
            if Path(name).name == name and stale.is_file():
                stale.unlink()
                self.stdout.write(f"{stale}: removed (an earlier export's, not in this one)")
        tmp = out / f"{MANIFEST}.tmp"
        tmp.write_text(
            json.dumps({"project": project.slug, "files": sorted(files)}), encoding="utf-8"
        )
        tmp.replace(manifest)
