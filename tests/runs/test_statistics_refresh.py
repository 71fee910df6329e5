"""Planner statistics during a bulk load (PostgreSQL): an ingest analyses the tables it bulk-writes once
they have grown past what their statistics describe, so each file of a long load costs the same."""

import time
from pathlib import Path

import pytest
from django.db import connection
from django.test import override_settings

from runs.bulk import bulk_insert_rows
from runs.ingest import BULK_WRITTEN, Options, Source, ingest
from runs.ingest.verdicts import _all_new
from runs.models import (
    AgentModel,
    Attempt,
    Benchmark,
    ChecklistItem,
    GroupRollup,
    Instance,
    Judge,
    Run,
    SearchText,
    TrajectoryMessage,
    Verdict,
)
from runs.services import statistics_refresh

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "octobench"

pytestmark = pytest.mark.django_db(transaction=True)


def analysed(table: str) -> int:
    """How many times `table` was analysed, once this backend's counts are in the shared statistics."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT analyze_count FROM pg_stat_user_tables WHERE relid = %s::regclass", [table])
        return cursor.fetchone()[0]


def settle():
    """Flush this backend's pending table counts (they reach the shared statistics when it is idle)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
    time.sleep(0.05)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")


def test_it_analyses_a_table_that_outgrew_its_statistics_and_only_that(postgres):
    ingest("octobench-instances", [Source.of(FIXTURES / "instances.jsonl")], Options())
    ingest("octobench-scores", [Source.of(FIXTURES / "scores.json")], Options(model="m", judge="j1"))
    settle()
    verdicts, groups = Verdict._meta.db_table, GroupRollup._meta.db_table
    assert Verdict.objects.count() > 10

    assert statistics_refresh([Verdict], min_rows=100_000) == []  # not enough rows changed
    assert statistics_refresh([Verdict, GroupRollup], min_rows=5) == sorted([groups, verdicts])
    settle()
    assert statistics_refresh([Verdict, GroupRollup], min_rows=5) == []  # fresh now
    before = analysed(verdicts)

    # the next ingest finds the verdict table doubled since it was analysed: below the default
    # minimum of changed rows it goes on; above a lower one it analyses the table first
    ingest("octobench-scores", [Source.of(FIXTURES / "scores.json")], Options(model="m", judge="j2"))
    settle()
    assert analysed(verdicts) == before
    with override_settings(IFPORTAL_ANALYZE_MIN_ROWS=5):
        ingest("octobench-scores", [Source.of(FIXTURES / "scores.json")], Options(model="m", judge="j3"))
    assert analysed(verdicts) == before + 1
    assert Verdict in BULK_WRITTEN and GroupRollup in BULK_WRITTEN


def test_an_import_leaves_the_statistics_of_what_it_wrote_for_the_pages_after_it(postgres):
    """A search right after a long trajectory's import planned with the statistics of the table before it (a new
    benchmark's 90,000 rows estimated as 1), walked every row and gave up after 2 s. An ingest analyses the tables
    it outgrew once it has committed, not only when the next ingest starts."""
    ingest("octobench-instances", [Source.of(FIXTURES / "instances.jsonl")], Options())
    settle()
    table = SearchText._meta.db_table
    before = analysed(table)
    with override_settings(IFPORTAL_ANALYZE_MIN_ROWS=5):
        ingest("octobench-trajectories", [Source.of(FIXTURES / "trajectory_merged.jsonl")], Options())
    assert analysed(table) == before + 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [table])
        assert cursor.fetchone()[0] == SearchText.objects.count() > 0
    assert SearchText in BULK_WRITTEN and TrajectoryMessage in BULK_WRITTEN


def test_it_does_nothing_on_sqlite():
    if connection.vendor == "postgresql":
        pytest.skip("the SQLite side of statistics_refresh")
    assert statistics_refresh(BULK_WRITTEN, min_rows=0) == []


def test_the_first_import_finds_no_verdicts_without_scanning_what_it_loaded(postgres):
    """A first import fills the verdict table in its own transaction while the statistics say it is empty.
    Asking whether an attempt and judge have verdicts must still go through an attempt-leading index: as
    an EXISTS, the planner scanned everything loaded so far, for every file (9.5 s of a 1M-verdict import)."""
    with connection.cursor() as cursor:  # the statistics of a new portal: a table never analysed
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        if not cursor.fetchone()[0]:
            pytest.skip("setting a table's statistics back to 'never analysed' needs a superuser")
        cursor.execute(
            "UPDATE pg_class SET reltuples = -1, relpages = 0 WHERE oid = %s::regclass", [Verdict._meta.db_table]
        )
    benchmark = Benchmark.objects.create(slug="b", name="b")
    instances = Instance.objects.bulk_create([Instance(benchmark=benchmark, external_id=f"i{n}") for n in range(117)])
    items = ChecklistItem.objects.bulk_create(
        [ChecklistItem(instance=instances[0], key=f"k{k}", position=k) for k in range(40)]
    )
    run = Run.objects.create(benchmark=benchmark, model=AgentModel.objects.create(name="m"), label="r")
    attempts = Attempt.objects.bulk_create([Attempt(run=run, instance=instance) for instance in instances])
    judges = [Judge.objects.create(name=f"j{n}") for n in range(10)]
    loaded, new = attempts[:100], attempts[100:]  # 17 attempts: a chunk of a scores file
    bulk_insert_rows(
        Verdict,
        [
            {
                "attempt_id": a.id,
                "item_id": i.id,
                "judge_id": j.id,
                "result": "pass",
                "reasoning": "",
                "score": None,
                "evidence": None,
            }
            for a in loaded
            for i in items
            for j in judges
        ],
    )  # 40,000 rows, one transaction
    statements = []

    def explained(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(explained):
        assert _all_new({a.id for a in new}, {judges[0].id})
    assert not _all_new({new[0].id, loaded[-1].id}, {judges[-1].id})

    ((sql, params),) = statements
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index" in plan and "Seq Scan" not in plan, plan
