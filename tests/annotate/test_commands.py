import pytest
from django.core.management import CommandError, call_command

from annotate.models import Collection, Job
from tests.conftest import FIXTURES, SAMPLE


def test_import_data_records_a_job_and_fails_on_errors(db, tmp_path, capsys):
    box = tmp_path / "box"
    box.mkdir()
    (box / "ok.eml").write_bytes((FIXTURES / "emails" / "edge" / "xss.eml").read_bytes())
    (box / "bad.eml").write_bytes(b"")
    with pytest.raises(CommandError, match="could not be imported"):
        call_command("import_data", "emails", str(box), "--create", "Command test")
    out = capsys.readouterr().out
    assert "1 created" in out and "error: box/bad.eml: empty file" in out
    collection = Collection.objects.get(slug="command-test")
    job = Job.objects.get(collection=collection, kind=Job.Kind.IMPORT)
    assert job.status == Job.Status.FAILED and job.report["created"] == 1
    assert job.report["issues"][0]["reason"] == "empty file"


def test_import_data_needs_an_existing_collection_or_create(db):
    with pytest.raises(CommandError, match="no collection 'nope'"):
        call_command("import_data", "emails", str(SAMPLE), "--collection", "nope")
    with pytest.raises(CommandError, match="no persona named 'Nobody'"):
        Collection.objects.create(name="c", slug="c")
        call_command("import_data", "sensitivity", "x", "--collection", "c", "--persona", "Nobody")


def test_import_data_succeeds_quietly_on_good_input(db, capsys):
    call_command("import_data", "emails", str(SAMPLE), "--create", "Good")
    assert "39 created" in capsys.readouterr().out
    assert Job.objects.get(kind=Job.Kind.IMPORT).status == Job.Status.SUCCEEDED


def test_detect_entities_finds_them_again_in_stored_documents(sample_collection, capsys):
    """After an upgrade of the recognisers: stored documents get the entities the new ones
    find (person names among them), and nothing else of theirs changes."""
    from annotate.models import Document, DocumentEntity

    DocumentEntity.objects.filter(document__collection=sample_collection).delete()
    bodies = list(Document.objects.order_by("id").values_list("body", flat=True))
    call_command("detect_entities", sample_collection.slug, "--workers", "1")
    assert "entities found in" in capsys.readouterr().out
    stored = DocumentEntity.objects.filter(document__collection=sample_collection)
    assert stored.filter(kind="name", text="Chris Garrigues").exists()
    assert stored.filter(kind="email").exists()
    assert list(Document.objects.order_by("id").values_list("body", flat=True)) == bodies
