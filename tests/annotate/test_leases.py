"""Leases: an annotator holds one full lease; the task a page preloads behind it is leased
briefly and renewed when it is shown (issue 21: idle annotators held two leases each)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotate import judgments
from annotate.models import Assignment, Task
from tests.conftest import ANSWERS

pytestmark = pytest.mark.django_db


def live(user, at):
    return Assignment.objects.filter(
        annotator=user, status=Assignment.Status.LEASED, expires_at__gt=at
    )


def open_the_judging_page(user, project):
    """What judge.js does on load: claim the first task, then preload the one after it."""
    first = judgments.task_claim(user=user, project=project)
    second = judgments.task_claim(user=user, project=project, skip_task_ids=(first.task_id,))
    return first, second


def test_an_idle_annotator_holds_one_lease_once_the_preload_lapses(make_project):
    project, (a, _b) = make_project(n_tasks=4, lease=30)
    first, second = open_the_judging_page(a, project)
    now = timezone.now()
    assert live(a, now).count() == 2, "the page holds the task it shows and the next one"
    later = now + judgments.PRELOAD_LEASE + timedelta(seconds=1)
    assert list(live(a, later).values_list("task_id", flat=True)) == [first.task_id]
    assert live(a, now + timedelta(minutes=29)).count() == 1


def test_the_preloaded_task_gets_the_full_lease_when_the_page_shows_it(make_project):
    project, (a, _b) = make_project(n_tasks=4, lease=30)
    first, second = open_the_judging_page(a, project)
    _judgment, _created, third = judgments.judgment_submit_and_claim(
        user=a,
        project=project,
        skip_task_ids=(second.task_id,),  # the page now shows the second task
        task_id=first.task_id,
        idempotency_key="k1",
        answers=judgments.Answers(**ANSWERS),
        active_seconds=3.0,
        started_at=timezone.now() - timedelta(seconds=3),
    )
    shown = Assignment.objects.get(annotator=a, task_id=second.task_id)
    assert shown.expires_at > timezone.now() + timedelta(minutes=29)
    preloaded = Assignment.objects.get(annotator=a, task_id=third.task_id)
    assert preloaded.expires_at <= timezone.now() + judgments.PRELOAD_LEASE
    assert live(a, timezone.now()).count() == 2


def test_a_lapsed_preload_is_taken_again_when_shown_if_the_task_has_room(make_project):
    project, (a, b) = make_project(n_tasks=2, lease=30)
    first, second = open_the_judging_page(a, project)
    Assignment.objects.filter(pk=second.pk).update(expires_at=timezone.now())
    assert judgments.leases_expire(project=project) == 1
    assert Task.objects.get(pk=second.task_id).claimed == 0
    judgments.task_claim(user=a, project=project, skip_task_ids=(second.task_id,))
    renewed = Assignment.objects.get(pk=second.pk)
    assert renewed.status == Assignment.Status.LEASED
    assert renewed.expires_at > timezone.now() + timedelta(minutes=29)
    assert Task.objects.get(pk=second.task_id).claimed == 1


def test_a_lapsed_preload_another_annotator_took_is_not_taken_back(make_project):
    project, (a, b) = make_project(n_tasks=2, lease=30)
    first, second = open_the_judging_page(a, project)
    Assignment.objects.filter(pk=second.pk).update(expires_at=timezone.now())
    judgments.leases_expire(project=project)
    taken = judgments.task_claim(user=b, project=project)
    assert taken.task_id == second.task_id
    judgments.task_claim(user=a, project=project, skip_task_ids=(second.task_id,))
    assert Assignment.objects.get(pk=second.pk).status == Assignment.Status.EXPIRED
    assert Task.objects.get(pk=second.task_id).claimed == 1


def test_a_second_tab_reuses_the_leases_of_the_first(make_project):
    project, (a, _b) = make_project(n_tasks=6)
    first, second = open_the_judging_page(a, project)
    again, again_next = open_the_judging_page(a, project)
    assert {again.task_id, again_next.task_id} == {first.task_id, second.task_id}
    assert Assignment.objects.filter(annotator=a).count() == 2
