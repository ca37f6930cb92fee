"""Writes of annotation: leases on tasks, judgments (idempotent submits, edits), skips and
resumes, and the lead's adjudication (docs/domain.md §5; G1-G3 of RELIABILITY.md)."""

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from annotate import hooks
from annotate.hooks import audit_record
from annotate.models import (
    Adjudication,
    AnnotationProject,
    Answer,
    Assignment,
    ClaimFrontier,
    Judgment,
    JudgmentVersion,
    Round,
    Task,
)

logger = logging.getLogger(__name__)


class AnnotationError(Exception):
    """A refused annotation operation; ``code`` is stable, ``message`` is for people."""

    status = 409
    code = "conflict"

    def __init__(self, message: str, **extra):
        super().__init__(message)
        self.message = message
        self.extra = extra


class TaskNotFound(AnnotationError):
    status = 404
    code = "not_found"


class LeaseExpired(AnnotationError):
    status = 409
    code = "lease_expired"


class AlreadyJudged(AnnotationError):
    status = 409
    code = "already_judged"


class IdempotencyKeyReused(AnnotationError):
    status = 422
    code = "idempotency_key_reused"


class StaleEdit(AnnotationError):
    status = 409
    code = "stale_edit"


class InvalidAnswers(AnnotationError):
    status = 400
    code = "invalid"


class TaskFull(AnnotationError):
    status = 409
    code = "task_full"


class TaskSkipped(AnnotationError):
    status = 409
    code = "task_skipped"


class TaskNotNeeded(AnnotationError):
    """The task needs no more judgments: its active-learning budget is spent."""

    status = 409
    code = "task_not_needed"


@dataclass(frozen=True)
class Answers:
    """The three questions and the comment of one judgment (docs/domain.md §1)."""

    relevance: int
    persona_sensitive: str
    personal_sensitive: str
    comment: str = ""

    def validated(self) -> "Answers":
        problems = []
        if self.relevance not in (0, 1, 2):
            problems.append("relevance must be 0 (not), 1 (somewhat) or 2 (highly relevant)")
        choices = set(Answer.values)
        if self.persona_sensitive not in choices:
            problems.append("persona sensitivity must be yes, no or dont_know")
        if self.personal_sensitive not in choices:
            problems.append("personal sensitivity must be yes, no or dont_know")
        if len(self.comment) > 10_000:
            problems.append("the comment is longer than 10,000 characters")
        if problems:
            raise InvalidAnswers("; ".join(problems), fields=problems)
        return self

    def digest(self, active_seconds: float, started_at: datetime) -> str:
        body = json.dumps(
            [
                self.relevance,
                self.persona_sensitive,
                self.personal_sensitive,
                self.comment,
                round(active_seconds, 3),
                started_at.isoformat(),
            ],
        )
        return hashlib.sha256(body.encode()).hexdigest()


def leases_expire(*, project: AnnotationProject | None = None, now: datetime | None = None) -> int:
    """Return expired leases to the pool; return how many were released."""
    now = now or timezone.now()
    qs = Assignment.objects.filter(status=Assignment.Status.LEASED, expires_at__lte=now)
    if project is not None:
        qs = qs.filter(task__project=project)
    released = 0
    rows = qs.values_list(
        "id", "task_id", "task__round_id", "task__topic_id", "task__persona_id", "task__position"
    )
    for assignment_id, task_id, round_id, topic_id, persona_id, position in rows[:500]:
        with transaction.atomic():
            # Flip the status first: only the transaction that flips it gives the claim back.
            flipped = Assignment.objects.filter(
                pk=assignment_id, status=Assignment.Status.LEASED, expires_at__lte=now
            ).update(status=Assignment.Status.EXPIRED)
            if flipped:
                _place_give_back(round_id, (topic_id, persona_id, position, task_id))
                released += 1
    return released


# The advisory-lock namespace of claim frontiers (PostgreSQL's two-int4 form: this, round).
_FRONTIER_LOCKS = 0x5A5C


