"""Survival analysis of dialogue lengths (docs/metrics.md#dialogue-survival-km): the Kaplan-Meier estimate with
Greenwood's variance and a 95% pointwise log(-log) band, and the two-sample log-rank test. Pure functions.

An observation is (length, event): a dialogue that lasted `length` turns, and whether it ended because it failed
(`event`, patience exhausted) or was censored (the script or the log ended: it might have gone on). S(t) is the
probability of lasting at least t turns, t = 1, 2, ..., so at turn t it is the Kaplan-Meier product over the event
lengths u < t; with no censored observation it equals the share of dialogues with length >= t exactly (computed in
fractions). Every figure equals statsmodels' SurvfuncRight and survdiff on the same (length, event) pairs.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from statistics import NormalDist

from runs.metrics.dialogue import Dialogue

#: the normal quantile of a two-sided 95% interval
Z95 = NormalDist().inv_cdf(0.975)

#: up to this many curves every pair is tested; beyond it each is tested against the first only
ALL_PAIRS_UP_TO = 8


@dataclass(frozen=True)
class Observation:
    """One dialogue for survival analysis: turns it lasted, and whether it failed (True) or was censored."""

    length: int
    event: bool


@dataclass(frozen=True)
class BandPoint:
    """The Kaplan-Meier S(t) at one turn, in percent, with its Greenwood standard error and 95% band."""

    turn: int
    at_risk: int  # dialogues lasting at least `turn` turns
    percent: float
    se: float  # Greenwood standard error of S(t), in percent
    lower: float
    upper: float


@dataclass(frozen=True)
class LogRank:
    """The log-rank test of two survival curves: chi-square with 1 df and its p (None when no dialogue failed)."""

    first: str
    second: str
    n_first: int
    events_first: int
    n_second: int
    events_second: int
    chi2: float | None
    p: float | None


def observation(dialogue: Dialogue) -> Observation:
    """A dialogue's length and ending: an event when patience ran out, censored otherwise (the script's last turn, a
    harness that stopped early, or an ending not recorded)."""
    return Observation(length=dialogue.length, event=dialogue.ended_by == "patience")


def observations_by(dialogues: Iterable[Dialogue], *, by: str = "model") -> list[tuple[str, list[Observation]]]:
    """(label, observations) per model (pooling its runs) or per run, sorted by label as
    runs.metrics.dialogue.rows_by sorts its rows."""
    buckets: dict[str, list[Observation]] = defaultdict(list)
    for d in dialogues:
        buckets[d.model if by == "model" else d.run].append(observation(d))
    return sorted(buckets.items())


def kaplan_meier(observations: Iterable[Observation]) -> list[BandPoint]:
    """S(t) for t = 1 up to the longest observation, with Greenwood's standard error and a 95% log(-log) band.

    S(t) = prod over event lengths u < t of (1 - d_u / n_u), n_u the observations of length >= u and d_u the events
    of length u; Var S(t) = S(t)^2 sum d_u / (n_u (n_u - d_u)). The band is exp(-exp(log(-log S) -+ z se /
    (S log S))), i.e. S^exp(+-z se / (S |log S|)): it stays within [0, 1]; where S is 1 or 0 it is that point.
    """
    observations = list(observations)
    if not observations:
        return []
    longest = max(o.length for o in observations)
    lengths = Counter(o.length for o in observations)
    events = Counter(o.length for o in observations if o.event)
    lasting = [sum(c for length, c in lengths.items() if length >= u) for u in range(longest + 2)]
    surv, greenwood = Fraction(1), 0.0
    points = []
    for t in range(1, longest + 1):
        n_u, d_u = lasting[t - 1], events[t - 1]  # S(t) takes in the events of length t - 1
        if d_u:
            surv *= 1 - Fraction(d_u, n_u)
            greenwood = greenwood + d_u / (n_u * (n_u - d_u)) if n_u > d_u else math.inf
        points.append(_band_point(t, lasting[t], surv, greenwood))
    return points


def _band_point(turn: int, at_risk: int, surv: Fraction, greenwood: float) -> BandPoint:
    s = float(surv)
    if s in (0.0, 1.0) or math.isinf(greenwood):
        percent = float(100 * surv)
        return BandPoint(turn=turn, at_risk=at_risk, percent=percent, se=0.0, lower=percent, upper=percent)
    se = s * math.sqrt(greenwood)
    spread = math.exp(Z95 * se / (s * abs(math.log(s))))
    return BandPoint(
        turn=turn,
        at_risk=at_risk,
        percent=float(100 * surv),
        se=100 * se,
        lower=100 * s**spread,
        upper=100 * s ** (1 / spread),
    )


def log_rank(first: Sequence[Observation], second: Sequence[Observation]) -> tuple[float | None, float | None]:
    """(chi-square, p) of the two-sample log-rank test, 1 degree of freedom; (None, None) when the variance is 0.

    At each length u with n_u >= 2 observations at risk: O - E = d1_u - n1_u d_u / n_u and
    V = (n1_u / n_u)(1 - n1_u / n_u) d_u (n_u - d_u) / (n_u - 1); chi2 = (sum O - E)^2 / sum V.
    """
    lengths = sorted({o.length for o in (*first, *second)})
    observed_minus_expected = variance = 0.0
    for u in lengths:
        n1 = sum(1 for o in first if o.length >= u)
        n = n1 + sum(1 for o in second if o.length >= u)
        d1 = sum(1 for o in first if o.length == u and o.event)
        d = d1 + sum(1 for o in second if o.length == u and o.event)
        if n < 2:
            continue
        share = n1 / n
        observed_minus_expected += d1 - share * d
        variance += share * (1 - share) * d * (n - d) / (n - 1)
    if variance <= 0:
        return None, None
    chi2 = observed_minus_expected**2 / variance
    return chi2, math.erfc(math.sqrt(chi2 / 2))


def log_rank_table(curves: Sequence[tuple[str, Sequence[Observation]]]) -> list[LogRank]:
    """Log-rank tests between labelled samples: every pair when there are at most ALL_PAIRS_UP_TO, else each against
    the first (at most len - 1 tests); none for fewer than two. p values are not corrected for the number of tests."""
    if len(curves) <= ALL_PAIRS_UP_TO:
        pairs = list(combinations(curves, 2))
    else:
        pairs = [(curves[0], other) for other in curves[1:]]
    tests = []
    for (name_a, a), (name_b, b) in pairs:
        chi2, p = log_rank(a, b)
        tests.append(
            LogRank(
                first=name_a,
                second=name_b,
                n_first=len(a),
                events_first=sum(o.event for o in a),
                n_second=len(b),
                events_second=sum(o.event for o in b),
                chi2=chi2,
                p=p,
            )
        )
    return tests
