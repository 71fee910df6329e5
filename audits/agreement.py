"""Agreement statistics of audit campaigns (METRICS.md section 6): pure functions, then one reader.

Per criterion, between the first two labels of each unit labelled at least twice:
observed agreement, Cohen's kappa with a 95% percentile bootstrap interval over units
(runs.metrics.stats.bootstrap_interval: 1,000 resamples, fixed seed) and the confusion
table; over every label of a unit, for any number of annotators and units some of them
skipped: Krippendorff's alpha (nominal) with the same bootstrap interval, and Gwet's AC1
(stable when one answer dominates, as "the item is fine" does). Per campaign and per
stratum. Per stratum: the rate of units whose final status is valid, with a Wilson interval; the
population estimate weights each stratum's rate by its share of the population.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from audits.models import FinalStatus, Label
from audits.rubrics import rubric_for
from runs.metrics.stats import bootstrap_interval, wilson_interval

#: fewer paired units than this: the page warns that the figure is unstable
SMALL_N = 30


def observed_agreement(a: Sequence, b: Sequence) -> float | None:
    """Share of units on which the two labels are equal; None without units."""
    if not a:
        return None
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def cohen_kappa(a: Sequence, b: Sequence, labels: Sequence | None = None) -> float | None:
    """Cohen's kappa (po - pe) / (1 - pe); None without units, and None (undefined, as scikit-learn's NaN) when
    chance agreement is 1: both raters used one and the same category for every unit."""
    if not a:
        return None
    labels = list(labels) if labels is not None else sorted(set(a) | set(b), key=str)
    counts = _confusion_counts(a, b, labels)
    kappa = _kappa_from_counts(counts[None, :, :])[0]
    return None if np.isnan(kappa) else float(kappa)


def _confusion_counts(a, b, labels) -> np.ndarray:
    index = {v: i for i, v in enumerate(labels)}
    m = np.zeros((len(labels), len(labels)))
    for x, y in zip(a, b, strict=True):
        m[index[x], index[y]] += 1
    return m


def _kappa_from_counts(counts: np.ndarray) -> np.ndarray:
    """Kappa for each (k x k) table in a stack; NaN for an empty table and where chance agreement pe is 1."""
    n = counts.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(counts, axis1=1, axis2=2) / n
        pe = (counts.sum(axis=2) * counts.sum(axis=1)).sum(axis=1) / (n * n)
        kappa = np.where(pe < 1, (po - pe) / np.where(pe < 1, 1 - pe, 1), np.nan)
    return np.where(n > 0, kappa, np.nan)


def kappa_interval(a: Sequence, b: Sequence, labels: Sequence | None = None, **kwargs) -> tuple[float, float] | None:
    """95% percentile bootstrap interval of Cohen's kappa over units."""
    if not a:
        return None
    labels = list(labels) if labels is not None else sorted(set(a) | set(b), key=str)
    k = len(labels)
    index = {v: i for i, v in enumerate(labels)}
    onehot = np.zeros((len(a), k * k))
    for u, (x, y) in enumerate(zip(a, b, strict=True)):
        onehot[u, index[x] * k + index[y]] = 1

    def statistic(weights: np.ndarray) -> np.ndarray:
        return _kappa_from_counts((weights @ onehot).reshape(-1, k, k))

    return bootstrap_interval(len(a), statistic, **kwargs)


def _unit_coincidences(units: Sequence[Sequence], labels: Sequence) -> np.ndarray:
    """Per unit with at least two values, its contribution to Krippendorff's coincidence matrix, flattened:
    o_ck = (ordered pairs of its values (c, k) from different annotators) / (m - 1)."""
    index = {v: i for i, v in enumerate(labels)}
    k = len(labels)
    rows = []
    for values in units:
        m = len(values)
        if m < 2:
            continue
        counts = np.zeros(k)
        for v in values:
            counts[index[v]] += 1
        rows.append(((np.outer(counts, counts) - np.diag(counts)) / (m - 1)).ravel())
    return np.array(rows).reshape(-1, k * k)


def _alpha_from_coincidences(o: np.ndarray, k: int) -> np.ndarray:
    """Nominal alpha for each flattened (k x k) coincidence matrix in a stack:
    1 - (n - 1) * (off-diagonal total) / (n^2 - sum n_c^2); NaN where undefined (one value only, or n <= 1)."""
    o = o.reshape(-1, k, k)
    n = o.sum(axis=(1, 2))
    marginals = o.sum(axis=2)
    disagree = n - np.trace(o, axis1=1, axis2=2)
    expected = n * n - (marginals * marginals).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1 - (n - 1) * disagree / expected
    return np.where((expected > 1e-12) & (n > 1), alpha, np.nan)


def _labels_of(units: Sequence[Sequence], labels: Sequence | None) -> list:
    seen = {v for u in units for v in u}
    labels = list(labels) if labels is not None else []
    return labels + sorted(seen - set(labels), key=str)


