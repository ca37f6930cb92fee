"""The login page with a limit on failed attempts (RELIABILITY.md T12).

Failures are counted in the cache per (client address, username) and per client address,
over a sliding window of ``SASC_LOGIN_WINDOW`` seconds. Past ``SASC_LOGIN_MAX_FAILURES`` for
the pair, or five times that for the address, every attempt from there is refused with 429
and the time to wait, whether or not the password is right, so guessing gains nothing. A
successful login clears the pair's count. Deployments point the cache at Redis (``CACHE_URL``)
so that every web process shares the counts.
"""

import hashlib
import time

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.cache import cache

ADDRESS_FACTOR = 5


def _keys(request) -> tuple[str, str]:
    address = request.META.get("REMOTE_ADDR", "")
    username = request.POST.get("username", "").strip().lower()[:150]
    pair = hashlib.sha256(f"{address}\0{username}".encode()).hexdigest()
    return f"login-fail:{pair}", f"login-fail-address:{address}"


def _failures(key: str, window: int) -> list[float]:
    now = time.time()
    return [t for t in cache.get(key, []) if now - t < window]


class LoginView(auth_views.LoginView):
    def post(self, request, *args, **kwargs):
        window = settings.SASC_LOGIN_WINDOW
        limit = settings.SASC_LOGIN_MAX_FAILURES
        pair, address = _keys(request)
        pair_failures, address_failures = _failures(pair, window), _failures(address, window)
        if len(pair_failures) >= limit or len(address_failures) >= limit * ADDRESS_FACTOR:
            oldest = min(pair_failures if len(pair_failures) >= limit else address_failures)
            wait = max(1, int(window - (time.time() - oldest)) + 1)
            message = f"Too many failed logins from here; try again in {-(-wait // 60)} minutes."
            form = self.form_class(request)  # unbound: nothing of the attempt is checked
            response = self.render_to_response(self.get_context_data(form=form, locked_out=message))
            response.status_code = 429
            response["Retry-After"] = str(wait)
            return response
        response = super().post(request, *args, **kwargs)
        if request.user.is_authenticated:
            cache.delete(pair)
        else:
            now = time.time()
            cache.set(pair, [*pair_failures, now], window)
            cache.set(address, [*address_failures, now], window)
        return response
