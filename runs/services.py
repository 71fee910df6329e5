"""Writes: rollup rebuilds, the write locks, and the data generation that keys cached leaderboards.

Background jobs are `runs.jobs`; re-checks with the portal's checkers `runs.recheck`; imports `runs.ingest`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Q

from runs.bulk import bulk_insert
from runs.models import (
    Attempt,
    AttemptRollup,
    Benchmark,
    ChecklistItem,
    GroupRollup,
    JudgeDisagreement,
    JudgeReport,
    ReportStatus,
    Run,
    Verdict,
    VerdictResult,
)
from runs.signals import benchmarks_written

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
    generation (`runs.cache.cached`), so readers see the new number together with the
    new rows when the transaction commits, and never a cached table of the old rows under it.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("benchmarks_generation_bump needs the transaction that makes the change")
    ids = sorted({int(i) for i in benchmark_ids})
    if ids:
        Benchmark.objects.filter(id__in=ids).update(data_generation=F("data_generation") + 1)
        touched = _changed.get()
        if touched is not None:  # inside a job: its leaderboards are warmed once it has finished
            transaction.on_commit(lambda: touched.update(ids))
        else:
            # any other writer precomputes the new generation's leaderboard summary and default page once
            # it committed, as it rebuilt the rollups: no request after the change scores the rollups
            transaction.on_commit(lambda: benchmarks_written.send(sender=__name__, benchmark_ids=ids))


#: the benchmarks whose data a committed transaction changed, while `benchmarks_changes_collected` runs (None outside)
_changed: ContextVar[set[int] | None] = ContextVar("benchmarks_changed", default=None)


@contextmanager
def benchmarks_changes_collected() -> Iterator[set[int]]:
    """Collect, while the block runs, the ids of the benchmarks whose generation a committed transaction
    bumped (their leaderboards are warmed once, when the block ends, not after each of its transactions)."""
    changed: set[int] = set()
    token = _changed.set(changed)
    try:
        yield changed
    finally:
        _changed.reset(token)


@contextmanager
def leaderboards_warmed_at_end() -> Iterator[None]:
    """Writes inside (many commits: an import file by file) leave the leaderboards they change to be
    precomputed and warmed once, at the end, instead of after every commit (a job does the same)."""
    with benchmarks_changes_collected() as changed:
        try:
            yield
        finally:
            benchmarks_written.send(sender=__name__, benchmark_ids=changed)


def benchmarks_of_attempts(attempt_ids: Sequence[int]) -> set[int]:
    """The benchmarks these attempts belong to (a query per ROLLUP_BATCH ids)."""
    out: set[int] = set()
    for start in range(0, len(attempt_ids), ROLLUP_BATCH):
        out.update(
            Run.objects.filter(attempts__id__in=attempt_ids[start : start + ROLLUP_BATCH])
            .values_list("benchmark_id", flat=True)
            .distinct()
            .order_by()
        )
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


def statistics_count_at_commit() -> None:
    """Have this transaction's row counts reach the shared statistics as soon as it commits (PostgreSQL 15's
    pg_stat_force_next_flush), so a `statistics_refresh` right after the commit sees them: otherwise a backend
    reports its counts at most once a second, and the refresh saw none of the ingest that just ended."""
    if connection.vendor == "postgresql" and connection.pg_version >= 150000:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_force_next_flush()")


def rollups_rebuild_for_attempts(
    attempt_ids: Iterable[int], judge_ids: Iterable[int] | None = None, *, bump: Iterable[int] = ()
) -> int:
    """Recompute AttemptRollup and GroupRollup rows of these attempts from their verdicts, and the
    items their judges split on (JudgeDisagreement).

    With `judge_ids`, only the rollups of those judges are recomputed: a writer that changed one
    judge's verdicts (a scores file, a re-score) leaves the other judges' rollups of the same
    attempts as they are, so loading k judges one file at a time costs k rebuilds, not k(k+1)/2.
    The splits are recomputed from every judge's verdicts of the attempts either way (one judge's
    verdicts change which items it splits on with the others).

    The whole set is replaced in one transaction under the lock of its benchmarks:
    readers see the previous complete rows until it commits, concurrent rebuilds of the
    same data run one after the other, and running it twice gives the same rows. The
    benchmarks' data generation is bumped in the same transaction (cached leaderboards
    of the old rows are no longer read), with those of `bump` (a writer's other changes: one bump, so one
    warm-up of their leaderboards after the commit). Returns the number of attempt x judge rollups written.
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
        benchmarks_generation_bump({*benchmarks, *bump})
    return written


