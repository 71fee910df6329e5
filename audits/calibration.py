"""Reads for the judge accuracy and calibrated leaderboard pages (and their API): one selector per page.

A verdict audit's closed units are the human labels (final status valid = satisfied, invalid = not satisfied,
unresolved = cannot tell); each unit is weighted by its stratum's population over its sampled units
(runs.metrics.judge_accuracy). The judges' verdicts are read per (attempt, item) from the verdict table, the
same machine judges the sample was drawn from (audits.selectors.AUDITED_JUDGES).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Count, Q

from audits.models import AuditUnit, Campaign, CampaignState, FinalStatus, Subject, UnitState
from audits.selectors import AUDITED_JUDGES
from runs.metrics import calibration
from runs.metrics.judge_accuracy import AccuracyRow, AuditedPair, judge_accuracy, weights
from runs.models import Benchmark, Verdict, VerdictResult

HUMAN = {FinalStatus.VALID: True, FinalStatus.INVALID: False}
#: fewer decided audited pairs of a model than this and the calibrated page says its intervals are wide for that reason
SMALL_AUDIT = 30


def verdict_campaigns(benchmark: Benchmark) -> list[dict]:
    """The started verdict audits of a benchmark, oldest first, each {"campaign", "pending" (units not closed),
    "settled" (every unit closed, or closed by a lead)}."""
    rows = (
        Campaign.objects.filter(benchmarks=benchmark, subject=Subject.VERDICT)
        .exclude(state=CampaignState.DRAFT)
        .annotate(pending=Count("units", filter=~Q(units__state=UnitState.CLOSED)))
        .order_by("created_at", "id")
    )
    return [
        {"campaign": c, "pending": c.pending, "settled": c.state == CampaignState.CLOSED or not c.pending} for c in rows
    ]


def settled_verdict_campaign(benchmark: Benchmark, pk) -> Campaign | None:
    """The settled verdict audit `pk` of the benchmark (the newest settled one when pk is empty); None when none is."""
    settled = [r["campaign"] for r in verdict_campaigns(benchmark) if r["settled"]]
    if not pk:
        return settled[-1] if settled else None
    return next((c for c in settled if str(c.pk) == str(pk)), None)


@dataclass
class Audited:
    """A verdict audit's closed units as AuditedPairs per judge, and what the pages link from them."""

    pairs: dict[str, list[AuditedPair]]
    units: dict[int, dict] = field(default_factory=dict)
    reasoning: dict[tuple[int, str], str] = field(default_factory=dict)
    n_units: int = 0
    n_closed: int = 0


def audited_pairs(campaign: Campaign) -> Audited:
    """Per judge, every sampled unit of the campaign as an AuditedPair (human None until closed or when unresolved;
    judge None where it gave no pass or fail), weighted by population / sampled per stratum. Two queries."""
    units = list(
        AuditUnit.objects.filter(campaign=campaign, attempt__isnull=False).values(
            "id",
            "key",
            "stratum",
            "state",
            "final_status",
            "attempt_id",
            "item_id",
            "item__category",
            "item__description",
            "attempt__run__model__name",
        )
    )
    sampled: dict[str, int] = defaultdict(int)
    for u in units:
        sampled[u["stratum"]] += 1
    w = weights(campaign.population or {}, sampled)
    verdicts: dict[tuple[int, int], dict[str, tuple[str, str]]] = defaultdict(dict)
    rows = Verdict.objects.filter(
        AUDITED_JUDGES,
        attempt_id__in={u["attempt_id"] for u in units},
        item_id__in={u["item_id"] for u in units},
    ).values_list("attempt_id", "item_id", "judge__name", "result", "reasoning")
    for attempt, item, judge, result, reasoning in rows.order_by():
        verdicts[(attempt, item)][judge] = (result, reasoning)
    judges = sorted({j for v in verdicts.values() for j in v})
    out = Audited(pairs={j: [] for j in judges}, n_units=len(units))
    for u in units:
        closed = u["state"] == UnitState.CLOSED
        out.n_closed += closed
        human = HUMAN.get(u["final_status"]) if closed else None
        out.units[u["id"]] = u
        for judge in judges:
            result, reasoning = verdicts[(u["attempt_id"], u["item_id"])].get(judge, ("", ""))
            verdict = {VerdictResult.PASS: True, VerdictResult.FAIL: False}.get(result)
            out.reasoning[(u["id"], judge)] = reasoning
            out.pairs[judge].append(
                AuditedPair(
                    u["stratum"],
                    w.get(u["stratum"], 1.0),
                    human,
                    verdict,
                    category=u["item__category"] or "",
                    model=u["attempt__run__model__name"],
                    unit=u["id"],
                )
            )
    return out


