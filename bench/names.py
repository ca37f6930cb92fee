"""How much the person-name gazetteer (``core.names``, docs/redaction.md) costs per message:
the recognisers of a subject and body without names (``core.recognisers.recognise``, what an
import ran before) and with them (``core.names.recognise``), on the 39 real messages of
``tests/fixtures/emails/sample`` and on ``bench/mailgen.py`` mail; the gazetteer's build from
the messages' headers; and matching with a gazetteer of 20,000 more people (the cost is per
word of the text, not per name); with ``--store``, the whole detection run of an imported
mailgen archive (``annotate.entities.collection_entities_detect``: the query, the
recognisers, the rows written) with and without names, on a throwaway SQLite database.

    python bench/names.py [--messages 3000] [--store]
"""

import argparse
import mailbox
import random
import sys
import tempfile
import time
from pathlib import Path

from _setup import ROOT

sys.path.insert(0, str(ROOT))
from core import (
    names,
    recognisers,  # noqa: E402
)
from core.parsing.emails import parse_email_bytes  # noqa: E402

SAMPLE = ROOT / "tests" / "fixtures" / "emails" / "sample"


def _ms_per_message(texts, recognisers: dict, repeat: int = 9) -> dict[str, float]:
    """Milliseconds per message (subject + body) of each recogniser: the runs interleaved, the
    fastest of ``repeat`` kept (the machine is shared: the slower runs measure the others)."""
    runs: dict[str, list[float]] = {label: [] for label in recognisers}
    for _ in range(repeat):
        for label, recognise in recognisers.items():
            t = time.perf_counter()
            for subject, body in texts:
                recognise(subject)
                recognise(body)
            runs[label].append((time.perf_counter() - t) * 1000 / len(texts))
    return {label: min(times) for label, times in runs.items()}


def _measure(label: str, parsed) -> None:
    rows = [(p.from_header, p.to_header, p.cc_header, p.bcc_header) for p in parsed]
    t = time.perf_counter()
    gazetteer = names.gazetteer_of_headers(rows)
    built = time.perf_counter() - t
    texts = [(p.subject, p.body) for p in parsed]
    crowd = _crowd(20_000)
    big = names.Gazetteer.from_correspondents(
        [pair for row in rows for h in row for pair in names.header_correspondents(h)] + crowd
    )
    ms = _ms_per_message(
        texts,
        {
            "before": recognisers.recognise,
            "after": lambda text: names.recognise(text, gazetteer),
            "find": gazetteer.find,
            "big": big.find,
        },
    )
    found = sum(
        1 for s, b in texts for text in (s, b) for e in gazetteer.find(text) if e.kind == "name"
    )
    chars = sum(len(s) + len(b) for s, b in texts) / len(texts)
    print(
        f"{label}: {len(parsed):,} messages ({chars:,.0f} characters each on average), "
        f"{gazetteer.people:,} people, {len(gazetteer):,} forms (built from the headers in "
        f"{built * 1000:.0f} ms); {found:,} names found"
    )
    print(
        f"  ms per message: recognisers before {ms['before']:.3f}, with names {ms['after']:.3f}"
        f" (+{ms['after'] - ms['before']:.3f}; the gazetteer's find alone {ms['find']:.3f})"
    )
    print(
        f"  with 20,000 more people ({big.people:,} people, {len(big):,} forms): "
        f"find {ms['big']:.3f} ms per message"
    )


def _crowd(n: int) -> list[tuple[str, str]]:
    """``n`` made-up people with made-up names (syllables), each with an address."""
    rng = random.Random(7)
    syllables = ["ka", "lo", "mi", "ren", "sa", "tor", "vi", "bel", "dor", "an", "ul", "fen"]

    def word():
        return "".join(rng.choice(syllables) for _ in range(rng.randint(2, 3))).title()

    out = []
    for _ in range(n):
        given, surname = word(), word()
        out.append((f"{given} {surname}", f"{given[0].lower()}{surname.lower()}@crowd.example"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=3000, help="mailgen messages")
    parser.add_argument("--store", action="store_true", help="the detection run, stored")
    args = parser.parse_args()
    sample = [parse_email_bytes(p.read_bytes()) for p in sorted(SAMPLE.glob("*.eml"))]
    _measure("sample", sample)

    sys.path.insert(0, str(ROOT / "bench"))
    import mailgen

    with tempfile.TemporaryDirectory() as tmp:
        mailgen.generate(Path(tmp), args.messages, seed=3)
        parsed = [
            parse_email_bytes(m.as_bytes())
            for box in sorted(Path(tmp).rglob("*.mbox"))
            for m in mailbox.mbox(box)
        ]
        if args.store:
            _stored(Path(tmp))
    _measure("mailgen", parsed)

    # the gazetteer's build at scale: header rows as an import reads them from the database
    rows = [(p.from_header, p.to_header, p.cc_header, p.bcc_header) for p in parsed]
    many = [rows[i % len(rows)] for i in range(100_000)]
    names.header_correspondents.cache_clear()
    t = time.perf_counter()
    names.gazetteer_of_headers(iter(many))
    per = (time.perf_counter() - t) / len(many)
    print(
        f"gazetteer from 100,000 header rows (mailgen's, repeated): {per * 1e6:.1f} us per row"
        f" ({per * 500_000:.1f} s for 500,000 messages with as few distinct headers)"
    )
    distinct = [
        (f"A{i} Person <p{i}@x.example>", f"B{i} Other <o{i}@x.example>", "", "")
        for i in range(100_000)
    ]
    names.header_correspondents.cache_clear()
    t = time.perf_counter()
    names.gazetteer_of_headers(iter(distinct))
    per = (time.perf_counter() - t) / len(distinct)
    print(
        f"gazetteer from 100,000 rows of distinct headers (none cached): {per * 1e6:.1f} us "
        f"per row ({per * 500_000:.1f} s for 500,000 messages)"
    )


def _stored(folder: Path) -> None:
    """The detection run of an imported archive, with the names and with an empty gazetteer
    (what it did before), each run three times, interleaved, the fastest kept."""
    from _setup import django_setup

    django_setup("names")
    from annotate import entities as stored
    from annotate import services
    from annotate.models import Collection, DocumentEntity

    collection = Collection.objects.create(name="names", slug="names")
    services.import_run(collection=collection, fmt="emails", path=folder)
    n = collection.documents.count()
    real = stored.collection_gazetteer
    variants = {"without names": lambda _id: names.Gazetteer(), "with names": real}
    runs: dict[str, list[float]] = {label: [] for label in variants}
    rows = {}
    for _ in range(3):
        for label, gazetteer in variants.items():
            stored.collection_gazetteer = gazetteer
            t = time.perf_counter()
            rows[label] = stored.collection_entities_detect(collection_id=collection.pk)
            runs[label].append(time.perf_counter() - t)
    stored.collection_gazetteer = real
    named = DocumentEntity.objects.filter(kind="name").count()
    for label in variants:
        print(
            f"detection run of {n:,} stored messages {label}: {min(runs[label]) * 1000 / n:.3f}"
            f" ms per message, {rows[label]:,} rows"
        )
    print(f"  ({named:,} of them names)")


if __name__ == "__main__":
    main()
