"""Verdict audits: a unit is one (attempt, checklist item); annotators judge the trajectory blind, as item audits work."""

import json

from audits import selectors, services
from audits.models import AuditUnit, FinalSource, FinalStatus, UnitState
from runs.models import Verdict

from .conftest import CANNOT_TELL, NOT_SATISFIED, SATISFIED, client_for


def test_it_samples_every_judged_attempt_and_item_with_the_judges_stratum(verdict_bench):
    cands = selectors.candidates("verdicts", [verdict_bench["benchmark"].id])
    # 3 instances x 3 items x 2 models, each judged pass or fail by at least one judge
    assert len(cands) == 18 and all(c.attempt_id and c.item_id for c in cands)
    by_key = {c.key: c.facets["judges"] for c in cands}
    assert by_key["octo-test/alpha-r1/task-1/x"] == "split"  # judge-1 fails it, lenient passes it
    assert by_key["octo-test/beta-r1/task-1/x"] == "all pass"
    assert by_key["octo-test/alpha-r1/task-2/z"] == "all pass"  # judge-1's "na" is no verdict
    assert {c.facets["model"] for c in cands} == {"alpha", "beta"}
    assert len({c.key for c in cands}) == 18


def test_it_freezes_units_with_their_attempt_in_a_seeded_order_that_hides_the_strata(verdict_campaign):
    units = list(verdict_campaign.units.order_by("position"))
    assert len(units) == 18 and all(u.attempt_id and u.item_id for u in units)
    assert verdict_campaign.population == {"all pass": 13, "split": 5}  # alpha fails x thrice, beta y twice
    strata = [u.stratum for u in units]
    assert strata != sorted(strata)  # not handed out stratum by stratum
    assert all(u.attempt.instance_id == u.instance_id == u.item.instance_id for u in units)


def test_verdict_campaigns_feed_no_exclusion_policy(verdict_campaign, verdict_bench, annotator_a, annotator_b):
    for user in (annotator_a, annotator_b):
        while (a := services.assignment_next(verdict_campaign, user)) is not None:
            services.label_submit(a, NOT_SATISFIED)
    assert not verdict_campaign.units.exclude(state=UnitState.CLOSED).exists()
    benchmark = verdict_bench["benchmark"]
    assert selectors.policy_campaigns(benchmark) == []
    assert selectors.excluded_item_ids(benchmark, "flagged_by_both") == set()


def test_agreeing_labels_close_a_unit_and_cannot_tell_closes_it_unresolved(verdict_campaign, annotator_a, annotator_b):
    answers = [SATISFIED, NOT_SATISFIED, CANNOT_TELL]
    for n in range(3):
        a = services.assignment_next(verdict_campaign, annotator_a)
        services.label_submit(a, answers[n])
        b = services.assignment_next(verdict_campaign, annotator_b)
        assert b.unit_id == a.unit_id
        services.label_submit(b, answers[n])
    closed = AuditUnit.objects.filter(campaign=verdict_campaign, state=UnitState.CLOSED).order_by("position")
    assert [u.final_status for u in closed] == [FinalStatus.VALID, FinalStatus.INVALID, FinalStatus.UNRESOLVED]
    assert {u.final_source for u in closed} == {FinalSource.UNANIMOUS}


def test_a_disputed_verdict_unit_is_adjudicated_with_the_verdicts_words(
    verdict_campaign, lead, annotator_a, annotator_b
):
    a = services.assignment_next(verdict_campaign, annotator_a)
    services.label_submit(a, SATISFIED)
    services.label_submit(services.assignment_next(verdict_campaign, annotator_b), NOT_SATISFIED)
    html = client_for(lead).get(f"/audits/units/{a.unit_id}/adjudicate/").content.decode()
    assert "not satisfied" in html and "cannot tell" in html
    assert "JUDGE1-REASON" in html or "LENIENT-REASON" in html  # a lead sees the judges' reasoning
    assert "Reading the file" in html  # and the trajectory
    response = client_for(lead).post(f"/audits/units/{a.unit_id}/adjudicate/", {"final_status": "invalid"})
    assert response.status_code == 302
    assert AuditUnit.objects.get(pk=a.unit_id).final_source == FinalSource.ADJUDICATED


