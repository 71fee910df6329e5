"""Shared statistics: mean and population std across judges, Kendall's tau, Wilson and bootstrap intervals.

Pure functions over plain numbers (METRICS.md sections 1, 4 and 6); pages and other
metric modules reuse them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

#: METRICS.md: 1,000 resamples with a fixed seed, so an interval is reproducible
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20240601
#: bootstrap_interval's methods: the resamples' plain (1 - level) / 2 percentiles, or Hesterberg's expanded
#: percentiles (the tails narrowed so the interval covers as a t interval on n - 1 degrees of freedom would)
PERCENTILE = "percentile"
EXPANDED_PERCENTILE = "expanded percentile"
#: the method of every interval over instances: the leaderboard's (runs.metrics.checklist.with_bootstrap) and the
#: figures' and paired differences' of runs.metrics.paired (docs/metrics.md, "Are the intervals honest?")
INSTANCE_INTERVAL_METHOD = EXPANDED_PERCENTILE


def mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and population standard deviation (ddof = 0) of the values; (None, None) when empty."""
    vals = [v for v in values if v is not None]
    if not vals:
        return None, None
    mean = sum(vals) / len(vals)
    var = sum((v - mean) ** 2 for v in vals) / len(vals)
    return mean, math.sqrt(var)


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b between two paired sequences (ties handled); None with fewer than two pairs or no variation."""
    if len(x) != len(y):
        raise ValueError("kendall_tau needs two sequences of the same length")
    n = len(x)
    if n < 2:
        return None
    concordant = discordant = ties_x = ties_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = (x[i] > x[j]) - (x[i] < x[j])
            dy = (y[i] > y[j]) - (y[i] < y[j])
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif dx == dy:
                concordant += 1
            else:
                discordant += 1
    denom = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    if denom == 0:
        return None
    return (concordant - discordant) / denom


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float] | None:
    """Wilson score interval for a proportion, as fractions in [0, 1]; None when n is 0."""
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def bootstrap_interval(
    n_units: int,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
    method: str = PERCENTILE,
) -> tuple[float, float] | None:
    """Bootstrap interval over units (instances, samples): the resamples' percentiles at the tails of `method`
    (see interval_tail).

    `statistic` receives a (resamples x n_units) matrix of how often each unit was drawn
    and returns one value per resample (NaN when undefined, which is dropped). None when
    there are no units or no defined resample.
    """
    if n_units <= 0:
        return None
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_units, size=(resamples, n_units))
    weights = np.zeros((resamples, n_units), dtype=np.int64)
    np.add.at(weights, (np.repeat(np.arange(resamples), n_units), draws.ravel()), 1)
    return percentile_interval(statistic(weights), n_units, level=level, method=method)


def percentile_interval(values, n_units: int, *, level: float, method: str) -> tuple[float, float] | None:
    """The resamples' `values` (NaN dropped) at the tails of `method` for `n_units` (interval_tail); None when no
    resample is defined."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None
    tail = interval_tail(n_units, level, method) * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def interval_tail(n_units: int, level: float = 0.95, method: str = PERCENTILE) -> float:
    """The share of resamples left out below (and above) a two-sided bootstrap interval at `level`.

    PERCENTILE: (1 - level) / 2. EXPANDED_PERCENTILE (Hesterberg, "What teachers should know about the bootstrap",
    2015): Phi(-sqrt(n / (n - 1)) x t_{(1 + level) / 2, n - 1}) for n units, always below the plain tail, so the
    interval is wider, most at small n: the spread of the resampled figures is too small by the factors a t
    interval's n - 1 and t quantile correct. With fewer than two units the plain tail (every resample is alike)."""
    plain = (1 - level) / 2
    if method == PERCENTILE or n_units < 2:
        return plain
    if method != EXPANDED_PERCENTILE:
        raise ValueError(f"unknown bootstrap interval method {method!r}")
    return _expanded_tail(n_units, level)


@lru_cache(maxsize=256)
def _expanded_tail(n_units: int, level: float) -> float:
    t = student_t_quantile((1 + level) / 2, n_units - 1)
    return 0.5 * math.erfc(math.sqrt(n_units / (n_units - 1)) * t / math.sqrt(2))


def student_t_quantile(p: float, df: float) -> float:
    """The p quantile of Student's t with df > 0 degrees of freedom, to about 1e-12 relative (bisection on
    student_t_tail; symmetric about 0)."""
    if not 0 < p < 1 or df <= 0:
        raise ValueError("student_t_quantile needs 0 < p < 1 and df > 0")
    if p < 0.5:
        return -student_t_quantile(1 - p, df)
    upper = 1 - p
    low, high = 0.0, 1.0
    while student_t_tail(high, df) > upper:
        low, high = high, 2 * high
    for _ in range(200):
        middle = (low + high) / 2
        if student_t_tail(middle, df) > upper:
            low = middle
        else:
            high = middle
        if high - low <= 1e-13 * high:
            break
    return (low + high) / 2


def student_t_tail(t: float, df: float) -> float:
    """P(T > t) for t >= 0 under Student's t with df degrees of freedom: I_x(df / 2, 1 / 2) / 2 at
    x = df / (df + t^2), the regularized incomplete beta function."""
    return 0.5 * _incomplete_beta(df / (df + t * t), df / 2, 0.5)


def _incomplete_beta(x: float, a: float, b: float) -> float:
    """Regularized incomplete beta I_x(a, b) by its continued fraction (Lentz), on the side where it converges."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(x, a, b) / a
    return 1 - front * _beta_fraction(1 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1) < 1e-15:
            break
    return fraction


def bootstrap_weights(n_units: int, *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """The (resamples x n_units) matrix of how often each unit is drawn in each resample.

    The same matrix bootstrap_interval draws for the same units and seed (the same generator calls), counted with
    one bincount: a statistic computed on it gives the same resamples as bootstrap_interval's."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_units, size=(resamples, n_units))
    cells = (np.arange(resamples)[:, None] * n_units + draws).ravel()
    return np.bincount(cells, minlength=resamples * n_units).reshape(resamples, n_units)
