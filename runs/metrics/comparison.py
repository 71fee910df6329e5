"""The paired comparison of two sides of one benchmark, whatever its kind (docs/metrics.md, "Is the difference
real?"): the table of B - A per figure, pooled across judges, per judge and per category, and the instances whose
pass/fail outcome flipped. Pure functions of per-instance counts; the arithmetic is runs.metrics.paired's.

A kind's selector gives each side's per-instance counts as a `SideFigures` (figure -> (instance, judge) ->
[num, den], as runs.metrics.paired reads a Side: the figure is the mean over judges of 100 x sum num / sum den);
`aligned` puts both sides on one instance and judge axis, `paired_table` makes the table and `flipped_instances`
lists the flips.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runs.metrics.paired import RESAMPLED, PairedDifference, Side, paired_difference

#: a difference is significant below this p
REGRESSION_ALPHA = 0.05
#: the category of an instance its kind gives none
NO_CATEGORY = "(none)"


@dataclass(frozen=True)
class PairedFigure:
    """One row of the paired table: a figure under one judge (None: pooled across judges) on the shared instances
    of one category (None: every category)."""

    metric: str
    judge: str | None
    category: str | None
    difference: PairedDifference
    name: str = ""
    #: a figure where less is better ('followed neither'): B is worse when it rises
    lower_is_better: bool = False

    @property
    def metric_name(self) -> str:
        return self.name or self.metric

    @property
    def regression(self) -> bool:
        """B is significantly worse than A: p below REGRESSION_ALPHA and the whole interval on the worse side of 0
        (below it, or above it for a figure where lower is better)."""
        d = self.difference
        if d.p is None or d.low is None or d.high is None or d.p >= REGRESSION_ALPHA:
            return False
        return d.low > 0 if self.lower_is_better else d.high < 0


@dataclass(frozen=True)
class SidesComparison:
    """The paired table of `candidate` (B) against `baseline` (A): per metric, the pooled figure, then each judge's,
    then each category's (pooled across judges)."""

    benchmark: str
    baseline: str
    candidate: str
    metrics: list[str]
    judges: list[str]
    categories: list[str]
    figures: list[PairedFigure]
    excluded_items: int = 0

    def pooled(self, metric: str) -> PairedDifference:
        """The metric's figure pooled across judges on every shared instance."""
        return next(f.difference for f in self.figures if f.metric == metric and f.judge is None and f.category is None)

    def regressions(self) -> list[str]:
        """The metrics whose pooled figure is significantly worse in the candidate."""
        return [f.metric for f in self.figures if f.judge is None and f.category is None and f.regression]


@dataclass
class SideFigures:
    """One side's per-instance counts, summed over its attempts at each instance: figure -> (instance, judge) ->
    [num, den]; each instance's category, name (as pages show it) and the side's attempts at it."""

    counts: dict[str, dict[tuple[Hashable, str], list[float]]] = field(default_factory=dict)
    categories: dict[Hashable, str] = field(default_factory=dict)
    names: dict[Hashable, str] = field(default_factory=dict)
    attempts: dict[Hashable, list[int]] = field(default_factory=dict)

    def add(self, figure: str, instance: Hashable, judge: str, num: float, den: float) -> None:
        """Count one attempt's num and den of a figure at an instance under a judge (den 0 counts nothing)."""
        if den <= 0:
            return
        cell = self.counts.setdefault(figure, {}).setdefault((instance, judge), [0.0, 0.0])
        cell[0] += num
        cell[1] += den

    def attempt(self, instance: Hashable, attempt_id: int, *, name: str, category: str | None = None) -> None:
        """Record the side's attempt at an instance, with the instance's name and category."""
        found = self.attempts.setdefault(instance, [])
        if attempt_id not in found:
            found.append(attempt_id)
        self.names[instance] = name
        if category is not None:
            self.categories[instance] = category or NO_CATEGORY


@dataclass(frozen=True)
class CountedSides:
    """Both sides on one instance axis and one judge axis: per side (0: A, 1: B) and figure, its Side."""

    instances: list
    judges: list[str]
    categories: dict[Hashable, str]
    sides: tuple[dict[str, Side], dict[str, Side]]


def aligned(a: SideFigures, b: SideFigures, figures: Sequence[str], judges: Sequence[str]) -> CountedSides:
    """Both sides' counts on the instances either covers (sorted) and on `judges` (in that order)."""
    instances = sorted(
        {i for side in (a, b) for counts in side.counts.values() for i, _ in counts} | set(a.names) | set(b.names),
        key=lambda i: (str(type(i)), i),
    )
    rows = {pk: n for n, pk in enumerate(instances)}
    columns = {name: n for n, name in enumerate(judges)}
    shape = (len(instances), len(judges))
    sides = []
    for side in (a, b):
        arrays = {}
        for figure in figures:
            num, den = np.zeros(shape), np.zeros(shape)
            for (instance, judge), (n, d) in side.counts.get(figure, {}).items():
                if judge in columns:
                    num[rows[instance], columns[judge]] += n
                    den[rows[instance], columns[judge]] += d
            arrays[figure] = (num, den)
        sides.append(arrays)
    categories = {**a.categories, **b.categories}
    return CountedSides(instances, list(judges), categories, (sides[0], sides[1]))


