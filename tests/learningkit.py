"""A generated collection for the active-learning tests, an annotator answering from its
truth, and a plan on it for the tests with a real worker (``plan_setup``)."""

import random
import uuid

import pytest
from django.urls import reverse
from django.utils import timezone

from annotate import judgments, roles, services
from annotate.models import Collection, Document, Task
from ranking import learning_plans, learning_state, learning_step
from ranking.services import index_build
from tests.factories import PersonaFactory, ProjectFactory, TopicFactory

TOPIC_WORDS = ["turbine", "blade", "cooling", "film", "holes"]
OTHER = [
    "compiler",
    "parser",
    "grammar",
    "syntax",
    "memory",
    "cache",
    "sorting",
    "records",
    "tape",
    "storage",
    "query",
    "index",
    "matrix",
    "inversion",
    "eigenvalue",
    "orbit",
    "satellite",
    "radar",
    "antenna",
    "queue",
    "scheduling",
    "printer",
    "library",
    "catalog",
    "network",
    "packet",
    "routing",
    "census",
    "survey",
    "weather",
    "pressure",
    "wind",
]


def generated_collection(tmp_path, n=160, relevant=20) -> tuple[Collection, set[str]]:
    """``n`` SMART documents; the first ``relevant`` (shuffled ids) are about the topic."""
    rng = random.Random(7)
    ids = list(range(1, n + 1))
    rng.shuffle(ids)
    truth = {str(i) for i in ids[:relevant]}
    lines = []
    for i in range(1, n + 1):
        words = rng.sample(OTHER, 8)
        if str(i) in truth:
            words += rng.sample(TOPIC_WORDS, 3)
        elif i % 9 == 0:  # a few distractors share one topic word
            words += [rng.choice(TOPIC_WORDS)]
        lines += [f".I {i}", ".T", " ".join(words[:4]), ".W", " ".join(words) + " ."]
    path = tmp_path / "gen.all"
    path.write_text("\n".join(lines) + "\n")
    c = Collection.objects.create(name="Generated", slug="generated", kind="smart")
    assert services.import_run(collection=c, fmt="smart", path=path).ok
    index_build(collection_id=c.pk)
    c.refresh_from_db()
    return c, truth


def judge_next(project, annotator, truth, sensitive=frozenset()) -> Task | None:
    """Claim the next task and answer it from the truth, as a careful annotator would
    (``sensitive``: the docids the persona would not want shown)."""
    assignment = judgments.task_claim(user=annotator, project=project)
    if assignment is None:
        return None
    task = Task.objects.select_related("document").get(pk=assignment.task_id)
    judgments.judgment_submit(
        user=annotator,
        task_id=task.pk,
        idempotency_key=f"k{task.pk}",
        answers=judgments.Answers(
            relevance=2 if task.document.docid in truth else 0,
            persona_sensitive="yes" if task.document.docid in sensitive else "no",
            personal_sensitive="no",
        ),
        active_seconds=3.0,
        started_at=assignment.leased_at,
    )
    return task


def queued_count(plan) -> int:
    return len(learning_state.plan_state(plan).queued)


def judge_one_through_api(client, project, truth) -> int:
    r = client.post(reverse("api-task-next", args=[project.slug]))
    assert r.status_code == 200, (r.status_code, r.content[:300])
    task = r.json()
    grade = 2 if task["document"]["docid"] in truth else 0
    r = client.post(
        reverse("api-judgment-submit", args=[task["task"]]),
        {
            "relevance": grade,
            "persona_sensitive": "no",
            "personal_sensitive": "no",
            "comment": "",
            "active_seconds": 2.0,
            "started_at": timezone.now().isoformat(),
        },
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex,
    )
    assert r.status_code == 201, r.content[:300]
    return grade


def learning_project(tmp_path, annotator, name: str = "Learning"):
    """The generated collection with one topic about turbine blade cooling and a project on
    it for ``annotator`` (no tasks yet: a plan adds them): (project, topic, truth)."""
    collection, truth = generated_collection(tmp_path)
    topic = TopicFactory(collection=collection, number="1", title="turbine blade cooling")
    project = ProjectFactory(
        name=name,
        collection=collection,
        personas=[PersonaFactory(name="Donor")],
        topics=[topic],
        annotators=[annotator],
    )
    return project, topic, truth


def seed_two_and_two(project, topic, truth) -> None:
    """Mark two relevant and two not relevant documents of the project's collection as the
    topic's seeds (the first of each by docid)."""
    docs = {d.docid: d for d in Document.objects.filter(collection=project.collection)}
    for docid in sorted(truth)[:2] + sorted(set(docs) - truth)[:2]:
        learning_plans.topic_seed_mark(
            topic=topic, document=docs[docid], relevance=int(docid in truth)
        )


def plan_seeded_and_judged(project, topic, truth, annotator, *, budget: int, judged: int = 10):
    """A collection-wide plan on ``topic`` seeded with two relevant and two not relevant
    documents, stepped once and ``judged`` of its tasks judged by ``annotator`` (then stepped
    again)."""
    from ranking.models import LearningPlan

    seed_two_and_two(project, topic, truth)
    plan = learning_plans.learning_plan_create(
        project=project,
        topic=topic,
        budget=budget,
        candidates=LearningPlan.Candidates.COLLECTION,
        batch_size=5,
    )
    learning_step.learning_step(plan_id=plan.pk)
    for _ in range(judged):
        judge_next(project, annotator, truth)
    learning_step.learning_step(plan_id=plan.pk)
    return plan


def judge_until_budget_spent(project, plan, annotator, truth, *, rounds: int = 400):
    """Judge the plan's tasks (stepping it whenever nothing is queued) until its check sample
    is judged and the review has spent the budget, then step once more; return its state."""
    for _ in range(rounds):
        state = learning_state.plan_state(plan)
        if not state.check_queued and state.reviewed >= plan.budget:
            break
        if judge_next(project, annotator, truth) is None:
            learning_step.learning_step(plan_id=plan.pk)
    learning_step.learning_step(plan_id=plan.pk)
    return learning_state.plan_state(plan)


@pytest.fixture
def plan_setup(worker_env, tmp_path, make_user, client):
    annotator = make_user("al-worker-annotator", roles.ANNOTATOR)
    project, topic, truth = learning_project(tmp_path, annotator, name="Worker learning")
    seed_two_and_two(project, topic, truth)
    client.force_login(annotator)
    return project, topic, truth, client
