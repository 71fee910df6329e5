"""Exclusion policies name the campaigns they draw on, a lead never adjudicates a unit they
labelled, a slot that does not exist is refused, and the API carries what the lead reads on the pages."""

import csv
import io

import pytest

from audits import selectors, services
from audits.models import AuditUnit, Campaign, UnitState
from runs.exclusions import excluded_item_ids

from .conftest import BAD, OK, _user, client_for, label_all, values_for

pytestmark = pytest.mark.django_db


def _x_ids(bench):
    return {bench["items"][(n, "x")].id for n in (1, 2, 3)}


def _campaign(bench, lead, name, **kw):
    return services.campaign_start(
        services.campaign_create(
            name=name,
            subject="checklist_items",
            benchmarks=[bench["benchmark"]],
            strata=["category"],
            allocation="proportional",
            size=9,
            seed=11,
            user=lead,
            **kw,
        )
    )


def test_policies_draw_on_settled_campaigns_unless_others_are_chosen(bench, lead, annotator_a, annotator_b):
    benchmark = bench["benchmark"]
    # an unfinished pilot where one annotator called every x item invalid
    pilot = _campaign(bench, lead, "pilot run", pilot=True)
    while (a := services.assignment_next(pilot, annotator_a)) is not None:
        services.label_submit(a, values_for(a.unit))
    assert selectors.excluded_item_ids(benchmark, "flagged_by_either") == set()
    assert excluded_item_ids(benchmark, "flagged_by_either") == set()  # the leaderboards' hook agrees
    assert selectors.excluded_item_ids(benchmark, "flagged_by_either", [pilot.pk]) == _x_ids(bench)
    # finished, the pilot still stays out by default
    label_all(pilot, [annotator_b], lambda user, unit: values_for(unit))
    assert not pilot.units.exclude(state=UnitState.CLOSED).exists()
    assert selectors.excluded_item_ids(benchmark, "adjudicated_invalid") == set()
    assert "no settled audit campaign" in selectors.policy_sources(benchmark, "adjudicated_invalid")
    # a settled campaign that is not a pilot counts
    main = _campaign(bench, lead, "main")
    label_all(main, [annotator_a, annotator_b], lambda user, unit: values_for(unit))
    assert selectors.policy_campaigns(benchmark) == [main]
    assert selectors.excluded_item_ids(benchmark, "adjudicated_invalid") == _x_ids(bench)
    assert selectors.policy_sources(benchmark, "adjudicated_invalid") == "1 settled campaign: main"
    # the API names them, takes a choice, and refuses an id that is not a campaign of the benchmark
    api = client_for(lead)
    body = api.get("/api/audits/excluded-items/octo-test/?exclude=flagged_by_either").json()
    assert body["campaigns"] == [main.pk] and len(body["items"]) == 3
    body = api.get(
        f"/api/audits/excluded-items/octo-test/?exclude=flagged_by_either&campaigns={pilot.pk},{main.pk}"
    ).json()
    assert body["campaigns"] == [pilot.pk, main.pk] and "pilot run (pilot)" in body["sources"]
    refused = api.get("/api/audits/excluded-items/octo-test/?exclude=flagged_by_either&campaigns=99999")
    assert refused.status_code == 400 and "99999" in refused.json()["campaigns"][0]
    # the leaderboard and the effect page say what the policy drew on
    page = api.get("/b/octo-test/leaderboard/?exclude=adjudicated_invalid").content.decode()
    assert "Drawn from 1 settled campaign: main." in page
    page = api.get(f"/audits/effect/octo-test/?exclude=flagged_by_either&campaigns={pilot.pk}").content.decode()
    assert "Drawn from 1 chosen campaign: pilot run (pilot)." in page
    page = api.get("/audits/effect/octo-test/?exclude=flagged_by_either&campaigns=99999").content.decode()
    assert "Select a valid choice" in page and "Drawn from 1 settled campaign: main." in page
    assert "policy “flagged by either annotator” excludes" in page  # the policy stays as chosen
    # a lead marks the settled campaign as a pilot: the default leaves it out too
    assert "Mark as a pilot" in api.get(f"/audits/{main.pk}/").content.decode()
    api.post(f"/audits/{main.pk}/pilot/", {"pilot": "1"})
    assert Campaign.objects.get(pk=main.pk).pilot
    assert selectors.excluded_item_ids(benchmark, "adjudicated_invalid") == set()
    api.post(f"/audits/{main.pk}/pilot/", {"pilot": "0"})
    assert selectors.excluded_item_ids(benchmark, "adjudicated_invalid") == _x_ids(bench)


