"""Checklist-benchmark metrics (METRICS.md section 1): ISR, CSR, macro CSR, per group, per judge, bootstrap, stability.

The pure functions take `Cell`s (one attempt x judge, optionally x group value: how
many items were applicable and how many passed) and return plain rows. The query
functions at the end build cells from the rollup tables; only the exclusion path reads
verdicts, because rollups cannot leave items out.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from statistics import median
from typing import NamedTuple

import numpy as np
from django.db.models import Aggregate, FloatField

from runs.categories import SOURCE_CATEGORIES

from .rank_change import ranks as ranks_by_score
from .stats import bootstrap_interval, kendall_tau, mean_std

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
TOKEN_BUCKETS = ((0, 10_000, "under 10k"), (10_000, 100_000, "10k-100k"), (100_000, 1_000_000, "100k-1M"),
                 (1_000_000, None, "1M or more"))
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
    "input_tokens": "input tokens", "output_tokens": "output tokens", "total_tokens": "total tokens",
    "model_seconds": "model time (s)", "wall_seconds": "wall time (s)", "model_calls": "model calls",
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


def usage_by_model(benchmark_id: int, filters: Filters, *, base: ModelBase | None = None) -> dict[str, UsageSummary]:
    """Per model, the usage of its attempts the filters keep: every repetition's attempts at the instances kept
    (with a judges filter, those the judges scored). One query: on PostgreSQL the database counts, averages and
    takes the medians (a 48-model study's 31,248 attempts are not sent); elsewhere the figures are read.
    With a judges filter and the generation's `base`, which attempts the judges scored is read from the base's
    bits, not from the rollups (the figures are read, and one query finds the instances' bits)."""
    from django.db import connection
    from django.db.models import Avg, Count, Exists, OuterRef

    from runs.models import Attempt, AttemptRollup, Instance

    attempts = _filter(Attempt.objects.filter(run__benchmark_id=benchmark_id),
                       Filters(runs=filters.runs, scaffolds=filters.scaffolds,
                               primary_categories=filters.primary_categories, models=filters.models),
                       model="run__model__name")
    if filters.judges and base is not None:
        judges = set(filters.judges)
        scored: dict[int, int] = defaultdict(int)  # run id -> bits of the instances the judges scored
        for run_id, judge_id, *_, counted, empty in base.merged:
            if base.judges[judge_id] in judges:
                scored[run_id] |= counted | empty
        bit_of = {pk: n for n, pk in enumerate(Instance.objects.filter(benchmark_id=benchmark_id).order_by("id")
                                               .values_list("id", flat=True))}
        kept: dict[str, list[tuple]] = defaultdict(list)
        for run_id, instance_id, model, *figures in attempts.values_list(
                "run_id", "instance_id", "run__model__name", *USAGE_FIGURES).order_by():
            if instance_id in bit_of and scored.get(run_id, 0) >> bit_of[instance_id] & 1:
                kept[model].append(figures)
        return {model: usage_summary(rows) for model, rows in kept.items()}
    if filters.judges:
        attempts = attempts.filter(Exists(AttemptRollup.objects.filter(attempt_id=OuterRef("pk"),
                                                                       judge__name__in=list(filters.judges))))
    if connection.vendor != "postgresql":
        by_model: dict[str, list[tuple]] = defaultdict(list)
        for model, *figures in attempts.values_list("run__model__name", *USAGE_FIGURES).order_by():
            by_model[model].append(figures)
        return {model: usage_summary(rows) for model, rows in by_model.items()}
    aggregates = {"n_attempts": Count("id")}
    for name in USAGE_FIGURES:
        aggregates |= {f"{name}_n": Count(name), f"{name}_mean": Avg(name, output_field=FloatField()),
                       f"{name}_median": _Median(name)}
    return {r["run__model__name"]: UsageSummary(r["n_attempts"], {
                name: Spread(r[f"{name}_n"], r[f"{name}_mean"], r[f"{name}_median"]) for name in USAGE_FIGURES})
            for r in attempts.values("run__model__name").annotate(**aggregates).order_by()}


class _Median(Aggregate):
    """PostgreSQL's median: the continuous 50th percentile (the mean of the two middle values, as
    statistics.median); NULLs are left out, like not-logged figures in `spread`."""

    function = "PERCENTILE_CONT"
    name = "Median"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


def usage_dict(usage: UsageSummary | None) -> dict | None:
    """A row's usage as plain JSON (API, exports, snapshots): {"n_attempts", <figure>: {"n", "mean", "median"}}."""
    if usage is None:
        return None
    return {"n_attempts": usage.n_attempts,
            **{name: {"n": s.n, "mean": s.mean, "median": s.median} for name, s in usage.figures.items()}}


#: the CSV export's usage columns: per figure its mean, median and how many attempts logged it
USAGE_CSV_HEADER = [f"{name}_{part}" for name in USAGE_FIGURES for part in ("mean", "median", "n")]


def usage_csv_cells(usage: dict | None) -> list:
    """A row's usage_dict as the CSV's USAGE_CSV_HEADER cells (empty when not logged)."""
    return [((usage or {}).get(name) or {}).get(part) for name in USAGE_FIGURES for part in ("mean", "median", "n")]


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
    return judge_score_of(n_attempts, n_success, n_applicable, n_passed, len(instances), len(empty),
                          rate_sum=rate_sum, unscored=dict(unscored), n_unrecognised=n_unrecognised)


def judge_score_of(n_attempts: int, n_success: int, n_applicable: int, n_passed: int, n_instances: int,
                   n_empty: int, *, rate_sum: float = 0.0, unscored: dict[str, int] | None = None,
                   n_unrecognised: int = 0) -> JudgeScore:
    """A judge's ISR, CSR and macro CSR from its counts (counted attempts only; see judge_score);
    `rate_sum` is the sum of the counted attempts' pass rates."""
    return JudgeScore(
        isr=100.0 * n_success / n_attempts if n_attempts else None,
        csr=100.0 * n_passed / n_applicable if n_applicable else None,
        n_instances=n_instances, n_attempts=n_attempts, n_empty=n_empty,
        n_success=n_success, n_applicable=n_applicable, n_passed=n_passed,
        macro_csr=macro_csr(rate_sum, n_attempts), unscored={k: v for k, v in (unscored or {}).items() if v},
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
    return score_row_of(model, group, per_judge, n_instances=len({c.instance_id for c in counted}),
                        n_attempts=len(counted_attempts),
                        n_empty=len({c.attempt_id for c in cells if c.n_applicable == 0} - counted_attempts))


def score_row_of(model: str, group: str | None, per_judge: dict[str, JudgeScore], *, n_instances: int,
                 n_attempts: int, n_empty: int) -> ScoreRow:
    """A row from its judges' scores (in judge-name order) and its distinct counts across judges."""
    isr, isr_std = mean_std([s.isr for s in per_judge.values()])
    csr, csr_std = mean_std([s.csr for s in per_judge.values()])
    macro, macro_std = mean_std([s.macro_csr for s in per_judge.values()])
    return ScoreRow(model=model, group=group, isr=isr, isr_std=isr_std, csr=csr, csr_std=csr_std,
                    n_instances=n_instances, n_attempts=n_attempts, n_empty=n_empty, per_judge=per_judge,
                    macro_csr=macro, macro_csr_std=macro_std)


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
    """The row with 95% percentile bootstrap intervals over instances (judge mean recomputed per resample)."""
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

    row.isr_ci = bootstrap_interval(len(instances), ratio(successes, attempts), **kwargs)
    row.csr_ci = bootstrap_interval(len(instances), ratio(passed, applicable), **kwargs)
    return row


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
        scored = [(r.model, getattr(r.per_judge[judge], metric)) for r in rows
                  if judge in r.per_judge and getattr(r.per_judge[judge], metric) is not None]
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


def paired_comparison(cells_a: Sequence[Cell], cells_b: Sequence[Cell], *, label_a: str, label_b: str) -> PairedComparison:
    """ISR and CSR of each side on the common instances and judges, and the gain B - A (METRICS.md section 1)."""
    inst_a, inst_b = {c.instance_id for c in cells_a}, {c.instance_id for c in cells_b}
    common = inst_a & inst_b
    judges = sorted({c.judge for c in cells_a} & {c.judge for c in cells_b})
    keep_a = [c for c in cells_a if c.instance_id in common and c.judge in judges]
    keep_b = [c for c in cells_b if c.instance_id in common and c.judge in judges]
    a, b = score_row(label_a, None, keep_a), score_row(label_b, None, keep_b)
    return PairedComparison(
        label_a=label_a, label_b=label_b, a=a, b=b,
        isr_gain=_diff(b.isr, a.isr), csr_gain=_diff(b.csr, a.csr),
        n_common=len(common), only_a=len(inst_a - common), only_b=len(inst_b - common), judges=judges,
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


def flipped_items(verdicts_a: Iterable[tuple[int, int, str, str]], verdicts_b: Iterable[tuple[int, int, str, str]]) -> list[FlippedItem]:
    """Items whose outcome differs between sides; input rows are (instance, item, judge, result).

    Per side an item passes under a judge when all its applicable verdicts (over
    repetitions) pass; not-applicable verdicts are ignored.
    """
    def outcome(rows):
        out: dict[tuple[int, int, str], bool] = {}
        for instance, item, judge, result in rows:
            if result == "na":
                continue
            key = (instance, item, judge)
            out[key] = out.get(key, True) and result == "pass"
        return out

    a, b = outcome(verdicts_a), outcome(verdicts_b)
    flips = []
    for key in sorted(set(a) & set(b)):
        if a[key] != b[key]:
            flips.append(FlippedItem(key[0], key[1], key[2], "fixed" if b[key] else "broken"))
    return flips


# cells from the database ---------------------------------------------------------------
@dataclass
class Filters:
    """Which rollups a leaderboard reads: empty lists mean everything."""

    runs: Collection[str] = ()
    judges: Collection[str] = ()
    scaffolds: Collection[str] = ()
    primary_categories: Collection[str] = ()
    models: Collection[str] = ()


def _filter(qs, filters: Filters, *, via: str = "", model: str = "model__name"):
    """Rows (rollups, or verdicts and judge reports with via="attempt__") the filters keep; `model` is
    the lookup of the model's name (rollups carry the model, verdicts reach it through the attempt's run)."""
    if filters.runs:
        qs = qs.filter(**{f"{via}run__label__in": list(filters.runs)})
    if filters.judges:
        qs = qs.filter(judge__name__in=list(filters.judges))
    if filters.scaffolds:
        qs = qs.filter(**{f"{via}instance__scaffold__in": list(filters.scaffolds)})
    if filters.primary_categories:
        qs = qs.filter(**{f"{via}instance__primary_category__in": list(filters.primary_categories)})
    if filters.models:
        qs = qs.filter(**{f"{model}__in": list(filters.models)})
    return qs


#: _filter's keywords for rows that reach everything through their attempt (verdicts, judge reports)
VIA_ATTEMPT = {"via": "attempt__", "model": "attempt__run__model__name"}


def attempt_cells(benchmark_id: int, filters: Filters, *, by: str = "model") -> list[Cell]:
    """Cells from AttemptRollup, grouped by an instance facet or the judge when asked.

    The rollups are read as ids and counts (the joined names would be sent once per row:
    twice the transfer at 31,248 rows) and named from the few models, runs, judges and
    instances they mention, one small query each."""
    from runs.models import AgentModel, AttemptRollup, Instance, Judge, Run

    qs = _filter(AttemptRollup.objects.filter(benchmark_id=benchmark_id), filters)
    # grouped by tokens, each rollup also brings its attempt's total tokens (None otherwise: not read)
    tokens = "attempt__total_tokens" if by == "tokens" else "n_unrecognised"
    rows = list(qs.values_list("attempt_id", "instance_id", "model_id", "run_id", "judge_id", "n_applicable", "n_passed",
                               "attempt__assistant_turns", "unscored", "n_unrecognised", tokens).order_by())
    facet = {"scaffold": "scaffold", "primary_category": "primary_category"}.get(by)
    wanted = [(AgentModel, "name", {r[2] for r in rows}), (Run, "label", {r[3] for r in rows}),
              (Judge, "name", {r[4] for r in rows})] + ([(Instance, facet, {r[1] for r in rows})] if facet else [])
    models, runs, judges, *facets = _names(wanted)
    groups = {i: value or "(none)" for i, value in facets[0].items()} if facet else {}

    def group(instance_id: int, judge_id: int, total: int | None) -> str | None:
        if by == "tokens":
            return token_bucket(total)
        return judges[judge_id] if by == "judge" else groups.get(instance_id) if facet else None

    return [Cell(a, i, models[m], runs[r], judges[j], n_app, n_pass, group(i, j, total), turns, unscored, n_unrecognised)
            for a, i, m, r, j, n_app, n_pass, turns, unscored, n_unrecognised, total in rows]


def _names(wanted: list[tuple[type, str, set[int]]]) -> list[dict]:
    """For each (model class, field, ids): {id: field} of those rows; one query for all (UNION ALL)."""
    from django.db.models import IntegerField, Value

    parts = [model.objects.filter(id__in=sorted(ids)).annotate(_part=Value(n, output_field=IntegerField()))
             .values_list("_part", "id", field).order_by() for n, (model, field, ids) in enumerate(wanted) if ids]
    out: list[dict] = [{} for _ in wanted]
    if parts:
        for part, pk, value in parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]:
            out[part][pk] = value
    return out


def group_cells(benchmark_id: int, filters: Filters, *, dimension: str) -> list[Cell]:
    """Cells from GroupRollup for an item facet ("category" or "check_type"), as ids named afterwards."""
    from runs.models import AgentModel, GroupRollup, Judge, Run

    qs = _filter(GroupRollup.objects.filter(benchmark_id=benchmark_id, dimension=dimension), filters, via="attempt__")
    rows = list(qs.values_list(
        "attempt_id", "attempt__instance_id", "model_id", "attempt__run_id", "judge_id",
        "n_applicable", "n_passed", "value", "attempt__assistant_turns",
    ).order_by())
    models, runs, judges = _names([(AgentModel, "name", {r[2] for r in rows}), (Run, "label", {r[3] for r in rows}),
                                   (Judge, "name", {r[4] for r in rows})])
    return [Cell(a, i, models[m], runs[r], judges[j], n_app, n_pass, value, turns)
            for a, i, m, r, j, n_app, n_pass, value, turns in rows]


def verdict_cells(benchmark_id: int, filters: Filters, *, by: str, excluded_items: Collection[int]) -> list[Cell]:
    """Cells recomputed from verdicts with some items left out (the exclusion-policy path only)."""
    from django.db.models import Count, Q

    from runs.models import Verdict, VerdictResult

    field_of = {"category": "item__category", "check_type": "item__check_type", "scaffold": "attempt__instance__scaffold",
                "primary_category": "attempt__instance__primary_category", "judge": "judge__name",
                "tokens": "attempt__total_tokens"}
    qs = _filter(Verdict.objects.filter(attempt__run__benchmark_id=benchmark_id), filters, **VIA_ATTEMPT)
    qs = qs.exclude(item_id__in=list(excluded_items))
    keys = ["attempt_id", "attempt__instance_id", "attempt__run__model__name", "attempt__run__label", "judge__name",
            "attempt__assistant_turns"]
    group_field = field_of.get(by)
    if group_field and group_field not in keys:
        keys.append(group_field)
    rows = qs.values(*keys).annotate(
        n_applicable=Count("id", filter=~Q(result=VerdictResult.NOT_APPLICABLE)),
        n_passed=Count("id", filter=Q(result=VerdictResult.PASS)),
    ).order_by()
    # keyed by the group as named (a token bucket, "(none)"), as _add_judge_reports finds the cells
    cells = {}
    for r in rows:
        group = _group_value(by, r[group_field]) if group_field else None
        cells[(r["attempt_id"], r["judge__name"], group)] = Cell(
            r["attempt_id"], r["attempt__instance_id"], r["attempt__run__model__name"], r["attempt__run__label"],
            r["judge__name"], r["n_applicable"], r["n_passed"], group, r["attempt__assistant_turns"])
    _add_judge_reports(cells, benchmark_id, filters, keys, group_field, excluded_items, by=by)
    return list(cells.values())


def _group_value(by: str, value) -> str:
    """A verdict row's group value as the rollup path names it (token buckets; "(none)" for an empty facet)."""
    return token_bucket(value) if by == "tokens" else (value or "(none)")


def _add_judge_reports(cells: dict[tuple, Cell], benchmark_id: int, filters: Filters, keys: list[str],
                       group_field: str | None, excluded_items: Collection[int], *, by: str = "model") -> None:
    """Judge reports added to verdict cells as runs.services adds them to the rollups: an attempt the judge
    could not score counts its instance's items (those not excluded, at least one) as failed, per item facet
    when grouped by one; a scored attempt adds the checks the checklist lacks (not per item facet)."""
    from runs.models import ChecklistItem, JudgeReport, ReportStatus

    by_item = group_field is not None and group_field.startswith("item__")
    qs = _filter(JudgeReport.objects.filter(attempt__run__benchmark_id=benchmark_id), filters, **VIA_ATTEMPT)
    reports = list(qs.values(*(k for k in keys if not k.startswith("item__")), "status", "n_applicable_extra",
                             "n_passed_extra", "unrecognised").order_by())
    facet = group_field.removeprefix("item__") if by_item else "key"
    items: dict[int, list[str]] = defaultdict(list)
    for instance_id, value in ChecklistItem.objects.filter(
            instance_id__in={r["attempt__instance_id"] for r in reports if r["status"] != ReportStatus.SCORED}).exclude(
            id__in=list(excluded_items)).values_list("instance_id", facet):
        items[instance_id].append(value)
    for r in reports:
        unscored = "" if r["status"] == ReportStatus.SCORED else r["status"]
        if by_item:
            counts = Counter(value or "(none)" for value in items[r["attempt__instance_id"]]) if unscored else {}
        else:
            group = _group_value(by, r[group_field]) if group_field else None
            extra = max(len(items[r["attempt__instance_id"]]), 1) if unscored else r["n_applicable_extra"]
            counts = {group: extra}
        for group, n in counts.items():
            key = (r["attempt_id"], r["judge__name"], group)
            if key not in cells and not n:  # a scored attempt whose verdicts were all left out stays out
                continue
            cell = cells.get(key) or Cell(
                r["attempt_id"], r["attempt__instance_id"], r["attempt__run__model__name"], r["attempt__run__label"],
                r["judge__name"], 0, 0, group, r["attempt__assistant_turns"])
            passed = 0 if unscored or by_item else r["n_passed_extra"]
            if by_item:  # as GroupRollup, which keeps counts only
                cells[key] = cell._replace(n_applicable=cell.n_applicable + n)
                continue
            cells[key] = cell._replace(n_applicable=cell.n_applicable + n, n_passed=cell.n_passed + passed,
                                       unscored=unscored, n_unrecognised=len(r["unrecognised"] or {}))


def leaderboard_cells(benchmark_id: int, filters: Filters, *, by: str = "model",
                      excluded_items: Collection[int] | None = None) -> list[Cell]:
    """The cells behind a leaderboard grouped `by` (a key of GROUPINGS); rollups unless items are excluded."""
    if by not in GROUPINGS:
        raise ValueError(f"unknown grouping {by!r}")
    if excluded_items:
        return verdict_cells(benchmark_id, filters, by=by, excluded_items=excluded_items)
    if by in ("category", "check_type"):
        return group_cells(benchmark_id, filters, dimension=by)
    return attempt_cells(benchmark_id, filters, by=by)


def group_order(by: str) -> Sequence[str]:
    """The display order of known group values (source categories in METRICS.md order, token buckets by size)."""
    if by == "tokens":
        return [label for _, _, label in TOKEN_BUCKETS] + [NOT_LOGGED]
    return SOURCE_CATEGORIES if by == "category" else ()


def leaderboard_rows(benchmark_id: int, filters: Filters, *, by: str = "model", bootstrap: bool = False,
                     excluded_items: Collection[int] | None = None) -> list[ScoreRow]:
    """Leaderboard rows (by model, or a model x group matrix), with bootstrap intervals when asked."""
    if by == "model" and not bootstrap and not excluded_items:
        return with_usage(model_rows_counted(benchmark_id, filters), benchmark_id, filters)
    cells = leaderboard_cells(benchmark_id, filters, by=by, excluded_items=excluded_items)
    rows = score_rows(cells, group_order=group_order(by))
    if bootstrap:
        grouped: dict[tuple[str, str | None], list[Cell]] = defaultdict(list)
        for c in cells:
            grouped[(c.model, c.group)].append(c)
        for row in rows:
            with_bootstrap(row, grouped[(row.model, row.group)])
    return with_usage(rows, benchmark_id, filters) if by == "model" else rows


def with_usage(rows: list[ScoreRow], benchmark_id: int, filters: Filters, *,
               usage: Mapping[str, UsageSummary] | None = None) -> list[ScoreRow]:
    """The rows (by model) with their attempts' usage: `usage` when given (usage_by_model of these filters, as
    cached by runs.selectors.checklist.leaderboard_usage), else usage_by_model."""
    if usage is None:
        usage = usage_by_model(benchmark_id, filters) if rows else {}
    for row in rows:
        row.usage = usage.get(row.model) or usage_summary([])
    return rows


def model_rows_counted(benchmark_id: int, filters: Filters) -> list[ScoreRow]:
    """`score_rows(attempt_cells(...))` by model, with the counting done in the database: the same
    integers (two GROUP BY queries over the rollups), so the same rows, without building a cell
    per rollup in Python. ISR, CSR, means and stds are computed from them by the same functions."""
    from django.db import connection
    from django.db.models import Count, F, FloatField, Max, Q, Sum
    from django.db.models.functions import Cast, NullIf

    from runs.models import AgentModel, AttemptRollup, Judge, ReportStatus

    rollups = _filter(AttemptRollup.objects.filter(benchmark_id=benchmark_id), filters).order_by()
    counted = Q(n_applicable__gt=0)
    statuses = [s for s in ReportStatus.values if s != ReportStatus.SCORED]
    per_judge = list(rollups.values("model_id", "judge_id").annotate(
        attempts=Count("id", filter=counted),
        success=Count("id", filter=counted & Q(n_passed=F("n_applicable"))),
        applicable=Sum("n_applicable", filter=counted, default=0),
        passed=Sum("n_passed", filter=counted, default=0),
        instances=Count("instance_id", filter=counted, distinct=True),
        empty=Count("attempt_id", filter=Q(n_applicable=0), distinct=True),
        rate_sum=Sum(Cast("n_passed", FloatField()) / NullIf("n_applicable", 0), filter=counted, default=0.0),
        unrecognised=Sum("n_unrecognised", default=0),
        **{f"unscored_{s}": Count("id", filter=Q(unscored=s)) for s in statuses},
    ).values_list("model_id", "judge_id", "attempts", "success", "applicable", "passed", "instances", "empty",
                  "rate_sum", "unrecognised", *(f"unscored_{s}" for s in statuses)))
    # across judges: an attempt counts when any judge had an applicable item, else it is empty
    inner, params = rollups.values("model_id", "attempt_id", "instance_id").annotate(
        most=Max("n_applicable")).values_list("model_id", "attempt_id", "instance_id", "most").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.model_id, COUNT(DISTINCT t.instance_id) FILTER (WHERE t.most > 0), "
            "COUNT(*) FILTER (WHERE t.most > 0), COUNT(*) FILTER (WHERE t.most = 0) "
            f"FROM ({inner}) t GROUP BY t.model_id", params)
        across = {m: (i, a, e) for m, i, a, e in cursor.fetchall()}
    names = _names([(AgentModel, "name", set(across)), (Judge, "name", {j for _, j, *_ in per_judge})])
    judges: dict[int, dict[str, JudgeScore]] = defaultdict(dict)
    for m, j, attempts, success, applicable, passed, instances, empty, rate_sum, unrecognised, *unscored in per_judge:
        judges[m][names[1][j]] = judge_score_of(attempts, success, applicable, passed, instances, empty,
                                                rate_sum=rate_sum, unscored=dict(zip(statuses, unscored)),
                                                n_unrecognised=unrecognised)
    rows = [score_row_of(names[0][m], None, dict(sorted(judges[m].items())), n_instances=i, n_attempts=a, n_empty=e)
            for m, (i, a, e) in across.items()]
    return sorted(rows, key=lambda r: r.model)


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
    cells: list[tuple]  # BaseCell fields
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


def model_base(benchmark_id: int) -> ModelBase:
    """The ModelBase of a benchmark from its AttemptRollup rows as committed now (one pass over them)."""
    from runs.models import AgentModel, AttemptRollup, Instance, Judge, Run

    instances: dict[int, int] = {}  # instance id -> its bit
    facets: dict[int, tuple[str, str]] = {}
    for n, (pk, scaffold, primary) in enumerate(Instance.objects.filter(benchmark_id=benchmark_id).order_by("id")
                                                .values_list("id", "scaffold", "primary_category")):
        instances[pk], facets[pk] = n, (scaffold, primary)
    acc: dict[tuple, list] = {}
    model_of: dict[int, int] = {}  # run id -> model id
    rows = AttemptRollup.objects.filter(benchmark_id=benchmark_id).values_list(
        "run_id", "model_id", "judge_id", "instance_id", "n_applicable", "n_passed", "unscored", "n_unrecognised").order_by()
    for run_id, model_id, judge_id, instance_id, n_applicable, n_passed, unscored, n_unrecognised in rows.iterator(
            chunk_size=20000):
        model_of[run_id] = model_id
        scaffold, primary = facets[instance_id]
        key = (run_id, judge_id, scaffold, primary)
        a = acc.get(key)
        if a is None:
            a = acc[key] = [0, 0, 0, 0, 0.0, 0, {}, 0, 0]
        bit = 1 << instances[instance_id]
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
        return sorted((*key, a[0], a[1], a[2], a[3], a[4], a[5], tuple(sorted(a[6].items())), a[7], a[8])
                      for key, a in sums.items())

    cells = cells_of(acc)
    labels, models, judges = _names([(Run, "label", set(model_of)), (AgentModel, "name", set(model_of.values())),
                                     (Judge, "name", {c[1] for c in cells})])
    runs = {pk: (label, model_of[pk]) for pk, label in labels.items()}
    return ModelBase(runs, models, judges, cells, cells_of(merged), n_instances=len(instances),
                     n_runs=Run.objects.filter(benchmark_id=benchmark_id).count())


def base_rows(base: ModelBase, filters: Filters, *, by: str = "model") -> list[ScoreRow]:
    """`score_rows(attempt_cells(benchmark, filters, by=by))` from the precomputed base, for `by` in
    BASE_GROUPINGS: the same counts, so the same rows (ISR, CSR, means and stds by the same functions;
    macro CSR's sum of rates is added in another order, so it may differ in the last bits)."""
    if by not in BASE_GROUPINGS:
        raise ValueError(f"the base does not answer grouping {by!r}")
    statuses: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    per_judge: dict[tuple, list] = {}  # (model, group, judge) -> sums, counted bits, empty count
    per_run: dict[tuple, list] = {}  # (model, group, run) -> counted bits, empty bits (across judges)
    for model, judge, (run_id, _, scaffold, primary, n_attempts, success, applicable, passed, rate_sum, unrecognised,
                       unscored, counted, none) in _base_cells_kept(base, filters, by=by):
        group = (None if by == "model" else judge if by == "judge"
                 else (scaffold if by == "scaffold" else primary) or "(none)")
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
            a[0], a[1], a[2], a[3], a[6].bit_count(), a[7], rate_sum=a[4],
            unscored=dict(statuses.get((model, group, judge), {})), n_unrecognised=a[5])
        instances[(model, group)] |= a[6]
    attempts: dict[tuple, int] = defaultdict(int)
    empty: dict[tuple, int] = defaultdict(int)
    for (model, group, _), (counted, none) in per_run.items():
        attempts[(model, group)] += counted.bit_count()
        empty[(model, group)] += (none & ~counted).bit_count()
    order = {g: i for i, g in enumerate(group_order(by))}
    return [score_row_of(model, group, dict(sorted(scores[(model, group)].items())),
                         n_instances=instances[(model, group)].bit_count(), n_attempts=attempts[(model, group)],
                         n_empty=empty[(model, group)])
            for model, group in sorted(scores, key=lambda k: (k[0], order.get(k[1], len(order)), k[1] or ""))]


def _base_cells_kept(base: ModelBase, filters: Filters, *, by: str = "model") -> Iterator[tuple[str, str, tuple]]:
    """(model, judge, cell) of each cell of the base the filters keep: the cells per (run, judge) summed over
    scaffolds and primary categories, unless a filter or the grouping needs those facets apart."""
    runs, judges, scaffolds, primaries, models = (set(v) for v in (filters.runs, filters.judges, filters.scaffolds,
                                                                   filters.primary_categories, filters.models))
    facets = bool(scaffolds or primaries or by in ("scaffold", "primary_category"))
    for cell in base.cells if facets else base.merged:
        label, model_id = base.runs[cell[0]]
        model, judge = base.models[model_id], base.judges[cell[1]]
        if ((runs and label not in runs) or (judges and judge not in judges) or (scaffolds and cell[2] not in scaffolds)
                or (primaries and cell[3] not in primaries) or (models and model not in models)):
            continue
        yield model, judge, cell


def runs_by_model(base: ModelBase, filters: Filters) -> dict[str, tuple[str, ...]]:
    """Per model, the labels of the runs (in name order) whose attempts its by-model leaderboard row pools under
    these filters: a row of a model run twice (another scaffold, a "+ feedback" run) says so."""
    pooled: dict[str, set[str]] = defaultdict(set)
    for model, _, cell in _base_cells_kept(base, filters):
        pooled[model].add(base.runs[cell[0]][0])
    return {model: tuple(sorted(labels)) for model, labels in pooled.items()}


# drill-down, attempt checklist, instance matrix, judge disagreement, comparison --------
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


def drilldown_rows(benchmark_id: int, filters: Filters, *, model: str, by: str = "model",
                   group: str | None = None) -> list[AttemptRow]:
    """The attempts behind one cell (model, and group value when grouped), failing first, worst first."""
    scoped = Filters(runs=filters.runs, judges=filters.judges, scaffolds=filters.scaffolds,
                     primary_categories=filters.primary_categories, models=[model])
    cells = leaderboard_cells(benchmark_id, scoped, by=by)
    if by != "model":
        cells = [c for c in cells if c.group == group]
    from runs.models import AttemptRollup, ReportStatus

    rows: dict[int, AttemptRow] = {}
    for c in cells:
        row = rows.setdefault(c.attempt_id, AttemptRow(c.attempt_id, c.instance_id, c.run, c.assistant_turns, {}))
        row.judges[c.judge] = (c.n_applicable, c.n_passed)
    # the few attempts a judge could not score (group cells do not say which): one query on the rollups
    unscored = _filter(AttemptRollup.objects.filter(benchmark_id=benchmark_id), scoped).exclude(unscored="")
    for attempt_id, judge, status in unscored.values_list("attempt_id", "judge__name", "unscored").order_by():
        if attempt_id in rows and judge in rows[attempt_id].judges:
            rows[attempt_id].unscored[judge] = ReportStatus(status).label
    return sorted(rows.values(), key=lambda r: (not r.failing, r.pass_ratio, -r.n_failed, r.attempt_id))


#: characters of a failing item's description shown in the drill-down (the full text is on the attempt page)
FAILING_DESCRIPTION_CHARS = 140


def attach_failing_items(rows: Sequence[AttemptRow], *, by: str = "model", group: str | None = None,
                         judges: Collection[str] | None = (), newest_verdict_id: int | None = None) -> None:
    """Fill external ids, usage (tokens, wall time, tool calls) and failing items (with the judges that failed
    them) of a page of rows; two queries. `newest_verdict_id` keeps only verdicts stored up to it (a share link's
    attempts, as they were when it was made)."""
    from runs.models import Attempt, Verdict, VerdictResult

    if not rows:
        return
    facts = {a: rest for a, *rest in Attempt.objects.filter(id__in=[r.attempt_id for r in rows]).values_list(
        "id", "instance__external_id", "total_tokens", "wall_seconds", "tool_calls").order_by()}
    qs = Verdict.objects.filter(attempt_id__in=[r.attempt_id for r in rows], result=VerdictResult.FAIL)
    if judges:
        qs = qs.filter(judge__name__in=list(judges))
    if newest_verdict_id is not None:
        qs = qs.filter(id__lte=newest_verdict_id)
    if by == "category":
        qs = qs.filter(item__category=group)
    elif by == "check_type":
        qs = qs.filter(item__check_type=group)
    elif by == "judge":
        qs = qs.filter(judge__name=group)
    failing: dict[int, dict[int, dict]] = defaultdict(dict)
    for attempt_id, item_id, key, description, category, judge in qs.values_list(
        "attempt_id", "item_id", "item__key", "item__description", "item__category", "judge__name"
    ).order_by("item__position", "judge__name"):
        entry = failing[attempt_id].get(item_id)
        if entry is None:
            # the description cut here, not by a template filter: a page lists hundreds of failing items
            short = description if len(description) <= FAILING_DESCRIPTION_CHARS else \
                description[:FAILING_DESCRIPTION_CHARS - 1] + "…"
            entry = failing[attempt_id][item_id] = {"id": item_id, "key": key, "description": description,
                                                    "short": short, "category": category, "judges": []}
        entry["judges"].append(judge)
    for row in rows:
        row.external_id, row.total_tokens, row.wall_seconds, row.tool_calls = facts.get(row.attempt_id, ("", None, None, None))
        row.failing_items = list(failing[row.attempt_id].values())


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


def attempt_checklist(attempt_id: int, *, reasoning_cut: int | None = None, judges: Collection[str] | None = None,
                      newest_verdict_id: int | None = None) -> list[dict]:
    """The attempt's checklist with each judge's verdict and reasoning; items any judge failed come first.

    With `reasoning_cut`, each reasoning is read only up to that many characters (the database cuts it:
    a 5 MB reasoning is never loaded for a page), with its full "reasoning_size" and "reasoning_cut".
    `judges` keeps only those judges' verdicts and `newest_verdict_id` only verdicts stored up to that
    id: a share link shows what its snapshot saw, not verdicts imported after it was made. A verdict's
    `written` is the result the judge wrote when the reference scorer does not recognise it (as JSON)."""
    from django.db.models import F
    from django.db.models.functions import Length, Substr

    from runs.models import Attempt, ChecklistItem, JudgeReport, Verdict

    instance_id = Attempt.objects.filter(id=attempt_id).values_list("instance_id", flat=True).first()
    items = {
        i["id"]: {**i, "verdicts": [], "n_fail": 0, "n_pass": 0, "evidence": None}
        for i in ChecklistItem.objects.filter(instance_id=instance_id).values(
            "id", "key", "description", "category", "category_original", "check_type", "position")
    }
    written = {judge: unrecognised for judge, unrecognised in JudgeReport.objects.filter(
        attempt_id=attempt_id).exclude(unrecognised={}).values_list("judge__name", "unrecognised")}
    text = F("reasoning") if reasoning_cut is None else Substr("reasoning", 1, reasoning_cut)
    verdicts = Verdict.objects.filter(attempt_id=attempt_id).annotate(text=text, size=Length("reasoning"))
    if judges is not None:
        verdicts = verdicts.filter(judge__name__in=list(judges))
    if newest_verdict_id is not None:
        verdicts = verdicts.filter(id__lte=newest_verdict_id)
    for v in verdicts.values("id", "item_id", "judge__name", "result", "text", "size", "evidence").order_by("judge__name"):
        item = items.get(v["item_id"])
        if item is None:
            continue
        ref = evidence_ref(v["evidence"])
        unrecognised = written.get(v["judge__name"], {})
        item["verdicts"].append({"id": v["id"], "judge": v["judge__name"], "result": v["result"], "reasoning": v["text"],
                                 "reasoning_size": v["size"], "reasoning_cut": len(v["text"]) < v["size"], "evidence": ref,
                                 "written": json.dumps(unrecognised[item["key"]], ensure_ascii=False)
                                 if item["key"] in unrecognised else None})
        item["n_fail"] += v["result"] == "fail"
        item["n_pass"] += v["result"] == "pass"
        if ref and item["evidence"] is None:
            item["evidence"] = ref
    return sorted(items.values(), key=lambda i: (-i["n_fail"], not i["verdicts"], i["position"]))


#: evaluate.py's error texts for an instance it could not give the judge, in plain words
REFERENCE_ERRORS = {"轨迹文件为空": "the trajectory file was empty", "case 中没有 checklist": "the instance has no checklist"}


def attempt_judge_reports(attempt_id: int, *, judges: Collection[str] | None = None) -> list[dict]:
    """What each judge's scores file said about the attempt as a whole, by judge name: the reward and
    binary reward it wrote, and for an unscored attempt the reason in plain words, the error and the reply
    (only `judges`' reports when given, as a share link's scope says)."""
    from runs.models import JudgeReport, ReportStatus

    reports = JudgeReport.objects.filter(attempt_id=attempt_id)
    if judges is not None:
        reports = reports.filter(judge__name__in=list(judges))
    out = []
    for r in reports.select_related("judge").order_by("judge__name"):
        reason = ReportStatus(r.status).label if r.unscored else ""
        if r.status == ReportStatus.FAILED and r.error in REFERENCE_ERRORS:
            reason = f"evaluate.py did not call the judge: {REFERENCE_ERRORS[r.error]}"
        out.append({"judge": r.judge.name, "judge_id": r.judge_id, "status": r.status, "unscored": r.unscored,
                    "reason": reason, "error": r.error, "reply": r.raw_reply, "reward": r.reward,
                    "binary_reward": r.binary_reward, "unrecognised": r.unrecognised, "extra_checks": r.extra_checks,
                    "counted_failed": r.n_applicable_extra if r.unscored else 0})
    return out


def item_model_matrix(instance_id: int) -> dict:
    """Per checklist item and model: pass rate over applicable verdicts (all judges, all repetitions) of one instance."""
    from django.db.models import Count, Q

    from runs.models import ChecklistItem, Verdict, VerdictResult

    items = list(ChecklistItem.objects.filter(instance_id=instance_id).values(
        "id", "key", "description", "category", "category_original", "check_type", "position"))
    counts = Verdict.objects.filter(attempt__instance_id=instance_id).values("item_id", "attempt__run__model__name").annotate(
        n=Count("id", filter=~Q(result=VerdictResult.NOT_APPLICABLE)),
        passed=Count("id", filter=Q(result=VerdictResult.PASS)),
        na=Count("id", filter=Q(result=VerdictResult.NOT_APPLICABLE)),
    ).order_by()
    cells = {(c["item_id"], c["attempt__run__model__name"]): c for c in counts}
    models = sorted({m for _, m in cells})
    order = {c: n for n, c in enumerate(SOURCE_CATEGORIES)}
    groups: dict[str, list[dict]] = {}
    for item in sorted(items, key=lambda i: (order.get(i["category"], len(order)), i["category"], i["position"])):
        row_cells = []
        for model in models:
            c = cells.get((item["id"], model))
            row_cells.append(None if c is None else {
                "rate": 100.0 * c["passed"] / c["n"] if c["n"] else None, "n": c["n"], "passed": c["passed"], "na": c["na"]})
        groups.setdefault(item["category"], []).append({**item, "cells": row_cells})
    return {"models": models, "groups": [{"category": k, "items": v} for k, v in groups.items()]}


def judge_disagreements(benchmark_id: int, filters: Filters, *, limit: int = 20) -> list[dict]:
    """Items on which judges split most often: attempts where one judge passed and another failed the item.

    The split pairs are read from JudgeDisagreement (kept by the rollup rebuild), counted per item in
    the database; a judge filter keeps the pairs some chosen judge passed and another failed. Only the
    `limit` items shown read their verdicts, for the attempts judged on them (the rate's denominator)."""
    from django.db.models import Count

    from runs.models import ChecklistItem, Judge, JudgeDisagreement, Verdict, VerdictResult

    pairs = _filter(JudgeDisagreement.objects.filter(benchmark_id=benchmark_id), replace(filters, judges=()))
    if filters.judges:
        judge_keys = [str(i) for i in Judge.objects.filter(name__in=list(filters.judges)).values_list("id", flat=True)]
        if not judge_keys:
            return []
        pairs = pairs.filter(passed_by__has_any_keys=judge_keys, failed_by__has_any_keys=judge_keys)
    top = list(pairs.values("item_id").annotate(n=Count("id")).order_by("-n", "item_id").values_list("item_id", "n")[:limit])
    if not top:
        return []
    ids = [i for i, _ in top]
    qs = _filter(Verdict.objects.filter(attempt__run__benchmark_id=benchmark_id, item_id__in=ids), filters, **VIA_ATTEMPT)
    judged = dict(qs.exclude(result=VerdictResult.NOT_APPLICABLE).values("item_id")
                  .annotate(n=Count("attempt_id", distinct=True)).order_by().values_list("item_id", "n"))
    info = {i["id"]: i for i in ChecklistItem.objects.filter(id__in=ids).values(
        "id", "key", "description", "category", "instance_id", "instance__external_id")}
    return [{**info[i], "split": n, "judged": judged.get(i, 0),
             "rate": 100.0 * n / judged[i] if judged.get(i) else None} for i, n in top]


def _side_filters(side: str) -> Filters:
    """A comparison side: "model:<name>" for all runs of a model, else a run label."""
    if side.startswith("model:"):
        return Filters(models=[side[6:]])
    return Filters(runs=[side])


def compare_sides(benchmark_id: int, a: str, b: str, *, limit: int = 200) -> dict:
    """Paired comparison of two sides and the items that flipped each way (verdicts of the common instances)."""
    from runs.models import ChecklistItem, Instance, Verdict

    cells_a = attempt_cells(benchmark_id, _side_filters(a))
    cells_b = attempt_cells(benchmark_id, _side_filters(b))
    paired = paired_comparison(cells_a, cells_b, label_a=a, label_b=b)
    common = {c.instance_id for c in cells_a} & {c.instance_id for c in cells_b}

    def verdicts(side: str):
        f = _side_filters(side)
        qs = Verdict.objects.filter(attempt__run__benchmark_id=benchmark_id, attempt__instance_id__in=common,
                                    judge__name__in=paired.judges)
        qs = qs.filter(attempt__run__label__in=list(f.runs)) if f.runs else qs.filter(attempt__run__model__name__in=list(f.models))
        return qs.values_list("attempt__instance_id", "item_id", "judge__name", "result").order_by()

    flips = flipped_items(verdicts(a), verdicts(b)) if common else []
    ids = {f.item_id for f in flips}
    items = {i["id"]: i for i in ChecklistItem.objects.filter(id__in=ids).values("id", "key", "description", "category")}
    external = dict(Instance.objects.filter(id__in={f.instance_id for f in flips}).values_list("id", "external_id"))
    merged: dict[tuple[int, int, str], dict] = {}
    for f in flips:
        entry = merged.setdefault((f.instance_id, f.item_id, f.direction), {
            **items.get(f.item_id, {}), "instance_id": f.instance_id, "external_id": external.get(f.instance_id, ""),
            "direction": f.direction, "judges": []})
        entry["judges"].append(f.judge)
    fixed = [e for e in merged.values() if e["direction"] == "fixed"]
    broken = [e for e in merged.values() if e["direction"] == "broken"]
    return {"paired": paired, "fixed": fixed[:limit], "broken": broken[:limit],
            "n_fixed": len(fixed), "n_broken": len(broken)}


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
        source=source, events=shown, n_events=len(events), model_calls=len(models),
        input_tokens=int(total(models, "input_tokens")), output_tokens=int(total(models, "output_tokens")),
        model_seconds=total(models, "seconds"), tool_calls=len(tools), tool_seconds=total(tools, "seconds"),
        pass_threshold=outcome.get("pass_threshold"), invalidated=outcome.get("invalidated"),
        scores={name: {**score, "value": _as_text(score.get("value"))} for name, score in (outcome.get("scores") or {}).items()
                if isinstance(score, dict)},
        metrics={name: _as_text(value) for name, value in (outcome.get("metrics") or {}).items()},
        total_time=outcome.get("total_time"), working_time=outcome.get("working_time"),
    )


def _as_text(value) -> str | None:
    """A logged value as the page shows it: text as it is, anything else as JSON (None stays None: unscored)."""
    return value if isinstance(value, str) or value is None else json.dumps(value, ensure_ascii=False)
