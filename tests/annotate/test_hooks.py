"""The up-calls annotate makes by name (annotate/hooks.py): each is connected at start-up to
the function its comment names, and a hook refuses what would lose or hide an event."""

import re
from pathlib import Path

import pytest

from annotate import hooks

SOURCE = Path(hooks.__file__).read_text()


@pytest.mark.parametrize("hook", hooks.ALL, ids=lambda h: h.name)
def test_every_hook_is_connected_to_the_function_its_comment_names(hook):
    # The comment above "name = Hook(" ends with "... connects ``module.function``".
    comment = SOURCE[: SOURCE.index(f'{hook.name} = Hook("{hook.name}"')].rsplit("\n\n", 1)[1]
    named = re.findall(r"connects\s+``([\w.]+)``", comment.replace("\n# ", " "))
    assert named, f"the comment of {hook.name} names no function"
    assert hook.connected_to == named[0]


def test_every_hook_is_listed():
    declared = re.findall(r"^(\w+) = Hook\(", SOURCE, re.M)
    assert sorted(declared) == sorted(h.name for h in hooks.ALL)


def test_a_second_owner_is_refused_and_the_first_stays():
    hook = hooks.Hook("example")
    first = lambda **kw: 1  # noqa: E731
    hook.connect(first)
    hook.connect(first)  # the same function again (a second ready()): harmless
    with pytest.raises(RuntimeError, match="already connected"):
        hook.connect(lambda **kw: 2)
    assert hook() == 1


def test_a_required_hook_with_nothing_connected_raises_instead_of_losing_the_event():
    with pytest.raises(RuntimeError, match="nothing connected"):
        hooks.Hook("audit_example", required=True)(user=None, action="x")
    assert hooks.Hook("optional", default=[])() == []


@pytest.mark.django_db
def test_an_import_job_asks_ranking_for_an_index_build_through_the_hook(collection, monkeypatch):
    """An import job that created documents calls documents_imported, and ranking's
    job_index_create records the build: the index job exists only through the hook."""
    from annotate import services
    from annotate.models import Job
    from tests.conftest import SAMPLE

    monkeypatch.setattr("annotate.jobs.queue_on_commit", lambda *a, **k: None)  # no worker here
    job = services.job_import_create(collection=collection, fmt="emails", path=SAMPLE, label="x")
    services.job_import_run(job_id=job.pk)
    builds = Job.objects.filter(collection=collection, kind=Job.Kind.INDEX)
    assert builds.count() == 1
    assert hooks.documents_imported.connected_to == "ranking.services.job_index_create"
