"""The checklist leaderboard as its page shows it: rows in the chosen order, and the model x group matrix.

The page, the CSV/JSON exports, GET /api/leaderboards/<slug>/ and share snapshots all
call `leaderboard_tables`, so they cannot disagree on numbers or order.

Computed tables are cached (Django's cache: Redis when configured, else process memory)
under the benchmark's `data_generation`, which every write that changes what a
leaderboard shows bumps in its own transaction (rollup rebuilds, ingests, deletions,
audit decisions). A request reads the generation fresh (one primary-key query) before
anything else, so a table cached for an older generation is never served after the
change commits. Tables are stored only once the reading transaction commits (at once in
autocommit), so numbers computed from uncommitted rows never reach the cache.

`cached` is the one mechanism: the filter choices (`runs.filters.filter_choices`) and the
page's rendered #results fragment (`runs.leaderboard_page`) are kept under the same keys
(benchmark, generation, part), so one bump retires all three.

What one person can make the cache hold is bounded: parts are keyed on validated state only
(unknown parameters never reach a key), and while a request runs under `cache_budget(owner)`
(runs.middleware.CacheBudgetMiddleware: the signed-in user, else the address) at most
IFPORTAL_CACHE_ENTRIES_PER_USER new entries a day are stored for that owner; past it pages are
computed as usual and simply not kept. Jobs warming the default page spend no one's budget.
"""
from __future__ import annotations

import copy
import hashlib
import json
import logging
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction

from runs.charts import checklist as charts
from runs.metrics import checklist as metrics
from runs.metrics.checklist import GROUPINGS, ScoreRow

log = logging.getLogger(__name__)

#: how long a computed table stays cached; entries of older generations are simply never read again
CACHE_SECONDS = 24 * 3600


def _code_version() -> str:
    """A digest of every module of the runs app and every template: a deploy that changes how rows are
    scored, shaped or rendered never reads what an older version cached in Redis.

    Everything, not a list of the files that seem to matter: a hand-kept list missed templates and
    modules rendered into the cached fragments (_filters.html, _rank_change.html, rank_change.py...)."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted([*here.rglob("*.py"), *(here.parent / "templates").rglob("*.html")]):
        if "migrations" not in path.parts:
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


CODE_VERSION = _code_version()


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


def data_generation(benchmark_id: int) -> int | None:
    """The benchmark's data generation as committed now (None if it was deleted): one primary-key query,
    read fresh on every call (a benchmark row fetched earlier in a long request may be stale)."""
    from runs.models import Benchmark

    return Benchmark.objects.filter(pk=benchmark_id).values_list("data_generation", flat=True).first()


def state_digest(state: dict, excluded_items: Collection[int] | None) -> str:
    """A stable hash of everything a table depends on besides the data: filters, grouping, sort,
    interval flag, exclusion policy and the excluded items themselves (order-independent)."""
    f = state["filters"]
    document = {
        "runs": sorted(f.runs), "judges": sorted(f.judges), "scaffolds": sorted(f.scaffolds),
        "primary_categories": sorted(f.primary_categories), "models": sorted(getattr(f, "models", ()) or ()),
        "by": state["by"], "sort": state["sort"], "ci": bool(state["ci"]), "exclude": state.get("exclude") or "none",
        "excluded": sorted(excluded_items) if excluded_items else None,
    }
    return hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def cache_key(benchmark_id: int, generation: int, digest: str) -> str:
    """The cache key of one table; the database's name is part of it, so two portals (or test
    databases) sharing one Redis never read each other's tables for the same benchmark id."""
    return f"leaderboard:{CODE_VERSION}:{_database_tag()}:{benchmark_id}:{generation}:{digest}"


def _database_tag() -> str:
    settings_dict = connection.settings_dict
    where = f"{settings_dict.get('HOST') or ''}:{settings_dict.get('PORT') or ''}/{settings_dict.get('NAME')}"
    return hashlib.sha256(where.encode()).hexdigest()[:8]


#: who the cache entries stored now are charged to (None: nobody, e.g. a job warming the default page)
_budget_owner: ContextVar[str | None] = ContextVar("leaderboard_cache_owner", default=None)
#: the budget's window: as long as an entry lives, so one owner holds at most about twice the budget at once
BUDGET_SECONDS = CACHE_SECONDS