@dataclass(frozen=True)
class JudgeAccuracyPage:
    """What the judge accuracy page and its API show."""

    campaign: Campaign
    settled: bool
    rows: dict[str, list[AccuracyRow]]
    disagreements: list[dict]
    n_units: int
    n_closed: int


def judge_accuracy_page(campaign: Campaign) -> JudgeAccuracyPage:
    """Per judge against the campaign's closed units: figures overall, per category and per model, and the units
    where judge and humans disagree with the judge's reasoning (leads and reviewers: callers check access)."""
    audited = audited_pairs(campaign)
    disagreements = [
        {
            "unit": p.unit,
            "key": audited.units[p.unit]["key"],
            "judge": judge,
            "model": p.model,
            "category": p.category,
            "item": audited.units[p.unit]["item__description"],
            "attempt": audited.units[p.unit]["attempt_id"],
            "human": "satisfied" if p.human else "not satisfied",
            "verdict": "pass" if p.judge else "fail",
            "reasoning": audited.reasoning.get((p.unit, judge), ""),
        }
        for judge, pairs in sorted(audited.pairs.items())
        for p in pairs
        if p.human is not None and p.judge is not None and p.human != p.judge
    ]
    return JudgeAccuracyPage(
        campaign=campaign,
        settled=audited.n_closed == audited.n_units,
        rows=judge_accuracy(audited.pairs),
        disagreements=disagreements,
        n_units=audited.n_units,
        n_closed=audited.n_closed,
    )


@dataclass(frozen=True)
class CalibratedPage:
    """What the calibrated leaderboard shows: per (model, judge) the raw and calibrated figures, per judge the two
    rankings, and the models whose audit is small."""

    campaign: Campaign | None
    rows: list[calibration.Calibrated]
    rankings: list[calibration.RankingComparison]
    small: list[str]


def judge_counts(benchmark: Benchmark, judges) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """{(model, judge): [(passes, fails) per attempt]} of the judges' verdicts on the benchmark (one query)."""
    rows = (
        Verdict.objects.filter(
            AUDITED_JUDGES,
            attempt__run__benchmark=benchmark,
            judge__name__in=list(judges),
            item__superseded_by__isnull=True,
        )
        .values_list("attempt_id", "attempt__run__model__name", "judge__name")
        .annotate(
            passes=Count("id", filter=Q(result=VerdictResult.PASS)),
            fails=Count("id", filter=Q(result=VerdictResult.FAIL)),
        )
        .order_by()
    )
    out: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for _attempt, model, judge, passes, fails in rows:
        out[(model, judge)].append((passes, fails))
    return out


def calibrated_page(benchmark: Benchmark, campaign: Campaign | None) -> CalibratedPage:
    """Every model under every audited judge, raw and calibrated by a settled verdict audit; nothing without one."""
    if campaign is None:
        return CalibratedPage(None, [], [], [])
    audited = audited_pairs(campaign)
    counts = judge_counts(benchmark, audited.pairs)
    rows = [
        calibration.calibrate(model, judge, attempts, audited.pairs[judge])
        for (model, judge), attempts in sorted(counts.items())
    ]
    small = sorted({r.model for r in rows if r.n_audited < SMALL_AUDIT})
    return CalibratedPage(campaign, rows, calibration.compare_rankings(rows), small)
