import os
from pathlib import Path

import pytest
from django.db import connections

from annotate import roles, services
from annotate.models import Collection
from tests.browserkit import (  # noqa: F401 (fixtures for the browser tests)
    audit_log_emptied,
    browser,
)
from tests.learningkit import plan_setup  # noqa: F401 (worker tests' plan)
from tests.reviewkit import published  # noqa: F401 (a fixture for the review tests)
from tests.stormkit import storm_project  # noqa: F401 (T1's world)
from tests.workerkit import worker_env  # noqa: F401 (a fixture for the integration tests)

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLE = FIXTURES / "emails" / "sample"
SHARED_DATA = Path(
    os.environ.get("SASC_SHARED_DATA", Path(__file__).parents[2] / "shared" / "data")
)


# The one PostgreSQL condition: the database the tests run on (settings.DATABASES, from
# DATABASE_URL) is PostgreSQL. Tests say so with ``@pytest.mark.needs_postgres("why")``.
ON_POSTGRES = connections["default"].vendor == "postgresql"


def pytest_collection_modifyitems(config, items):
    """Skip every test marked ``needs_postgres`` unless the tests run on PostgreSQL; the
    marker's argument says why the test needs it."""
    if ON_POSTGRES:
        return
    for item in items:
        marker = item.get_closest_marker("needs_postgres")
        if marker is not None:
            why = marker.args[0] if marker.args else "PostgreSQL only"
            item.add_marker(
                pytest.mark.skip(reason=f"needs PostgreSQL (DATABASE_URL, see .ci/run): {why}")
            )


def needs_shared_data(*parts):
    """Skip a test when ../shared/data (or the named part of it) is absent."""
    path = SHARED_DATA.joinpath(*parts)
    return pytest.mark.skipif(
        not path.exists(), reason=f"{path} is absent (reference collections not available)"
    )


@pytest.fixture(autouse=True)
def _isolated_dirs(settings, tmp_path):
    """Keep indexes and uploads of each test in its own folder; serve static files unhashed."""
    settings.SASC_INDEX_DIR = tmp_path / "indexes"
    settings.SASC_UPLOAD_DIR = tmp_path / "uploads"
    # Hashing test passwords with PBKDF2 would dominate the run time.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture(autouse=True)
def _audit_log_emptied_for_live_servers(request):
    """Every test that empties the database afterwards (a live server, a transactional
    test) gets ``audit_log_emptied``: annotation now writes audit rows, which SQLite's
    append-only trigger would not let the flush delete."""
    if {"live_server", "transactional_db"} & set(request.fixturenames):
        request.getfixturevalue("audit_log_emptied")


@pytest.fixture
def make_user(db):
    def make(username, *role_names):
        return services.user_create(
            username=username, password="pw-for-tests-only", role_names=list(role_names)
        )

    return make


@pytest.fixture
def users(make_user):
    return {
        "lead": make_user("lead", roles.LEAD),
        "annotator": make_user("ann", roles.ANNOTATOR),
        "archivist": make_user("arch", roles.ARCHIVIST),
        "searcher": make_user("search", roles.SEARCHER),
        "norole": make_user("nobody"),
    }


@pytest.fixture
def login(client):
    def as_user(user):
        client.force_login(user)
        return client

    return as_user


@pytest.fixture
def collection(db):
    return Collection.objects.create(name="Test mail", slug="test-mail")


@pytest.fixture
def sample_collection(collection):
    report = services.import_run(collection=collection, fmt="emails", path=SAMPLE)
    assert report.ok, [str(i) for i in report.errors]
    collection.refresh_from_db()
    return collection


@pytest.fixture
def make_project(sample_collection, make_user):
    """Build a project over the sample collection with ``n_tasks`` tasks of one topic."""
    from annotate.models import Document, Round
    from tests.factories import PersonaFactory, ProjectFactory, TopicFactory

    def make(
        *, annotators=2, n_tasks=6, overlap=1, kind=Round.Kind.PRODUCTION, lease=30, name="Project"
    ):
        users = [make_user(f"{name.lower()}-a{i}", roles.ANNOTATOR) for i in range(annotators)]
        docs = list(Document.objects.filter(collection=sample_collection).order_by("id"))
        project = ProjectFactory(
            name=name,
            collection=sample_collection,
            personas=[PersonaFactory(name="Maeve", pain_points="x")],
            topics=[
                TopicFactory(collection=sample_collection, number="1", title="sequences window")
            ],
            annotators=users,
            overlap=overlap,
            round_kind=kind,
            lease_minutes=lease,
            documents=docs[:n_tasks],
        )
        return project, users

    return make


ANSWERS = dict(relevance=2, persona_sensitive="no", personal_sensitive="dont_know", comment="")


SMART = Path(__file__).parent / "fixtures" / "smart"


@pytest.fixture
def mini(db):
    """The mini SMART collection (tests/fixtures/smart) with its topics and graded qrels, not
    indexed."""
    c = Collection.objects.create(name="Mini", slug="mini", kind="smart")
    services.import_run(collection=c, fmt="smart", path=SMART / "mini.all")
    services.import_run(collection=c, fmt="topics-smart-order", path=SMART / "mini.qry")
    services.import_run(collection=c, fmt="qrels-cranfield", path=SMART / "mini.rel")
    c.refresh_from_db()
    return c
