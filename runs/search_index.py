"""Judge reasoning made searchable after its import commits (PostgreSQL): ReasoningText, its trigram index, catching up.

The import writes verdicts and nothing more for search: the verdict table's triggers list each new verdict with
reasoning, and each verdict whose reasoning changed, in ReasoningPending, in the writer's transaction (migration
0018). `reasoning_index_catch_up` then copies their reasoning into ReasoningText, whose trigram index the search
reads, a batch per transaction, and crosses them off. Until it has, a search finds the new reasoning by walking the
verdicts (`runs.search`), complete but slower, and says so (`reasoning_pending`).

Why not the index on the verdict table: with real judges' reasoning (largely Chinese for OctoBench, about one
trigram a character) maintaining it took two thirds of an import's time; copied after the commit, the import
stores verdicts at the rate the verdict table allows (docs/performance.md, "Ingest" and "Search every transcript").

Who catches up (`reasoning_index_soon`, after every write that committed, and from the search page while something
is pending): where `IFPORTAL_JOBS` runs jobs, a Celery worker, a thread of the writing process, or the writer
itself (inline); `manage.py ingest` in thread mode waits for its thread before it exits, so the catch-up is not cut
off. One catch-up works at a time (an advisory lock).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction

from runs.models import ReasoningPending, ReasoningText, Verdict

log = logging.getLogger(__name__)

#: the Celery task that catches up (runs.tasks.reasoning_index)
REASONING_INDEX_TASK = "runs.reasoning_index"
#: verdicts copied in one transaction: 1-3 s of CJK reasoning on the development machine, so a search sees
#: the index grow and a stopped catch-up loses little
BATCH = 20_000
#: the advisory lock (two keys) held by the one catch-up at work
LOCK = (7301, 18)
#: a search page asks for a catch-up at most this often (seconds) while reasoning is pending
ASK_EVERY_SECONDS = 60
#: pending verdicts counted exactly; beyond, a search says "more than"
COUNT_CAP = 100_000


def reasoning_indexed() -> bool:
    """Whether judge reasoning is searched through ReasoningText (PostgreSQL) rather than read from the verdicts."""
    return connection.vendor == "postgresql"


def reasoning_pending() -> int:
    """Verdicts whose reasoning the search's index does not hold yet (at most COUNT_CAP + 1; 0 on SQLite)."""
    if not reasoning_indexed():
        return 0
    return ReasoningPending.objects.all()[: COUNT_CAP + 1].count()


def reasoning_index_catch_up(
    *, batch: int = BATCH, wait: bool = False, progress: Callable[[int, int], None] | None = None
) -> int | None:
    """Copy the reasoning of every pending verdict into ReasoningText, `batch` verdicts a transaction; the verdicts
    copied, or None when another catch-up holds the lock (with `wait`, once it has finished, this one goes on
    with whatever it left). `progress(done, pending)` after each batch. A verdict whose reasoning is empty now,
    or which is gone, loses its copy."""
    if not reasoning_indexed():
        return 0
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {'pg_advisory_lock' if wait else 'pg_try_advisory_lock'}(%s, %s)", LOCK)
        if not wait and not cursor.fetchone()[0]:
            return None
    done = 0
    try:
        total = reasoning_pending()
        while True:
            with transaction.atomic():
                moved = _copied(batch)
            if not moved:
                return done
            done += moved
            if progress:
                progress(done, max(total, done))
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", LOCK)


def _copied(batch: int) -> int:
    """One batch: take up to `batch` pending verdicts (rows a concurrent writer is listing again wait for the next
    batch), copy their reasoning, drop the copies of the emptied or deleted; how many were taken."""
    text, pending, verdicts = ReasoningText._meta.db_table, ReasoningPending._meta.db_table, Verdict._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH taken AS (
                DELETE FROM {pending} WHERE verdict_id IN (
                    SELECT verdict_id FROM {pending} ORDER BY verdict_id LIMIT %s FOR UPDATE SKIP LOCKED
                ) RETURNING verdict_id
            ), copied AS (
                INSERT INTO {text} (verdict_id, text)
                SELECT v.id, v.reasoning FROM taken JOIN {verdicts} v ON v.id = taken.verdict_id WHERE v.reasoning <> ''
                ON CONFLICT (verdict_id) DO UPDATE SET text = EXCLUDED.text
                RETURNING verdict_id
            ), dropped AS (
                DELETE FROM {text} t USING taken WHERE t.verdict_id = taken.verdict_id
                AND t.verdict_id NOT IN (SELECT verdict_id FROM copied)
            )
            SELECT count(*) FROM taken
            """,
            [batch],
        )
        return cursor.fetchone()[0]


def reasoning_index_soon(benchmark_ids: Iterable[int] = (), **signal) -> None:
    """Have the pending reasoning copied (a receiver of runs.signals.benchmarks_written), where `IFPORTAL_JOBS`
    runs jobs: on a Celery worker, in a thread of this process, or now (inline); nothing on SQLite or when
    nothing is pending."""
    if not reasoning_indexed() or not ReasoningPending.objects.exists():
        return
    mode = settings.IFPORTAL_JOBS
    if mode == "celery":
        current_app.send_task(REASONING_INDEX_TASK)
    elif mode == "thread":
        threading.Thread(target=_in_thread, name="reasoning-index", daemon=True).start()
    else:
        reasoning_index_catch_up(wait=True)


def reasoning_index_asked() -> None:
    """A search found reasoning pending: ask for a catch-up, at most once every ASK_EVERY_SECONDS across the
    portal's processes (a catch-up whose process stopped is started again this way)."""
    if cache.add("ifportal:reasoning-index:asked", time.time(), ASK_EVERY_SECONDS):
        reasoning_index_soon()


def _in_thread() -> None:
    try:
        reasoning_index_catch_up()
    except Exception:
        log.warning("making judge reasoning searchable failed; the next write or search asks again", exc_info=True)
    finally:
        connection.close()  # this thread ends: its session would stay open until garbage collection
