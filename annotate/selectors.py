"""Reads: every query a view, API or task needs, with role checks in one place."""

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction
from django.db.models import Count, Exists, F, IntegerField, OuterRef, Prefetch, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.template.defaultfilters import pluralize
from django.utils import timezone

from annotate import hooks, roles
from annotate.labels import final_labels, snapshot
from annotate.models import (
    Adjudication,
    AnnotationProject,
    Assignment,
    Attachment,
    Collection,
    Document,
    Job,
    Judgment,
    Persona,
    ReferenceRelevance,
    ReferenceSensitivity,
    Round,
    Task,
    Topic,
)
from core import agreement


def document_text(subject: str, body: str, attachment_texts: list[str]) -> str:
    """Return the text indexed for a document: subject, body and attachment text."""
    return "\n\n".join(part for part in (subject, body, *attachment_texts) if part)


def collection_index_documents(*, collection: Collection, chunk: int = 1000) -> Iterator[tuple]:
    """Yield ``(docid, text)`` for every document of a collection, in a stable order.

    Read in chunks by id, each chunk one complete query: no cursor stays open while the
    caller works on what was yielded (a long job writes its progress between chunks, and on
    SQLite a write under an open read fails with "database is locked")."""
    attachment_texts: dict[int, list[str]] = {}
    attachments = (
        Attachment.objects.filter(document__collection=collection, is_text=True)
        .exclude(text="")
        .order_by("document_id", "position")
        .values_list("document_id", "text")
    )
    for doc_id, text in attachments:
        attachment_texts.setdefault(doc_id, []).append(text)
    documents = (
        Document.objects.filter(collection=collection)
        .order_by("id")
        .values_list("id", "docid", "subject", "body")
    )
    last = 0
    while True:
        rows = list(documents.filter(id__gt=last)[:chunk])
        for pk, docid, subject, body in rows:
            yield docid, document_text(subject, body, attachment_texts.get(pk, []))
        if len(rows) < chunk:
            return
        last = rows[-1][0]


def _count_of(model):
    """The number of ``model`` rows of each collection, as a subquery of the collection list."""
    rows = (
        model.objects.filter(collection=OuterRef("pk"))
        .order_by()
        .values("collection")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(rows, output_field=IntegerField()), 0)


def collections_for_user(user) -> QuerySet[Collection]:
    """Return the collections a user may browse (leads and archivists: all)."""
    if roles.has_role(user, roles.LEAD, roles.ARCHIVIST):
        # One counting subquery per table: two Counts over joins multiplied the documents
        # by the topics (a collection of 200,000 topics timed the list out, issue 21).
        return Collection.objects.annotate(
            document_count=_count_of(Document), topic_count=_count_of(Topic)
        )
    return Collection.objects.none()


def documents_for_user(user, *, collection: Collection | None = None) -> QuerySet[Document]:
    """Return the documents a user may open.

    Leads and archivists see whole collections; annotators only the documents of tasks they
    hold or held (G6); searchers only released documents (a later issue), so nothing yet.
    """
    qs = Document.objects.none()
    if roles.has_role(user, roles.LEAD, roles.ARCHIVIST):
        qs = Document.objects.all()
    elif roles.has_role(user, roles.ANNOTATOR):
        qs = Document.objects.filter(tasks__assignments__annotator=user).distinct()
    if collection is not None:
        qs = qs.filter(collection=collection)
    return qs


def document_get(*, user, pk: int, collection: Collection | None = None) -> Document | None:
    """Return one document with its attachments if the user may open it, else None."""
    return (
        documents_for_user(user, collection=collection)
        .select_related("collection")
        .prefetch_related(Prefetch("attachments", queryset=Attachment.objects.order_by("position")))
        .filter(pk=pk)
        .first()
    )


