"""Folders and thread keys on stored documents: set by every import, kept by re-runs,
backfilled for documents stored before they existed."""

from datetime import UTC, datetime

from django.core.management import call_command

from annotate import services
from annotate.models import Collection, Document
from annotate.threads import collection_threading_backfill, folder_from_docid
from tests.msgwriter import MsgMessage, build_msg


def _eml(subject, mid, *, parent="", day=1):
    text = (
        f"From: ann@example.org\nTo: bob@example.org\nSubject: {subject}\n"
        f"Message-ID: <{mid}>\nDate: Mon, {day} May 2001 10:00:00 +0000\n"
    )
    if parent:
        text += f"In-Reply-To: <{parent}>\nReferences: <{parent}>\n"
    return (text + f"\nBody of {subject}\n").encode()


def _collection():
    return Collection.objects.create(name="Box", slug="box")


def _keys(collection):
    return dict(Document.objects.filter(collection=collection).values_list("subject", "thread_key"))


def test_an_import_stores_folders_and_one_thread_key_per_thread_across_formats(db, tmp_path):
    root = tmp_path / "box"
    (root / "Inbox").mkdir(parents=True)
    (root / "Sent").mkdir()
    (root / "Inbox" / "1.eml").write_bytes(_eml("Budget", "b1@x", day=1))
    (root / "Sent" / "2.eml").write_bytes(_eml("Re: Budget", "b2@x", parent="b1@x", day=2))
    # An Outlook reply filed elsewhere, linked only by its subject.
    (root / "Inbox" / "3.msg").write_bytes(
        build_msg(MsgMessage(subject="RE: Budget", body="ok", message_id="<b3@x>"))
    )
    (root / "Inbox" / "4.eml").write_bytes(_eml("Lunch", "l1@x", day=3))
    collection = _collection()
    report = services.import_run(collection=collection, fmt="emails", path=root)
    assert report.ok and report.created == 4
    docs = {d.subject: d for d in Document.objects.filter(collection=collection)}
    assert docs["Budget"].folder == "Inbox" and docs["Re: Budget"].folder == "Sent"
    assert docs["Re: Budget"].in_reply_to == "b1@x"
    assert docs["Re: Budget"].references == ["b1@x"]
    keys = _keys(collection)
    assert keys["Budget"] == keys["Re: Budget"] == keys["RE: Budget"] != keys["Lunch"]
    assert all(len(k) == 32 for k in keys.values())
    # Maildir++ and EAXS beside them; then a second run of everything stores nothing new.
    (root / "mail" / ".Sent" / "cur").mkdir(parents=True)
    for sub in ("cur", "new", "tmp"):
        (root / "mail" / sub).mkdir(exist_ok=True)
    (root / "mail" / ".Sent" / "new").mkdir()
    (root / "mail" / ".Sent" / "tmp").mkdir()
    (root / "mail" / ".Sent" / "cur" / "9.host:2,S").write_bytes(
        _eml("Re: Lunch", "l2@x", parent="l1@x", day=4)
    )
    services.import_run(collection=collection, fmt="emails", path=root)
    stored = list(Document.objects.order_by("pk").values_list("docid", "folder", "thread_key"))
    assert ("box/mail/.Sent/9.host", "mail/Sent", keys["Lunch"]) in stored
    again = services.import_run(collection=collection, fmt="emails", path=root)
    assert (again.created, again.duplicates) == (0, 0)
    assert list(Document.objects.order_by("pk").values_list("docid", "folder", "thread_key")) == (
        stored
    )


def test_a_later_import_links_into_stored_threads_and_a_rerun_adds_nothing(db, tmp_path):
    collection = _collection()
    first = tmp_path / "first"
    first.mkdir()
    (first / "reply.eml").write_bytes(_eml("Re: Plan", "p2@x", parent="p1@x", day=2))
    (first / "other.eml").write_bytes(_eml("Other", "o@x"))
    services.import_run(collection=collection, fmt="emails", path=first)
    second = tmp_path / "second"
    second.mkdir()
    (second / "root.eml").write_bytes(_eml("Plan", "p1@x", day=1))
    services.import_run(collection=collection, fmt="emails", path=second)
    keys = _keys(collection)
    assert keys["Plan"] == keys["Re: Plan"] != keys["Other"]
    before = list(Document.objects.order_by("pk").values_list("pk", "thread_key", "folder"))
    version = Collection.objects.get(pk=collection.pk).version
    for path in (first, second):
        report = services.import_run(collection=collection, fmt="emails", path=path)
        assert report.created == 0
    after = list(Document.objects.order_by("pk").values_list("pk", "thread_key", "folder"))
    assert after == before
    assert Collection.objects.get(pk=collection.pk).version == version


def test_documents_stored_before_threads_are_backfilled_from_their_headers(db):
    collection = _collection()
    common = dict(collection=collection, content_hash="h", body="b")
    Document.objects.create(
        docid="box/Inbox/1.eml",
        subject="Budget",
        message_id="<b1@x>",
        raw_headers="Message-ID: <b1@x>\nSubject: Budget",
        date=datetime(2001, 5, 1, tzinfo=UTC),
        **common,
    )
    Document.objects.create(
        docid="box/Archive/Sent.mbox#3",
        subject="Re: Budget",
        message_id="<b2@x>",
        raw_headers="Message-ID: <b2@x>\nIn-Reply-To: <b1@x>\nReferences:\n <b0@x>\n <b1@x>",
        **common,
    )
    call_command("assign_threads", "box")
    two, one = Document.objects.order_by("docid")
    assert (two.folder, two.in_reply_to, two.references) == (
        "Archive/Sent",
        "b1@x",
        ["b0@x", "b1@x"],
    )
    assert one.folder == "Inbox"
    assert one.thread_key == two.thread_key != ""
    # A second run changes nothing.
    assert collection_threading_backfill(collection=collection) == 0


def test_folders_are_read_back_from_the_doc_ids_of_every_importer():
    assert folder_from_docid("box/Inbox/Projects/1.eml") == "Inbox/Projects"
    assert folder_from_docid("box/1.eml") == ""
    assert folder_from_docid("Sent.mbox#4") == "Sent"
    assert folder_from_docid("maildir/.Sent.2001/cur/1.host:2,S") == "Sent/2001"
    assert folder_from_docid("tb/Archives.sbd/2001#2") == "Archives/2001"
    assert folder_from_docid("data.jsonl#L3") == ""
