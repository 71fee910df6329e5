"""The demo's pilot audit: a first look at the portal finds campaigns, disagreements and exclusion effects."""

from io import StringIO

import pytest
from django.core.management import call_command

from audits import selectors
from audits.demo import CAMPAIGN_NAME, SETTLED_NAME, demo_audit_load
from audits.models import Campaign, Label, UnitState
from runs.demo import demo_load

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    demo_load(seed=3, scale="small")


def test_it_plays_a_pilot_campaign_with_every_unit_state(study):
    result = demo_audit_load(seed=3)
    campaign = Campaign.objects.get(name=CAMPAIGN_NAME)
    states = set(campaign.units.values_list("state", flat=True))
    assert {UnitState.OPEN, UnitState.CLOSED, UnitState.DISPUTED} <= states  # something left for the demo lead
    assert result.labels == Label.objects.count() > 0 and result.adjudicated > 0
    # labels are blind pairs: never one annotator twice on a unit
    pairs = list(Label.objects.values_list("assignment__unit_id", "assignment__annotator_id"))
    assert len(pairs) == len(set(pairs))
    octobench = campaign.benchmarks.get(slug="octobench")
    # an unfinished pilot: exclusion policies read it only when it is named; by default they read the settled audit
    settled = Campaign.objects.get(name=SETTLED_NAME)
    assert campaign.pilot and not settled.units.exclude(state=UnitState.CLOSED).exists()
    assert selectors.policy_campaigns(octobench) == [settled]
    either, both = (
        selectors.excluded_item_ids(octobench, p, [campaign.pk]) for p in ("flagged_by_either", "flagged_by_both")
    )
    assert either > both
    assert selectors.excluded_item_ids(octobench, "adjudicated_invalid")  # the settled audit found invalid items


def test_it_is_deterministic_and_runs_once(study):
    demo_audit_load(seed=3)
    first = sorted(Label.objects.values_list("assignment__unit__key", "assignment__slot", "valid"))
    again = demo_audit_load(seed=3)
    assert again.skipped and Campaign.objects.count() == 3  # the pilot, the settled item audit, the verdict audit
    assert sorted(Label.objects.values_list("assignment__unit__key", "assignment__slot", "valid")) == first


def test_the_demo_command_adds_it(db):
    out = StringIO()
    call_command("demo", scale="small", seed=2, stdout=out)
    assert "Demo audit: campaign" in out.getvalue()
    assert Campaign.objects.filter(name=CAMPAIGN_NAME).exists()


def test_it_plays_a_settled_verdict_audit_whose_lenient_judge_the_pages_expose(study):
    from audits import calibration
    from audits.demo import LENIENT_CATEGORY, LENIENT_JUDGE, VERDICT_NAME

    demo_audit_load(seed=3)
    campaign = Campaign.objects.get(name=VERDICT_NAME)
    assert campaign.units.count() and not campaign.units.exclude(state=UnitState.CLOSED).exists()
    page = calibration.judge_accuracy_page(campaign)
    spec = {(r.judge, r.group): r.specificity.value for r in page.rows["category"]}
    lenient = spec[(LENIENT_JUDGE, LENIENT_CATEGORY)]
    others = [v for (j, g), v in spec.items() if g == LENIENT_CATEGORY and j != LENIENT_JUDGE and v is not None]
    assert lenient is not None and others and lenient < min(others)
    octobench = campaign.benchmarks.get(slug="octobench")
    board = calibration.calibrated_page(octobench, calibration.settled_verdict_campaign(octobench, ""))

    def mean_rectifier(judges):
        values = [r.rectifier for r in board.rows if r.judge in judges and r.rectifier is not None]
        return sum(values) / len(values)

    # the calibration takes more off the lenient judge's CSR than off the others'
    others = {r.judge for r in board.rows} - {LENIENT_JUDGE}
    assert mean_rectifier({LENIENT_JUDGE}) < mean_rectifier(others)
