"""Writes: rollup rebuilds and background jobs."""
from __future__ import annotations

import logging
import shutil
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from .bulk import bulk_insert
from .models import (
    Attempt, AttemptRollup, Benchmark, ChecklistItem, GroupRollup, Job, JobState, JudgeReport, ReportStatus, Run,
    Verdict, VerdictResult,
)

log = logging.getLogger(__name__)

ROLLUP_BATCH = 2000
#: facets of a checklist item that GroupRollup keeps, as (dimension, verdict field)
ROLLUP_DIMENSIONS = (
    ("category", "item__category"),
    ("check_type", "item__check_type"),
    ("group", "item__group"),
    ("turn", "item__turn"),
)


#: first key of the advisory locks this project takes (the second is the benchmark id, or 0)
LOCK_BENCHMARK = 0x1F0C8
LOCK_CATALOG = 0x1F0C9


def benchmarks_lock(benchmark_ids: Iterable[int]) -> None:
    """Hold an exclusive lock on each benchmark until the current transaction ends.

    Everything that writes a benchmark's rows (each ingest's write phase, rollup rebuilds)
    takes it first, so concurrent writers of the same data run one after the other and
    the second reads what the first committed. Locks are taken in id order (no deadlock
    between two multi-benchmark rebuilds). PostgreSQL only: SQLite already serialises
    writers on its database lock.
    """
    if connection.vendor != "postgresql":
        return
    if not connection.in_atomic_block:
        raise RuntimeError("benchmarks_lock needs a transaction (it holds until commit)")
    with connection.cursor() as cursor:
        for benchmark_id in sorted(set(benchmark_ids)):
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LOCK_BENCHMARK, int(benchmark_id) % 2**31])


def catalog_lock(slug: str | None = None) -> None:
    """Hold the lock for creating shared reference rows until commit: models and judges, or
    with `slug` the benchmark of that slug.

    Two transactions that each create a model and a judge the other also needs would
    otherwise wait on each other's unique-index entries; with this lock the second waits
    for the first to commit, then finds the rows. Benchmarks have a lock per slug, so a
    transaction creating one never waits on an ingest that holds a model/judge lock.
    """
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        if slug is None:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, 0)", [LOCK_CATALOG])
        else:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [LOCK_CATALOG + 1, slug])


