"""Judge reasoning made searchable after its import commits (PostgreSQL): ReasoningText, its trigram index, catching up.

The import writes verdicts and lists their attempts in ReasoningPending (`reasoning_changed`, in its transaction);
the verdict table's update trigger lists the attempts of any other change of reasoning (migration 0018).
`reasoning_index_catch_up` then copies those attempts' reasoning into ReasoningText, whose trigram index the search
reads, a batch of attempts per transaction, and crosses them off. Until it has, a search finds the new reasoning by
walking the verdicts (`runs.search`), complete but slower, and says so (`reasoning_pending`).

Why not the index on the verdict table: with real judges' reasoning (largely Chinese for OctoBench, about one
trigram a character) maintaining it took two thirds of an import's time; copied after the commit, the import
stores verdicts at the rate the verdict table allows (docs/performance.md, "Ingest" and "Search every transcript").

Who catches up (`reasoning_index_soon`, after every write that committed, and from the search page while something
is pending): runs.background.soon, where `IFPORTAL_JOBS` runs jobs (a Celery worker, a thread of the writing
process that `manage.py ingest` waits for, or the writer itself, inline). One catch-up works at a time (an
advisory lock).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, connection, transaction

from runs import background
from runs.models import Attempt, ReasoningPending, ReasoningText, Verdict

log = logging.getLogger(__name__)

#: the Celery task that catches up (runs.tasks.reasoning_index)
REASONING_INDEX_TASK = "runs.reasoning_index"
#: attempts copied in one transaction: about 20,000 verdicts of OctoBench (34 items, 3 judges), 1-3 s of CJK
#: reasoning on the development machine, so a stopped catch-up loses little
BATCH = 200
#: the GIN pending list a catch-up lets grow (kB, the most PostgreSQL allows) before its entries go into the index's
#: tree: appended unsorted, then merged in bulk at the end (`gin_clean_pending_list`). 353,160 verdicts of CJK
#: reasoning: 56 s, against 110 s inserted into the tree one by one and 110 s with a 256 MB list (load 2.3-3.8)
PENDING_LIST_KB = 2_097_151
#: the advisory lock (two keys) held by the one catch-up at work
LOCK = (7301, 18)
#: a search page asks for a catch-up at most this often (seconds) while reasoning is pending
ASK_EVERY_SECONDS = 60
#: pending attempts counted exactly; beyond, a search says "more than"
COUNT_CAP = 10_000


#: how an attempt already listed in ReasoningPending is listed again: updated, not passed over, so the writer holds
#: it locked until it commits (`reasoning_changed`); the verdict table's update trigger does the same (migration 0018)
_RELISTED = "ON CONFLICT (attempt_id) DO UPDATE SET attempt_id = EXCLUDED.attempt_id"


def reasoning_indexed() -> bool:
    """Whether judge reasoning is searched through ReasoningText (PostgreSQL) rather than read from the verdicts."""
    return connection.vendor == "postgresql"


def reasoning_changed(attempt_ids: Iterable[int]) -> None:
    """List these attempts for the catch-up: their verdicts' reasoning was stored or changed in this transaction
    (PostgreSQL; the writers of verdicts call this)."""
    ids = sorted({a for a in attempt_ids if a is not None})
    if ids and reasoning_indexed():
        with connection.cursor() as cursor:
            # a row already listed is locked until this transaction commits (_RELISTED), so a catch-up skips it
            # (SKIP LOCKED) rather than copy the reasoning as it was and cross it off; in id order, so two writers
            # lock in one order
            cursor.execute(
                f"INSERT INTO {ReasoningPending._meta.db_table} (attempt_id) SELECT unnest(%s::bigint[]) {_RELISTED}",
                [ids],
            )


def reasoning_missing_listed() -> int:
    """List every attempt with reasoning that has no copy in ReasoningText (after a portal import, whose archive
    carries no copies, or `manage.py search_rebuild`); how many (PostgreSQL; 0 on SQLite)."""
    if not reasoning_indexed():
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {ReasoningPending._meta.db_table} (attempt_id) "
            f"SELECT DISTINCT v.attempt_id FROM {Verdict._meta.db_table} v WHERE v.reasoning <> '' AND NOT EXISTS "
            f"(SELECT 1 FROM {ReasoningText._meta.db_table} t WHERE t.verdict_id = v.id) ORDER BY 1 {_RELISTED}"
        )
        return cursor.rowcount


def reasoning_pending(benchmark_id: int | None = None) -> int:
    """Attempts (of a benchmark, or of all) whose reasoning the search's index may not hold yet (at most
    COUNT_CAP + 1; 0 on SQLite)."""
    if not reasoning_indexed():
        return 0
    return _pending(benchmark_id)[: COUNT_CAP + 1].count()


def reasoning_pending_attempts(benchmark_id: int, limit: int) -> list[int]:
    """The ids of at most `limit` attempts of a benchmark whose reasoning the search's index may not hold yet."""
    return list(_pending(benchmark_id).order_by().values_list("attempt_id", flat=True)[:limit])


