"""Fuzzing every importer (issue 8): valid files of each format, mutated by hypothesis
(bytes deleted, inserted, repeated, truncated; NULs, invalid UTF-8, markup, separators).
Every import must end with a report (no exception), every problem must name its file and
say what was wrong, and what was stored must be what the report counts: no partial rows."""

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotate import services
from annotate.models import (
    Attachment,
    Document,
    Persona,
    ReferenceRelevance,
    ReferenceSensitivity,
    Topic,
)
from tests.conftest import FIXTURES

SMART = FIXTURES / "smart"
EDGE = FIXTURES / "emails" / "edge"
MBOX = b"".join(
    b"From sender@example.org Sat Sep  7 12:00:00 2002\n" + (EDGE / n).read_bytes() + b"\n"
    for n in ("attachments.eml", "multipart-alternative.eml")
)
SEEDS = {
    "emails": ("message.eml", (EDGE / "attachments.eml").read_bytes()),
    "emails-mbox": ("box.mbox", MBOX),
    "smart": ("docs.all", (SMART / "mini.all").read_bytes()),
    "topics-trec": (
        "topics.txt",
        b"<top>\n<num> Number: 7\n<title> first topic\n<desc> Description:\nAbout it.\n"
        b"<narr> Narrative:\nRelevant.\n</top>\n<top>\n<num> Number: 9\n<title> ninth\n</top>\n",
    ),
    "topics-smart": ("queries.qry", (SMART / "mini.qry").read_bytes()),
    "qrels-trec": ("qrels.txt", b"1 0 1 1\n1 0 4 0\n2 0 2 2\n"),
    "qrels-cranfield": ("qrels.rel", (SMART / "mini.rel").read_bytes()),
    "qrels-cacm": ("qrels.text", b"01 1 0 0\n01 4 0 0\n02 2 0 0\n"),
    "sensitivity": ("labels.txt", b"* 0 1 1\n1 0 4 0\n2 0 2 1\n"),
    "personas": (
        "personas.json",
        b'[{"name": "Ann", "occupation": "Clerk", "goals": "privacy"}, {"name": "Bo"}]',
    ),
}
NASTY = [
    b"\x00",
    b"\xff\xfe",
    b"\xc3\x28",
    b"<",
    b">",
    b"\n",
    b"\r\n",
    b":",
    b" ",
    b".I 9\n",
    b".W\n",
    b"<top>",
    b"</top>",
    b"--mix\n",
    b"Content-Type: text/html\n",
    b'"',
    b"{",
    b"]",
    b"=?utf-8?b?zz?=",
    b"\t",
    b"-1",
    b"99999999999999999999",
]


@st.composite
def mutated(draw, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(draw(st.integers(0, 6))):  # 0: the valid file itself
        kind = draw(st.sampled_from(["delete", "insert", "repeat", "truncate", "flip"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "delete" and data:
            del data[at : at + draw(st.integers(1, 40))]
        elif kind == "insert":
            chunk = draw(st.one_of(st.sampled_from(NASTY), st.binary(min_size=1, max_size=20)))
            data[at:at] = chunk
        elif kind == "repeat" and data:
            data[at:at] = data[at : at + draw(st.integers(1, 200))]
        elif kind == "truncate":
            del data[at:]
        elif kind == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
    return bytes(data)


def _counts(collection) -> dict:
    return {
        "documents": Document.objects.filter(collection=collection).count(),
        "attachments": Attachment.objects.filter(document__collection=collection).count(),
        "topics": Topic.objects.filter(collection=collection).count(),
        "qrels": ReferenceRelevance.objects.filter(topic__collection=collection).count(),
        "labels": ReferenceSensitivity.objects.count(),
        "personas": Persona.objects.count(),
    }


STORED = {  # the table whose new rows an import's "created" counts
    "emails": "documents",
    "emails-mbox": "documents",
    "smart": "documents",
    "topics-trec": "topics",
    "topics-smart": "topics",
    "qrels-trec": "qrels",
    "qrels-cranfield": "qrels",
    "qrels-cacm": "qrels",
    "sensitivity": "labels",
    "personas": "personas",
}


@pytest.mark.parametrize("kind", list(SEEDS))
def test_every_importer_survives_malformed_input(kind, collection, tmp_path):
    name, seed = SEEDS[kind]
    fmt = "emails" if kind.startswith("emails") else kind
    # The world the reference formats point into: documents 1, 2, 4 and topics 1, 2.
    for n in ("1", "2", "4"):
        Document.objects.create(collection=collection, docid=n, subject=n, content_hash=n)
    for n in ("1", "2"):
        Topic.objects.create(collection=collection, number=n, title=f"t{n}")
    persona = Persona.objects.create(name="Donor")
    path = tmp_path / name
    seen = {"with_errors": 0, "with_rows": 0}

    @settings(
        max_examples=40,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(data=mutated(seed))
    def check(data):
        path.write_bytes(data)
        with transaction.atomic():  # each example starts from the same database
            before = _counts(collection)
            report = services.import_run(
                collection=collection,
                fmt=fmt,
                path=path,
                persona=persona if fmt == "sensitivity" else None,
            )
            after = _counts(collection)
            transaction.set_rollback(True)
        seen["with_errors"] += bool(report.errors)
        seen["with_rows"] += report.created > 0
        for issue in report.issues:
            assert issue.source and name in issue.source, issue
            assert issue.reason.strip(), issue
        table = STORED[kind]
        assert after[table] - before[table] == report.created, (report.created, before, after)
        for other in set(after) - {table, "attachments"}:
            assert after[other] == before[other], (other, before, after)
        if table == "documents" and report.created == 0:
            assert after["attachments"] == before["attachments"]

    check()
    # The mutations reached both paths: files refused in part and files still imported.
    assert seen["with_errors"] > 0 and seen["with_rows"] > 0, seen