def benchmarks_generation_bump(benchmark_ids: Iterable[int]) -> None:
    """Mark what these benchmarks' leaderboards show as changed: data_generation + 1.

    Call it inside the transaction that makes the change, as late in it as possible (the
    update holds the benchmark row until commit). Cached leaderboards are keyed by the
    generation (`runs.leaderboard_rows`), so readers see the new number together with the
    new rows when the transaction commits, and never a cached table of the old rows under it.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("benchmarks_generation_bump needs the transaction that makes the change")
    ids = sorted({int(i) for i in benchmark_ids})
    if ids:
        Benchmark.objects.filter(id__in=ids).update(data_generation=F("data_generation") + 1)
        touched = _changed_in_job.get()
        if touched is not None:  # inside a job: its leaderboards are warmed once it has finished
            transaction.on_commit(lambda: touched.update(ids))
        else:
            # any other writer precomputes the new generation's leaderboard summary and default page once
            # it committed, as it rebuilt the rollups: no request after the change scores the rollups
            transaction.on_commit(lambda: _leaderboards_warm(set(ids)))


#: benchmarks whose data a running job changed and committed (None outside jobs)
_changed_in_job: ContextVar[set[int] | None] = ContextVar("changed_in_job", default=None)


@contextmanager
def leaderboards_warmed_at_end() -> Iterator[None]:
    """Writes inside (many commits: an import file by file) leave the leaderboards they change to be
    precomputed and warmed once, at the end, instead of after every commit (a job does the same)."""
    changed: set[int] = set()
    token = _changed_in_job.set(changed)
    try:
        yield
    finally:
        _changed_in_job.reset(token)
        _leaderboards_warm(changed)


def _leaderboards_warm(benchmark_ids: set[int]) -> None:
    """After a writer committed changes: compute the leaderboard summary and default page of the benchmarks
    it touched (runs.leaderboard_page.warm_default), so no viewer pays for them. A failure here is logged and
    never fails the writer (its change is committed; the first request computes what is missing)."""
    if not benchmark_ids:
        return
    try:
        from .leaderboard_page import warm_default

        warm_default(benchmark_ids)
    except Exception:
        log.warning("warming the leaderboards of benchmarks %s failed", sorted(benchmark_ids), exc_info=True)


def benchmarks_of_attempts(attempt_ids: Sequence[int]) -> set[int]:
    """The benchmarks these attempts belong to (a query per ROLLUP_BATCH ids)."""
    out: set[int] = set()
    for start in range(0, len(attempt_ids), ROLLUP_BATCH):
        out.update(Run.objects.filter(attempts__id__in=attempt_ids[start : start + ROLLUP_BATCH])
                   .values_list("benchmark_id", flat=True).distinct().order_by())
    return out


def leaderboard_data_changed(*, attempt_ids: Iterable[int] = (), benchmark_ids: Iterable[int] = ()) -> None:
    """After a write outside ingests and jobs (admin edits and deletions): rebuild the rollups of
    the attempts that are still there and bump the data generation of every benchmark concerned."""
    with transaction.atomic():
        attempts = sorted(set(Attempt.objects.filter(id__in=sorted(set(attempt_ids))).values_list("id", flat=True)))
        benchmarks = set(benchmark_ids) | benchmarks_of_attempts(attempts)
        benchmarks_lock(benchmarks)
        if attempts:
            rollups_rebuild_for_attempts(attempts)
        benchmarks_generation_bump(benchmarks)


def statistics_refresh(models_: Iterable[type], *, min_rows: int | None = None) -> list[str]:
    """ANALYZE the tables of these models whose rows changed, since their last analysis, by more than
    they held then and by at least `min_rows` (IFPORTAL_ANALYZE_MIN_ROWS); returns the tables analysed.

    What autovacuum does, but in time for a bulk load: it wakes once a minute (and may be off, as
    on the machine of docs/performance.md), while a load of many files grows the verdict and rollup
    tables a hundredfold within that minute. With the statistics of the small table the planner
    reads one batch's rows with a sequential scan, so each file costs more than the one before.
    Doubling as the trigger keeps the estimates within 2x for about one ANALYZE per table per
    doubling (each samples 30,000 rows whatever the size). PostgreSQL only; the row counts are
    those of committed transactions.
    """
    if connection.vendor != "postgresql":
        return []
    tables = [m._meta.db_table for m in models_]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid "
            "WHERE s.relid = ANY(%s::regclass[]) AND s.n_mod_since_analyze >= greatest(%s, c.reltuples) "
            "ORDER BY c.relname",
            [tables, settings.IFPORTAL_ANALYZE_MIN_ROWS if min_rows is None else min_rows],
        )
        stale = [name for (name,) in cursor.fetchall()]
        for name in stale:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(name)}")
    return stale


def rollups_rebuild_for_attempts(attempt_ids: Iterable[int], judge_ids: Iterable[int] | None = None) -> int:
    """Recompute AttemptRollup and GroupRollup rows of these attempts from their verdicts.

    With `judge_ids`, only the rows of those judges are recomputed: a writer that changed one
    judge's verdicts (a scores file, a re-score) leaves the other judges' rollups of the same
    attempts as they are, so loading k judges one file at a time costs k rebuilds, not k(k+1)/2.

    The whole set is replaced in one transaction under the lock of its benchmarks:
    readers see the previous complete rows until it commits, concurrent rebuilds of the
    same data run one after the other, and running it twice gives the same rows. The
    benchmarks' data generation is bumped in the same transaction (cached leaderboards
    of the old rows are no longer read). Returns the number of attempt x judge rollups written.
    """
    ids = sorted(set(attempt_ids))
    judges = None if judge_ids is None else sorted(set(judge_ids))
    written = 0
    with transaction.atomic():
        benchmarks = benchmarks_of_attempts(ids)
        benchmarks_lock(benchmarks)
        for start in range(0, len(ids), ROLLUP_BATCH):
            batch = ids[start : start + ROLLUP_BATCH]
            if connection.vendor == "postgresql":
                written += _rollups_rebuild_sql(batch, judges)
            else:
                written += _rollups_rebuild_batch(batch, judges)
        benchmarks_generation_bump(benchmarks)
    return written


def _rollups_rebuild_sql(batch: list[int], judges: list[int] | None) -> int:
    """The rebuild as set-based SQL on PostgreSQL: two deletes, then one statement that reads the
    batch's verdicts once and inserts both rollups (INSERT ... SELECT ... GROUP BY in CTEs).

    The verdicts are counted first and the attempt's facets (run, instance, benchmark, model)
    joined to the counted rows, one lookup per attempt instead of one per verdict. Judge reports
    (`JudgeReport`) add their extra counts, and make a rollup of an attempt the judge could not score.
    """
    t = {m: connection.ops.quote_name(m._meta.db_table)
         for m in (AttemptRollup, GroupRollup, Verdict, Attempt, Run, ChecklistItem, JudgeReport)}
    counts = ("count(*) FILTER (WHERE v.result <> 'na') AS n_applicable, "
              "count(*) FILTER (WHERE v.result = 'pass') AS n_passed")
    # The batch's attempts drive every statement: the verdicts are picked first, through an
    # attempt-leading index, in a materialized CTE, and "+ 0" keeps the planner off the judge index.
    # Right after a bulk load (autovacuum lagging, or off) stale statistics otherwise make a scan of
    # all of one judge's verdicts, or of the (item, judge) index, look as cheap as the batch's few.
    of_judges = "" if judges is None else " AND judge_id + 0 = ANY(%s)"
    params = [batch] if judges is None else [batch, judges]
    facets, present = [], []
    for dimension, field in ROLLUP_DIMENSIONS:
        column = "i." + connection.ops.quote_name(ChecklistItem._meta.get_field(field.removeprefix("item__")).column)
        facets.append(f"('{dimension}', {column}::text)")
        if dimension != "turn":
            present.append(f"'{dimension}'")
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {t[AttemptRollup]} WHERE attempt_id = ANY(%s){of_judges}", params)
        cursor.execute(f"DELETE FROM {t[GroupRollup]} WHERE attempt_id = ANY(%s){of_judges}", params)
        cursor.execute(
            f"WITH v AS MATERIALIZED (SELECT attempt_id, judge_id, item_id, result FROM {t[Verdict]} "
            f"WHERE attempt_id = ANY(%s){of_judges}), "
            f"f AS MATERIALIZED (SELECT a.id, a.run_id, a.instance_id, r.benchmark_id, r.model_id "
            f"FROM {t[Attempt]} a JOIN {t[Run]} r ON r.id = a.run_id WHERE a.id = ANY(%s)), "
            f"cv AS (SELECT v.attempt_id, v.judge_id, count(*) AS n, {counts} FROM v GROUP BY 1, 2), "
            f"r AS MATERIALIZED (SELECT attempt_id, judge_id, status, n_applicable_extra, n_passed_extra, "
            f"(SELECT count(*) FROM jsonb_object_keys(unrecognised)) AS n_unrecognised FROM {t[JudgeReport]} "
            f"WHERE attempt_id = ANY(%s){of_judges}), "
            f"c AS (SELECT COALESCE(cv.attempt_id, r.attempt_id) AS attempt_id, COALESCE(cv.judge_id, r.judge_id) AS judge_id, "
            f"COALESCE(cv.n, 0) AS n, COALESCE(cv.n_applicable, 0) + COALESCE(r.n_applicable_extra, 0) AS n_applicable, "
            f"COALESCE(cv.n_passed, 0) + COALESCE(r.n_passed_extra, 0) AS n_passed, "
            f"CASE WHEN r.status IS NULL OR r.status = '{ReportStatus.SCORED}' THEN '' ELSE r.status END AS unscored, "
            f"COALESCE(r.n_unrecognised, 0) AS n_unrecognised "
            f"FROM cv FULL OUTER JOIN r ON r.attempt_id = cv.attempt_id AND r.judge_id = cv.judge_id), "
            # one pass over the verdicts, each unpivoted into its four facets (empty text facets are left out)
            f"g AS (SELECT v.attempt_id, v.judge_id, d.dimension, d.value, {counts} FROM v "
            f"JOIN {t[ChecklistItem]} i ON i.id = v.item_id "
            f"CROSS JOIN LATERAL (VALUES {', '.join(facets)}) AS d(dimension, value) "
            f"WHERE d.value IS NOT NULL AND (d.value <> '' OR d.dimension NOT IN ({', '.join(present)})) "
            f"GROUP BY 1, 2, 3, 4), "
            # an attempt the judge could not score: every item of its instance counted failed, per facet
            f"gu AS (SELECT r.attempt_id, r.judge_id, d.dimension, d.value, count(*) AS n_applicable, 0 AS n_passed "
            f"FROM r JOIN f ON f.id = r.attempt_id JOIN {t[ChecklistItem]} i ON i.instance_id = f.instance_id "
            f"CROSS JOIN LATERAL (VALUES {', '.join(facets)}) AS d(dimension, value) "
            f"WHERE r.status <> '{ReportStatus.SCORED}' AND d.value IS NOT NULL "
            f"AND (d.value <> '' OR d.dimension NOT IN ({', '.join(present)})) GROUP BY 1, 2, 3, 4), "
            f"attempts AS (INSERT INTO {t[AttemptRollup]} (attempt_id, judge_id, benchmark_id, run_id, model_id, "
            f"instance_id, n_items, n_applicable, n_passed, unscored, n_unrecognised) "
            f"SELECT c.attempt_id, c.judge_id, f.benchmark_id, f.run_id, f.model_id, f.instance_id, c.n, "
            f"c.n_applicable, c.n_passed, c.unscored, c.n_unrecognised FROM c JOIN f ON f.id = c.attempt_id RETURNING 1), "
            f"groups AS (INSERT INTO {t[GroupRollup]} (attempt_id, judge_id, benchmark_id, model_id, dimension, value, "
            f"n_applicable, n_passed) "
            f"SELECT g.attempt_id, g.judge_id, f.benchmark_id, f.model_id, g.dimension, g.value, g.n_applicable, "
            f"g.n_passed FROM (SELECT * FROM g UNION ALL SELECT * FROM gu) g JOIN f ON f.id = g.attempt_id RETURNING 1) "
            f"SELECT (SELECT count(*) FROM attempts), (SELECT count(*) FROM groups)",
            [*params, batch, *params],
        )
        return cursor.fetchone()[0]


def _rollups_rebuild_batch(batch: list[int], judges: list[int] | None) -> int:
    facets = {
        a["id"]: a
        for a in Attempt.objects.filter(id__in=batch).values(
            "id", "run_id", "run__model_id", "run__benchmark_id", "instance_id"
        )
    }
    of_judges = {} if judges is None else {"judge_id__in": judges}
    AttemptRollup.objects.filter(attempt_id__in=batch, **of_judges).delete()
    GroupRollup.objects.filter(attempt_id__in=batch, **of_judges).delete()
    verdicts = Verdict.objects.filter(attempt_id__in=batch, **of_judges)
    counts = dict(
        n_items=Count("id"),
        n_applicable=Count("id", filter=~Q(result=VerdictResult.NOT_APPLICABLE)),
        n_passed=Count("id", filter=Q(result=VerdictResult.PASS)),
    )
    rows = {(row["attempt_id"], row["judge_id"]): row
            for row in verdicts.values("attempt_id", "judge_id").annotate(**counts).order_by()}
    reports = {(r["attempt_id"], r["judge_id"]): r for r in JudgeReport.objects.filter(
        attempt_id__in=batch, **of_judges).values("attempt_id", "judge_id", "status", "n_applicable_extra",
                                                   "n_passed_extra", "unrecognised")}
    rollups = []
    for key in sorted(rows.keys() | reports.keys()):
        row = rows.get(key, {"n_items": 0, "n_applicable": 0, "n_passed": 0})
        report = reports.get(key, {"status": ReportStatus.SCORED, "n_applicable_extra": 0, "n_passed_extra": 0,
                                   "unrecognised": {}})
        f = facets[key[0]]
        rollups.append(
            AttemptRollup(
                attempt_id=key[0],
                judge_id=key[1],
                benchmark_id=f["run__benchmark_id"],
                run_id=f["run_id"],
                model_id=f["run__model_id"],
                instance_id=f["instance_id"],
                n_items=row["n_items"],
                n_applicable=row["n_applicable"] + report["n_applicable_extra"],
                n_passed=row["n_passed"] + report["n_passed_extra"],
                unscored="" if report["status"] == ReportStatus.SCORED else report["status"],
                n_unrecognised=len(report["unrecognised"] or {}),
            )
        )
    bulk_insert(AttemptRollup, rollups)
    groups = []
    for dimension, field in ROLLUP_DIMENSIONS:
        rows = (
            verdicts.exclude(**{f"{field}__isnull": True})
            .exclude(**{field: ""})
            .values("attempt_id", "judge_id", field)
            .annotate(n_applicable=counts["n_applicable"], n_passed=counts["n_passed"])
            .order_by()
        ) if dimension != "turn" else (
            verdicts.exclude(item__turn__isnull=True)
            .values("attempt_id", "judge_id", field)
            .annotate(n_applicable=counts["n_applicable"], n_passed=counts["n_passed"])
            .order_by()
        )
        for row in rows:
            f = facets[row["attempt_id"]]
            groups.append(
                GroupRollup(
                    attempt_id=row["attempt_id"],
                    judge_id=row["judge_id"],
                    benchmark_id=f["run__benchmark_id"],
                    model_id=f["run__model_id"],
                    dimension=dimension,
                    value=str(row[field]),
                    n_applicable=row["n_applicable"],
                    n_passed=row["n_passed"],
                )
            )
    groups += _unscored_group_rollups(reports, facets)
    bulk_insert(GroupRollup, groups)
    return len(rollups)


def _unscored_group_rollups(reports: dict[tuple, dict], facets: dict[int, dict]) -> list[GroupRollup]:
    """Group rollups of attempts their judge could not score: every item of the instance counted failed, per facet."""
    unscored = [key for key, r in reports.items() if r["status"] != ReportStatus.SCORED]
    if not unscored:
        return []
    fields = [field.removeprefix("item__") for _, field in ROLLUP_DIMENSIONS]
    items: dict[int, list[dict]] = {}
    for item in ChecklistItem.objects.filter(instance_id__in={facets[a]["instance_id"] for a, _ in unscored}).values(
            "instance_id", *fields):
        items.setdefault(item["instance_id"], []).append(item)
    groups = []
    for attempt_id, judge_id in unscored:
        f = facets[attempt_id]
        counted: dict[tuple[str, str], int] = {}
        for item in items.get(f["instance_id"], []):
            for (dimension, _), name in zip(ROLLUP_DIMENSIONS, fields):
                if item[name] is not None and item[name] != "":
                    counted[(dimension, str(item[name]))] = counted.get((dimension, str(item[name])), 0) + 1
        groups += [GroupRollup(attempt_id=attempt_id, judge_id=judge_id, benchmark_id=f["run__benchmark_id"],
                               model_id=f["run__model_id"], dimension=dimension, value=value, n_applicable=n, n_passed=0)
                   for (dimension, value), n in counted.items()]
    return groups


# jobs ---------------------------------------------------------------------------------
PROGRESS_EVERY_SECONDS = 0.5


def _progress_key(job_id) -> str:
    return f"ifportal:job:{job_id}:progress"


def job_progress(job: Job) -> tuple[int, int]:
    """(done, total) of a running job as last reported; the row for finished ones.

    Progress goes through the cache, not the job row: the ingest transaction would hide
    row updates from the page until it commits.
    """
    if job.finished:
        return job.progress_done, job.progress_total
    live = cache.get(_progress_key(job.id))
    return tuple(live) if live else (job.progress_done, job.progress_total)


class ProgressReporter:
    """Throttled (done, total) reports for a job, readable by other processes."""

    def __init__(self, job_id):
        self.job_id = job_id
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self._last >= PROGRESS_EVERY_SECONDS or (total and done >= total):
            self._last = now
            cache.set(_progress_key(self.job_id), (done, total), timeout=24 * 3600)


def verdict_changes(*, created: int, updated: int, unchanged: int, removed: int = 0) -> dict[str, Any]:
    """A job's counts of the verdicts it wrote, in the shape ingest jobs report (the job page and API read
    `created`/`updated`/`unchanged` and `by_kind`): a re-check says what it created and changed."""
    outcomes = {"created": created, "updated": updated, "unchanged": unchanged, "removed": removed}
    return {**outcomes, "by_kind": {"verdicts": {k: v for k, v in outcomes.items() if v}}}


def job_create(*, kind: str, params: dict[str, Any], files: list[dict[str, str]] | None = None, user=None) -> Job:
    """A queued job; start it with `job_enqueue` (after the transaction that made it commits)."""
    return Job.objects.create(kind=kind, params=params, files=files or [], created_by=user)


def job_enqueue(job: Job) -> None:
    """Hand a queued job to the configured runner once the current transaction commits."""
    mode = settings.IFPORTAL_JOBS
    if mode == "inline":
        transaction.on_commit(lambda: job_execute(job.id), robust=False)
    elif mode == "thread":
        transaction.on_commit(lambda: _start_thread(job.id))
    else:
        from .tasks import run_job

        transaction.on_commit(lambda: run_job.delay(str(job.id)))


def _start_thread(job_id) -> None:
    def target():
        try:
            job_execute(job_id)
        finally:
            connection.close()  # this thread ends: its session would stay open until garbage collection

    threading.Thread(target=target, name=f"job-{job_id}", daemon=True).start()


def job_retry(job: Job) -> Job:
    """Queue a failed job again with the same parameters and files."""
    if job.state != JobState.FAILED:
        raise ValueError("only a failed job can be retried")
    Job.objects.filter(pk=job.pk).update(
        state=JobState.QUEUED, errors=[], error_count=0, message="", counts={}, finished_at=None
    )
    job.refresh_from_db()
    job_enqueue(job)
    return job


def _claim(job_id) -> Job | None:
    """Mark a queued job running; None unless it is queued (another worker has it, it has
    finished, or it failed and waits for a deliberate retry: a redelivered message after a
    worker died must not rerun it behind the user's back)."""
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.state != JobState.QUEUED:
            return None
        job.state = JobState.RUNNING
        job.started_at = timezone.now()
        job.attempts_made += 1
        job.save(update_fields=["state", "started_at", "attempts_made"])
        return job


JOB_KINDS: dict[str, str] = {
    "ingest": "runs.services:_job_ingest",
    "rollups": "runs.services:_job_rollups",
}


def job_register(kind: str, target: str) -> None:
    """Let another module add a kind of job ("module:function", called with the Job)."""
    JOB_KINDS[kind] = target


HEARTBEAT_SECONDS = 5
#: a running job whose heartbeat is older than this lost its worker
HEARTBEAT_STALE_SECONDS = 60


def _heartbeat_key(job_id) -> str:
    return f"ifportal:job:{job_id}:heartbeat"


class _Heartbeat:
    """Marks a job alive in the cache every few seconds while it runs, from its own thread."""

    def __init__(self, job_id):
        self.job_id = job_id
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{job_id}", daemon=True)

    def _beat(self) -> None:
        while True:
            cache.set(_heartbeat_key(self.job_id), time.time(), timeout=24 * 3600)
            if self._stop.wait(HEARTBEAT_SECONDS):
                return

    def __enter__(self) -> "_Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=HEARTBEAT_SECONDS + 1)
        cache.delete(_heartbeat_key(self.job_id))


def job_check_alive(job: Job) -> Job:
    """Mark a running job failed if its worker stopped beating (killed, machine lost).

    The job's own transaction died with its database connection, so nothing it wrote is
    stored; the job can be retried. Pages call this before showing a running job.
    """
    if job.state != JobState.RUNNING or job.started_at is None:
        return job
    beat = cache.get(_heartbeat_key(job.id))
    last = beat if beat is not None else job.started_at.timestamp()
    if time.time() - last > HEARTBEAT_STALE_SECONDS:
        updated = Job.objects.filter(pk=job.pk, state=JobState.RUNNING).update(
            state=JobState.FAILED,
            message="The worker running this job stopped before it finished; nothing was stored. Retry it.",
            errors=["worker lost: no heartbeat for more than a minute"],
            error_count=1,
            finished_at=timezone.now(),
        )
        if updated:
            job.refresh_from_db()
    return job


def job_execute(job_id) -> None:
    """Run a job to its end, recording counts, errors and the final state. Safe to call twice."""
    import importlib

    try:
        job = _claim(job_id)
    except (InterfaceError, OperationalError) as exc:  # e.g. SQLite busy past its timeout
        _fail_unstarted(job_id, exc)
        return
    if job is None:
        return
    module_name, func = JOB_KINDS[job.kind].split(":")
    target = getattr(importlib.import_module(module_name), func)
    changed: set[int] = set()
    token = _changed_in_job.set(changed)
    try:
        with _Heartbeat(job.id):
            result = target(job) or {}
    except Exception as exc:  # the job records why it failed; the worker stays up
        from .ingest import IngestFailed

        lost = False
        if isinstance(exc, IngestFailed):
            errors = [str(p) for p in exc.problems]
            # what was read is not what was stored: no "created" counts beside "nothing was stored"
            counts, count = {}, exc.total
            message = f"{exc.total} problem(s); nothing was stored."
        elif lost := _connection_lost(exc):
            log.warning("job %s lost its database connection: %s", job_id, exc)
            errors = ["database connection lost: " + (str(exc).strip().splitlines() or [type(exc).__name__])[0]]
            counts, count = {}, 1
            message = ("The job lost its database connection (the database restarted or ended the session); "
                       "nothing was stored. Retry it.")
        else:
            error_id = _error_id()
            # the traceback (paths, code, values) goes to the log only; the job shows the kind of error and its id
            log.exception("job %s failed (error id %s)", job_id, error_id)
            errors = [f"internal error {type(exc).__name__} (error id {error_id})"]
            counts, count = {}, 1
            message = (f"The job stopped with an internal error (error id {error_id}); nothing was stored. "
                       "Retry it; if it fails again, give the error id to an administrator (it is in the server log).")
        fields = dict(state=JobState.FAILED, errors=errors, error_count=count, counts=counts, message=message,
                      finished_at=timezone.now())
        for wait in (1, 2, 4, 8, 15, 0) if lost else (0,):
            try:  # a restarting database refuses connections for a few seconds
                Job.objects.filter(pk=job.pk).update(**fields)
                return
            except (InterfaceError, OperationalError):
                if not wait:
                    raise
                connection.close()
                time.sleep(wait)
    finally:
        _changed_in_job.reset(token)
    done, total = job_progress(job)
    Job.objects.filter(pk=job.pk).update(
        state=JobState.SUCCEEDED,
        counts=result.get("counts", {}),
        message=result.get("message", ""),
        progress_done=total or done,
        progress_total=total,
        finished_at=timezone.now(),
    )
    _leaderboards_warm(changed)


def _error_id() -> str:
    """A short id that ties what a user sees to the traceback in the server log."""
    return uuid.uuid4().hex[:12]


def _fail_unstarted(job_id, exc: Exception) -> None:
    """Mark a queued job failed because it could not start (its claim met a database error), so that no
    job waits for ever in `queued`: the user sees why and can retry it. Tries a few times, the database
    being busy is why it is here."""
    error_id = _error_id()
    log.warning("job %s could not start (error id %s)", job_id, error_id, exc_info=exc)
    fields = dict(state=JobState.FAILED, error_count=1, counts={}, finished_at=timezone.now(),
                  errors=[f"could not start: the database was busy or unavailable (error id {error_id})"],
                  message=(f"The job could not start: the database was busy or unavailable (error id {error_id}); "
                           "nothing was stored. Retry it."))
    for wait in (0.5, 1, 2, 4, 0):
        try:
            Job.objects.filter(pk=job_id, state=JobState.QUEUED).update(**fields)
            return
        except (InterfaceError, OperationalError):
            if not wait:
                log.error("job %s stays queued: marking it failed met the database error again", job_id)
                return
            connection.close()
            time.sleep(wait)


def _connection_lost(exc: Exception) -> bool:
    """Whether a job failed because its database session died (not because of its data).

    The transaction's exit has already reconnected, so the error itself tells: PostgreSQL's
    connection-exception (08) and operator-intervention (57P: terminated, shut down) classes,
    or a client-side error without a server state (socket closed).
    """
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError) or connection.vendor != "postgresql":
        return False
    state = getattr(exc.__cause__, "sqlstate", None)
    return state is None or state.startswith(("08", "57P"))