def _round_lock(cursor, round_id: int, *, exclusive: bool) -> None:
    """Claims in a round hold a shared lock on it, the writers that lower its frontiers an
    exclusive one, each until its transaction ends (PostgreSQL; SQLite runs one writing
    transaction at a time anyway).

    So a claim never moves a frontier past a task that a transaction still open frees or
    adds: that transaction lowers the frontiers only once no claim in the round is open,
    and the claims that come after see what it did. A writer takes the lock after its own
    changes, just before lowering, so it never holds the lock while waiting on a row a claim
    holds; and it must not already hold a claim's shared lock (two such would wait on each
    other): the claim path frees and adds only outside a claim's transaction
    (``task_claim``'s ``refill``).
    """
    if connection.vendor != "postgresql":
        return
    function = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
    cursor.execute(f"SELECT {function}(%s, %s)", [_FRONTIER_LOCKS, round_id % 2**31])


_LOWER_SQL = """
    UPDATE annotate_claimfrontier
       SET at_topic = %(topic)s, at_persona = %(persona)s, at_position = %(position)s,
           at_task = %(task)s
     WHERE round_id = %(round)s
       AND (at_topic, at_persona, at_position, at_task)
           > (%(topic)s, %(persona)s, %(position)s, %(task)s)
       -- An annotator who holds, judged or skipped the task has nothing new below their
       -- frontier (the one ahead, when the one behind gives a task back).
       AND NOT EXISTS (SELECT 1 FROM annotate_assignment a
                        WHERE a.task_id = %(task)s
                          AND a.annotator_id = annotate_claimfrontier.annotator_id
                          AND a.status <> %(expired)s)
"""


def _place_give_back(round_id: int, key: tuple[int, int, int, int]) -> None:
    """A lease's place on a task given back (it expired, or was skipped), in the caller's
    transaction: the task counts one claim fewer, and the round's frontiers come back to it
    (``key``: its topic, persona, position and id)."""
    Task.objects.filter(pk=key[3], claimed__gt=0).update(claimed=F("claimed") - 1)
    frontiers_lower(round_id, key)


def frontiers_lower(round_id: int, key: tuple[int, int, int, int]) -> None:
    """Take the claim frontiers of the round back to ``key`` (topic, persona, position and
    id of a task just freed; id 0 for the first of tasks just added), in the caller's
    transaction, after its changes.

    Whatever gives a place back on a task (an expired lease, a skip) or adds tasks calls
    this, or a claim could go on starting above a task that is free again. Frontiers of
    annotators who still have the task (held, judged, skipped) stay.
    """
    topic, persona, position, task = key
    with connection.cursor() as cursor:
        _round_lock(cursor, round_id, exclusive=True)
        cursor.execute(
            _LOWER_SQL,
            {
                "round": round_id,
                "topic": topic,
                "persona": persona,
                "position": position,
                "task": task,
                "expired": Assignment.Status.EXPIRED.value,
            },
        )