def topics_for_user(user, *, collection: Collection | None = None) -> QuerySet[Topic]:
    """Return topics visible to the user (every role that judges, reviews or leads)."""
    if not roles.has_role(user, roles.LEAD, roles.ARCHIVIST, roles.ANNOTATOR):
        return Topic.objects.none()
    qs = Topic.objects.select_related("collection")
    return qs.filter(collection=collection) if collection is not None else qs


def personas_for_user(user) -> QuerySet[Persona]:
    """Return personas visible to the user (they are shown to annotators and archivists)."""
    if not roles.has_role(user, roles.LEAD, roles.ARCHIVIST, roles.ANNOTATOR):
        return Persona.objects.none()
    return Persona.objects.all()


def collection_jobs(*, collection: Collection, limit: int = 20) -> list[Job]:
    """Return the latest import and index jobs of a collection."""
    return list(Job.objects.filter(collection=collection).order_by("-created_at")[:limit])


def collection_stats(*, collection: Collection) -> dict:
    """Return the counts shown on a collection page."""
    docs = Document.objects.filter(collection=collection)
    return {
        "documents": docs.count(),
        "attachments": Attachment.objects.filter(document__collection=collection).count(),
        "partly_decoded": docs.exclude(decode_problems=[]).count(),
        "duplicates_seen": sum(
            len(d)
            for d in docs.exclude(duplicate_docids=[]).values_list("duplicate_docids", flat=True)
        ),
        "topics": Topic.objects.filter(collection=collection).count(),
        "qrels": collection.topics.aggregate(n=Count("reference_qrels"))["n"],
    }


# --- Annotation -----------------------------------------------------------------------------


def projects_for_user(user) -> QuerySet[AnnotationProject]:
    """Leads see every project; annotators the projects they are members of."""
    if roles.has_role(user, roles.LEAD):
        return AnnotationProject.objects.select_related("collection")
    if roles.has_role(user, roles.ANNOTATOR):
        return AnnotationProject.objects.filter(annotators=user)
    return AnnotationProject.objects.none()


def assignment_for_user(*, user, task_id: int) -> Assignment | None:
    """Return the user's own assignment on a task with everything the judging page shows."""
    return (
        # Few joins on purpose: PostgreSQL spent more time planning an eight-table join than
        # running it (7 ms against 0.7 ms, measured with EXPLAIN ANALYZE).
        Assignment.objects.select_related("task__document", "task__topic", "task__persona")
        .prefetch_related("task__document__attachments")
        .filter(annotator=user, task_id=task_id)
        .first()
    )


@contextmanager
def reads_together():
    """Run the reads inside as one transaction where that costs nothing: on PostgreSQL one
    commit instead of one per statement (the judging page's reads after its save). On
    SQLite every transaction here takes the write lock (BEGIN IMMEDIATE), so each read
    stays its own."""
    if connection.vendor == "postgresql" and not connection.in_atomic_block:
        with transaction.atomic():
            yield
    else:
        yield


# From the counters (models.BatchCount, models.JudgedCount): a batch has one row and at most
# one judged row per annotator, so what this reads does not grow with the tasks (issue 36).
_PROGRESS_SQL = """
    SELECT 0,
           (SELECT SUM(j.judged) FROM annotate_judgedcount j
              JOIN annotate_round r ON r.id = j.round_id
             WHERE r.project_id = %(project)s AND r.is_open),
           SUM(b.required), SUM(b.tasks)
      FROM annotate_batchcount b JOIN annotate_round r ON r.id = b.round_id
     WHERE r.project_id = %(project)s AND r.is_open
    UNION ALL
    SELECT 1, SUM(j.judged), 0, 0
      FROM annotate_judgedcount j JOIN annotate_round r ON r.id = j.round_id
     WHERE j.annotator_id = %(user)s AND r.project_id = %(project)s
    UNION ALL
    SELECT 2 + s.id,
           (SELECT SUM(j.judged) FROM annotate_judgedcount j
             WHERE j.round_id = s.round_id AND j.topic_id = s.topic_id
               AND j.persona_id = s.persona_id),
           -- A batch without its counter row (tasks written behind project_tasks_add:
           -- repaired by manage.py progress_recount) is counted from its rows instead.
           COALESCE(b.required, (SELECT SUM(t.required) FROM annotate_task t
                                  WHERE t.round_id = s.round_id AND t.topic_id = s.topic_id
                                    AND t.persona_id = s.persona_id)),
           COALESCE(b.tasks, (SELECT COUNT(*) FROM annotate_task t
                               WHERE t.round_id = s.round_id AND t.topic_id = s.topic_id
                                 AND t.persona_id = s.persona_id))
      FROM annotate_task s LEFT JOIN annotate_batchcount b
        ON b.round_id = s.round_id AND b.topic_id = s.topic_id AND b.persona_id = s.persona_id
     WHERE s.id IN ({tasks}) AND s.project_id = %(project)s
"""


