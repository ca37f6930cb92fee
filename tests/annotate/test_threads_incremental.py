"""An import threads only its new messages against the stored threads they join
(``annotate.threads.collection_threads_extend``), and the result is the one a full re-thread
of the collection gives."""

import random

from annotate import services
from annotate.models import Collection, Document, ThreadLink
from annotate.threads import _FIELDS, _inputs, collection_threads_assign
from core.parsing.mail_threads import assign_threads


def _eml(n, subject, *, sender, to, mid="", parents=(), day=1):
    text = f"From: {sender}@example.org\nTo: {to}@example.org\nSubject: {subject}\n"
    text += f"Date: Mon, {day} May 2001 10:{n % 60:02d}:00 +0000\n"
    if mid:
        text += f"Message-ID: <{mid}>\n"
    if parents:
        text += f"In-Reply-To: <{parents[-1]}>\n"
        text += "References: " + " ".join(f"<{p}>" for p in parents) + "\n"
    return (text + f"\nMessage {n}: {subject}\n").encode()


def _full_rethread(collection) -> dict:
    """What ``assign_threads`` gives on every stored document, without writing it."""
    rows = Document.objects.filter(collection=collection).values_list(*_FIELDS)
    return assign_threads(_inputs(rows, {}))


def _stored(collection) -> dict:
    return dict(Document.objects.filter(collection=collection).values_list("pk", "thread_key"))


def _import(collection, folder):
    report = services.import_run(collection=collection, fmt="emails", path=folder)
    assert report.ok, report.summary()
    return report


def test_a_reply_imported_later_joins_the_earlier_thread_and_a_parent_its_replies(db, tmp_path):
    collection = Collection.objects.create(name="Box", slug="box")
    for name, files in {
        "one": {"root.eml": _eml(1, "Plan", sender="ann", to="bob", mid="p1@x")},
        "two": {
            "r2.eml": _eml(2, "Re: Plan", sender="bob", to="ann", mid="p2@x", parents=["p1@x"])
        },
        # a reply to a message not stored yet, then that message
        "three": {"r4.eml": _eml(4, "Re: Trip", sender="bob", to="ann", parents=["t1@x", "t3@x"])},
        "four": {"t3.eml": _eml(3, "Re: Trip", sender="ann", to="bob", mid="t3@x")},
        # two unrelated "Minutes" of the same people, then a reply by subject only
        "five": {
            "m1.eml": _eml(5, "Minutes", sender="cal", to="dan", mid="m1@x"),
            "m2.eml": _eml(6, "Minutes", sender="dan", to="cal", mid="m2@x"),
        },
        "six": {"m3.eml": _eml(7, "RE: Minutes", sender="cal", to="eve", mid="m3@x")},
    }.items():
        folder = tmp_path / name
        folder.mkdir()
        for file, data in files.items():
            (folder / file).write_bytes(data)
        _import(collection, folder)
        assert _stored(collection) == _full_rethread(collection)
    keys = dict(Document.objects.filter(collection=collection).values_list("body", "thread_key"))
    key = {body.split(":")[0]: k for body, k in keys.items()}
    assert key["Message 1"] == key["Message 2"]
    assert key["Message 3"] == key["Message 4"] != key["Message 1"]
    assert key["Message 5"] == key["Message 6"] == key["Message 7"] != key["Message 1"]
    # every document has its links, and a full rebuild changes no key
    linked = set(ThreadLink.objects.values_list("document_id", flat=True))
    assert linked == set(_stored(collection))
    assert collection_threads_assign(collection=collection) == 0


def test_threading_import_by_import_equals_a_full_rethread_on_random_mailboxes(db, tmp_path):
    """Property-style: random mailboxes (replies to stored, later or missing messages, no
    Message-ID, shared and separate subjects and people) imported in random batches."""
    subjects = ["Minutes", "Re: Minutes", "Salary", "Fwd: Salary", "AW: Plan", "Plan", ""]
    people = ["ann", "bob", "cal", "dan"]
    for seed in range(6):
        rng = random.Random(seed)
        collection = Collection.objects.create(name=f"Box {seed}", slug=f"box-{seed}")
        ids = [f"{seed}-{i}@x" for i in range(60)]
        batches = [tmp_path / f"{seed}-{b}" for b in range(4)]
        for folder in batches:
            folder.mkdir()
        for n in range(45):
            parents = rng.sample(ids, rng.choice([0, 0, 1, 2]))  # some never stored
            mid = ids[n] if rng.random() < 0.9 else ""
            data = _eml(
                n,
                rng.choice(subjects),
                sender=rng.choice(people),
                to=rng.choice(people),
                mid=mid,
                parents=parents,
                day=rng.randint(1, 28),
            )
            (rng.choice(batches) / f"{n}.eml").write_bytes(data)
        for folder in batches:
            _import(collection, folder)
            assert _stored(collection) == _full_rethread(collection), seed
        threads = set(_stored(collection).values())
        assert 1 < len(threads) < 45  # some messages were joined, not all into one
