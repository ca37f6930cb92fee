"""The Celery application. Tasks are entry points that take ids and call a service."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("sasc")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def worker_command(bin_dir, *extra: str) -> list[str]:
    """The command line of one Celery worker serving every queue of ``CELERY_TASK_ROUTES``
    (``default`` and ``ranking``), one task at a time, logging at INFO; ``bin_dir`` holds the
    venv's ``celery``. The demo, the integration tests' worker and the SQLite benchmark all
    start theirs with it; ``extra`` adds options (the demo's quiet, heartbeat-free worker)."""
    return [
        str(bin_dir / "celery"),
        *extra,
        "-A",
        "config",
        "worker",
        "-Q",
        "default,ranking",
        "--concurrency",
        "1",
        "--loglevel",
        "INFO",
    ]
