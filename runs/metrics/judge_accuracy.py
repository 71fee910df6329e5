"""How often a judge is right, against the adjudicated human labels of a verdict audit (docs/metrics.md, "Judge
accuracy"), weighted back to the population the audit sampled.

A verdict audit samples (attempt, item) pairs stratum by stratum; a sampled pair of stratum s stands for
w = N_s / n_s pairs of the population (N_s frozen when the campaign started, n_s units sampled from it). Every
figure here is a ratio of weighted sums over the audited pairs (a Hajek estimator): accuracy = share of pairs where
judge and humans agree, sensitivity = passes the judge grants among human passes, specificity = fails among human
fails, Cohen's kappa = (p_o - p_e) / (1 - p_e) from the weighted 2x2 table. With equal weights they are scikit-learn's
accuracy_score, recall_score (pos_label 1 and 0) and cohen_kappa_score; with weights, the same with sample_weight.

Intervals: Taylor linearisation for a stratified sample (with-replacement variance within each stratum), then the
normal 95% interval, clipped to the figure's range. A figure's linearised value per unit is z_i (its influence on the
ratio); Var = sum over strata of n_s / (n_s - 1) * sum_i (z_i - mean_s z)^2. A stratum with a single sampled unit adds
no variance (nothing to estimate it from), so a figure resting on such strata is narrower than it should be; the
pages say how many units each figure rests on. A subset (a category, a model) is a domain: its units keep their
weights and the others count as zeros in their strata, so the subset's variance includes how many of it the sample
happened to draw.

Pure: no Django, no database.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile


@dataclass(frozen=True)
class AuditedPair:
    """One audited (attempt, item) for one judge: its stratum and weight, the humans' and the judge's pass/fail.

    `human` / `judge` are None when undecided (the humans could not tell or left it unresolved; the judge found the
    item not applicable): such a pair counts in its stratum's sample size but in no figure.
    """

    stratum: str
    weight: float
    human: bool | None
    judge: bool | None
    category: str = ""
    model: str = ""
    unit: int | None = None


@dataclass(frozen=True)
class Estimate:
    """A figure, its standard error and 95% interval, and the number of decided units it rests on."""

    value: float | None
    se: float | None
    low: float | None
    high: float | None
    n: int


NO_ESTIMATE = Estimate(None, None, None, None, 0)


def weights(population: dict[str, int], sampled: dict[str, int]) -> dict[str, float]:
    """The weight of a unit per stratum: N_s / n_s (population frozen at start over units sampled)."""
    return {s: population.get(s, n) / n for s, n in sampled.items() if n}


def stratified_variance(strata: Sequence[str], z: Sequence[float]) -> float:
    """The with-replacement variance of a total of linearised values z_i drawn stratum by stratum."""
    by: dict[str, list[float]] = defaultdict(list)
    for s, v in zip(strata, z, strict=True):
        by[s].append(v)
    total = 0.0
    for values in by.values():
        n = len(values)
        if n < 2:
            continue
        mean = sum(values) / n
        total += n / (n - 1) * sum((v - mean) ** 2 for v in values)
    return total


def interval(value: float, se: float, low: float, high: float) -> tuple[float, float]:
    return max(low, value - Z95 * se), min(high, value + Z95 * se)


def ratio_influence(
    pairs: Sequence[AuditedPair], y: Callable[[AuditedPair], float], x: Callable[[AuditedPair], float]
) -> tuple[float | None, list[float], int]:
    """The Hajek ratio R = sum(w y) / sum(w x), each pair's linearised value w (y - R x) / sum(w x), and the number of
    pairs with x; (None, [], n) when no pair has x."""
    den = sum(p.weight * x(p) for p in pairs)
    n = sum(1 for p in pairs if x(p))
    if den <= 0:
        return None, [], n
    value = sum(p.weight * y(p) for p in pairs) / den
    return value, [p.weight * (y(p) - value * x(p)) / den for p in pairs], n


def ratio(
    pairs: Sequence[AuditedPair], y: Callable[[AuditedPair], float], x: Callable[[AuditedPair], float]
) -> Estimate:
    """The Hajek ratio sum(w y) / sum(w x) over the pairs, with its linearised standard error and 95% interval."""
    value, z, n = ratio_influence(pairs, y, x)
    if value is None:
        return Estimate(None, None, None, None, n)
    se = math.sqrt(stratified_variance([p.stratum for p in pairs], z))
    return Estimate(value, se, *interval(value, se, 0.0, 1.0), n)


def _decided(p: AuditedPair) -> float:
    return 1.0 if p.human is not None and p.judge is not None else 0.0


def accuracy(pairs: Sequence[AuditedPair]) -> Estimate:
    """Share of decided pairs where the judge says what the humans say."""
    return ratio(pairs, lambda p: _decided(p) * (p.human == p.judge), _decided)


def sensitivity(pairs: Sequence[AuditedPair]) -> Estimate:
    """Passes the judge grants among the human passes (recall of "pass")."""
    return ratio(pairs, lambda p: _decided(p) * bool(p.human and p.judge), lambda p: _decided(p) * bool(p.human))


def specificity(pairs: Sequence[AuditedPair]) -> Estimate:
    """Fails the judge gives among the human fails (recall of "fail")."""
    return ratio(
        pairs,
        lambda p: _decided(p) * (p.human is False and p.judge is False),
        lambda p: _decided(p) * (p.human is False),
    )


def kappa(pairs: Sequence[AuditedPair]) -> Estimate:
    """Cohen's kappa of judge and humans from the weighted 2x2 table, with a linearised interval (clipped to [-1, 1]).

    kappa = (p_o - p_e) / (1 - p_e), p_e = p_h p_j + (1 - p_h)(1 - p_j); its influence per unit is
    (d kappa/d p_o)(a_i - p_o) + (d kappa/d p_e)[(2 p_j - 1)(h_i - p_h) + (2 p_h - 1)(j_i - p_j)], over sum(w).
    """
    d = [_decided(p) for p in pairs]
    den = sum(p.weight * di for p, di in zip(pairs, d, strict=True))
    n = int(sum(d))
    if den <= 0:
        return Estimate(None, None, None, None, n)
    h = [float(bool(p.human)) for p in pairs]
    j = [float(bool(p.judge)) for p in pairs]
    a = [float(hi == ji) for hi, ji in zip(h, j, strict=True)]

    def mean(v):
        return sum(p.weight * di * vi for p, di, vi in zip(pairs, d, v, strict=True)) / den

    po, ph, pj = mean(a), mean(h), mean(j)
    pe = ph * pj + (1 - ph) * (1 - pj)
    if pe >= 1:  # both say one thing only: kappa is undefined (scikit-learn answers nan)
        return Estimate(None, None, None, None, n)
    value = (po - pe) / (1 - pe)
    d_po, d_pe = 1 / (1 - pe), (po - 1) / (1 - pe) ** 2
    z = [
        p.weight * di * (d_po * (ai - po) + d_pe * ((2 * pj - 1) * (hi - ph) + (2 * ph - 1) * (ji - pj))) / den
        for p, di, ai, hi, ji in zip(pairs, d, a, h, j, strict=True)
    ]
    se = math.sqrt(stratified_variance([p.stratum for p in pairs], z))
    return Estimate(value, se, *interval(value, se, -1.0, 1.0), n)


FIGURES = {"accuracy": accuracy, "sensitivity": sensitivity, "specificity": specificity, "kappa": kappa}


@dataclass(frozen=True)
class AccuracyRow:
    """One judge's figures over a set of audited pairs (all of them, one category, or one model)."""

    judge: str
    group: str
    n: int
    disagreements: int
    accuracy: Estimate
    sensitivity: Estimate
    specificity: Estimate
    kappa: Estimate


