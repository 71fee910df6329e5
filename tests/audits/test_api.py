import pytest
from sklearn.metrics import cohen_kappa_score

from audits.models import AuditUnit

from .conftest import client_for


def test_it_runs_the_whole_audit_through_the_api(bench, lead, annotator_a, annotator_b):
    lead_c, a_c, b_c = client_for(lead), client_for(annotator_a), client_for(annotator_b)
    created = lead_c.post(
        "/api/audits/campaigns/",
        {
            "name": "api",
            "subject": "checklist_items",
            "benchmarks": ["octo-test"],
            "strata": ["category"],
            "allocation": "proportional",
            "size": 9,
            "seed": 3,
        },
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    pk = created.json()["id"]
    assert created.json()["units"] == 9 and created.json()["state"] == "started"
    labels_a, labels_b = [], []
    for n in range(9):
        for client, values, store in (
            (a_c, "yes" if n % 3 else "no", labels_a),
            (b_c, "yes" if n % 4 else "no", labels_b),
        ):
            nxt = client.post(f"/api/audits/campaigns/{pk}/next/")
            assert nxt.status_code == 200
            body = {"values": {"decidable": values, "grounded": "yes", "duplicate": "none", "overall": "ok"}}
            saved = client.post(
                f"/api/audits/assignments/{nxt.json()['id']}/label/", body, content_type="application/json"
            )
            assert saved.status_code == 200
            store.append(values)
    assert a_c.post(f"/api/audits/campaigns/{pk}/next/").status_code == 204
    disagreements = lead_c.get(f"/api/audits/campaigns/{pk}/disagreements/").json()
    assert len(disagreements) == sum(x != y for x, y in zip(labels_a, labels_b))
    agreement = lead_c.get(f"/api/audits/campaigns/{pk}/agreement/").json()
    decidable = agreement["criteria"]["decidable"]
    assert decidable["kappa"] == pytest.approx(cohen_kappa_score(labels_a, labels_b))
    assert decidable["agreement"] == pytest.approx(sum(x == y for x, y in zip(labels_a, labels_b)) / 9)
    assert len(decidable["kappa_ci"]) == 2
    unit = disagreements[0]["id"]
    done = lead_c.post(
        f"/api/audits/units/{unit}/adjudicate/",
        {"final_status": "invalid", "reason": "not-decidable"},
        content_type="application/json",
    )
    assert done.status_code == 200 and done.json()["final_source"] == "adjudicated"
    assert AuditUnit.objects.get(pk=unit).state == "closed"
    again = lead_c.post(
        f"/api/audits/units/{unit}/adjudicate/", {"final_status": "valid"}, content_type="application/json"
    )
    assert again.status_code == 409


def test_it_refuses_campaign_creation_and_adjudication_to_annotators(bench, campaign, annotator_a):
    client = client_for(annotator_a)
    assert client.post("/api/audits/campaigns/", {"name": "x"}, content_type="application/json").status_code == 403
    unit = campaign.units.first()
    assert (
        client.post(
            f"/api/audits/units/{unit.pk}/adjudicate/", {"final_status": "valid"}, content_type="application/json"
        ).status_code
        == 403
    )


def test_it_refuses_anonymous_api_calls(campaign, client):
    assert client.post(f"/api/audits/campaigns/{campaign.pk}/next/").status_code in (401, 403)
