import pytest
from django.urls import reverse

from annotate import roles
from annotate.models import AnnotationProject, Judgment, Persona, Task, Topic


def test_lead_creates_a_project_from_a_list_and_opens_a_training_round(
    client, users, sample_collection, make_user
):
    ann = make_user("judge1", roles.ANNOTATOR)
    topic = Topic.objects.create(collection=sample_collection, number="7", title="razor")
    persona = Persona.objects.create(name="P")
    docids = list(sample_collection.documents.order_by("id").values_list("docid", flat=True)[:3])
    client.force_login(users["lead"])
    response = client.post(
        reverse("project-new"),
        {
            "name": "Lead made",
            "collection": sample_collection.pk,
            "topics": [topic.pk],
            "personas": [persona.pk],
            "annotators": [ann.pk],
            "overlap": 1,
            "double_percent": 0,
            "round_kind": "production",
            "lease_minutes": 30,
            "relevance_rule": "majority",
            "guidelines": "Be careful.",
            "tasks-source": "list",
            "tasks-k": 20,
            "tasks-lines": "\n".join(f"7 {d}" for d in docids) + "\n7 nope\n8 x\nbad",
        },
    )
    project = AnnotationProject.objects.get(name="Lead made")
    assert response.status_code == 302
    assert project.relevance_rule == "majority"
    assert response["Location"] == reverse("judging-dashboard", args=[project.slug])
    assert Task.objects.filter(project=project).count() == 3
    page = client.get(response["Location"]).content.decode()
    assert "unknown document &#x27;nope&#x27;" in page
    assert "topic &#x27;8&#x27; is not in the project" in page
    response = client.post(
        reverse("round-new", args=[project.slug]),
        {
            "kind": "training",
            "tasks-source": "list",
            "tasks-k": 1,
            "tasks-lines": f"7 {docids[0]}",
        },
    )
    training = project.rounds.get(number=2)
    assert training.kind == "training"
    assert list(Task.objects.filter(round=training).values_list("required", flat=True)) == [1]
    assert not Judgment.objects.exists()


def test_project_form_refuses_topics_of_another_collection(client, users, sample_collection):
    from annotate.models import Collection

    other = Collection.objects.create(name="Other", slug="other")
    topic = Topic.objects.create(collection=other, number="1", title="x")
    client.force_login(users["lead"])
    response = client.post(
        reverse("project-new"),
        {
            "name": "Mixed",
            "collection": sample_collection.pk,
            "topics": [topic.pk],
            "personas": [Persona.objects.create(name="P").pk],
            "annotators": [users["annotator"].pk],
            "overlap": 1,
            "double_percent": 0,
            "round_kind": "production",
            "lease_minutes": 30,
            "relevance_rule": "higher",
            "tasks-source": "search",
            "tasks-k": 5,
        },
    )
    assert response.status_code == 200
    assert "Not in Test mail: 1" in response.content.decode()
    assert not AnnotationProject.objects.exists()


def test_only_leads_create_projects(client, users):
    for role in ("annotator", "archivist", "searcher"):
        client.force_login(users[role])
        assert client.get(reverse("project-new")).status_code == 404


def test_dashboard_title_is_plain_and_the_round_form_appears_once(client, users, make_project):
    project, _ = make_project()
    client.force_login(users["lead"])
    html = client.get(reverse("judging-dashboard", args=[project.slug])).content.decode()
    title = html.split("<title>", 1)[1].split("</title>", 1)[0]
    assert title.strip() == f"Dashboard · {project.name} · sasc"
    assert html.count("Open the next round") == 1


def test_a_round_can_be_limited_to_chosen_topics_and_personas(login, users, make_project, tmp_path):
    from annotate import projects
    from annotate import services as svc
    from annotate.models import Document, Persona, Topic

    project, _ann = make_project(n_tasks=0)
    topic = project.topics.get()
    other = Topic.objects.create(collection=project.collection, number="2", title="other")
    project.topics.add(other)
    second = Persona.objects.create(name="Rowan")
    project.personas.add(second)
    docs = list(Document.objects.order_by("docid").values_list("docid", flat=True)[:3])
    qrels = tmp_path / "q.txt"
    qrels.write_text("".join(f"{t} 0 {d} 1\n" for t in ("1", "2") for d in docs))
    assert svc.import_run(collection=project.collection, fmt="qrels-trec", path=qrels).ok
    client = login(users["lead"])
    client.post(
        reverse("round-new", args=[project.slug]),
        {
            "kind": "training",
            "tasks-source": "reference",
            "tasks-k": 5,
            "tasks-topics": [topic.pk],
            "tasks-personas": [second.pk],
        },
    )
    new_round = project.rounds.get(number=2)
    tasks = Task.objects.filter(round=new_round)
    assert tasks.count() == 3
    assert set(tasks.values_list("topic_id", "persona_id")) == {(topic.pk, second.pk)}
    foreign = Topic.objects.create(collection=project.collection, number="9", title="x")
    r = client.post(
        reverse("round-new", args=[project.slug]),
        {
            "kind": "training",
            "tasks-source": "reference",
            "tasks-k": 5,
            "tasks-topics": [foreign.pk],
        },
        follow=True,
    )
    assert "Choose a round kind" in r.content.decode()
    assert project.rounds.count() == 2
    with pytest.raises(ValueError, match="project's own topics"):
        projects.project_tasks_from_reference(project=project, round_=new_round, topics=[foreign])
