"""Is the difference real? Paired differences, McNemar and permutation tests, Holm, tie groups and rank intervals.

Pure functions of arrays (docs/metrics.md, "Is the difference real?"). A model's data on one figure is a `Side`,
`(num, den)`: two float arrays of shape (n_instances, n_judges), summed over the instance's repetitions and items
under each judge (ISR: successes and attempts; CSR: passed and applicable items; accuracy: correct and answered).
A den of 0 means no data for that judge on that instance. The figure is the mean over judges of
(sum over instances of num) / (sum over instances of den) x 100, judges with no data left out: the leaderboard's
ISR and CSR, as runs.metrics.checklist.with_bootstrap resamples them. Every function here resamples or permutes
whole instances, each with its repetitions, judges and items.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from runs.metrics.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    INSTANCE_INTERVAL_METHOD,
    bootstrap_interval,
    bootstrap_weights,
)

#: a model's numerators and denominators, (n_instances, n_judges) each, on an instance axis shared with the others
Side = tuple[np.ndarray, np.ndarray]

#: permutations of the paired permutation test (at least 2,000; tie_groups draws more when Holm needs them)
PERMUTATIONS = 2000
MCNEMAR = "McNemar exact"
PERMUTATION = "paired permutation"
#: what every interval and test here resamples or permutes
RESAMPLED = "instances (with their repetitions, judges and items)"
#: a permutation p resting on fewer permutations at least as extreme as the observed difference than this is drawn
#: again with as many permutations as the smallest Holm threshold of a tie-group step needs (step_pvalues)
REFINE_BELOW = 10
#: permutations drawn at a time when refining (bounded memory: this many rows by the instances)
_CHUNK = 4096
#: figures closer than this (in points) are equal when ranking and when comparing a permuted statistic
_EQUAL = 1e-9


@dataclass(frozen=True)
class PairedDifference:
    """B - A on the instances both sides cover, under the judges both have there.

    `a` and `b` are the two figures on those instances (percent), `diff` is b - a in points, (`low`, `high`) its
    expanded percentile bootstrap interval over the shared instances (the same drawn instances for both sides), `p` the
    two-sided p of `test`, and `b_count`/`c_count` McNemar's discordant instances (A passed and B failed / A failed
    and B passed; None under the permutation test). Figures are None when the sides share no instance."""

    a: float | None
    b: float | None
    diff: float | None
    low: float | None
    high: float | None
    n_instances: int
    p: float | None
    test: str
    b_count: int | None = None
    c_count: int | None = None
    resampled: str = RESAMPLED


def as_side(num, den) -> Side:
    """A Side of float arrays; a 1-D pair is one judge."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if num.ndim == 1:
        num, den = num[:, None], den[:, None]
    if num.shape != den.shape:
        raise ValueError("a side's numerators and denominators need the same shape")
    return num, den


def judge_figure(num_sums: np.ndarray, den_sums: np.ndarray) -> np.ndarray:
    """The figure from sums over instances, judges on the last axis: mean over judges with data of 100 x num / den.

    NaN where no judge has data."""
    has = den_sums > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(has, num_sums / np.where(has, den_sums, 1), 0.0)
    counted = has.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counted > 0, 100.0 * rates.sum(axis=-1) / np.maximum(counted, 1), np.nan)


def figure(side: Side) -> float | None:
    """The side's figure in percent (None with no data)."""
    num, den = side
    value = judge_figure(num.sum(axis=0), den.sum(axis=0))
    return None if np.isnan(value) else float(value)


def figure_interval(
    side: Side, *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED, level: float = 0.95
) -> tuple[float, float] | None:
    """Expanded percentile bootstrap interval (INSTANCE_INTERVAL_METHOD) of the figure over the side's instances with data
    (judge mean recomputed in each resample): runs.metrics.checklist.with_bootstrap's interval for the same counts."""
    num, den = _rows_with_data(side)
    return bootstrap_interval(
        len(num),
        lambda weights: judge_figure(weights @ num, weights @ den),
        resamples=resamples,
        seed=seed,
        level=level,
        method=INSTANCE_INTERVAL_METHOD,
    )


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p: the binomial test of min(b, c) among b + c discordant instances at p = 0.5.

    Exact integer arithmetic: 2 x sum_{k <= min(b, c)} C(b + c, k) / 2^(b + c), at most 1."""
    n, low = b + c, min(b, c)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(low + 1))
    return min(1.0, 2 * tail / 2**n)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the given order: the i-th smallest times (m - i + 1), made
    non-decreasing, at most 1. A comparison is significant at alpha when its adjusted p is <= alpha. NaN stays NaN
    and is not counted in m."""
    values = np.asarray(pvalues, dtype=float)
    adjusted = np.full(values.shape, np.nan)
    defined = np.flatnonzero(~np.isnan(values))
    order = defined[np.argsort(values[defined], kind="stable")]
    m = len(order)
    running = 0.0
    for i, at in enumerate(order):
        running = max(running, min(1.0, (m - i) * values[at]))
        adjusted[at] = running
    return adjusted.tolist()