def _rollups_rebuild_sql(batch: list[int], judges: list[int] | None) -> int:
    """The rebuild as set-based SQL on PostgreSQL: three deletes, then one statement that reads the
    batch's verdicts once and inserts both rollups (INSERT ... SELECT ... GROUP BY in CTEs).

    The verdicts are counted first and the attempt's facets (run, instance, benchmark, model)
    joined to the counted rows, one lookup per attempt instead of one per verdict. Judge reports
    (`JudgeReport`) add their extra counts, and make a rollup of an attempt the judge could not score.
    The same statement replaces the attempts' JudgeDisagreement rows from all their judges' verdicts
    (the verdicts it counted when it rebuilds every judge, else a second read of the batch's).
    """
    t = {
        m: connection.ops.quote_name(m._meta.db_table)
        for m in (AttemptRollup, GroupRollup, Verdict, Attempt, Run, ChecklistItem, JudgeReport, JudgeDisagreement)
    }
    counts = (
        "count(*) FILTER (WHERE v.result <> 'na') AS n_applicable, "
        "count(*) FILTER (WHERE v.result = 'pass') AS n_passed"
    )
    # the items that passed and failed, as AttemptRollup keeps them (comma-separated ids)
    item_lists = ", ".join(
        f"COALESCE(string_agg(v.item_id::text, ',') FILTER (WHERE v.result = '{result}'), '') AS {column}"
        for result, column in ((VerdictResult.PASS, "passed_items"), (VerdictResult.FAIL, "failed_items"))
    )
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
        cursor.execute(f"DELETE FROM {t[JudgeDisagreement]} WHERE attempt_id = ANY(%s)", [batch])
        # the splits need every judge's verdicts: those counted above when every judge is rebuilt, else the batch's own
        every_judge = (
            ""
            if judges is None
            else (
                f"dv AS MATERIALIZED (SELECT attempt_id, judge_id, item_id, result FROM {t[Verdict]} WHERE attempt_id = ANY(%s)), "
            )
        )
        judged = "v" if judges is None else "dv"
        cursor.execute(
            f"WITH v AS MATERIALIZED (SELECT attempt_id, judge_id, item_id, result FROM {t[Verdict]} "
            f"WHERE attempt_id = ANY(%s){of_judges}), "
            f"f AS MATERIALIZED (SELECT a.id, a.run_id, a.instance_id, r.benchmark_id, r.model_id "
            f"FROM {t[Attempt]} a JOIN {t[Run]} r ON r.id = a.run_id WHERE a.id = ANY(%s)), "
            f"cv AS (SELECT v.attempt_id, v.judge_id, count(*) AS n, {counts}, {item_lists} FROM v GROUP BY 1, 2), "
            f"r AS MATERIALIZED (SELECT attempt_id, judge_id, status, n_applicable_extra, n_passed_extra, "
            f"(SELECT count(*) FROM jsonb_object_keys(unrecognised)) AS n_unrecognised FROM {t[JudgeReport]} "
            f"WHERE attempt_id = ANY(%s){of_judges}), "
            f"c AS (SELECT COALESCE(cv.attempt_id, r.attempt_id) AS attempt_id, COALESCE(cv.judge_id, r.judge_id) AS judge_id, "
            f"COALESCE(cv.n, 0) AS n, COALESCE(cv.n_applicable, 0) + COALESCE(r.n_applicable_extra, 0) AS n_applicable, "
            f"COALESCE(cv.n_passed, 0) + COALESCE(r.n_passed_extra, 0) AS n_passed, "
            f"CASE WHEN r.status IS NULL OR r.status = '{ReportStatus.SCORED}' THEN '' ELSE r.status END AS unscored, "
            f"COALESCE(r.n_unrecognised, 0) AS n_unrecognised, "
            f"COALESCE(cv.passed_items, '') AS passed_items, COALESCE(cv.failed_items, '') AS failed_items "
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
            f"instance_id, n_items, n_applicable, n_passed, unscored, n_unrecognised, passed_items, failed_items) "
            f"SELECT c.attempt_id, c.judge_id, f.benchmark_id, f.run_id, f.model_id, f.instance_id, c.n, "
            f"c.n_applicable, c.n_passed, c.unscored, c.n_unrecognised, c.passed_items, c.failed_items "
            f"FROM c JOIN f ON f.id = c.attempt_id RETURNING 1), "
            f"groups AS (INSERT INTO {t[GroupRollup]} (attempt_id, judge_id, benchmark_id, model_id, dimension, value, "
            f"n_applicable, n_passed) "
            f"SELECT g.attempt_id, g.judge_id, f.benchmark_id, f.model_id, g.dimension, g.value, g.n_applicable, "
            f"g.n_passed FROM (SELECT * FROM g UNION ALL SELECT * FROM gu) g JOIN f ON f.id = g.attempt_id RETURNING 1), "
            # the items some judge passed and another failed, with who passed and who failed each
            # the split items found by a cheap aggregate first ('fail' < 'pass': both given where they differ), then
            # who said which for those only (about a fifth of the items): the JSON built for every item and most of
            # it thrown away made the rebuild of a 1M-verdict study 6% slower (docs/performance.md, "Ingest")
            f"{every_judge}sk AS (SELECT attempt_id, item_id FROM {judged} "
            f"WHERE result IN ('{VerdictResult.PASS}', '{VerdictResult.FAIL}') GROUP BY 1, 2 HAVING min(result) <> max(result)), "
            f"s AS (SELECT x.attempt_id, x.item_id, "
            f"jsonb_object_agg(x.judge_id::text, 1) FILTER (WHERE x.result = '{VerdictResult.PASS}') AS passed_by, "
            f"jsonb_object_agg(x.judge_id::text, 1) FILTER (WHERE x.result = '{VerdictResult.FAIL}') AS failed_by "
            f"FROM {judged} x JOIN sk ON sk.attempt_id = x.attempt_id AND sk.item_id = x.item_id "
            f"GROUP BY 1, 2), "
            f"splits AS (INSERT INTO {t[JudgeDisagreement]} (attempt_id, item_id, benchmark_id, run_id, model_id, "
            f"instance_id, passed_by, failed_by) SELECT s.attempt_id, s.item_id, f.benchmark_id, f.run_id, f.model_id, "
            f"f.instance_id, s.passed_by, s.failed_by FROM s JOIN f ON f.id = s.attempt_id RETURNING 1) "
            f"SELECT (SELECT count(*) FROM attempts), (SELECT count(*) FROM groups), (SELECT count(*) FROM splits)",
            [*params, batch, *params, *([] if judges is None else [batch])],
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
    counts = {
        "n_items": Count("id"),
        "n_applicable": Count("id", filter=~Q(result=VerdictResult.NOT_APPLICABLE)),
        "n_passed": Count("id", filter=Q(result=VerdictResult.PASS)),
    }
    rows = {
        (row["attempt_id"], row["judge_id"]): row
        for row in verdicts.values("attempt_id", "judge_id").annotate(**counts).order_by()
    }
    item_lists: dict[tuple[int, int, str], list[str]] = {}
    for attempt_id, judge_id, item_id, result in verdicts.filter(
        result__in=(VerdictResult.PASS, VerdictResult.FAIL)
    ).values_list("attempt_id", "judge_id", "item_id", "result"):
        item_lists.setdefault((attempt_id, judge_id, result), []).append(str(item_id))
    reports = {
        (r["attempt_id"], r["judge_id"]): r
        for r in JudgeReport.objects.filter(attempt_id__in=batch, **of_judges).values(
            "attempt_id", "judge_id", "status", "n_applicable_extra", "n_passed_extra", "unrecognised"
        )
    }
    rollups = []
    for key in sorted(rows.keys() | reports.keys()):
        row = rows.get(key, {"n_items": 0, "n_applicable": 0, "n_passed": 0})
        report = reports.get(
            key, {"status": ReportStatus.SCORED, "n_applicable_extra": 0, "n_passed_extra": 0, "unrecognised": {}}
        )
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
                passed_items=",".join(item_lists.get((*key, VerdictResult.PASS), ())),
                failed_items=",".join(item_lists.get((*key, VerdictResult.FAIL), ())),
            )
        )
    bulk_insert(AttemptRollup, rollups)
    groups = []
    for dimension, field in ROLLUP_DIMENSIONS:
        rows = (
            (
                verdicts.exclude(**{f"{field}__isnull": True})
                .exclude(**{field: ""})
                .values("attempt_id", "judge_id", field)
                .annotate(n_applicable=counts["n_applicable"], n_passed=counts["n_passed"])
                .order_by()
            )
            if dimension != "turn"
            else (
                verdicts.exclude(item__turn__isnull=True)
                .values("attempt_id", "judge_id", field)
                .annotate(n_applicable=counts["n_applicable"], n_passed=counts["n_passed"])
                .order_by()
            )
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
    _disagreements_rebuild_batch(batch, facets)
    return len(rollups)


def _disagreements_rebuild_batch(batch: list[int], facets: dict[int, dict]) -> None:
    """Replace the batch's JudgeDisagreement rows from all its verdicts (whichever judges the rollups rebuilt)."""
    JudgeDisagreement.objects.filter(attempt_id__in=batch).delete()
    sides: dict[tuple[int, int], tuple[dict, dict]] = {}
    for attempt_id, item_id, judge_id, result in (
        Verdict.objects.filter(attempt_id__in=batch, result__in=[VerdictResult.PASS, VerdictResult.FAIL])
        .values_list("attempt_id", "item_id", "judge_id", "result")
        .order_by()
    ):
        passed, failed = sides.setdefault((attempt_id, item_id), ({}, {}))
        (passed if result == VerdictResult.PASS else failed)[str(judge_id)] = 1
    bulk_insert(
        JudgeDisagreement,
        [
            JudgeDisagreement(
                attempt_id=a,
                item_id=i,
                benchmark_id=facets[a]["run__benchmark_id"],
                run_id=facets[a]["run_id"],
                model_id=facets[a]["run__model_id"],
                instance_id=facets[a]["instance_id"],
                passed_by=passed,
                failed_by=failed,
            )
            for (a, i), (passed, failed) in sorted(sides.items())
            if passed and failed
        ],
    )


def _unscored_group_rollups(reports: dict[tuple, dict], facets: dict[int, dict]) -> list[GroupRollup]:
    """Group rollups of attempts their judge could not score: every item of the instance counted failed, per facet."""
    unscored = [key for key, r in reports.items() if r["status"] != ReportStatus.SCORED]
    if not unscored:
        return []
    fields = [field.removeprefix("item__") for _, field in ROLLUP_DIMENSIONS]
    items: dict[int, list[dict]] = {}
    for item in ChecklistItem.objects.filter(instance_id__in={facets[a]["instance_id"] for a, _ in unscored}).values(
        "instance_id", *fields
    ):
        items.setdefault(item["instance_id"], []).append(item)
    groups = []
    for attempt_id, judge_id in unscored:
        f = facets[attempt_id]
        counted: dict[tuple[str, str], int] = {}
        for item in items.get(f["instance_id"], []):
            for (dimension, _), name in zip(ROLLUP_DIMENSIONS, fields):
                if item[name] is not None and item[name] != "":
                    counted[(dimension, str(item[name]))] = counted.get((dimension, str(item[name])), 0) + 1
        groups += [
            GroupRollup(
                attempt_id=attempt_id,
                judge_id=judge_id,
                benchmark_id=f["run__benchmark_id"],
                model_id=f["run__model_id"],
                dimension=dimension,
                value=value,
                n_applicable=n,
                n_passed=0,
            )
            for (dimension, value), n in counted.items()
        ]
    return groups
