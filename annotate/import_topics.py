"""Import topics from a TREC topics file or a SMART queries file, within the number of
topics a collection may hold."""

from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Count

from annotate.import_report import ImportReport, read_limited
from annotate.models import Collection, Judgment, Topic
from core.parsing import Issue
from core.parsing.trec import TopicRecord, iter_smart_queries, iter_trec_topics, topic_count


def _statement(topic: Topic | TopicRecord) -> tuple[str, str, str]:
    return topic.title, topic.description, topic.narrative


def _topic_cap_issue(label: str, what: str, cap: int) -> Issue:
    return Issue(
        label,
        "",
        f"{what}: over the {cap} topics a collection may hold "
        "(SASC_MAX_TOPICS_PER_COLLECTION); nothing was stored",
    )


def topics_import(
    *,
    collection: Collection,
    path: Path,
    fmt: str = "trec",
    number_by: str = "id",
    label: str | None = None,
) -> ImportReport:
    """Create or update topics from a TREC topics file or a SMART queries file."""
    report = ImportReport()
    label = label or Path(path).name
    data = read_limited(Path(path), label, report)
    if data is None:
        return report
    if fmt == "trec":
        items = iter_trec_topics(data, label)
    elif fmt == "smart":
        items = iter_smart_queries(data, label, number_by=number_by)
    else:
        raise ValueError(f"unknown topics format {fmt!r}")
    cap = settings.SASC_MAX_TOPICS_PER_COLLECTION
    # Counted on the bytes first: a file of a million lines is refused before it is parsed.
    if (count := topic_count(data, fmt)) > cap:
        report.add(_topic_cap_issue(label, f"file holds {count} topics", cap))
        return report
    records: list[TopicRecord] = []
    for item in items:
        if isinstance(item, Issue):
            report.add(item)
        else:
            records.append(item)
    existing = {t.number: t for t in Topic.objects.filter(collection=collection)}
    added = len({rec.number for rec in records} - set(existing))
    if len(existing) + added > cap:
        report.add(
            _topic_cap_issue(
                label, f"the collection has {len(existing)} topics and this file adds {added}", cap
            )
        )
        return report
    with transaction.atomic():
        changing = [
            existing[rec.number].pk
            for rec in records
            if rec.number in existing and _statement(existing[rec.number]) != _statement(rec)
        ]
        # What annotators judged a topic against is its statement then: an import never changes
        # the statement of a topic already judged (it would sit over judgments made to another).
        judged = dict(
            Judgment.objects.filter(task__topic_id__in=changing)
            .values_list("task__topic_id")
            .annotate(n=Count("id"))
            .order_by()
        )
        for rec in records:
            values = {
                "title": rec.title,
                "description": rec.description,
                "narrative": rec.narrative,
            }
            topic = existing.get(rec.number)
            if topic is None:
                Topic.objects.create(collection=collection, number=rec.number, **values)
                report.created += 1
            elif topic.pk in judged:
                report.add(
                    Issue(
                        label,
                        f"line {rec.line}",
                        f"topic {rec.number} not changed: {judged[topic.pk]} "
                        f"{'judgment was' if judged[topic.pk] == 1 else 'judgments were'} "
                        "made against its "
                        "title, description and narrative as they are. To judge against "
                        "the new text, import it under a new topic number",
                    )
                )
            elif any(getattr(topic, k) != v for k, v in values.items()):
                for k, v in values.items():
                    setattr(topic, k, v)
                topic.save(update_fields=list(values))
                report.updated += 1
            else:
                report.unchanged += 1
    return report