def frontiers_reset() -> int:
    """Drop every claim frontier (each annotator's next claim walks from the round's start
    once, and sets it again); return how many there were.

    For tasks freed behind the services (SQL by hand, a process of an earlier version
    during an upgrade), which lowered no frontier: always safe, as a frontier only saves
    reading. Every round's lock is taken first, in the claims' order, so no claim running
    meanwhile writes back a frontier it read before.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        for round_id in Round.objects.order_by("id").values_list("id", flat=True):
            _round_lock(cursor, round_id, exclusive=True)
        deleted, _ = ClaimFrontier.objects.all().delete()
    return deleted


_last_expiry: dict[int, float] = {}


def _expire_now_and_then(project: AnnotationProject, every: float = 5.0) -> None:
    """Release expired leases at most every few seconds per process (it costs a query)."""
    now = time.monotonic()
    if now - _last_expiry.get(project.pk, -every) >= every:
        _last_expiry[project.pk] = now
        leases_expire(project=project)


def _live_leases(user, project):
    return Assignment.objects.filter(
        annotator=user,
        task__project=project,
        status=Assignment.Status.LEASED,
        expires_at__gt=timezone.now(),
    ).order_by("leased_at", "id")


def task_held(
    *, user, project: AnnotationProject, limit: int = 2, first: int | None = None
) -> list[Assignment]:
    """The annotator's live leases, oldest first, or with the lease on task ``first`` (one
    just taken back) first whatever its age (reading only: a page shown by GET claims
    nothing)."""
    leases = _live_leases(user, project)
    ahead = list(leases.filter(task_id=first)[:1]) if first is not None else []
    rest = leases.exclude(task_id=first) if ahead else leases
    return ahead + list(rest[: limit - len(ahead)])


# How long a preloaded task (the one a page holds behind the task it shows) stays leased
# before it is shown. The page shows it, and renews it to the project's full lease, when the
# task in front is saved; an annotator who walks away keeps one lease, not two.
PRELOAD_LEASE = timedelta(minutes=5)


def task_claim(
    *,
    user,
    project: AnnotationProject,
    skip_task_ids: tuple[int, ...] = (),
    refill: bool = True,
) -> Assignment | None:
    """Return the annotator's oldest live lease not in ``skip_task_ids``, or lease a new task.

    ``skip_task_ids`` are the tasks the client holds, the one it shows first. That one is
    renewed to the project's full lease (``_lease_renew``: the client shows it now), and a
    task leased while the client shows another is a preload: its lease lasts
    ``PRELOAD_LEASE`` until it is shown. So an annotator holds one full lease at a time, and
    an idle one holds a second only for the first minutes.

    Exactly-once under concurrency (G1): the task row is locked with
    ``SELECT ... FOR UPDATE SKIP LOCKED`` (PostgreSQL), so two annotators never take the last
    place of the same task, and ``claimed <= required`` is also a database constraint. On
    SQLite, which has no row locks, every write transaction starts with ``BEGIN IMMEDIATE``
    (see settings), so claims are serialised by the database lock instead.

    With ``refill`` (the default) expired leases are given back first now and then, and
    when no task is free, expired leases and the learning plans' next picks are tried too.
    Give ``refill=False`` when the caller's transaction goes on after the claim (they free
    and add tasks, which must not happen in a transaction that holds a claim: see
    ``_round_lock``).
    """
    if skip_task_ids:
        _lease_renew(user, project, skip_task_ids[0])
    live = _live_leases(user, project).exclude(task_id__in=skip_task_ids).first()
    if live is not None:
        return live
    preload = bool(skip_task_ids)
    if not refill:
        return _claim_free_task(user, project, preload=preload)
    _expire_now_and_then(project)
    assignment = _claim_free_task(user, project, preload=preload)
    if assignment is None and leases_expire(project=project):
        # expired leases just came back
        assignment = _claim_free_task(user, project, preload=preload)
    # Still nothing: a retrain may be late, and the previous model's next picks fill the
    # queue (the queue_empty hook: ranking's queue_top_up).
    if assignment is None and hooks.queue_empty(project=project):
        assignment = _claim_free_task(user, project, preload=preload)
    return assignment


_RENEW_SQL = """
    UPDATE annotate_assignment SET expires_at = %(expires)s
     WHERE task_id = %(task)s AND annotator_id = %(user)s AND status = %(leased)s
       AND expires_at < %(expires)s
"""
# A lease that lapsed and was given back: take it again only if the task still has room.
_RETAKE_SQL = """
    UPDATE annotate_assignment SET status = %(leased)s, leased_at = %(now)s,
           expires_at = %(expires)s
     WHERE task_id = %(task)s AND annotator_id = %(user)s AND status = %(expired)s
"""
_RETAKE_COUNT_SQL = """
    UPDATE annotate_task SET claimed = claimed + 1
     WHERE id = %(task)s AND claimed < required
"""


class _Full(Exception):
    pass


def _lease_renew(user, project: AnnotationProject, task_id: int) -> bool:
    """Give the annotator's lease on the task the client shows the project's full length.

    A lease still marked leased is extended (even one past its time: its place is still
    counted in ``Task.claimed``, and ``leases_expire`` only flips a lease still past its
    time). One already given back is taken again if the task has room. Return whether the
    annotator holds the task now.
    """
    now = timezone.now()
    ops = connection.ops
    params = {
        "task": task_id,
        "user": user.pk,
        "leased": Assignment.Status.LEASED.value,
        "expired": Assignment.Status.EXPIRED.value,
        "now": ops.adapt_datetimefield_value(now),
        "expires": ops.adapt_datetimefield_value(now + timedelta(minutes=project.lease_minutes)),
    }
    with connection.cursor() as cursor:
        cursor.execute(_RENEW_SQL, params)
        if cursor.rowcount:
            return True
        try:
            with transaction.atomic():
                cursor.execute(_RETAKE_SQL, params)
                if not cursor.rowcount:
                    return False  # submitted, skipped, still full length, or not theirs
                cursor.execute(_RETAKE_COUNT_SQL, params)
                if not cursor.rowcount:
                    raise _Full
        except _Full:
            return False
    return True


_FREE_TASK_SQL = """
    SELECT t.topic_id, t.persona_id, t.position, t.id FROM annotate_task t
     WHERE t.project_id = %(project)s AND t.round_id = %(round)s AND t.claimed < t.required
       AND (t.topic_id, t.persona_id, t.position, t.id)
           >= (%(topic)s, %(persona)s, %(position)s, %(task)s)
       AND NOT EXISTS (SELECT 1 FROM annotate_assignment a
                        WHERE a.task_id = t.id AND a.annotator_id = %(user)s
                          AND a.status <> %(expired)s)
     -- The order of the partial index task_free_in_order, so the first row is the answer
     -- (one round at a time: with "round_id IN (...)" PostgreSQL sorts every free task),
     -- and the scan starts at the frontier's key.
     ORDER BY t.project_id, t.round_id, t.topic_id, t.persona_id, t.position, t.id
     LIMIT 1 {lock}
