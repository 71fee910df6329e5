"""The checklist leaderboard as its page shows it: rows in the chosen order, and the model x group matrix.

The page, the CSV/JSON exports, GET /api/leaderboards/<slug>/ and share snapshots all
call `leaderboard_tables`, so they cannot disagree on numbers or order.

Three things are kept per data generation in the cache (`runs.cache.cached`): each state's
computed tables, the benchmark's `ModelBase` (runs.metrics.checklist), a summary of its
rollups small enough to read whole, from which the tables of any filters grouped by model,
scaffold, primary category or judge are derived without reading the rollups, and per filters
the usage (tokens, time, tool calls) its rows by model carry (one query over the attempts). Writers
precompute the base of the generation they commit, and the default page with it
(runs.leaderboard_page.warm_default, called once the change committed by
runs.services.benchmarks_generation_bump, or at the end of a job), as they rebuild rollups
from verdicts, so no request after a change reads the rollups to score them.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from runs.cache import cached
from runs.charts import checklist as charts
from runs.metrics import checklist as metrics
from runs.metrics.checklist import GROUPINGS, ModelBase, ScoreRow, UsageSummary


@dataclass
class LeaderboardTables:
    """What the leaderboard page shows for one state: overall rows, the rows it exports, groups, matrix, chart."""

    overall: list[ScoreRow]
    rows: list[ScoreRow]  # overall when by == "model", else the model x group cells in page order
    groups: list[str]
    matrix: list[dict]  # [{"row": overall row, "cells": [ScoreRow or None per group]}]; empty when by == "model"
    figure: dict


def sort_rows(rows: Sequence[ScoreRow], sort: str) -> list[ScoreRow]:
    """Rows in a leaderboard sort order (a key of runs.filters.SORTS); rows without a value go last."""
    key = sort.lstrip("-")
    reverse = sort.startswith("-")
    if key == "model":
        return sorted(rows, key=lambda r: r.model)
    if key == "n":
        return sorted(rows, key=lambda r: -r.n_instances)
    missing = [r for r in rows if getattr(r, key) is None]
    present = sorted((r for r in rows if getattr(r, key) is not None), key=lambda r: getattr(r, key), reverse=reverse)
    return present + missing


def matrix_layout(overall: Sequence[ScoreRow], cells: Sequence[ScoreRow], by: str) -> tuple[list[str], list[dict]]:
    """Groups in display order and one matrix line per overall row (cells None where a model has no group value)."""
    order = list(metrics.group_order(by))
    groups = sorted({r.group for r in cells}, key=lambda g: (order.index(g) if g in order else len(order), g))
    by_key = {(r.model, r.group): r for r in cells}
    return groups, [{"row": o, "cells": [by_key.get((o.model, g)) for g in groups]} for o in overall]


def filters_document(f) -> dict:
    """The filters as a JSON document that does not depend on the order values were given in."""
    return {"runs": sorted(f.runs), "judges": sorted(f.judges), "scaffolds": sorted(f.scaffolds),
            "primary_categories": sorted(f.primary_categories), "models": sorted(getattr(f, "models", ()) or ())}


def state_digest(state: dict, excluded_items: Collection[int] | None) -> str:
    """A stable hash of everything a table depends on besides the data: filters, grouping, sort,
    interval flag, exclusion policy and the excluded items themselves (order-independent)."""
    document = {
        **filters_document(state["filters"]), "by": state["by"], "sort": state["sort"], "ci": bool(state["ci"]), "exclude": state.get("exclude") or "none",
        "excluded": sorted(excluded_items) if excluded_items else None,
    }
    return hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def leaderboard_tables(benchmark, state: dict, *, excluded_items: Collection[int] | None = None) -> LeaderboardTables:
    """The leaderboard of a benchmark for a state (filters, by, sort, ci) exactly as its page lays it out,
    optionally leaving out excluded checklist items (an audit exclusion policy); cached per data generation."""
    return cached(benchmark.id, state_digest(state, excluded_items),
                  lambda: compute_tables(benchmark.id, state, excluded_items=excluded_items), kind=LeaderboardTables,
                  charged=not is_default(state, excluded_items))


def is_default(state: dict, excluded_items: Collection[int] | None = None) -> bool:
    """Whether this is the page as first opened (no filters, by model, best ISR first, no interval, every
    item): one per data generation whoever asks, so what it caches is charged to no one's budget."""
    f = state["filters"]
    return (not (f.runs or f.judges or f.scaffolds or f.primary_categories or getattr(f, "models", ()))
            and state["by"] == "model" and state["sort"] == "-isr" and not state["ci"]
            and (state.get("exclude") or "none") == "none" and not excluded_items)


