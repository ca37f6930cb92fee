"""The login page with a limit on failed attempts (RELIABILITY.md T12).

Failures are counted in the cache over a sliding window of ``SASC_LOGIN_WINDOW`` seconds:

- per (client address, username): past ``SASC_LOGIN_MAX_FAILURES`` every attempt on that
  name from there is refused with 429 and the time to wait, whether or not the password is
  right, so guessing gains nothing;
- per client address, five times that, against one client trying many names;
- per known device: a browser that has logged in as a user before holds a signed cookie
  naming that user (the device-cookie scheme of the OWASP authentication guidance). Its
  attempts at that user are counted per device and never against the address, so no one at a
  shared address (an office behind NAT, a proxy that was not configured) can lock out the
  people who have logged in from their own browsers before.

The client address is ``REMOTE_ADDR``, unless that is one of ``SASC_TRUSTED_PROXIES``
(addresses or networks, e.g. ``127.0.0.1,10.0.0.0/8``): then it is the right-most address of
``X-Forwarded-For`` that is not a trusted proxy (``docs/deploy.md``). The header is never read
from anyone else, since a client can write whatever it likes there. Deployments point the
cache at Redis (``CACHE_URL``) so that every web process shares the counts.
"""

import hashlib
import ipaddress
import secrets
import time
from functools import lru_cache

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core import signing
from django.core.cache import cache

ADDRESS_FACTOR = 5
DEVICE_COOKIE = "sasc_device"
DEVICE_SALT = "sasc.login.device"
DEVICE_AGE = 365 * 24 * 3600


@lru_cache(maxsize=8)
def _networks(proxies: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(p, strict=False) for p in proxies)


def _trusted(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(ip in net for net in _networks(tuple(settings.SASC_TRUSTED_PROXIES)))


def client_address(request) -> str:
    """The address of the client, through the trusted proxies only."""
    remote = request.META.get("REMOTE_ADDR", "")
    if not _trusted(remote):
        return remote
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    hops = [h.strip() for h in forwarded.split(",") if h.strip()]
    address = remote
    for hop in reversed(hops):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            break  # garbage in the header: the last proxy we trust is as far as we can see
        address = hop
        if not _trusted(hop):
            break
    return address


def _device(request, username: str) -> str | None:
    """The known-device id of this browser for ``username``, if its cookie is valid."""
    raw = request.COOKIES.get(DEVICE_COOKIE)
    if not raw:
        return None
    try:
        value = signing.loads(raw, salt=DEVICE_SALT, max_age=DEVICE_AGE)
    except signing.BadSignature:
        return None
    if not isinstance(value, dict) or value.get("u") != username:
        return None
    return str(value.get("d", ""))[:64] or None


def _failures(key: str, window: int) -> list[float]:
    now = time.time()
    return [t for t in cache.get(key, []) if now - t < window]


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


class LoginView(auth_views.LoginView):
    # FormView would take PUT as a POST; the page serves GET and POST only (issue 34).
    http_method_names = ["get", "head", "post", "options"]

    def post(self, request, *args, **kwargs):
        window = settings.SASC_LOGIN_WINDOW
        limit = settings.SASC_LOGIN_MAX_FAILURES
        address = client_address(request)
        username = request.POST.get("username", "").strip().lower()[:150]
        device = _device(request, username)
        if device is not None:
            pair, wide = f"login-fail-device:{_digest(device, username)}", None
        else:
            pair = f"login-fail:{_digest(address, username)}"
            wide = f"login-fail-address:{_digest(address)}"
        pair_failures = _failures(pair, window)
        wide_failures = _failures(wide, window) if wide else []
        if len(pair_failures) >= limit or len(wide_failures) >= limit * ADDRESS_FACTOR:
            oldest = min(pair_failures if len(pair_failures) >= limit else wide_failures)
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
            token = signing.dumps(
                {"u": username, "d": device or secrets.token_hex(16)}, salt=DEVICE_SALT
            )
            response.set_cookie(
                DEVICE_COOKIE,
                token,
                max_age=DEVICE_AGE,
                httponly=True,
                secure=settings.SESSION_COOKIE_SECURE,
                samesite="Lax",
            )
        else:
            now = time.time()
            cache.set(pair, [*pair_failures, now], window)
            if wide:
                cache.set(wide, [*wide_failures, now], window)
        return response
