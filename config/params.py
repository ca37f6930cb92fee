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
