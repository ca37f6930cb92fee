"""The classic collections in ../shared/data import completely (skipped when absent)."""

import pytest

from annotate import services
from annotate.models import Collection, ReferenceRelevance
from tests.conftest import SHARED_DATA, needs_shared_data


def _import(slug, docs, topics_fmt, topics, qrels_fmt, qrels):
    c = Collection.objects.create(name=slug, slug=slug, kind="smart")
    reports = [
        services.import_run(collection=c, fmt="smart", path=docs),
        services.import_run(collection=c, fmt=topics_fmt, path=topics),
        services.import_run(collection=c, fmt=qrels_fmt, path=qrels),
    ]
    assert all(r.ok for r in reports), [str(i) for r in reports for i in r.errors]
    return c


@needs_shared_data("cranfield")
@pytest.mark.django_db
def test_cranfield_imports_1400_documents_225_topics_and_all_qrels():
    base = SHARED_DATA / "cranfield"
    c = _import(
        "cran",
        base / "cran.all.1400",
        "topics-smart-order",
        base / "cran.qry",
        "qrels-cranfield",
        base / "cranqrel",
    )
    assert c.documents.count() == 1400
    assert c.topics.count() == 225
    assert ReferenceRelevance.objects.filter(topic__collection=c).count() == 1837
    assert c.topics.get(number="1").title.startswith("what similarity laws must be obeyed")


@needs_shared_data("cacm")
@pytest.mark.django_db
def test_cacm_imports_3204_documents_64_topics_and_categories():
    base = SHARED_DATA / "cacm"
    c = _import(
        "cacm",
        base / "cacm.all",
        "topics-smart",
        base / "query.text",
        "qrels-cacm",
        base / "qrels.text",
    )
    assert c.documents.count() == 3204
    assert c.topics.count() == 64
    assert ReferenceRelevance.objects.filter(topic__collection=c).count() == 796
    assert c.documents.filter(metadata__has_key="categories").count() == 1425
    doc = c.documents.get(docid="1170")
    assert doc.date.year == 1965 and doc.date.month == 11
