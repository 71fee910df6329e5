"""Shared statistics: mean and population std across judges, Kendall's tau, Wilson and bootstrap intervals.

Pure functions over plain numbers (METRICS.md sections 1, 4 and 6); pages and other
metric modules reuse them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

#: METRICS.md: 1,000 resamples with a fixed seed, so an interval is reproducible
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20240601


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
) -> tuple[float, float] | None:
    """Percentile bootstrap interval over units (instances, samples).

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
    values = np.asarray(statistic(weights), dtype=float)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_weights(n_units: int, *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """The (resamples x n_units) matrix of how often each unit is drawn in each resample.

    The same matrix bootstrap_interval draws for the same units and seed (the same generator calls), counted with
    one bincount: a statistic computed on it gives the same resamples as bootstrap_interval's."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_units, size=(resamples, n_units))
    cells = (np.arange(resamples)[:, None] * n_units + draws).ravel()
    return np.bincount(cells, minlength=resamples * n_units).reshape(resamples, n_units)
