"""The judging page's progress is read from counters (models.BatchCount, JudgedCount) kept in
the transactions that add tasks and store judgments (issue 36): they must always equal a
recount from the rows, and what one judgment reads must not grow with the project."""

import uuid
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Count, Sum
from django.utils import timezone

from annotate import judgments, projects, selectors
from annotate.models import Assignment, BatchCount, Document, JudgedCount, Judgment, Round, Task
from tests.conftest import ANSWERS
from tests.factories import PersonaFactory, ProjectFactory, TopicFactory, new_documents
from tests.stormkit import run_threads


def recount() -> tuple[dict, dict]:
    """The counters as the rows say they should be."""
    batches = {
        (r["round_id"], r["topic_id"], r["persona_id"]): (r["n"], r["need"])
        for r in Task.objects.values("round_id", "topic_id", "persona_id").annotate(
            n=Count("id"), need=Sum("required")
        )
    }
    judged = Counter(
        Judgment.objects.values_list(
            "task__round_id", "task__topic_id", "task__persona_id", "annotator_id"
        )
    )
    return batches, dict(judged)


def counters() -> tuple[dict, dict]:
    batches = {
        (b.round_id, b.topic_id, b.persona_id): (b.tasks, b.required)
        for b in BatchCount.objects.all()
    }
    judged = {
        (c.round_id, c.topic_id, c.persona_id, c.annotator_id): c.judged
        for c in JudgedCount.objects.all()
        if c.judged
    }
    return batches, judged


def judge(user, project, n, skip=()):
    """Claim and judge up to n tasks as the page does; return how many were judged."""
    done = 0
    for _ in range(n):
        a = judgments.task_claim(user=user, project=project, skip_task_ids=tuple(skip))
        if a is None:
            break
        judgments.judgment_submit(
            user=user,
            task_id=a.task_id,
            idempotency_key=uuid.uuid4().hex,
            answers=judgments.Answers(**ANSWERS),
            active_seconds=3,
            started_at=timezone.now() - timedelta(seconds=3),
        )
        done += 1
    return done


@pytest.fixture
def mixed(db, sample_collection, make_user):
    """Two topics, two personas, a training round and a production round with double
    judging, tasks added in several calls (some documents twice)."""
    from annotate import roles

    users = [make_user(f"c{i}", roles.ANNOTATOR) for i in range(3)]
    docs = list(Document.objects.filter(collection=sample_collection).order_by("id"))
    topics = [TopicFactory(collection=sample_collection, number=str(n)) for n in (1, 2)]
    personas = [PersonaFactory(name="P1"), PersonaFactory(name="P2")]
    project = ProjectFactory(
        collection=sample_collection,
        topics=topics,
        personas=personas,
        annotators=users,
        round_kind=Round.Kind.TRAINING,
        double_percent=50,
        documents=docs[:4],
    )
    production = projects.round_open(project=project)
    for persona in personas:
        for chunk in (docs[:7], docs[3:12], docs[10:12]):
            projects.project_tasks_add(
                project=project,
                round_=production,
                topic=topics[1],
                persona=persona,
                documents=chunk + chunk[:1],
            )
    return project, users, production


def test_counters_equal_a_recount_after_tasks_and_judgments(mixed):
    project, users, production = mixed
    for i, user in enumerate(users):
        judge(user, project, 5 + 3 * i)
    batches, judged = recount()
    assert counters() == (batches, judged)
    assert sum(judged.values()) == Judgment.objects.count() > 20
    # Positions in every batch are 0..n-1: adds continue the batch, duplicates were skipped.
    for (round_id, topic_id, persona_id), (n, _) in batches.items():
        positions = Task.objects.filter(
            round_id=round_id, topic_id=topic_id, persona_id=persona_id
        ).values_list("position", flat=True)
        assert sorted(positions) == list(range(n))


