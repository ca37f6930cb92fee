"""What an import did, and the reading every importer shares.

Every importer follows the same contract (RELIABILITY.md, "Bad input"):
- each malformed file, line or record becomes an ``Issue`` naming the file and place, and the
  rest of the input is still imported;
- a document is written together with its attachments in one transaction, so nothing is
  stored half-way (``annotate.import_documents``);
- a re-run imports nothing twice (documents are keyed by docid, labels by their natural key).

The importers, by kind of input: ``import_emails`` (email archives), ``import_smart`` (SMART
document collections), ``import_topics``, ``import_labels`` (qrels and sensitivity labels),
``import_personas``.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from core.parsing import Issue

Progress = Callable[[int], None]
MAX_REPORTED_ISSUES = 2000


@dataclass
class ImportReport:
    """What an import did, in numbers and with every problem it met."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    duplicates: int = 0
    issues: list[Issue] = field(default_factory=list)
    # Documents stored, but not decoded exactly: {"docid": ..., "problems": [...]}.
    partly_decoded: list[dict] = field(default_factory=list)
    duplicate_examples: list[dict] = field(default_factory=list)

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def skipped(self) -> list[Issue]:
        return [i for i in self.issues if i.severity != "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def add(self, issue: Issue) -> None:
        self.issues.append(issue)

    def summary(self) -> str:
        parts = [f"{self.created} created"]
        if self.updated:
            parts.append(f"{self.updated} updated")
        parts.append(f"{self.unchanged} already present")
        if self.duplicates:
            parts.append(f"{self.duplicates} duplicates stored once")
        if self.partly_decoded:
            parts.append(f"{len(self.partly_decoded)} not fully decoded")
        parts.append(f"{len(self.errors)} error{'' if len(self.errors) == 1 else 's'}")
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped")
        return ", ".join(parts)

    def as_dict(self) -> dict:
        return {
            "summary": self.summary(),
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "duplicates": self.duplicates,
            "error_count": len(self.errors),
            "skipped_count": len(self.skipped),
            "issues": [i.as_dict() for i in self.issues[:MAX_REPORTED_ISSUES]],
            "partly_decoded": self.partly_decoded[:MAX_REPORTED_ISSUES],
            "duplicate_examples": self.duplicate_examples[:100],
        }


def read_limited(path: Path, label: str, report: ImportReport) -> bytes | None:
    try:
        size = path.stat().st_size
        if size > settings.SASC_MAX_IMPORT_FILE_BYTES:
            report.add(
                Issue(
                    label,
                    "",
                    f"file is {size} bytes, over the "
                    f"{settings.SASC_MAX_IMPORT_FILE_BYTES} byte limit",
                )
            )
            return None
        data = path.read_bytes()
    except OSError as exc:
        report.add(Issue(label, "", f"cannot read file: {exc.strerror or exc}"))
        return None
    if not data.strip():
        report.add(Issue(label, "", "empty file"))
        return None
    return data


def items_consume(items: Iterable, report: ImportReport, progress: Progress | None, handle) -> None:
    for n, item in enumerate(items, 1):
        if isinstance(item, Issue):
            report.add(item)
        else:
            handle(item)
        if progress is not None and n % 50 == 0:
            progress(n)
