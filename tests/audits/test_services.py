from datetime import timedelta

import pytest
from django.utils import timezone

from audits import selectors, services
from audits.models import Adjudication, Assignment, AuditUnit, Label, UnitState

from .conftest import BAD, OK, label_next


def test_it_assigns_each_unit_to_two_distinct_annotators(campaign, annotator_a, annotator_b, annotator_c):
    seen = {}
    for user in (annotator_a, annotator_b, annotator_c):
        for _ in range(9):
            a = services.assignment_next(campaign, user)
            if a is None:
                break
            services.label_submit(a, OK)
            seen.setdefault(a.unit_id, []).append(user.username)
    assert len(seen) == 9
    assert all(len(v) == 2 and len(set(v)) == 2 for v in seen.values())
    assert services.assignment_next(campaign, annotator_a) is None


def test_it_returns_the_held_reservation_before_reserving_another(campaign, annotator_a):
    first = services.assignment_next(campaign, annotator_a)
    assert services.assignment_next(campaign, annotator_a) == first
    second = services.assignment_next(campaign, annotator_a, skip=[first.pk])
    assert second.unit_id != first.unit_id
    assert Assignment.objects.filter(annotator=annotator_a).count() == 2


def test_it_frees_an_expired_reservation_for_someone_else(campaign, annotator_a, annotator_b, annotator_c):
    idle = services.assignment_next(campaign, annotator_a)
    services.assignment_next(campaign, annotator_b)  # b holds slot 2 of the same first unit
    later = timezone.now() + timedelta(minutes=campaign.reservation_minutes + 1)
    for user in (annotator_b,):
        Assignment.objects.filter(annotator=user).update(expires_at=later + timedelta(hours=1))
    taken = services.assignment_next(campaign, annotator_c, now=later)
    assert taken.unit_id == idle.unit_id
    assert not Assignment.objects.filter(pk=idle.pk).exists()
    with pytest.raises(services.AuditError, match="expired"):
        services.label_submit(idle, OK)
    assert not Label.objects.filter(assignment__annotator=annotator_a).exists()


def test_it_stores_one_label_when_submitted_twice(campaign, annotator_a):
    a = services.assignment_next(campaign, annotator_a)
    services.label_submit(a, OK)
    services.label_submit(a, BAD, note="second thoughts")
    labels = Label.objects.filter(assignment=a)
    assert labels.count() == 1 and labels.get().values == BAD and labels.get().valid is False


def test_it_refuses_an_incomplete_label(campaign, annotator_a):
    a = services.assignment_next(campaign, annotator_a)
    with pytest.raises(services.AuditError, match="grounded"):
        services.label_submit(a, {"decidable": "yes"})


def test_it_closes_a_unanimous_unit_and_disputes_a_split_one(campaign, annotator_a, annotator_b):
    a1 = label_next(campaign, annotator_a, OK)
    label_next(campaign, annotator_b, OK)
    unit = AuditUnit.objects.get(pk=a1.unit_id)
    assert (unit.state, unit.final_status, unit.final_source, unit.agreement) == ("closed", "valid", "unanimous", 1.0)
    a2 = label_next(campaign, annotator_a, OK)
    label_next(campaign, annotator_b, BAD)
    unit = AuditUnit.objects.get(pk=a2.unit_id)
    assert unit.state == UnitState.DISPUTED and unit.agreement == 0.5  # grounded and duplicate agree
    assert selectors.adjudication_queue(campaign) == [unit]


def test_it_records_the_source_of_an_adjudicated_status_and_shows_who_was_overruled(
    campaign, lead, annotator_a, annotator_b
):
    a = label_next(campaign, annotator_a, OK)
    label_next(campaign, annotator_b, BAD)
    unit = AuditUnit.objects.get(pk=a.unit_id)
    services.unit_adjudicate(
        unit, lead=lead, final_status="invalid", reason="ambiguous", upheld_slot=2, shown_order=[2, 1]
    )
    unit.refresh_from_db()
    assert (unit.state, unit.final_status, unit.final_source) == ("closed", "invalid", "adjudicated")
    assert Adjudication.objects.get(unit=unit).shown_order == [2, 1]
    mine = {r["unit"].pk: r["overruled"] for r in selectors.my_labels(annotator_a)}
    theirs = {r["unit"].pk: r["overruled"] for r in selectors.my_labels(annotator_b)}
    assert mine[unit.pk] is True and theirs[unit.pk] is False
    with pytest.raises(services.AuditError):
        services.unit_adjudicate(unit, lead=lead, final_status="valid")


def test_it_marks_an_unresolved_decision_as_such(campaign, lead, annotator_a, annotator_b):
    a = label_next(campaign, annotator_a, OK)
    label_next(campaign, annotator_b, BAD)
    services.unit_adjudicate(AuditUnit.objects.get(pk=a.unit_id), lead=lead, final_status="unresolved")
    assert AuditUnit.objects.get(pk=a.unit_id).final_source == "unresolved"


def test_it_rejects_a_reason_outside_the_rubric_taxonomy(campaign, lead, annotator_a, annotator_b):
    a = label_next(campaign, annotator_a, OK)
    label_next(campaign, annotator_b, BAD)
    with pytest.raises(services.AuditError, match="reason"):
        services.unit_adjudicate(AuditUnit.objects.get(pk=a.unit_id), lead=lead, final_status="valid", reason="vibes")


def test_it_samples_dialogue_turns_as_units(db, lead):
    from runs.models import Benchmark, ChecklistItem, Instance

    b = Benchmark.objects.create(slug="evo", name="evo", kind="dialogue")
    inst = Instance.objects.create(
        benchmark=b,
        external_id="dialog_1",
        content_hash="h",
        spec={"turns": [{"turn": 1, "user_query": "Answer in JSON."}, {"turn": 2, "user_query": "Three bullets."}]},
    )
    for turn, key in ((1, "t1:format"), (2, "t2:format"), (2, "t2:countableItems")):
        ChecklistItem.objects.create(instance=inst, key=key, turn=turn, content_hash="h", description=key)
    c = services.campaign_start(
        services.campaign_create(
            name="q", subject="dialogue_queries", benchmarks=[b], strata=[], allocation="proportional", size=5, seed=1
        )
    )
    assert sorted(c.units.values_list("key", flat=True)) == ["evo/dialog_1/turn-001", "evo/dialog_1/turn-002"]
    unit = c.units.get(turn=2)
    assert [i.key for i in selectors.unit_items(unit)] == ["t2:format", "t2:countableItems"]
    assert selectors.unit_evidence(unit)["query"] == "Three bullets."
