"""Writes: background jobs (imports, index builds), users and roles."""

import logging
import shutil
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import Group, Permission, User
from django.db import transaction
from django.utils import timezone

from annotate import importers, roles
from annotate.models import Collection, Job, Persona

logger = logging.getLogger(__name__)

IMPORT_FORMATS = {
    "emails": "Email: RFC-822 file, mbox, JSONL or zip of messages",
    "smart": "SMART documents (Cranfield, CACM)",
    "topics-trec": "Topics: TREC format",
    "topics-smart": "Topics: SMART queries (ids kept)",
    "topics-smart-order": "Topics: SMART queries numbered in file order (Cranfield)",
    "qrels-trec": "Relevance qrels: TREC (topic iter docno grade)",
    "qrels-cranfield": "Relevance qrels: Cranfield (query doc code)",
    "qrels-cacm": "Relevance qrels: CACM (query doc 0 0)",
    "sensitivity": "Sensitivity labels for a persona (topic-or-* 0 docno 0|1)",
    "personas": "Personas: JSON list",
}


def roles_ensure() -> None:
    """Create the role groups if missing; leads may manage sasc's models in the admin."""
    for name in roles.ROLES:
        group, _ = Group.objects.get_or_create(name=name)
        if name == roles.LEAD:
            group.permissions.set(
                Permission.objects.filter(
                    content_type__app_label__in=["annotate", "review", "ranking"]
                )
            )


def user_create(*, username: str, password: str, role_names: list[str], **fields) -> User:
    """Create or update a user holding exactly ``role_names``."""
    unknown = set(role_names) - set(roles.ROLES)
    if unknown:
        raise ValueError(f"unknown roles: {', '.join(sorted(unknown))}")
    roles_ensure()
    user, _ = User.objects.get_or_create(username=username, defaults=fields)
    user.set_password(password)
    user.is_staff = roles.LEAD in role_names
    user.save()
    user.groups.set(Group.objects.filter(name__in=role_names))
    return user


