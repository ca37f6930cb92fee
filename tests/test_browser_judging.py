"""The judging page in Debian's Chromium: keyboard only, progress across reloads, edits,
isolation between annotators, and hostile email kept inert (T9) under the CSP."""

import pytest

from annotate import roles, services
from annotate.models import Document, Judgment, Persona, Topic
from tests.browserkit import judge_by_keyboard, login, needs_chromium, wait_for, watch
from tests.conftest import FIXTURES, SAMPLE
from tests.factories import ProjectFactory

pytestmark = needs_chromium


@pytest.fixture
def project(collection, make_user, tmp_path):
    box = tmp_path / "box"
    box.mkdir()
    for name in (
        "xss.eml",
        "html-only.eml",
        "attachments.eml",
        "multipart-alternative.eml",
        "unknown-charset.eml",
    ):
        (box / name).write_bytes((FIXTURES / "emails" / "edge" / name).read_bytes())
    services.import_run(collection=collection, fmt="emails", path=box)
    services.import_run(collection=collection, fmt="emails", path=SAMPLE)
    a, b = make_user("alice", roles.ANNOTATOR), make_user("bob", roles.ANNOTATOR)
    for u in (a, b):
        u.set_password("pw-browser")
        u.save()
    topic = Topic.objects.create(
        collection=collection,
        number="1",
        title="alert script meeting",
        description="Messages about meetings.",
        narrative="Any.",
    )
    persona = Persona.objects.create(name="Maeve", pain_points="family matters")
    p = ProjectFactory(
        name="Browser",
        collection=collection,
        personas=[persona],
        topics=[topic],
        annotators=[a, b],
        guidelines="Judge carefully.",
        documents=sorted(
            Document.objects.filter(collection=collection), key=lambda d: d.docid != "box/xss.eml"
        ),
    )
    return p, a, b


