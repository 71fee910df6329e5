"""Human-calibrated ISR and CSR: prediction-powered inference (Angelopoulos et al., 2023) from a verdict audit
(docs/metrics.md, "Calibrated leaderboard").

For one model and one judge, the judge scored N (attempt, item) pairs (its pass/fail verdicts; "not applicable" is
no pair) and the audit labelled a stratified sample of the population of pairs. CSR is the share of pairs the
humans would call satisfied:

    CSR_pp = r + D,   r = the judge's pass rate over all N pairs,
                      D = the weighted mean of (human - judge) over the model's audited pairs (the rectifier),
    Var = r (1 - r) / N + Var(D),   95% interval CSR_pp +- 1.96 sqrt(Var), clipped to [0, 1].

D is a Hajek ratio over the model's domain of the stratified sample, its variance linearised
(runs.metrics.judge_accuracy). Pairs the humans could not tell, or left unresolved, are left out of D.

ISR needs every item of an attempt, which an audit of pairs rarely has, so the item-level correction is carried to
the attempt: from the audited pairs, q1 = P(human pass | judge pass) and q0 = P(human pass | judge fail) (Hajek
ratios of the model's domain); an attempt the judge gave n1 passes and n0 fails passes under the humans with
probability q1^n1 q0^n0, if the judge's errors on one attempt's items are independent given its verdicts. ISR_pp is
the mean of that probability over the judge's counted attempts; its variance is the delta method's
g1^2 Var(q1) + g0^2 Var(q0) + 2 g1 g0 Cov (one linearised value per audited pair, g the derivatives of the mean)
plus the variance of the per-attempt probabilities over the attempts. Without audited passes and fails of this judge
on this model there is no ISR_pp (and the page says so).

Pure: no Django, no database.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from runs.metrics.judge_accuracy import AuditedPair, Estimate, in_domain, interval, ratio_influence, stratified_variance
from runs.metrics.rank_change import ranks
from runs.metrics.stats import kendall_tau


@dataclass(frozen=True)
class Calibrated:
    """One model under one judge: the judge's raw ISR / CSR, their calibrated estimates, and the audit behind them."""

    model: str
    judge: str
    raw_isr: float | None
    raw_csr: float | None
    csr: Estimate
    isr: Estimate
    rectifier: float | None
    n_pairs: int
    n_attempts: int
    n_audited: int


def _decided(p: AuditedPair) -> float:
    return 1.0 if p.human is not None and p.judge is not None else 0.0


def csr_pp(n_pass: int, n_fail: int, audited: Sequence[AuditedPair]) -> tuple[Estimate, float | None]:
    """The prediction-powered CSR (a fraction) from the judge's pass / fail counts over all pairs of the model and
    the audited pairs (the whole sample, those outside the model undecided), and the rectifier D."""
    n = n_pass + n_fail
    rect, z, n_audited = ratio_influence(
        audited, lambda p: _decided(p) * (float(bool(p.human)) - float(bool(p.judge))), _decided
    )
    if not n or rect is None:
        return Estimate(None, None, None, None, n_audited), rect
    r = n_pass / n
    value = r + rect
    se = math.sqrt(r * (1 - r) / n + stratified_variance([p.stratum for p in audited], z))
    return Estimate(value, se, *interval(value, se, 0.0, 1.0), n_audited), rect


def isr_pp(attempts: Sequence[tuple[int, int]], audited: Sequence[AuditedPair]) -> Estimate:
    """The prediction-powered ISR (a fraction) from each counted attempt's (judge passes, judge fails) and the
    audited pairs of the model (see the module's docstring)."""
    attempts = [(n1, n0) for n1, n0 in attempts if n1 + n0 > 0]
    q1, z1, n_1 = ratio_influence(
        audited, lambda p: _decided(p) * bool(p.human and p.judge), lambda p: _decided(p) * bool(p.judge)
    )
    q0, z0, n_0 = ratio_influence(
        audited,
        lambda p: _decided(p) * bool(p.human and p.judge is False),
        lambda p: _decided(p) * (p.judge is False),
    )
    n_audited = n_1 + n_0
    if not attempts or q1 is None or q0 is None:
        return Estimate(None, None, None, None, n_audited)
    probs = [q1**n1 * q0**n0 for n1, n0 in attempts]
    a = len(attempts)
    value = sum(probs) / a
    g1 = sum(n1 * q1 ** (n1 - 1) * q0**n0 for n1, n0 in attempts if n1) / a
    g0 = sum(n0 * q1**n1 * q0 ** (n0 - 1) for n1, n0 in attempts if n0) / a
    z = [g1 * u + g0 * v for u, v in zip(z1, z0, strict=True)]
    spread = sum((p - value) ** 2 for p in probs) / (a - 1) / a if a > 1 else 0.0
    se = math.sqrt(stratified_variance([p.stratum for p in audited], z) + spread)
    return Estimate(value, se, *interval(value, se, 0.0, 1.0), n_audited)


def calibrate(
    model: str, judge: str, attempts: Sequence[tuple[int, int]], audited: Sequence[AuditedPair]
) -> Calibrated:
    """ISR and CSR of one model under one judge, raw and calibrated by the audited pairs of that judge (all models:
    the model's are the domain)."""
    mine = in_domain(audited, lambda p: p.model == model)
    counted = [(n1, n0) for n1, n0 in attempts if n1 + n0 > 0]
    n_pass, n_fail = sum(n1 for n1, _ in counted), sum(n0 for _, n0 in counted)
    csr, rect = csr_pp(n_pass, n_fail, mine)
    return Calibrated(
        model=model,
        judge=judge,
        raw_isr=sum(1 for n1, n0 in counted if n0 == 0) / len(counted) if counted else None,
        raw_csr=n_pass / (n_pass + n_fail) if n_pass + n_fail else None,
        csr=csr,
        isr=isr_pp(counted, mine),
        rectifier=rect,
        n_pairs=n_pass + n_fail,
        n_attempts=len(counted),
        n_audited=csr.n,
    )