def test_a_lead_who_labelled_a_unit_cannot_adjudicate_it(bench, campaign, lead, annotator_a, django_user_model):
    mine = services.assignment_next(campaign, lead)
    services.label_submit(mine, OK)
    theirs = services.assignment_next(campaign, annotator_a)
    assert theirs.unit_id == mine.unit_id
    services.label_submit(theirs, BAD)
    unit = AuditUnit.objects.get(pk=mine.unit_id)
    assert unit.state == UnitState.DISPUTED
    with pytest.raises(services.AuditError, match="You labelled this unit yourself"):
        services.unit_adjudicate(unit, lead=lead, final_status="valid")
    response = client_for(lead).post(
        f"/api/audits/units/{unit.pk}/adjudicate/", {"final_status": "valid"}, content_type="application/json"
    )
    assert response.status_code == 409 and "another lead" in response.json()["detail"]
    page = client_for(lead).get(f"/audits/units/{unit.pk}/adjudicate/").content.decode()
    assert "you cannot adjudicate it" in page and "Record decision" not in page
    queue = client_for(lead).get(f"/audits/{campaign.pk}/adjudicate/").content.decode()
    assert "you labelled it: another lead decides" in queue
    other = _user(django_user_model, "lead2", "lead")
    services.unit_adjudicate(unit, lead=other, final_status="valid", upheld_slot=mine.slot)
    assert AuditUnit.objects.get(pk=unit.pk).final_source == "adjudicated"


