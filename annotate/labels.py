"""The final label of every judged unit of a project, read from one committed snapshot
(G5): the rules exports, learning and the charts share.

Final label of a (topic, persona, document), in this order (the rule is recorded):
  ``adjudicated``  the lead's label;
  ``single``       only one annotator judged it;
  ``agreed``       every annotator gave the same answer;
  ``rule:...``     otherwise: relevance by the project's rule (``higher``: the more relevant
                   grade; ``majority``: the most frequent grade, a tie going to the more
                   relevant), persona sensitivity ``rule:any-sensitive``: sensitive if any
                   annotator said so (the study's rule, docs/domain.md §5).
'Don't know' sensitivity answers are not labels; a unit with only those gets none
(``no-answer``). Relevance qrels are per (topic, document): judgments under every persona
count together, and an adjudicated grade (the latest, if several personas') wins.
"""

from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connection, transaction

from annotate.models import Adjudication, AnnotationProject, Answer, Judgment


@contextmanager
def snapshot(snapshot_id: str | None = None):
    """Read everything inside from one committed snapshot; yield its id (PostgreSQL).

    PostgreSQL: a REPEATABLE READ transaction, which exports its snapshot so a second
    export can read the very same one (``snapshot_id``). SQLite: one read transaction is
    already a snapshot (yields None). Called inside a transaction, it reads that one.
    """
    nested = connection.in_atomic_block
    with transaction.atomic():
        if connection.vendor != "postgresql" or (nested and not snapshot_id):
            # Inside a caller's transaction, that transaction is the snapshot.
            yield None
            return
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            if snapshot_id:
                cursor.execute("SET TRANSACTION SNAPSHOT %s", [snapshot_id])
                yield snapshot_id
                return
            cursor.execute("SELECT pg_export_snapshot()")
            yield cursor.fetchone()[0]


@dataclass
class Unit:
    """One (topic, persona, document) and every judgment of it."""

    topic: str
    persona: str
    docid: str
    relevance: list  # [(annotator, grade)]
    persona_sensitive: list  # [(annotator, answer)]
    adjudication: Adjudication | None = None


@dataclass
class FinalLabels:
    relevance: dict  # (topic, docid) -> (grade, rule)
    sensitivity: dict  # (persona, topic, docid) -> (0|1|None, rule)


def relevance_label(grades: list[int], rule: str) -> tuple[int, str]:
    """Return the final grade of a unit's relevance grades and the rule that gave it."""
    if len(grades) == 1:
        return grades[0], "single"
    if len(set(grades)) == 1:
        return grades[0], "agreed"
    if rule == AnnotationProject.RelevanceRule.MAJORITY:
        counts = Counter(grades)
        return max(counts, key=lambda g: (counts[g], g)), "rule:majority"
    return max(grades), "rule:higher"


def _sensitivity_label(answers: list[str]) -> tuple[int | None, str]:
    usable = [a for a in answers if a in (Answer.YES, Answer.NO)]
    if not usable:
        return None, "no-answer"
    if len(answers) == 1:
        return int(usable[0] == Answer.YES), "single"
    if len(set(answers)) == 1:
        return int(usable[0] == Answer.YES), "agreed"
    return int(Answer.YES in usable), "rule:any-sensitive"


def project_judgments(project: AnnotationProject):
    """Return the project's judgments with their task's topic, persona and document, in id order."""
    return (
        Judgment.objects.filter(task__project=project)
        .select_related("task__topic", "task__persona", "task__document", "round", "annotator")
        .order_by("id")
    )


def final_labels(project: AnnotationProject) -> FinalLabels:
    """Return the exported labels and the rule behind each (call inside ``snapshot``)."""
    units: dict[tuple, Unit] = {}
    by_topic_doc: dict[tuple, list] = defaultdict(list)
    for j in project_judgments(project):
        t = j.task
        key = (t.topic.number, t.persona.name, t.document.docid)
        unit = units.setdefault(key, Unit(*key, relevance=[], persona_sensitive=[]))
        unit.relevance.append((j.annotator_id, j.relevance))
        unit.persona_sensitive.append((j.annotator_id, j.persona_sensitive))
        by_topic_doc[(t.topic.number, t.document.docid)].append(j.relevance)
    adjudications = {}
    for adj in Adjudication.objects.filter(project=project).select_related(
        "topic", "persona", "document"
    ):
        adjudications[(adj.topic.number, adj.persona.name, adj.document.docid)] = adj
    relevance = {}
    for (topic, docid), grades in by_topic_doc.items():
        relevance[(topic, docid)] = relevance_label(grades, project.relevance_rule)
    latest: dict[tuple, Adjudication] = {}
    for (topic, _persona, docid), adj in adjudications.items():
        if adj.relevance is not None:
            prev = latest.get((topic, docid))
            if prev is None or (adj.decided_at, adj.pk) > (prev.decided_at, prev.pk):
                latest[(topic, docid)] = adj
    for key, adj in latest.items():
        relevance[key] = (adj.relevance, "adjudicated")
    sensitivity = {}
    for (topic, persona, docid), unit in units.items():
        adj = adjudications.get((topic, persona, docid))
        if adj is not None and adj.persona_sensitive:
            sensitivity[(persona, topic, docid)] = (
                int(adj.persona_sensitive == Answer.YES),
                "adjudicated",
            )
        else:
            sensitivity[(persona, topic, docid)] = _sensitivity_label(
                [a for _, a in unit.persona_sensitive]
            )
    return FinalLabels(relevance=relevance, sensitivity=sensitivity)


def persona_sensitivity_labels(*, collection, persona) -> dict[int, int]:
    """``{document id: 0/1}``: the persona-sensitivity label of each document of the
    collection over every project's judgments under any topic, by the rule of the exports
    (sensitive if any annotator said so; 'don't know' is no label), an adjudicated answer
    winning. What the persona's classifier learns from (``annotations`` source)."""
    answers: dict[int, list[str]] = defaultdict(list)
    for doc, answer in Judgment.objects.filter(
        task__document__collection=collection, task__persona=persona
    ).values_list("task__document_id", "persona_sensitive"):
        answers[doc].append(answer)
    labels = {}
    for doc, given in answers.items():
        value, _rule = _sensitivity_label(given)
        if value is not None:
            labels[doc] = value
    for doc, answer in (
        Adjudication.objects.filter(
            document__collection=collection,
            persona=persona,
            persona_sensitive__in=[Answer.YES, Answer.NO],
        )
        .order_by("decided_at", "id")
        .values_list("document_id", "persona_sensitive")
    ):
        labels[doc] = int(answer == Answer.YES)
    return labels