def _job_ingest(job: Job) -> dict[str, Any]:
    """An upload's files, planned as `manage.py ingest` plans a folder (their paths, an uploaded manifest)."""
    from .ingest import IngestFailed, Options, Problem, Report, ingest_units
    from .ingest.layout import LayoutError, plan_uploads

    options = Options(**{k: v for k, v in job.params.get("options", {}).items() if v not in (None, "")})
    try:
        units = plan_uploads(job.params["format"], [(Path(f["path"]), f.get("name") or Path(f["path"]).name)
                                                    for f in job.files], options)
    except LayoutError as exc:
        raise IngestFailed([Problem(exc.where, None, exc.reason)], 1, Report()) from None
    report = ingest_units(job.params["format"], units, progress=ProgressReporter(job.id))
    return {"counts": report.as_dict(), "message": report.summary()}


def _job_rollups(job: Job) -> dict[str, Any]:
    ids = job.params.get("attempt_ids")
    if ids is None:
        qs = Attempt.objects.all()
        if job.params.get("benchmark_id"):
            qs = qs.filter(run__benchmark_id=job.params["benchmark_id"])
        ids = list(qs.values_list("id", flat=True))
    n = rollups_rebuild_for_attempts(ids)
    return {"counts": {"rollups": n}, "message": f"rebuilt {n} rollups"}


