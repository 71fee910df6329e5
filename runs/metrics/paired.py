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
    bootstrap_weights,
    percentile_interval,
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
#: Newton steps towards the lambda of Chernoff's bound (_chernoff_bounds)
_CHERNOFF_STEPS = 8
#: Hoeffding's bound above which a pair does not try Chernoff's (a tied pair: no bound would decide it)
_CHERNOFF_FROM = 0.1
#: the most values a lattice pair's sign-flip sum may span for its exact p (_lattice_pvalues)
_LATTICE_SPAN = 1 << 18
#: the first block of permutations a tie-group step draws; each next block is twice as large (step_pvalues)
_FIRST_BLOCK = 64
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
    if has.all():  # every judge has data everywhere: the same figures without the masks
        return 100.0 * (num_sums / den_sums).sum(axis=-1) / den_sums.shape[-1]
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
    return _instance_interval(
        len(num),
        lambda weights: judge_figure(_weighted(weights, num), _weighted(weights, den)),
        resamples=resamples,
        seed=seed,
        level=level,
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
        sums = [_weighted(weights, x) for x in (a_num, a_den, b_num, b_den)]
        return judge_figure(sums[2], sums[3]) - judge_figure(sums[0], sums[1])

    interval = _instance_interval(len(shared), diff, resamples=resamples, seed=seed, level=level)
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
    weights = _cached_weights(n, resamples, seed)
    figures = judge_figure(
        _weighted(weights, nums.reshape(n, -1)).reshape(-1, m, j),
        _weighted(weights, dens.reshape(n, -1)).reshape(-1, m, j),
    )
    ranks = np.sort(ranks_of(figures), axis=0)  # each model's drawn ranks in order, NaN last
    drawn = (~np.isnan(ranks)).sum(axis=0)
    tail = (1 - level) / 2
    # np.quantile's "lower" and "higher" methods: the drawn rank at floor / ceil of (count - 1) x the quantile
    low = np.floor((drawn - 1) * tail).astype(np.intp)
    high = np.ceil((drawn - 1) * (1 - tail)).astype(np.intp)
    at = np.arange(m)
    for k in np.flatnonzero(drawn):
        result[names[k]] = (int(ranks[low[k], at[k]]), int(ranks[high[k], at[k]]))
    return result


def ranks_of(figures: np.ndarray) -> np.ndarray:
    """Ranks along the last axis, 1 = best figure, tied figures (within 1e-9) sharing the best rank; NaN figures
    take NaN and do not count for the others."""
    values = _rounded(np.asarray(figures, dtype=float))
    flat = values.reshape(-1, values.shape[-1])
    order = np.argsort(-flat, axis=1, kind="stable")  # best first, NaN last
    ordered = np.take_along_axis(flat, order, axis=1)
    position = np.broadcast_to(np.arange(flat.shape[1]), flat.shape)
    # a figure's rank is 1 + the position of the first figure equal to it in the order
    starts = np.ones(flat.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    ranks = np.empty(flat.shape)
    np.put_along_axis(ranks, order, 1.0 + first, axis=1)
    return np.where(np.isnan(values), np.nan, ranks.reshape(values.shape))


def _instance_interval(n: int, statistic, *, resamples: int, seed: int, level: float) -> tuple[float, float] | None:
    """runs.metrics.stats.bootstrap_interval over n instances by INSTANCE_INTERVAL_METHOD, on the same drawn
    instances (bootstrap_weights' matrix, kept per n, resamples and seed, as every figure of a comparison draws
    the same), so the same interval."""
    if n <= 0:
        return None
    return percentile_interval(
        statistic(_cached_weights(n, resamples, seed)), n, level=level, method=INSTANCE_INTERVAL_METHOD
    )


@lru_cache(maxsize=16)
def _cached_weights(n: int, resamples: int, seed: int) -> np.ndarray:
    """bootstrap_weights' matrix in float32 (whole numbers up to n: exact), read-only: converting it for each of a
    comparison's 27 figures took a third of its time."""
    weights = bootstrap_weights(n, resamples=resamples, seed=seed).astype(np.float32)
    weights.flags.writeable = False
    return weights


def _weighted(weights: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """weights @ counts, (resamples, columns), in float32 where every sum is a whole number below 2^24 (so exact:
    a resample's weights add up to the instances, so no sum exceeds their number times the largest count), else
    float64."""
    if len(weights[0]) * np.abs(counts).max(initial=0) < 2**24 and np.array_equal(counts, np.round(counts)):
        return (weights.astype(np.float32, copy=False) @ counts.astype(np.float32)).astype(float)
    return weights.astype(float) @ counts


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
    as every step of tie_groups draws the same): the first rows of _swap_chunks' stream. In float32 (0 and 1 are
    exact), as _product multiplies it."""
    swaps = (np.random.default_rng(seed).random((permutations, n)) < 0.5).astype(np.float32)
    swaps.flags.writeable = False
    return swaps


@lru_cache(maxsize=4)
def _packed_swaps(n: int, permutations: int, seed: int) -> np.ndarray:
    """_swaps' rows as bits, np.packbits of each row (read-only: cached)."""
    packed = np.packbits(_swaps(n, permutations, seed) > 0.5, axis=1)
    packed.flags.writeable = False
    return packed


def _more_packed(n: int, permutations: int, seed: int):
    """`permutations` further swaps beyond _swaps' (a stream of its own, seeded by (seed, 1), one random bit per
    instance and permutation), _CHUNK rows at a time as packed bits: (rows, ceil(n / 8)) uint8, instance i the bit
    7 - i % 8 of byte i // 8 (np.unpackbits' order)."""
    rng = np.random.default_rng([seed, 1])
    for start in range(0, permutations, _CHUNK):
        rows = min(_CHUNK, permutations - start)
        yield rng.integers(0, 256, size=(rows, (n + 7) // 8), dtype=np.uint8)


def _more_swaps(n: int, permutations: int, seed: int):
    """_more_packed's swaps as float32 0/1 matrices, (rows, n)."""
    for packed in _more_packed(n, permutations, seed):
        yield _unpacked(packed, n)


def _unpacked(packed: np.ndarray, n: int) -> np.ndarray:
    return np.unpackbits(packed, axis=1, count=n).astype(np.float32)


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
        self.packed = _packed_swaps(len(nums), permutations, seed)
        self._swapped: tuple[np.ndarray, np.ndarray] | None = None
        self._further: list[np.ndarray] = []
        self._rng: np.random.Generator | None = None
        # Every model on every instance under every judge with the same denominators, more than one outcome each
        # (no McNemar): a pair covers everything, its sides' denominators are equal, and its sign-flip terms are
        # B's units less A's, units[i, m] = 100 x mean over judges of model m's numerator / the judge's denominator
        # sum (_sign_flip_terms with A's and B's sums alike); on the lattice when the numerators are whole and every
        # judge's denominator sum is the same, the steps being the numerators summed over judges.
        den_sums = dens[:, :1, :].sum(axis=0)[0]
        self.uniform = bool(dens.size and (dens > 1).any() and (dens > 0).all() and (dens == dens[:, :1, :]).all())
        self.units = self.steps = None
        if self.uniform:
            self.units = 100.0 * (nums / den_sums).sum(axis=2) / nums.shape[2]
            if np.array_equal(nums, np.round(nums)) and (den_sums == den_sums[0]).all():
                self.steps = nums.sum(axis=2)

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
        """p of model `a` against each of `others` for a tie-group step whose Holm family has `family` comparisons:
        each a p, or a bound on it, that gives every Holm decision (holm_rejects) its p would.

        McNemar's p where the outcomes are pass/fail; else the permutation p on the seeded swaps with `permutations`
        draws. When the smallest threshold, alpha / family, lies below what those draws can give: a pair whose
        Chernoff bound (_chernoff_bounds) is already at most alpha / family takes the bound, with no draw; a p
        resting on fewer than REFINE_BELOW extreme permutations is computed exactly when the pair's swaps move whole
        numbers on a lattice (_lattice_pvalues), else drawn again with ceil(family / alpha) permutations (its first
        draws, then the further stream of _more_packed). The draws come in blocks, and a pair stops drawing once its
        p can no longer reach the step's largest threshold however the remaining draws fall: its p is then the
        share so far, above every threshold, so it is rejected neither way and moves no other decision. The many
        clearly tied pairs stop after a few dozen draws; only pairs near a threshold draw on."""
        if self.uniform:
            return self._uniform_step(a, others, permutations, family, alpha)
        sides = self._pair_sides(a, others)
        compared = (sides[1] > 0).any(axis=(0, 2))
        b_counts = c_counts = np.full(len(others), -1)
        # McNemar's needs one outcome per instance and side: denominators of at most 1
        outcomes = np.flatnonzero((sides[1].max(axis=(0, 2)) <= 1) & (sides[3].max(axis=(0, 2)) <= 1))
        if outcomes.size:
            b_counts, c_counts = b_counts.copy(), c_counts.copy()
            b_counts[outcomes], c_counts[outcomes] = _discordant(*(x[:, outcomes] for x in sides))
        pvalues: list[float | None] = [None] * len(others)
        for k in np.flatnonzero(compared & (b_counts >= 0)):
            pvalues[k] = mcnemar_exact(int(b_counts[k]), int(c_counts[k]))
        pending = np.flatnonzero(compared & (b_counts < 0))
        if not pending.size:
            return pvalues
        sides = [x[:, pending] for x in sides]
        found = self._permutation_step(sides, _sign_flip_terms(*sides), None, len(others), permutations, family, alpha)
        for k, p in zip(pending, found):
            pvalues[k] = p
        return pvalues

    def _uniform_step(self, a: int, others: list[int], permutations: int, family: int, alpha: float) -> list[float]:
        """step_pvalues where self.uniform: every pair's sign-flip terms from the units, no masking."""
        terms = self.units[:, others] - self.units[:, [a]]
        judged = np.ones(len(others), dtype=bool)
        steps = None if self.steps is None else self.steps[:, others] - self.steps[:, [a]]
        return self._permutation_step(None, (terms, judged, judged), steps, len(others), permutations, family, alpha)

    def _permutation_step(
        self, sides, flips, steps, tested: int, permutations: int, family: int, alpha: float
    ) -> list[float]:
        """The permutation p of each pair of a tie-group step (see step_pvalues) whose sides (arrays (n, pairs,
        judges) zeroed outside what each pair covers; None when every pair is linear and `steps` says which are
        on the lattice) have the sign-flip terms `flips` (_sign_flip_terms), among `tested` comparisons."""
        pending = np.arange(flips[0].shape[1])
        pvalues: list[float] = [math.nan] * len(pending)
        needed = math.ceil(family / alpha)
        refining = needed > permutations
        # the largest threshold any of these comparisons can meet, and the most draws a pair can take
        largest = alpha / (family - tested + 1)
        most = needed if refining else permutations
        undecided = np.arange(len(pending))
        if refining:
            bounds = _chernoff_of_terms(flips[0], flips[2], alpha / family)
            for k in np.flatnonzero(bounds <= alpha / family):
                pvalues[pending[k]] = float(bounds[k])
            undecided = np.flatnonzero(~(bounds <= alpha / family))
        count = _DrawCounter(sides, flips)
        extreme, defined = np.zeros(len(pending)), np.zeros(len(pending))

        def draw(swaps: np.ndarray, active: np.ndarray, unpacked: np.ndarray | None = None) -> np.ndarray:
            more_extreme, more_defined = count(swaps, active, unpacked)
            extreme[active] += more_extreme
            defined[active] += more_defined
            return active[(1 + extreme[active]) / (1 + most) <= largest]

        active, start, block = undecided, 0, _FIRST_BLOCK
        while active.size and start < permutations:
            active = draw(self.packed[start : start + block], active, self.swaps[start : start + block])
            start, block = start + block, block * 2
        if refining and active.size:
            # refined: a p on the first draws resting on fewer than REFINE_BELOW extreme permutations
            active = active[(1 + extreme[active]) / (1 + defined[active]) * (1 + permutations) < REFINE_BELOW]
            if not active.size:
                exact = np.array([])
            elif sides is None:
                exact = np.full(len(active), np.nan) if steps is None else _lattice_of_steps(steps[:, active])
            else:
                exact = _lattice_pvalues(*(x[:, active] for x in sides))
            for k, p in zip(active, exact):
                if not np.isnan(p):
                    pvalues[pending[k]] = float(p)
            undecided = np.setdiff1d(undecided, active[~np.isnan(exact)])
            active = active[np.isnan(exact)]
            for packed in self._further_swaps(needed - permutations) if active.size else ():
                active = draw(packed, active)
                if not active.size:
                    break
        for k in undecided:
            pvalues[pending[k]] = float((1 + extreme[k]) / (1 + defined[k]))
        return pvalues

    def _further_swaps(self, permutations: int):
        """_more_packed's first `permutations` swaps, its whole chunks kept as drawn, since every step of tie_groups
        draws the same (the first rows of a chunk are what drawing fewer rows gives: one byte after another)."""
        width = (len(self.nums) + 7) // 8
        for start in range(0, permutations, _CHUNK):
            k = start // _CHUNK
            if k == len(self._further):
                if self._rng is None:
                    self._rng = np.random.default_rng([self.seed, 1])
                self._further.append(self._rng.integers(0, 256, size=(_CHUNK, width), dtype=np.uint8))
            yield self._further[k][: permutations - start]

    def _pair_sides(self, a: int, others: list[int]) -> list[np.ndarray]:
        """A's and each other's numerators and denominators, (n, len(others), judges) each, zeroed outside what
        each pair covers."""
        a_num, a_den = self.nums[:, [a]], self.dens[:, [a]]
        o_num, o_den = self.nums[:, others], self.dens[:, others]
        keep = _kept(a_den[:, 0, :], o_den)
        return [a_num * keep, a_den * keep, o_num * keep, o_den * keep]

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


def _chernoff_bounds(a_num, a_den, b_num, b_den) -> list[float]:
    """Per pair, Chernoff's bound on the paired permutation p of the sign-flip sum of _sign_flip_terms:
    P(|sum s_i t_i| >= d) <= 2 exp(-lambda d) prod_i cosh(lambda t_i) for any lambda >= 0, with d = |sum t_i| less
    the 1e-9 by which a permuted difference may fall short and still count. Hoeffding's lambda, d / sum t_i^2, gives
    at most Hoeffding's bound 2 exp(-d^2 / (2 sum t_i^2)) (cosh y <= exp(y^2 / 2)); _CHERNOFF_STEPS Newton steps
    towards the minimising lambda tighten it, and the smallest bound met is kept (each is a bound). It holds the
    exact permutation p where the denominators are equal (the sign-flip sum is then the difference), and is a
    first-order expansion otherwise. NaN for a pair with no judge in common."""
    terms, _, judged = _sign_flip_terms(a_num, a_den, b_num, b_den)
    return _chernoff_of_terms(terms, judged).tolist()


def _chernoff_of_terms(terms: np.ndarray, judged: np.ndarray, enough: float = 0.0) -> np.ndarray:
    """_chernoff_bounds from the sign-flip terms (n, pairs) and whether each pair has a judge in common; the Newton
    steps only for pairs whose Hoeffding bound is at most _CHERNOFF_FROM and above `enough` (the others keep
    Hoeffding's: a tied pair's no bound would bring down, one at most `enough` needs no tighter)."""
    observed = np.maximum(np.abs(terms.sum(axis=0)) - _EQUAL, 0.0)
    spread = (terms**2).sum(axis=0)
    usable = judged & (spread > 0)
    lam = observed / np.where(usable, spread, 1.0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        exponent = np.minimum(0.0, -(observed**2) / (2.0 * np.where(usable, spread, 1.0)))  # Hoeffding's
        hoeffding = 2.0 * np.exp(exponent)
        near = np.flatnonzero(usable & (hoeffding <= _CHERNOFF_FROM) & (hoeffding > enough))
        exponent[near] = _chernoff_exponents(terms[:, near], observed[near], lam[near])
        bounds = np.minimum(1.0, 2.0 * np.exp(exponent))
    return np.where(usable, bounds, np.nan)


def _chernoff_exponents(terms: np.ndarray, observed: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """min over the lambdas met of log(exp(-lambda d) prod_i cosh(lambda t_i)), from Hoeffding's lambda by Newton
    steps on the exponent (convex in lambda)."""
    exponent = np.zeros(len(observed))  # lambda = 0: the bound 2
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for step in range(_CHERNOFF_STEPS + 1):
            y = lam * terms
            magnitude = np.abs(y)
            log_cosh = magnitude + np.log1p(np.exp(-2.0 * magnitude)) - math.log(2.0)
            exponent = np.fmin(exponent, log_cosh.sum(axis=0) - lam * observed)
            if step == _CHERNOFF_STEPS:
                break
            tanh = np.tanh(y)
            slope = (terms * tanh).sum(axis=0) - observed
            curvature = (terms**2 * (1.0 - tanh**2)).sum(axis=0)
            lam = np.where(curvature > 0, np.maximum(lam - slope / curvature, 0.0), 2.0 * lam)
    return exponent


def _lattice_pvalues(a_num, a_den, b_num, b_den) -> np.ndarray:
    """Per pair, from arrays (n, m, judges) zeroed outside what each pair covers, the exact paired permutation p
    where the swaps move whole numbers on a lattice: the two sides' denominators equal on every instance (so the
    permuted difference is the sign-flip sum of _sign_flip_terms), whole numerators, and the pair's denominator
    sum (A's and B's) the same under every judge it has in common. Each instance's term is then a common scale
    times k_i, the sum over judges of B's numerator less A's, and p = P(|sum s_i k_i| >= |sum k_i|) over the 2^n
    equally likely sign flips s, from the distribution of the sum built one instance at a time. NaN for any other
    pair, and for one whose sum spans more than _LATTICE_SPAN values."""
    delta = b_num - a_num
    equal = (a_den == b_den).all(axis=(0, 2))
    totals = a_den.sum(axis=0) + b_den.sum(axis=0)
    judged = (a_den.sum(axis=0) > 0) & (b_den.sum(axis=0) > 0)
    high = np.where(judged, totals, -np.inf).max(axis=1)
    low = np.where(judged, totals, np.inf).min(axis=1)
    steps = (delta * judged[None]).sum(axis=2)
    whole = (np.round(a_num) == a_num).all(axis=(0, 2)) & (np.round(b_num) == b_num).all(axis=(0, 2))
    lattice = equal & whole & judged.any(axis=1) & (high == low)
    return _lattice_of_steps(steps, lattice)


def _lattice_of_steps(steps: np.ndarray, lattice: np.ndarray | bool = True) -> np.ndarray:
    """Per pair, P(|sum s_i k_i| >= |sum k_i|) over the 2^n equally likely sign flips s, from whole-number steps k
    (n, pairs), for the pairs on the lattice and spanning at most _LATTICE_SPAN values; NaN for the others."""
    span = np.abs(steps).sum(axis=0)
    pvalues = np.full(steps.shape[1], np.nan)
    for k in np.flatnonzero(lattice & (2 * span < _LATTICE_SPAN)):
        values = np.sort(np.abs(steps[:, k][steps[:, k] != 0])).astype(np.int64)
        # distribution of the sum over -reach..reach, reach growing with each instance's +-k_i
        dist = np.ones(1)
        for v in values:
            grown = np.zeros(len(dist) + 2 * v)
            grown[: len(dist)] = dist
            grown[2 * v :] += dist
            dist = grown * 0.5
        reach = (len(dist) - 1) // 2
        observed = int(abs(round(steps[:, k].sum())))
        pvalues[k] = (
            1.0
            if observed == 0
            else min(1.0, float(dist[: reach - observed + 1].sum() + dist[reach + observed :].sum()))
        )
    return pvalues


#: the eight bits of every byte value, most significant first (np.unpackbits' order), (256, 8)
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(float)


class _DrawCounter:
    """Counts, for chosen pairs and a block of swaps given as packed bits (_more_packed's layout), the permutations
    at least as extreme as the observed difference and those that leave both sides with data (see
    _permutation_counts), from arrays (n, m, judges) zeroed outside what each pair covers. A pair whose denominators
    are equal on every instance takes its sum of sign-flipped terms (_sign_flip_terms: exactly its difference),
    sum_i s_i t_i = sum t - 2 sum over swapped i of t_i, the swapped part read byte by byte from a table of the 256
    partial sums of each eight instances' terms (28 look-ups instead of 217 products at 217 instances); any other
    pair the swapped sums of its numerators and denominators."""

    def __init__(self, sides, flips: tuple | None = None):
        self.sides = sides
        self.terms, self.linear, _ = flips or _sign_flip_terms(*sides)
        self.observed = self.terms.sum(axis=0)
        self._chosen: tuple[bytes, np.ndarray] | None = None

    def tables(self, chosen: np.ndarray) -> np.ndarray:
        """(bytes, 256, chosen pairs): entry (g, v, p) is the sum of pair p's terms over the instances whose bits are
        set in value v of byte g (kept for the last pairs chosen, since a pair draws block after block)."""
        key = chosen.tobytes()
        if self._chosen is None or self._chosen[0] != key:
            n = len(self.terms)
            width = (n + 7) // 8
            terms = np.zeros((width * 8, len(chosen)))
            terms[:n] = self.terms[:, chosen]
            self._chosen = (key, np.ascontiguousarray(_BYTE_BITS @ terms.reshape(width, 8, -1)))
        return self._chosen[1]

    def __call__(
        self, packed: np.ndarray, pairs: np.ndarray, swaps: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(extreme, defined) per pair of `pairs` over the swaps `packed`; `swaps`, the same swaps as a 0/1 float
        matrix when the caller has it (the first draws), is multiplied instead of read from the byte tables:
        one product, for the short blocks of the first draws."""
        extreme, defined = np.zeros(len(pairs)), np.zeros(len(pairs))
        linear = self.linear[pairs]
        if linear.any():
            chosen = pairs[linear]
            observed = self.observed[chosen]
            if swaps is not None:
                swapped = swaps @ self.terms[:, chosen]
            else:
                swapped = np.zeros((len(packed), len(chosen)))
                for g, table in enumerate(self.tables(chosen)):
                    swapped += table[packed[:, g]]
            permuted = observed - 2.0 * swapped
            extreme[linear] = (np.abs(permuted) >= np.abs(observed) - _EQUAL).sum(axis=0)
            defined[linear] = len(packed)
        if not linear.all():
            chosen = pairs[~linear]
            a_num, a_den, b_num, b_den = (x[:, chosen] for x in self.sides)
            n, _, j = a_num.shape
            swaps = _unpacked(packed, n) if swaps is None else swaps
            moved = [
                _product(swaps, d.reshape(n, -1)).reshape(len(swaps), -1, j) for d in (b_num - a_num, b_den - a_den)
            ]
            extreme[~linear], defined[~linear] = _permutation_counts(a_num, a_den, b_num, b_den, *moved)
        return extreme, defined


def _product(swaps: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """swaps @ delta, in float32 when every partial sum is a whole number below 2^24 (so exact), else float64."""
    if np.abs(delta).sum(axis=0).max(initial=0) < 2**24 and np.array_equal(delta, np.round(delta)):
        return (swaps.astype(np.float32, copy=False) @ delta.astype(np.float32)).astype(float)
    return swaps @ delta