def paired_table(
    benchmark: str,
    baseline: str,
    candidate: str,
    counted: CountedSides,
    *,
    metrics: Mapping[str, str],
    per_judge: bool = True,
    excluded_items: int = 0,
    category_key: Callable[[str], Any] | None = None,
    lower_is_better: Collection[str] = (),
) -> SidesComparison:
    """The paired table of the counted sides: per metric (key -> name, in that order) the pooled row, each judge's
    (when `per_judge`) and each category's pooled across judges (when the instances have categories), categories
    sorted (by `category_key` when given); a metric in `lower_is_better` regresses when it rises."""
    category_of = [counted.categories.get(pk, NO_CATEGORY) for pk in counted.instances]
    categories = sorted(set(category_of), key=category_key) if counted.categories else []
    in_category = {cat: np.array([c == cat for c in category_of], dtype=bool) for cat in categories}
    figures = []
    for metric, name in metrics.items():
        a, b = counted.sides[0][metric], counted.sides[1][metric]
        lower = metric in lower_is_better
        figures.append(PairedFigure(metric, None, None, paired_difference(a, b), name, lower))
        if per_judge:
            for k, judge in enumerate(counted.judges):
                column = [k]
                figures.append(
                    PairedFigure(
                        metric,
                        judge,
                        None,
                        paired_difference((a[0][:, column], a[1][:, column]), (b[0][:, column], b[1][:, column])),
                        name,
                        lower,
                    )
                )
        for cat, rows in in_category.items():
            figures.append(
                PairedFigure(
                    metric,
                    None,
                    cat,
                    paired_difference((a[0][rows], a[1][rows]), (b[0][rows], b[1][rows])),
                    name,
                    lower,
                )
            )
    return SidesComparison(
        benchmark,
        baseline,
        candidate,
        list(metrics),
        counted.judges if per_judge else [],
        categories,
        figures,
        excluded_items,
    )


@dataclass(frozen=True)
class FlippedInstance:
    """An instance whose outcome on a pass/fail figure flipped: passed on one side in every attempt and failed on
    the other in every attempt, under `judges`; `direction` "fixed" (failed in A, passed in B) or "broken"."""

    instance: Hashable
    direction: str
    judges: tuple[str, ...]


def flipped_instances(counted: CountedSides, metric: str) -> list[FlippedInstance]:
    """The instances that flipped on `metric` under some judge, in instance order, one entry per instance and
    direction with the judges under which it flipped ("" for a kind without judges)."""
    (a_num, a_den), (b_num, b_den) = counted.sides[0][metric], counted.sides[1][metric]
    both = (a_den > 0) & (b_den > 0)
    a_all, a_none = both & (a_num == a_den), both & (a_num == 0)
    b_all, b_none = both & (b_num == b_den), both & (b_num == 0)
    flips = []
    for direction, mask in (("fixed", a_none & b_all), ("broken", a_all & b_none)):
        for row in np.flatnonzero(mask.any(axis=1)):
            judges = tuple(counted.judges[k] for k in np.flatnonzero(mask[row]))
            flips.append(FlippedInstance(counted.instances[row], direction, judges))
    return flips


def paired_figure_dict(figure: PairedFigure) -> dict:
    """A paired row as plain JSON (the API's, the CLI's --json and the exports' row)."""
    d = figure.difference
    return {
        "metric": figure.metric,
        "judge": figure.judge,
        "category": figure.category,
        "a": d.a,
        "b": d.b,
        "diff": d.diff,
        "low": d.low,
        "high": d.high,
        "n_instances": d.n_instances,
        "test": d.test,
        "p": d.p,
        "b_count": d.b_count,
        "c_count": d.c_count,
        "regression": figure.regression,
    }


def table_document(table: SidesComparison) -> dict:
    """The table as plain JSON: the sides, figures, judges and categories, what is resampled, alpha, the rows and the
    regressions (the part of the compare documents every kind shares)."""
    return {
        "benchmark": table.benchmark,
        "baseline": table.baseline,
        "candidate": table.candidate,
        "metrics": table.metrics,
        "judges": table.judges,
        "categories": table.categories,
        "excluded_items": table.excluded_items,
        "resampled": RESAMPLED,
        "alpha": REGRESSION_ALPHA,
        "rows": [paired_figure_dict(f) for f in table.figures],
        "regressions": table.regressions(),
    }
