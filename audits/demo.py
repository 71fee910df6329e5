"""Three audits for the demo study. A pilot: two annotators have labelled most of a stratified sample of
checklist items, a lead has settled some disagreements, the rest wait in the queue. A settled audit:
every unit of another sample labelled by both and every disagreement adjudicated. A settled verdict
audit of OctoBench: the demo makes one judge (`LENIENT_JUDGE`) lenient on one item category
(`LENIENT_CATEGORY`: it passes most of the failures there that the other judges catch), and the
annotators label what the judges' majority said before, so the judge accuracy page shows that judge's
low specificity on that category and the calibrated leaderboard corrects its figures.

So that a first look at the portal finds the audit pages, the agreement dashboard and the
leaderboard's exclusion policies with something in them (policies read settled campaigns; the
pilot counts only when chosen). Deterministic per seed; the demo people have no password (they
cannot log in; the demo superuser sees everything).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from audits import access, services
from audits.models import Campaign, FinalStatus, Subject, UnitState
from audits.rubrics import CANNOT_TELL, NOT_SATISFIED, SATISFIED, rubric_for
from runs.models import Benchmark, BenchmarkKind, Verdict, VerdictResult
from runs.services import benchmarks_generation_bump, rollups_rebuild_for_attempts

CAMPAIGN_NAME = "Demo pilot: checklist item quality"
SETTLED_NAME = "Demo audit: checklist item quality"
SUBJECT = "checklist_items"
VERDICT_NAME = "Demo verdict audit: OctoBench judges"
#: the judge the demo makes lenient, on which category, and the share of the majority's failures it passes there
LENIENT_JUDGE, LENIENT_CATEGORY, LENIENCY = "judge-vega", "Memory", 0.7
#: how often a demo annotator labels a verdict unit as it is (else the other way, now and then "cannot tell")
VERDICT_ACCURACY = 0.95
#: share of sampled items that are really flawed, how often an annotator sees an item as it is,
#: the share of units labelled by both annotators, the share of disputes the lead has settled
FLAWED, ACCURACY, LABELLED, SETTLED = 0.2, 0.85, 0.8, 0.6
OK = {"decidable": "yes", "grounded": "yes", "duplicate": "none", "overall": "ok"}
FLAWS = (  # (values, adjudication reason)
    ({"decidable": "no", "grounded": "yes", "duplicate": "none", "overall": "ambiguous"}, "ambiguous"),
    ({"decidable": "yes", "grounded": "no", "duplicate": "none", "overall": "unfaithful"}, "not-grounded"),
    ({"decidable": "yes", "grounded": "yes", "duplicate": "duplicate", "overall": "ambiguous"}, "duplicate"),
)


@dataclass
class DemoAudit:
    campaign: Campaign | None
    settled: Campaign | None = None
    verdicts: Campaign | None = None
    labels: int = 0
    adjudicated: int = 0
    skipped: str = ""


def _person(username: str, group: str):
    user, created = get_user_model().objects.get_or_create(username=username, defaults={"first_name": username.title()})
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


@transaction.atomic
def demo_audit_load(*, seed: int = 1, size: int = 60) -> DemoAudit:
    """Create (once) the demo pilot and settled campaigns over the demo checklist benchmarks and play their labelling."""
    if Campaign.objects.filter(name=CAMPAIGN_NAME).exists():
        return DemoAudit(None, skipped="the demo pilot campaign exists already")
    benchmarks = list(Benchmark.objects.filter(kind=BenchmarkKind.CHECKLIST))
    if not benchmarks:
        return DemoAudit(None, skipped="no checklist benchmark to audit")
    lead = _person("demo-lead", access.LEAD)
    annotators = [_person("demo-ann", access.ANNOTATOR), _person("demo-ben", access.ANNOTATOR)]
    campaign = services.campaign_create(
        name=CAMPAIGN_NAME,
        subject=SUBJECT,
        benchmarks=benchmarks,
        strata=["category"],
        allocation="proportional",
        size=size,
        seed=seed,
        minimum_per_stratum=2,
        pilot=True,
        user=lead,
    )
    result = DemoAudit(services.campaign_start(campaign))
    _play(result, result.campaign, lead, annotators, random.Random(seed), labelled=LABELLED, settled=SETTLED)
    settled = services.campaign_create(
        name=SETTLED_NAME,
        subject=SUBJECT,
        benchmarks=benchmarks,
        strata=["category"],
        allocation="proportional",
        size=size,
        seed=seed + 1,
        user=lead,
    )
    result.settled = services.campaign_start(settled)
    _play(result, result.settled, lead, annotators, random.Random(seed + 1), labelled=1.0, settled=1.0)
    octobench = Benchmark.objects.filter(slug="octobench").first()
    if octobench is not None:
        result.verdicts = _verdict_audit(result, octobench, lead, annotators, random.Random(seed + 2), seed=seed)
    return result


def _verdict_audit(result: DemoAudit, benchmark: Benchmark, lead, annotators, rng: random.Random, *, seed: int):
    """Make `LENIENT_JUDGE` lenient on `LENIENT_CATEGORY`, then play a settled verdict audit whose humans see the
    judges' majority from before (ties: fail)."""
    rows = Verdict.objects.filter(
        attempt__run__benchmark=benchmark, result__in=(VerdictResult.PASS, VerdictResult.FAIL)
    ).values_list("pk", "attempt_id", "item_id", "judge__name", "result", "item__category")
    votes: dict[tuple[int, int], list[str]] = {}
    lenient_fails = []
    for pk, attempt, item, judge, verdict, category in rows.order_by("attempt_id", "item_id", "judge__name"):
        votes.setdefault((attempt, item), []).append(verdict)
        if judge == LENIENT_JUDGE and category == LENIENT_CATEGORY and verdict == VerdictResult.FAIL:
            lenient_fails.append((pk, attempt))
    truth = {pair: v.count(VerdictResult.PASS) > len(v) / 2 for pair, v in votes.items()}
    flipped = [(pk, attempt) for pk, attempt in lenient_fails if rng.random() < LENIENCY]
    Verdict.objects.filter(pk__in=[pk for pk, _ in flipped]).update(
        result=VerdictResult.PASS, reasoning="The agent handled the memory as the item asks (lenient demo judge)."
    )
    rollups_rebuild_for_attempts({attempt for _, attempt in flipped})
    benchmarks_generation_bump([benchmark.pk])
    campaign = services.campaign_start(
        services.campaign_create(
            name=VERDICT_NAME,
            subject=Subject.VERDICT,
            benchmarks=[benchmark],
            strata=["judges", "category"],
            allocation="minimum",  # every (judges, category) stratum gets some, the rest by size: weights undo it
            minimum_per_stratum=8,
            size=240,
            seed=seed + 2,
            user=lead,
        )
    )
    for unit in campaign.units.order_by("position"):
        passed = truth.get((unit.attempt_id, unit.item_id), True)
        for annotator in annotators:
            assignment = services.assignment_next(campaign, annotator)
            if assignment is None or assignment.unit_id != unit.pk:
                continue
            right = rng.random() < VERDICT_ACCURACY
            answer = SATISFIED if passed == right else NOT_SATISFIED
            if not right and rng.random() < 0.3:
                answer = CANNOT_TELL
            services.label_submit(assignment, {"satisfied": answer})
            result.labels += 1
    for unit in campaign.units.filter(state=UnitState.DISPUTED).order_by("position"):
        passed = truth.get((unit.attempt_id, unit.item_id), True)
        services.unit_adjudicate(
            unit,
            lead=lead,
            final_status=FinalStatus.VALID if passed else FinalStatus.INVALID,
            reason="missed-evidence",
        )
        result.adjudicated += 1
    return campaign


