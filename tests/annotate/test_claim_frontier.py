"""The claim frontier (``ClaimFrontier``): a claim starts where the annotator's last one
left off, yet takes exactly the task a walk from the round's start would take.

With two judgments per task, an annotator ahead of the others used to walk past every task
they judged that waits for the others (bench/claim_walk.py); the frontier skips those. What
makes a task free again (an expired lease, a skip) or adds one below it lowers it.
"""

import random
import threading
import uuid
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from annotate import judgments, projects, roles
from annotate.models import Assignment, ClaimFrontier, Document, Round, Task
from tests.conftest import ANSWERS
from tests.factories import PersonaFactory, ProjectFactory, TopicFactory, new_documents
from tests.stormkit import run_threads


def first_free_from_start(user, project) -> int | None:
    """The task a claim must take, by the definition: the first task in queue order, over
    the open rounds, that still has room and that the annotator has not taken (no
    frontier, no index: every task looked at)."""
    taken = set(
        Assignment.objects.filter(annotator=user, task__project=project)
        .exclude(status=Assignment.Status.EXPIRED)
        .values_list("task_id", flat=True)
    )
    for round_id in project.rounds.filter(is_open=True).order_by("id").values_list("id", flat=True):
        for task in Task.objects.filter(round_id=round_id).order_by(
            "topic_id", "persona_id", "position", "id"
        ):
            if task.claimed < task.required and task.pk not in taken:
                return task.pk
    return None


def submit(user, task_id):
    judgments.judgment_submit(
        user=user,
        task_id=task_id,
        idempotency_key=uuid.uuid4().hex,
        answers=judgments.Answers(**ANSWERS),
        active_seconds=2,
        started_at=timezone.now() - timedelta(seconds=2),
    )


@pytest.fixture
def two_topics(sample_collection, make_user):
    """Overlap 2, two topics x two personas x 6 documents (24 tasks), three annotators,
    and 30 documents not yet in any task (for adds)."""
    users = [make_user(f"f{i}", roles.ANNOTATOR) for i in range(3)]
    docs = new_documents(sample_collection, "frontier", 36)
    project = ProjectFactory(
        collection=sample_collection,
        topics=[TopicFactory(collection=sample_collection, number=str(n)) for n in (1, 2)],
        personas=[PersonaFactory(name="Ada"), PersonaFactory(name="Bo")],
        annotators=users,
        overlap=2,
        documents=docs[:6],
    )
    return project, users, docs[6:]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_every_claim_takes_the_task_a_walk_from_the_start_would(two_topics, seed):
    """Random sessions of claims, judgments, skips, expired leases, adds to earlier batches
    and a second round: each claim is compared with the definition, computed before it."""
    project, users, spare = two_topics
    rng = random.Random(seed)
    topics, personas = list(project.topics.all()), list(project.personas.all())
    checked = lowered = 0
    for step in range(160):
        user = rng.choice(users)
        op = rng.random()
        if op < 0.6:
            expected = first_free_from_start(user, project)
            got = judgments._claim_free_task(user, project)
            assert (got.task_id if got else None) == expected, (seed, step)
            checked += 1
            if got is not None and rng.random() < 0.8:
                submit(user, got.task_id)
        elif op < 0.72:
            held = Assignment.objects.filter(annotator=user, status="leased").first()
            if held:
                judgments.task_skip(user=user, task_id=held.task_id, reason="not sure")
        elif op < 0.84:
            held = Assignment.objects.filter(status="leased").order_by("?").first()
            if held:
                Assignment.objects.filter(pk=held.pk).update(
                    expires_at=timezone.now() - timedelta(minutes=1)
                )
                assert judgments.leases_expire(project=project) == 1
        elif op < 0.96 and spare:
            # Tasks added to a batch, often one that sorts before where claims are now.
            chunk, spare[:] = spare[:2], spare[2:]
            projects.project_tasks_add(
                project=project,
                round_=project.rounds.order_by("id").first(),
                topic=rng.choice(topics),
                persona=rng.choice(personas),
                documents=chunk,
            )
            lowered += 1
        elif project.rounds.count() == 1:
            second = projects.round_open(project=project)
            projects.project_tasks_add(
                project=project,
                round_=second,
                topic=topics[0],
                persona=personas[0],
                documents=list(Document.objects.filter(docid__startswith="frontier/")[:4]),
            )
            project = type(project).objects.get(pk=project.pk)  # open rounds read again
    assert checked > 80 and lowered >= 3
    assert ClaimFrontier.objects.exists()