def test_the_labelling_screen_shows_the_trajectory_and_no_verdict_stratum_or_reasoning(
    verdict_campaign, annotator_a, annotator_b
):
    services.label_submit(services.assignment_next(verdict_campaign, annotator_b), NOT_SATISFIED, note="B-NOTE")
    client = client_for(annotator_a)
    html = client.post(f"/audits/{verdict_campaign.pk}/label/", follow=True).content.decode()
    assert "Reading the file" in html and "The attempt's trajectory" in html and "final response" in html
    for secret in ("JUDGE1-REASON", "LENIENT-REASON", "lenient", "judge-1", "all pass", "split", "B-NOTE"):
        assert secret not in html, secret
    assert "satisfied" in html and "cannot tell" in html
    held = services.assignment_held(verdict_campaign, annotator_a)
    body = client.get(f"/api/audits/assignments/{held.pk}/").json()
    assert body["stratum"] == "" and body["attempt"] == held.unit.attempt_id
    unit_body = client.get(f"/api/audits/units/{held.unit_id}/").json()
    assert unit_body["stratum"] == ""
    assert "LENIENT" not in json.dumps(unit_body)
    found = client.get(f"/audits/{verdict_campaign.pk}/label/?thread=0&q=reading").content.decode()
    assert "1 matching message" in found
    text = client.get(f"/audits/units/{held.unit_id}/text/?thread=0&msg=1&field=content")
    assert text.status_code == 200 and "Reading the file" in text.content.decode()
    assert client.get(f"/audits/units/{held.unit_id}/text/?verdict=1").status_code == 400  # messages only


def test_an_annotator_sees_the_judges_once_the_unit_closes(verdict_campaign, annotator_a, annotator_b):
    a = services.assignment_next(verdict_campaign, annotator_a)
    services.label_submit(a, SATISFIED)
    client = client_for(annotator_a)
    assert "REASON" not in client.get(f"/audits/units/{a.unit_id}/").content.decode()
    services.label_submit(services.assignment_next(verdict_campaign, annotator_b), SATISFIED)
    html = client.get(f"/audits/units/{a.unit_id}/").content.decode()
    assert Verdict.objects.filter(attempt_id=a.unit.attempt_id, item_id=a.unit.item_id).count() >= 1
    assert "What the judges said" in html and "REASON" in html


def test_a_verdict_campaigns_pages_word_its_statuses_and_send_to_the_judges_not_to_exclusion_policies(
    verdict_campaign, lead, annotator_a, annotator_b
):
    a = services.assignment_next(verdict_campaign, annotator_a)
    services.label_submit(a, NOT_SATISFIED)
    services.label_submit(services.assignment_next(verdict_campaign, annotator_b), NOT_SATISFIED)
    unit = client_for(annotator_a).get(f"/audits/units/{a.unit_id}/").content.decode()
    assert "final status <strong>not satisfied</strong>" in unit and "not_satisfied" not in unit
    mine = client_for(annotator_a).get("/audits/mine/").content.decode()
    assert "satisfied: not satisfied</span>" in mine and "not_satisfied" not in mine
    assert "<td>not satisfied <span" in mine
    page = client_for(lead).get(f"/audits/{verdict_campaign.pk}/").content.decode()
    assert "judged not satisfied" in page and "judged invalid" not in page
    assert "feeds no exclusion policy" in page and "Exclusion policies read this campaign" not in page
    assert f"/audits/{verdict_campaign.pk}/judge-accuracy/" in page and "under exclusion policies" not in page
    agreement = client_for(lead).get(f"/audits/{verdict_campaign.pk}/agreement/").content.decode()
    assert ">not satisfied</th>" in agreement and "not_satisfied" not in agreement  # the confusion table's answers
    queue = client_for(lead).get(f"/audits/{verdict_campaign.pk}/adjudicate/").content.decode()
    assert "feeds no exclusion policy" in queue and "exclusion policies count" not in queue


def test_every_page_showing_a_verdict_units_trajectory_styles_it_as_the_attempt_viewer(
    verdict_campaign, lead, annotator_a, annotator_b
):
    a = services.assignment_next(verdict_campaign, annotator_a)
    label = client_for(annotator_a).get(f"/audits/{verdict_campaign.pk}/label/").content.decode()
    services.label_submit(a, SATISFIED)
    services.label_submit(services.assignment_next(verdict_campaign, annotator_b), NOT_SATISFIED)
    unit = client_for(annotator_a).get(f"/audits/units/{a.unit_id}/").content.decode()
    adjudicate = client_for(lead).get(f"/audits/units/{a.unit_id}/adjudicate/").content.decode()
    for page in (label, unit, adjudicate):
        assert 'class="msg role-' in page or "The attempt's trajectory" in page
        assert "css/checklist.css" in page  # where .msg, .msg-head, .tabs, .find and .goto are styled
