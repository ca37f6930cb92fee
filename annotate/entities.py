"""Sensitive entities of documents, stored per document (issue 20): the worker runs the
recognisers (``core.recognisers``) at import and again when a persona's lexicon changes."""

from collections import Counter
from typing import NamedTuple

from django.db import transaction
from django.db.models import Q

from annotate.bulk import rows_insert, statistics_refresh
from annotate.jobs import queue_on_commit
from annotate.models import Collection, Document, DocumentEntity, Lexicon, Persona
from core import names, recognisers
from core.highlight import highlight_entities


def persona_lexicons() -> dict[int, dict[str, list[str]]]:
    """``{persona id: {lexicon name: terms}}`` of every persona's own lexicons."""
    out: dict[int, dict[str, list[str]]] = {}
    for lexicon in Lexicon.objects.all():
        terms = recognisers.lexicon_terms(lexicon.terms)
        if terms:
            out.setdefault(lexicon.persona_id, {})[lexicon.name] = terms
    return out


def _texts(document: Document) -> list[tuple]:
    return [(document.pk, f, getattr(document, f)) for f in DocumentEntity.Field.values]


def _rows(found) -> list[DocumentEntity]:
    return [
        DocumentEntity(
            document_id=doc_id,
            persona_id=persona_id,
            field=field,
            kind=e.kind,
            label=e.label,
            start=e.start,
            end=e.end,
            text=e.text[:1000],
        )
        for doc_id, persona_id, field, e in found
    ]


def collection_gazetteer(collection_id: int) -> names.Gazetteer:
    """The names of every correspondent of a collection (``core.names``): one query over
    its messages' From/To/Cc/Bcc headers, read as it streams (the display names are in the
    headers; ``Document.addresses`` keeps the addresses only)."""
    rows = Document.objects.filter(collection_id=collection_id).values_list(
        "from_header", "to_header", "cc_header", "bcc_header"
    )
    gazetteer = names.gazetteer_of_headers(rows.iterator(chunk_size=5000))
    # which of its words the collection writes as everyday words: read on a sample of
    # bodies (the first 2,000 by id: a few MB, well under a second)
    bodies = Document.objects.filter(collection_id=collection_id).order_by("id")
    sample = bodies.values_list("body", flat=True)[:2000]
    return gazetteer.gated(names.ordinary_words(sample.iterator(chunk_size=500)))


def collection_entities_detect(
    *, collection_id: int, chunk: int = 500, after_id: int = 0, workers: int = 1
) -> int:
    """Recompute the stored entities of the documents of a collection with an id above
    ``after_id`` (0: every document; an import passes the largest id before it, so only its
    new documents are read); return how many. ``workers`` > 1: the recognisers (regular
    expressions, about a millisecond a message) run in that many processes while this one
    writes. Idempotent: each chunk's rows are replaced in one transaction.

    Person names: the gazetteer of every correspondent of the collection (not only of the
    new documents) is built once here and sent once to each worker."""
    collection = Collection.objects.get(pk=collection_id)
    lexicons = persona_lexicons()
    gazetteer = collection_gazetteer(collection.pk)
    docs = (
        Document.objects.filter(collection=collection).order_by("id").only("id", "subject", "body")
    )

    def jobs():
        last = after_id
        while batch := list(docs.filter(id__gt=last)[:chunk]):
            last = batch[-1].pk
            yield [t for d in batch for t in _texts(d)], lexicons

    def store(job, found) -> int:
        rows = _rows(found)
        with transaction.atomic():
            DocumentEntity.objects.filter(document_id__in={k for k, _f, _t in job[0]}).delete()
            rows_insert(DocumentEntity, rows, batch_size=2000)
        return len(rows)

    if workers <= 1:
        total = sum(store(job, names.texts_entities(job, gazetteer)) for job in jobs())
        statistics_refresh(DocumentEntity, rows=total)
        return total
    import multiprocessing

    # forkserver, not fork: see annotate.import_emails._iter_parallel (a JVM's threads)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["core.recognisers", "core.names"])
    total, pending = 0, []
    with context.Pool(workers, initializer=names.install, initargs=(gazetteer,)) as pool:
        for job in jobs():  # at most ``workers`` chunks ahead of the writes
            pending.append((job, pool.apply_async(names.texts_entities, (job,))))
            if len(pending) > workers:
                done, result = pending.pop(0)
                total += store(done, result.get())
        for done, result in pending:
            total += store(done, result.get())
    statistics_refresh(DocumentEntity, rows=total)
    return total


