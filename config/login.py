"""The login page and its throttling (RELIABILITY.md T12, issue 34; docs/deploy.md).

Two measures, so that guessing is slow and no one can lock out others (OWASP ASVS V2.2.1,
NIST SP 800-63B 5.2.2: rate limiting per account, at most 100 consecutive failures, and
"require the claimant to complete a bot-challenge" or "wait" rather than refuse outright):

- **Per account, exponential back-off.** The first ``SASC_LOGIN_FREE_FAILURES`` failed
  attempts on a username are free; after the n-th the account waits
  ``SASC_LOGIN_BACKOFF * 2 ** (n - free)`` seconds, at most ``SASC_LOGIN_MAX_DELAY``. While it
  waits every attempt on it is refused (429, ``Retry-After``) without the password being
  checked, so guessing gains nothing. Past ``SASC_LOGIN_ACCOUNT_CAP`` consecutive failures
  only known devices may try, until a day without failures. One attempt at a time: each
  takes a turn (an atomic add in the cache), so parallel requests cannot slip past the delay.
- **Per source, a puzzle rather than a refusal.** Past ``SASC_LOGIN_SOURCE_FREE`` password
  checks that failed from one client address in an hour, an attempt from that address must
  carry a solved proof-of-work puzzle (``SASC_LOGIN_PUZZLE_BITS`` zero bits of SHA-256, about
  a second of the page's own JavaScript; signed, single-use, verified with one hash). An
  attacker there pays that work for every further guess across accounts; a user behind the
  same NAT or proxy pays it once and gets in with the right password.
- **Known devices.** A browser that has logged in as a user holds a signed cookie naming
  that user (OWASP's device-cookie scheme). Its attempts at that user are counted per device
  with the same back-off, never against the account or the source: an attacker without the
  cookie cannot lock the user's own browser out.

The client address is ``REMOTE_ADDR``, unless that is one of ``SASC_TRUSTED_PROXIES``
(addresses or networks, e.g. ``127.0.0.1,10.0.0.0/8``): then it is the right-most address of
``X-Forwarded-For`` that is not a trusted proxy (``docs/deploy.md``). The header is never read
from anyone else, since a client can write whatever it likes there. Deployments point the
cache at Redis (``CACHE_URL``) so that every web process shares the counts.
"""

import hashlib
import ipaddress
import math
import secrets
import time
from functools import lru_cache
from typing import NamedTuple

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core import signing
from django.core.cache import cache

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


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


ACCOUNT_MEMORY = 24 * 3600  # consecutive failures are forgotten a day after the last
SOURCE_WINDOW = 3600
PUZZLE_SALT = "sasc.login.puzzle"
PUZZLE_AGE = 600
TURN_HOLD = 60  # a turn whose request died is free again after this


def _now() -> float:
    """The clock of the counters (a test runs an hour of attack on a clock of its own)."""
    return time.time()


def delay_after(failures: int) -> int:
    """Return the seconds to wait after ``failures`` consecutive failures on one account."""
    free = settings.SASC_LOGIN_FREE_FAILURES
    if failures < free:
        return 0
    doubled = settings.SASC_LOGIN_BACKOFF * 2 ** min(failures - free, 40)
    return min(doubled, settings.SASC_LOGIN_MAX_DELAY)


class Turn(NamedTuple):
    """An attempt's claim on an account (or device): its counter's state when taken."""

    key: str
    generation: str
    failures: int


def turn_take(key: str) -> tuple[Turn | None, int]:
    """Claim the next attempt on ``key``: ``(turn, 0)``, or ``(None, seconds to wait)``."""
    state = cache.get(key) or {"g": "0", "n": 0, "t": 0.0}
    now = _now()
    if state["n"] and now - state["t"] >= ACCOUNT_MEMORY:  # forgotten (the cache's TTL too)
        state = {"g": f"{state['g']}.{int(state['t'])}", "n": 0, "t": 0.0}
    if state["n"] >= settings.SASC_LOGIN_ACCOUNT_CAP:
        wait = state["t"] + ACCOUNT_MEMORY - now
    else:
        wait = state["t"] + delay_after(state["n"]) - now
    if wait > 0:
        return None, math.ceil(wait)
    # One attempt per (generation, count): of parallel requests, one checks its password.
    if not cache.add(f"{key}:turn:{state['g']}:{state['n']}", 1, TURN_HOLD):
        return None, 1
    return Turn(key, state["g"], state["n"]), 0


def turn_failed(turn: Turn) -> None:
    """Count the failure of the attempt that held ``turn``."""
    state = {"g": turn.generation, "n": turn.failures + 1, "t": _now()}
    cache.set(turn.key, state, ACCOUNT_MEMORY)


