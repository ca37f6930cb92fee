"""Precision and recall of the recognisers (``core.recognisers.evaluate``) on labelled fixtures,
per kind, as the Markdown table of docs/redaction.md. Exact-span matching: a found entity is
correct when its kind, start and end equal a gold one.

    python bench/entities_scores.py tests/fixtures/entities.txt tests/fixtures/entities_dev.txt
"""

import sys
from pathlib import Path

from _setup import ROOT

sys.path.insert(0, str(ROOT))
from core import recognisers  # noqa: E402


def table(path: Path) -> str:
    lines = path.read_text().splitlines()
    texts = [line for line in lines if line.strip() and not line.startswith("#")]
    scores = recognisers.evaluate(lines)
    out = [
        f"{path.name}: {len(texts)} lines, {sum('[[' not in t for t in texts)} without an entity",
        "",
        "| kind | gold | found | correct | precision | recall |",
        "|---|---|---|---|---|---|",
    ]
    for kind, s in scores.items():
        if not (s.gold or s.found):
            continue
        row = [kind, s.gold, s.found, s.correct, f"{s.precision:.2f}", f"{s.recall:.2f}"]
        if kind == "all":
            row = [f"**{cell}**" for cell in row]
        out.append("| " + " | ".join(str(cell) for cell in row) + " |")
    return "\n".join(out)


def main() -> None:
    paths = sys.argv[1:] or [ROOT / "tests" / "fixtures" / "entities.txt"]
    print("\n\n".join(table(Path(p)) for p in paths))


if __name__ == "__main__":
    main()