"""
_LAST_FREE_SQL = """
    SELECT t.topic_id, t.persona_id, t.position, t.id FROM annotate_task t
     WHERE t.project_id = %(project)s AND t.round_id = %(round)s AND t.claimed < t.required
     ORDER BY t.project_id DESC, t.round_id DESC, t.topic_id DESC, t.persona_id DESC,
              t.position DESC, t.id DESC
     LIMIT 1
"""
_FRONTIER_SQL = """
    SELECT at_topic, at_persona, at_position, at_task FROM annotate_claimfrontier
     WHERE round_id = %(round)s AND annotator_id = %(user)s
"""
_FRONTIER_SET_SQL = """
    INSERT INTO annotate_claimfrontier
           (round_id, annotator_id, at_topic, at_persona, at_position, at_task)
    VALUES (%(round)s, %(user)s, %(topic)s, %(persona)s, %(position)s, %(task)s)
    ON CONFLICT (round_id, annotator_id) DO UPDATE
       SET at_topic = excluded.at_topic, at_persona = excluded.at_persona,
           at_position = excluded.at_position, at_task = excluded.at_task
"""
_START = (0, 0, 0, 0)  # below every task: topic, persona and task ids start at 1


def _free_task_in_round(cursor, params: dict, lock: str) -> int | None:
    """Return the first free task of ``params["round"]`` the annotator has not taken, locked
    for the claim; move the annotator's frontier up to it (``ClaimFrontier``).

    The scan starts at the frontier, so it reads the tasks between there and the answer,
    not every task the annotator judged that waits for other annotators' judgments (with
    two or more judgments per task). The first free task not theirs is looked up without
    a lock and becomes the frontier; the locked pick starts there and passes the tasks
    other claims hold locked right now (SKIP LOCKED), which stay above the frontier.
    """
    _round_lock(cursor, params["round"], exclusive=False)
    cursor.execute(_FRONTIER_SQL, params)
    frontier = tuple(cursor.fetchone() or _START)
    keys = ("topic", "persona", "position", "task")
    params.update(zip(keys, frontier, strict=True))
    cursor.execute(_FREE_TASK_SQL.format(lock=""), params)
    first = cursor.fetchone()
    task_id = None
    if first is None:
        # Nothing left for them: go past the round's last free task (each of those is
        # theirs); a task freed or added later lowers the frontier again.
        cursor.execute(_LAST_FREE_SQL, params)
        last = cursor.fetchone()
        moved = max(frontier, (*last[:3], last[3] + 1)) if last else frontier
    else:
        moved = tuple(first)
        if lock:
            params.update(zip(keys, moved, strict=True))
            cursor.execute(_FREE_TASK_SQL.format(lock=lock), params)
            row = cursor.fetchone()
            task_id = row[3] if row else None
        else:
            task_id = first[3]
    if moved != frontier:
        params.update(zip(keys, moved, strict=True))
        cursor.execute(_FRONTIER_SET_SQL, params)
    return task_id


# One upsert: a new lease, or the renewal of this annotator's expired (or skipped) one.
_LEASE_SQL = """
    INSERT INTO annotate_assignment
           (task_id, annotator_id, status, leased_at, expires_at, skip_reason)
    VALUES (%(task)s, %(user)s, %(leased)s, %(now)s, %(expires)s, '')
    ON CONFLICT (task_id, annotator_id) DO UPDATE
       SET status = excluded.status, leased_at = excluded.leased_at,
           expires_at = excluded.expires_at, skip_reason = ''
    RETURNING id