@dataclass(frozen=True)
class RankingComparison:
    """A judge's raw ranking of the models against the calibrated one: ranks, Kendall's tau-b, swapped pairs."""

    judge: str
    raw_ranks: dict[str, float]
    calibrated_ranks: dict[str, float]
    tau: float | None
    swaps: list[tuple[str, str]]


def compare_rankings(rows: Sequence[Calibrated], *, figure: str = "csr") -> list[RankingComparison]:
    """Per judge: models ranked by the judge's raw figure and by the calibrated one (1 = best, ties share the mean
    rank), Kendall's tau-b over the models ranked both ways and the pairs whose order differs."""
    out = []
    for judge in sorted({r.judge for r in rows}):
        mine = [r for r in rows if r.judge == judge]
        raw = ranks({r.model: getattr(r, f"raw_{figure}") for r in mine})
        cal = ranks({r.model: getattr(r, figure).value for r in mine})
        both = sorted(set(raw) & set(cal))
        tau = kendall_tau([-raw[m] for m in both], [-cal[m] for m in both])
        swaps = [
            (a, b)
            for i, a in enumerate(both)
            for b in both[i + 1 :]
            if (raw[a] - raw[b]) * (cal[a] - cal[b]) < 0 or ((raw[a] == raw[b]) != (cal[a] == cal[b]))
        ]
        out.append(RankingComparison(judge, raw, cal, tau, swaps))
    return out


# coverage check -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CoverageSetting:
    """A simulated study: attempts of `items` items (the first `lenient_items` of category "B", on which the judge
    passes a true fail with probability `leniency`; on the others it errs both ways with probability `error`), the
    humans' pass probability per category, and an audit of `audited` pairs stratified by category (proportional)."""

    attempts: int = 400
    items: int = 5
    lenient_items: int = 2
    pass_a: float = 0.8
    pass_b: float = 0.6
    error: float = 0.05
    leniency: float = 0.5
    audited: int = 200


@dataclass(frozen=True)
class Coverage:
    """How often each 95% interval covered the study's true CSR and ISR over `studies` simulated studies."""

    setting: CoverageSetting
    studies: int
    csr_calibrated: float
    csr_raw: float
    isr_calibrated: float
    isr_raw: float
    csr_width: float


def _binomial_interval(rate: float, n: int) -> tuple[float, float]:
    se = math.sqrt(rate * (1 - rate) / n) if n else 0.0
    return rate - 1.959963984540054 * se, rate + 1.959963984540054 * se


def simulate_coverage(setting: CoverageSetting, studies: int, seed: int = 1) -> Coverage:
    """Simulated studies with known human labels and a judge lenient on category B: how often the calibrated 95%
    intervals (csr_pp, isr_pp) and the raw judge's binomial intervals cover the true CSR and ISR."""
    rng = np.random.default_rng(seed)
    n_items, n_att = setting.items, setting.attempts
    category = np.array(["B"] * setting.lenient_items + ["A"] * (n_items - setting.lenient_items))
    p_true = np.where(category == "B", setting.pass_b, setting.pass_a)
    hits = {"csr_cal": 0, "csr_raw": 0, "isr_cal": 0, "isr_raw": 0}
    widths = []
    for _ in range(studies):
        human = rng.random((n_att, n_items)) < p_true
        flip = rng.random((n_att, n_items))
        lenient = (category == "B") & ~human & (flip < setting.leniency)
        wrong = (category == "A") & (flip < setting.error)
        judge = np.where(lenient, True, np.where(wrong, ~human, human))
        true_csr, true_isr = human.mean(), human.all(axis=1).mean()
        n_pass = int(judge.sum())
        raw_csr = n_pass / judge.size
        raw_isr = judge.all(axis=1).mean()
        # the audit: proportional to each category's pairs, drawn without replacement
        audited = []
        for cat in ("A", "B"):
            cols = np.flatnonzero(category == cat)
            size = cols.size * n_att
            take = round(setting.audited * size / judge.size)
            picks = rng.choice(size, size=take, replace=False)
            rows, cidx = picks // cols.size, cols[picks % cols.size]
            audited += [
                AuditedPair(cat, size / take, bool(human[r, c]), bool(judge[r, c]), category=cat, model="m")
                for r, c in zip(rows, cidx, strict=True)
            ]
        csr, _ = csr_pp(n_pass, judge.size - n_pass, audited)
        attempts = [(int(row.sum()), int(n_items - row.sum())) for row in judge]
        isr = isr_pp(attempts, audited)
        lo, hi = _binomial_interval(raw_csr, judge.size)
        hits["csr_raw"] += lo <= true_csr <= hi
        lo, hi = _binomial_interval(raw_isr, n_att)
        hits["isr_raw"] += lo <= true_isr <= hi
        hits["csr_cal"] += csr.low <= true_csr <= csr.high
        hits["isr_cal"] += isr.low is not None and isr.low <= true_isr <= isr.high
        widths.append(csr.high - csr.low)
    return Coverage(
        setting,
        studies,
        hits["csr_cal"] / studies,
        hits["csr_raw"] / studies,
        hits["isr_cal"] / studies,
        hits["isr_raw"] / studies,
        sum(widths) / len(widths),
    )
