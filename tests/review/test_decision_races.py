"""Decisions on one document from several paths at once (PostgreSQL row locks; fresh-eye
findings): every path to a decision locks the document's row first, so they take turns,
the later one sees the earlier's decision and is refused by name, and none deadlocks (a
deadlock reached the archivist as a 503 and rolled a whole group decision back)."""

import threading
import time

import pytest
from django.urls import reverse

from review import redaction, releases
from review.models import Decision, Redaction, RedactionReason
from tests.review.test_groups import _queue, copies  # noqa: F401 (fixture)
from tests.review.test_redaction import _redact, copy_pair  # noqa: F401 (fixture)
from tests.stormkit import run_threads

pytestmark = [pytest.mark.lucene, pytest.mark.needs_postgres("row locks of concurrent decisions")]


def _outcome(call) -> str:
    try:
        call()
    except releases.DecisionError as exc:
        return f"refused: {exc}"
    except Exception as exc:  # a deadlock is an OperationalError
        return f"error: {type(exc).__name__}: {exc}"
    return "recorded"


def test_a_group_decision_and_a_page_decision_take_turns(
    transactional_db,
    copies,  # noqa: F811
    users,
    login,
    monkeypatch,
):
    """The group withholds the document and stays open a second; meanwhile a page shown
    before it releases the same document. The page waits, then is refused naming the
    withholding; the group is recorded (before, the two deadlocked and the group lost)."""
    c, persona, a, b, other = copies
    _queue(users["searcher"], persona, [a])
    login(users["archivist"]).get(reverse("review-item", args=[persona.pk, a.pk]))  # viewed
    decide = releases.review_decide
    inside = threading.Event()

    def held_open(**kw):
        decision = decide(**kw)
        inside.set()
        time.sleep(1.0)  # the group's transaction is still open
        return decision

    monkeypatch.setattr(releases, "review_decide", held_open)
    out = {}

    def run(who):
        if who == "group":
            out[who] = _outcome(
                lambda: releases.review_decide_group(
                    archivist=users["archivist"], items=[(persona, a)], kind="withhold"
                )
            )
        else:
            inside.wait(30)
            out[who] = _outcome(
                lambda: decide(
                    archivist=users["lead"], persona=persona, document=a, kind="release", seen=0
                )
            )

    run_threads(run, [("group",), ("page",)])
    assert out["group"] == "recorded", out
    assert out["page"].startswith("refused: Not recorded: arch decided “Withhold”"), out
    assert list(Decision.objects.filter(document=a).values_list("kind", flat=True)) == ["withhold"]


def test_a_redacted_release_and_a_release_redacting_elsewhere_take_turns(
    transactional_db,
    copy_pair,  # noqa: F811
    users,
    monkeypatch,
):
    """ "Release a redacted copy" holds the document while it redacts; "release, with the
    same redaction as elsewhere" from another page starts meanwhile. They used to lock the
    document and the persona in opposite orders (a deadlock); now the second waits and is
    refused, and nothing of it (its redaction) is kept."""
    c, persona, doc, quote = copy_pair
    # A transactional test's flush empties what the migrations seeded.
    RedactionReason.objects.get_or_create(code="financial", defaults={"label": "Financial"})
    _redact(users, persona, doc)
    save = redaction.redaction_save
    started = threading.Event()

    def slow_save(**kw):
        if threading.current_thread().name == "redact":
            started.set()
            time.sleep(1.0)
        return save(**kw)

    monkeypatch.setattr(redaction, "redaction_save", slow_save)
    out = {}

    def run(who):
        threading.current_thread().name = who
        if who == "redact":
            out[who] = _outcome(
                lambda: releases.review_redact_release(
                    archivist=users["archivist"],
                    persona=persona,
                    document=quote,
                    spans=[],
                    phrases=["wombatword"],
                    reason="financial",
                    seen=0,
                )
            )
        else:
            started.wait(30)
            out[who] = _outcome(
                lambda: releases.release_with_elsewhere(
                    archivist=users["lead"],
                    persona=persona,
                    document=quote,
                    choice="redact",
                    seen=0,
                )
            )

    run_threads(run, [("redact",), ("elsewhere",)])
    assert out["redact"] == "recorded", out
    assert out["elsewhere"].startswith("refused: Not recorded: arch decided “Release”"), out
    assert Decision.objects.filter(document=quote).count() == 1
    assert Redaction.objects.filter(document=quote).count() == 1  # only the first's redaction