"""


def _claim_free_task(
    user, project: AnnotationProject, *, preload: bool = False
) -> Assignment | None:
    """Lease the first free task in queue order: three SQL statements, one transaction.

    A preload's lease lasts ``PRELOAD_LEASE`` (at most the project's lease), else the
    project's lease.

    Plain SQL (valid on PostgreSQL and SQLite) because this runs on every save of the
    judging page and the ORM spent longer composing these statements than the database
    spent running them.
    """
    now = timezone.now()
    length = timedelta(minutes=project.lease_minutes)
    expires = now + (min(length, PRELOAD_LEASE) if preload else length)
    ops = connection.ops
    features = connection.features
    skip_locked = features.has_select_for_update_of and features.has_select_for_update_skip_locked
    lock = "FOR UPDATE OF t SKIP LOCKED" if skip_locked else ""
    params = {
        "project": project.pk,
        "user": user.pk,
        "expired": Assignment.Status.EXPIRED.value,
        "leased": Assignment.Status.LEASED.value,
        "now": ops.adapt_datetimefield_value(now),
        "expires": ops.adapt_datetimefield_value(expires),
    }
    # No savepoint when nested: a failure here fails the caller's transaction anyway.
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        # Rounds are numbered in creation order, so their ids sort like their numbers (and
        # their frontier locks are taken in one order).
        for params["round"] in project.open_round_ids():
            task_id = _free_task_in_round(cursor, params, lock)
            if task_id is not None:
                break
        else:
            return None
        params["task"] = task_id
        cursor.execute(_LEASE_SQL, params)
        (assignment_id,) = cursor.fetchone()
        cursor.execute("UPDATE annotate_task SET claimed = claimed + 1 WHERE id = %(task)s", params)
    return Assignment(
        id=assignment_id,
        task_id=task_id,
        annotator_id=user.pk,
        status=Assignment.Status.LEASED,
        leased_at=now,
        expires_at=expires,
        skip_reason="",
    )


def _locked_assignment(user, task_id: int) -> Assignment:
    assignment = (
        Assignment.objects.select_for_update()
        .select_related("task")
        .filter(task_id=task_id, annotator=user)
        .first()
    )
    if assignment is None:
        raise TaskNotFound("No such task among yours.")
    return assignment


def judgment_submit(
    *,
    user,
    task_id: int,
    idempotency_key: str,
    answers: Answers,
    active_seconds: float,
    started_at: datetime,
) -> tuple[Judgment, bool]:
    """Store a judgment exactly once; return it and whether it was created now (G2).

    A retry with the same key and the same answers returns the stored judgment; the same key
    with other answers is refused; a second judgment of the same task is refused (edit the
    first one instead); a submit after the lease expired is refused (G1). Success means the
    row is committed (G3).
    """
    answers = answers.validated()
    key = (idempotency_key or "").strip()
    if not key or len(key) > 100:
        raise InvalidAnswers("An Idempotency-Key of 1 to 100 characters is required.")
    now = timezone.now()
    if not (0 <= active_seconds <= 24 * 3600):
        raise InvalidAnswers("active time must be between 0 seconds and 24 hours")
    if started_at > now + timedelta(minutes=5):
        raise InvalidAnswers("the start time is in the future")
    digest = answers.digest(active_seconds, started_at)
    ops = connection.ops
    params = {
        "task": task_id,
        "user": user.pk,
        "key": key,
        "digest": digest,
        "relevance": answers.relevance,
        "persona_sensitive": answers.persona_sensitive,
        "personal_sensitive": answers.personal_sensitive,
        "comment": answers.comment,
        "active": active_seconds,
        "started": ops.adapt_datetimefield_value(started_at),
        "now": ops.adapt_datetimefield_value(now),
        "submitted": Assignment.Status.SUBMITTED.value,
    }
    lock = "FOR UPDATE OF a" if connection.features.has_select_for_update_of else ""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_SUBMIT_LOCK_SQL.format(lock=lock), params)
            row = cursor.fetchone()
            if row is None:
                raise TaskNotFound("No such task among yours.")
            status, expires_at, round_id, source, project_id, topic_id, persona_id = row
            # Looked up after taking the lock, in a statement of its own (so with a fresh
            # snapshot): a concurrent duplicate sees the first one's commit.
            cursor.execute(_SUBMIT_REPLAY_SQL, params)
            replay_id, replay_task, replay_hash = cursor.fetchone() or (None, None, None)
            if replay_id is not None:
                if replay_hash != digest or replay_task != task_id:
                    raise IdempotencyKeyReused(
                        "This Idempotency-Key was already used with different answers."
                    )
                return Judgment.objects.get(pk=replay_id), False
            if status == Assignment.Status.SUBMITTED:
                existing = Judgment.objects.get(task_id=task_id, annotator=user)
                raise AlreadyJudged(
                    "You have already judged this task; change it from your history.",
                    judgment_id=existing.pk,
                )
            if status == Assignment.Status.SKIPPED:
                raise TaskSkipped(
                    "You skipped this task, so your answers were not saved; to judge it, "
                    "take it back from your history (Judge it now)."
                )
            expires_at = _db_datetime(expires_at)
            if status != Assignment.Status.LEASED or expires_at <= now:
                raise LeaseExpired(
                    "Your claim on this task expired and it went back to the pool; "
                    "your answers were not saved. Take the next task to continue."
                )
            params.update(round=round_id, topic=topic_id, persona=persona_id)
            cursor.execute(_SUBMIT_INSERT_SQL, params)
            (judgment_id,) = cursor.fetchone()
            cursor.execute(_SUBMIT_LEASE_SQL, params)
            cursor.execute(_SUBMIT_COUNT_SQL, params)
            cursor.execute(_SUBMIT_PROGRESS_SQL, params)
            if source in (Task.Source.ACTIVE, Task.Source.SEED):
                hooks.learning_task_judged(
                    project_id=project_id, topic_id=topic_id, judgment_id=judgment_id
                )
    except IntegrityError:
        # Only reachable if the lock was bypassed (a database without row locks): the
        # constraints still hold, and the duplicate gets the stored answer.
        replay = Judgment.objects.filter(annotator=user, idempotency_key=key).first()
        if replay is not None and replay.request_hash == digest:
            return replay, False
        raise AlreadyJudged("You have already judged this task.") from None
    judgment = Judgment(
        id=judgment_id,
        task_id=task_id,
        annotator_id=user.pk,
        round_id=round_id,
        relevance=answers.relevance,
        persona_sensitive=answers.persona_sensitive,
        personal_sensitive=answers.personal_sensitive,
        comment=answers.comment,
        active_seconds=active_seconds,
        started_at=started_at,
        submitted_at=now,
        updated_at=now,
        version=1,
        idempotency_key=key,
        request_hash=digest,
    )
    return judgment, True


def _db_datetime(value) -> datetime:
    """Return an aware datetime from a raw cursor value (SQLite returns text)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if timezone.is_naive(value):
        value = timezone.make_aware(value, UTC)
    return value