def test_progress_from_counters_matches_the_rows(mixed):
    project, users, production = mixed
    for user in users:
        judge(user, project, 6)
    a = users[0]
    some = Task.objects.filter(project=project).order_by("id")
    shown, other = some.first(), some.filter(round=production).last()
    p_shown, p_other = selectors.judging_progress_many(
        user=a, project=project, task_ids=[shown.pk, other.pk]
    )
    open_tasks = Task.objects.filter(project=project, round__is_open=True)
    assert p_shown["project_tasks"] == open_tasks.count()
    assert p_shown["project_needed"] == open_tasks.aggregate(s=Sum("required"))["s"]
    assert p_shown["project_done"] == Judgment.objects.filter(task__round__is_open=True).count()
    assert p_shown["mine"] == Judgment.objects.filter(annotator=a).count() > 0
    for task, p in ((shown, p_shown), (other, p_other)):
        batch = Task.objects.filter(round=task.round, topic=task.topic, persona=task.persona)
        assert p["batch_needed"] == batch.aggregate(s=Sum("required"))["s"]
        assert p["batch_done"] == Judgment.objects.filter(task__in=batch).count()
    # A closed round leaves the project's totals, not the annotator's own count.
    Round.objects.filter(pk=production.pk).update(is_open=False)
    project = type(project).objects.get(pk=project.pk)
    after = selectors.judging_progress(user=a, project=project, task_id=None)
    training = Task.objects.filter(project=project).exclude(round=production)
    assert after["project_tasks"] == training.count()
    assert after["mine"] == p_shown["mine"]


@pytest.mark.needs_postgres("concurrent adds take turns on the batch's row lock")
def test_concurrent_adds_to_one_batch_take_turns(transactional_db, sample_collection, make_user):
    from annotate import roles

    docs = list(Document.objects.filter(collection=sample_collection).order_by("id"))
    project = ProjectFactory(
        collection=sample_collection, annotators=[make_user("c0", roles.ANNOTATOR)]
    )
    round_, topic, persona = project.rounds.get(), project.topics.get(), project.personas.get()
    # Ten writers (queue top-ups, pools) add overlapping slices of the same documents.
    slices = [(docs[i : i + 8],) for i in range(0, 10)]

    def add(chunk):
        for _ in range(3):
            projects.project_tasks_add(
                project=project, round_=round_, topic=topic, persona=persona, documents=chunk
            )

    run_threads(add, slices)
    tasks = Task.objects.filter(round=round_, topic=topic, persona=persona)
    n = len({d.pk for (chunk,) in slices for d in chunk})
    assert tasks.count() == n
    assert sorted(tasks.values_list("position", flat=True)) == list(range(n))
    assert counters()[0] == recount()[0] == {(round_.pk, topic.pk, persona.pk): (n, n)}