def judging_progress_many(*, user, project: AnnotationProject, task_ids) -> list[dict]:
    """Return progress for several tasks' batches at once, in one SQL statement.

    For each task id (or None): done/needed judgments of the task's (round, topic, persona)
    batch, of the project's open rounds, and the user's own count (G3: the counters are
    written in the transaction that stores the judgment or adds the tasks, so they count
    committed rows). The judging page asks this on every save, hence plain SQL: the ORM
    spent more time composing the three queries than the database running them.
    """
    ids = [int(i) for i in task_ids if i is not None]
    params = {"project": project.pk, "user": user.pk}
    params.update({f"t{i}": task_id for i, task_id in enumerate(ids)})
    sql = _PROGRESS_SQL.format(tasks=", ".join(f"%(t{i})s" for i in range(len(ids))) or "NULL")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = {
            key: (done or 0, needed or 0, tasks or 0)
            for key, done, needed, tasks in cursor.fetchall()
        }
    project_done, project_needed, project_tasks = rows.get(0, (0, 0, 0))
    out = []
    for task_id in task_ids:
        p = {
            "project_done": project_done,
            "project_needed": project_needed,
            # Judgments needed = tasks + extra judgments of tasks judged by several people.
            "project_tasks": project_tasks,
            "project_extra": project_needed - project_tasks,
            "mine": rows.get(1, (0, 0, 0))[0],
        }
        p["tasks_line"] = _tasks_line(project_tasks, p["project_extra"], project_needed)
        if task_id is not None:
            p["batch_done"], p["batch_needed"], _ = rows.get(2 + int(task_id), (0, 0, 0))
        for prefix in ("project", "batch"):
            n = p.get(f"{prefix}_needed")
            if n is not None:
                p[f"{prefix}_percent"] = round(100 * p[f"{prefix}_done"] / n) if n else 100
        out.append(p)
    return out


def _tasks_line(tasks: int, extra: int, needed: int) -> str:
    """The line under the judging page's bars, rendered by the template and, after each save,
    set from X-Progress by static/sasc/judge.js (tasks come while the page is open)."""
    line = f"{tasks} task{pluralize(tasks)}"
    if extra:
        line += (
            f" + {extra} extra judgment{pluralize(extra)} (tasks judged by more than one annotator)"
        )
    return f"{line} = {needed} needed"


def judging_progress(*, user, project: AnnotationProject, task_id: int | None) -> dict:
    """Return done/needed for the task's (topic, persona) batch, the project and the user."""
    return judging_progress_many(user=user, project=project, task_ids=[task_id])[0]


