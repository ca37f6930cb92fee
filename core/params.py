"""Whole numbers from untrusted request values.

``str.isdigit`` is true for "²" (which ``int`` refuses) and for numbers no database id can
hold; the pages and APIs read ids and counts through ``id_param`` instead, which answers
None for anything that is not a plain decimal id, so a bad value is a bad request or a page
without that filter, never a server error.
"""

import re

_DIGITS = re.compile(r"[0-9]{1,19}", re.ASCII)
ID_MAX = 2**31 - 1  # the largest value of an integer column on PostgreSQL and SQLite


def id_param(value, *, maximum: int = ID_MAX) -> int | None:
    """Return ``value`` as an int when it is ASCII digits between 0 and ``maximum``, else None."""
    if not isinstance(value, str) or not _DIGITS.fullmatch(value.strip()):
        return None
    number = int(value.strip())
    return number if number <= maximum else None


def id_params(values) -> tuple[int, ...]:
    """Return the values of a repeated parameter that are ids (``id_param``), in order."""
    return tuple(n for n in (id_param(v) for v in values) if n is not None)


class IdConverter:
    """The ``<id:...>`` path converter: a database id, 0 to ``ID_MAX``. Django's ``<int:...>``
    matches any run of digits, so ``/jobs/99999999999999999999/`` reached the view and the
    database raised (a 500 wherever a view looked the id up without ``get_object_or_404``'s
    guard); with this converter such a path matches no route, a 404 before any view runs."""

    regex = "[0-9]{1,10}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > ID_MAX:
            raise ValueError(f"{value} is over the largest id")  # Django: the path does not match
        return number

    def to_url(self, value) -> str:
        return str(int(value))
