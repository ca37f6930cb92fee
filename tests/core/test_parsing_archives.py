"""Hostile zips: headers that lie about sizes, bombs, too many members, unbounded methods.

Each case asserts the reported issue (the member and the limit named) and, where the old
reader decompressed a whole member in memory, that the peak of Python allocations stays a
few megabytes above the baseline.
"""

import struct
import tracemalloc
import zipfile
import zlib
from pathlib import Path

from core.parsing import Issue
from core.parsing.sources import EmailItem, Limits, iter_emails

MSG = b"From: a@example.org\nTo: b@example.org\nSubject: %s\n\nBody %s\n"
MB = 1024 * 1024


def split(items):
    return (
        [i for i in items if isinstance(i, EmailItem)],
        [i for i in items if isinstance(i, Issue)],
    )


def write_zeros_member(archive: zipfile.ZipFile, name: str, size: int) -> None:
    """Add ``size`` zero bytes as a deflated member, streamed: the test never holds them."""
    block = bytes(MB)
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    with archive.open(info, "w") as out:
        for _ in range(size // MB):
            out.write(block)


def lie_about_size(path: Path, name: str, declared: int) -> None:
    """Rewrite the uncompressed size of member ``name`` in its local and central headers."""
    data = bytearray(path.read_bytes())
    encoded = name.encode()
    local = data.index(b"PK\x03\x04")
    while data[local + 30 : local + 30 + len(encoded)] != encoded:
        local = data.index(b"PK\x03\x04", local + 4)
    struct.pack_into("<L", data, local + 22, declared)
    central = data.index(b"PK\x01\x02")
    while data[central + 46 : central + 46 + len(encoded)] != encoded:
        central = data.index(b"PK\x01\x02", central + 4)
    struct.pack_into("<L", data, central + 24, declared)
    path.write_bytes(bytes(data))


def peak_while(func) -> tuple[object, int]:
    """Run ``func`` and return its result and the peak of traced allocations above the start."""
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        result = func()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak - base


def make_zip(path: Path, build) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        build(archive)
    return path


def test_a_member_whose_header_understates_its_size_is_read_in_bounded_memory(tmp_path):
    """The issue's case: a small zip whose member says 1,000 bytes and inflates to 100 MB.
    The old reader asked zlib for the whole member in one call (up to 1 GB) before cutting
    it to the declared size."""

    def build(archive):
        archive.writestr("ok.eml", MSG % (b"fine", b"1"))
        write_zeros_member(archive, "liar.eml", 100 * MB)

    path = make_zip(tmp_path / "liar.zip", build)
    lie_about_size(path, "liar.eml", 1000)
    assert path.stat().st_size < 200_000
    limits = Limits(max_message_bytes=500 * MB, max_archive_bytes=1000 * MB)
    items, peak = peak_while(lambda: list(iter_emails(path, limits=limits)))
    emails, issues = split(items)
    assert [e.email.subject for e in emails] == ["fine"]
    assert [(i.where, i.severity) for i in issues] == [("liar.eml", "error")]
    assert "header lies about its size" in issues[0].reason
    assert peak < 4 * MB, f"peak {peak / MB:.1f} MB"


def test_a_member_that_inflates_past_the_message_limit_is_stopped_at_the_limit(tmp_path):
    """A header that claims a size under the limit while the data holds far more: the bytes
    read are counted and reading stops one chunk past the limit."""

    def build(archive):
        write_zeros_member(archive, "big.eml", 64 * MB)

    path = make_zip(tmp_path / "big.zip", build)
    lie_about_size(path, "big.eml", 40 * MB)
    limits = Limits(max_message_bytes=2 * MB, max_compression_ratio=10**9)
    # The header (40 MB) is over the limit: refused before a byte is inflated.
    _, issues = split(list(iter_emails(path, limits=limits)))
    assert issues[0].where == "big.eml"
    assert "over the 2.0 MB limit (SASC_MAX_MESSAGE_BYTES)" in issues[0].reason
    lie_about_size(path, "big.eml", MB)  # now under the limit on paper
    limits = Limits(max_message_bytes=3 * MB // 2, max_compression_ratio=10**9)
    items, peak = peak_while(lambda: list(iter_emails(path, limits=limits)))
    _, issues = split(items)
    assert issues[0].where == "big.eml"
    assert "header lies about its size" in issues[0].reason
    assert peak < 6 * MB


def test_a_highly_compressible_member_is_refused_by_its_compression_ratio(tmp_path):
    def build(archive):
        archive.writestr("small.eml", MSG % (b"fine", b"1"))
        write_zeros_member(archive, "bomb.eml", 50 * MB)

    path = make_zip(tmp_path / "bomb.zip", build)
    limits = Limits(max_message_bytes=500 * MB, max_archive_bytes=1000 * MB)
    items, peak = peak_while(lambda: list(iter_emails(path, limits=limits)))
    emails, issues = split(items)
    assert [e.email.subject for e in emails] == ["fine"]
    assert [i.where for i in issues] == ["bomb.eml"]
    assert "more than 100 times its compressed size" in issues[0].reason
    assert "SASC_MAX_COMPRESSION_RATIO" in issues[0].reason
    assert peak < 4 * MB, f"peak {peak / MB:.1f} MB"


def test_the_archive_total_is_counted_on_bytes_read_and_stops_the_rest(tmp_path):
    body = b"x" * (400 * 1024)

    def build(archive):
        for n in range(6):
            archive.writestr(f"m{n}.eml", MSG % (b"s%d" % n, body))

    path = make_zip(tmp_path / "many.zip", build)
    limits = Limits(max_archive_bytes=MB, max_compression_ratio=10**6)
    emails, issues = split(list(iter_emails(path, limits=limits)))
    assert [e.email.subject for e in emails] == ["s0", "s1"]
    assert [i.where for i in issues] == ["m2.eml"]
    assert issues[0].reason == (
        "archive expands to more than 1.0 MB (SASC_MAX_ARCHIVE_BYTES); "
        "this member and the rest were not read"
    )


def test_an_archive_with_too_many_members_is_refused_before_its_members_are_listed(tmp_path):
    def build(archive):
        for n in range(30):
            archive.writestr(f"m{n}.eml", MSG % (b"s", b"%d" % n))

    path = make_zip(tmp_path / "crowd.zip", build)
    emails, issues = split(list(iter_emails(path, limits=Limits(max_archive_members=29))))
    assert emails == []
    assert [i.reason for i in issues] == [
        "archive has more than 29 members (SASC_MAX_ARCHIVE_MEMBERS); nothing was read"
    ]
    emails, issues = split(list(iter_emails(path, limits=Limits(max_archive_members=30))))
    assert len(emails) == 30 and issues == []


def test_members_compressed_without_an_output_bound_are_refused(tmp_path):
    path = tmp_path / "bz.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.eml", MSG % (b"plain", b"1"))
        archive.writestr("b.eml", MSG % (b"bz", b"2"), compress_type=zipfile.ZIP_BZIP2)
    emails, issues = split(list(iter_emails(path)))
    assert [e.email.subject for e in emails] == ["plain"]
    assert [i.where for i in issues] == ["b.eml"]
    assert "compression method 12 is not read (only stored and deflate)" in issues[0].reason


def test_a_deflate_stream_is_never_inflated_in_one_call(tmp_path, monkeypatch):
    """Pin the mechanism: every decompress call the reader makes is bounded."""
    asked = []
    real = zlib.decompressobj

    class Spy:
        def __init__(self, *a):
            self.inner = real(*a)

        def decompress(self, data, max_length=0):
            asked.append(max_length)
            return self.inner.decompress(data, max_length)

        def __getattr__(self, name):
            return getattr(self.inner, name)

    def build(archive):
        write_zeros_member(archive, "z.eml", 4 * MB)

    path = make_zip(tmp_path / "z.zip", build)
    monkeypatch.setattr(zipfile.zlib, "decompressobj", Spy)
    list(iter_emails(path, limits=Limits(max_compression_ratio=10**6)))
    assert asked and 0 < max(asked) <= 64 * 1024
