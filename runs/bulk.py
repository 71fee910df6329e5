"""Bulk inserts: PostgreSQL COPY where ids are not needed back, bulk_create elsewhere."""

from __future__ import annotations

import json
import operator
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, models

#: below this many rows bulk_create is as fast and simpler; above it COPY is faster (a scores file's 48 judge reports,
#: written 612 times in a results folder's import, took 2.5 s as bulk_create)
COPY_THRESHOLD = 20


def bulk_insert(model: type[models.Model], objs: list[models.Model]) -> None:
    """Insert `objs` without returning their ids: COPY on PostgreSQL (tens of times faster than
    INSERT for large batches), bulk_create on other databases."""
    if not objs:
        return
    if connection.vendor != "postgresql" or len(objs) < COPY_THRESHOLD:
        model.objects.bulk_create(objs, batch_size=2000)
        return
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key and isinstance(f, models.AutoField))]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    table = connection.ops.quote_name(model._meta.db_table)
    json_fields = {f.attname for f in fields if isinstance(f, models.JSONField)}
    with connection.cursor() as cursor, copy_in(cursor, table, columns) as copy:
        for obj in objs:
            copy.write_row([_value(obj, f, json_fields) for f in fields])


def bulk_insert_rows(model: type[models.Model], rows: list[dict[str, Any]]) -> None:
    """Insert rows given as {attname: value} dicts without returning ids, skipping model instances
    on PostgreSQL (COPY straight from the dicts; missing fields take their defaults).

    Falls back to `bulk_insert` of model instances where that would differ: other databases,
    small batches, fields filled at save time (auto_now), or rows keyed by field name.
    """
    if not rows:
        return
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key and isinstance(f, models.AutoField))]
    attnames = {f.attname for f in fields}
    fills_on_save = any(getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False) for f in fields)
    if connection.vendor != "postgresql" or len(rows) < COPY_THRESHOLD or fills_on_save or not set(rows[0]) <= attnames:
        bulk_insert(model, [model(**row) for row in rows])
        return
    defaults = {f.attname: f.get_default() for f in fields if f.attname not in rows[0]}
    json_fields = {f.attname: f.null for f in fields if isinstance(f, models.JSONField)}
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    table = connection.ops.quote_name(model._meta.db_table)
    names = [f.attname for f in fields]
    # one C-level lookup per row for the columns the rows carry; defaults and JSON by position
    given = [name for name in names if name not in defaults]
    take = operator.itemgetter(*given)
    order = [given.index(name) if name in rows[0] else None for name in names]
    fill = [(i, defaults[name]) for i, name in enumerate(names) if name in defaults]
    dumps = [(i, json_fields[name]) for i, name in enumerate(names) if name in json_fields]
    with connection.cursor() as cursor, copy_in(cursor, table, columns) as copy:
        for row in rows:
            got = take(row) if len(given) > 1 else (take(row),)
            values = [got[i] if i is not None else None for i in order] if fill else list(got)
            for i, default in fill:
                values[i] = default
            for i, nullable in dumps:
                if not (values[i] is None and nullable):
                    values[i] = json.dumps(values[i], ensure_ascii=False)
            copy.write_row(values)


@contextmanager
def copy_in(cursor, table: str, columns: str) -> Iterator[Any]:
    """psycopg's `COPY table (columns) FROM STDIN` on a Django cursor (names quoted by the caller), under Django's
    error wrapper: its errors are Django's (a lost connection an OperationalError, which jobs tell apart) and mark
    the connection as Django's own statements do."""
    with connection.wrap_database_errors, cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        yield copy


def _value(obj: models.Model, field: models.Field, json_fields: set[str]) -> Any:
    value = field.pre_save(obj, add=True)
    if field.attname in json_fields:
        return None if value is None and field.null else json.dumps(value, ensure_ascii=False)
    return value