@contextmanager
def cache_budget(owner: str | None) -> Iterator[None]:
    """Charge the cache entries stored inside the block to `owner` ("user:<id>", "addr:<ip>"; None: nobody)."""
    token = _budget_owner.set(owner)
    try:
        yield
    finally:
        _budget_owner.reset(token)


def _budget_allows_store() -> bool:
    """Whether the current owner may store one more entry in this window (and count it); True without an owner."""
    owner = _budget_owner.get()
    if owner is None:
        return True
    window = int(time.time() // BUDGET_SECONDS)
    key = f"leaderboard:budget:{_database_tag()}:{hashlib.sha256(owner.encode()).hexdigest()[:16]}:{window}"
    try:
        cache.add(key, 0, BUDGET_SECONDS)
        spent = cache.incr(key)
    except Exception:  # a cache that is down stores nothing anyway
        return False
    if spent == settings.IFPORTAL_CACHE_ENTRIES_PER_USER + 1:
        log.warning("leaderboard cache budget of %s spent (%d entries): further pages are not cached",
                    owner, settings.IFPORTAL_CACHE_ENTRIES_PER_USER)
    return spent <= settings.IFPORTAL_CACHE_ENTRIES_PER_USER


#: `generation=FRESH`: read the benchmark's data generation now (one query)
FRESH = object()
T = TypeVar("T")


def cached(benchmark_id: int, part: str, compute: Callable[[], T], *, kind: type, generation=FRESH) -> T:
    """`compute()`, cached under (benchmark, data generation, `part`) until the generation moves.

    `generation` is the benchmark's data generation read before any of the data `compute`
    reads (FRESH reads it now); a caller that caches several things for one request reads it
    once and passes it to each. A value of another type than `kind` in the cache counts as a
    miss. The value is stored once the current transaction commits (dropped on rollback).
    """
    if generation is FRESH:
        generation = data_generation(benchmark_id)
    if generation is None:  # deleted meanwhile: compute (empty) rather than cache under no generation
        return compute()
    key = cache_key(benchmark_id, generation, part)
    try:
        value = cache.get(key)
    except Exception:  # a cache that is down must not take the leaderboard with it
        log.warning("leaderboard cache unavailable (read)", exc_info=True)
        value = None
    if isinstance(value, kind):
        return value
    value = compute()
    if not _budget_allows_store():
        return value
    # inside a transaction the store waits for commit (and is dropped on rollback): keep what
    # was computed now, whatever the caller does to what it gets back meanwhile
    stored = copy.deepcopy(value) if connection.in_atomic_block else value
    transaction.on_commit(lambda: _store(key, stored))
    return value


def leaderboard_tables(benchmark, state: dict, *, excluded_items: Collection[int] | None = None,
                       generation=FRESH) -> LeaderboardTables:
    """The leaderboard of a benchmark for a state (filters, by, sort, ci) exactly as its page lays it out,
    optionally leaving out excluded checklist items (an audit exclusion policy); cached per data generation."""
    return cached(benchmark.id, state_digest(state, excluded_items),
                  lambda: compute_tables(benchmark.id, state, excluded_items=excluded_items),
                  kind=LeaderboardTables, generation=generation)


def _store(key: str, value) -> None:
    try:
        cache.set(key, value, CACHE_SECONDS)
    except Exception:
        log.warning("leaderboard cache unavailable (write)", exc_info=True)


def compute_tables(benchmark_id: int, state: dict, *, excluded_items: Collection[int] | None = None) -> LeaderboardTables:
    """The tables computed from the rollups (or verdicts, when items are excluded), without the cache."""
    filters, by, ci = state["filters"], state["by"], state["ci"]
    overall = sort_rows(metrics.leaderboard_rows(benchmark_id, filters, bootstrap=ci, excluded_items=excluded_items), state["sort"])
    if by == "model":
        return LeaderboardTables(overall, overall, [], [], charts.leaderboard_figure(overall))
    cells = metrics.leaderboard_rows(benchmark_id, filters, by=by, bootstrap=ci, excluded_items=excluded_items)
    groups, matrix = matrix_layout(overall, cells, by)
    rows = [cell for line in matrix for cell in line["cells"] if cell is not None]
    figure = charts.matrix_figure(cells, group_label=GROUPINGS[by], groups=groups)
    return LeaderboardTables(overall, rows, groups, matrix, figure)
