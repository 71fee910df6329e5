"""Ingest of every source format: `ingest(format, sources, options)`, and of a whole results
folder: `ingest_units(format, units)` (all or nothing) or `ingest_each(format, units)` (per file).

Each format is a function `(sources, ctx) -> None` in a module of this package. An ingest is
one transaction: it stores everything or, if any record is bad, nothing, and raises
`IngestFailed` listing the first problems as file:line: reason, and how many there were.
`layout.plan_import` says which model, run, judge and repetition each file of a folder is.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

from django.db import transaction

from runs.bulk import copies_behind
from runs.ingest.base import Context, IngestFailed, Options, Problem, Report, Source
from runs.ingest.layout import Unit
from runs.ingest.verdicts import reasoning_searchable
from runs.models import (
    Attempt,
    AttemptRollup,
    ChecklistItem,
    GroupRollup,
    Instance,
    JudgeDisagreement,
    SearchText,
    TrajectoryMessage,
    Verdict,
)
from runs.services import (
    benchmarks_generation_bump,
    rollups_rebuild_for_attempts,
    statistics_count_at_commit,
    statistics_refresh,
)

__all__ = [
    "FORMATS",
    "IngestFailed",
    "Options",
    "Problem",
    "Report",
    "Source",
    "Unit",
    "ingest",
    "ingest_each",
    "ingest_units",
]

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

#: the tables ingests write many rows to at a time, whose planner statistics they keep fresh (a trajectory's
#: messages and search rows too: the search planned a new benchmark's 90,000 rows as 1 and walked them all)
BULK_WRITTEN = (
    Verdict,
    GroupRollup,
    AttemptRollup,
    JudgeDisagreement,
    Attempt,
    ChecklistItem,
    Instance,
    SearchText,
    TrajectoryMessage,
)


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
    return ingest_units(format_name, [Unit(options, list(sources))], progress=progress)


def ingest_units(
    format_name: str,
    units: Sequence[Unit],
    *,
    progress: Callable[[int, int], None] | None = None,
    before_commit: Callable[[Report], None] | None = None,
) -> Report:
    """Ingest every unit (files with their options) in one transaction, all or nothing.

    Every file is read and checked even after a problem, so the failure lists the first
    problems of all of them; rollups are rebuilt once, at the end, for everything changed.
    `before_commit(report)` runs last inside the transaction of a successful ingest, so what it
    writes (a job's record of what it stored) commits with the data or not at all.
    """
    if format_name not in FORMATS:
        raise ValueError(f"unknown format {format_name!r}; one of: {', '.join(FORMATS)}")
    read = format_function(format_name)
    ctx = Context(units[0].options if units else Options(), progress)
    ctx.plan([source for unit in units for source in unit.sources])
    # before the ingest's own transaction, so ANALYZE's lock is held for the ANALYZE only
    statistics_refresh(BULK_WRITTEN)
    #: run id -> (run, {file name: SHA-256} of the files that wrote to it)
    run_sources: dict[int, tuple[object, dict[str, str]]] = {}
    with transaction.atomic():
        # the verdicts of one file go in (and their keys are checked) while the next is read
        with copies_behind(Verdict) as ctx.copy_behind:
            for unit in units:
                ctx.options = unit.options
                ctx.touched_runs = {}
                read(unit.sources, ctx)
                names = {source.name for source in unit.sources}
                for run in ctx.touched_runs.values():
                    hashes = run_sources.setdefault(run.id, (run, {}))[1]
                    hashes.update((name, digest) for name, digest in ctx.source_hashes.items() if name in names)
        ctx.copy_behind = None
        ctx.raise_if_failed()
        reasoning_searchable(ctx)
        for run, hashes in run_sources.values():
            run_record_sources(run, hashes, format_name)
        # instances, items or runs may have changed what a leaderboard shows without a rollup rebuild
        changed = ctx.benchmarks if any(ctx.report.total(o) for o in ("created", "updated", "removed")) else set()
        if ctx.touched_attempts:
            # every verdict on an attempt this ingest created is its own: no judge filter to apply
            judges = None if ctx.touched_attempts <= ctx.created_attempts else ctx.touched_judges
            rollups_rebuild_for_attempts(ctx.touched_attempts, judges, bump=changed)
        elif changed:
            benchmarks_generation_bump(changed)
        statistics_count_at_commit()
        if before_commit is not None:
            before_commit(ctx.report)
    # and after it, so the pages and searches that follow plan with the rows it wrote, not only the next ingest
    statistics_refresh(BULK_WRITTEN)
    return ctx.report


def ingest_each(
    format_name: str,
    units: Sequence[Unit],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> list[tuple[Source, Report | IngestFailed]]:
    """Ingest every file on its own (`--per-file`): a bad file stores nothing of itself and the
    others are stored; returns (file, its report or its failure) in order. One progress over all."""
    total = sum(source.path.stat().st_size for unit in units for source in unit.sources if source.path.exists())
    offset = 0
    outcomes: list[tuple[Source, Report | IngestFailed]] = []
    for unit in units:
        for source in unit.sources:

            def shifted(done: int, _total: int, base: int = offset) -> None:
                if progress is not None:
                    progress(base + done, total)

            try:
                outcomes.append((source, ingest_units(format_name, [Unit(unit.options, [source])], progress=shifted)))
            except IngestFailed as failed:
                outcomes.append((source, failed))
            offset += source.path.stat().st_size if source.path.exists() else 0
    return outcomes


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
