"""Real Lucene through pyserini (the JVM starts once for this test process)."""

import subprocess
import sys
from pathlib import Path

import pytest

from annotate import projects, services
from annotate.models import Collection, Document
from core import lucene, runs
from ranking.services import IndexNotReady, collection_search, index_build, index_paths
from tests.conftest import SHARED_DATA, needs_shared_data

pytestmark = pytest.mark.lucene
SMART = Path(__file__).parents[1] / "fixtures" / "smart"


def test_index_build_is_versioned_idempotent_and_searchable(mini):
    with pytest.raises(IndexNotReady):
        collection_search(collection=mini, query="heat", documents=Document.objects.all())
    result = index_build(collection_id=mini.pk)
    assert result["documents"] == 4 and result["version"] == 1
    mini.refresh_from_db()
    assert mini.index_is_current
    assert index_build(collection_id=mini.pk)["skipped"] is True
    paths = index_paths(collection=mini)
    assert lucene.index_size(paths.lucene) == 4
    hits = lucene.search(paths.lucene, "heat transfer", k=10)
    assert [h.docid for h in hits][:2] == ["1", "4"]
    assert hits[0].score > hits[1].score > 0
    assert lucene.search(paths.lucene, 'heat AND "(transfer', k=10)[0].docid == "1"
    assert lucene.search(paths.lucene, "   ") == []
    qld = lucene.search(paths.lucene, "flutter", model="qld", k=10)
    assert qld[0].docid == "2"


def test_search_hides_documents_the_user_may_not_see_and_highlights(mini):
    index_build(collection_id=mini.pk)
    mini.refresh_from_db()
    visible = Document.objects.exclude(docid="1")
    results = collection_search(collection=mini, query="heat", documents=visible)
    assert [r.document.docid for r in results] == ["4"]
    assert "<mark>heat</mark>" in results[0].snippet


def test_new_documents_make_a_new_version_and_the_old_one_is_removed(mini, tmp_path):
    index_build(collection_id=mini.pk)
    old = index_paths(collection=mini).root
    extra = tmp_path / "extra.all"
    extra.write_text(".I 5\n.T\nheat shields\n.W\nablation heat shields for reentry .\n")
    services.import_run(collection=mini, fmt="smart", path=extra)
    mini.refresh_from_db()
    assert not mini.index_is_current
    index_build(collection_id=mini.pk)
    mini.refresh_from_db()
    assert mini.indexed_version == 2 and not old.exists()
    assert lucene.index_size(index_paths(collection=mini).lucene) == 5


def test_web_process_does_not_import_pyserini_at_startup():
    code = (
        "import django, os, sys;"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings');"
        "django.setup();"
        "import config.urls, config.wsgi, annotate.views, annotate.api;"
        "print(sorted(m for m in ('pyserini', 'jnius', 'torch', 'sklearn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@needs_shared_data("cranfield")
def test_bm25_on_cranfield_gives_the_documented_ndcg(db):
    c = Collection.objects.create(name="Cranfield", slug="cranfield", kind="smart")
    base = SHARED_DATA / "cranfield"
    assert services.import_run(collection=c, fmt="smart", path=base / "cran.all.1400").ok
    services.import_run(collection=c, fmt="topics-smart-order", path=base / "cran.qry")
    assert services.import_run(collection=c, fmt="qrels-cranfield", path=base / "cranqrel").ok
    index_build(collection_id=c.pk)
    c.refresh_from_db()
    path = index_paths(collection=c).lucene
    run = {
        t.number: [(h.docid, h.score) for h in lucene.search(path, t.title, k=1000)]
        for t in c.topics.all()
    }
    qrels = {}
    for topic, docid, grade in c.topics.values_list(
        "number", "reference_qrels__document__docid", "reference_qrels__grade"
    ):
        if docid is not None:
            qrels.setdefault(topic, {})[docid] = grade
    ndcg = runs.evaluate(qrels, run, ["nDCG(dcg='exp-log2')@10"])["nDCG(dcg='exp-log2')@10"]
    # docs/evaluation.md states 0.3334 for BM25 (k1=0.9, b=0.4), title queries.
    assert ndcg == pytest.approx(0.3334, abs=0.002)


def test_search_pooling_adds_the_ranked_documents_as_tasks(mini, make_user):
    from annotate import roles
    from annotate.models import Persona, Task

    index_build(collection_id=mini.pk)
    mini.refresh_from_db()
    topic = mini.topics.get(number="1")  # "heat transfer in boundary layers ."
    project = projects.project_create(
        name="Pooled",
        collection=mini,
        personas=[Persona.objects.create(name="P")],
        topics=[topic],
        annotators=[make_user("pooler", roles.ANNOTATOR)],
    )
    added = projects.project_tasks_from_search(project=project, round_=project.rounds.get(), k=2)
    assert added == 2
    ranked = list(Task.objects.order_by("position").values_list("document__docid", "source"))
    assert ranked == [("1", "pool"), ("4", "pool")]