def uploads_clean(*, days: int | None = None, now=None) -> list[str]:
    """Delete the uploaded files of jobs that finished more than `days` (IFPORTAL_UPLOAD_RETENTION_DAYS) ago,
    and upload folders of jobs that no longer exist once as old; the ids of the folders removed.

    A cleaned job keeps its file names (its page and the API still say what was imported) with
    `"removed": true` instead of a path, and can no longer be retried (`selectors.job_can_retry`).
    Run by `manage.py uploads_clean` (cron) and, with Celery, daily by the beat schedule.
    """
    days = settings.IFPORTAL_UPLOAD_RETENTION_DAYS if days is None else days
    if days <= 0:
        return []
    cutoff = (now or timezone.now()) - timedelta(days=days)
    root = Path(settings.MEDIA_ROOT) / "uploads"
    removed = []
    old = Job.objects.filter(state__in=(JobState.SUCCEEDED, JobState.FAILED), finished_at__lt=cutoff).exclude(files=[])
    for job in old.only("id", "files").iterator():
        if all(f.get("removed") for f in job.files):
            continue
        shutil.rmtree(root / str(job.id), ignore_errors=True)
        Job.objects.filter(pk=job.pk).update(files=[{"name": f.get("name", ""), "removed": True} for f in job.files])
        removed.append(str(job.id))
    if root.is_dir():
        known = {str(pk) for pk in Job.objects.values_list("id", flat=True)}
        for folder in root.iterdir():
            if folder.name not in known and folder.stat().st_mtime < cutoff.timestamp():
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder.name)
    return removed


def upload_dir(job_id) -> Path:
    path = Path(settings.MEDIA_ROOT) / "uploads" / str(job_id)
    path.mkdir(parents=True, exist_ok=True)
    return path
