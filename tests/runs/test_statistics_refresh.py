"""Planner statistics during a bulk load (PostgreSQL): an ingest analyses the tables it bulk-writes once
they have grown past what their statistics describe, so each file of a long load costs the same."""
import time
from pathlib import Path

import pytest
from django.db import connection
from django.test import override_settings

from runs.ingest import BULK_WRITTEN, Options, Source, ingest
from runs.models import GroupRollup, Verdict
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


def test_it_does_nothing_on_sqlite():
    if connection.vendor == "postgresql":
        pytest.skip("the SQLite side of statistics_refresh")
    assert statistics_refresh(BULK_WRITTEN, min_rows=0) == []
