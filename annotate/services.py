"""Writes: users and roles, uploads and imports. Jobs are ``annotate.jobs``; projects, rounds
and tasks ``annotate.projects``; leases, judgments and adjudication ``annotate.judgments``."""

import contextlib
import logging
import shutil
import uuid
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import Group, Permission, User
from django.db.models import Max
from django.utils import timezone

from annotate import hooks, roles
from annotate.entities import collection_entities_detect
from annotate.hooks import audit_record
from annotate.import_emails import collection_import_emails
from annotate.import_labels import qrels_import, sensitivity_import
from annotate.import_personas import personas_import
from annotate.import_report import ImportReport
from annotate.import_smart import collection_import_smart
from annotate.import_topics import topics_import
from annotate.jobs import JobProgress, job_finish, job_queue, job_running, job_start
from annotate.models import (
    Collection,
    Document,
    Job,
    Persona,
)

logger = logging.getLogger(__name__)

IMPORT_FORMATS = {
    "emails": "Email: RFC-822, mbox, Outlook .msg or PST/OST, EAXS XML, JSONL, or a zip",
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
    roles.forget_roles(user.pk)
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
    return job_queue(
        kind=Job.Kind.IMPORT,
        task="annotate.tasks.import_run",
        collection=collection,
        user=user,
        params={
            "format": fmt,
            "path": str(path),
            "label": label,
            "persona_id": persona.pk if persona else None,
        },
        message=f"Waiting for a worker to import {label}",
    )


def count_files(path: Path) -> int:
    """Return how many files a folder holds (0 for a single file): the total for progress."""
    if path.is_dir():
        return sum(1 for p in path.rglob("*") if p.is_file())
    return 0


def _entities_after(collection: Collection, before: int, workers: int) -> None:
    """Find the entities of the collection's documents above id ``before``, if any."""
    if Document.objects.filter(collection=collection, id__gt=before).exists():
        collection_entities_detect(collection_id=collection.pk, after_id=before, workers=workers)


def import_run(
    *,
    collection: Collection,
    fmt: str,
    path: Path,
    label: str | None = None,
    persona: Persona | None = None,
    progress=None,
    workers: int = 1,
) -> ImportReport:
    """Dispatch one import by format name (the formats of ``IMPORT_FORMATS``); ``workers``:
    processes parsing a folder of mail files in parallel."""
    path = Path(path)
    if fmt in ("emails", "smart"):
        # ids only grow: the documents this import stores are those above the largest now
        before = Document.objects.aggregate(last=Max("id"))["last"] or 0
        try:
            if fmt == "emails":
                report = collection_import_emails(
                    collection=collection,
                    path=path,
                    label=label,
                    progress=progress,
                    workers=workers,
                )
            else:
                report = collection_import_smart(
                    collection=collection, path=path, label=label, progress=progress
                )
        except Exception:
            # Failed part-way: the batches it stored still get their entities (the next
            # import reads only ids above its own start), and the import's own error is
            # what is raised, whatever the detection does.
            with contextlib.suppress(Exception):
                _entities_after(collection, before, workers)
            raise
        # The new documents' sensitive entities (issue 20), in the importing process: the
        # worker for an upload, the command for the command line.
        _entities_after(collection, before, workers)
        return report
    if fmt.startswith("topics-"):
        kind = fmt.removeprefix("topics-")
        return topics_import(
            collection=collection,
            path=path,
            label=label,
            fmt="trec" if kind == "trec" else "smart",
            number_by="order" if kind == "smart-order" else "id",
        )
    if fmt.startswith("qrels-"):
        return qrels_import(
            collection=collection, path=path, fmt=fmt.removeprefix("qrels-"), label=label
        )
    if fmt == "sensitivity":
        return sensitivity_import(collection=collection, persona=persona, path=path, label=label)
    if fmt == "personas":
        return personas_import(path=path, label=label)
    raise ValueError(f"unknown import format {fmt!r}")


def _import_execute(job: Job, progress) -> ImportReport:
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
    audit_record(
        user=job.created_by,
        action="import",
        collection=job.collection,
        job=job.pk,
        format=params["format"],
        label=params.get("label") or "",
        ok=report.ok,
        summary=report.summary()[:500],
    )
    return report


def job_import_run(*, job_id: int) -> None:
    """Run a queued import job, recording progress and the full report on the job."""
    job = job_start(job_id=job_id)
    if job is None:
        return
    path = Path(job.params["path"])
    with job_running(job):
        report = _import_execute(job, JobProgress(job, total=count_files(path)))
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
        hooks.documents_imported(collection=job.collection, user=job.created_by)


def import_recorded(
    *,
    collection: Collection | None,
    fmt: str,
    path: Path,
    label: str | None = None,
    persona: Persona | None = None,
    progress=None,
) -> tuple[Job, ImportReport]:
    """Run an import now (command line, demo) and keep its report as a job, like uploads."""
    now = timezone.now()
    job = Job.objects.create(
        kind=Job.Kind.IMPORT,
        status=Job.Status.RUNNING,
        started_at=now,
        heartbeat_at=now,
        collection=collection,
        params={
            "format": fmt,
            "path": str(path),
            "label": label or Path(path).name,
            "persona_id": persona.pk if persona else None,
            "source": "command line",
        },
    )
    with job_running(job):
        return job, _import_execute(job, progress)
