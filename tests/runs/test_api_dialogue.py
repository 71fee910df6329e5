"""GET /api/dialogue-metrics/: numbers worked out by hand from the fixture logs (METRICS.md section 3).

Fixture logs (patience 2): dialog_1 turns s = 1,0,1,1 with r = 1, 0/2, 4/4, 1/1;
dialog_2 turns s = 0,0 with r = 0/1, 1/2 (ended by patience).
"""

from pathlib import Path

import pytest

from runs.ingest import Options, Source, ingest

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "evolif"
URL = "/api/dialogue-metrics/"


def test_it_answers_the_eight_metrics_survival_and_constraints(reviewer_client, evolif_logged):
    body = reviewer_client.get(URL, {"run": "acme-r1"}).json()
    assert body["run"] == ["acme-r1"] and body["patience"] == 2 and body["dialogues"] == 2
    assert body["csr"] == pytest.approx(100 * 3.5 / 6)
    assert body["isr"] == pytest.approx(50.0)
    assert (body["act_len"], body["act_acc"], body["act_succ"], body["lss"]) == pytest.approx((3.0, 1.75, 1.5, 1.0))
    assert body["rob"] == pytest.approx(37.5)
    assert body["rec"] == pytest.approx(50.0) and body["rec_dialogues"] == 2
    assert body["survival"] == pytest.approx([100.0, 100.0, 50.0, 50.0])
    assert body["constraints"] == pytest.approx(
        {"format": 200 / 3, "countableItems": 50.0, "existence": 100.0, "endwith": 50.0}
    )


def test_it_answers_the_survival_band(reviewer_client, evolif_logged):
    """Kaplan-Meier with its 95% band at each turn of `survival`; equal to it when no dialogue is censored."""
    for patience in (1, 2):
        body = reviewer_client.get(URL, {"run": "acme-r1", "patience": patience}).json()
        band = body["survival_band"]
        assert [p["turn"] for p in band] == list(range(1, len(body["survival"]) + 1))
        assert all(p["lower"] <= p["percent"] <= p["upper"] for p in band)
        censored = body["ended_by"]["script_end"] + body["ended_by"]["stopped"]
        if not censored:
            assert [p["percent"] for p in band] == body["survival"]
        else:
            assert all(p["percent"] >= s for p, s in zip(band, body["survival"]))
    assert body["survival_band"][0] == {
        "turn": 1,
        "at_risk": 2,
        "percent": 100.0,
        "se": 0.0,
        "lower": 100.0,
        "upper": 100.0,
    }


def test_it_resimulates_a_lower_patience(reviewer_client, evolif_logged):
    body = reviewer_client.get(URL, {"run": "acme-r1", "patience": 1}).json()
    assert body["patience"] == 1 and body["recorded_patience"] == 2
    assert body["isr"] == pytest.approx(100 / 3)
    assert body["survival"] == pytest.approx([100.0, 50.0])


def test_it_refuses_a_patience_above_the_recorded_one_and_says_why(reviewer_client, evolif_logged):
    response = reviewer_client.get(URL, {"run": "acme-r1", "patience": 3})
    assert response.status_code == 400
    assert "higher than the patience 2" in response.json()["patience"][0]


def test_it_pools_repeated_runs_of_one_model_and_refuses_two_models(reviewer_client, evolif_logged):
    ingest("evolif-eval", [Source.of(FIXTURES / "eval_1.jsonl")], Options(model="acme", run="acme-r2"))
    pooled = reviewer_client.get(URL, {"run": ["acme-r1", "acme-r2"]}).json()
    assert pooled["dialogues"] == 3
    ingest("evolif-eval", [Source.of(FIXTURES / "eval_1.jsonl")], Options(model="other", run="other-r1"))
    mixed = reviewer_client.get(URL, {"run": ["acme-r1", "other-r1"]})
    assert mixed.status_code == 400 and "different models" in mixed.json()["detail"]


def test_it_404s_an_unknown_run_and_needs_a_login(client, reviewer_client, evolif_logged):
    assert reviewer_client.get(URL, {"run": "nope"}).status_code == 404
    assert client.get(URL, {"run": "acme-r1"}).status_code in (401, 403)


def test_it_is_in_the_openapi_schema(reviewer_client):
    assert "/api/dialogue-metrics/" in reviewer_client.get("/api/schema/").content.decode()


def test_it_gives_score_py_figures_beside_its_own(reviewer_client, evolif_logged):
    body = reviewer_client.get(URL, {"run": "acme-r1"}).json()
    reference = body["reference"]
    # score.py's Recovery: dialog_1 1 / (4 - 3 - 1) = inf (it ended by its script), dialog_2 0 / (2 - 0 - 1) = 0
    assert reference["rec"] is None and reference["undefined"] == {"rec": "inf"} and reference["differs"] == ["rec"]
    for name in ("csr", "isr", "act_len", "act_acc", "act_succ", "lss", "rob"):
        assert reference[name] == pytest.approx(body[name]), name
    assert reference["survival"] == [2, 2, 1, 1] and reference["dialogues"] == 2 and reference["turns"] == 6
    assert body["ended_by"] == {"patience": 1, "script_end": 1, "stopped": 0}
