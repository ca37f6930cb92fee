"""Security headers Django 5.2 does not set by itself; 503 while the database is away."""

import logging

from django.conf import settings
from django.db import InterfaceError, OperationalError, connections
from django.http import HttpResponse
from django.shortcuts import render

from config.api import api_error, is_api

logger = logging.getLogger(__name__)


class ContentSecurityPolicyMiddleware:
    """Add an enforced Content-Security-Policy to every response (G8).

    Email bodies are untrusted; even if escaping failed somewhere, the policy keeps any
    injected script or outbound request from running.
    """

    def __init__(self, get_response):
        self.get_response = get_response
        self.policy = settings.SASC_CSP

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", self.policy)
        return response


class NullCharacterMiddleware:
    """Answer 400, naming the parameter, for a query-string or form value holding a NUL
    character: no free text (a comment, a note, a reason, a search) may hold one, and
    PostgreSQL refuses to store it with an error that was a 500 (issue 21). Django's and
    DRF's form fields refuse NUL themselves; the views that read ``request.POST`` directly do
    not, so it is refused here once for all of them."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        sources = [request.GET, request.POST] if request.method == "POST" else [request.GET]
        for source in sources:
            for name, values in source.lists():
                if "\x00" in name or any("\x00" in v for v in values):
                    message = f"The parameter {name[:80]!r} holds a NUL character."
                    if is_api(request):
                        return api_error("invalid", message, 400)
                    return render(request, "400.html", {"message": message}, status=400)
        return self.get_response(request)


class DatabaseUnavailableMiddleware:
    """Answer 503 with Retry-After, not 500, while the database is unreachable (restarting,
    failing over): clients and the judging page retry with the same Idempotency-Key, and
    the connection is dropped so the next request opens a fresh one (T6)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        logger.warning("database unavailable: %s", exception)
        for connection in connections.all(initialized_only=True):
            connection.close_if_unusable_or_obsolete()
        message = "The database is not reachable just now; try again in a few seconds."
        if is_api(request):
            response = api_error("unavailable", message, 503)
        else:
            response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = "5"
        return response
