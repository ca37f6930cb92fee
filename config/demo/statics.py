"""Collect static files only when they changed since the last collection.

``collectstatic`` with whitenoise's CompressedManifestStaticFilesStorage costs minutes on a
busy two-core machine and redoes all of it on every run: Django's manifest storage
re-hashes every file it finds (it cannot tell which changed), and whitenoise then
compresses every original and every hashed copy again with gzip and brotli (quality 11),
about 1,200 outputs for the ~240 files of Django's admin, DRF and the Swagger/Redoc
bundles. The result only changes when a source file changes, so the demo fingerprints the
sources (every file the staticfiles finders return: the project's ``static/`` and the
installed packages' static folders, by path, size and modification time, plus the storage
backend) and collects again only when the fingerprint differs from the one stored beside
the collected files.
"""

import hashlib
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles.finders import get_finders
from django.contrib.staticfiles.storage import staticfiles_storage
from django.core.management import call_command

STAMP_NAME = ".sasc-collected"
IGNORE = ["CVS", ".*", "*~"]  # collectstatic's default ignore patterns


def sources() -> list[tuple[str, Path]]:
    """Return ``(url path, source file)`` for every static file collectstatic would copy."""
    found = {}
    for finder in get_finders():
        for path, storage in finder.list(IGNORE):
            prefix = getattr(storage, "prefix", None) or ""
            name = f"{prefix}/{path}" if prefix else path
            # The first finder to return a name wins, as in collectstatic.
            found.setdefault(name, Path(storage.path(path)))
    return sorted(found.items())


def fingerprint(files: list[tuple[str, Path]]) -> str:
    digest = hashlib.sha256()
    digest.update(settings.STORAGES["staticfiles"]["BACKEND"].encode())
    digest.update(repr(getattr(settings, "WHITENOISE_SKIP_COMPRESS_EXTENSIONS", None)).encode())
    for name, path in files:
        st = path.stat()
        digest.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def collect_if_changed(say) -> bool:
    """Run collectstatic unless the collected files match the sources; True if it ran."""
    root = Path(settings.STATIC_ROOT)
    stamp = root / STAMP_NAME
    files = sources()
    current = fingerprint(files)
    # A manifest storage's pages fail without its manifest: its absence means "collect".
    manifest_name = getattr(staticfiles_storage, "manifest_name", None)
    complete = manifest_name is None or (root / manifest_name).is_file()
    if complete and stamp.is_file() and stamp.read_text().strip() == current:
        say(f"Static files unchanged ({len(files)} files): not collecting them again")
        return False
    say(
        f"Collecting {len(files)} static files: hashing and compressing them (gzip and "
        "brotli); only after a change of static files or packages ..."
    )
    stamp.unlink(missing_ok=True)
    call_command("collectstatic", verbosity=0, interactive=False)
    root.mkdir(parents=True, exist_ok=True)
    stamp.write_text(current + "\n")
    return True
