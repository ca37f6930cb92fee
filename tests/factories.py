"""Factories for the rows most tests need: topics, personas, and annotation projects whose
first round already holds its tasks. Projects are made through ``annotate.projects`` (the
service checks the annotators' role and opens the round), never by writing rows directly.
"""

import factory
from factory.django import DjangoModelFactory

from annotate import projects
from annotate.models import AnnotationProject, Document, Persona, Topic


class PersonaFactory(DjangoModelFactory):
    class Meta:
        model = Persona
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"Persona {n}")
    pain_points = "family matters"


class TopicFactory(DjangoModelFactory):
    class Meta:
        model = Topic
        django_get_or_create = ("collection", "number")

    number = factory.Sequence(lambda n: str(n + 1))
    title = factory.LazyAttribute(lambda t: f"topic {t.number}")


class ProjectFactory(factory.Factory):
    """``ProjectFactory(collection=, annotators=, documents=)``: one task per (topic, persona,
    document) in the first round, documents in the order given. Topics default to one new
    topic, personas to one new persona; every other keyword goes to ``project_create``."""

    class Meta:
        model = AnnotationProject

    name = factory.Sequence(lambda n: f"Project {n}")
    personas = factory.LazyFunction(lambda: [PersonaFactory()])
    topics = factory.LazyAttribute(lambda p: [TopicFactory(collection=p.collection)])

    @classmethod
    def _create(cls, model_class, *, documents=(), **kwargs):
        project = projects.project_create(**kwargs)
        documents = list(documents)
        if not documents:
            return project
        round_ = project.rounds.get()
        for topic in kwargs["topics"]:
            for persona in kwargs["personas"]:
                projects.project_tasks_add(
                    project=project,
                    round_=round_,
                    topic=topic,
                    persona=persona,
                    documents=documents,
                )
        return project


def new_documents(collection, name: str, n: int) -> list[Document]:
    """``n`` more messages in ``collection`` (docids ``name/0`` ...), each with the body of
    the collection's first message: documents for tasks, in bulk."""
    body = Document.objects.filter(collection=collection).first().body
    return Document.objects.bulk_create(
        Document(
            collection=collection,
            docid=f"{name}/{i}",
            subject=f"{name} {i}",
            body=body,
            content_hash=f"{name}-{i}",
        )
        for i in range(n)
    )