def test_an_adjudication_naming_a_slot_that_does_not_exist_is_refused(bench, campaign, lead, annotator_a, annotator_b):
    label_all(campaign, [annotator_a], lambda user, unit: OK)
    label_all(campaign, [annotator_b], lambda user, unit: BAD if unit.position == 1 else OK)
    unit = campaign.units.get(state=UnitState.DISPUTED)
    response = client_for(lead).post(
        f"/api/audits/units/{unit.pk}/adjudicate/",
        {"final_status": "valid", "upheld_slot": 9},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["detail"] == "upheld_slot 9 does not exist: this unit's labels are in slots 1, 2"
    assert AuditUnit.objects.get(pk=unit.pk).state == UnitState.DISPUTED  # nothing recorded
    ok = client_for(lead).post(
        f"/api/audits/units/{unit.pk}/adjudicate/",
        {"final_status": "invalid", "upheld_slot": 2},
        content_type="application/json",
    )
    assert ok.status_code == 200 and ok.json()["final_source"] == "adjudicated"


def test_the_api_gives_the_sample_provenance_labels_adjudications_and_effect(
    bench, campaign, lead, annotator_a, annotator_b, django_user_model
):
    reviewer = _user(django_user_model, "rev", "reviewer")
    # a says every x is bad, b says every item is fine: three disputes; the lead sides with a twice, one stays unresolved
    label_all(campaign, [annotator_a], lambda user, unit: values_for(unit))
    label_all(campaign, [annotator_b], lambda user, unit: OK)
    disputed = list(campaign.units.filter(state=UnitState.DISPUTED).order_by("position"))
    assert len(disputed) == 3
    slot_a = {u.pk: u.assignments.get(annotator=annotator_a).slot for u in disputed}
    for unit in disputed[:2]:
        services.unit_adjudicate(
            unit, lead=lead, final_status="invalid", reason="ambiguous", upheld_slot=slot_a[unit.pk]
        )
    services.unit_adjudicate(disputed[2], lead=lead, final_status="unresolved")
    api = client_for(reviewer)

    detail = api.get(f"/api/audits/campaigns/{campaign.pk}/").json()
    assert detail["provenance"] == {"unanimous": 6, "adjudicated": 2, "unresolved": 1, "disputed": 0, "open": 0}

    sample = api.get(f"/api/audits/campaigns/{campaign.pk}/sample/?limit=4").json()
    assert sample["count"] == 9 and len(sample["units"]) == 4 and sample["units"][0]["position"] == 1
    assert {s["stratum"]: (s["population"], s["sampled"], s["expected"]) for s in sample["strata"]} == {
        "System Prompt": (6, 6, 6.0),
        "User Query": (3, 3, 3.0),
    }
    first = sample["units"][0]
    unit = AuditUnit.objects.get(pk=first["id"])
    assert first["items"][0]["key"] == unit.item.key and first["items"][0]["description"] == unit.item.description
    assert first["final_status"] == unit.final_status

    labels = api.get(f"/api/audits/campaigns/{campaign.pk}/labels/").json()["rows"]
    assert len(labels) == 18
    overruled = [(r["annotator"], r["key"].rsplit("/", 1)[-1]) for r in labels if r["overruled"]]
    assert sorted(overruled) == [("annotator_b", "x"), ("annotator_b", "x")]  # b's "fine" lost twice
    assert sum(r["upheld"] is True for r in labels) == 2 and all(
        r["upheld"] is None for r in labels if r["final_source"] == "unanimous"
    )
    assert [r["overruled"] for r in labels if r["final_status"] == "unresolved"] == [None, None]

    response = api.get(f"/api/audits/campaigns/{campaign.pk}/labels/?format=csv")
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 18 and rows[0]["values.decidable"] in ("yes", "no") and "overruled" in rows[0]

    adjudications = api.get(f"/api/audits/campaigns/{campaign.pk}/adjudications/").json()["rows"]
    assert [(a["final_status"], a["reason"], a["lead"]) for a in adjudications] == [
        ("invalid", "ambiguous", "lead"),
        ("invalid", "ambiguous", "lead"),
        ("unresolved", "", "lead"),
    ]
    assert (
        api.get(f"/api/audits/campaigns/{campaign.pk}/adjudications/?format=csv")
        .content.decode()
        .startswith("unit,position,key,stratum,lead,final_status")
    )

    effect = api.get(f"/api/audits/effect/octo-test/?exclude=adjudicated_invalid&campaigns={campaign.pk}").json()
    assert effect["n_excluded"] == 2 and effect["sources"] == "1 chosen campaign: pilot"
    rows = {r["model"]: r for r in effect["rows"]}
    assert (rows["beta"]["rank_before"], rows["alpha"]["rank_before"]) == (1, 2)
    assert effect["tau"] is not None
    for s in effect["swaps"]:
        assert all(d["description"] == "Check the output is nice" for d in s["items"])

    # annotators see none of it
    blind = client_for(annotator_a)
    for url in (
        f"/api/audits/campaigns/{campaign.pk}/sample/",
        f"/api/audits/campaigns/{campaign.pk}/labels/",
        f"/api/audits/campaigns/{campaign.pk}/adjudications/",
        "/api/audits/effect/octo-test/?exclude=flagged_by_both",
    ):
        assert blind.get(url).status_code == 403, url
    assert "provenance" not in blind.get(f"/api/audits/campaigns/{campaign.pk}/").json()


def test_the_draft_sample_is_in_the_api_too(bench, lead):
    draft = services.campaign_create(
        name="d",
        subject="checklist_items",
        benchmarks=[bench["benchmark"]],
        strata=["category"],
        allocation="proportional",
        size=4,
        seed=3,
        user=lead,
    )
    body = client_for(lead).get(f"/api/audits/campaigns/{draft.pk}/sample/").json()
    assert body["state"] == "draft" and body["count"] == 4
    assert {s["stratum"]: s["sampled"] for s in body["strata"]} == {"System Prompt": 3, "User Query": 1}
    assert [u["key"] for u in body["units"]] == [c.key for _, c in services.campaign_sample(draft)]
    assert Campaign.objects.get(pk=draft.pk).units.count() == 0