def judgment_in_other_round(*, user, task) -> Judgment | None:
    """Return the user's judgment of the same (topic, persona, message) in another round of
    the task's project (a production round re-serving a training round's message), or None."""
    # Two steps, each on one index whatever the planner's statistics: the message's few
    # tasks (the index on task.document), then the judgment's (task, annotator) index. One
    # joined query let PostgreSQL walk every task of the project's topic on every save
    # (issue 36).
    same_message = [
        pk
        for pk, project_id, topic_id, persona_id in Task.objects.filter(
            document_id=task.document_id
        ).values_list("pk", "project_id", "topic_id", "persona_id")
        if (project_id, topic_id, persona_id) == (task.project_id, task.topic_id, task.persona_id)
        and pk != task.pk
    ]
    if not same_message:
        return None
    return (
        Judgment.objects.filter(annotator=user, task_id__in=same_message)
        .select_related("round")
        .order_by("-round__number")
        .first()
    )


def judging_idle(*, user, project: AnnotationProject) -> dict:
    """Return why no task waits for the user: open rounds, tasks the user skipped that still
    need judgments, tasks other annotators hold, the project's learning plans (and whether
    one may queue a task any moment), own count."""
    open_rounds = project.rounds.filter(is_open=True).values("id")
    unfinished = Task.objects.filter(
        project=project, round_id__in=open_rounds, judged__lt=F("required")
    )
    mine = Assignment.objects.filter(annotator=user, task__project=project)
    skipped = unfinished.filter(
        pk__in=mine.filter(status=Assignment.Status.SKIPPED).values("task_id")
    ).count()
    held = (
        unfinished.filter(claimed__gte=F("required"))
        .exclude(pk__in=mine.exclude(status=Assignment.Status.EXPIRED).values("task_id"))
        .count()
    )
    plans = hooks.learning_plans(project=project)
    return {
        "open_rounds": project.rounds.filter(is_open=True).count(),
        "skipped": skipped,
        "held_by_others": held,
        "plans": plans,
        # A plan seeding or learning may queue a task any moment (the page asks again).
        "model_choosing": any(p["status"] in ("seeding", "learning") for p in plans),
        "mine": Judgment.objects.filter(annotator=user, task__project=project).count(),
    }


def judgments_for_user(
    *, user, project: AnnotationProject, topic_id: int | None = None, since=None
) -> QuerySet[Judgment]:
    """Return the user's own judgments in a project, newest first."""
    qs = Judgment.objects.filter(annotator=user, task__project=project).select_related(
        "task__document", "task__topic", "task__persona", "task__round"
    )
    if topic_id is not None:
        qs = qs.filter(task__topic_id=topic_id)
    if since is not None:
        qs = qs.filter(submitted_at__gte=since)
    return qs.order_by("-submitted_at", "-id")


def skipped_for_user(*, user, project: AnnotationProject) -> QuerySet[Assignment]:
    """Return the tasks this annotator skipped in the project, to resume from the dashboard."""
    return Assignment.objects.filter(
        annotator=user, task__project=project, status=Assignment.Status.SKIPPED
    ).select_related("task__document", "task__topic")