def paired_difference(
    a: Side,
    b: Side,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
    permutations: int = PERMUTATIONS,
) -> PairedDifference:
    """B - A with its paired bootstrap interval and p (see PairedDifference).

    The sides are on the same instance and judge axes. An instance counts when both sides have data on it, a judge
    when both have data under it on those instances. The p is McNemar's exact test when the outcome is pass/fail:
    one judge, and on every shared instance one outcome per side (den 1, num 0 or 1); otherwise a seeded paired
    permutation test (A and B swapped within each instance, p = (1 + #|permuted| >= |observed|) / (1 + #permuted)).
    Several judges pooled take the permutation test; one judge's column alone may take McNemar's."""
    (a_num, a_den), (b_num, b_den) = _restricted(a, b)
    shared = np.flatnonzero((a_den > 0).any(axis=1))
    if shared.size == 0:
        return PairedDifference(None, None, None, None, None, 0, None, "")
    a_num, a_den, b_num, b_den = (x[shared] for x in (a_num, a_den, b_num, b_den))
    fig_a = float(judge_figure(a_num.sum(axis=0), a_den.sum(axis=0)))
    fig_b = float(judge_figure(b_num.sum(axis=0), b_den.sum(axis=0)))

    def diff(weights: np.ndarray) -> np.ndarray:
        return judge_figure(weights @ b_num, weights @ b_den) - judge_figure(weights @ a_num, weights @ a_den)

    interval = bootstrap_interval(
        len(shared), diff, resamples=resamples, seed=seed, level=level, method=INSTANCE_INTERVAL_METHOD
    )
    low, high = interval if interval else (None, None)
    tests = _PairTests(*_stacked({"a": a, "b": b}), permutations, seed)
    p, test, b_count, c_count = tests.pvalues(0, [1], permutations)[0]
    return PairedDifference(fig_a, fig_b, fig_b - fig_a, low, high, len(shared), p, test, b_count, c_count)


def tie_groups(
    sides: Mapping[str, Side], *, alpha: float = 0.05, permutations: int = PERMUTATIONS, seed: int = BOOTSTRAP_SEED
) -> dict[str, int | None]:
    """Tie group per model, 1 being the leader's.

    The leader is the model with the best figure (ties by name). Its group is the leader and every other model whose
    paired difference from it (paired_difference's p, on the instances the two share) is not significant at alpha
    under Holm's correction over every pair of the models not yet grouped: choosing the best of them as the leader
    looks at all their pairs, so the family is k (k - 1) / 2 comparisons for k models, of which the leader's are the
    ones tested (holm_rejects). The next group starts at the best model outside, compared with the models still not
    grouped; and so on. A model sharing no instance with a leader cannot be shown different and joins its group. A
    model with no data has no group (None). A permutation p that the first `permutations` draws put near the
    smallest Holm threshold is refined (_PairTests.step_pvalues), so the smallest p the family needs can be reached."""
    names = list(sides)
    figures = {name: figure(side) for name, side in sides.items()}
    groups: dict[str, int | None] = dict.fromkeys(names)
    remaining = sorted((n for n in names if figures[n] is not None), key=lambda n: (-_rounded(figures[n]), n))
    if not remaining:
        return groups
    column = {name: k for k, name in enumerate(names)}
    tests = _PairTests(*_stacked(sides), permutations, seed)
    group = 0
    while remaining:
        group += 1
        leader, others = remaining[0], remaining[1:]
        groups[leader] = group
        if not others:
            break
        family = len(remaining) * (len(remaining) - 1) // 2
        pvalues = tests.step_pvalues(column[leader], [column[name] for name in others], permutations, family, alpha)
        rejected = holm_rejects(pvalues, family, alpha)
        split = []
        for name, significant in zip(others, rejected):
            if significant:
                split.append(name)
            else:
                groups[name] = group
        remaining = split
    return groups