def _play(
    result: DemoAudit, campaign: Campaign, lead, annotators, rng: random.Random, *, labelled: float, settled: float
) -> None:
    """Both annotators label the first `labelled` share of the sample; the lead settles the first `settled` share
    of the disagreements (with the truth the demo drew)."""
    units = list(campaign.units.order_by("position"))
    truth = {u.pk: (rng.choice(FLAWS) if rng.random() < FLAWED else None) for u in units}
    for unit in units[: round(len(units) * labelled)]:
        for annotator in annotators:
            assignment = services.assignment_next(campaign, annotator)
            if assignment is None or assignment.unit_id != unit.pk:
                continue
            flaw = truth[unit.pk]
            sees_flaw = (flaw is not None) == (rng.random() < ACCURACY)
            values = (flaw or rng.choice(FLAWS))[0] if sees_flaw else OK
            services.label_submit(assignment, values)
            result.labels += 1
    disputed = list(campaign.units.filter(state=UnitState.DISPUTED).order_by("position"))
    reasons = dict(rubric_for(SUBJECT).issues)
    for unit in disputed[: round(len(disputed) * settled)]:
        flaw = truth[unit.pk]
        status = FinalStatus.INVALID if flaw else FinalStatus.VALID
        services.unit_adjudicate(
            unit,
            lead=lead,
            final_status=status,
            reason=flaw[1] if flaw else "annotator-error",
            note="" if flaw else f"reads fine: {reasons['annotator-error']}",
        )
        result.adjudicated += 1