def leaderboard_base(benchmark_id: int) -> ModelBase:
    """The benchmark's ModelBase of the current data generation (computed from the rollups when missing)."""
    return cached(benchmark_id, "base", lambda: metrics.model_base(benchmark_id), kind=ModelBase, charged=False)


def leaderboard_usage(benchmark_id: int, filters, base: ModelBase) -> dict[str, UsageSummary]:
    """Per model, the usage of the attempts the filters keep (metrics.usage_by_model: no rollup read, which
    attempts a judges filter keeps comes from the generation's base), cached per data generation and filters;
    the unfiltered one, of which there is one per generation, charged to no one. Judges that scored every
    attempt keep what no judges filter keeps: that entry is read (the writers warm the unfiltered one) instead
    of every attempt's figures (0.5-0.8 s at 100 models)."""
    if filters.judges and metrics.judges_score_every_attempt(base, filters.judges):
        filters = replace(filters, judges=())
    document = filters_document(filters)
    digest = hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return cached(benchmark_id, f"usage:{digest}", lambda: metrics.usage_by_model(benchmark_id, filters, base=base),
                  kind=dict, charged=any(document.values()))


def _rows(benchmark_id: int, filters, *, by: str, ci: bool, excluded_items) -> list[ScoreRow]:
    """Leaderboard rows: from the precomputed base where it answers the state, else from rollups or verdicts.
    Rows by model carry their attempts' usage whichever way they were computed."""
    if not ci and not excluded_items and by in metrics.BASE_GROUPINGS:
        base = leaderboard_base(benchmark_id)
        rows = metrics.base_rows(base, filters, by=by)
        if by == "model" and rows:
            metrics.with_usage(rows, benchmark_id, filters, usage=leaderboard_usage(benchmark_id, filters, base))
        return rows
    return metrics.leaderboard_rows(benchmark_id, filters, by=by, bootstrap=ci, excluded_items=excluded_items)


def compute_tables(benchmark_id: int, state: dict, *, excluded_items: Collection[int] | None = None) -> LeaderboardTables:
    """The tables computed from the base, the rollups (bootstrap intervals, item facets) or the verdicts (items
    excluded), without caching the tables themselves."""
    filters, by, ci = state["filters"], state["by"], state["ci"]
    overall = sort_rows(_rows(benchmark_id, filters, by="model", ci=ci, excluded_items=excluded_items), state["sort"])
    pooled = metrics.runs_by_model(leaderboard_base(benchmark_id), filters)
    for row in overall:
        row.runs = pooled.get(row.model, ())
    if by == "model":
        return LeaderboardTables(overall, overall, [], [], charts.leaderboard_figure(overall))
    cells = _rows(benchmark_id, filters, by=by, ci=ci, excluded_items=excluded_items)
    groups, matrix = matrix_layout(overall, cells, by)
    rows = [cell for line in matrix for cell in line["cells"] if cell is not None]
    figure = charts.matrix_figure(cells, group_label=GROUPINGS[by], groups=groups)
    return LeaderboardTables(overall, rows, groups, matrix, figure)