def holm_rejects(pvalues: Sequence[float | None], family: int, alpha: float = 0.05) -> list[bool]:
    """Holm's step-down decisions for the tested comparisons of a family of `family` (at least as many as tested):
    the i-th smallest p (i from 1) is rejected when it and every smaller one are at most alpha / (family - i + 1).
    The family's untested comparisons count as if their p were larger than every tested one: their place in the
    order can only lower a tested comparison's multiplier, so this rejects no more than Holm's procedure over the
    whole family would (with family equal to the tested count it is Holm's procedure). None is never rejected."""
    tested = [(p, k) for k, p in enumerate(pvalues) if p is not None and not math.isnan(p)]
    if family < len(tested):
        raise ValueError("the family has fewer comparisons than were tested")
    rejected = [False] * len(pvalues)
    for i, (p, k) in enumerate(sorted(tested)):
        if p > alpha / (family - i):
            break
        rejected[k] = True
    return rejected


@dataclass(frozen=True)
class Tie:
    """A row's 95% rank interval and tie group (rank_intervals, tie_groups); None for a row without data."""

    rank_interval: tuple[int, int] | None = None
    tie_group: int | None = None

    def fields(self) -> dict:
        """rank_low, rank_high and tie_group, as exports and the API carry them."""
        low, high = self.rank_interval or (None, None)
        return {"rank_low": low, "rank_high": high, "tie_group": self.tie_group}


def one_judge_sides(outcomes: Iterable[tuple[str, int, int]]) -> dict[str, Side]:
    """Per label, its Side under one judge from (label, instance id, passed: 0 or 1) outcomes, one per attempt: per
    instance num = attempts passed and den = attempts, on an instance axis shared by every label (instances in id
    order; den 0 where a label has no attempt); labels sorted."""
    outcomes = list(outcomes)
    axis = {pk: n for n, pk in enumerate(sorted({instance for _, instance, _ in outcomes}))}
    sides: dict[str, Side] = {}
    for label, instance, passed in outcomes:
        if label not in sides:
            sides[label] = (np.zeros((len(axis), 1)), np.zeros((len(axis), 1)))
        num, den = sides[label]
        num[axis[instance], 0] += passed
        den[axis[instance], 0] += 1
    return dict(sorted(sides.items()))


def ties(sides: Mapping[str, Side]) -> dict[str, Tie]:
    """Tie per label: its rank interval and tie group among these sides."""
    ranks, groups = rank_intervals(sides), tie_groups(sides)
    return {label: Tie(ranks[label], groups[label]) for label in sides}


def rank_intervals(
    sides: Mapping[str, Side],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
) -> dict[str, tuple[int, int] | None]:
    """Percentile interval of each model's rank over bootstrap resamples of instances (all models' figures
    recomputed on the same drawn instances).

    A rank is 1 + the number of models with a strictly better figure, so tied figures share the best rank (1, 1, 3).
    A model with no data on a resample's instances takes no rank in it (the others are ranked without it) and that
    resample is left out of its interval. The interval's ends are drawn ranks: the lower end is the highest rank at
    or below the (1 - level) / 2 quantile, the upper the lowest rank at or above the other tail. None for a model
    with no data."""
    names = list(sides)
    if not names:
        return {}
    nums, dens = _stacked(sides)
    with_data = (dens > 0).any(axis=(1, 2))
    nums, dens = nums[with_data], dens[with_data]
    result: dict[str, tuple[int, int] | None] = dict.fromkeys(names)
    if not with_data.any():
        return result
    n, m, j = nums.shape
    weights = bootstrap_weights(n, resamples=resamples, seed=seed).astype(float)
    figures = judge_figure(
        (weights @ nums.reshape(n, -1)).reshape(-1, m, j), (weights @ dens.reshape(n, -1)).reshape(-1, m, j)
    )
    ranks = ranks_of(figures)
    tail = (1 - level) / 2
    for k, name in enumerate(names):
        drawn = ranks[:, k][~np.isnan(ranks[:, k])]
        if drawn.size:
            low = np.quantile(drawn, tail, method="lower")
            high = np.quantile(drawn, 1 - tail, method="higher")
            result[name] = (int(low), int(high))
    return result


