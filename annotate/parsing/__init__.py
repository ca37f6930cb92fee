"""Pure parsers for every format sasc imports. No Django, no database.

Each parser yields values or ``Issue`` records; it never raises on bad input, so one broken
file or line cannot stop an import.
"""

from dataclasses import dataclass


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
