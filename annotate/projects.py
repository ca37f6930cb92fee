"""Writes: annotation projects, their rounds and the tasks annotators will judge."""

import hashlib

from django.db import transaction
from django.db.models import F

from annotate import hooks, judgments, roles
from annotate.models import (
    AnnotationProject,
    BatchCount,
    Collection,
    Document,
    JudgedCount,
    Persona,
    ReferenceRelevance,
    Round,
    Task,
    Topic,
)


def _required_for(project: AnnotationProject, round_: Round, document: Document) -> int:
    if round_.kind == Round.Kind.TRAINING:
        return max(1, project.annotators.count())
    if project.overlap == 1 and project.double_percent:
        # Deterministic: the same document is double-judged however tasks are added.
        bucket = int(hashlib.sha256(document.docid.encode()).hexdigest()[:8], 16) % 100
        return 2 if bucket < project.double_percent else 1
    return project.overlap


def round_open(*, project: AnnotationProject, kind: str = Round.Kind.PRODUCTION) -> Round:
    """Open the project's next round."""
    with transaction.atomic():
        last = project.rounds.select_for_update().order_by("-number").first()
        return Round.objects.create(
            project=project, number=(last.number + 1 if last else 1), kind=kind
        )


def project_tasks_add(
    *,
    project: AnnotationProject,
    round_: Round,
    topic: Topic,
    persona: Persona,
    documents: list[Document],
    source: str = Task.Source.EXPLICIT,
) -> int:
    """Append documents to a (topic, persona) batch of a round; return how many were new.

    The batch's counter row is locked first: concurrent adds to one batch take turns, so
    positions and the counter stay exact, and only the documents being added are looked up
    (what it reads does not grow with the batch).
    """
    if topic.collection_id != project.collection_id:
        raise ValueError(f"topic {topic.number} is not in the project's collection")
    with transaction.atomic():
        BatchCount.objects.get_or_create(round=round_, topic=topic, persona=persona)
        count = BatchCount.objects.select_for_update().get(
            round=round_, topic=topic, persona=persona
        )
        wanted = {d.pk: d for d in documents}
        existing = set(
            Task.objects.filter(
                round=round_, topic=topic, persona=persona, document_id__in=list(wanted)
            ).values_list("document_id", flat=True)
        )
        new = [
            Task(
                project=project,
                round=round_,
                topic=topic,
                persona=persona,
                document=doc,
                required=_required_for(project, round_, doc),
                position=count.tasks + i,
                source=source,
            )
            for i, doc in enumerate(d for d in wanted.values() if d.pk not in existing)
        ]
        Task.objects.bulk_create(new, batch_size=2000)
        if new:
            BatchCount.objects.filter(pk=count.pk).update(
                tasks=F("tasks") + len(new), required=F("required") + sum(t.required for t in new)
            )
            # Every new task sorts at or after this key (positions grow): the claims of
            # annotators past it start here again.
            judgments.frontiers_lower(round_.pk, (topic.pk, persona.pk, count.tasks, 0))
    return len(new)


# The counters as the rows say they should be (the same statements as migration 0012's).
_RECOUNT = [
    "DELETE FROM annotate_batchcount",
    "DELETE FROM annotate_judgedcount",
    """INSERT INTO annotate_batchcount (round_id, topic_id, persona_id, tasks, required)
       SELECT round_id, topic_id, persona_id, COUNT(*), SUM(required) FROM annotate_task
        GROUP BY round_id, topic_id, persona_id""",
    """INSERT INTO annotate_judgedcount (round_id, topic_id, persona_id, annotator_id, judged)
       SELECT t.round_id, t.topic_id, t.persona_id, j.annotator_id, COUNT(*)
         FROM annotate_judgment j JOIN annotate_task t ON t.id = j.task_id
        GROUP BY t.round_id, t.topic_id, t.persona_id, j.annotator_id""",
]


def progress_recount() -> dict:
    """Count every progress counter again from the rows; return how many rows were off.

    For rows written behind ``project_tasks_add`` and ``judgment_submit`` (SQL by hand, or
    processes of a version before the counters still running after the migration). On
    PostgreSQL the task and judgment tables are locked against writes meanwhile.
    """
    from django.db import connection

    def snapshot():
        return (
            set(BatchCount.objects.values_list("round", "topic", "persona", "tasks", "required")),
            set(
                JudgedCount.objects.filter(judged__gt=0).values_list(
                    "round", "topic", "persona", "annotator", "judged"
                )
            ),
        )

    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("LOCK TABLE annotate_task, annotate_judgment IN SHARE MODE")
        batches, judged = snapshot()
        with connection.cursor() as cursor:
            for sql in _RECOUNT:
                cursor.execute(sql)
        new_batches, new_judged = snapshot()
    return {
        "batches": len(batches ^ new_batches),
        "annotator_batches": len(judged ^ new_judged),
    }


