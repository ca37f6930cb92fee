"""``annotate.bulk.rows_insert`` (PostgreSQL's COPY) stores what ``bulk_create`` stores: an
import of every fixture message, hostile ones included, read back field by field."""

from pathlib import Path

import pytest
from django.db import connection

from annotate import bulk, services
from annotate.models import Attachment, Collection, Document, DocumentEntity, ThreadLink

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "emails"
pytestmark = pytest.mark.django_db


def _stored(collection) -> dict:
    skip = {"id", "collection", "created_at"}
    fields = [f.attname for f in Document._meta.concrete_fields if f.name not in skip]
    docs = {
        row["docid"]: row for row in Document.objects.filter(collection=collection).values(*fields)
    }
    for att in Attachment.objects.filter(document__collection=collection).values(
        "document__docid", "position", "filename", "content_type", "size", "is_text", "text"
    ):
        docs[att.pop("document__docid")].setdefault("attachments", []).append(att)
    for docid, node in ThreadLink.objects.filter(collection=collection).values_list(
        "document__docid", "node"
    ):
        docs[docid].setdefault("links", set()).add(node)
    for docid, kind, text in DocumentEntity.objects.filter(
        document__collection=collection
    ).values_list("document__docid", "kind", "text"):
        docs[docid].setdefault("entities", []).append((kind, text))
    for row in docs.values():
        row.get("entities", []).sort()
        row.get("attachments", []).sort(key=lambda a: a["position"])
    return docs


def _import(slug: str):
    collection = Collection.objects.create(name=slug, slug=slug)
    report = services.import_run(collection=collection, fmt="emails", path=FIXTURES)
    return collection, report


@pytest.mark.needs_postgres("COPY is PostgreSQL's; elsewhere rows_insert is bulk_create")
def test_copy_stores_what_bulk_create_stores(monkeypatch):
    copied, copied_report = _import("by-copy")
    monkeypatch.setattr(bulk, "USE_COPY", False)
    created, created_report = _import("by-bulk-create")
    assert copied_report.created == created_report.created > 40
    assert copied_report.as_dict() == created_report.as_dict()
    by_copy, by_bulk = _stored(copied), _stored(created)
    assert by_copy == by_bulk
    assert sum(len(d.get("attachments", [])) for d in by_copy.values()) > 5
    assert any(d.get("entities") for d in by_copy.values())
    assert any(d["thread_key"] for d in by_copy.values())


@pytest.mark.needs_postgres("COPY is PostgreSQL's")
def test_copy_sets_the_ids_later_rows_point_at():
    collection = Collection.objects.create(name="c", slug="c")
    docs = bulk.rows_insert(
        Document,
        [Document(collection=collection, docid=f"d{i}", content_hash="h") for i in range(3)],
    )
    assert [d.pk for d in docs] == list(
        Document.objects.filter(collection=collection).order_by("pk").values_list("pk", flat=True)
    )
    bulk.rows_insert(Attachment, [Attachment(document=docs[1], position=0, size=1)])
    assert Attachment.objects.get().document.docid == "d1"
    later = Document.objects.create(collection=collection, docid="d3", content_hash="h")
    assert later.pk > docs[-1].pk  # the sequence moved past the ids COPY used


@pytest.mark.needs_postgres("PostgreSQL's planner statistics")
def test_a_large_import_refreshes_the_planners_statistics(monkeypatch):

    def sampled_rows() -> float:
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'annotate_document'")
            return cursor.fetchone()[0]

    before = sampled_rows()
    monkeypatch.setattr(bulk, "ANALYZE_AFTER", 40)  # the fixtures stand for a large import
    _collection, report = _import("large")
    assert report.created > 40
    assert sampled_rows() >= report.created > before