def project_dashboard(*, project: AnnotationProject) -> dict:
    """Return the lead's per-topic view of a project, in columns that add up.

    A task is one (round, topic, persona, document) that ``required`` annotators judge (two
    for a double-judged task, every annotator in a training round). Each task is in exactly
    one state, so per topic ``done + in_progress + open == tasks``:

    - *done*: it has all the judgments it needs;
    - *in progress*: it has some of them, or an annotator holds a live lease on it;
    - *open*: neither (a skipped task whose lease was given back is open again).

    Judgments are counted separately (``judged`` of ``needed``): a double-judged task counts
    once among the tasks and twice among the judgments. ``relevant`` and ``sensitive`` count
    documents by their final label (``annotate.labels``), so two judgments of one document
    count once. Tasks from active learning or seed walks are tasks like the others; ``active``
    says how many of the topic's tasks came from there.
    """
    from statistics import median

    now = timezone.now()
    leased = Assignment.objects.filter(
        task=OuterRef("pk"), status=Assignment.Status.LEASED, expires_at__gt=now
    )
    rows = (
        Task.objects.filter(project=project)
        .annotate(live=Exists(leased))
        .values_list("topic_id", "judged", "required", "live", "source")
    )
    counts: dict[int, dict] = {}
    for topic_id, judged, required, live, source in rows:
        c = counts.setdefault(
            topic_id,
            {
                "tasks": 0,
                "done": 0,
                "in_progress": 0,
                "open": 0,
                "judged": 0,
                "needed": 0,
                "active": 0,
            },
        )
        c["tasks"] += 1
        c["judged"] += min(judged, required)
        c["needed"] += required
        c["active"] += source in (Task.Source.ACTIVE, Task.Source.SEED)
        if judged >= required:
            c["done"] += 1
        elif judged or live:
            c["in_progress"] += 1
        else:
            c["open"] += 1
    seconds: dict[int, list[float]] = {}
    for topic_id, active_seconds in Judgment.objects.filter(task__project=project).values_list(
        "task__topic_id", "active_seconds"
    ):
        seconds.setdefault(topic_id, []).append(active_seconds)
    per_annotator: dict[int, list[dict]] = {}
    for row in (
        Judgment.objects.filter(task__project=project)
        .values("task__topic_id", "annotator__username")
        .annotate(n=Count("id"))
        .order_by("task__topic_id", "annotator__username")
    ):
        per_annotator.setdefault(row["task__topic_id"], []).append(row)
    skipped: dict[int, list[Assignment]] = {}
    for a in (
        Assignment.objects.filter(task__project=project, status=Assignment.Status.SKIPPED)
        .select_related("annotator", "task__document")
        .order_by("id")[:500]
    ):
        skipped.setdefault(a.task.topic_id, []).append(a)
    # No snapshot transaction (as for the charts): the counts may straddle a commit, and on
    # SQLite every transaction takes the write lock.
    labels = final_labels(project)
    relevant: dict[str, int] = {}
    for (number, _docid), (grade, _rule) in labels.relevance.items():
        relevant[number] = relevant.get(number, 0) + (grade >= 1)
    sensitive_docs = {(t, d) for (_p, t, d), (v, _r) in labels.sensitivity.items() if v == 1}
    sensitive: dict[str, int] = {}
    for number, _docid in sensitive_docs:
        sensitive[number] = sensitive.get(number, 0) + 1
    topics = []
    total = dict.fromkeys(("tasks", "done", "in_progress", "open", "judged", "needed", "active"), 0)
    total.update(relevant=0, sensitive=0)
    for topic in project.topics.order_by("number"):
        c = counts.get(topic.pk)
        if c is None:
            continue
        times = seconds.get(topic.pk, [])
        row = {
            "topic": topic,
            **c,
            "median_seconds": round(median(times), 1) if times else None,
            "relevant": relevant.get(topic.number, 0),
            "sensitive": sensitive.get(topic.number, 0),
            "per_annotator": per_annotator.get(topic.pk, []),
            "skipped": skipped.get(topic.pk, [])[:50],
        }
        for key in total:
            total[key] += row[key]
        topics.append(row)
    return {"topics": topics, "total": total, "pool_round": pool_round_default(project=project)}


def pool_round_default(*, project: AnnotationProject):
    """Return the round pooling adds to unless the lead says otherwise: the latest open
    production round, else the latest open round (None if every round is closed)."""
    open_rounds = project.rounds.filter(is_open=True).order_by("-number")
    return open_rounds.filter(kind=Round.Kind.PRODUCTION).first() or open_rounds.first()


# --- Agreement --------------------------------------------------------------------------------