def entities_detect_queue(*, collection: Collection) -> None:
    """Ask the worker to recompute a collection's entities once the transaction commits."""
    queue_on_commit("annotate.tasks.entities_detect_task", collection.pk, robust=True)


def lexicon_save(*, persona: Persona, name: str, terms: str, lexicon: Lexicon | None = None):
    """Create or change a persona's lexicon and recompute every collection's entities."""
    name = name.strip()
    if not name:
        raise ValueError("a lexicon needs a name")
    if len(terms) > 100_000:
        raise ValueError("the terms are longer than 100,000 characters")
    with transaction.atomic():
        if lexicon is None:
            lexicon = Lexicon(persona=persona)
        lexicon.name, lexicon.terms = name[:100], terms
        lexicon.save()
        for collection in Collection.objects.all():
            entities_detect_queue(collection=collection)
    return lexicon


def entity_counts(*, collection: Collection) -> dict[str, dict[str, int]]:
    """``{docid: {kind: count}}`` of the stored personal-data entities of a collection (the
    classifier's ``entity:KIND`` features; a persona's own terms are left out, so the
    features are the same for every persona)."""
    out: dict[str, dict[str, int]] = {}
    rows = DocumentEntity.objects.filter(
        document__collection=collection, persona__isnull=True
    ).values_list("document__docid", "kind")
    for docid, kind in rows.iterator():
        counts = out.setdefault(docid, {})
        counts[kind] = counts.get(kind, 0) + 1
    return out


class EntityView(NamedTuple):
    """What a page shows of a document's entities: the body with them marked, a legend of
    ``(kind, words, count)`` and the entities themselves (``DocumentEntity`` rows)."""

    highlighted_body: str
    legend: list[tuple[str, str, int]]
    entities: list


def document_entities(*, document: Document, persona: Persona | None) -> list[DocumentEntity]:
    """The stored entities of a document: personal data and the persona's own terms."""
    rows = DocumentEntity.objects.filter(document=document)
    rows = (
        rows.filter(Q(persona__isnull=True) | Q(persona=persona))
        if persona
        else rows.filter(persona__isnull=True)
    )
    return list(rows.order_by("field", "start"))


def document_entity_view(
    *, document: Document, persona: Persona | None, stems=frozenset(), stem=None
) -> EntityView:
    """The body with its entities marked by kind (and the query's words outside them)."""
    found = document_entities(document=document, persona=persona)
    body = [e for e in found if e.field == DocumentEntity.Field.BODY]
    marked = highlight_entities(document.body, body, stems, stem, labels=recognisers.KINDS)
    counts = Counter(e.kind for e in body)
    legend = [(k, words, counts[k]) for k, words in recognisers.KINDS.items() if counts[k]]
    return EntityView(marked, legend, found)


KIND_WORDS = recognisers.KINDS
# Suggested for redaction at once (ticked): numbers and dates found with a checksum or a
# context word; addresses, phones, emails (in mail, mostly senders and lists), people's names
# (a correspondent's name is often the point of keeping a message) and the lexicons' words
# are offered unticked, for the archivist to judge.
SUGGESTED = frozenset({"card", "iban", "account", "national_id", "dob"})


def personas_with_lexicons() -> list[Persona]:
    """Every persona by name, with its lexicons (prefetched)."""
    return list(Persona.objects.prefetch_related("lexicons").order_by("name"))


def lexicon_target(
    *, persona_id: int, lexicon_id: int | None = None
) -> tuple[Persona, Lexicon | None] | None:
    """The persona a lead's lexicon form names and, with ``lexicon_id``, its lexicon to
    change; None when either is not found (a lexicon of another persona is not found)."""
    persona = Persona.objects.filter(pk=persona_id).first()
    if persona is None:
        return None
    if lexicon_id is None:
        return persona, None
    lexicon = Lexicon.objects.filter(pk=lexicon_id, persona=persona).first()
    return None if lexicon is None else (persona, lexicon)