def krippendorff_alpha(units: Sequence[Sequence], labels: Sequence | None = None) -> float | None:
    """Krippendorff's alpha for nominal values; each unit lists the values its annotators gave, any number of
    annotators, skipped ones simply absent (units with one value carry no pair and are ignored).
    None when undefined: fewer than two pairable values, or a single value used throughout."""
    labels = _labels_of(units, labels)
    o = _unit_coincidences(units, labels)
    if not len(o):
        return None
    alpha = _alpha_from_coincidences(o.sum(axis=0), len(labels))[0]
    return None if np.isnan(alpha) else float(alpha)


def alpha_interval(units: Sequence[Sequence], labels: Sequence | None = None, **kwargs) -> tuple[float, float] | None:
    """95% percentile bootstrap interval of Krippendorff's alpha over units (those with two values or more)."""
    labels = _labels_of(units, labels)
    o = _unit_coincidences(units, labels)
    if not len(o):
        return None
    return bootstrap_interval(len(o), lambda weights: _alpha_from_coincidences(weights @ o, len(labels)), **kwargs)


def gwet_ac1(units: Sequence[Sequence], labels: Sequence) -> float | None:
    """Gwet's AC1 for any number of annotators per unit, skipped ones absent (Gwet 2008; Handbook of
    Inter-Rater Reliability, 4th ed., chapter 4): (pa - pe) / (1 - pe) where

    pa = mean over units with r_i >= 2 values of sum_k r_ik (r_ik - 1) / (r_i (r_i - 1)),
    pi_k = mean over units with a value of r_ik / r_i, pe = sum_k pi_k (1 - pi_k) / (q - 1),

    q the number of categories of the scale (`labels`, plus any other value seen). Unlike kappa
    it stays stable when one answer dominates. None without a unit labelled twice, or q < 2.
    """
    labels = _labels_of(units, labels)
    q = len(labels)
    rated = [u for u in units if u]
    paired = [u for u in rated if len(u) >= 2]
    if not paired or q < 2:
        return None
    pa = sum(sum(n * (n - 1) for n in Counter(u).values()) / (len(u) * (len(u) - 1)) for u in paired) / len(paired)
    pi = {c: sum(u.count(c) / len(u) for u in map(list, rated)) / len(rated) for c in labels}
    pe = sum(p * (1 - p) for p in pi.values()) / (q - 1)
    return float((pa - pe) / (1 - pe)) if pe < 1 else None


@dataclass
class CriterionAgreement:
    """Agreement figures of one criterion over the units labelled by at least two annotators."""

    criterion: str
    labels: list[str]
    n: int
    agreement: float | None
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    alpha: float | None
    alpha_ci: tuple[float, float] | None
    ac1: float | None
    annotators: int  # the most labels any unit has
    confusion: list[list[int]]  # rows: slot-1 label, columns: slot-2 label, in `labels` order
    small: bool = False


def criterion_agreement(
    criterion: str, labels: Sequence[str], units: Sequence[Sequence[str]], **kwargs
) -> CriterionAgreement:
    """Figures for one criterion: each unit gives its values in slot order; kappa uses the first two,
    Krippendorff's alpha and Gwet's AC1 every value (units some annotators skipped included)."""
    pairs = [u for u in units if len(u) >= 2]
    a = [u[0] for u in pairs]
    b = [u[1] for u in pairs]
    labels = _labels_of(units, labels)
    confusion = _confusion_counts(a, b, labels).astype(int).tolist() if pairs else [[0] * len(labels) for _ in labels]
    return CriterionAgreement(
        criterion=criterion,
        labels=labels,
        n=len(pairs),
        agreement=observed_agreement(a, b),
        kappa=cohen_kappa(a, b, labels),
        kappa_ci=kappa_interval(a, b, labels, **kwargs),
        alpha=krippendorff_alpha(pairs, labels),
        alpha_ci=alpha_interval(pairs, labels, **kwargs),
        ac1=gwet_ac1(units, labels),
        annotators=max((len(u) for u in units), default=0),
        confusion=confusion,
        small=len(pairs) < SMALL_N,
    )


@dataclass
class StratumRate:
    """Share of a stratum's decided units whose final status is valid, with a Wilson 95% interval."""

    stratum: str
    population: int
    sampled: int
    decided: int
    valid: int
    rate: float | None
    interval: tuple[float, float] | None
    small: bool = False


@dataclass
class PopulationEstimate:
    """Valid rate of the population: stratum rates weighted by population share (strata with decided units only)."""

    rate: float | None
    interval: tuple[float, float] | None  # normal approximation of the stratified estimator, clipped to [0, 1]
    covered_share: float  # share of the population in strata that have a decided unit
    unweighted: float | None = None


