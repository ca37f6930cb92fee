"""Pooling with twelve real Lucene systems: provenance, run files, pooled tasks, the job."""

from pathlib import Path

import pytest
from django.urls import reverse

from annotate import projects, roles, services
from annotate.models import Collection, Job, Persona, Task
from ranking import pooling
from ranking.models import PoolEntry
from ranking.services import index_build

pytestmark = pytest.mark.lucene
SMART = Path(__file__).parents[1] / "fixtures" / "smart"


@pytest.fixture
def project(db, make_user):
    c = Collection.objects.create(name="Mini", slug="mini", kind="smart")
    services.import_run(collection=c, fmt="smart", path=SMART / "mini.all")
    services.import_run(collection=c, fmt="topics-smart-order", path=SMART / "mini.qry")
    index_build(collection_id=c.pk)
    c.refresh_from_db()
    return projects.project_create(
        name="Pooled",
        collection=c,
        personas=[Persona.objects.create(name="P"), Persona.objects.create(name="Q")],
        topics=list(c.topics.all()),
        annotators=[make_user("pooler", roles.ANNOTATOR)],
    )


def read_run(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        topic, q0, docid, rank, _score, _tag = line.split()
        assert q0 == "Q0" and int(rank) == len(out.get(topic, [])) + 1
        out.setdefault(topic, []).append(docid)
    return out


def test_twelve_systems_pool_with_provenance_and_run_files(project):
    assert len(pooling.SYSTEMS) == 12 and len({s.name for s in pooling.SYSTEMS}) == 12
    round_ = project.rounds.get()
    report = pooling.project_pool(project=project, round_=round_, depth=2)
    files = sorted(Path(f).name for f in report["run_files"])
    assert files == sorted(f"{s.name}.run" for s in pooling.SYSTEMS)
    runs = {Path(f).stem: read_run(Path(f)) for f in report["run_files"]}
    for topic in project.topics.all():
        # The pool is the union of every system's top 2, with each system's ranks recorded.
        union = {d for run in runs.values() for d in run.get(topic.number, [])[:2]}
        assert report["pool_sizes"][topic.number] == len(union)
        entries = PoolEntry.objects.filter(project=project, topic=topic)
        assert {e.document.docid for e in entries} == union
        for e in entries:
            assert runs[e.system][topic.number][e.rank] == e.document.docid
        # Every persona gets every pooled document, once.
        for persona in project.personas.all():
            tasks = Task.objects.filter(round=round_, topic=topic, persona=persona)
            assert {t.document.docid for t in tasks} == union
            assert set(tasks.values_list("source", flat=True)) <= {"pool"}
    assert report["tasks_added"] == 2 * sum(report["pool_sizes"].values())
    again = pooling.project_pool(project=project, round_=round_, depth=2)
    assert again["tasks_added"] == 0
    assert PoolEntry.objects.filter(project=project).count() == sum(
        min(2, len(run.get(t.number, []))) for run in runs.values() for t in project.topics.all()
    )


def test_lead_starts_pooling_as_a_job(project, login, users, django_capture_on_commit_callbacks):
    from config.celery import app

    app.conf.task_always_eager = True
    try:
        client = login(users["lead"])
        url = reverse("project-pool", args=[project.slug])
        with django_capture_on_commit_callbacks(execute=True):
            r = client.post(url, {"round": project.rounds.get().pk, "depth": "3"})
    finally:
        app.conf.task_always_eager = False
    job = Job.objects.get(kind=Job.Kind.POOL)
    assert r["Location"] == reverse("job-detail", args=[job.pk])
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert "Pooled 12 systems at depth 3" in job.message
    assert job.progress_total == 12 * project.topics.count() == job.progress_done
    assert Task.objects.filter(project=project, source="pool").count() == job.report["tasks_added"]
    bad = client.post(url, {"round": project.rounds.get().pk, "depth": "0"}, follow=True)
    assert "depth between 1 and 1000" in bad.content.decode()
    assert login(users["annotator"]).post(url, {"depth": "3"}).status_code == 404