# judgment_submit in plain SQL (valid on PostgreSQL and SQLite): it runs on every save of
# the judging page, and the ORM spent longer composing these statements than the database
# spent running them.
_SUBMIT_LOCK_SQL = """
    SELECT a.status, a.expires_at, t.round_id, t.source, t.project_id, t.topic_id,
           t.persona_id
      FROM annotate_assignment a JOIN annotate_task t ON t.id = a.task_id
     WHERE a.task_id = %(task)s AND a.annotator_id = %(user)s
     {lock}
"""
_SUBMIT_REPLAY_SQL = """
    SELECT id, task_id, request_hash FROM annotate_judgment
     WHERE annotator_id = %(user)s AND idempotency_key = %(key)s
"""
_SUBMIT_INSERT_SQL = """
    INSERT INTO annotate_judgment
           (task_id, annotator_id, round_id, relevance, persona_sensitive, personal_sensitive,
            comment, active_seconds, started_at, submitted_at, updated_at, version,
            idempotency_key, request_hash)
    VALUES (%(task)s, %(user)s, %(round)s, %(relevance)s, %(persona_sensitive)s,
            %(personal_sensitive)s, %(comment)s, %(active)s, %(started)s, %(now)s, %(now)s, 1,
            %(key)s, %(digest)s)
    RETURNING id
"""
_SUBMIT_LEASE_SQL = """
    UPDATE annotate_assignment SET status = %(submitted)s
     WHERE task_id = %(task)s AND annotator_id = %(user)s
"""
_SUBMIT_COUNT_SQL = "UPDATE annotate_task SET judged = judged + 1 WHERE id = %(task)s"
# The annotator's own counter of the batch (models.JudgedCount): no other annotator writes it.
_SUBMIT_PROGRESS_SQL = """
    INSERT INTO annotate_judgedcount (round_id, topic_id, persona_id, annotator_id, judged)
    VALUES (%(round)s, %(topic)s, %(persona)s, %(user)s, 1)
    ON CONFLICT (round_id, topic_id, persona_id, annotator_id)
    DO UPDATE SET judged = annotate_judgedcount.judged + 1
"""


