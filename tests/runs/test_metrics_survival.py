"""Kaplan-Meier bands and the log-rank test (runs.metrics.survival) against statsmodels on fixtures, to 1e-9."""

import math
import random

import numpy as np
import pytest
from scipy.stats import norm

from runs.metrics.dialogue import Dialogue, TurnRow, survival_curve
from runs.metrics.survival import (
    ALL_PAIRS_UP_TO,
    Observation,
    kaplan_meier,
    log_rank,
    log_rank_table,
    observation,
)

survfunc = pytest.importorskip("statsmodels.duration.survfunc")

TOL = 1e-9


def _sample(seed: int, n: int, *, longest: int = 12, censored: float = 0.3) -> list[Observation]:
    rng = random.Random(seed)
    return [Observation(length=rng.randint(0, longest), event=rng.random() >= censored) for _ in range(n)]


FIXTURES = {
    "censored": _sample(1, 40),
    "heavily censored": _sample(2, 25, censored=0.7),
    "no censoring": _sample(3, 30, censored=0.0),
    "ties and zero length": [Observation(0, True), Observation(0, False), *[Observation(3, True)] * 4]
    + [Observation(3, False), Observation(5, True), Observation(5, False)],
    "all fail at the end": [Observation(2, False), Observation(4, True), Observation(4, True)],
    "large": _sample(4, 300, longest=40),
}


def _reference_band(observations):
    """statsmodels' S, Greenwood se and the log(-log) band (its cloglog transform) at the event lengths."""
    time = np.array([o.length for o in observations], dtype=float)
    status = np.array([o.event for o in observations], dtype=float)
    sf = survfunc.SurvfuncRight(time, status)
    s, se = sf.surv_prob, sf.surv_prob_se
    with np.errstate(divide="ignore", invalid="ignore"):
        g, gprime = np.log(-np.log(s)), -1 / (s * np.log(s))
        z = norm.ppf(0.975)
        lower = np.exp(-np.exp(g + z * gprime * se))
        upper = np.exp(-np.exp(g - z * gprime * se))
    return sf.surv_times, s, se, lower, upper


@pytest.mark.parametrize("name", FIXTURES)
def test_kaplan_meier_equals_statsmodels(name):
    observations = FIXTURES[name]
    times, s, se, lower, upper = _reference_band(observations)
    points = kaplan_meier(observations)
    assert [p.turn for p in points] == list(range(1, max(o.length for o in observations) + 1))
    for p in points:
        earlier = np.flatnonzero(times <= p.turn - 1)  # S(t) = P(length >= t): the events of length < t
        assert p.at_risk == sum(1 for o in observations if o.length >= p.turn)
        if not len(earlier):
            assert (p.percent, p.se, p.lower, p.upper) == (100, 0, 100, 100)
            continue
        j = earlier[-1]
        assert p.percent / 100 == pytest.approx(s[j], abs=TOL)
        if s[j] == 0:
            assert (p.lower, p.upper) == (0, 0)
            continue
        assert p.se / 100 == pytest.approx(se[j], abs=TOL)
        assert p.lower / 100 == pytest.approx(lower[j], abs=TOL)
        assert p.upper / 100 == pytest.approx(upper[j], abs=TOL)
        assert p.lower <= p.percent <= p.upper


@pytest.mark.parametrize("seed", range(5))
def test_without_censoring_kaplan_meier_is_the_survival_curve_exactly(seed):
    observations = _sample(seed, 50, censored=0.0)
    curve = survival_curve(o.length for o in observations)
    points = kaplan_meier(observations)
    assert [(p.turn, p.at_risk, p.percent) for p in points] == [(c.turn, c.alive, c.percent) for c in curve]


def test_censoring_keeps_the_curve_up():
    """A dialogue the script ended is not counted as failed: S(t) under censoring is at least the share alive."""
    observations = FIXTURES["heavily censored"]
    curve = survival_curve(o.length for o in observations)
    for p, c in zip(kaplan_meier(observations), curve):
        assert p.percent >= c.percent - 1e-12


def test_observation_reads_the_ending():
    turns = (TurnRow(turn=1, n_applicable=1, n_passed=0),)
    assert observation(Dialogue(key=1, turns=turns, ended_by="patience")) == Observation(1, True)
    for ending in ("script_end", "stopped", ""):
        assert observation(Dialogue(key=1, turns=turns, ended_by=ending)) == Observation(1, False)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("censored", "heavily censored"),
        ("censored", "no censoring"),
        ("ties and zero length", "all fail at the end"),
        ("large", "censored"),
        ("no censoring", "ties and zero length"),
    ],
)
def test_log_rank_equals_statsmodels_survdiff(a, b):
    first, second = FIXTURES[a], FIXTURES[b]
    both = [*first, *second]
    chi2, p = survfunc.survdiff(
        np.array([o.length for o in both], dtype=float),
        np.array([o.event for o in both], dtype=float),
        np.array([0] * len(first) + [1] * len(second)),
    )
    mine_chi2, mine_p = log_rank(first, second)
    assert mine_chi2 == pytest.approx(chi2, abs=TOL)
    assert mine_p == pytest.approx(p, abs=TOL)
    assert log_rank(second, first)[0] == pytest.approx(chi2, abs=TOL)


def test_log_rank_without_events_has_no_figure():
    censored = [Observation(2, False), Observation(3, False)]
    assert log_rank(censored, censored) == (None, None)


def test_log_rank_table_pairs_are_bounded():
    few = [(f"m{i}", FIXTURES["censored"]) for i in range(3)]
    assert [(t.first, t.second) for t in log_rank_table(few)] == [("m0", "m1"), ("m0", "m2"), ("m1", "m2")]
    many = [(f"m{i}", FIXTURES["censored"]) for i in range(ALL_PAIRS_UP_TO + 4)]
    tests = log_rank_table(many)
    assert [(t.first, t.second) for t in tests] == [("m0", f"m{i}") for i in range(1, len(many))]
    assert log_rank_table(few[:1]) == []
    t = log_rank_table(few)[0]
    assert (t.n_first, t.events_first) == (40, sum(o.event for o in FIXTURES["censored"]))
    assert t.chi2 == pytest.approx(0, abs=TOL) and t.p == pytest.approx(1, abs=TOL)
    assert not math.isnan(t.p)