def test_annotator_judges_by_keyboard_keeps_progress_edits_and_sees_only_own_work(
    browser, live_server, project
):
    p, alice, bob = project
    url = live_server.url
    events = []
    page = browser.new_page()
    watch(page, url, events)
    login(page, url, "alice", "pw-browser")
    response = page.goto(f"{url}/annotate/{p.slug}/judge/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector("#current section.task")
    # T9: the hostile message is first, and is shown as text.
    assert "<script>alert('body')</script>" in page.inner_text("#current article.email")
    assert page.locator("#current article.email script, #current article.email svg").count() == 0

    answers = [("2", "y", "n"), ("1", "n", "n"), ("0", "d", "y")]
    seen = judge_by_keyboard(
        page, answers, stored=lambda: Judgment.objects.filter(annotator=alice).count()
    )
    assert "Saved" in page.inner_text("#save-status")

    stored = {j.task_id: j for j in Judgment.objects.filter(annotator=alice)}
    assert sorted(stored) == sorted(seen)
    for task_id, (rel, persona, own) in zip(seen, answers, strict=True):
        j = stored[task_id]
        expect = {"y": "yes", "n": "no", "d": "dont_know"}
        assert (j.relevance, j.persona_sensitive, j.personal_sensitive) == (
            int(rel),
            expect[persona],
            expect[own],
        )
        assert j.active_seconds >= 0 and j.submitted_at >= j.started_at

    page.reload()
    page.wait_for_selector("#current section.task")
    assert "You: 3 judged" in page.inner_text("#current .progress")

    page.keyboard.press("h")
    page.wait_for_url(f"{url}/annotate/{p.slug}/history/")
    page.click("text=Change >> nth=0")
    page.check("input[name=relevance][value='1']")
    page.click("button:has-text('Save change')")
    page.wait_for_url(f"{url}/annotate/{p.slug}/history/")
    changed = Judgment.objects.get(annotator=alice, version=2)
    assert changed.relevance == 1 and changed.history.get().version == 1

    other = browser.new_page()
    watch(other, url, events)
    login(other, url, "bob", "pw-browser")
    other.goto(f"{url}/annotate/{p.slug}/judge/")
    other.wait_for_selector("#current section.task")
    bob_task = int(other.evaluate("document.querySelector('#current section.task').dataset.taskId"))
    assert bob_task not in seen
    other.goto(f"{url}/annotate/{p.slug}/history/")
    assert "No judgments yet." in other.inner_text("main")
    for task_id in seen:
        r = other.request.post(
            f"{url}/api/tasks/{task_id}/skip/",
            data={"reason": "x"},
            headers={"X-CSRFToken": other.context.cookies()[0]["value"]},
        )
        assert r.status == 404 or r.status == 403
    assert events == [], events


def test_the_edit_page_keys_answer_question_2_then_3_and_backspace_restores_the_stored_answer(
    browser, live_server, project
):
    """The edit page has both sensitivity questions pre-filled: y/n/d must still answer
    question 2 first (before, they always went to question 3, and a change meant for
    question 2 was saved on question 3), and Backspace put back the stored answer (before,
    it cleared the question)."""
    p, alice, _bob = project
    url = live_server.url
    events = []
    page = browser.new_page()
    watch(page, url, events)
    login(page, url, "alice", "pw-browser")
    page.goto(f"{url}/annotate/{p.slug}/judge/")
    page.keyboard.press("Backspace")  # nothing to undo yet: nothing happens
    judge_by_keyboard(
        page, [("2", "y", "n")], stored=lambda: Judgment.objects.filter(annotator=alice).count()
    )
    page.keyboard.press("h")
    page.wait_for_url(f"{url}/annotate/{p.slug}/history/")
    page.click("text=Change >> nth=0")
    page.wait_for_selector("form.answers input[name=persona_sensitive][value=yes]:checked")
    for key in ("0", "n", "y", "Backspace", "Backspace", "d", "Backspace", "n"):
        page.keyboard.press(key)
    # 0: relevance; n: question 2 (yes -> no); y: question 3 (no -> yes); Backspace twice:
    # both back to the stored yes / no; d then Backspace: question 2 yes again; n: question 2.
    answer = "document.querySelector('form.answers input[name={}]:checked')?.value"
    assert page.evaluate(answer.format("persona_sensitive")) == "no"
    assert page.evaluate(answer.format("personal_sensitive")) == "no"
    # An answer given with the mouse is undone by Backspace like a key's.
    page.check("form.answers input[name=persona_sensitive][value=dont_know]")
    page.keyboard.press("Backspace")
    assert page.evaluate(answer.format("persona_sensitive")) == "no"
    page.keyboard.press("Enter")
    page.wait_for_url(f"{url}/annotate/{p.slug}/history/")
    j = Judgment.objects.get(annotator=alice)
    assert (j.version, j.relevance, j.persona_sensitive, j.personal_sensitive) == (
        2,
        0,
        "no",
        "no",
    )
    assert events == [], events


def test_a_save_made_after_the_session_ended_is_kept_and_sent_after_login(
    browser, live_server, project
):
    p, alice, _ = project
    url = live_server.url
    context = browser.new_context()
    page = context.new_page()
    login(page, url, "alice", "pw-browser")
    page.goto(f"{url}/annotate/{p.slug}/judge/")
    page.wait_for_selector("#current section.task")
    task_id = int(page.evaluate("document.querySelector('#current section.task').dataset.taskId"))
    context.clear_cookies(name="sessionid")  # the session ends (expired, or logged out)
    for key in ("1", "n", "n", "Enter"):
        page.keyboard.press(key)
    wait_for(page, "document.getElementById('save-status').textContent.includes('logged out')")
    assert not Judgment.objects.filter(task_id=task_id).exists()
    other = context.new_page()
    login(other, url, "alice", "pw-browser")
    wait_for(page, "document.getElementById('save-status').textContent.includes('Saved')", 30)
    assert page.inner_text("#save-errors") == ""
    assert Judgment.objects.get(task_id=task_id, annotator=alice).relevance == 1


def test_the_progress_line_follows_tasks_added_while_the_page_is_open(
    browser, live_server, project
):
    """Tasks are added behind an open page (as a learning plan's queue grows): after the
    next save the bars and the "N tasks = N needed" line both show the new counts, the line
    exactly as a fresh render writes it."""
    from annotate.models import Round
    from annotate.projects import project_tasks_add

    p, alice, _ = project
    url = live_server.url
    page = browser.new_page()
    login(page, url, "alice", "pw-browser")
    page.goto(f"{url}/annotate/{p.slug}/judge/")
    page.wait_for_selector("#current section.task")
    before = page.inner_text("#current [data-count=tasks]")
    tasks = p.tasks.count()
    assert before == f"{tasks} tasks = {tasks} needed"

    later = Persona.objects.create(name="Ciaran", pain_points="health")
    p.personas.add(later)
    added = project_tasks_add(
        project=p,
        round_=Round.objects.get(project=p),
        topic=p.topics.get(),
        persona=later,
        documents=list(Document.objects.filter(collection=p.collection)[:3]),
    )
    assert added == 3
    judge_by_keyboard(
        page, [("1", "n", "n")], stored=lambda: Judgment.objects.filter(annotator=alice).count()
    )
    wait_for(
        page,
        "document.querySelector('#current [data-count=project]').textContent.startsWith('1 / ')",
    )
    line = page.inner_text("#current [data-count=tasks]")
    assert line == f"{tasks + 3} tasks = {tasks + 3} needed", line
    assert page.inner_text("#current [data-count=project]") == f"1 / {tasks + 3}"
    page.reload()
    page.wait_for_selector("#current section.task")
    assert page.inner_text("#current [data-count=tasks]") == line


def _waiting_for_the_model(p):
    """Empty the project's queue and give it a learning plan that has queued nothing yet;
    return a function that queues one task, as the plan's next step would."""
    from annotate.models import Round, Task
    from annotate.projects import project_tasks_add
    from ranking.models import LearningPlan

    Task.objects.filter(project=p).delete()
    topic, persona = p.topics.get(), p.personas.get()
    round_ = Round.objects.get(project=p)
    LearningPlan.objects.create(
        project=p,
        topic=topic,
        round=round_,
        budget=10,
        batch_size=1,
        status=LearningPlan.Status.LEARNING,
    )

    def queue_one() -> int:
        document = Document.objects.get(collection=p.collection, docid="box/xss.eml")
        added = project_tasks_add(
            project=p,
            round_=round_,
            topic=topic,
            persona=persona,
            documents=[document],
            source=Task.Source.ACTIVE,
        )
        assert added == 1
        return Task.objects.get(project=p).pk

    return queue_one


def test_a_page_waiting_for_the_model_shows_its_first_task_without_a_reload(
    browser, live_server, project
):
    """An active-learning project whose model has not queued anything yet (the first seconds
    of a plan, or a late retrain): the page says the model is choosing and asks again by
    itself, so the task the model queues goes on show with no click or reload."""
    p, alice, _ = project
    queue_one = _waiting_for_the_model(p)
    url = live_server.url
    page = browser.new_page()
    login(page, url, "alice", "pw-browser")
    page.goto(f"{url}/annotate/{p.slug}/judge/")
    page.wait_for_selector("#current section.done[data-poll]")
    assert "the model is choosing the next documents" in page.inner_text("#current")
    task_id = queue_one()
    page.wait_for_selector("#current section.task", timeout=15_000)  # asked after 5 s, 7.5 s
    assert page.get_attribute("#current section.task", "data-task-id") == str(task_id)


def test_the_asking_outlives_a_failed_ask_and_a_logout_at_one_request_per_ask(
    browser, live_server, project
):
    """A waiting page whose ask fails (the network, a server restarting) asks again; one
    whose session ended asks once per turn (the login page is not followed: before, each
    answer made it ask again at once, about 60 requests a second) and says so; a login in
    another tab brings the next task."""
    p, alice, _ = project
    queue_one = _waiting_for_the_model(p)
    url = live_server.url
    context = browser.new_context()  # two tabs of one browser: one logs in again
    page = context.new_page()
    asks = []
    page.on(
        "request",
        lambda r: asks.append(r.url) if r.method == "POST" and r.url.endswith("/next/") else None,
    )
    login(page, url, "alice", "pw-browser")
    page.route("**/next/", lambda route: route.abort(), times=2)  # the page's first, and 5 s on
    page.goto(f"{url}/annotate/{p.slug}/judge/")
    wait_for(page, "document.getElementById('save-status').textContent.includes('did not answer')")
    page.context.clear_cookies(name="sessionid")  # logged out before the next ask, 7.5 s on
    wait_for(
        page,
        "document.getElementById('save-status').textContent.includes('logged out')",
        timeout=15,
    )
    page.wait_for_timeout(2000)  # (a sleep would not let the page's events through)
    assert len(asks) == 3, asks  # the first (failed), 5 s on (failed), 12.5 s on (logged out)
    login(context.new_page(), url, "alice", "pw-browser")
    task_id = queue_one()
    page.wait_for_selector("#current section.task", timeout=20_000)  # the ask at 23.75 s
    assert page.get_attribute("#current section.task", "data-task-id") == str(task_id)
    assert len(asks) <= 5, asks  # the fourth brought it; a fifth preloads the one after
    context.close()
