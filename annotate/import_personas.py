"""Import personas from a JSON list of objects with the persona fields."""

import json
import re
from pathlib import Path

from django.db import transaction

from annotate.import_report import ImportReport, read_limited
from annotate.models import Persona
from core.parsing import Issue

# Longest text a persona's free-text fields may hold (the short ones have their column's
# max_length); names and short fields may not hold control characters (a newline in a name
# would reach file names and reports), Unicode's line and paragraph separators (line breaks
# too, to every text tool) or the bidirectional controls that reorder the text around them.
MAX_PERSONA_TEXT = 10_000
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

PERSONA_FIELDS = (
    "name",
    "nickname",
    "occupation",
    "institution",
    "background",
    "email_use",
    "why_it_matters",
    "audience",
    "pain_points",
    "goals",
)


def _persona_problem(item: dict) -> str | None:
    """Return what is wrong with a persona's field lengths or characters, or None."""
    for key, value in item.items():
        column = Persona._meta.get_field(key)
        limit = column.max_length or MAX_PERSONA_TEXT
        if len(value) > limit:
            return f"field {key!r} is {len(value)} characters, over the {limit} limit"
        if column.max_length and (found := _CONTROL.search(value)):
            char = found.group()
            return (
                f"field {key!r} holds a control character (U+{ord(char):04X}; newline, tab, "
                "line separator, text direction...)"
            )
    return None


def personas_import(*, path: Path, label: str | None = None) -> ImportReport:
    """Create or update personas from a JSON list of objects with the persona fields."""
    report = ImportReport()
    label = label or Path(path).name
    data = read_limited(Path(path), label, report)
    if data is None:
        return report
    try:
        items = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        report.add(Issue(label, "", f"not valid JSON ({exc})"))
        return report
    if not isinstance(items, list):
        report.add(Issue(label, "", "expected a JSON list of persona objects"))
        return report
    seen: dict[str, int] = {}  # name -> the item that named it first
    with transaction.atomic():
        for i, item in enumerate(items, 1):
            where = f"item {i}"
            if not isinstance(item, dict):
                report.add(Issue(label, where, "each persona must be a JSON object"))
                continue
            unknown = set(item) - set(PERSONA_FIELDS)
            if unknown:
                report.add(Issue(label, where, f"unknown fields: {', '.join(sorted(unknown))}"))
                continue
            if not isinstance(item.get("name"), str) or not item["name"].strip():
                report.add(Issue(label, where, "persona needs a non-empty 'name'"))
                continue
            if any(not isinstance(v, str) for v in item.values()):
                report.add(Issue(label, where, "every persona field must be a string"))
                continue
            if (problem := _persona_problem(item)) is not None:
                report.add(Issue(label, where, problem))
                continue
            name = item["name"].strip()
            if name in seen:
                report.add(
                    Issue(label, where, f"persona “{name}” is named twice (item {seen[name]})")
                )
                continue
            seen[name] = i
            # Only the fields the item gives: one left out keeps its stored text (an empty
            # string clears it). Before, a shorter file blanked the persona's pain points.
            values = {k: v for k, v in item.items() if k != "name"}
            persona, created = Persona.objects.get_or_create(name=name, defaults=values)
            if created:
                report.created += 1
            elif any(getattr(persona, k) != v for k, v in values.items()):
                Persona.objects.filter(pk=persona.pk).update(**values)
                report.updated += 1
            else:
                report.unchanged += 1
    return report
