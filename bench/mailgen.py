"""Synthetic mailboxes that look like a donated archive, for the scale benchmark.

What makes them realistic enough to measure with:
- a social graph: people in an organisation (internal domain) and outside it, who write
  mostly to a few regular correspondents (preferential attachment: a heavy-tailed degree
  distribution, like real mail), sometimes to several people, with Cc;
- threads: a conversation starts with a message and continues with replies that quote the
  message they answer ("On <date>, <name> wrote:" then "> " lines), with Message-ID,
  In-Reply-To and References headers and "Re:" subjects; some messages are forwarded whole
  ("Fwd:"), which makes near-duplicates;
- attachments: a share of the messages carry a text attachment (notes, a CSV of figures)
  or a binary one (a PDF-looking blob);
- topics: each conversation is about one of ``TOPICS`` (planted vocabulary, so pooling and
  active learning have relevant documents to find; the truth goes to ``qrels.txt``);
- a planted sensitive population (``SENSITIVE``: health, salary, family, gossip, legal),
  about 6% of conversations, written to ``sensitivity.csv`` as the truth for the donor.

Writes mbox files of at most ``--per-file`` messages (an archive's folders), ``topics.txt``
(TREC), ``qrels.txt`` and ``sensitivity.txt`` (every message's truth, 0 or 1;
docids as the importer names them: ``<folder>/<file>#<n>``). Deterministic for a seed.

    python bench/mailgen.py --messages 20000 --out /tmp/mail20k
"""

import argparse
import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

FIRST = [
    "ann",
    "bob",
    "cat",
    "dan",
    "eve",
    "fay",
    "gus",
    "hal",
    "ida",
    "jon",
    "kim",
    "lee",
    "max",
    "ned",
    "ola",
    "pat",
    "quinn",
    "rosa",
    "sam",
    "tia",
    "uma",
    "vic",
    "wes",
    "xia",
    "yan",
    "zoe",
    "abe",
    "bea",
    "cal",
    "dee",
    "eli",
    "flo",
    "gil",
    "hap",
    "ivy",
    "jay",
    "kay",
    "liv",
    "mo",
    "nia",
]
LAST = [
    "smith",
    "jones",
    "brown",
    "lee",
    "patel",
    "garcia",
    "muller",
    "rossi",
    "kim",
    "nguyen",
    "silva",
    "khan",
    "cohen",
    "novak",
    "ivanov",
    "dubois",
    "okafor",
    "tanaka",
    "larsen",
    "walsh",
]
COMMON = [
    "the",
    "a",
    "to",
    "of",
    "and",
    "in",
    "for",
    "on",
    "with",
    "at",
    "by",
    "from",
    "is",
    "are",
    "was",
    "be",
    "this",
    "that",
    "it",
    "we",
    "you",
    "our",
    "your",
    "please",
    "thanks",
    "regards",
    "week",
    "today",
    "tomorrow",
    "meeting",
    "call",
    "update",
    "note",
    "plan",
    "team",
    "send",
    "draft",
    "review",
    "attached",
    "following",
    "next",
    "time",
    "before",
    "after",
    "soon",
    "still",
    "also",
    "just",
]
TOPICS = {
    "1": ("grant application", "grant proposal budget deadline funder narrative reviewers award"),
    "2": ("conference travel", "conference travel flight hotel registration itinerary session"),
    "3": ("building renovation", "renovation contractor scaffold permit plumbing architect roof"),
    "4": ("software release", "release build version bug patch server deploy changelog"),
    "5": ("student admissions", "admissions applicant transcript interview offer cohort"),
    "6": ("museum exhibition", "exhibition curator loan gallery catalogue opening artwork"),
    "7": ("board meeting", "board agenda minutes trustees resolution quorum chair"),
    "8": ("library digitisation", "digitisation scanner archive metadata catalogue volumes"),
}
SENSITIVE = {
    "health": "diagnosis hospital surgery medication therapist symptoms recovery",
    "salary": "salary raise payroll bonus compensation negotiation pension",
    "family": "divorce custody son daughter wedding funeral argument",
    "gossip": "affair rumour incompetent drunk embarrassing fired scandal",
    "legal": "lawsuit attorney settlement subpoena confidential liability",
}


class Person:
    __slots__ = ("name", "address", "internal")

    def __init__(self, name, address, internal):
        self.name, self.address, self.internal = name, address, internal