def stratum_rates(population: dict[str, int], outcomes: Sequence[tuple[str, bool | None]]) -> list[StratumRate]:
    """Per stratum: (stratum, valid) of each sampled unit, None while undecided or unresolved."""
    sampled: Counter = Counter()
    decided: Counter = Counter()
    valid: Counter = Counter()
    for stratum, ok in outcomes:
        sampled[stratum] += 1
        if ok is not None:
            decided[stratum] += 1
            valid[stratum] += ok
    out = []
    for stratum in sorted(set(population) | set(sampled)):
        n, k = decided[stratum], valid[stratum]
        out.append(
            StratumRate(
                stratum,
                population.get(stratum, 0),
                sampled[stratum],
                n,
                k,
                k / n if n else None,
                wilson_interval(k, n),
                small=n < 10,
            )
        )
    return out


def population_estimate(rates: Sequence[StratumRate]) -> PopulationEstimate:
    """Stratified estimate sum(W_s p_s) / sum(W_s) over strata with decided units, W_s = N_s / N (METRICS.md section 6)."""
    total = sum(r.population for r in rates)
    used = [r for r in rates if r.decided and r.population]
    decided = sum(r.decided for r in rates)
    unweighted = sum(r.valid for r in rates) / decided if decided else None
    if not used or not total:
        return PopulationEstimate(None, None, 0.0, unweighted)
    covered = sum(r.population for r in used)
    weights = [r.population / covered for r in used]
    rate = sum(w * r.rate for w, r in zip(weights, used))
    variance = sum(w * w * r.rate * (1 - r.rate) / r.decided for w, r in zip(weights, used))
    half = 1.959963984540054 * math.sqrt(variance)
    return PopulationEstimate(rate, (max(0.0, rate - half), min(1.0, rate + half)), covered / total, unweighted)


@dataclass
class CampaignAgreement:
    """Everything the agreement dashboard and API show for a campaign."""

    criteria: list[CriterionAgreement]
    per_stratum: dict[str, list[CriterionAgreement]]
    valid_agreement: CriterionAgreement
    rates: list[StratumRate]
    estimate: PopulationEstimate
    annotators_per_unit: int
    notes: list[str] = field(default_factory=list)


def campaign_agreement(campaign) -> CampaignAgreement:
    """Read a campaign's labels (two queries) and compute its agreement figures."""
    rubric = rubric_for(campaign.subject)
    by_unit: dict[int, list] = defaultdict(list)
    stratum_of: dict[int, str] = {}
    rows = (
        Label.objects.filter(assignment__unit__campaign=campaign)
        .values_list("assignment__unit_id", "assignment__unit__stratum", "assignment__slot", "values", "valid")
        .order_by("assignment__unit_id", "assignment__slot")
    )
    for unit_id, stratum, _slot, values, ok in rows:
        by_unit[unit_id].append((values, ok))
        stratum_of[unit_id] = stratum

    def units_for(name, ids):
        return [[str(v.get(name)) for v, _ in by_unit[u]] for u in ids]

    ids = sorted(by_unit)
    criteria = [criterion_agreement(c.name, c.values, units_for(c.name, ids)) for c in rubric.criteria]
    per_stratum = {}
    for stratum in sorted(set(stratum_of.values())):
        sids = [u for u in ids if stratum_of[u] == stratum]
        per_stratum[stratum] = [
            criterion_agreement(c.name, c.values, units_for(c.name, sids), resamples=200) for c in rubric.criteria
        ]
    valid_units = [["valid" if ok else "invalid" for _, ok in by_unit[u]] for u in ids]
    valid = criterion_agreement("valid (all criteria met)", ["valid", "invalid"], valid_units)
    rates = stratum_rates(campaign.population or {}, _outcomes(campaign))
    return CampaignAgreement(
        criteria, per_stratum, valid, rates, population_estimate(rates), campaign.annotators_per_unit
    )


def _outcomes(campaign) -> list[tuple[str, bool | None]]:
    """(stratum, valid) of each unit of a campaign: True / False once decided, None otherwise."""
    decided = {FinalStatus.VALID: True, FinalStatus.INVALID: False}
    return [
        (stratum, decided.get(status))
        for stratum, status in campaign.units.values_list("stratum", "final_status").order_by()
    ]


def rate_sd(valid: int, decided: int) -> float:
    """Standard deviation of a stratum's valid / invalid outcome, sqrt(p (1 - p)), for the Neyman allocation.

    p is the smoothed rate (valid + 1) / (decided + 2), so a pilot stratum where every unit
    agreed still gets some spread (a raw 0 would give it no unit at all).
    """
    p = (valid + 1) / (decided + 2)
    return math.sqrt(p * (1 - p))


def pilot_sd(campaign) -> dict[str, float]:
    """Per stratum of a (pilot) campaign: the standard deviation of its valid rate (`rate_sd`) over decided units."""
    return {
        r.stratum: round(rate_sd(r.valid, r.decided), 4)
        for r in stratum_rates(campaign.population or {}, _outcomes(campaign))
        if r.sampled
    }
