"""What an exclusion policy does to a checklist leaderboard (METRICS.md section 6, effect on results).

Scores come from runs.selectors.checklist with and without the excluded items; ranks, Kendall's
tau and the swapped pairs from runs.metrics.rank_change (the leaderboard page uses the same);
each swapped pair of models lists the excluded items on which the two models' verdicts
differ most, which is what moved them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from runs.metrics.checklist import Filters
from runs.metrics.rank_change import EffectRow, RankSwap, compare, ranks  # noqa: F401  (ranks: part of this module's interface)
from runs.metrics.rank_change import items_behind as _items_behind
from runs.selectors.checklist import leaderboard_rows


@dataclass
class Effect:
    """Leaderboard before and after, Kendall's tau between the rankings, the swaps."""

    rows: list[EffectRow]
    tau: float | None
    swaps: list[RankSwap]
    n_excluded: int


def exclusion_effect(
    benchmark_id: int,
    excluded: Collection[int],
    verdicts_by_model: dict | None = None,
    *,
    filters: Filters | None = None,
    limit: int = 10,
) -> Effect:
    """The leaderboard with and without `excluded` items; `verdicts_by_model` (model -> item -> pass/fail counts) explains swaps."""
    filters = filters or Filters()
    before = leaderboard_rows(benchmark_id, filters)
    after = leaderboard_rows(benchmark_id, filters, excluded_items=set(excluded)) if excluded else before
    rows, tau, pairs = compare(before, after)
    swaps = [RankSwap(up, down, tuple(_items_behind(up, down, verdicts_by_model or {}, limit))) for up, down in pairs]
    return Effect(rows, tau, swaps, len(excluded))
