"""The Celery application. Tasks are entry points that take ids and call a service."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("sasc")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


QUEUES = ("interactive", "bulk")  # settings.CELERY_QUEUES_INTERACTIVE, CELERY_QUEUES_BULK


def worker_command(bin_dir, *extra: str, queues: tuple[str, ...] = QUEUES) -> list[str]:
    """The command line of one Celery worker serving ``queues`` (both, ``interactive`` and
    ``bulk``, unless told), one task at a time, logging at INFO; ``bin_dir`` holds the
    venv's ``celery``. The demo runs one worker per queue, so that an import never holds up a
    searcher's review requests and a burst of those never holds up an import; the
    integration tests' worker and the SQLite benchmark start theirs with it too; ``extra``
    adds options (the demo's quiet, heartbeat-free workers)."""
    return [
        str(bin_dir / "celery"),
        *extra,
        "-A",
        "config",
        "worker",
        "-Q",
        ",".join(queues),
        "--concurrency",
        "1",
        "--loglevel",
        "INFO",
    ]
