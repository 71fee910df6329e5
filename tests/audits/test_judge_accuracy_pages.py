"""The judge accuracy page and the calibrated leaderboard: page, exports, API, who may read them."""

import pytest

from audits import services
from runs.models import Verdict

from .conftest import NOT_SATISFIED, SATISFIED, client_for


def _truth(unit):
    """The humans agree with judge-1 (a "not applicable" of judge-1 is satisfied)."""
    result = Verdict.objects.get(attempt_id=unit.attempt_id, item_id=unit.item_id, judge__name="judge-1").result
    return NOT_SATISFIED if result == "fail" else SATISFIED


@pytest.fixture
def settled(verdict_campaign, annotator_a, annotator_b):
    for user in (annotator_a, annotator_b):
        while (a := services.assignment_next(verdict_campaign, user)) is not None:
            services.label_submit(a, _truth(a.unit))
    assert not verdict_campaign.units.exclude(state="closed").exists()
    return verdict_campaign


def test_the_judge_accuracy_page_shows_each_judge_against_the_humans(settled, lead):
    client = client_for(lead)
    html = client.get(f"/audits/{settled.pk}/judge-accuracy/").content.decode()
    assert "Per judge and model" in html and 'id="disagreements"' in html and "LENIENT-REASON" in html
    assert "<th>Judge's verdict</th>" in html  # the judge's name and its verdict are two columns, named apart
    body = client.get(f"/api/audits/campaigns/{settled.pk}/judge-accuracy/").json()
    overall = {r["judge"]: r for r in body["overall"]}
    assert overall["judge-1"]["accuracy"] == pytest.approx(100.0) and overall["judge-1"]["n"] == 16
    assert overall["lenient"]["specificity"] == pytest.approx(0.0) and overall["lenient"]["disagreements"] == 5
    assert len(body["disagreements"]) == 5 and {d["judge"] for d in body["disagreements"]} == {"lenient"}
    csv = client.get(f"/audits/{settled.pk}/judge-accuracy/?export=csv&table=model").content.decode()
    assert csv.splitlines()[0].startswith("Judge,Group,Decided units")
    assert client.get(f"/audits/{settled.pk}/judge-accuracy/?export=json").json()["tables"]


def test_the_calibrated_leaderboard_corrects_the_lenient_judge(settled, verdict_bench, lead):
    client = client_for(lead)
    body = client.get("/api/audits/calibrated/octo-test/").json()
    assert body["campaign"] == settled.pk
    rows = {(r["model"], r["judge"]): r for r in body["rows"]}
    lenient_alpha = rows[("alpha", "lenient")]
    assert lenient_alpha["raw_csr"] == pytest.approx(100.0)
    # every pair is audited: the calibrated CSR is the humans' rate, alpha failed x on each of 3 instances
    assert lenient_alpha["csr"] == pytest.approx(100 * 6 / 9)
    assert lenient_alpha["isr"] is None  # lenient never fails: P(human pass | its fail) cannot be estimated
    judge1 = rows[("alpha", "judge-1")]  # judge-1 is always right: q1 = 1, q0 = 0, so ISR is its own
    assert judge1["isr"] == pytest.approx(judge1["raw_isr"])
    assert rows[("alpha", "judge-1")]["csr"] == pytest.approx(rows[("alpha", "judge-1")]["raw_csr"])
    html = client.get("/audits/calibrated/octo-test/").content.decode()
    assert "calibrated-table" in html and "small-audit" in html  # 9 audited pairs per model: wide, and it says why
    assert client.get("/audits/calibrated/octo-test/?export=csv&table=rankings").status_code == 200
    assert client.get("/api/audits/calibrated/octo-test/?campaign=999").status_code == 400


def test_without_a_settled_verdict_audit_nothing_is_calibrated(verdict_campaign, lead):
    client = client_for(lead)
    assert client.get("/api/audits/calibrated/octo-test/").json()["rows"] == []
    html = client.get("/audits/calibrated/octo-test/").content.decode()
    assert "no-calibration" in html and "not settled" in html
    assert 'id="campaign"' not in html  # no empty campaign list to choose from


def test_the_calibrated_leaderboard_offers_its_settled_campaigns(settled, lead):
    html = client_for(lead).get("/audits/calibrated/octo-test/").content.decode()
    assert 'id="campaign"' in html and f'<option value="{settled.pk}" selected>' in html


def test_annotators_may_not_read_judge_accuracy_or_the_calibrated_leaderboard(settled, annotator_a):
    client = client_for(annotator_a)
    assert client.get(f"/audits/{settled.pk}/judge-accuracy/").status_code == 403
    assert client.get(f"/api/audits/campaigns/{settled.pk}/judge-accuracy/").status_code == 403
    assert client.get("/audits/calibrated/octo-test/").status_code == 403
    assert client.get("/api/audits/calibrated/octo-test/").status_code == 403


def test_both_pages_share_through_the_frame(settled, lead):
    from django.urls import reverse

    from runs.models import ShareLink

    client = client_for(lead)
    for url, table in (
        (f"/audits/{settled.pk}/judge-accuracy/", "overall"),
        (f"/audits/calibrated/octo-test/?campaign={settled.pk}", "calibrated"),
    ):
        assert "Share…" in client.get(url).content.decode()
        response = client.post(reverse("runs:page-share-create", args=["octo-test"]), {"path": url})
        assert "/s/" in response.content.decode()
        assert ShareLink.objects.order_by("-pk").first().snapshot["tables"][0]["name"] == table


def test_an_item_audit_has_no_judge_accuracy_and_says_why(campaign, lead):
    client = client_for(lead)
    assert "not-verdicts" in client.get(f"/audits/{campaign.pk}/judge-accuracy/").content.decode()
    response = client.get(f"/api/audits/campaigns/{campaign.pk}/judge-accuracy/")
    assert response.status_code == 400 and "verdict audit" in response.json()["detail"]
