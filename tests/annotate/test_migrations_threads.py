"""The data migration that gives documents stored before threads their folder, threading
headers and thread keys."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("annotate", "0008_document_folder_thread")]
AFTER = [("annotate", "0009_backfill_threads_folders")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_backfills_documents_stored_before_threads():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    Collection = apps.get_model("annotate", "Collection")
    Document = apps.get_model("annotate", "Document")
    box = Collection.objects.create(name="Box", slug="box-migrated", kind="email")
    smart = Collection.objects.create(name="Cran", slug="cran-migrated", kind="smart")
    for docid, headers in (
        ("box/Inbox/1.eml", "Message-ID: <a@x>\nSubject: Plan"),
        ("box/Sent/2.eml", "Message-ID: <b@x>\nIn-Reply-To: <a@x>\nSubject: Re: Plan"),
        ("box/Sent/3.eml", "Message-ID: <c@x>\nSubject: Other"),
    ):
        Document.objects.create(
            collection=box,
            docid=docid,
            raw_headers=headers,
            message_id=headers.split()[1],
            subject=headers.rsplit(": ", 1)[1],
            content_hash=docid,
        )
    Document.objects.create(collection=smart, docid="1", subject="aero", content_hash="s")
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    Document = apps.get_model("annotate", "Document")
    docs = {d.docid: d for d in Document.objects.filter(collection__slug="box-migrated")}
    assert docs["box/Sent/2.eml"].in_reply_to == "a@x"
    assert docs["box/Sent/2.eml"].folder == "Sent"
    assert docs["box/Inbox/1.eml"].thread_key == docs["box/Sent/2.eml"].thread_key
    assert docs["box/Sent/3.eml"].thread_key not in ("", docs["box/Inbox/1.eml"].thread_key)
    # SMART records have no threads.
    assert Document.objects.get(collection__slug="cran-migrated").thread_key == ""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
