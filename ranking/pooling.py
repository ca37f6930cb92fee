"""Pooling (docs/domain.md §3): run twelve retrieval systems over a collection's Lucene
index and judge the union of their top k per topic, keeping which system found each
document at which rank.

Systems: query from the title, title + description or title + description + narrative,
x RM3 expansion off / on, x BM25 / query likelihood with Dirichlet smoothing (mu 1000).
"""

import itertools
import logging
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction

from annotate.jobs import JobProgress, job_finish, job_queue, job_running, job_start
from annotate.models import AnnotationProject, Document, Job, Round, Task
from annotate.projects import project_tasks_add_for_personas
from core import lucene, runs
from ranking.models import PoolEntry
from ranking.services import IndexNotReady, index_paths

logger = logging.getLogger(__name__)

FIELDS = {
    "title": lambda t: t.title,
    "title+desc": lambda t: f"{t.title} {t.description}",
    "title+desc+narr": lambda t: f"{t.title} {t.description} {t.narrative}",
}


@dataclass(frozen=True)
class System:
    model: str  # bm25 or qld
    rm3: bool
    field: str

    @property
    def name(self) -> str:
        return f"{self.model}{'+rm3' if self.rm3 else ''}.{self.field}"


SYSTEMS = tuple(
    System(model, rm3, field)
    for field, rm3, model in itertools.product(FIELDS, (False, True), ("bm25", "qld"))
)


def run_dir(project: AnnotationProject) -> Path:
    """Return the folder where a project's pooling runs are written."""
    return Path(settings.SASC_INDEX_DIR) / "runs" / project.slug


def system_runs(*, index: Path, topics, k: int, systems=SYSTEMS, progress=None) -> dict:
    """Run every system for every topic: ``{system name: {topic number: [(docid, score)]}}``."""
    total = len(topics) * len(systems)
    all_runs: dict[str, dict] = {s.name: {} for s in systems}
    done = 0
    for topic in topics:
        for system in systems:
            hits = lucene.search(
                index, FIELDS[system.field](topic), k=k, model=system.model, rm3=system.rm3
            )
            all_runs[system.name][topic.number] = [(h.docid, h.score) for h in hits]
            done += 1
            if progress:
                progress(done, total)
    return all_runs


def project_pool(
    *,
    project: AnnotationProject,
    round_: Round,
    depth: int = 25,
    run_depth: int = 1000,
    systems=SYSTEMS,
    progress=None,
) -> dict:
    """Run every system for every project topic, record the pool's provenance, write each
    run as a TREC run file (``run_depth`` deep, for evaluating the systems later), and add
    the union of each topic's top ``depth`` as tasks (every persona) to ``round_``.

    Re-running replaces the project's provenance and adds only tasks it lacks.
    """
    collection = project.collection
    if collection.indexed_version is None:
        raise IndexNotReady(collection)
    index = index_paths(collection=collection).lucene
    topics = list(project.topics.order_by("number"))
    personas = list(project.personas.all())
    out_dir = run_dir(project)
    out_dir.mkdir(parents=True, exist_ok=True)
    all_runs = system_runs(
        index=index, topics=topics, k=max(depth, run_depth), systems=systems, progress=progress
    )
    for name, run in all_runs.items():
        tmp = out_dir / f".{name}.run.tmp"
        with tmp.open("w") as fh:
            runs.write_trec_run(run, fh, tag=name)
        tmp.replace(out_dir / f"{name}.run")
    docids = {d for run in all_runs.values() for hits in run.values() for d, _s in hits[:depth]}
    doc_ids = dict(
        Document.objects.filter(collection=collection, docid__in=docids).values_list("docid", "pk")
    )
    entries, pools = [], {}
    for topic in topics:
        pool: dict[str, int] = {}
        for name, run in all_runs.items():
            for rank, (docid, score) in enumerate(run.get(topic.number, [])[:depth]):
                entries.append(
                    PoolEntry(
                        project=project,
                        topic=topic,
                        document_id=doc_ids[docid],
                        system=name,
                        rank=rank,
                        score=score,
                    )
                )
                pool[docid] = min(pool.get(docid, rank), rank)
        # Judged in order of the best rank any system gave the document.
        pools[topic.pk] = sorted(pool, key=lambda d: (pool[d], d))
    added = 0
    with transaction.atomic():
        PoolEntry.objects.filter(project=project).delete()
        PoolEntry.objects.bulk_create(entries, batch_size=2000)
        for topic in topics:
            added += project_tasks_add_for_personas(
                project=project,
                round_=round_,
                topic=topic,
                personas=personas,
                documents=[Document(pk=doc_ids[d], docid=d) for d in pools[topic.pk]],
                source=Task.Source.POOL,
            )
    return {
        "systems": [s.name for s in systems],
        "depth": depth,
        "pool_sizes": {t.number: len(pools[t.pk]) for t in topics},
        "tasks_added": added,
        "run_files": sorted(str(p) for p in out_dir.glob("*.run")),
    }


def job_pool_create(*, project: AnnotationProject, round_: Round, depth: int, user=None) -> Job:
    """Record a pooling job for a project's round and queue it once the transaction commits."""
    if not 1 <= depth <= 1000:
        raise ValueError("the pool depth must be between 1 and 1000")
    if round_.project_id != project.pk:
        raise ValueError("the round is not the project's")
    return job_queue(
        kind=Job.Kind.POOL,
        task="ranking.tasks.pool_task",
        collection=project.collection,
        user=user,
        params={"project": project.slug, "round": round_.pk, "depth": depth},
        message=f"Waiting for a worker to pool {project.name} (depth {depth})",
    )


def job_pool_run(*, job_id: int) -> None:
    """Run a queued pooling job: twelve systems, provenance, run files, pooled tasks."""
    job = job_start(job_id=job_id)
    if job is None:
        return
    with job_running(job):
        project = AnnotationProject.objects.get(slug=job.params["project"])
        round_ = Round.objects.get(pk=job.params["round"], project=project)
        try:
            result = project_pool(
                project=project, round_=round_, depth=job.params["depth"], progress=JobProgress(job)
            )
        except Exception as exc:
            logger.exception("pooling job %s failed", job.pk)
            job_finish(job=job, ok=False, message=f"Pooling failed: {type(exc).__name__}: {exc}")
            raise
        sizes = result["pool_sizes"].values()
        job_finish(
            job=job,
            ok=True,
            message=(
                f"Pooled {len(result['systems'])} systems at depth {result['depth']}: "
                f"{sum(sizes)} documents over {len(sizes)} topics, "
                f"{result['tasks_added']} new tasks"
            ),
            report=result,
        )
