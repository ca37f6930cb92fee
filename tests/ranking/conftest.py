"""Fixtures shared by the ranking tests."""

from pathlib import Path

import pytest

from annotate import services
from annotate.models import Collection

SMART = Path(__file__).parents[1] / "fixtures" / "smart"


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
