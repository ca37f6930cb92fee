"""Import SMART-format document collections (Cranfield ``cran.all.1400``, CACM ``cacm.all``):
each record mapped onto the document fields, kept one document per docid."""

import re
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings

from annotate.import_documents import DocumentWriter
from annotate.import_report import ImportReport, Progress, items_consume, read_limited
from annotate.models import Collection
from core.parsing import Issue
from core.parsing.emails import ParsedEmail
from core.parsing.trec import SmartRecord, iter_smart, topic_count

_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        1,
    )
}


def _smart_date(bibliography: str) -> datetime | None:
    """Read "CACM December, 1958" (or a bare year) as a date, for time-based features."""
    match = re.search(r"([A-Za-z]+)\s*,?\s*(1[89]\d\d|20\d\d)", bibliography)
    if match and match.group(1).lower() in _MONTHS:
        return datetime(int(match.group(2)), _MONTHS[match.group(1).lower()], 1, tzinfo=UTC)
    year = re.search(r"\b(1[89]\d\d|20\d\d)\b", bibliography)
    return datetime(int(year.group(1)), 1, 1, tzinfo=UTC) if year else None


def smart_record_to_email(record: SmartRecord) -> tuple[ParsedEmail, dict]:
    """Map a SMART record onto the document fields: .T subject, .W body, .A authors as From."""
    f = record.fields
    parsed = ParsedEmail(
        subject=" ".join(f.get("T", "").split()),
        from_header="; ".join(a.strip() for a in f.get("A", "").splitlines() if a.strip()),
        body=f.get("W", ""),
        date=_smart_date(f.get("B", "")),
    )
    metadata = {}
    if f.get("B"):
        metadata["bibliography"] = " ".join(f["B"].split())
    if f.get("K"):
        metadata["keywords"] = [k.strip() for k in re.split(r"[,\n]", f["K"]) if k.strip()]
    if f.get("C"):
        metadata["categories"] = re.findall(r"\d+(?:\.\d+)?", f["C"])
    if f.get("N"):
        metadata["entry"] = " ".join(f["N"].split())
    return parsed, metadata


def collection_import_smart(
    *, collection: Collection, path: Path, label: str | None = None, progress: Progress = None
) -> ImportReport:
    """Import a SMART-format document file (Cranfield ``cran.all.1400``, CACM ``cacm.all``)."""
    report = ImportReport()
    label = label or Path(path).name
    data = read_limited(Path(path), label, report)
    if data is None:
        return report
    cap = settings.SASC_MAX_DOCUMENTS_PER_IMPORT
    if (count := topic_count(data, "smart")) > cap:
        report.add(
            Issue(
                label,
                "",
                f"file holds {count} records, over the {cap} documents one import may bring "
                "(SASC_MAX_DOCUMENTS_PER_IMPORT); nothing was stored",
            )
        )
        return report
    # Test collections are judged by docid: two records with the same text stay two documents.
    writer = DocumentWriter(collection, report, dedupe=False)

    def handle(record: SmartRecord):
        parsed, metadata = smart_record_to_email(record)
        writer.add(record.id, parsed, f"{label}:line {record.line}", metadata=metadata)

    items_consume(iter_smart(data, label), report, progress, handle)
    writer.finish()
    return report