def agreement_for(
    *,
    project: AnnotationProject,
    round_id: int | None = None,
    topic_id: int | None = None,
    persona_id: int | None = None,
    samples: int = agreement.BOOTSTRAP_SAMPLES,
) -> dict:
    """Agreement of a project's annotators, optionally for one round, topic and/or persona.

    An item is a task ((topic, persona, document) in a round); only tasks judged by two or
    more annotators can agree or disagree. Returns the report of ``agreement.agreement_report``
    plus ``disagreements``: each overlapping task where relevance or persona sensitivity
    differ, with every annotator's answers and comments and any adjudication.
    """
    judgments = Judgment.objects.filter(task__project=project)
    if round_id is not None:
        judgments = judgments.filter(round_id=round_id)
    if topic_id is not None:
        judgments = judgments.filter(task__topic_id=topic_id)
    if persona_id is not None:
        judgments = judgments.filter(task__persona_id=persona_id)
    rows = list(
        judgments.select_related(
            "annotator", "task__topic", "task__persona", "task__document"
        ).order_by("task_id", "annotator__username")
    )
    by_task: dict[int, list[Judgment]] = {}
    for j in rows:
        by_task.setdefault(j.task_id, []).append(j)
    observations = [
        (
            j.task_id,
            j.annotator.username,
            {
                "relevance": j.relevance,
                "persona_sensitive": j.persona_sensitive,
                "personal_sensitive": j.personal_sensitive,
            },
        )
        for js in by_task.values()
        if len(js) >= 2
        for j in js
    ]
    report = agreement.agreement_report(observations, samples=samples)
    adjudications = {
        (a.topic_id, a.persona_id, a.document_id): a
        for a in Adjudication.objects.filter(project=project)
    }
    report["disagreements"] = []
    for js in by_task.values():
        if len(js) < 2:
            continue
        differ = {
            "relevance": len({j.relevance for j in js}) > 1,
            "persona_sensitive": len({j.persona_sensitive for j in js}) > 1,
        }
        if any(differ.values()):
            task = js[0].task
            adj = adjudications.get((task.topic_id, task.persona_id, task.document_id))
            report["disagreements"].append(
                {
                    "task": task,
                    "judgments": js,
                    "adjudication": adj,
                    "resolved": adjudication_resolves(adj, **differ),
                }
            )
    # Those still to settle first; each group in task order.
    report["disagreements"].sort(key=lambda d: d["resolved"])
    report["to_adjudicate"] = sum(not d["resolved"] for d in report["disagreements"])
    report["adjudicated"] = len(report["disagreements"]) - report["to_adjudicate"]
    report["judged_tasks"] = len(by_task)
    return report


def adjudication_resolves(
    adjudication: Adjudication | None, *, relevance: bool, persona_sensitive: bool
) -> bool:
    """Whether an adjudication settles a disagreement: it decides every answer that differs
    (a relevance-only adjudication leaves a sensitivity disagreement open)."""
    if adjudication is None:
        return False
    if relevance and adjudication.relevance is None:
        return False
    return not (persona_sensitive and not adjudication.persona_sensitive)


def agreement_over_rounds(*, project: AnnotationProject, facet: str = "relevance") -> list[dict]:
    """Per round, in order: its kind, overlapping items and each pair's kappa on ``facet``
    (the study's table 3.4: does training raise agreement?)."""
    out = []
    for round_ in project.rounds.order_by("number"):
        report = agreement_for(project=project, round_id=round_.pk, samples=0)
        out.append(
            {
                "round": round_,
                "pairs": [(p["annotators"], p["facets"][facet]) for p in report["pairs"]],
                "items": report["items"],
            }
        )
    return out