def judgment_submit_and_claim(
    *, user, project: AnnotationProject, skip_task_ids: tuple[int, ...] = (), **submit
) -> tuple[Judgment, bool, Assignment | None]:
    """Store a judgment (``judgment_submit``) and claim the next task, in one transaction.

    What the judging page sends on Enter. One commit instead of two: the commit's disk flush
    is the largest single cost of the request. A failed claim rolls the judgment back too, so
    the client's retry (same Idempotency-Key) stores it exactly once. When no task is free,
    the judgment commits first and the refilling claim (``task_claim``'s ``refill``) runs
    after it; a failure there is answered as a failure, and the retry finds the judgment
    stored (G2).
    """
    # Expired leases go back now and then, before (so this claim may take one), each in a
    # transaction of its own: what frees a task must not run in a transaction that holds a
    # claim (``_round_lock``).
    _expire_now_and_then(project)
    with transaction.atomic():
        judgment, created = judgment_submit(user=user, **submit)
        following = task_claim(
            user=user, project=project, skip_task_ids=skip_task_ids, refill=False
        )
    if following is None:
        # Nothing free: expired leases and the plans' next picks, then a claim again, after
        # the judgment's commit.
        following = task_claim(user=user, project=project, skip_task_ids=skip_task_ids)
    return judgment, created, following


def judgment_edit(*, user, judgment_id: int, expected_version: int, answers: Answers) -> Judgment:
    """Change an earlier judgment, keeping the old answers; refuse a stale edit (G2)."""
    answers = answers.validated()
    with transaction.atomic():
        judgment = (
            Judgment.objects.select_for_update().filter(pk=judgment_id, annotator=user).first()
        )
        if judgment is None:
            raise TaskNotFound("No such judgment among yours.")
        if judgment.version != expected_version:
            raise StaleEdit(
                f"This judgment changed since you opened it (now version {judgment.version}, "
                f"you edited version {expected_version}). Reload it and edit again.",
                version=judgment.version,
            )
        JudgmentVersion.objects.create(
            judgment=judgment,
            version=judgment.version,
            relevance=judgment.relevance,
            persona_sensitive=judgment.persona_sensitive,
            personal_sensitive=judgment.personal_sensitive,
            comment=judgment.comment,
            active_seconds=judgment.active_seconds,
            recorded_at=timezone.now(),
        )
        before = _judgment_answers(judgment)
        judgment.relevance = answers.relevance
        judgment.persona_sensitive = answers.persona_sensitive
        judgment.personal_sensitive = answers.personal_sensitive
        judgment.comment = answers.comment
        judgment.version += 1
        judgment.updated_at = timezone.now()
        judgment.save()
        _audit_judgment_edit(user, judgment, before)
    return judgment


def _judgment_answers(judgment: Judgment) -> dict:
    return {
        "relevance": judgment.relevance,
        "persona_sensitive": judgment.persona_sensitive,
        "personal_sensitive": judgment.personal_sensitive,
        "comment": judgment.comment,
    }


def _audit_judgment_edit(user, judgment: Judgment, before: dict) -> None:
    """Log an edit: what changed, from what to what (a first judgment is its own record)."""
    task = Task.objects.select_related("project", "topic", "persona", "document").get(
        pk=judgment.task_id
    )
    after = _judgment_answers(judgment)
    audit_record(
        user=user,
        action="judgment-edit",
        collection=task.document.collection,
        document=task.document,
        project=task.project.slug,
        topic=task.topic.number,
        persona=task.persona.name,
        judgment=judgment.pk,
        version=judgment.version,
        changed={k: [before[k], after[k]] for k in after if before[k] != after[k]},
    )