def ranks_of(figures: np.ndarray) -> np.ndarray:
    """Ranks along the last axis, 1 = best figure, tied figures (within 1e-9) sharing the best rank; NaN figures
    take NaN and do not count for the others."""
    values = _rounded(figures)
    better = values[..., None, :] > values[..., :, None]
    ranks = 1.0 + better.sum(axis=-1)
    return np.where(np.isnan(values), np.nan, ranks)


def _rounded(values):
    """Figures rounded far below what a page shows, so sums added in another order compare equal."""
    return np.round(values, 9)


def _rows_with_data(side: Side) -> Side:
    num, den = as_side(*side)
    keep = (den > 0).any(axis=1)
    return num[keep], den[keep]


def _paired(a: Side, b: Side) -> tuple[Side, Side]:
    a, b = as_side(*a), as_side(*b)
    if a[0].shape != b[0].shape:
        raise ValueError("paired sides need the same instances and judges (the caller aligns them)")
    return a, b


def _stacked(sides: Mapping[str, Side]) -> tuple[np.ndarray, np.ndarray]:
    """Numerators and denominators of every model, (n_instances, n_models, n_judges)."""
    pairs = [as_side(*side) for side in sides.values()]
    shapes = {num.shape for num, _ in pairs}
    if len(shapes) != 1:
        raise ValueError("every side needs the same instance and judge axes (a model's den is 0 where it has no data)")
    return np.stack([num for num, _ in pairs], axis=1), np.stack([den for _, den in pairs], axis=1)


def _restricted(a: Side, b: Side) -> tuple[Side, Side]:
    """Both sides with every instance one of them lacks, and every judge one of them lacks there, zeroed."""
    (a_num, a_den), (b_num, b_den) = _paired(a, b)
    keep = _kept(a_den, b_den[:, None, :])[:, 0, :]
    return (a_num * keep, a_den * keep), (b_num * keep, b_den * keep)


def _kept(a_den: np.ndarray, others_den: np.ndarray) -> np.ndarray:
    """(n, m, judges) mask of what A, (n, judges), and each of m others, (n, m, judges), both cover: the instances
    both have data on, and under the judges both have there."""
    a_has = a_den[:, None, :] > 0
    o_has = others_den > 0
    shared = (a_has.any(axis=2) & o_has.any(axis=2))[:, :, None]
    judges = (a_has & shared).any(axis=0) & (o_has & shared).any(axis=0)
    return shared & judges[None, :, :]


@lru_cache(maxsize=4)
def _swaps(n: int, permutations: int, seed: int) -> np.ndarray:
    """(permutations x n) 0/1 matrix, 1 where a permutation swaps A and B on an instance (read-only: it is cached,
    as every step of tie_groups draws the same): the first rows of _swap_chunks' stream."""
    swaps = (np.random.default_rng(seed).random((permutations, n)) < 0.5).astype(float)
    swaps.flags.writeable = False
    return swaps