def agreement_with_reference(*, project: AnnotationProject) -> list[dict]:
    """The project's final labels against each set of imported judgments of its collection.

    Relevance: the exported grade of every (topic, document) against each qrels source's
    grade (the three relevance questions of ``agreement``). Persona sensitivity: the
    exported 0/1 against each imported label set for that persona (a label without topic
    holds for every topic). Returns one entry per source with ``agreement.Agreement`` rows.
    """
    with snapshot():
        labels = final_labels(project)
        topics = {t.pk: t.number for t in project.topics.all()}
        relevance_refs = list(
            ReferenceRelevance.objects.filter(topic_id__in=topics).values_list(
                "source", "topic_id", "document__docid", "grade"
            )
        )
        personas = {p.pk: p.name for p in project.personas.all()}
        sensitivity_refs = list(
            ReferenceSensitivity.objects.filter(persona_id__in=personas).values_list(
                "source", "persona_id", "topic_id", "document__docid", "sensitive"
            )
        )
    ours = {key: grade for key, (grade, _rule) in labels.relevance.items()}
    out = []
    by_source: dict[str, dict] = {}
    for source, topic_id, docid, grade in relevance_refs:
        by_source.setdefault(source, {})[(topics[topic_id], docid)] = grade
    for source, theirs in sorted(by_source.items()):
        rows = [
            agreement.pair_agreement(
                ours,
                theirs,
                agreement.FACETS_BY_NAME[name],
                names=("project", source),
            )
            for name in ("relevance", "relevance_weighted", "relevance_binary")
        ]
        out.append({"source": source, "kind": "relevance", "persona": "", "rows": rows})
    sens: dict[tuple, dict] = {}
    for source, persona_id, topic_id, docid, sensitive in sensitivity_refs:
        target = sens.setdefault((source, personas[persona_id]), {})
        value = "yes" if sensitive else "no"
        if topic_id is None:  # holds for every topic, unless a topic's own label says else
            for topic in topics.values():
                target.setdefault((topic, docid), value)
        elif topic_id in topics:
            target[(topics[topic_id], docid)] = value
    facet = agreement.FACETS_BY_NAME["persona_sensitive"]
    for (source, persona), theirs in sorted(sens.items()):
        mine = {
            (t, d): ("yes" if v else "no")
            for (p, t, d), (v, _rule) in labels.sensitivity.items()
            if p == persona and v is not None
        }
        row = agreement.pair_agreement(mine, theirs, facet, names=("project", source))
        out.append({"source": source, "kind": "sensitivity", "persona": persona, "rows": [row]})
    return out


# The judging page shows at most this many messages of a thread: the current one and the
# ones nearest to it in time.
THREAD_SHOWN = 25
THREAD_SNIPPET = 200


def document_thread(*, document: Document, limit: int = THREAD_SHOWN) -> dict:
    """Return the thread ``document`` belongs to, for the judging page's collapsed list.

    ``{"total": n, "messages": [...], "hidden": m}``: the messages (dicts with docid,
    subject, sender, date, folder, a snippet of the body and ``current``) nearest in time to
    this one, oldest first; total 0 when the document has no thread key (a SMART record).
    Two indexed queries whatever the collection's size (``document_thread_idx``).
    """
    if not document.thread_key:
        return {"total": 0, "messages": [], "hidden": 0}
    same = Document.objects.filter(
        collection_id=document.collection_id, thread_key=document.thread_key
    )
    total = same.count()
    if total <= 1:
        return {"total": total, "messages": [], "hidden": 0}
    fields = ("pk", "docid", "subject", "from_header", "date", "folder", "body")
    when = document.date
    if when is None or total <= limit:
        rows = list(same.order_by(F("date").asc(nulls_last=True), "docid").values(*fields)[:limit])
    else:
        half = limit // 2
        before = list(same.filter(date__lt=when).order_by("-date", "-docid").values(*fields)[:half])
        after = list(
            same.filter(date__gte=when)
            .exclude(pk=document.pk)
            .order_by("date", "docid")
            .values(*fields)[: limit - 1 - len(before)]
        )
        current = same.filter(pk=document.pk).values(*fields)[:1]
        rows = [*reversed(before), *current, *after]
    messages = []
    for row in rows:
        body = " ".join(row.pop("body")[: THREAD_SNIPPET * 4].split())
        snippet = body[:THREAD_SNIPPET] + ("…" if len(body) > THREAD_SNIPPET else "")
        messages.append({**row, "snippet": snippet, "current": row["pk"] == document.pk})
    return {"total": total, "messages": messages, "hidden": total - len(messages)}
