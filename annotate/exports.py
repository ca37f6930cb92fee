"""The files a collection's users need (TREC qrels, sensitivity labels, the full annotation
table), as a pure function of one committed database snapshot (G5); the final labels they
hold follow ``annotate.labels``.
"""

import csv
import io
import json
import re
import zipfile
from collections import defaultdict

from annotate import charts, hooks, selectors
from annotate.labels import FinalLabels, final_labels, project_judgments, snapshot
from annotate.models import AnnotationProject
from core.runs import topic_key, trec_field

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _line(*fields) -> str:
    """One line of a TREC file: every field through ``trec_field``, so an id stored before
    ids were checked (a newline, a space in a docno) stays one field and adds no line."""
    return " ".join(trec_field(f) for f in fields) + "\n"


def qrels_text(labels: FinalLabels) -> str:
    """TREC qrels: ``topic 0 docno grade``, grades 2/1/0, sorted by topic then docno."""
    keys = sorted(labels.relevance, key=lambda k: (topic_key(k[0]), k[1]))
    return "".join(_line(t, 0, d, labels.relevance[(t, d)][0]) for t, d in keys)


def sensitivity_texts(labels: FinalLabels) -> dict[str, str]:
    """Per persona name: ``topic 0 docno 0|1`` lines (units with no yes/no left out)."""
    out: dict[str, list] = defaultdict(list)
    for (persona, topic, docid), (value, _rule) in labels.sensitivity.items():
        if value is not None:
            out[persona].append((topic, docid, value))
    return {
        persona: "".join(
            _line(t, 0, d, v) for t, d, v in sorted(rows, key=lambda r: (topic_key(r[0]), r[1]))
        )
        for persona, rows in sorted(out.items())
    }


TABLE_COLUMNS = [
    "judgment_id",
    "project",
    "round",
    "round_kind",
    "topic",
    "persona",
    "docno",
    "annotator",
    "relevance",
    "persona_sensitive",
    "personal_sensitive",
    "comment",
    "active_seconds",
    "started_at",
    "submitted_at",
    "updated_at",
    "version",
    "final_relevance",
    "relevance_rule",
    "final_persona_sensitive",
    "sensitivity_rule",
]


def annotation_rows(project: AnnotationProject, labels: FinalLabels) -> list[dict]:
    """Every judgment with its context and the final labels of its unit, in id order."""
    rows = []
    for j in project_judgments(project):
        t = j.task
        rel, rel_rule = labels.relevance[(t.topic.number, t.document.docid)]
        sens, sens_rule = labels.sensitivity[(t.persona.name, t.topic.number, t.document.docid)]
        rows.append(
            {
                "judgment_id": j.pk,
                "project": project.slug,
                "round": j.round.number,
                "round_kind": j.round.kind,
                "topic": t.topic.number,
                "persona": t.persona.name,
                "docno": t.document.docid,
                "annotator": j.annotator.username,
                "relevance": j.relevance,
                "persona_sensitive": j.persona_sensitive,
                "personal_sensitive": j.personal_sensitive,
                "comment": j.comment,
                "active_seconds": round(j.active_seconds, 3),
                "started_at": j.started_at.isoformat(),
                "submitted_at": j.submitted_at.isoformat(),
                "updated_at": j.updated_at.isoformat(),
                "version": j.version,
                "final_relevance": rel,
                "relevance_rule": rel_rule,
                "final_persona_sensitive": sens,
                "sensitivity_rule": sens_rule,
            }
        )
    return rows


def csv_safe(value):
    """Neutralise a text cell a spreadsheet would run as a formula (G5, T11)."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def table_csv(rows: list[dict]) -> str:
    """Write rows as CSV, cells that a spreadsheet would run as formulas defused."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=TABLE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_safe("" if v is None else v) for k, v in row.items()})
    return buffer.getvalue()


def table_jsonl(rows: list[dict]) -> str:
    """Write rows as JSON lines, one object per row."""
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)


def file_slug(name: str) -> str:
    """Turn a name into a safe file-name part (persona names in export files)."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "persona"


def sensitivity_files(labels: FinalLabels) -> dict[str, str]:
    """``{sensitivity-<persona>.txt: text}``; names that slug alike ("Ann Lee", "ann-lee")
    get a numbered file each rather than one file that the second overwrites."""
    files: dict[str, str] = {}
    for persona, text in sensitivity_texts(labels).items():
        name, n = f"sensitivity-{file_slug(persona)}.txt", 1
        while name in files:
            n += 1
            name = f"sensitivity-{file_slug(persona)}-{n}.txt"
        files[name] = text
    return files


def machine_labels_text(project: AnnotationProject, labels: FinalLabels) -> tuple[dict, str]:
    """Machine labels of (topic, document) units no annotator judged: ``{(topic, docno):
    (grade, "machine")}`` to add to the qrels, and the side file that flags them
    (``topic 0 docno 0|1 probability model_version``)."""
    added, lines = {}, []
    for topic, docid, relevant, probability, version in hooks.machine_labels(project=project):
        key = (topic, docid)
        if key in labels.relevance:  # a person judged it: the human label stands
            continue
        added[key] = (int(relevant), "machine")
        lines.append((key, (int(relevant), f"{probability:.6f}", version)))
    lines.sort(key=lambda kv: (topic_key(kv[0][0]), kv[0][1]))
    return added, "".join(_line(t, 0, d, *rest) for (t, d), rest in lines)


def export_files(
    project: AnnotationProject,
    snapshot_id: str | None = None,
    pictures: bool = True,
    machine_labels: bool = False,
) -> dict[str, str | bytes]:
    """Every export file of a project, ``{file name: text, or PNG bytes}``, from one
    snapshot: qrels, sensitivity labels per persona, the annotation table and (unless
    ``pictures`` is false) the three charts of ``annotate.charts``. With
    ``machine_labels``, ``qrels.txt`` is hybrid: it adds the active-learning model's labels
    of documents nobody judged, listed in ``machine-labels.txt``."""
    with snapshot(snapshot_id):
        labels = final_labels(project)
        rows = annotation_rows(project, labels)
        rounds = selectors.agreement_over_rounds(project=project) if pictures else []
        machine, machine_text = machine_labels_text(project, labels) if machine_labels else ({}, "")
    qrels = FinalLabels(relevance={**labels.relevance, **machine}, sensitivity={})
    files: dict[str, str | bytes] = {"qrels.txt": qrels_text(qrels)}
    if machine_labels:
        files["machine-labels.txt"] = machine_text
    files.update(sensitivity_files(labels))
    files["annotations.csv"] = table_csv(rows)
    files["annotations.jsonl"] = table_jsonl(rows)
    if pictures:
        files.update(charts.all_charts(labels, rounds))
    return files


def export_zip(project: AnnotationProject, machine_labels: bool = False) -> bytes:
    """Every export file in one zip, ``<project>/<file>``, from one snapshot; fixed
    timestamps, so the same data gives the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in export_files(project, machine_labels=machine_labels).items():
            info = zipfile.ZipInfo(f"{project.slug}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            data = content if isinstance(content, bytes) else content.encode("utf-8")
            archive.writestr(info, data)
    return buffer.getvalue()
