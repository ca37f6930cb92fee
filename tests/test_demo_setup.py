"""`manage.py demo`'s setup: the first run prepares everything, a second run redoes nothing."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotate.models import Job
from config.demo import corpus
from config.management.commands import demo


@pytest.mark.lucene
@pytest.mark.django_db
def test_a_second_setup_finds_everything_in_place_and_redoes_nothing(
    settings, tmp_path, monkeypatch
):
    settings.VAR_DIR = tmp_path
    settings.STATIC_ROOT = tmp_path / "static"

    def offline(cache_dir, say=print):
        raise corpus.CorpusUnavailable("offline in the tests")

    # npm is outside the project: the demo falls back to the 39-message sample.
    monkeypatch.setattr(corpus, "fetch", offline)
    first = demo.Command(stdout=io.StringIO(), stderr=io.StringIO())
    first.setup()
    said = first.stdout.getvalue()
    assert "Loading the small sample" in first.stderr.getvalue()
    assert "Collecting" in said and "Indexed 39 messages" in said
    User = get_user_model()
    jobs = Job.objects.count()
    hashes = dict(User.objects.values_list("username", "password"))
    assert set(hashes) >= {name for name, _role in demo.USERS}
    _day_one_publishes_a_searchable_collection(said)

    second = demo.Command(stdout=io.StringIO(), stderr=io.StringIO())
    second.setup()
    said = second.stdout.getvalue()
    assert "Static files unchanged" in said
    assert "Demo collection present: 39 messages" in said
    assert "Indexed" not in said and "Topics:" not in said and "Creating the database" not in said
    assert Job.objects.count() == jobs  # no import or index job recorded again
    assert dict(User.objects.values_list("username", "password")) == hashes  # not re-hashed
    assert {label for label, _seconds in second.timings} == {"migrate", "static files", "users"}


def _day_one_publishes_a_searchable_collection(said):
    """Day one: the persona's classifier trained, the band the rule chose saved through the
    lead's service (audited), and ordinary queries get results."""
    from django.test import Client

    from annotate.models import Collection
    from review import services
    from review.models import AuditEvent, SearchLog

    assert "Day one:" in said
    collection = Collection.objects.get(slug=demo.SLUG)
    publication = collection.publication
    rule = services.band_suggested(inputs=services.band_inputs(publication=publication))
    assert publication.published
    assert (publication.band_low, publication.band_high) == (rule.low, rule.high)
    event = AuditEvent.objects.get(action="band-change")
    assert event.user.username == "lead"
    assert event.detail["new"]["low"] == rule.low
    client = Client()
    client.force_login(get_user_model().objects.get(username="searcher"))
    for query in ("spam", "mailing list"):
        client.post(f"/search/{collection.slug}/", {"q": query})
        assert SearchLog.objects.order_by("-pk").first().shown, query


def test_screenshots_names_a_missing_chromium(tmp_path):
    with pytest.raises(CommandError, match="no Chromium at /nonexistent/chromium"):
        call_command("screenshots", "--chromium", "/nonexistent/chromium", "--out", tmp_path)


@pytest.mark.lucene
@pytest.mark.django_db
def test_an_import_cut_short_is_resumed_on_the_next_start(settings, tmp_path, monkeypatch):
    from annotate.models import Collection, Document

    settings.VAR_DIR = tmp_path
    settings.STATIC_ROOT = tmp_path / "static"

    def offline(cache_dir, say=print):
        raise corpus.CorpusUnavailable("offline in the tests")

    monkeypatch.setattr(corpus, "fetch", offline)
    # A first start interrupted after a few messages: some stored, the marker not written.
    collection = Collection.objects.create(slug=demo.SLUG, name="SpamAssassin ham")
    Document.objects.create(collection=collection, docid="cut-short", content_hash="x")
    command = demo.Command(stdout=io.StringIO(), stderr=io.StringIO())
    command.setup()
    assert "Loading the small sample" in command.stderr.getvalue()
    assert collection.documents.count() == 40  # the 39 messages and the one stored before
    assert (tmp_path / ".demo-corpus-loaded").read_text().strip() == str(collection.pk)


def test_the_demo_keeps_its_port_after_a_restart_and_moves_only_off_a_live_server():
    """A port holding only the last run's closed connections (TIME_WAIT) is free; one a
    server listens on is not."""
    import socket

    from config.management.commands.demo import _free_port

    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    assert _free_port(port) != port  # a live server keeps it
    client = socket.create_connection(("127.0.0.1", port))
    conn, _ = server.accept()
    conn.close()  # the server's side closes first: its end waits in TIME_WAIT
    client.close()
    server.close()
    assert _free_port(port) == port