def in_domain(pairs: Iterable[AuditedPair], keep: Callable[[AuditedPair], bool]) -> list[AuditedPair]:
    """The pairs with those outside the domain made undecided: they stay in their strata as zeros."""
    return [p if keep(p) else AuditedPair(p.stratum, p.weight, None, None, p.category, p.model, p.unit) for p in pairs]


def accuracy_row(judge: str, group: str, pairs: Sequence[AuditedPair]) -> AccuracyRow:
    """Every figure of one judge over the pairs (undecided ones count in their strata only)."""
    decided = [p for p in pairs if p.human is not None and p.judge is not None]
    return AccuracyRow(
        judge=judge,
        group=group,
        n=len(decided),
        disagreements=sum(1 for p in decided if p.human != p.judge),
        **{name: f(pairs) for name, f in FIGURES.items()},
    )


def judge_accuracy(by_judge: dict[str, Sequence[AuditedPair]]) -> dict[str, list[AccuracyRow]]:
    """Per judge: overall ("all"), then per item category and per model (as domains of the same sample).

    {"overall": [row per judge], "category": [rows by judge then category], "model": [rows by judge then model]}
    """
    out: dict[str, list[AccuracyRow]] = {"overall": [], "category": [], "model": []}
    for judge in sorted(by_judge):
        pairs = list(by_judge[judge])
        out["overall"].append(accuracy_row(judge, "all", pairs))
        for facet in ("category", "model"):
            for value in sorted({getattr(p, facet) for p in pairs}):
                domain = in_domain(pairs, lambda p, f=facet, v=value: getattr(p, f) == v)
                out[facet].append(accuracy_row(judge, value or "(none)", domain))
    return out
