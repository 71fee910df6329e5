"""Checklist-benchmark metrics (METRICS.md section 1): ISR, CSR, macro CSR, per group, per judge, bootstrap, stability.

Pure functions of rows: they take `Cell`s (one attempt x judge, optionally x group value: how many items were
applicable and how many passed), a `ModelBase` (a benchmark's rollups summed per run x judge x facets) or the plain
rows runs.selectors.checklist reads, and return plain rows. The reads themselves (rollups, verdicts, judge reports)
are the selector's; this module imports no model and issues no query.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from statistics import median
from typing import NamedTuple

import numpy as np

from runs.categories import SOURCE_CATEGORIES
from runs.metrics.rank_change import ranks as ranks_by_score
from runs.metrics.stats import INSTANCE_INTERVAL_METHOD, bootstrap_interval, kendall_tau, mean_std

#: grouping dimensions of the leaderboard: URL value -> label
GROUPINGS = {
    "model": "model",
    "category": "source category",
    "scaffold": "scaffold",
    "check_type": "check type",
    "primary_category": "primary category",
    "judge": "judge",
    "tokens": "tokens per attempt",
}
#: assistant-turn buckets for ISR by interaction length (METRICS.md section 1)
TURN_BUCKETS = ((1, 5, "1-5"), (6, 10, "6-10"), (11, 20, "11-20"), (21, 40, "21-40"), (41, None, ">40"))
UNKNOWN_BUCKET = "unknown"
#: total-token buckets of the leaderboard grouped by tokens per attempt (docs/metrics.md, "Tokens, time and tool calls")
TOKEN_BUCKETS = (
    (0, 10_000, "under 10k"),
    (10_000, 100_000, "10k-100k"),
    (100_000, 1_000_000, "100k-1M"),
    (1_000_000, None, "1M or more"),
)
NOT_LOGGED = "not logged"
SMALL_CELL = 10


class Cell(NamedTuple):
    """Counts of one attempt under one judge (and one group value when grouped).

    A named tuple rather than a frozen dataclass: a leaderboard builds one per rollup
    (31,248 at a million verdicts) and a tuple is made three times faster."""

    attempt_id: int
    instance_id: int
    model: str
    run: str
    judge: str
    n_applicable: int
    n_passed: int
    group: str | None = None
    assistant_turns: int | None = None
    #: the judge's report status when it could not score the attempt (its checks count as failed), else ""
    unscored: str = ""
    #: verdicts whose result string the reference scorer does not recognise (counted as failed, as it does)
    n_unrecognised: int = 0

    @property
    def success(self) -> bool:
        return self.n_applicable > 0 and self.n_passed == self.n_applicable


@dataclass
class JudgeScore:
    """ISR and CSR (in percent) under one judge, pooled over the cells' attempts and repetitions.

    `macro_csr` is the mean over counted attempts of each one's pass rate (passed / applicable):
    OctoBench's evaluate.py `avg_reward`, in percent. `unscored` counts attempts by the reason
    the judge could not score them (runs.models.ReportStatus); they are counted attempts whose
    checks all failed (reward 0, as evaluate.py counts them)."""

    isr: float | None
    csr: float | None
    n_instances: int
    n_attempts: int
    n_empty: int
    n_success: int
    n_applicable: int
    n_passed: int
    macro_csr: float | None = None
    unscored: dict[str, int] = field(default_factory=dict)
    n_unrecognised: int = 0

    @property
    def n_unscored(self) -> int:
        return sum(self.unscored.values())


@dataclass
class ScoreRow:
    """One leaderboard row or matrix cell: mean and population std across judges, with n."""

    model: str
    group: str | None
    isr: float | None
    isr_std: float | None
    csr: float | None
    csr_std: float | None
    n_instances: int
    n_attempts: int
    n_empty: int
    per_judge: dict[str, JudgeScore] = field(default_factory=dict)
    isr_ci: tuple[float, float] | None = None
    csr_ci: tuple[float, float] | None = None
    macro_csr: float | None = None
    macro_csr_std: float | None = None
    #: where the tokens and the time went, per attempt of the row (by model only; None in matrix cells)
    usage: UsageSummary | None = None
    #: the labels of the runs the row pools (the leaderboard's by-model rows: runs_by_model; empty elsewhere)
    runs: tuple[str, ...] = ()
    #: the 95% interval of the row's rank on the leaderboard's ranking figure, and its tie group (by-model rows with
    #: data: runs.metrics.paired.rank_intervals and tie_groups over the table's models; None elsewhere)
    rank_interval: tuple[int, int] | None = None
    tie_group: int | None = None

    @property
    def tokens(self) -> float | None:
        """Mean total tokens per attempt (None: not logged); a sort key of the leaderboard."""
        return self.usage.mean("total_tokens") if self.usage else None

    @property
    def model_time(self) -> float | None:
        return self.usage.mean("model_seconds") if self.usage else None

    @property
    def wall_time(self) -> float | None:
        return self.usage.mean("wall_seconds") if self.usage else None

    @property
    def tool_calls(self) -> float | None:
        return self.usage.mean("tool_calls") if self.usage else None

    @property
    def n_unscored(self) -> int:
        """Results the judges could not score, summed over judges (each judge's result is one)."""
        return sum(s.n_unscored for s in self.per_judge.values())

    @property
    def n_unrecognised(self) -> int:
        """Verdicts whose result string the reference scorer does not recognise, summed over judges."""
        return sum(s.n_unrecognised for s in self.per_judge.values())

    @property
    def small(self) -> bool:
        return self.n_instances < SMALL_CELL


# where the tokens and the time went (docs/metrics.md, "Tokens, time and tool calls") ----------------
#: the per-attempt figures an import stores (runs.models.Attempt), in display order, with their labels
USAGE_FIGURES = {
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "total_tokens": "total tokens",
    "model_seconds": "model time (s)",
    "wall_seconds": "wall time (s)",
    "model_calls": "model calls",
    "tool_calls": "tool calls",
}


@dataclass
class Spread:
    """One figure over a model's attempts: mean and median per attempt, over the `n` attempts that logged it
    (None when none did: not logged, never 0)."""

    n: int
    mean: float | None
    median: float | None


@dataclass
class UsageSummary:
    """Per figure of USAGE_FIGURES, its spread over the `n_attempts` attempts of a leaderboard row."""

    n_attempts: int
    figures: dict[str, Spread]

    def mean(self, figure: str) -> float | None:
        return self.figures[figure].mean

    @property
    def logged(self) -> bool:
        """Whether any attempt logged any figure."""
        return any(s.n for s in self.figures.values())


def spread(values: Sequence[float | int | None]) -> Spread:
    """Mean and median of the values that were logged (None left out)."""
    logged = [v for v in values if v is not None]
    if not logged:
        return Spread(0, None, None)
    return Spread(len(logged), sum(logged) / len(logged), float(median(logged)))


def usage_summary(attempts: Sequence[Sequence[float | int | None]]) -> UsageSummary:
    """The usage of a row's attempts, each given as its USAGE_FIGURES values in order."""
    columns = list(zip(*attempts)) if attempts else [() for _ in USAGE_FIGURES]
    return UsageSummary(len(attempts), {name: spread(column) for name, column in zip(USAGE_FIGURES, columns)})


def usage_dict(usage: UsageSummary | None) -> dict | None:
    """A row's usage as plain JSON (API, exports, snapshots): {"n_attempts", <figure>: {"n", "mean", "median"}}."""
    if usage is None:
        return None
    return {
        "n_attempts": usage.n_attempts,
        **{name: {"n": s.n, "mean": s.mean, "median": s.median} for name, s in usage.figures.items()},
    }


#: the CSV export's usage columns: per figure its mean, median and how many attempts logged it
USAGE_CSV_HEADER = [f"{name}_{part}" for name in USAGE_FIGURES for part in ("mean", "median", "n")]


def usage_csv_cells(usage: dict | None) -> list:
    """A row's usage_dict as the CSV's USAGE_CSV_HEADER cells (empty when not logged)."""
    return [((usage or {}).get(name) or {}).get(part) for name in USAGE_FIGURES for part in ("mean", "median", "n")]


def with_usage(rows: list[ScoreRow], usage: Mapping[str, UsageSummary]) -> list[ScoreRow]:
    """The rows (by model) with their attempts' usage, per model as runs.selectors.checklist.usage_by_model reads it
    (a model it has none for: not logged)."""
    for row in rows:
        row.usage = usage.get(row.model) or usage_summary([])
    return rows


def judge_score(cells: Iterable[Cell]) -> JudgeScore:
    """ISR and CSR of cells from ONE judge: attempts with no applicable item are left out and counted."""
    instances, empty = set(), set()
    n_attempts = n_success = n_applicable = n_passed = n_unrecognised = 0
    rate_sum = 0.0
    unscored: dict[str, int] = defaultdict(int)
    for c in cells:
        n_unrecognised += c.n_unrecognised
        if c.unscored:
            unscored[c.unscored] += 1
        if c.n_applicable == 0:
            empty.add(c.attempt_id)
            continue
        instances.add(c.instance_id)
        n_attempts += 1
        n_success += c.success
        n_applicable += c.n_applicable
        n_passed += c.n_passed
        rate_sum += c.n_passed / c.n_applicable
    return judge_score_of(
        n_attempts,
        n_success,
        n_applicable,
        n_passed,
        len(instances),
        len(empty),
        rate_sum=rate_sum,
        unscored=dict(unscored),
        n_unrecognised=n_unrecognised,
    )


def judge_score_of(
    n_attempts: int,
    n_success: int,
    n_applicable: int,
    n_passed: int,
    n_instances: int,
    n_empty: int,
    *,
    rate_sum: float = 0.0,
    unscored: dict[str, int] | None = None,
    n_unrecognised: int = 0,
) -> JudgeScore:
    """A judge's ISR, CSR and macro CSR from its counts (counted attempts only; see judge_score);
    `rate_sum` is the sum of the counted attempts' pass rates."""
    return JudgeScore(
        isr=100.0 * n_success / n_attempts if n_attempts else None,
        csr=100.0 * n_passed / n_applicable if n_applicable else None,
        n_instances=n_instances,
        n_attempts=n_attempts,
        n_empty=n_empty,
        n_success=n_success,
        n_applicable=n_applicable,
        n_passed=n_passed,
        macro_csr=macro_csr(rate_sum, n_attempts),
        unscored={k: v for k, v in (unscored or {}).items() if v},
        n_unrecognised=n_unrecognised,
    )


def macro_csr(rate_sum: float, n_attempts: int) -> float | None:
    """Macro CSR in percent: the mean over counted attempts of passed / applicable. On OctoBench this is
    mini-vela evaluate.py's `avg_reward` x 100 (the mean of its per-instance `reward`; it rounds each
    reward to 3 decimals before averaging, so its printout can differ in the third decimal)."""
    return 100.0 * rate_sum / n_attempts if n_attempts else None


def score_row(model: str, group: str | None, cells: Sequence[Cell]) -> ScoreRow:
    """Per-judge scores of the cells, then their mean and population std (ddof = 0) across judges."""
    by_judge: dict[str, list[Cell]] = defaultdict(list)
    for c in cells:
        by_judge[c.judge].append(c)
    per_judge = {judge: judge_score(cs) for judge, cs in sorted(by_judge.items())}
    counted = [c for c in cells if c.n_applicable > 0]
    counted_attempts = {c.attempt_id for c in counted}
    return score_row_of(
        model,
        group,
        per_judge,
        n_instances=len({c.instance_id for c in counted}),
        n_attempts=len(counted_attempts),
        n_empty=len({c.attempt_id for c in cells if c.n_applicable == 0} - counted_attempts),
    )


def score_row_of(
    model: str, group: str | None, per_judge: dict[str, JudgeScore], *, n_instances: int, n_attempts: int, n_empty: int
) -> ScoreRow:
    """A row from its judges' scores (in judge-name order) and its distinct counts across judges."""
    isr, isr_std = mean_std([s.isr for s in per_judge.values()])
    csr, csr_std = mean_std([s.csr for s in per_judge.values()])
    macro, macro_std = mean_std([s.macro_csr for s in per_judge.values()])
    return ScoreRow(
        model=model,
        group=group,
        isr=isr,
        isr_std=isr_std,
        csr=csr,
        csr_std=csr_std,
        n_instances=n_instances,
        n_attempts=n_attempts,
        n_empty=n_empty,
        per_judge=per_judge,
        macro_csr=macro,
        macro_csr_std=macro_std,
    )


def score_rows(cells: Iterable[Cell], *, group_order: Sequence[str] = ()) -> list[ScoreRow]:
    """One ScoreRow per (model, group) present in the cells, models by name, groups in `group_order` then by name."""
    buckets: dict[tuple[str, str | None], list[Cell]] = defaultdict(list)
    for c in cells:
        buckets[(c.model, c.group)].append(c)
    order = {g: i for i, g in enumerate(group_order)}

    def key(k):
        model, group = k
        return (model, order.get(group, len(order)), group or "")

    return [score_row(model, group, buckets[(model, group)]) for model, group in sorted(buckets, key=key)]


@dataclass
class ReferenceNotes:
    """What the leaderboard says about judge results the reference scorer counts in its own way, over its rows."""

    unscored: dict[str, int]  # report status -> judge results (runs.models.ReportStatus)
    n_unrecognised: int

    @property
    def n_unscored(self) -> int:
        return sum(self.unscored.values())


def reference_notes(rows: Iterable[ScoreRow]) -> ReferenceNotes:
    """Unscored judge results by reason and verdicts with a result string the reference does not
    recognise, summed over rows (each row's judges) for the page's note."""
    unscored: dict[str, int] = defaultdict(int)
    n_unrecognised = 0
    for row in rows:
        for s in row.per_judge.values():
            n_unrecognised += s.n_unrecognised
            for status, n in s.unscored.items():
                unscored[status] += n
    return ReferenceNotes(dict(unscored), n_unrecognised)


def with_bootstrap(row: ScoreRow, cells: Sequence[Cell], **kwargs) -> ScoreRow:
    """The row with 95% bootstrap intervals over instances (judge mean recomputed per resample), read from the
    resamples by runs.metrics.stats.INSTANCE_INTERVAL_METHOD: paired.figure_interval's for the same counts."""
    instances = sorted({c.instance_id for c in cells})
    judges = sorted({c.judge for c in cells})
    i_index = {v: n for n, v in enumerate(instances)}
    j_index = {v: n for n, v in enumerate(judges)}
    shape = (len(instances), len(judges))
    attempts, successes, applicable, passed = (np.zeros(shape) for _ in range(4))
    for c in cells:
        if c.n_applicable == 0:
            continue
        at = (i_index[c.instance_id], j_index[c.judge])
        attempts[at] += 1
        successes[at] += c.success
        applicable[at] += c.n_applicable
        passed[at] += c.n_passed

    def ratio(num: np.ndarray, den: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        def statistic(weights: np.ndarray) -> np.ndarray:
            n, d = weights @ num, weights @ den
            with np.errstate(invalid="ignore", divide="ignore"):
                per_judge = np.where(d > 0, n / np.where(d > 0, d, 1), np.nan)
            counted = (~np.isnan(per_judge)).sum(axis=1)
            total = np.nansum(per_judge, axis=1)
            return np.where(counted > 0, 100.0 * total / np.maximum(counted, 1), np.nan)

        return statistic

    kwargs.setdefault("method", INSTANCE_INTERVAL_METHOD)
    row.isr_ci = bootstrap_interval(len(instances), ratio(successes, attempts), **kwargs)
    row.csr_ci = bootstrap_interval(len(instances), ratio(passed, applicable), **kwargs)
    return row


#: the figures whose per-instance counts cell_counts gives (a Side each), with the name pages show
COUNTED_FIGURES = {"isr": "ISR", "csr": "CSR", "macro_csr": "macro CSR"}


def cell_counts(
    cells: Iterable[Cell],
    instances: Mapping[int, int],
    judges: Mapping[str, int],
    figures: Iterable[str] = COUNTED_FIGURES,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per figure, the cells' (num, den) on the given instance and judge axes, summed over each instance's attempts
    under each judge: ISR successes and counted attempts, CSR passed and applicable items, macro CSR the sum of the
    counted attempts' pass rates and their number. Attempts with no applicable item count nowhere, as on the
    leaderboard."""
    shape = (len(instances), len(judges))
    table = np.array(
        [
            (instances[c.instance_id], judges[c.judge], c.success, c.n_passed, c.n_applicable)
            for c in cells
            if c.n_applicable
        ],
        dtype=float,
    ).reshape(-1, 5)
    at = (table[:, 0].astype(np.int64), table[:, 1].astype(np.int64))
    success, passed, applicable, ones = table[:, 2], table[:, 3], table[:, 4], np.ones(len(table))
    terms = {"isr": (success, ones), "csr": (passed, applicable), "macro_csr": (passed / applicable, ones)}
    counts = {}
    for figure in figures:
        num, den = np.zeros(shape), np.zeros(shape)
        np.add.at(num, at, terms[figure][0])
        np.add.at(den, at, terms[figure][1])
        counts[figure] = (num, den)
    return counts


def model_sides(cells: Iterable[Cell], *, figure: str = "isr") -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per model (by name), its runs.metrics.paired Side on `figure` ("isr" or "csr", as cell_counts counts it)
    from the cells of a by-model leaderboard, on instance and judge axes shared by every model (instances and
    judges in id and name order; den 0 where a model has no data)."""
    counted = [c for c in cells if c.n_applicable > 0]
    instances = {v: n for n, v in enumerate(sorted({c.instance_id for c in counted}))}
    judges = {v: n for n, v in enumerate(sorted({c.judge for c in counted}))}
    by_model: dict[str, list[Cell]] = defaultdict(list)
    for c in counted:
        by_model[c.model].append(c)
    return {
        model: cell_counts(model_cells, instances, judges, (figure,))[figure]
        for model, model_cells in sorted(by_model.items())
    }


@dataclass
class InstanceCounts:
    """A benchmark's rollups summed per (run id, judge id) and instance: row k of `counts` holds, for `keys[k]`,
    the counted attempts, successes, applicable items and passed items on each instance (instances in id order), an
    array (len(keys), 4, n_instances) of the narrowest unsigned type that holds them (one buffer: a 100-model study's
    is 1.3 MB in the cache, not 10 MB of 1,500 arrays), with the instances' scaffolds and primary categories. What
    model_sides counts from cells, for any filters, without reading the rollups again."""

    scaffolds: list[str]
    primary_categories: list[str]
    keys: list[tuple[int, int]]
    counts: np.ndarray


def instance_counts(instances: Iterable[tuple[int, str, str]], rollups: Iterable[tuple]) -> InstanceCounts:
    """InstanceCounts from the benchmark's (id, scaffold, primary category) in id order and its rollups as (run id,
    judge id, instance id, n_applicable, n_passed); a rollup with no applicable item counts for nothing."""
    index: dict[int, int] = {}
    scaffolds, primaries = [], []
    for n, (pk, scaffold, primary) in enumerate(instances):
        index[pk] = n
        scaffolds.append(scaffold)
        primaries.append(primary)
    rows: dict[tuple[int, int], np.ndarray] = {}
    for run_id, judge_id, instance_id, n_applicable, n_passed in rollups:
        if n_applicable == 0:
            continue
        a = rows.get((run_id, judge_id))
        if a is None:
            a = rows[(run_id, judge_id)] = np.zeros((4, len(index)), dtype=np.int64)
        at = index[instance_id]
        a[0, at] += 1
        a[1, at] += n_passed == n_applicable
        a[2, at] += n_applicable
        a[3, at] += n_passed
    counts = np.stack(list(rows.values())) if rows else np.zeros((0, 4, len(index)), dtype=np.int64)
    return InstanceCounts(scaffolds, primaries, list(rows), counts.astype(np.min_scalar_type(counts.max(initial=0))))


def base_sides(
    base: ModelBase, counts: InstanceCounts, filters: Filters, *, figure: str = "isr"
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """model_sides of the cells the filters keep, from the base's names and the generation's InstanceCounts: the
    same arrays (instances with data in id order, judges with data by name, models by name)."""
    runs, judges, scaffolds, primaries, models = (
        set(v) for v in (filters.runs, filters.judges, filters.scaffolds, filters.primary_categories, filters.models)
    )
    kept = np.array(
        [
            (not scaffolds or s in scaffolds) and (not primaries or p in primaries)
            for s, p in zip(counts.scaffolds, counts.primary_categories)
        ],
        dtype=bool,
    )
    # the rows the filters keep, each with the number of its (model, judge) in the order met (sorted by name below)
    group_of: dict[tuple[str, str], int] = {}
    picked, group = [], []
    for k, (run_id, judge_id) in enumerate(counts.keys):
        label, model_id = base.runs[run_id]
        model, judge = base.models[model_id], base.judges[judge_id]
        if (runs and label not in runs) or (judges and judge not in judges) or (models and model not in models):
            continue
        picked.append(k)
        group.append(group_of.setdefault((model, judge), len(group_of)))
    if not picked:
        return {}
    rows = [1, 0] if figure == "isr" else [3, 2]
    summed = np.zeros((len(group_of), 2, len(kept)), dtype=np.int64)
    np.add.at(summed, np.array(group), counts.counts[np.array(picked)][:, rows] * kept)
    with_data = summed[:, 1].any(axis=1)
    keys = sorted(key for key, g in group_of.items() if with_data[g])
    if not keys:
        return {}
    instances = np.flatnonzero(summed[with_data, 1].any(axis=0))
    judge_axis = {j: n for n, j in enumerate(sorted({j for _, j in keys}))}
    sides: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for model, judge in keys:
        if model not in sides:
            sides[model] = (np.zeros((len(instances), len(judge_axis))), np.zeros((len(instances), len(judge_axis))))
        a = summed[group_of[(model, judge)]]
        sides[model][0][:, judge_axis[judge]] = a[0, instances]
        sides[model][1][:, judge_axis[judge]] = a[1, instances]
    return sides


def turn_bucket(turns: int | None) -> str:
    """The interaction-length bucket of an attempt's assistant-turn count."""
    if turns is None or turns < 1:
        return UNKNOWN_BUCKET
    for low, high, label in TURN_BUCKETS:
        if turns >= low and (high is None or turns <= high):
            return label
    return UNKNOWN_BUCKET


def token_bucket(tokens: int | None) -> str:
    """The bucket of an attempt's total tokens (NOT_LOGGED when its source logged none)."""
    if tokens is None:
        return NOT_LOGGED
    return next(label for low, high, label in TOKEN_BUCKETS if tokens >= low and (high is None or tokens < high))


def bucket_order() -> list[str]:
    return [label for _, _, label in TURN_BUCKETS] + [UNKNOWN_BUCKET]


def isr_by_length(cells: Iterable[Cell]) -> list[ScoreRow]:
    """ISR and CSR per model and assistant-turn bucket (METRICS.md section 1, interaction length)."""
    regrouped = [_regroup(c, turn_bucket(c.assistant_turns)) for c in cells]
    return score_rows(regrouped, group_order=bucket_order())


def _regroup(cell: Cell, group: str | None) -> Cell:
    return cell._replace(group=group)


# ranking stability across judges ------------------------------------------------------
@dataclass
class RankStability:
    """Per-judge ranks of models, the largest rank shift, Kendall's tau per pair of judges."""

    judges: list[str]
    ranks: dict[str, dict[str, float]]  # model -> judge -> rank (1 = best; ties share the mean rank)
    shifts: dict[str, float]  # model -> max rank - min rank across judges
    largest_shift: tuple[list[str], float] | None  # every model that moves the most (ties all named), the shift
    taus: list[tuple[str, str, float | None, int]]  # judge a, judge b, tau, models both rank


def rank_stability(rows: Sequence[ScoreRow], *, metric: str = "isr") -> RankStability:
    """Ranks of models under each judge by ISR (or CSR), their largest shift and pairwise Kendall's tau."""
    judges = sorted({j for r in rows for j in r.per_judge})
    ranks: dict[str, dict[str, float]] = defaultdict(dict)
    values: dict[str, dict[str, float]] = defaultdict(dict)
    for judge in judges:
        scored = [
            (r.model, getattr(r.per_judge[judge], metric))
            for r in rows
            if judge in r.per_judge and getattr(r.per_judge[judge], metric) is not None
        ]
        for model, rank in ranks_by_score(dict(scored)).items():
            ranks[model][judge] = rank
        for model, value in scored:
            values[judge][model] = value
    shifts = {m: max(rs.values()) - min(rs.values()) for m, rs in ranks.items() if len(rs) > 1}
    largest = None
    if shifts:
        top = max(shifts.values())
        largest = (sorted(m for m, shift in shifts.items() if shift == top), top)
    taus = []
    for a, b in combinations(judges, 2):
        common = sorted(set(values[a]) & set(values[b]))
        tau = kendall_tau([values[a][m] for m in common], [values[b][m] for m in common])
        taus.append((a, b, tau, len(common)))
    return RankStability(judges, dict(ranks), shifts, largest, taus)


# paired comparison ---------------------------------------------------------------------
@dataclass
class PairedComparison:
    """Two sides (runs or models) on the instances both cover, under the judges both have."""

    label_a: str
    label_b: str
    a: ScoreRow
    b: ScoreRow
    isr_gain: float | None
    csr_gain: float | None
    n_common: int
    only_a: int
    only_b: int
    judges: list[str]


def paired_comparison(
    cells_a: Sequence[Cell], cells_b: Sequence[Cell], *, label_a: str, label_b: str
) -> PairedComparison:
    """ISR and CSR of each side on the common instances and judges, and the gain B - A (METRICS.md section 1)."""
    inst_a, inst_b = {c.instance_id for c in cells_a}, {c.instance_id for c in cells_b}
    common = inst_a & inst_b
    judges = sorted({c.judge for c in cells_a} & {c.judge for c in cells_b})
    keep_a = [c for c in cells_a if c.instance_id in common and c.judge in judges]
    keep_b = [c for c in cells_b if c.instance_id in common and c.judge in judges]
    a, b = score_row(label_a, None, keep_a), score_row(label_b, None, keep_b)
    return PairedComparison(
        label_a=label_a,
        label_b=label_b,
        a=a,
        b=b,
        isr_gain=_diff(b.isr, a.isr),
        csr_gain=_diff(b.csr, a.csr),
        n_common=len(common),
        only_a=len(inst_a - common),
        only_b=len(inst_b - common),
        judges=judges,
    )


def _diff(b: float | None, a: float | None) -> float | None:
    return None if a is None or b is None else b - a


@dataclass
class FlippedItem:
    """A checklist item whose outcome differs between the two sides under one judge."""

    instance_id: int
    item_id: int
    judge: str
    direction: str  # "fixed" (fail in A, pass in B) or "broken"


@dataclass
class Flips:
    """The items that flipped between two sides, per direction ("fixed", "broken"): how many (instance, item) pairs,
    and the first of them in (instance, item) order with the judges under which each flipped, in name order."""

    counts: dict[str, int]
    listed: dict[str, dict[tuple[int, int], list[str]]]


def flipped_items_of_rollups(
    rollups_a: Sequence[tuple[int, str, str, str]],
    rollups_b: Sequence[tuple[int, str, str, str]],
    *,
    limit: int | None = None,
) -> Flips:
    """The items whose outcome (flipped_items' definition) differs between two sides, from their attempt rollups: rows
    (instance, judge, passed items, failed items), the items as AttemptRollup keeps them (comma-separated ids). Per
    side an item fails under a judge when some attempt's verdict failed it, passes when every one passed it; an item
    A failed and B passed is "fixed", one A passed and B failed "broken". Counted over arrays indexed by (item, judge),
    not per verdict; only the first `limit` of each direction (default all) listed."""
    judges = sorted({row[1] for row in rollups_a} | {row[1] for row in rollups_b})
    if not judges:
        return Flips({"fixed": 0, "broken": 0}, {"fixed": {}, "broken": {}})
    judge_index = {judge: n for n, judge in enumerate(judges)}
    listed = [_listed_items(rows, column, judge_index) for rows in (rollups_a, rollups_b) for column in (2, 3)]
    items, where = np.unique(np.concatenate([ids for ids, _, _ in listed]), return_inverse=True)
    instance_of = np.zeros(len(items), dtype=np.int64)
    instance_of[where] = np.concatenate([instances for _, instances, _ in listed])
    cells, bounds = len(items) * len(judges), np.cumsum([0] + [len(ids) for ids, _, _ in listed])
    outcome = []
    for n, (_, _, judge) in enumerate(listed):
        found = np.zeros(cells, dtype=bool)
        found[where[bounds[n] : bounds[n + 1]] * len(judges) + judge] = True
        outcome.append(found)
    passed_a, failed_a, passed_b, failed_b = outcome
    passed_a &= ~failed_a
    passed_b &= ~failed_b
    flips = Flips({}, {})
    for direction, flipped in (("fixed", failed_a & passed_b), ("broken", passed_a & failed_b)):
        cell = np.flatnonzero(flipped)
        item, judge = cell // len(judges), cell % len(judges)
        order = np.lexsort((judge, items[item], instance_of[item]))
        instance, item, judge = instance_of[item][order], items[item][order], judge[order]
        starts = np.flatnonzero(np.r_[True, (instance[1:] != instance[:-1]) | (item[1:] != item[:-1])][: len(item)])
        shown = len(instance) if limit is None or limit >= len(starts) else starts[limit]
        found: dict[tuple[int, int], list[str]] = {}
        for key in zip(instance[:shown].tolist(), item[:shown].tolist(), judge[:shown].tolist()):
            found.setdefault(key[:2], []).append(judges[key[2]])
        flips.counts[direction], flips.listed[direction] = len(starts), found
    return flips


def _listed_items(
    rows: Sequence[tuple[int, str, str, str]], column: int, judge_index: Mapping[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The item ids one column of rollup rows lists, with the instance and the judge's index of each."""
    texts = [row[column] for row in rows]
    counts = np.array([text.count(",") + 1 if text else 0 for text in texts], dtype=np.int64)
    joined = ",".join(text for text in texts if text)
    ids = np.fromstring(joined, dtype=np.int64, sep=",") if joined else np.zeros(0, dtype=np.int64)
    instances = np.repeat(np.array([row[0] for row in rows], dtype=np.int64), counts)
    judges = np.repeat(np.array([judge_index[row[1]] for row in rows], dtype=np.int64), counts)
    return ids, instances, judges


def flipped_items(
    verdicts_a: Iterable[tuple[int, int, str, str]], verdicts_b: Iterable[tuple[int, int, str, str]]
) -> list[FlippedItem]:
    """Items whose outcome differs between sides, from verdict rows (instance, item, judge, result): per side an item
    passes under a judge when all its applicable verdicts (over repetitions) pass; not-applicable verdicts are
    ignored. The definition flipped_items_of_rollups computes from the rollups."""

    def outcomes(rows) -> dict[tuple[int, int, str], bool]:
        out: dict[tuple[int, int, str], bool] = {}
        for instance, item, judge, result in rows:
            if result != "na":
                out[(instance, item, judge)] = out.get((instance, item, judge), True) and result == "pass"
        return out

    a, b = outcomes(verdicts_a), outcomes(verdicts_b)
    return [
        FlippedItem(*key, "fixed" if b[key] else "broken") for key in sorted(a.keys() & b.keys()) if a[key] != b[key]
    ]


# which cells a leaderboard reads and how they are grouped ----------------------------------
@dataclass
class Filters:
    """Which rollups a leaderboard reads: empty lists mean everything."""

    runs: Collection[str] = ()
    judges: Collection[str] = ()
    scaffolds: Collection[str] = ()
    primary_categories: Collection[str] = ()
    models: Collection[str] = ()


def group_value(by: str, value) -> str:
    """A verdict row's group value as the rollup path names it (token buckets; "(none)" for an empty facet)."""
    return token_bucket(value) if by == "tokens" else (value or "(none)")


def group_order(by: str) -> Sequence[str]:
    """The display order of known group values (source categories in METRICS.md order, token buckets by size)."""
    if by == "tokens":
        return [label for _, _, label in TOKEN_BUCKETS] + [NOT_LOGGED]
    return SOURCE_CATEGORIES if by == "category" else ()


# the by-model leaderboard from a summary precomputed per data generation ---------------------
#: groupings a ModelBase answers (the facets of an attempt and the judge; item facets need GroupRollup)
BASE_GROUPINGS = ("model", "scaffold", "primary_category", "judge")


class BaseCell(NamedTuple):
    """The rollups of one run under one judge on the instances of one (scaffold, primary category):
    the sums model_rows_counted takes over rollups, and which instances were counted or empty as bit
    sets over the benchmark's instances (an attempt is one run x instance, so a bit is one attempt).
    A ModelBase stores them as plain tuples in this field order (a cached base unpickles ten times faster)."""

    run_id: int
    judge_id: int
    scaffold: str
    primary_category: str
    attempts: int
    success: int
    applicable: int
    passed: int
    rate_sum: float
    unrecognised: int
    unscored: tuple[tuple[str, int], ...]
    counted: int  # bit i: the attempt on instance i had an applicable item under this judge
    empty: int  # bit i: it had a rollup with no applicable item


@dataclass
class ModelBase:
    """What every by-model leaderboard of one benchmark's data generation needs, whatever its filters
    (runs, judges, scaffolds, primary categories) and grouping among BASE_GROUPINGS: one BaseCell per
    (run, judge, scaffold, primary category) present, with the names. Its size grows with runs x judges,
    not with attempts: 325,500 rollups at 10.7M verdicts are 18,000 cells."""

    runs: dict[int, tuple[str, int]]  # run id -> (label, model id)
    models: dict[int, str]
    judges: dict[int, str]
    #: BaseCell fields; None in a base without them (`without_facets`), which answers no facet filter or grouping
    cells: list[tuple] | None
    #: the cells of each (run, judge) summed over scaffolds and primary categories (both ""): what a state
    #: without a facet filter or grouping reads, runs x judges cells
    merged: list[tuple] = field(default_factory=list)
    #: the benchmark's instances and runs, those with rollups or not (`judges_score_every_attempt`)
    n_instances: int = 0
    n_runs: int = 0


def judges_score_every_attempt(base: ModelBase, judges: Collection[str]) -> bool:
    """Whether these judges scored every instance of every run of the base's generation: a judges filter
    then keeps every attempt, as no judges filter does (so usage figures are the same). An instance a run has
    no attempt at, or a run no judge scored, answers False."""
    wanted = set(judges)
    if not wanted or not base.n_instances or len(base.runs) != base.n_runs:
        return False
    everything = (1 << base.n_instances) - 1
    scored: dict[int, int] = dict.fromkeys(base.runs, 0)
    for run_id, judge_id, *_, counted, empty in base.merged:
        if base.judges[judge_id] in wanted:
            scored[run_id] |= counted | empty
    return all(bits == everything for bits in scored.values())


class BaseSums(NamedTuple):
    """A benchmark's rollups summed as a ModelBase keeps them: its number of instances, each run's model, and the
    BaseCell tuples per (run, judge, scaffold, primary category) and per (run, judge) (`merged`), in key order."""

    n_instances: int
    model_of: dict[int, int]  # run id -> model id
    cells: list[tuple]
    merged: list[tuple]


def base_sums(instances: Iterable[tuple[int, str, str]], rollups: Iterable[tuple]) -> BaseSums:
    """The sums of a ModelBase in one pass over the rollups. `instances` are the benchmark's (id, scaffold, primary
    category) in id order (the nth is bit n); `rollups` are (run id, model id, judge id, instance id, n_applicable,
    n_passed, unscored, n_unrecognised), one per attempt x judge."""
    bits: dict[int, int] = {}  # instance id -> its bit
    facets: dict[int, tuple[str, str]] = {}
    for n, (pk, scaffold, primary) in enumerate(instances):
        bits[pk], facets[pk] = n, (scaffold, primary)
    acc: dict[tuple, list] = {}
    model_of: dict[int, int] = {}  # run id -> model id
    for run_id, model_id, judge_id, instance_id, n_applicable, n_passed, unscored, n_unrecognised in rollups:
        model_of[run_id] = model_id
        scaffold, primary = facets[instance_id]
        key = (run_id, judge_id, scaffold, primary)
        a = acc.get(key)
        if a is None:
            a = acc[key] = [0, 0, 0, 0, 0.0, 0, {}, 0, 0]
        bit = 1 << bits[instance_id]
        a[5] += n_unrecognised
        if unscored:
            a[6][unscored] = a[6].get(unscored, 0) + 1
        if n_applicable == 0:
            a[8] |= bit
            continue
        a[0] += 1
        a[1] += n_passed == n_applicable
        a[2] += n_applicable
        a[3] += n_passed
        a[4] += n_passed / n_applicable
        a[7] |= bit
    merged: dict[tuple, list] = {}
    for (run_id, judge_id, _, _), a in acc.items():
        m = merged.get((run_id, judge_id, "", ""))
        if m is None:
            m = merged[(run_id, judge_id, "", "")] = [0, 0, 0, 0, 0.0, 0, {}, 0, 0]
        for n in (0, 1, 2, 3, 4, 5):
            m[n] += a[n]
        for status, k in a[6].items():
            m[6][status] = m[6].get(status, 0) + k
        m[7] |= a[7]
        m[8] |= a[8]

    def cells_of(sums: dict[tuple, list]) -> list[tuple]:
        return sorted(
            (*key, a[0], a[1], a[2], a[3], a[4], a[5], tuple(sorted(a[6].items())), a[7], a[8])
            for key, a in sums.items()
        )

    return BaseSums(len(bits), model_of, cells_of(acc), cells_of(merged))


def base_rows(base: ModelBase, filters: Filters, *, by: str = "model") -> list[ScoreRow]:
    """`score_rows(attempt_cells(benchmark, filters, by=by))` from the precomputed base, for `by` in
    BASE_GROUPINGS: the same counts, so the same rows (ISR, CSR, means and stds by the same functions;
    macro CSR's sum of rates is added in another order, so it may differ in the last bits)."""
    if by not in BASE_GROUPINGS:
        raise ValueError(f"the base does not answer grouping {by!r}")
    statuses: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    per_judge: dict[tuple, list] = {}  # (model, group, judge) -> sums, counted bits, empty count
    per_run: dict[tuple, list] = {}  # (model, group, run) -> counted bits, empty bits (across judges)
    for model, judge, (
        run_id,
        _,
        scaffold,
        primary,
        n_attempts,
        success,
        applicable,
        passed,
        rate_sum,
        unrecognised,
        unscored,
        counted,
        none,
    ) in _base_cells_kept(base, filters, by=by):
        group = (
            None
            if by == "model"
            else judge
            if by == "judge"
            else (scaffold if by == "scaffold" else primary) or "(none)"
        )
        a = per_judge.get((model, group, judge))
        if a is None:
            a = per_judge[(model, group, judge)] = [0, 0, 0, 0, 0.0, 0, 0, 0]
        a[0] += n_attempts
        a[1] += success
        a[2] += applicable
        a[3] += passed
        a[4] += rate_sum
        a[5] += unrecognised
        a[6] |= counted
        a[7] += none.bit_count()
        for status, n in unscored:
            statuses[(model, group, judge)][status] += n
        r = per_run.get((model, group, run_id))
        if r is None:
            r = per_run[(model, group, run_id)] = [0, 0]
        r[0] |= counted
        r[1] |= none
    scores: dict[tuple, dict[str, JudgeScore]] = defaultdict(dict)
    instances: dict[tuple, int] = defaultdict(int)
    for (model, group, judge), a in per_judge.items():
        scores[(model, group)][judge] = judge_score_of(
            a[0],
            a[1],
            a[2],
            a[3],
            a[6].bit_count(),
            a[7],
            rate_sum=a[4],
            unscored=dict(statuses.get((model, group, judge), {})),
            n_unrecognised=a[5],
        )
        instances[(model, group)] |= a[6]
    attempts: dict[tuple, int] = defaultdict(int)
    empty: dict[tuple, int] = defaultdict(int)
    for (model, group, _), (counted, none) in per_run.items():
        attempts[(model, group)] += counted.bit_count()
        empty[(model, group)] += (none & ~counted).bit_count()
    order = {g: i for i, g in enumerate(group_order(by))}
    return [
        score_row_of(
            model,
            group,
            dict(sorted(scores[(model, group)].items())),
            n_instances=instances[(model, group)].bit_count(),
            n_attempts=attempts[(model, group)],
            n_empty=empty[(model, group)],
        )
        for model, group in sorted(scores, key=lambda k: (k[0], order.get(k[1], len(order)), k[1] or ""))
    ]


def needs_facets(filters: Filters, by: str = "model") -> bool:
    """Whether a leaderboard state reads a base's cells per scaffold and primary category (a filter or grouping by
    one of them), not only its cells per (run, judge)."""
    return bool(filters.scaffolds or filters.primary_categories or by in ("scaffold", "primary_category"))


def without_facets(base: ModelBase) -> ModelBase:
    """The base without its cells per scaffold and primary category: what every state that does not need them
    reads (runs x judges cells: 1,500 instead of 18,000 at 100 models, a fifteenth of the cached entry)."""
    return replace(base, cells=None)


def _base_cells_kept(base: ModelBase, filters: Filters, *, by: str = "model") -> Iterator[tuple[str, str, tuple]]:
    """(model, judge, cell) of each cell of the base the filters keep: the cells per (run, judge) summed over
    scaffolds and primary categories, unless a filter or the grouping needs those facets apart."""
    runs, judges, scaffolds, primaries, models = (
        set(v) for v in (filters.runs, filters.judges, filters.scaffolds, filters.primary_categories, filters.models)
    )
    facets = needs_facets(filters, by)
    if facets and base.cells is None:
        raise ValueError("this state filters or groups by a facet: it needs a base with its cells (without_facets)")
    for cell in base.cells if facets else base.merged:
        label, model_id = base.runs[cell[0]]
        model, judge = base.models[model_id], base.judges[cell[1]]
        if (
            (runs and label not in runs)
            or (judges and judge not in judges)
            or (scaffolds and cell[2] not in scaffolds)
            or (primaries and cell[3] not in primaries)
            or (models and model not in models)
        ):
            continue
        yield model, judge, cell


def runs_by_model(base: ModelBase, filters: Filters) -> dict[str, tuple[str, ...]]:
    """Per model, the labels of the runs (in name order) whose attempts its by-model leaderboard row pools under
    these filters: a row of a model run twice (another scaffold, a "+ feedback" run) says so."""
    pooled: dict[str, set[str]] = defaultdict(set)
    for model, _, cell in _base_cells_kept(base, filters):
        pooled[model].add(base.runs[cell[0]][0])
    return {model: tuple(sorted(labels)) for model, labels in pooled.items()}


# the attempts behind a leaderboard cell, and an attempt's verdicts ---------------------------
@dataclass
class AttemptRow:
    """One attempt behind a leaderboard cell, with its counts under each judge."""

    attempt_id: int
    instance_id: int
    run: str
    assistant_turns: int | None
    judges: dict[str, tuple[int, int]]  # judge -> (applicable, passed) in the cell's scope
    external_id: str = ""
    failing_items: list[dict] = field(default_factory=list)
    unscored: dict[str, str] = field(default_factory=dict)  # judge -> why it scored nothing, in plain words
    #: the attempt's total tokens, wall time and tool calls as logged (None: not logged), filled with its failing items
    total_tokens: int | None = None
    wall_seconds: float | None = None
    tool_calls: int | None = None

    @property
    def failing(self) -> bool:
        return any(app > 0 and passed < app for app, passed in self.judges.values())

    @property
    def n_failed(self) -> int:
        return sum(app - passed for app, passed in self.judges.values())

    @property
    def pass_ratio(self) -> float:
        app = sum(a for a, _ in self.judges.values())
        return sum(p for _, p in self.judges.values()) / app if app else 1.0


#: characters of a failing item's description shown in the drill-down (the full text is on the attempt page)
FAILING_DESCRIPTION_CHARS = 140


def evidence_ref(evidence) -> tuple[int, int] | None:
    """(thread, message index) of a verdict's evidence: an int (main thread) or {"thread"?, "message"}."""
    if isinstance(evidence, bool):
        return None
    if isinstance(evidence, int):
        return (0, evidence)
    if isinstance(evidence, dict) and isinstance(evidence.get("message"), int):
        thread = evidence.get("thread", 0)
        return (thread if isinstance(thread, int) else 0, evidence["message"])
    return None


def item_matrix(items: Iterable[dict], counts: Iterable[dict]) -> dict:
    """An instance's checklist items by source category (METRICS.md order), each with one cell per model: the pass
    rate over applicable verdicts (all judges, all repetitions), None where the model has no verdict on it.
    `counts` are {"item_id", "attempt__run__model__name", "n" (applicable), "passed", "na"} per item and model."""
    cells = {(c["item_id"], c["attempt__run__model__name"]): c for c in counts}
    models = sorted({m for _, m in cells})
    order = {c: n for n, c in enumerate(SOURCE_CATEGORIES)}
    groups: dict[str, list[dict]] = {}
    for item in sorted(items, key=lambda i: (order.get(i["category"], len(order)), i["category"], i["position"])):
        row_cells = []
        for model in models:
            c = cells.get((item["id"], model))
            row_cells.append(
                None
                if c is None
                else {
                    "rate": 100.0 * c["passed"] / c["n"] if c["n"] else None,
                    "n": c["n"],
                    "passed": c["passed"],
                    "na": c["na"],
                }
            )
        groups.setdefault(item["category"], []).append({**item, "cells": row_cells})
    return {"models": models, "groups": [{"category": k, "items": v} for k, v in groups.items()]}


def failing_items(verdicts: Iterable[tuple[int, int, str, str, str, str]]) -> dict[int, list[dict]]:
    """Per attempt, its failing items in the order given, each once with the judges that failed it and its
    description cut to FAILING_DESCRIPTION_CHARS (`short`); `verdicts` are failed verdicts as (attempt id, item id,
    item key, description, category, judge); an attempt with none is not a key."""
    failing: dict[int, dict[int, dict]] = defaultdict(dict)
    for attempt_id, item_id, key, description, category, judge in verdicts:
        entry = failing[attempt_id].get(item_id)
        if entry is None:
            # the description cut here, not by a template filter: a page lists hundreds of failing items
            short = (
                description
                if len(description) <= FAILING_DESCRIPTION_CHARS
                else description[: FAILING_DESCRIPTION_CHARS - 1] + "…"
            )
            entry = failing[attempt_id][item_id] = {
                "id": item_id,
                "key": key,
                "description": description,
                "short": short,
                "category": category,
                "judges": [],
            }
        entry["judges"].append(judge)
    return {attempt_id: list(items.values()) for attempt_id, items in failing.items()}


def checklist_items(checklist: Iterable[dict], written: Mapping[str, dict], verdicts: Iterable[dict]) -> list[dict]:
    """An attempt's checklist items, each with its verdicts (in the order given), counts of fail and pass and the
    first evidence; items any judge failed first, then items with verdicts, then by position. `checklist` are the
    items ({"id", "key", "position", ...}), `written` per judge the results it wrote that the reference scorer does
    not recognise (by item key), `verdicts` {"id", "item_id", "judge__name", "result", "text", "size", "evidence"}."""
    items = {i["id"]: {**i, "verdicts": [], "n_fail": 0, "n_pass": 0, "evidence": None} for i in checklist}
    for v in verdicts:
        item = items.get(v["item_id"])
        if item is None:
            continue
        ref = evidence_ref(v["evidence"])
        unrecognised = written.get(v["judge__name"], {})
        item["verdicts"].append(
            {
                "id": v["id"],
                "judge": v["judge__name"],
                "result": v["result"],
                "reasoning": v["text"],
                "reasoning_size": v["size"],
                "reasoning_cut": len(v["text"]) < v["size"],
                "evidence": ref,
                "written": json.dumps(unrecognised[item["key"]], ensure_ascii=False)
                if item["key"] in unrecognised
                else None,
            }
        )
        item["n_fail"] += v["result"] == "fail"
        item["n_pass"] += v["result"] == "pass"
        if ref and item["evidence"] is None:
            item["evidence"] = ref
    return sorted(items.values(), key=lambda i: (-i["n_fail"], not i["verdicts"], i["position"]))


# the harness's own log of an attempt (Inspect AI events, lm-eval per-sample metrics) --------------------
@dataclass
class HarnessLog:
    """What an attempt imported from a harness log kept: its events in order (each at its span depth)
    and where the tokens and the time went, with the pass threshold the import chose."""

    source: str
    events: list[dict]
    n_events: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    model_seconds: float
    tool_calls: int
    tool_seconds: float
    pass_threshold: float | None
    invalidated: dict | None
    scores: dict
    metrics: dict
    total_time: float | None
    working_time: float | None


#: deeper spans are indented as much as this (the page has a step per level up to it)
MAX_EVENT_DEPTH = 4


def harness_log(outcome: dict, *, limit: int = 500) -> HarnessLog | None:
    """The harness log of an attempt's outcome, or None when the attempt came from elsewhere. Events beyond
    `limit` are left out of the list (the totals count them all)."""
    source = outcome.get("source") if isinstance(outcome, dict) else None
    if not isinstance(source, str):
        return None
    events = [e for e in outcome.get("events") or [] if isinstance(e, dict)]
    shown, depth = [], 0
    for event in events:
        kind = event.get("event")
        if kind == "span_end":  # the indent shows where a span ends; its row would say nothing more
            depth = max(depth - 1, 0)
            continue
        if len(shown) < limit:
            shown.append({**event, "depth": min(depth, MAX_EVENT_DEPTH)})
        if kind == "span_begin":
            depth += 1
    models = [e for e in events if e.get("event") == "model"]
    tools = [e for e in events if e.get("event") == "tool"]

    def total(rows: list[dict], key: str) -> float:
        return sum(v for v in (r.get(key) for r in rows) if isinstance(v, (int, float)) and not isinstance(v, bool))

    return HarnessLog(
        source=source,
        events=shown,
        n_events=len(events),
        model_calls=len(models),
        input_tokens=int(total(models, "input_tokens")),
        output_tokens=int(total(models, "output_tokens")),
        model_seconds=total(models, "seconds"),
        tool_calls=len(tools),
        tool_seconds=total(tools, "seconds"),
        pass_threshold=outcome.get("pass_threshold"),
        invalidated=outcome.get("invalidated"),
        scores={
            name: {**score, "value": _as_text(score.get("value"))}
            for name, score in (outcome.get("scores") or {}).items()
            if isinstance(score, dict)
        },
        metrics={name: _as_text(value) for name, value in (outcome.get("metrics") or {}).items()},
        total_time=outcome.get("total_time"),
        working_time=outcome.get("working_time"),
    )


def _as_text(value) -> str | None:
    """A logged value as the page shows it: text as it is, anything else as JSON (None stays None: unscored)."""
    return value if isinstance(value, str) or value is None else json.dumps(value, ensure_ascii=False)
