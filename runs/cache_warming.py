"""Cache warming after a write: what the first viewer after a data change would otherwise pay for.

`after_write` is the one path: it receives runs.signals.benchmarks_written, which writers send once their change
committed (runs.services: on commit, or once at the end of a block of commits; runs.jobs: once a job has finished),
and `manage.py leaderboards_warm` calls `leaderboards_default` after a deploy, which changes the code version that
keys the cache. It computes each checklist benchmark's leaderboard summary
(runs.selectors.checklist.leaderboard_base) and the leaderboard as first opened (no filters, by model, best ISR
first, every item): its tables, #results fragment, filter form and choices. Benchmarks without rollups are skipped.
It also has the item health report of each benchmark with items (checklist, dialogue, hierarchy) computed, with its
2PL fit (runs.selectors.item_health), off the writer's path (runs.background.soon: seconds at a million verdicts).
A failure is logged and never fails the writer: its change is committed, and the first request computes what is
missing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.http import QueryDict

from runs import background
from runs.cache import cache_scope
from runs.leaderboard_page import page_parts
from runs.models import AttemptRollup, Benchmark, BenchmarkKind
from runs.selectors.checklist import checklist_query, filter_choices
from runs.selectors.item_health import health_report

log = logging.getLogger(__name__)

#: the Celery task that fits item health after a write (runs.tasks.item_health_fit)
ITEM_HEALTH_TASK = "runs.item_health_fit"


def after_write(benchmark_ids: Iterable[int], **signal) -> None:
    """Warm the caches of these benchmarks' current data generation (`leaderboards_default`); a failure is logged."""
    ids = sorted({int(i) for i in benchmark_ids})
    if not ids:
        return
    try:
        leaderboards_default(ids)
    except Exception:
        log.warning("warming the leaderboards of benchmarks %s failed", ids, exc_info=True)
    background.soon(ITEM_HEALTH_TASK, item_health_default, ids)


def leaderboards_default(benchmark_ids: Iterable[int]) -> None:
    """Compute and cache the leaderboard as first opened of each checklist benchmark with rollups among these."""
    ids = sorted(set(benchmark_ids))
    with_rollups = set(
        AttemptRollup.objects.filter(benchmark_id__in=ids).values_list("benchmark_id", flat=True).distinct().order_by()
    )
    for benchmark in Benchmark.objects.filter(id__in=with_rollups, kind=BenchmarkKind.CHECKLIST).order_by("id"):
        with cache_scope(None):  # the shared default page is no one's spending; one generation for its parts
            filter_choices(benchmark)
            page_parts(checklist_query(benchmark, QueryDict()))


def item_health_default(benchmark_ids: Iterable[int]) -> None:
    """Compute and cache the item health report (its 2PL fit included) of each of these benchmarks; a failure is
    logged."""
    try:
        for benchmark in Benchmark.objects.filter(id__in=sorted(set(benchmark_ids))):
            with cache_scope(None):
                health_report(benchmark)
    except Exception:
        log.warning("fitting the item health of benchmarks %s failed", sorted(set(benchmark_ids)), exc_info=True)