def task_skip(*, user, task_id: int, reason: str) -> Assignment:
    """Give a leased task back with a reason; it stays in the annotator's skipped list."""
    reason = (reason or "").strip()
    if not reason:
        raise InvalidAnswers("Say why you skip this task.")
    with transaction.atomic():
        assignment = _locked_assignment(user, task_id)
        if assignment.status != Assignment.Status.LEASED:
            raise AnnotationError("Only a task you hold can be skipped.")
        assignment.status = Assignment.Status.SKIPPED
        assignment.skip_reason = reason[:2000]
        assignment.save(update_fields=["status", "skip_reason"])
        task = assignment.task
        _place_give_back(task.round_id, (task.topic_id, task.persona_id, task.position, task.pk))
    return assignment


def task_resume(*, user, task_id: int) -> Assignment:
    """Lease a task the annotator skipped earlier, if it still has room."""
    with transaction.atomic():
        assignment = _locked_assignment(user, task_id)
        if assignment.status != Assignment.Status.SKIPPED:
            raise AnnotationError("Only a skipped task can be taken back.")
        task = Task.objects.select_for_update().get(pk=task_id)
        if task.claimed >= task.required:
            raise _why_full(task)
        now = timezone.now()
        assignment.status = Assignment.Status.LEASED
        assignment.leased_at = now
        assignment.expires_at = now + timedelta(minutes=task.project.lease_minutes)
        assignment.save(update_fields=["status", "leased_at", "expires_at"])
        Task.objects.filter(pk=task_id).update(claimed=F("claimed") + 1)
    return assignment


def _why_full(task: Task) -> AnnotationError:
    """Return the true reason a skipped task cannot be taken back (it has no free place)."""
    if task.source in (Task.Source.ACTIVE, Task.Source.SEED):
        closed = hooks.learning_task_closed(task=task)
        if closed is not None:
            return TaskNotNeeded(closed)
    if task.judged >= task.required:
        people = "another annotator" if task.judged == 1 else f"{task.judged} annotators"
        return TaskFull(
            f"This task has the judgments it needs: {people} judged it after you skipped it."
        )
    return TaskFull(
        "Another annotator holds this task now; it comes back to your history's list "
        "if their claim expires unjudged."
    )


def adjudicate(
    *,
    user,
    task: Task,
    relevance: int | None,
    persona_sensitive: str,
    reason: str,
) -> Adjudication:
    """Record (or change) the lead's final label for a task's (topic, persona, document).

    At least one answer must be decided, and the reason is required: it is what the
    annotators read when they discuss the round.
    """
    reason = (reason or "").strip()
    if relevance is not None and relevance not in Judgment.Relevance.values:
        raise InvalidAnswers("relevance must be 0, 1 or 2 (or left undecided)")
    if persona_sensitive not in ("", Answer.YES, Answer.NO):
        raise InvalidAnswers("persona sensitivity must be yes, no or left undecided")
    if relevance is None and not persona_sensitive:
        raise InvalidAnswers("decide the relevance, the persona sensitivity or both")
    if not reason:
        raise InvalidAnswers("give the reason for the adjudicated label")
    if len(reason) > 10_000:
        raise InvalidAnswers("the reason is longer than 10,000 characters")
    with transaction.atomic():
        previous = (
            Adjudication.objects.filter(
                project_id=task.project_id,
                topic_id=task.topic_id,
                persona_id=task.persona_id,
                document_id=task.document_id,
            )
            .values("relevance", "persona_sensitive")
            .first()
        )
        adjudication, _ = Adjudication.objects.update_or_create(
            project_id=task.project_id,
            topic_id=task.topic_id,
            persona_id=task.persona_id,
            document_id=task.document_id,
            defaults={
                "relevance": relevance,
                "persona_sensitive": persona_sensitive,
                "reason": reason,
                "decided_by": user,
                "decided_at": timezone.now(),
            },
        )
        audit_record(
            user=user,
            action="adjudication",
            collection=task.document.collection,
            document=task.document,
            project=task.project.slug,
            topic=task.topic.number,
            persona=task.persona.name,
            relevance=relevance,
            persona_sensitive=persona_sensitive,
            reason=reason[:500],
            previous=previous,
        )
    return adjudication