def turn_succeeded(turn: Turn) -> None:
    """Forget the consecutive failures: the right password came."""
    cache.delete_many([turn.key, f"{turn.key}:turn:{turn.generation}:{turn.failures}"])
    cache.set(turn.key, {"g": secrets.token_hex(4), "n": 0, "t": 0.0}, ACCOUNT_MEMORY)


def _source_key(address: str) -> str:
    return f"login-source:{_digest(address)}"


def source_failures(address: str) -> int:
    """Return the failed password checks from ``address`` in its current hour."""
    return int(cache.get(_source_key(address), 0))


def _source_add(address: str, step: int) -> int:
    key = _source_key(address)
    if step < 0:  # taking back an attempt: never into a window that began since
        try:
            return cache.incr(key, step)
        except ValueError:
            return 0
    cache.add(key, 0, SOURCE_WINDOW)
    try:
        return cache.incr(key, step)
    except ValueError:  # expired between the two calls
        cache.set(key, step, SOURCE_WINDOW)
        return step


def puzzle_issue() -> dict:
    """Return a fresh puzzle: its signed token, nonce and number of zero bits."""
    nonce, bits = secrets.token_hex(16), settings.SASC_LOGIN_PUZZLE_BITS
    token = signing.dumps({"n": nonce, "b": bits}, salt=PUZZLE_SALT)
    return {"token": token, "nonce": nonce, "bits": bits}


def zero_bits(digest: bytes) -> int:
    """Return the number of leading zero bits of ``digest``."""
    value = int.from_bytes(digest, "big")
    return len(digest) * 8 - value.bit_length()


def puzzle_check(token: str, answer: str) -> str | None:
    """Return what is wrong with the puzzle's answer, or None once it is verified and spent."""
    if not token:
        return "no puzzle came with it"
    try:
        value = signing.loads(token, salt=PUZZLE_SALT, max_age=PUZZLE_AGE)
    except signing.SignatureExpired:
        return "its puzzle expired"
    except signing.BadSignature:
        return "its puzzle was not one this site issued"
    if not (answer.isascii() and answer.isdigit() and len(answer) <= 20):
        return "the puzzle's answer is not a number"
    digest = hashlib.sha256(f"{value['n']}:{answer}".encode()).digest()
    if zero_bits(digest) < max(int(value["b"]), settings.SASC_LOGIN_PUZZLE_BITS):
        return "the puzzle's answer is wrong"
    if not cache.add(f"login-puzzle:{value['n']}", 1, PUZZLE_AGE):
        return "its puzzle was used already"
    return None


def _in(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} seconds"
    if seconds < 2 * 3600:
        return f"{-(-seconds // 60)} minutes"
    return f"{-(-seconds // 3600)} hours"


class LoginView(auth_views.LoginView):
    # FormView would take PUT as a POST; the page serves GET and POST only (issue 34).
    http_method_names = ["get", "head", "post", "options"]

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        # Half-way to the source's limit the page already brings a puzzle, so that a user
        # whose network crosses it while they type is not turned back.
        address = client_address(self.request)
        if source_failures(address) >= settings.SASC_LOGIN_SOURCE_FREE // 2:
            context["puzzle"] = puzzle_issue()
        return context

    def _refuse(self, request, message: str, wait: int, username: str):
        form = self.form_class(request)  # unbound: nothing of the attempt is checked
        context = self.get_context_data(form=form, locked_out=message, username=username)
        response = self.render_to_response(context)
        response.status_code = 429
        response["Retry-After"] = str(wait)
        return response

    def post(self, request, *args, **kwargs):
        address = client_address(request)
        username = request.POST.get("username", "").strip().lower()[:150]
        device = _device(request, username)
        counted = False  # whether this attempt counts against the source
        if device is not None:
            key = f"login-device:{_digest(device, username)}"
        else:
            key = f"login-account:{_digest(username)}"
            # Count first, atomically: past the limit, only attempts with a solved puzzle.
            counted = True
            if _source_add(address, 1) > settings.SASC_LOGIN_SOURCE_FREE:
                error = puzzle_check(
                    request.POST.get("puzzle", ""), request.POST.get("puzzle_answer", "")
                )
                if error is not None:
                    _source_add(address, -1)
                    message = (
                        f"Not checked: {error}. Many failed logins came from this network, "
                        "so your browser does a short check first; log in again once it is done."
                    )
                    return self._refuse(request, message, 1, username)
        turn, wait = turn_take(key)
        if turn is None:
            if counted:
                _source_add(address, -1)
            message = (
                f"Too many failed logins for this account; try again in {_in(wait)}. "
                "A browser you have logged in from before is not held up."
            )
            return self._refuse(request, message, wait, username)
        response = super().post(request, *args, **kwargs)
        if request.user.is_authenticated:
            turn_succeeded(turn)
            if counted:
                _source_add(address, -1)
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
            turn_failed(turn)
        return response