def _pending(benchmark_id: int | None):
    rows = ReasoningPending.objects.all()
    if benchmark_id is not None:
        rows = rows.filter(attempt_id__in=Attempt.objects.filter(run__benchmark_id=benchmark_id).values("id"))
    return rows


def reasoning_index_catch_up(
    *, batch: int = BATCH, wait: bool = False, progress: Callable[[int, int], None] | None = None
) -> int | None:
    """Copy the reasoning of every pending attempt's verdicts into ReasoningText, `batch` attempts a transaction;
    the attempts done, or None when another catch-up holds the lock (with `wait`, once it has finished, this one
    goes on with whatever it left). `progress(done, pending)` after each batch. A verdict whose reasoning is
    empty now, or which is gone, loses its copy."""
    if not reasoning_indexed():
        return 0
    done = 0
    while True:  # again when a writer listed attempts while this catch-up let go of the lock
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {'pg_advisory_lock' if wait else 'pg_try_advisory_lock'}(%s, %s)", LOCK)
            if not wait and not cursor.fetchone()[0]:
                return None if not done else done
        before = done
        try:
            total = done + reasoning_pending()
            while moved := _batch_copied(batch):
                done += moved
                if progress:
                    progress(done, max(total, done))
            _merged()
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", LOCK)
        # done, or what is left is held by writers still at work (their commit asks for a catch-up again)
        if done == before or not ReasoningPending.objects.exists():
            return done


def _batch_copied(batch: int) -> int:
    with transaction.atomic():
        return _copied(batch)


def _merged() -> None:
    """Move the entries the catch-up left in the GIN pending list into the index's tree, in bulk (its own
    transaction, after the copies committed: only the index's owner may, and a failure loses no copy; the
    entries then wait for the next catch-up or for autovacuum). Searches read the index's candidates once nothing
    of their benchmark is pending, and a long pending list makes each read slower."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT gin_clean_pending_list('reasoning_text_trgm'::regclass)")
    except DatabaseError:
        log.warning("merging the search index's pending entries failed; autovacuum merges them", exc_info=True)


def _copied(batch: int) -> int:
    """One batch: take up to `batch` pending attempts (rows a concurrent writer is listing again wait for the next
    batch), drop the copies their verdicts no longer have, copy their reasoning; how many attempts were taken. The
    attempts are named by their ids: the planner then reads their verdicts through the attempt index."""
    text, pending, verdicts = ReasoningText._meta.db_table, ReasoningPending._meta.db_table, Verdict._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('gin_pending_list_limit', %s, true)", [str(PENDING_LIST_KB)])
        cursor.execute(
            f"DELETE FROM {pending} WHERE attempt_id IN (SELECT attempt_id FROM {pending} ORDER BY attempt_id "
            "LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING attempt_id",
            [batch],
        )
        taken = [row[0] for row in cursor.fetchall()]
        if not taken:
            return 0
        cursor.execute(
            f"DELETE FROM {text} t WHERE t.attempt_id = ANY(%s) AND NOT EXISTS "
            f"(SELECT 1 FROM {verdicts} v WHERE v.id = t.verdict_id AND v.reasoning <> '')",
            [taken],
        )
        cursor.execute(
            f"INSERT INTO {text} AS t (verdict_id, attempt_id, text) SELECT id, attempt_id, reasoning FROM {verdicts} "
            "WHERE attempt_id = ANY(%s) AND reasoning <> '' "
            "ON CONFLICT (verdict_id) DO UPDATE SET text = EXCLUDED.text WHERE t.text IS DISTINCT FROM EXCLUDED.text",
            [taken],
        )
    return len(taken)


def reasoning_index_soon(benchmark_ids: Iterable[int] = (), **signal) -> None:
    """Have the pending reasoning copied (a receiver of runs.signals.benchmarks_written) where `IFPORTAL_JOBS` runs
    jobs (runs.background.soon); nothing on SQLite or when nothing is pending."""
    if reasoning_indexed() and ReasoningPending.objects.exists():
        background.soon(REASONING_INDEX_TASK, reasoning_index_catch_up)


def reasoning_index_asked() -> None:
    """A search found reasoning pending: ask for a catch-up, at most once every ASK_EVERY_SECONDS across the
    portal's processes (a catch-up whose process stopped is started again this way); never inline, where the
    catch-up would run inside the search's request."""
    if settings.IFPORTAL_JOBS != "inline" and cache.add(
        "ifportal:reasoning-index:asked", time.time(), ASK_EVERY_SECONDS
    ):
        reasoning_index_soon()