def people(rng: random.Random, n: int) -> list[Person]:
    out, seen = [], set()
    for i in range(n):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        internal = rng.random() < 0.6
        domain = (
            "corp.example"
            if internal
            else rng.choice(["uni.example", "mail.example", "gov.example", "press.example"])
        )
        local = f"{first}.{last}"
        if local in seen:
            local = f"{local}{i}"
        seen.add(local)
        out.append(Person(f"{first.title()} {last.title()}", f"{local}@{domain}", internal))
    return out


def social_graph(rng: random.Random, n: int, m: int = 3) -> list[list[int]]:
    """Correspondents of each person by preferential attachment (Barabasi-Albert)."""
    friends: list[list[int]] = [[] for _ in range(n)]
    targets = list(range(m))
    ends: list[int] = []
    for v in range(m, n):
        for t in set(targets):
            friends[v].append(t)
            friends[t].append(v)
        ends.extend(targets)
        ends.extend([v] * m)
        targets = [rng.choice(ends) for _ in range(m)]
    return friends


def sentence(rng: random.Random, vocabulary: list[str], n: int) -> str:
    words = [
        rng.choice(vocabulary) if rng.random() < 0.35 else rng.choice(COMMON) for _ in range(n)
    ]
    return " ".join(words).capitalize() + "."


def body_text(rng, topic_words, sensitive_words, lines) -> str:
    vocab = topic_words + (sensitive_words if sensitive_words else [])
    paragraphs = []
    for _ in range(lines):
        paragraphs.append(
            " ".join(sentence(rng, vocab, rng.randint(8, 18)) for _ in range(rng.randint(1, 3)))
        )
    return "\n\n".join(paragraphs)


def quoted(author: Person, when: datetime, text: str, limit: int = 30) -> str:
    lines = text.splitlines()[:limit]
    head = f"On {format_datetime(when)}, {author.name} wrote:"
    return head + "\n" + "\n".join(f"> {ln}" if ln else ">" for ln in lines)


def message_bytes(
    *, mid, sender, to, cc, subject, when, body, in_reply_to, references, attachment, rng
):
    headers = [
        f"From: {sender.name} <{sender.address}>",
        "To: " + ", ".join(f"{p.name} <{p.address}>" for p in to),
    ]
    if cc:
        headers.append("Cc: " + ", ".join(f"{p.name} <{p.address}>" for p in cc))
    headers += [f"Subject: {subject}", f"Date: {format_datetime(when)}", f"Message-ID: <{mid}>"]
    if in_reply_to:
        headers.append(f"In-Reply-To: <{in_reply_to}>")
        headers.append("References: " + " ".join(f"<{r}>" for r in references))
    if rng.random() < 0.03:
        headers.append("Importance: high")
    headers.append("MIME-Version: 1.0")
    if attachment is None:
        headers.append('Content-Type: text/plain; charset="utf-8"')
        return ("\n".join(headers) + "\n\n" + body + "\n").encode("utf-8")
    name, ctype, content = attachment
    boundary = f"=_b{rng.getrandbits(48):x}"
    headers.append(f'Content-Type: multipart/mixed; boundary="{boundary}"')
    parts = [
        f'--{boundary}\nContent-Type: text/plain; charset="utf-8"\n\n{body}\n',
        f'--{boundary}\nContent-Type: {ctype}; name="{name}"\n'
        f'Content-Disposition: attachment; filename="{name}"\n'
        + ("Content-Transfer-Encoding: base64\n\n" if ctype == "application/pdf" else "\n")
        + content
        + "\n",
        f"--{boundary}--\n",
    ]
    return ("\n".join(headers) + "\n\n" + "".join(parts)).encode("utf-8")


