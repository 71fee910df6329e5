"""Two audits for the demo study. A pilot: two annotators have labelled most of a stratified sample of
checklist items, a lead has settled some disagreements, the rest wait in the queue. A settled audit:
every unit of another sample labelled by both and every disagreement adjudicated.

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
from audits.models import Campaign, FinalStatus, UnitState
from audits.rubrics import rubric_for
from runs.models import Benchmark, BenchmarkKind

CAMPAIGN_NAME = "Demo pilot: checklist item quality"
SETTLED_NAME = "Demo audit: checklist item quality"
SUBJECT = "checklist_items"
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
    return result


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
