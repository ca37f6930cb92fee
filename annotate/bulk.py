"""Insert many new rows at once: PostgreSQL's ``COPY`` where it runs, ``bulk_create`` elsewhere.

On PostgreSQL, ``bulk_create`` spent about 1 ms a message of an import preparing each value
in Python (Django's field preparation, then psycopg adapting the arrays of its ``UNNEST``
insert: ``bench/import_rate.py --profile``). ``COPY`` sends the rows as they are, adapted by
psycopg's C code. The ids are drawn from the table's sequence first and set on the objects,
as ``bulk_create`` does, so attachments can point at their documents.

Only for objects that are new and complete: no ``save()`` signals, no ``ignore_conflicts``;
a row the database refuses (a constraint, a value too long) fails the whole ``COPY`` with the
same ``IntegrityError`` / ``DataError`` as ``bulk_create``, in the caller's transaction.
"""

import functools
import json

from django.db import connection, models
from django.utils import timezone

COPY_BATCH = 10_000  # rows a COPY (and ids drawn) at a time
USE_COPY = True  # tests compare the two paths


def rows_insert(model, objs: list, *, batch_size: int | None = None) -> list:
    """Insert ``objs`` (unsaved instances of ``model``) and return them, ids set."""
    if not objs:
        return objs
    if connection.vendor != "postgresql" or not USE_COPY:
        return model.objects.bulk_create(objs, batch_size=batch_size)
    meta = model._meta
    fields = list(meta.concrete_fields)
    now = timezone.now()
    for field in fields:
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            for obj in objs:
                setattr(obj, field.attname, now)
    # (attname, the JSON dumper of a JSONField or None), as Django's JSONField would dump it
    getters = [(f.attname, _dumper(f) if isinstance(f, models.JSONField) else None) for f in fields]
    for start in range(0, len(objs), COPY_BATCH):
        _copy(objs[start : start + COPY_BATCH], fields, getters, meta)
    for obj in objs:
        obj._state.adding = False
        obj._state.db = connection.alias
    return objs


def _copy(objs, fields, getters, meta) -> None:
    quote = connection.ops.quote_name
    table = quote(meta.db_table)
    columns = ", ".join(quote(f.column) for f in fields)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [meta.db_table, meta.pk.column, len(objs)],
        )
        for obj, (pk,) in zip(objs, cursor.fetchall(), strict=True):
            obj.pk = pk
        # Django's cursor wraps psycopg's, whose copy() streams the rows; psycopg's errors
        # become Django's (DataError, IntegrityError), as bulk_create raises them.
        with (
            connection.wrap_database_errors,
            cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,  # noqa: S608 - names only
        ):
            for obj in objs:
                copy.write_row(
                    [
                        dump(value) if dump and value is not None else value
                        for value, dump in ((getattr(obj, a), d) for a, d in getters)
                    ]
                )


def _dumper(field):
    from psycopg.types.json import Jsonb

    dumps = functools.partial(json.dumps, cls=field.encoder) if field.encoder else json.dumps
    return lambda value: Jsonb(value, dumps=dumps)


ANALYZE_AFTER = 10_000  # new rows after which the planner's statistics are refreshed


def statistics_refresh(*models, rows: int) -> None:
    """Have PostgreSQL sample the tables of ``models`` again after ``rows`` new rows, when that
    is many. Its planner otherwise plans the import's next steps from the table it saw before
    (autovacuum catches up, minutes later): after 500,000 new messages, reading 500 of them
    in id order took 1.4 s (a bitmap scan of the whole collection, then a sort) instead of
    2 ms, and the entity pass that reads them so took 40 minutes (bench/scale.py)."""
    if connection.vendor != "postgresql" or rows < ANALYZE_AFTER:
        return
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")
