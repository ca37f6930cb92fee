from datetime import timedelta

import pytest
from django.utils import timezone

from annotate import judgments
from annotate.models import Assignment, Judgment, JudgmentVersion, Round, Task
from tests.conftest import ANSWERS

STARTED = timezone.now() - timedelta(seconds=20)


def submit(user, task_id, key="k1", **changes):
    # A retry resends the same body, started_at included.
    return judgments.judgment_submit(
        user=user,
        task_id=task_id,
        idempotency_key=key,
        answers=judgments.Answers(**{**ANSWERS, **changes}),
        active_seconds=12.5,
        started_at=STARTED,
    )


def test_claims_follow_the_batch_order_and_respect_overlap(make_project):
    project, (a, b) = make_project(n_tasks=3, overlap=1)
    first = judgments.task_claim(user=a, project=project)
    again = judgments.task_claim(user=a, project=project)
    assert again.pk == first.pk, "an annotator resumes the task they hold"
    ahead = judgments.task_claim(user=a, project=project, skip_task_ids=(first.task_id,))
    other = judgments.task_claim(user=b, project=project)
    ids = [first.task_id, ahead.task_id, other.task_id]
    assert len(set(ids)) == 3
    assert ids == list(Task.objects.order_by("position").values_list("id", flat=True))
    assert judgments.task_claim(user=b, project=project, skip_task_ids=(other.task_id,)) is None
    assert set(Task.objects.values_list("claimed", flat=True)) == {1}


def test_overlap_two_gives_each_task_to_two_different_annotators(make_project):
    project, users = make_project(annotators=3, n_tasks=2, overlap=2)
    a, b, c = users
    for user in (a, b):
        for _ in range(2):
            held = tuple(
                Assignment.objects.filter(annotator=user).values_list("task_id", flat=True)
            )
            assignment = judgments.task_claim(user=user, project=project, skip_task_ids=held)
            submit(user, assignment.task_id, key=f"{user.pk}-{assignment.task_id}")
    assert judgments.task_claim(user=c, project=project) is None
    for task in Task.objects.all():
        assert set(task.judgments.values_list("annotator", flat=True)) == {a.pk, b.pk}
        assert task.claimed == task.required == 2


def test_training_rounds_give_every_task_to_every_annotator(make_project):
    project, users = make_project(annotators=3, n_tasks=2, kind=Round.Kind.TRAINING)
    assert set(Task.objects.values_list("required", flat=True)) == {3}


def test_a_submit_is_stored_once_and_a_retry_gets_the_same_judgment(make_project):
    project, (a, _) = make_project()
    task_id = judgments.task_claim(user=a, project=project).task_id
    judgment, created = submit(a, task_id)
    assert created and judgment.version == 1 and judgment.active_seconds == 12.5
    replay, created = submit(a, task_id)
    assert not created and replay.pk == judgment.pk
    assert Judgment.objects.count() == 1
    assert Assignment.objects.get(task_id=task_id, annotator=a).status == "submitted"


def test_a_key_reused_with_other_answers_is_refused(make_project):
    project, (a, _) = make_project()
    task_id = judgments.task_claim(user=a, project=project).task_id
    submit(a, task_id)
    with pytest.raises(judgments.IdempotencyKeyReused):
        submit(a, task_id, relevance=0)
    assert Judgment.objects.get().relevance == 2


def test_a_second_judgment_of_the_same_task_is_refused(make_project):
    project, (a, _) = make_project()
    task_id = judgments.task_claim(user=a, project=project).task_id
    first, _ = submit(a, task_id, key="one")
    with pytest.raises(judgments.AlreadyJudged) as exc:
        submit(a, task_id, key="two")
    assert exc.value.extra["judgment_id"] == first.pk


def test_submitting_on_an_expired_lease_is_refused_and_the_task_goes_back(make_project):
    project, (a, b) = make_project(n_tasks=1)
    assignment = judgments.task_claim(user=a, project=project)
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now())
    with pytest.raises(judgments.LeaseExpired, match="expired"):
        submit(a, assignment.task_id)
    taken = judgments.task_claim(user=b, project=project)
    assert taken.task_id == assignment.task_id
    assert Task.objects.get().claimed == 1
    assert not Judgment.objects.exists()


