"""Pure parsers for every format sasc imports. No Django, no database.

Each parser yields values or ``Issue`` records; it never raises on bad input, so one broken
file or line cannot stop an import.
"""

from dataclasses import dataclass

from core.runs import field_problem

# The columns ids are stored in (annotate.models: Document.docid, Topic.number): longer ids
# are refused by name here rather than by the database mid-import.
MAX_DOCID_LENGTH = 255
MAX_TOPIC_NUMBER_LENGTH = 32


def id_problem(value: str, what: str, max_length: int) -> str | None:
    """Return why ``value`` cannot be a ``what`` (a document id, a topic number) that is
    written into TREC files, or None: it must be one field (no whitespace, no control
    characters) of at most ``max_length`` characters."""
    problem = field_problem(value)
    if problem is not None:
        return f"{what} {value[:80]!r} {problem}"
    if len(value) > max_length:
        return f"{what} {value[:40]!r}... is {len(value)} characters, over the {max_length} limit"
    return None


@dataclass(frozen=True)
class Issue:
    """A problem with one file, line or record, named precisely enough to find it."""

    source: str
    where: str
    reason: str
    # "error" fails the import command (exit non-zero); "skipped" is only reported.
    severity: str = "error"

    def __str__(self) -> str:
        where = f":{self.where}" if self.where else ""
        return f"{self.source}{where}: {self.reason}"

    def as_dict(self) -> dict:
        return {
            "source": self.source,
            "where": self.where,
            "reason": self.reason,
            "severity": self.severity,
        }
