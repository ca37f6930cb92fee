"""The Celery application. Tasks are entry points that take ids and call a service."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("sasc")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
