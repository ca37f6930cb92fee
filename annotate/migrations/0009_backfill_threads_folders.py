"""Fill folder, In-Reply-To and References of documents stored before they were kept (from
their raw headers and doc ids) and give every email collection its thread keys.

``manage.py assign_threads`` does the same on demand (after a restore, or to re-thread)."""

from django.db import migrations


def backfill(apps, schema_editor):
    from annotate.threads import collection_threading_backfill

    Collection = apps.get_model("annotate", "Collection")
    Document = apps.get_model("annotate", "Document")
    for collection in Collection.objects.filter(kind="email"):
        collection_threading_backfill(collection=collection, model=Document, link_model=None)


class Migration(migrations.Migration):
    dependencies = [
        ("annotate", "0008_document_folder_thread"),
    ]

    operations = [
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=True),
    ]