def a_ahead(collection, make_user, *, tasks: int, lead: int):
    """Overlap 2, one batch of ``tasks``; annotator A has judged the first ``lead`` alone."""
    a, b = make_user("ahead", roles.ANNOTATOR), make_user("behind", roles.ANNOTATOR)
    project = ProjectFactory(
        collection=collection,
        annotators=[a, b],
        overlap=2,
        documents=new_documents(collection, "ahead", tasks),
    )
    for _ in range(lead):
        submit(a, judgments._claim_free_task(a, project).task_id)
    return project, a, b


def test_an_annotator_far_ahead_starts_where_they_left_off(sample_collection, make_user):
    """Overlap 2, annotator A judges 200 tasks before B starts: A's next claim reads the
    tasks from the frontier, not the 200 that wait for B."""
    project, a, b = a_ahead(sample_collection, make_user, tasks=240, lead=200)
    frontier = ClaimFrontier.objects.get(annotator=a)
    queue = list(Task.objects.order_by("position").values_list("id", flat=True))
    assert frontier.at_task == queue[199]  # the last one A took (A's next is above it)
    # B's first claim walks from the start (B's frontier is the start) and takes task 1.
    assert judgments._claim_free_task(b, project).task_id == queue[0]
    assert judgments._claim_free_task(a, project).task_id == queue[200]
    assert ClaimFrontier.objects.get(annotator=a).at_task == queue[200]


def index_reads(cursor) -> int:
    """Index scans, and rows fetched by them, on the claim's two tables in this transaction."""
    cursor.execute(
        "SELECT COALESCE(SUM(idx_scan + idx_tup_fetch), 0) FROM pg_stat_xact_user_tables"
        " WHERE relname IN ('annotate_task', 'annotate_assignment')"
    )
    return cursor.fetchone()[0]


@pytest.mark.needs_postgres("index reads, from pg_stat_xact_user_tables")
def test_the_claim_of_an_annotator_ahead_reads_what_a_claim_behind_reads(
    db, sample_collection, make_user
):
    """What one claim reads, A ahead by 400 tasks in a double-judged round: about what B's
    reads (B is at the start). Without the frontier A's claim read every task A judged."""
    project, a, b = a_ahead(sample_collection, make_user, tasks=450, lead=400)
    judgments._claim_free_task(b, project)  # each has a frontier row now
    with connection.cursor() as cursor:  # the plans of a database in use, not of an empty one
        cursor.execute("ANALYZE annotate_task")
        cursor.execute("ANALYZE annotate_assignment")

    def claim_reads(user) -> int:
        with transaction.atomic(), connection.cursor() as cursor:
            before = index_reads(cursor)
            assert judgments._claim_free_task(user, project) is not None
            read = index_reads(cursor) - before
            transaction.set_rollback(True)
        return read

    ahead, behind = claim_reads(a), claim_reads(b)
    assert ahead <= behind + 10, (ahead, behind)
    assert ahead < 50, ahead


@pytest.mark.needs_postgres("two transactions at once")
def test_a_lease_given_back_while_a_claim_moves_the_frontier_is_not_lost(
    transactional_db, make_project
):
    """A lease expires (transaction 2) while annotator U's claim (transaction 1) reads the
    queue without seeing it and moves U's frontier past the task. Transaction 2 lowers the
    frontiers only after transaction 1 committed (the round's lock), so U's next claim
    takes the freed task, the first in queue order."""
    project, (u, v) = make_project(n_tasks=5)
    held = judgments._claim_free_task(v, project)  # V holds task 1
    freed = held.task_id
    Assignment.objects.filter(pk=held.id).update(expires_at=timezone.now() - timedelta(1))
    changed, claimed, expired_done = threading.Event(), threading.Event(), threading.Event()
    real_lower = judgments.frontiers_lower
    taken = []

    def lower_later(*args):
        changed.set()  # the lease is flipped and task 1 has room, not committed yet
        claimed.wait(10)
        real_lower(*args)

    def expire():
        judgments.leases_expire(project=project)
        expired_done.set()

    def claim():
        changed.wait(10)
        with transaction.atomic():
            taken.append(judgments._claim_free_task(u, project).task_id)
            claimed.set()
            # Hold the claim's transaction open while the expiry tries to finish.
            expired_done.wait(1.5)

    judgments.frontiers_lower = lower_later
    try:
        run_threads(lambda job: job(), [(expire,), (claim,)])
    finally:
        judgments.frontiers_lower = real_lower
    assert taken and taken[0] != freed  # the claim did not see the lease given back
    assert Task.objects.get(pk=freed).claimed == 0
    assert first_free_from_start(u, project) == freed
    assert judgments._claim_free_task(u, project).task_id == freed


