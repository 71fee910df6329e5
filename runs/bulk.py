"""Bulk inserts: PostgreSQL COPY where ids are not needed back, bulk_create elsewhere."""

from __future__ import annotations

import json
import operator
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper

#: below this many rows bulk_create is as fast and simpler; above it COPY is faster (a scores file's 48 judge reports,
#: written 612 times in a results folder's import, took 2.5 s as bulk_create)
COPY_THRESHOLD = 20

#: the interpreter's switch interval (seconds) while a `copies_behind` block is open: a COPY thread that the server has
#: answered waits for the GIL while the main thread parses, and the server waits with it, up to the interval each
#: time (Python's default is 5 ms; a results folder's COPY thread starts and finishes 612 times). At 0.5 ms a 1M-verdict
#: folder's import in process took 23.0 s against 24.2 (three runs each, alternated; docs/performance.md, "Ingest")
COPY_BEHIND_SWITCH_INTERVAL = 0.0005

_switching = threading.Lock()
#: open `copies_behind` blocks of this process, and the switch interval before the first of them
_switching_blocks = 0
_switch_interval_before = sys.getswitchinterval()

#: the CopyBehind of the caller's open `copies_behind` block (a new thread starts without one)
_behind: ContextVar[CopyBehind | None] = ContextVar("copy_behind", default=None)


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


def bulk_insert_rows(
    model: type[models.Model], rows: list[dict[str, Any]], *, behind: CopyBehind | None = None
) -> None:
    """Insert rows given as {attname: value} dicts without returning ids, skipping model instances
    on PostgreSQL (COPY straight from the dicts; missing fields take their defaults).

    Falls back to `bulk_insert` of model instances where that would differ: other databases,
    small batches, fields filled at save time (auto_now), or rows keyed by field name. With `behind`,
    the COPY runs on its thread (`copies_behind`) and this returns at once; the caller leaves `rows` as
    they are.
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

    def write(copy) -> None:
        for row in rows:
            got = take(row) if len(given) > 1 else (take(row),)
            values = [got[i] if i is not None else None for i in order] if fill else list(got)
            for i, default in fill:
                values[i] = default
            for i, nullable in dumps:
                if not (values[i] is None and nullable):
                    values[i] = json.dumps(values[i], ensure_ascii=False)
            copy.write_row(values)

    if behind is not None:
        behind.submit(table, columns, write)
        return
    with connection.cursor() as cursor, copy_in(cursor, table, columns) as copy:
        write(copy)


@contextmanager
def copy_in(cursor, table: str, columns: str) -> Iterator[Any]:
    """psycopg's `COPY table (columns) FROM STDIN` on a Django cursor (names quoted by the caller), under its
    connection's error wrapper: its errors are Django's (a lost connection an OperationalError, which jobs tell
    apart) and mark the connection as Django's own statements do. A COPY running behind (`copies_behind`) in this
    thread is waited for first."""
    behind = _behind.get()
    if behind is not None:
        behind.wait()
    with cursor.db.wrap_database_errors, cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        yield copy


class CopyBehind:
    """COPYs into the open transaction that run on a thread of their own while the caller goes on (parsing the
    next file): one at a time, on the caller's connection. Every other statement of the caller's waits for the one
    under way first (`copies_behind` hooks them), and its error is raised there, in the caller's thread."""

    def __init__(self, database: BaseDatabaseWrapper):
        #: the caller's Django connection: its psycopg connection is used from the thread, not a new one
        self.database = database
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def submit(self, table: str, columns: str, write: Callable[[Any], None]) -> None:
        self.wait()
        database = self.database

        def run() -> None:
            try:
                # a Django cursor over the caller's psycopg connection (make_cursor: Django's own cursor() refuses
                # a connection of another thread); this thread has no COPY behind of its own to wait for
                with (
                    database.make_cursor(database.connection.cursor()) as cursor,
                    copy_in(cursor, table, columns) as copy,
                ):
                    write(copy)
            except BaseException as exc:  # raised in the caller's thread by wait()
                self._error = exc

        thread = threading.Thread(target=run, name="copy-behind", daemon=True)
        thread.start()
        self._thread = thread

    def wait(self) -> None:
        """Until the COPY under way is done; its error, if it failed."""
        if self._thread is None:
            return
        self._thread.join()
        self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error


@contextmanager
def copies_behind(*checked: type[models.Model]) -> Iterator[CopyBehind | None]:
    """A `CopyBehind` for the caller's transaction on PostgreSQL (None elsewhere), done when the block ends.

    The foreign keys of the `checked` models' tables are checked per statement inside it (SET CONSTRAINTS ...
    IMMEDIATE), so that their checks run behind with the COPY, not all at the commit: checked per COPY, they cost
    what they cost at the commit (docs/performance.md, "Ingest")."""
    if connection.vendor != "postgresql":
        yield None
        return
    behind = CopyBehind(connections[DEFAULT_DB_ALIAS])  # this thread's, not the proxy that resolves per thread
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname FROM pg_constraint WHERE contype = 'f' AND condeferred AND conrelid = ANY(%s::regclass[])",
            [[model._meta.db_table for model in checked]],
        )
        names = [connection.ops.quote_name(name) for (name,) in cursor.fetchall()]
        if names:
            cursor.execute(f"SET CONSTRAINTS {', '.join(names)} IMMEDIATE")

    def wait_for_copy(execute, sql, params, many, context):
        behind.wait()
        return execute(sql, params, many, context)

    token = _behind.set(behind)
    try:
        with connection.execute_wrapper(wait_for_copy), _switching_often():
            yield behind
    except BaseException as failed:
        # nothing is left running on the connection; the block's own error is the one raised (every statement
        # of the block waited for the COPY before it, so a failed COPY is not what made it fail)
        try:
            behind.wait()
        except BaseException as copy_failed:
            failed.add_note(f"The COPY behind it failed too: {copy_failed}")
        raise
    finally:
        _behind.reset(token)
    behind.wait()
    if names:  # initially deferred again, as Django makes them, for what the transaction does next
        with connection.cursor() as cursor:
            cursor.execute(f"SET CONSTRAINTS {', '.join(names)} DEFERRED")


@contextmanager
def _switching_often() -> Iterator[None]:
    """The interpreter's switch interval at most COPY_BEHIND_SWITCH_INTERVAL inside the block, as it was after the
    last such block of the process ends (blocks of several threads overlap: the interval is the process's)."""
    global _switching_blocks, _switch_interval_before
    with _switching:
        if _switching_blocks == 0:
            _switch_interval_before = sys.getswitchinterval()
            sys.setswitchinterval(min(_switch_interval_before, COPY_BEHIND_SWITCH_INTERVAL))
        _switching_blocks += 1
    try:
        yield
    finally:
        with _switching:
            _switching_blocks -= 1
            if _switching_blocks == 0:
                sys.setswitchinterval(_switch_interval_before)


def _value(obj: models.Model, field: models.Field, json_fields: set[str]) -> Any:
    value = field.pre_save(obj, add=True)
    if field.attname in json_fields:
        return None if value is None and field.null else json.dumps(value, ensure_ascii=False)
    return value
