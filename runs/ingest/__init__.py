"""Ingest of every source format: `ingest(format, sources, options)`.

Each format is a function `(sources, ctx) -> None` in a module of this package. The
whole command is one transaction: it stores everything or, if any record is bad,
nothing, and raises `IngestFailed` listing every problem as file:line: reason.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

from django.db import transaction

from runs.models import Attempt, AttemptRollup, ChecklistItem, GroupRollup, Instance, Verdict

from .base import Context, IngestFailed, Options, Problem, Report, Source

__all__ = ["FORMATS", "IngestFailed", "Options", "Problem", "Report", "Source", "ingest"]

#: format name -> "module:function"; imported on use so one format's import cost is its own
FORMATS: dict[str, str] = {
    "octobench-instances": "octobench:ingest_instances",
    "octobench-trajectories": "octobench:ingest_trajectories",
    "octobench-scores": "octobench:ingest_scores",
    "evolif-dialogs": "evolif:ingest_dialogs",
    "evolif-eval": "evolif:ingest_eval",
    "manyih-data": "manyih:ingest_data",
    "manyih-results": "manyih:ingest_results",
    "guidebench-tasks": "guidebench:ingest_tasks",
    "guidebench-predictions": "guidebench:ingest_predictions",
    "native": "native:ingest_native",
    "inspect": "inspect_ai:ingest_inspect",
    "lm-eval": "lm_eval:ingest_lm_eval",
}

#: the tables ingests write many rows to at a time, whose planner statistics they keep fresh
BULK_WRITTEN = (Verdict, GroupRollup, AttemptRollup, Attempt, ChecklistItem, Instance)


def format_function(name: str) -> Callable[[Sequence[Source], Context], None]:
    module_name, func = FORMATS[name].split(":")
    module = importlib.import_module(f"{__name__}.{module_name}")
    return getattr(module, func)


def ingest(
    format_name: str,
    sources: Sequence[Source],
    options: Options,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> Report:
    """Ingest `sources` as `format_name`, all or nothing; returns the counts."""
    from runs.services import benchmarks_generation_bump, rollups_rebuild_for_attempts, statistics_refresh

    if format_name not in FORMATS:
        raise ValueError(f"unknown format {format_name!r}; one of: {', '.join(FORMATS)}")
    ctx = Context(options, progress)
    ctx.plan(sources)
    # before the ingest's own transaction, so ANALYZE's lock is held for the ANALYZE only
    statistics_refresh(BULK_WRITTEN)
    with transaction.atomic():
        format_function(format_name)(sources, ctx)
        ctx.raise_if_failed()
        if ctx.touched_attempts:
            rollups_rebuild_for_attempts(ctx.touched_attempts, ctx.touched_judges)
        for run in ctx.touched_runs.values():
            run_record_sources(run, ctx.source_hashes, format_name)
        if any(ctx.report.total(outcome) for outcome in ("created", "updated", "removed")):
            # instances, items or runs may have changed what a leaderboard shows without a rollup rebuild
            benchmarks_generation_bump(ctx.benchmarks)
    return ctx.report


def run_record_sources(run, hashes: dict[str, str], format_name: str) -> None:
    """Remember which files a run came from (name, format, SHA-256), once each."""
    known = {(s.get("name"), s.get("sha256")) for s in run.sources}
    added = [
        {"name": name, "format": format_name, "sha256": digest}
        for name, digest in hashes.items()
        if (name, digest) not in known
    ]
    if added:
        run.sources = [*run.sources, *added]
        run.save(update_fields=["sources"])
