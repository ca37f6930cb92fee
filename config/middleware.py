"""Security headers Django 5.2 does not set by itself."""

from django.conf import settings


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