def tuples_read() -> int:
    """Rows this transaction has read so far, every table (PostgreSQL's own counters)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COALESCE(SUM(COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0)), 0)"
            " FROM pg_stat_xact_user_tables"
        )
        return cursor.fetchone()[0]


@pytest.mark.needs_postgres("reads counted by pg_stat_xact_user_tables")
def test_what_a_judgment_reads_does_not_grow_with_the_project(db, sample_collection, make_user):
    from annotate import roles

    def reads(n_tasks: int, name: str) -> int:
        docs = new_documents(sample_collection, name, n_tasks)
        user = make_user(f"{name}-a", roles.ANNOTATOR)
        project = ProjectFactory(name=name, collection=sample_collection, annotators=[user])
        round_, topic, persona = project.rounds.get(), project.topics.get(), project.personas.get()
        projects.project_tasks_add(
            project=project, round_=round_, topic=topic, persona=persona, documents=docs
        )
        held = [judgments.task_claim(user=user, project=project).task_id]
        judge(user, project, 3, skip=held)  # the project has judgments already
        before = tuples_read()
        for _ in range(5):
            following = judgments.judgment_submit_and_claim(
                user=user,
                project=project,
                skip_task_ids=tuple(held),
                task_id=held[0],
                idempotency_key=uuid.uuid4().hex,
                answers=judgments.Answers(**ANSWERS),
                active_seconds=3,
                started_at=timezone.now() - timedelta(seconds=3),
            )[2]
            held = [following.task_id]
            selectors.judging_progress_many(user=user, project=project, task_ids=held)
        return (tuples_read() - before) / 5

    small, large = reads(50, "small"), reads(3000, "large")
    # 29 and 30 rows when measured; the progress query that summed the batch's and the
    # project's tasks read 406 and 6,035.
    assert large <= small + 10, (small, large)
    assert large < 100, large


def test_the_migration_counts_what_was_stored_before_it(mixed):
    """Projects judged before the counters existed get them from their rows (the migration's
    own SQL, run again on rows stored by today's code with the counters emptied)."""
    import importlib

    migration = importlib.import_module("annotate.migrations.0012_progress_counters")
    project, users, _ = mixed
    for user in users:
        judge(user, project, 4)
    expected = counters()
    BatchCount.objects.all().delete()
    JudgedCount.objects.all().delete()
    with connection.cursor() as cursor:
        for sql in migration.BACKFILL:
            cursor.execute(sql)
    assert counters() == expected == recount()


def test_the_admin_cannot_write_tasks_or_judgments_behind_the_counters(mixed, make_user, client):
    """Only project_tasks_add and judgment_submit keep the counters: the admin (which leads
    use) must not add, change or delete tasks, nor add or delete judgments."""
    from django.urls import reverse

    from annotate import roles

    project, users, production = mixed
    judge(users[0], project, 3)
    client.force_login(make_user("lead", roles.LEAD))
    judgment = Judgment.objects.first()
    task = Task.objects.filter(judged=0, round=production).first()
    assignment = Assignment.objects.first()
    writes = [
        ("get", reverse("admin:annotate_task_add"), {}),
        ("post", reverse("admin:annotate_task_delete", args=[task.pk]), {"post": "yes"}),
        ("post", reverse("admin:annotate_judgment_add"), {}),
        ("post", reverse("admin:annotate_judgment_delete", args=[judgment.pk]), {"post": "yes"}),
        # Leases: a task's claimed count and the claim frontiers follow them.
        ("post", reverse("admin:annotate_assignment_add"), {}),
        (
            "post",
            reverse("admin:annotate_assignment_delete", args=[assignment.pk]),
            {"post": "yes"},
        ),
        (
            "post",
            reverse("admin:annotate_assignment_change", args=[assignment.pk]),
            {"status": "expired"},
        ),
    ]
    # A document with tasks (deleting it would take its unjudged tasks along).
    document = task.document
    writes.append(
        ("post", reverse("admin:annotate_document_delete", args=[document.pk]), {"post": "yes"})
    )
    for method, url, data in writes:
        assert getattr(client, method)(url, data).status_code == 403, url
    bulk = client.post(
        reverse("admin:annotate_document_changelist"),
        {"action": "delete_selected", "_selected_action": [document.pk], "post": "yes"},
    )
    assert bulk.status_code in (200, 302)
    assert Document.objects.filter(pk=document.pk).exists()
    response = client.post(
        reverse("admin:annotate_task_change", args=[task.pk]),
        {"required": 9, "claimed": 0, "judged": 0, "position": 0},
    )
    assert response.status_code in (200, 403)  # read-only view, or refused
    task.refresh_from_db()
    assert task.required != 9
    # Still readable by the lead.
    assert client.get(reverse("admin:annotate_task_changelist")).status_code == 200
    assert client.get(reverse("admin:annotate_judgment_changelist")).status_code == 200
    assert counters() == recount()


def test_recount_repairs_counters_written_around(mixed):
    """Rows written behind the services (SQL by hand, an old process after the upgrade):
    the page still shows the batch's true needs, and progress_recount repairs the rows."""
    from io import StringIO

    from django.core.management import call_command

    project, users, _ = mixed
    judge(users[0], project, 4)
    expected = counters()
    task = Task.objects.filter(project=project).order_by("id").first()
    BatchCount.objects.filter(round=task.round, topic=task.topic, persona=task.persona).delete()
    JudgedCount.objects.filter(annotator=users[0]).update(judged=99)
    batch = Task.objects.filter(round=task.round, topic=task.topic, persona=task.persona)
    shown = selectors.judging_progress(user=users[0], project=project, task_id=task.pk)
    assert shown["batch_needed"] == batch.aggregate(s=Sum("required"))["s"] > 0
    out = StringIO()
    call_command("progress_recount", stdout=out)
    assert "1 batch rows" in out.getvalue()
    assert counters() == expected == recount()
    out = StringIO()
    call_command("progress_recount", stdout=out)
    assert "every counter was right" in out.getvalue()