def test_a_second_round_has_its_own_frontier(make_project):
    project, (a, b) = make_project(n_tasks=3, overlap=2)
    while (got := judgments._claim_free_task(a, project)) is not None:
        submit(a, got.task_id)
    first = project.rounds.get()
    assert ClaimFrontier.objects.get(annotator=a, round=first).at_task > 0
    second = projects.round_open(project=project, kind=Round.Kind.PRODUCTION)
    projects.project_tasks_add(
        project=project,
        round_=second,
        topic=project.topics.get(),
        persona=project.personas.get(),
        documents=list(Document.objects.order_by("id")[:2]),
    )
    project = type(project).objects.get(pk=project.pk)
    got = judgments._claim_free_task(a, project)
    assert got.task.round_id == second.pk
    assert judgments._claim_free_task(b, project).task.round_id == first.pk


def test_a_task_given_back_behind_leaves_the_frontier_of_one_who_judged_it(
    sample_collection, make_user
):
    """B (behind) skips task 1, which A (ahead) judged: task 1 is free again, but not for
    A, whose frontier stays where it was; a third annotator's frontier comes back to it."""
    project, a, b = a_ahead(sample_collection, make_user, tasks=60, lead=50)
    c = make_user("third", roles.ANNOTATOR)
    project.annotators.add(c)
    queue = list(Task.objects.order_by("position").values_list("id", flat=True))
    held = judgments._claim_free_task(b, project)
    assert held.task_id == queue[0]
    for _ in range(3):  # C takes tasks 2-4 (task 1 is full: A judged it, B holds it)
        submit(c, judgments._claim_free_task(c, project).task_id)
    ahead = ClaimFrontier.objects.get(annotator=a).at_task
    judgments.task_skip(user=b, task_id=held.task_id, reason="not sure")
    assert ClaimFrontier.objects.get(annotator=a).at_task == ahead == queue[49]
    assert ClaimFrontier.objects.get(annotator=c).at_task == queue[0]
    for user, expected in ((a, queue[50]), (b, queue[4]), (c, queue[0])):
        assert first_free_from_start(user, project) == expected
        assert judgments._claim_free_task(user, project).task_id == expected


def test_a_task_freed_behind_the_services_comes_back_with_progress_recount(make_project, capsys):
    """A lease given back in SQL by hand (or by a process of an earlier version) lowers no
    frontier: the task is out of reach until ``progress_recount`` drops the frontiers."""
    from django.core.management import call_command
    from django.db.models import F

    project, (a, b) = make_project(n_tasks=3, overlap=2)
    for _ in range(3):
        submit(a, judgments._claim_free_task(a, project).task_id)
    held = judgments._claim_free_task(b, project)
    for _ in range(2):
        submit(b, judgments._claim_free_task(b, project).task_id)
    assert judgments._claim_free_task(b, project) is None  # past the round's last task
    Assignment.objects.filter(pk=held.id).update(status=Assignment.Status.EXPIRED)
    Task.objects.filter(pk=held.task_id).update(claimed=F("claimed") - 1)
    assert first_free_from_start(b, project) == held.task_id
    assert judgments._claim_free_task(b, project) is None
    call_command("progress_recount")
    assert "claim frontiers dropped: 2" in capsys.readouterr().out
    assert judgments._claim_free_task(b, project).task_id == held.task_id