def test_someone_elses_task_is_not_found(make_project):
    project, (a, b) = make_project()
    task_id = judgments.task_claim(user=a, project=project).task_id
    with pytest.raises(judgments.TaskNotFound):
        submit(b, task_id)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"relevance": 3}, "relevance must be"),
        ({"persona_sensitive": "maybe"}, "persona sensitivity"),
        ({"personal_sensitive": ""}, "personal sensitivity"),
    ],
)
def test_invalid_answers_are_refused_and_store_nothing(make_project, changes, message):
    project, (a, _) = make_project()
    task_id = judgments.task_claim(user=a, project=project).task_id
    with pytest.raises(judgments.InvalidAnswers, match=message):
        submit(a, task_id, **changes)
    assert not Judgment.objects.exists()


def test_edits_are_versioned_and_a_stale_edit_is_refused(make_project):
    project, (a, b) = make_project()
    task_id = judgments.task_claim(user=a, project=project).task_id
    judgment, _ = submit(a, task_id)
    edited = judgments.judgment_edit(
        user=a,
        judgment_id=judgment.pk,
        expected_version=1,
        answers=judgments.Answers(**{**ANSWERS, "relevance": 1, "comment": "on reflection"}),
    )
    assert (edited.version, edited.relevance, edited.comment) == (2, 1, "on reflection")
    old = JudgmentVersion.objects.get(judgment=judgment)
    assert (old.version, old.relevance) == (1, 2)
    with pytest.raises(judgments.StaleEdit, match="now version 2"):
        judgments.judgment_edit(
            user=a,
            judgment_id=judgment.pk,
            expected_version=1,
            answers=judgments.Answers(**ANSWERS),
        )
    with pytest.raises(judgments.TaskNotFound):
        judgments.judgment_edit(
            user=b,
            judgment_id=judgment.pk,
            expected_version=2,
            answers=judgments.Answers(**ANSWERS),
        )
    assert Judgment.objects.get().relevance == 1


def test_skip_frees_the_place_and_the_annotator_can_come_back(make_project):
    project, (a, b) = make_project(n_tasks=1)
    task_id = judgments.task_claim(user=a, project=project).task_id
    with pytest.raises(judgments.InvalidAnswers):
        judgments.task_skip(user=a, task_id=task_id, reason=" ")
    judgments.task_skip(user=a, task_id=task_id, reason="unreadable attachment")
    assert Task.objects.get().claimed == 0
    assert judgments.task_claim(user=a, project=project) is None, "skipped tasks are not offered"
    judgments.task_resume(user=a, task_id=task_id)
    submit(a, task_id)
    assert Judgment.objects.get().annotator == a


def test_coming_back_to_a_task_that_filled_up_is_refused(make_project):
    project, (a, b) = make_project(n_tasks=1)
    task_id = judgments.task_claim(user=a, project=project).task_id
    judgments.task_skip(user=a, task_id=task_id, reason="later")
    assert judgments.task_claim(user=b, project=project).task_id == task_id
    with pytest.raises(judgments.TaskFull):
        judgments.task_resume(user=a, task_id=task_id)


def test_expiry_returns_each_lease_once(make_project):
    project, (a, b) = make_project(n_tasks=2)
    one = judgments.task_claim(user=a, project=project)
    judgments.task_claim(user=b, project=project)
    Assignment.objects.filter(pk=one.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert judgments.leases_expire(project=project) == 1
    assert judgments.leases_expire(project=project) == 0
    assert sorted(Task.objects.values_list("claimed", flat=True)) == [0, 1]


def test_active_time_and_start_are_checked(make_project):
    project, (a, _) = make_project()
    task_id = judgments.task_claim(user=a, project=project).task_id
    with pytest.raises(judgments.InvalidAnswers, match="active time"):
        judgments.judgment_submit(
            user=a,
            task_id=task_id,
            idempotency_key="x",
            answers=judgments.Answers(**ANSWERS),
            active_seconds=-1,
            started_at=timezone.now(),
        )
    with pytest.raises(judgments.InvalidAnswers, match="future"):
        judgments.judgment_submit(
            user=a,
            task_id=task_id,
            idempotency_key="x",
            answers=judgments.Answers(**ANSWERS),
            active_seconds=1,
            started_at=timezone.now() + timedelta(hours=1),
        )
    with pytest.raises(judgments.InvalidAnswers, match="Idempotency-Key"):
        judgments.judgment_submit(
            user=a,
            task_id=task_id,
            idempotency_key="",
            answers=judgments.Answers(**ANSWERS),
            active_seconds=1,
            started_at=timezone.now(),
        )