def _upload_dir() -> Path:
    path = Path(settings.SASC_UPLOAD_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def upload_store(*, uploaded, original_name: str) -> Path:
    """Save an uploaded file under a generated name; the user's name is never a path."""
    suffix = "".join(c for c in Path(original_name).suffix.lower() if c.isalnum() or c == ".")
    target = _upload_dir() / f"{uuid.uuid4().hex}{suffix[:10]}"
    with open(target, "wb") as out:
        for chunk in uploaded.chunks():
            out.write(chunk)
    return target


def job_import_create(
    *,
    collection: Collection,
    fmt: str,
    path: Path,
    label: str,
    user=None,
    persona: Persona | None = None,
) -> Job:
    """Record an import job and queue it once the transaction commits."""
    if fmt not in IMPORT_FORMATS:
        raise ValueError(f"unknown import format {fmt!r}")
    if fmt == "sensitivity" and persona is None:
        raise ValueError("sensitivity labels need a persona")
    job = Job.objects.create(
        kind=Job.Kind.IMPORT,
        collection=collection,
        created_by=user,
        params={
            "format": fmt,
            "path": str(path),
            "label": label,
            "persona_id": persona.pk if persona else None,
        },
        message=f"Waiting for a worker to import {label}",
    )
    from annotate.tasks import import_run

    transaction.on_commit(lambda: import_run.delay(job.pk))
    return job


def job_index_create(*, collection: Collection, user=None) -> Job:
    """Record an index build and queue it once the transaction commits."""
    job = Job.objects.create(
        kind=Job.Kind.INDEX,
        collection=collection,
        created_by=user,
        message="Waiting for a worker to build the index",
    )
    from ranking.tasks import index_build_task

    transaction.on_commit(lambda: index_build_task.delay(job.pk))
    return job


class JobProgress:
    """Write progress at most once a second, in its own short transaction."""

    def __init__(self, job: Job, total: int = 0):
        self.job = job
        self.total = total
        self.last = 0.0

    def __call__(self, done: int, total: int | None = None) -> None:
        now = time.monotonic()
        if now - self.last < 1.0:
            return
        self.last = now
        Job.objects.filter(pk=self.job.pk).update(
            progress_done=done, progress_total=total if total is not None else self.total
        )


def job_start(*, job_id: int) -> Job | None:
    """Mark a queued job running; return None if it already finished (a redelivered task)."""
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        if job.is_finished:
            return None
        job.status = Job.Status.RUNNING
        job.started_at = timezone.now()
        job.save(update_fields=["status", "started_at"])
    return job


def job_finish(*, job: Job, ok: bool, message: str, report: dict | None = None) -> None:
    job.status = Job.Status.SUCCEEDED if ok else Job.Status.FAILED
    job.message = message
    job.report = report or {}
    job.finished_at = timezone.now()
    if job.progress_total:
        job.progress_done = job.progress_total
    job.save(update_fields=["status", "message", "report", "finished_at", "progress_done"])


def _count_files(path: Path) -> int:
    if path.is_dir():
        return sum(1 for p in path.rglob("*") if p.is_file())
    return 0


def import_run(
    *,
    collection: Collection,
    fmt: str,
    path: Path,
    label: str | None = None,
    persona: Persona | None = None,
    progress=None,
) -> importers.ImportReport:
    """Dispatch one import by format name (the formats of ``IMPORT_FORMATS``)."""
    path = Path(path)
    if fmt == "emails":
        return importers.collection_import_emails(
            collection=collection, path=path, label=label, progress=progress
        )
    if fmt == "smart":
        return importers.collection_import_smart(
            collection=collection, path=path, label=label, progress=progress
        )
    if fmt.startswith("topics-"):
        kind = fmt.removeprefix("topics-")
        return importers.topics_import(
            collection=collection,
            path=path,
            label=label,
            fmt="trec" if kind == "trec" else "smart",
            number_by="order" if kind == "smart-order" else "id",
        )
    if fmt.startswith("qrels-"):
        return importers.qrels_import(
            collection=collection, path=path, fmt=fmt.removeprefix("qrels-"), label=label
        )
    if fmt == "sensitivity":
        return importers.sensitivity_import(
            collection=collection, persona=persona, path=path, label=label
        )
    if fmt == "personas":
        return importers.personas_import(path=path, label=label)
    raise ValueError(f"unknown import format {fmt!r}")


def _import_execute(job: Job, progress) -> importers.ImportReport:
    """Run the import a job describes and record its outcome on the job."""
    params = job.params
    persona = Persona.objects.filter(pk=params.get("persona_id")).first()
    try:
        report = import_run(
            collection=job.collection,
            fmt=params["format"],
            path=Path(params["path"]),
            label=params.get("label"),
            persona=persona,
            progress=progress,
        )
    except Exception as exc:
        logger.exception("import job %s failed", job.pk)
        job_finish(job=job, ok=False, message=f"Import failed: {type(exc).__name__}: {exc}")
        raise
    job_finish(job=job, ok=report.ok, message=report.summary(), report=report.as_dict())
    return report


def job_import_run(*, job_id: int) -> None:
    """Run a queued import job, recording progress and the full report on the job."""
    job = job_start(job_id=job_id)
    if job is None:
        return
    path = Path(job.params["path"])
    report = _import_execute(job, JobProgress(job, total=_count_files(path)))
    # Uploaded files are kept only until they have been imported.
    if path.is_relative_to(Path(settings.SASC_UPLOAD_DIR)):
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    if (
        report.created
        and job.collection is not None
        and job.params["format"]
        in (
            "emails",
            "smart",
        )
    ):
        job_index_create(collection=job.collection, user=job.created_by)


def import_recorded(
    *,
    collection: Collection | None,
    fmt: str,
    path: Path,
    label: str | None = None,
    persona: Persona | None = None,
    progress=None,
) -> tuple[Job, importers.ImportReport]:
    """Run an import now (command line, demo) and keep its report as a job, like uploads."""
    job = Job.objects.create(
        kind=Job.Kind.IMPORT,
        status=Job.Status.RUNNING,
        started_at=timezone.now(),
        collection=collection,
        params={
            "format": fmt,
            "path": str(path),
            "label": label or Path(path).name,
            "persona_id": persona.pk if persona else None,
            "source": "command line",
        },
    )
    return job, _import_execute(job, progress)


def _index_execute(job: Job, progress, *, force: bool = False) -> dict:
    from ranking.services import index_build

    try:
        result = index_build(collection_id=job.collection_id, progress=progress, force=force)
    except Exception as exc:
        logger.exception("index job %s failed", job.pk)
        job_finish(job=job, ok=False, message=f"Index build failed: {type(exc).__name__}: {exc}")
        raise
    if result.get("skipped"):
        message = f"Index already current (version {result['version']})"
    else:
        message = (
            f"Indexed {result['documents']} documents (version {result['version']}): Lucene "
            f"{result['lucene_seconds']} s, TF-IDF {result['features_seconds']} s, "
            f"{result['terms']} terms"
        )
    job_finish(job=job, ok=True, message=message, report=result)
    return result


def job_index_run(*, job_id: int) -> None:
    """Run a queued index build job."""
    job = job_start(job_id=job_id)
    if job is None:
        return
    _index_execute(job, JobProgress(job))


def index_recorded(*, collection: Collection, progress=None, force: bool = False) -> dict:
    """Build a collection's index now (command line, demo), recorded as a job."""
    job = Job.objects.create(
        kind=Job.Kind.INDEX,
        status=Job.Status.RUNNING,
        started_at=timezone.now(),
        collection=collection,
        params={"source": "command line"},
    )
    return _index_execute(job, progress, force=force)
