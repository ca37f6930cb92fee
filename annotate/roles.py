"""Roles are Django groups; every view and API checks them here.

A superuser holds every role. ``lead`` is the project lead / admin.
"""

import time
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.http import Http404
from rest_framework.exceptions import NotFound
from rest_framework.permissions import BasePermission

ANNOTATOR = "annotator"
ARCHIVIST = "archivist"
SEARCHER = "searcher"
LEAD = "lead"
ROLES = (ANNOTATOR, ARCHIVIST, SEARCHER, LEAD)


# Roles per user id, kept for a few seconds per process: the judging fast path then needs no
# group query per request, and a role taken away still stops working within ROLE_TTL.
ROLE_TTL = 5.0
_role_cache: dict[int, tuple[float, frozenset[str]]] = {}


def user_roles(user) -> frozenset[str]:
    """Return the roles a user holds (cached on the user, and per process for ROLE_TTL s)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return frozenset()
    cached = getattr(user, "_sasc_roles", None)
    if cached is None:
        now = time.monotonic()
        hit = _role_cache.get(user.pk)
        if user.is_superuser:
            cached = frozenset(ROLES)
        elif hit is not None and now - hit[0] < ROLE_TTL:
            cached = hit[1]
        else:
            cached = frozenset(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
            _role_cache[user.pk] = (now, cached)
        user._sasc_roles = cached
    return cached


def forget_roles(user_id: int | None = None) -> None:
    """Drop cached roles (all, or one user's) after roles change."""
    if user_id is None:
        _role_cache.clear()
    else:
        _role_cache.pop(user_id, None)


def has_role(user, *roles: str) -> bool:
    """Return whether the user holds at least one of ``roles``."""
    return bool(user_roles(user) & set(roles))


def role_required(*roles: str):
    """Restrict a function view to users holding one of ``roles``.

    Anonymous users are sent to the login page; logged-in users without the role get 404,
    so the existence of a page or object is not revealed (G6).
    """

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not has_role(request.user, *roles):
                raise Http404
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


class HasRole(BasePermission):
    """DRF permission: the view lists ``required_roles``; the user must hold one of them."""

    def has_permission(self, request, view):
        if not request.user.is_authenticated:
            return False
        roles = getattr(view, "required_roles", ())
        if not (roles and has_role(request.user, *roles)):
            # Same answer as for an object that does not exist (G6).
            raise NotFound
        return True


def roles_context(request):
    """Template context processor exposing the current user's roles."""
    roles = user_roles(request.user)
    return {"user_roles": roles, **{f"is_{role}": role in roles for role in ROLES}}
