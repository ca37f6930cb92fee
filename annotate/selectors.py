"""Reads: every query a view, API or task needs, with role checks in one place."""

from collections.abc import Iterator

from django.db.models import Count, Prefetch, QuerySet

from annotate import roles
from annotate.models import Attachment, Collection, Document, Job, Persona, Topic


def document_text(subject: str, body: str, attachment_texts: list[str]) -> str:
    """Return the text indexed for a document: subject, body and attachment text."""
    return "\n\n".join(part for part in (subject, body, *attachment_texts) if part)


def collection_index_documents(*, collection: Collection, chunk: int = 1000) -> Iterator[tuple]:
    """Yield ``(docid, text)`` for every document of a collection, in a stable order."""
    attachment_texts: dict[int, list[str]] = {}
    for doc_id, text in (
        Attachment.objects.filter(document__collection=collection, is_text=True)
        .exclude(text="")
        .order_by("document_id", "position")
        .values_list("document_id", "text")
        .iterator(chunk_size=chunk)
    ):
        attachment_texts.setdefault(doc_id, []).append(text)
    rows = (
        Document.objects.filter(collection=collection)
        .order_by("id")
        .values_list("id", "docid", "subject", "body")
        .iterator(chunk_size=chunk)
    )
    for pk, docid, subject, body in rows:
        yield docid, document_text(subject, body, attachment_texts.get(pk, []))


def collections_for_user(user) -> QuerySet[Collection]:
    """Return the collections a user may browse (leads and archivists: all)."""
    if roles.has_role(user, roles.LEAD, roles.ARCHIVIST):
        return Collection.objects.annotate(
            document_count=Count("documents", distinct=True),
            topic_count=Count("topics", distinct=True),
        )
    return Collection.objects.none()


def documents_for_user(user, *, collection: Collection | None = None) -> QuerySet[Document]:
    """Return the documents a user may open.

    Leads and archivists see whole collections. Annotators will see the documents of their
    own tasks and searchers only released documents (later issues); until then, nothing.
    """
    qs = Document.objects.none()
    if roles.has_role(user, roles.LEAD, roles.ARCHIVIST):
        qs = Document.objects.all()
    if collection is not None:
        qs = qs.filter(collection=collection)
    return qs


def document_get(*, user, pk: int, collection: Collection | None = None) -> Document | None:
    """Return one document with its attachments if the user may open it, else None."""
    return (
        documents_for_user(user, collection=collection)
        .select_related("collection")
        .prefetch_related(Prefetch("attachments", queryset=Attachment.objects.order_by("position")))
        .filter(pk=pk)
        .first()
    )


def topics_for_user(user, *, collection: Collection | None = None) -> QuerySet[Topic]:
    """Return topics visible to the user (every role that judges, reviews or leads)."""
    if not roles.has_role(user, roles.LEAD, roles.ARCHIVIST, roles.ANNOTATOR):
        return Topic.objects.none()
    qs = Topic.objects.select_related("collection")
    return qs.filter(collection=collection) if collection is not None else qs


def personas_for_user(user) -> QuerySet[Persona]:
    """Return personas visible to the user (they are shown to annotators and archivists)."""
    if not roles.has_role(user, roles.LEAD, roles.ARCHIVIST, roles.ANNOTATOR):
        return Persona.objects.none()
    return Persona.objects.all()


def collection_jobs(*, collection: Collection, limit: int = 20) -> list[Job]:
    """Return the latest import and index jobs of a collection."""
    return list(Job.objects.filter(collection=collection).order_by("-created_at")[:limit])


def collection_stats(*, collection: Collection) -> dict:
    """Return the counts shown on a collection page."""
    docs = Document.objects.filter(collection=collection)
    return {
        "documents": docs.count(),
        "attachments": Attachment.objects.filter(document__collection=collection).count(),
        "partly_decoded": docs.exclude(decode_problems=[]).count(),
        "duplicates_seen": sum(
            len(d)
            for d in docs.exclude(duplicate_docids=[]).values_list("duplicate_docids", flat=True)
        ),
        "topics": Topic.objects.filter(collection=collection).count(),
        "qrels": collection.topics.aggregate(n=Count("reference_qrels"))["n"],
    }
