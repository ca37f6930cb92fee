"""The URL conf's named routes, for the tests that visit every one of them (T7, T8)."""

from django.urls import get_resolver


def named_routes(*, admin: bool) -> dict[str, tuple[str, list[str]]]:
    """``name -> (pattern, keyword names)`` of every named route; admin routes (named
    ``admin:...``) only with ``admin``."""

    def walk(patterns, prefix="", namespace=""):
        for p in patterns:
            if hasattr(p, "url_patterns"):
                if p.namespace == "admin" and not admin:
                    continue
                inner = f"{p.namespace}:" if p.namespace else namespace
                yield from walk(p.url_patterns, prefix + str(p.pattern), inner)
            elif p.name:
                yield namespace + p.name, (prefix + str(p.pattern), list(p.pattern.converters))

    return dict(walk(get_resolver().url_patterns))