def generate(
    out: Path, messages: int, *, seed: int = 1, per_file: int = 5000, population: int | None = None
):
    """Write ``messages`` messages under ``out``; return counts."""
    import base64

    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    population = population or max(50, min(20000, messages // 25))
    crowd = people(rng, population)
    friends = social_graph(rng, population)
    topic_ids = list(TOPICS)
    sens_kinds = list(SENSITIVE)
    start = datetime(1998, 1, 5, 8, 0, tzinfo=UTC)
    qrels, sensitive = [], []
    written, file_no, in_file = 0, 0, 0
    handle = None
    name = ""
    while written < messages:
        topic = rng.choice(topic_ids) if rng.random() < 0.5 else None
        kind = rng.choice(sens_kinds) if rng.random() < 0.06 else None
        topic_words = TOPICS[topic][1].split() if topic else rng.sample(COMMON, 12)
        sens_words = SENSITIVE[kind].split() if kind else None
        a = rng.randrange(population)
        cast = [a] + rng.sample(friends[a], min(len(friends[a]), rng.randint(1, 3)))
        subject_core = (
            TOPICS[topic][0]
            if topic
            else rng.choice(["catch up", "question", "quick note", "next steps", "follow up"])
        ) + f" {rng.randint(1, 999)}"
        when = start + timedelta(minutes=rng.randint(0, 60 * 24 * 365 * 4))
        history: list[tuple[str, Person, datetime, str]] = []
        length = min(messages - written, 1 + int(rng.expovariate(1 / 2.5)))
        for turn in range(length):
            if in_file == 0 or handle is None:
                if handle:
                    handle.close()
                file_no += 1
                name = f"box{file_no:04d}.mbox"
                handle = (out / name).open("wb")
            sender = crowd[cast[turn % len(cast)]]
            others = [crowd[p] for p in cast if crowd[p] is not sender]
            to, cc = others[:1] or [crowd[rng.choice(friends[a])]], others[1:]
            own = body_text(rng, topic_words, sens_words, rng.randint(1, 4))
            forward = turn > 0 and rng.random() < 0.08
            if history and forward:
                subject = f"Fwd: {subject_core}"
                body = (
                    f"FYI, see below.\n\n---------- Forwarded message ----------\n{history[-1][3]}"
                )
            elif history:
                subject = f"Re: {subject_core}"
                prev = history[-1]
                body = own + "\n\n" + quoted(prev[1], prev[2], prev[3])
            else:
                subject, body = subject_core.capitalize(), own
            mid = f"{seed}.{written}.{rng.getrandbits(32):x}@{sender.address.split('@')[1]}"
            refs = [h[0] for h in history][-10:]
            attachment = None
            if rng.random() < 0.12:
                if rng.random() < 0.7:
                    rows = "\n".join(
                        f"{rng.choice(topic_words)},{rng.randint(1, 9999)}"
                        for _ in range(rng.randint(3, 12))
                    )
                    attachment = (rng.choice(["notes.txt", "figures.csv"]), "text/plain", rows)
                else:
                    blob = base64.encodebytes(rng.randbytes(rng.randint(400, 3000))).decode()
                    attachment = ("scan.pdf", "application/pdf", blob)
            raw = message_bytes(
                mid=mid,
                sender=sender,
                to=to,
                cc=cc,
                subject=subject,
                when=when,
                body=body,
                in_reply_to=history[-1][0] if history else None,
                references=refs,
                attachment=attachment,
                rng=rng,
            )
            handle.write(
                f"From {sender.address} {when.strftime('%a %b %d %H:%M:%S %Y')}\n".encode()
            )
            handle.write(raw.replace(b"\nFrom ", b"\n>From "))
            handle.write(b"\n")
            in_file += 1
            docid = f"{out.name}/{name}#{in_file}"
            if topic:
                qrels.append((topic, docid, 2 if turn == 0 else 1))
            sensitive.append((docid, 1 if kind else 0))
            history.append((mid, sender, when, own))
            when += timedelta(minutes=rng.randint(5, 60 * 48))
            written += 1
            if in_file >= per_file:
                in_file = 0
    if handle:
        handle.close()
    with (out.parent / f"{out.name}-topics.txt").open("w") as f:
        for number, (title, words) in TOPICS.items():
            f.write(
                f"<top>\n<num> Number: {number}\n<title> {title}\n<desc> Description:\n"
                f"Messages about the {title}.\n<narr> Narrative:\nRelevant messages discuss the "
                f"{title} ({words}).\n</top>\n\n"
            )
    with (out.parent / f"{out.name}-qrels.txt").open("w") as f:
        for topic, docid, grade in qrels:
            f.write(f"{topic} 0 {docid} {grade}\n")
    with (out.parent / f"{out.name}-sensitivity.txt").open("w") as f:
        for docid, label in sensitive:  # docs/formats.md: "* 0 docno 0|1"
            f.write(f"* 0 {docid} {label}\n")
    return {
        "messages": written,
        "files": file_no,
        "people": population,
        "relevant": len(qrels),
        "sensitive": sum(label for _d, label in sensitive),
    }


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-file", type=int, default=5000)
    args = parser.parse_args()
    print(generate(args.out, args.messages, seed=args.seed, per_file=args.per_file))


if __name__ == "__main__":
    main()