def _more_swaps(n: int, permutations: int, seed: int):
    """`permutations` further swaps beyond _swaps' (a stream of its own, seeded by (seed, 1), one random bit per
    instance and permutation), _CHUNK rows at a time as float32 0/1 matrices."""
    rng = np.random.default_rng([seed, 1])
    for start in range(0, permutations, _CHUNK):
        rows = min(_CHUNK, permutations - start)
        bits = np.unpackbits(rng.integers(0, 256, size=(rows, (n + 7) // 8), dtype=np.uint8), axis=1, count=n)
        yield bits.astype(np.float32)


class _PairTests:
    """The paired tests of models on one instance axis: McNemar's where a pair's outcomes are pass/fail, else the
    permutation test, every pair with the same seeded swaps, so a pair's p is the same alone or among many.

    `nums` and `dens` are (n, models, judges). The swapped sums of every model, swaps @ its counts, are computed
    once, on first need: a pair that covers the same instances and judges takes its permuted difference from them
    by a subtraction; any other pair computes its own."""

    def __init__(self, nums: np.ndarray, dens: np.ndarray, permutations: int, seed: int):
        self.nums, self.dens = nums, dens
        self.seed = seed
        self.swaps = _swaps(len(nums), permutations, seed)
        self._swapped: tuple[np.ndarray, np.ndarray] | None = None

    def pvalues(
        self, a: int, others: list[int], permutations: int
    ) -> list[tuple[float | None, str, int | None, int | None]]:
        """(p, test, b, c) of model `a` against each of `others` with the first `permutations` swaps (see
        paired_difference); (None, "", None, None) for a pair that shares no instance."""
        a_num, a_den = self.nums[:, [a]], self.dens[:, [a]]
        o_num, o_den = self.nums[:, others], self.dens[:, others]
        keep = _kept(a_den[:, 0, :], o_den)
        sides = [a_num * keep, a_den * keep, o_num * keep, o_den * keep]
        compared = keep.any(axis=(0, 2))
        b_counts, c_counts = _discordant(*sides)
        results: list = [(None, "", None, None)] * len(others)
        for k in np.flatnonzero(compared & (b_counts >= 0)):
            b, c = int(b_counts[k]), int(c_counts[k])
            results[k] = (mcnemar_exact(b, c), MCNEMAR, b, c)
        permuted = np.flatnonzero(compared & (b_counts < 0))
        if permuted.size:
            whole = _untouched(keep, a_num, a_den, o_num, o_den)[permuted]
            moved = self._moved(a, [others[k] for k in permuted], whole, *(x[:, permuted] for x in sides), permutations)
            for k, p in zip(permuted, _permutation_pvalues(*(x[:, permuted] for x in sides), *moved)):
                results[k] = (p, PERMUTATION, None, None)
        return results

    def step_pvalues(
        self, a: int, others: list[int], permutations: int, family: int, alpha: float
    ) -> list[float | None]:
        """p of model `a` against each of `others` for a tie-group step whose Holm family has `family` comparisons.

        pvalues' p with `permutations` draws; when the smallest threshold, alpha / family, lies below what those
        draws can give, a permutation p resting on fewer than REFINE_BELOW extreme permutations is refined: with
        ceil(family / alpha) permutations (its first draws, then _more_swaps'), unless Hoeffding's bound on its p
        (_hoeffding_bounds) is already below alpha / family, which then stands for its p. A
        pair stops drawing once its p can no longer reach the step's largest threshold (its p is then the share so far,
        which stays above that threshold)."""
        results = self.pvalues(a, others, permutations)
        needed = math.ceil(family / alpha)
        refine = [
            k
            for k, (p, test, *_) in enumerate(results)
            if test == PERMUTATION and needed > permutations and p * (1 + permutations) < REFINE_BELOW
        ]
        pvalues = [p for p, *_ in results]
        if not refine:
            return pvalues
        a_num, a_den = self.nums[:, [a]], self.dens[:, [a]]
        chosen = [others[k] for k in refine]
        o_num, o_den = self.nums[:, chosen], self.dens[:, chosen]
        keep = _kept(a_den[:, 0, :], o_den)
        sides = [a_num * keep, a_den * keep, o_num * keep, o_den * keep]
        bounds = _hoeffding_bounds(*sides)
        by_draws = [k for k, bound in enumerate(bounds) if not bound <= alpha / family]
        for k, bound in enumerate(bounds):
            pvalues[refine[k]] = bound
        if by_draws:
            picked = [x[:, by_draws] for x in sides]
            count = _DrawCounter(*picked)
            extreme, defined = count(self.swaps, np.arange(len(by_draws)))
            # the largest threshold any of these comparisons can meet: a pair whose p can no longer fall to it,
            # however many permutations follow, stops drawing
            largest = alpha / (family - len(others) + 1)
            active = np.flatnonzero((1 + extreme) / (1 + needed) <= largest)
            for swaps in _more_swaps(len(self.nums), needed - len(self.swaps), self.seed) if active.size else ():
                more_extreme, more_defined = count(swaps, active)
                extreme[active] += more_extreme
                defined[active] += more_defined
                active = active[(1 + extreme[active]) / (1 + needed) <= largest]
                if not active.size:
                    break
            for k, e, d in zip(by_draws, extreme, defined):
                pvalues[refine[k]] = float((1 + e) / (1 + d))
        return pvalues

    def _moved(self, a: int, others: list[int], whole: np.ndarray, a_num, a_den, b_num, b_den, permutations: int):
        """swaps @ (b - a), numerators and denominators, (permutations, pairs, judges)."""
        swaps = self.swaps[:permutations]
        n, m, j = a_num.shape
        moved = [np.empty((permutations, m, j)), np.empty((permutations, m, j))]
        if whole.any():
            swapped = self._swapped_sums()
            chosen = [others[k] for k in np.flatnonzero(whole)]
            for into, sums in zip(moved, swapped):
                into[:, whole] = sums[:permutations, chosen] - sums[:permutations, [a]]
        if not whole.all():
            rest = ~whole
            for into, delta in zip(moved, (b_num - a_num, b_den - a_den)):
                into[:, rest] = _product(swaps, delta[:, rest].reshape(n, -1)).reshape(permutations, -1, j)
        return moved

    def _swapped_sums(self) -> tuple[np.ndarray, np.ndarray]:
        if self._swapped is None:
            n, models, j = self.nums.shape
            self._swapped = tuple(
                _product(self.swaps, x.reshape(n, -1)).reshape(-1, models, j) for x in (self.nums, self.dens)
            )
        return self._swapped


def _untouched(keep, a_num, a_den, o_num, o_den) -> np.ndarray:
    """Per pair: True when masking to what the pair covers leaves both sides' counts as they are."""
    dropped = ~keep
    return ~(
        ((a_num != 0) & dropped).any(axis=(0, 2))
        | ((a_den != 0) & dropped).any(axis=(0, 2))
        | ((o_num != 0) & dropped).any(axis=(0, 2))
        | ((o_den != 0) & dropped).any(axis=(0, 2))
    )


def _discordant(a_num, a_den, b_num, b_den) -> tuple[np.ndarray, np.ndarray]:
    """McNemar's discordant counts per pair (A passed and B failed, A failed and B passed), arrays
    (n, m, judges) zeroed outside what each pair covers; -1 for a pair whose outcomes are not one pass/fail per
    shared instance and side under one judge."""
    one_judge = ((a_den > 0).any(axis=0)).sum(axis=1) == 1
    a_n, a_d, b_n, b_d = (x.sum(axis=2) for x in (a_num, a_den, b_num, b_den))
    rows = (a_d > 0) | (b_d > 0)
    outcome = (a_d == 1) & (b_d == 1) & np.isin(a_n, (0, 1)) & np.isin(b_n, (0, 1))
    binary = one_judge & (outcome | ~rows).all(axis=0)
    b = ((a_n == 1) & (b_n == 0) & rows).sum(axis=0)
    c = ((a_n == 0) & (b_n == 1) & rows).sum(axis=0)
    return np.where(binary, b, -1), np.where(binary, c, -1)


def _permutation_pvalues(a_num, a_den, b_num, b_den, moved_num, moved_den) -> list[float]:
    """Paired permutation p of B - A per pair, from arrays (n, m, judges) zeroed outside what each pair covers and
    the swapped differences swaps @ (b - a) (permutations, m, judges): a permutation moves them from B's sums to
    A's. p = (1 + #|permuted| >= |observed|) / (1 + #permuted), permutations leaving a side without data dropped."""
    extreme, defined = _permutation_counts(a_num, a_den, b_num, b_den, moved_num, moved_den)
    return ((1 + extreme) / (1 + defined)).tolist()


def _permutation_counts(a_num, a_den, b_num, b_den, moved_num, moved_den) -> tuple[np.ndarray, np.ndarray]:
    """Per pair, the permutations at least as far from 0 as the observed difference, and the permutations that
    leave both sides with data (see _permutation_pvalues)."""
    sums = [x.sum(axis=0) for x in (a_num, a_den, b_num, b_den)]
    observed = judge_figure(sums[2], sums[3]) - judge_figure(sums[0], sums[1])
    permuted = judge_figure(sums[2] - moved_num, sums[3] - moved_den) - judge_figure(
        sums[0] + moved_num, sums[1] + moved_den
    )
    defined = ~np.isnan(permuted)
    extreme = (np.abs(permuted) >= np.abs(observed) - _EQUAL) & defined
    return extreme.sum(axis=0), defined.sum(axis=0)


def _sign_flip_terms(a_num, a_den, b_num, b_den) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair, from arrays (n, m, judges) zeroed outside what each pair covers: the instances' terms t_i (n, m),
    whether the sides' denominators are equal on every instance (m,), and whether the pair has a judge in common.

    Swapping A and B on instance i flips the sign of its half-difference, so B's sums are half the pair's totals
    plus sum_i s_i (b_i - a_i) / 2, s_i = +1 or -1 with probability one half. To first order around the pooled rate
    r_j = (A's + B's numerators) / (A's + B's denominators) of judge j, the difference is sum_i s_i t_i with
    t_i = mean over the judges with data of 100 x 2 (dnum_ij - r_j dden_ij) / (the judge's two denominator sums),
    d = b - a: exactly the difference when the two sides' denominators are equal on every instance (the swaps then
    leave them as they are), a first-order expansion otherwise."""
    totals = a_den.sum(axis=0) + b_den.sum(axis=0)
    has = (a_den.sum(axis=0) > 0) & (b_den.sum(axis=0) > 0)
    judges = has.sum(axis=-1)
    safe = np.where(has, totals, 1.0)
    pooled = (a_num.sum(axis=0) + b_num.sum(axis=0)) / safe
    contribution = np.where(has, 2.0 * ((b_num - a_num) - pooled * (b_den - a_den)) / safe, 0.0)
    terms = 100.0 * contribution.sum(axis=-1) / np.maximum(judges, 1)
    return terms, (a_den == b_den).all(axis=(0, 2)), judges > 0


def _hoeffding_bounds(a_num, a_den, b_num, b_den) -> list[float]:
    """Per pair, Hoeffding's bound on the paired permutation p of the sign-flip sum of _sign_flip_terms:
    P(|sum s_i t_i| >= |sum t_i|) <= 2 exp(-(sum t_i)^2 / (2 sum t_i^2)); it holds the exact permutation p where the
    denominators are equal. NaN for a pair with no judge in common."""
    terms, _, judged = _sign_flip_terms(a_num, a_den, b_num, b_den)
    observed = np.maximum(np.abs(terms.sum(axis=0)) - _EQUAL, 0.0)
    spread = (terms**2).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        bounds = np.minimum(1.0, 2.0 * np.exp(-(observed**2) / (2.0 * spread)))
    return np.where(judged & (spread > 0), bounds, np.nan).tolist()


class _DrawCounter:
    """Counts, for chosen pairs and a block of swaps, the permutations at least as extreme as the observed
    difference and those that leave both sides with data (see _permutation_counts), from arrays (n, m, judges)
    zeroed outside what each pair covers. A pair whose denominators are equal on every instance takes its sum of
    sign-flipped terms (_sign_flip_terms: exactly its difference, one product per pair instead of one per judge,
    numerators and denominators); any other pair the swapped sums."""

    def __init__(self, a_num, a_den, b_num, b_den):
        self.sides = (a_num, a_den, b_num, b_den)
        self.delta = (b_num - a_num, b_den - a_den)
        self.terms, self.linear, _ = _sign_flip_terms(*self.sides)
        self.observed = self.terms.sum(axis=0)

    def __call__(self, swaps: np.ndarray, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        extreme, defined = np.zeros(len(pairs)), np.zeros(len(pairs))
        linear = self.linear[pairs]
        if linear.any():
            chosen = pairs[linear]
            observed = self.observed[chosen]
            permuted = observed - 2.0 * (swaps @ self.terms[:, chosen])
            extreme[linear] = (np.abs(permuted) >= np.abs(observed) - _EQUAL).sum(axis=0)
            defined[linear] = len(swaps)
        if not linear.all():
            chosen = pairs[~linear]
            n, _, j = self.delta[0].shape
            moved = [_product(swaps, d[:, chosen].reshape(n, -1)).reshape(len(swaps), -1, j) for d in self.delta]
            extreme[~linear], defined[~linear] = _permutation_counts(*(x[:, chosen] for x in self.sides), *moved)
        return extreme, defined


def _product(swaps: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """swaps @ delta, in float32 when every partial sum is a whole number below 2^24 (so exact), else float64."""
    if np.abs(delta).sum(axis=0).max(initial=0) < 2**24 and np.array_equal(delta, np.round(delta)):
        return (swaps.astype(np.float32, copy=False) @ delta.astype(np.float32)).astype(float)
    return swaps @ delta