def project_tasks_add_for_personas(
    *, project: AnnotationProject, round_: Round, topic: Topic, personas, documents, source
) -> int:
    """``project_tasks_add`` for each persona: the same documents for every persona."""
    return sum(
        project_tasks_add(
            project=project,
            round_=round_,
            topic=topic,
            persona=persona,
            documents=documents,
            source=source,
        )
        for persona in personas
    )


def project_create(
    *,
    name: str,
    collection: Collection,
    personas,
    topics,
    annotators,
    overlap: int = 1,
    double_percent: int = 0,
    guidelines: str = "",
    lease_minutes: int = 30,
    round_kind: str = Round.Kind.PRODUCTION,
    relevance_rule: str = AnnotationProject.RelevanceRule.HIGHER,
) -> AnnotationProject:
    """Create a project with its first round; every annotator must hold the annotator role."""
    from django.utils.text import slugify

    if overlap < 1:
        raise ValueError("overlap must be at least 1")
    if not 0 <= double_percent <= 100:
        raise ValueError("double_percent must be between 0 and 100")
    outsiders = [u.username for u in annotators if not roles.has_role(u, roles.ANNOTATOR)]
    if outsiders:
        raise ValueError(f"not annotators: {', '.join(outsiders)}")
    base = slugify(name)[:90] or "project"
    slug, n = base, 1
    while AnnotationProject.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    with transaction.atomic():
        project = AnnotationProject.objects.create(
            name=name,
            slug=slug,
            collection=collection,
            overlap=overlap,
            double_percent=double_percent,
            guidelines=guidelines,
            lease_minutes=lease_minutes,
            relevance_rule=relevance_rule,
        )
        project.personas.set(personas)
        project.topics.set(topics)
        project.annotators.set(annotators)
        Round.objects.create(project=project, number=1, kind=round_kind)
    return project


def project_tasks_from_search(
    *, project: AnnotationProject, round_: Round, k: int = 20, topics=None, personas=None
) -> int:
    """Add each topic's top ``k`` BM25 results (title query) for every persona of the project
    (or only the given project ``topics`` and ``personas``)."""
    topics, personas = _chosen(project, topics, personas)
    added = 0
    for topic in topics:
        # The ranking is ranking's (the ranked_documents hook); raises SearchUnavailable
        # before the collection's first index build.
        ranked = hooks.ranked_documents(collection=project.collection, query=topic.title, k=k)
        added += project_tasks_add_for_personas(
            project=project,
            round_=round_,
            topic=topic,
            personas=personas,
            documents=ranked,
            source=Task.Source.POOL,
        )
    return added


def _chosen(project: AnnotationProject, topics, personas) -> tuple[list, list]:
    """The project's topics and personas, or the given ones (which must be the project's)."""
    all_topics, all_personas = list(project.topics.all()), list(project.personas.all())
    topics = all_topics if topics is None else list(topics)
    personas = all_personas if personas is None else list(personas)
    if not set(topics) <= set(all_topics) or not set(personas) <= set(all_personas):
        raise ValueError("choose among the project's own topics and personas")
    return topics, personas


def project_tasks_from_reference(
    *,
    project: AnnotationProject,
    round_: Round,
    only_relevant: bool = False,
    topics=None,
    personas=None,
) -> int:
    """Add, for every topic and persona, the documents of the collection's imported qrels
    (any source; ``only_relevant``: grade 1 or 2): to judge again what an earlier study
    judged, and compare (``selectors.agreement_with_reference``)."""
    topics, personas = _chosen(project, topics, personas)
    added = 0
    for topic in topics:
        refs = ReferenceRelevance.objects.filter(topic=topic)
        if only_relevant:
            refs = refs.filter(grade__gte=1)
        doc_ids = sorted(set(refs.values_list("document_id", flat=True)))
        added += project_tasks_add_for_personas(
            project=project,
            round_=round_,
            topic=topic,
            personas=personas,
            documents=list(Document.objects.filter(pk__in=doc_ids).order_by("docid")),
            source=Task.Source.EXPLICIT,
        )
    return added


def project_tasks_from_lines(
    *, project: AnnotationProject, round_: Round, lines: str
) -> tuple[int, list[str]]:
    """Add tasks from ``topic-number docid`` lines; return the count and the refused lines."""
    topics = {t.number: t for t in project.topics.all()}
    wanted: dict[str, list[str]] = {}
    problems = []
    for n, line in enumerate(lines.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2:
            problems.append(f"line {n}: expected 'topic docid'")
        elif parts[0] not in topics:
            problems.append(f"line {n}: topic {parts[0]!r} is not in the project")
        else:
            wanted.setdefault(parts[0], []).append(parts[1])
    added = 0
    for number, docids in wanted.items():
        docs = {
            d.docid: d
            for d in Document.objects.filter(collection=project.collection, docid__in=docids)
        }
        problems += [f"unknown document {d!r}" for d in docids if d not in docs]
        ordered = [docs[d] for d in dict.fromkeys(docids) if d in docs]
        for persona in project.personas.all():
            added += project_tasks_add(
                project=project,
                round_=round_,
                topic=topics[number],
                persona=persona,
                documents=ordered,
            )
    return added, problems
