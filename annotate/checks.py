"""Deployment checks of our own, run by ``manage.py check --deploy`` (T12)."""

from django.conf import settings
from django.core.checks import Warning, register


@register(deploy=True)
def shared_cache(app_configs, **kwargs):
    """The login limit counts failures in the cache: per process unless it is shared."""
    backend = settings.CACHES["default"]["BACKEND"]
    if backend.endswith("LocMemCache"):
        return [
            Warning(
                "The cache is in process memory, so each web process counts failed logins on "
                "its own and the login limit multiplies by the number of processes.",
                hint="Set CACHE_URL to a Redis URL (redis://:password@host:6379/1).",
                id="sasc.W001",
            )
        ]
    return []
