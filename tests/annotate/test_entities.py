"""Sensitive entities stored per document (issue 20): found at import, found again for a
persona's lexicon a lead saves, highlighted by kind with a legend on the judging page."""

import pytest
from django.test import override_settings
from django.urls import reverse

from annotate import roles
from annotate.entities import collection_entities_detect, lexicon_save
from annotate.models import Document, DocumentEntity, Lexicon


def test_the_import_stores_each_documents_entities(sample_collection):
    emails = DocumentEntity.objects.filter(document__collection=sample_collection, kind="email")
    assert emails.exists() and not emails.filter(persona__isnull=False).exists()
    e = emails.first()
    assert getattr(e.document, e.field)[e.start : e.end] == e.text


def test_documents_an_import_stored_before_it_failed_have_their_entities(
    collection, tmp_path, monkeypatch
):
    """An import that fails part-way keeps the batches it stored; their entities were never
    found (fresh-eye finding): detection ran only after a successful import, and the next
    import reads only ids above its own start. Now it runs when the import fails too."""
    from annotate import import_documents, services

    box = tmp_path / "box"
    box.mkdir()
    for n in range(5):
        (box / f"{n}.eml").write_text(
            f"From: a{n}@x.org\nSubject: s{n}\nMessage-ID: <m{n}@x>\n\n"
            f"Write to clerk{n}@bank.example about it.\n"
        )
    monkeypatch.setattr(import_documents, "BATCH", 2)
    write = import_documents.DocumentWriter._write
    calls = []

    def fail_third(self, batch):
        calls.append(len(batch))
        if len(calls) == 3:
            raise RuntimeError("the worker was stopped")
        return write(self, batch)

    monkeypatch.setattr(import_documents.DocumentWriter, "_write", fail_third)
    with pytest.raises(RuntimeError):
        services.import_run(collection=collection, fmt="emails", path=box)
    stored = Document.objects.filter(collection=collection)
    assert stored.count() == 4
    found = DocumentEntity.objects.filter(document__in=stored, kind="email", field="body")
    assert sorted(found.values_list("text", flat=True)) == [
        f"clerk{n}@bank.example" for n in range(4)
    ]


@override_settings(CELERY_TASK_ALWAYS_EAGER=True)
def test_a_lead_saves_a_lexicon_and_its_terms_are_found_for_that_persona(
    sample_collection, make_project, login, make_user
):
    from config.celery import app

    app.conf.task_always_eager = True
    try:
        project, (a, _b) = make_project(n_tasks=1)
        persona = project.personas.get()
        doc = Document.objects.get(pk=project.rounds.get().tasks.get().document_id)
        word = next(w for w in doc.body.split() if w.isalpha() and len(w) > 5)
        lead = login(make_user("lexlead", roles.LEAD))
        saved = lead.post(
            reverse("review-lexicons"),
            {"persona": persona.pk, "name": "pain points", "terms": f"# a comment\n{word}"},
        )
        assert saved.status_code == 302
        assert Lexicon.objects.get(persona=persona).terms.endswith(word)
        collection_entities_detect(collection_id=sample_collection.pk)  # what the worker does
        found = DocumentEntity.objects.filter(document=doc, kind="persona", persona=persona)
        assert found.exists() and found.first().text.lower() == word.lower()
        page = login(a).post(reverse("judge-next", args=[project.slug])).content.decode()
        assert 'class="ent ent-persona"' in page and "persona&#x27;s own term" in page
        assert 'class="entity-legend"' in page
    finally:
        app.conf.task_always_eager = False


def test_a_lexicon_without_a_name_is_refused(sample_collection, make_project):
    project, _users = make_project(n_tasks=1)
    with pytest.raises(ValueError, match="name"):
        lexicon_save(persona=project.personas.get(), name="  ", terms="x")


def test_the_lexicon_page_shows_every_term_and_their_count(db, login, make_user):
    """Fresh-eye finding: the box was 4 lines high, a long list was cut off from sight."""
    from annotate.models import Persona

    persona = Persona.objects.create(name="Donor")
    terms = "\n".join(f"term{i}" for i in range(30))
    Lexicon.objects.create(persona=persona, name="people", terms=terms)
    page = login(make_user("lexlead2", roles.LEAD)).get(reverse("review-lexicons")).content
    page = page.decode()
    assert "Terms (30)" in page and 'rows="31"' in page and "term29" in page


def test_entities_found_in_worker_processes_are_those_found_in_one(sample_collection, make_project):
    """The import's parallel path (``workers``) stores the same rows, persona terms included,
    and only for the documents above ``after_id``."""
    project, _users = make_project(n_tasks=1)
    Lexicon.objects.create(persona=project.personas.get(), name="words", terms="the\nand")

    def stored():
        return sorted(
            DocumentEntity.objects.filter(document__collection=sample_collection).values_list(
                "document_id", "persona_id", "field", "kind", "label", "start", "end", "text"
            ),
            key=str,
        )

    one = collection_entities_detect(collection_id=sample_collection.pk, chunk=7)
    expected = stored()
    assert one == len(expected) and any(row[1] for row in expected)
    DocumentEntity.objects.all().delete()
    two = collection_entities_detect(collection_id=sample_collection.pk, chunk=7, workers=2)
    assert (two, stored()) == (one, expected)
    ids = sorted(Document.objects.filter(collection=sample_collection).values_list("pk", flat=True))
    DocumentEntity.objects.all().delete()
    collection_entities_detect(collection_id=sample_collection.pk, after_id=ids[-3], workers=2)
    assert {row[0] for row in stored()} <= set(ids[-2:])
    assert stored() == [row for row in expected if row[0] in ids[-2:]]


def test_the_import_stores_the_names_of_the_collections_correspondents(sample_collection):
    """Names found with the gazetteer of every correspondent of the collection: Matthias Saou
    wrote one message of the sample and is named in another he is not a correspondent of."""
    found = DocumentEntity.objects.filter(
        document__collection=sample_collection, kind="name", persona__isnull=True
    ).select_related("document")
    by_doc = {}
    for e in found:
        assert getattr(e.document, e.field)[e.start : e.end] == e.text
        by_doc.setdefault(e.document.docid.rsplit("/", 1)[-1], set()).add(e.text)
    texts = set().union(*by_doc.values())
    assert {
        "Chris Kloiber",
        "Robert Elz",
        "Justin Shore",
        "Vipul Ved Prakash",
        "R. Kevin Oberman",  # display name "Kevin Oberman", signed with his initial
        "kevin lyda",  # the display name in lower case, signed so
        "kre",  # Robert Elz's address, alone on a line: his sign-off
    } <= texts
    assert "Matthias Saou" in by_doc["easy-ham-1-00283.eml"]
    reply = Document.objects.get(
        collection=sample_collection, docid__endswith="easy-ham-1-00283.eml"
    )
    assert "Saou" not in reply.from_header + reply.to_header + reply.cc_header
    # display names of lists and services give no names
    assert not texts & {"Customers", "FoRK", "guardian", "SpamAssassin", "FreshRPMs", "CDale"}


def test_names_are_offered_unticked_in_their_own_colour():
    from pathlib import Path

    from annotate.entities import KIND_WORDS, SUGGESTED

    assert "name" not in SUGGESTED and KIND_WORDS["name"] == "person's name"
    css = (Path(__file__).resolve().parents[2] / "static" / "sasc" / "app.css").read_text()
    assert ".ent-name {" in css
