"""GET /api/choice-metrics/?run=<label>."""

from pathlib import Path

import pytest
from rest_framework.test import APIClient
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

from runs.ingest import Options, Source, ingest
from runs.models import AgentModel, Benchmark, Run

from .test_views_choice import TASKS, make_study

pytestmark = pytest.mark.django_db
URL = "/api/choice-metrics/"


@pytest.fixture
def api(reviewer) -> APIClient:
    client = APIClient()
    client.force_authenticate(reviewer)
    return client


def test_it_answers_per_category_metrics_in_percent_equal_to_sklearn(api):
    make_study()
    response = api.get(URL, {"run": "alpha"})
    assert response.status_code == 200
    body = response.json()
    assert set(body) >= {"run", "categories", "overall_accuracy"}
    assert body["run"] == "alpha" and body["benchmark"] == "guidebench"
    assert set(body["categories"]) == {"chat", "price"}
    # labels as the reference compares them: alpha's price answer "0" is text, so it is not the number 0
    truth = {"chat": ["A", "B", "C"], "price": ["1", "0"]}
    predicted = {"chat": ["A", "B", "E"], "price": ["1", "text 0"]}
    for category, cell in body["categories"].items():
        t, p = truth[category], predicted[category]
        kwargs = {"average": "macro", "zero_division": 0}
        assert cell["n"] == len(t)
        assert cell["accuracy"] == pytest.approx(100 * accuracy_score(t, p))
        assert cell["precision"] == pytest.approx(100 * precision_score(t, p, **kwargs))
        assert cell["recall"] == pytest.approx(100 * recall_score(t, p, **kwargs))
        assert cell["f1"] == pytest.approx(100 * f1_score(t, p, **kwargs))
        assert cell["accuracy_ci"][0] <= cell["accuracy"] <= cell["accuracy_ci"][1]
    assert body["categories"]["chat"]["unanswered"] == 1
    assert body["overall_accuracy"] == pytest.approx(100 * 3 / len(TASKS))


def test_it_offers_the_normalised_view(api):
    make_study()
    body = api.get(URL, {"run": "alpha", "view": "normalised"}).json()
    assert body["view"] == "normalised"
    assert body["categories"]["price"]["accuracy"] == 100.0


def test_it_answers_404_with_a_message_for_an_unknown_run(api):
    make_study()
    response = api.get(URL, {"run": "nobody"})
    assert response.status_code == 404
    assert "nobody" in response.json()["detail"]


def test_it_asks_for_the_run(api):
    assert api.get(URL).status_code == 400


def test_it_asks_for_the_benchmark_when_a_label_is_ambiguous(api):
    make_study()
    other = Benchmark.objects.create(slug="guidebench-v2", name="GuideBench 2", kind="choice")
    Run.objects.create(benchmark=other, model=AgentModel.objects.create(name="z"), label="alpha")
    assert api.get(URL, {"run": "alpha"}).status_code == 400
    response = api.get(URL, {"run": "alpha", "benchmark": "guidebench-v2"})
    assert response.status_code == 200
    assert response.json()["categories"] == {} and response.json()["overall_accuracy"] is None


def test_it_requires_authentication():
    response = APIClient().get(URL, {"run": "alpha"})
    assert response.status_code in (401, 403)


def test_it_is_documented_in_the_openapi_schema(api):
    response = api.get("/api/schema/", {"format": "json"})
    schema = response.json()
    operation = schema["paths"]["/api/choice-metrics/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"run", "benchmark", "view"}
    assert {"200", "404"} <= set(operation["responses"])
    assert "ChoiceMetrics" in schema["components"]["schemas"]


def test_it_scores_the_odd_records_generate_resp_writes_as_evaluate_py_does(api):
    """generated/: files as generate_resp.py writes them, with a failed generation ({} and cleaned_response ""),
    a number where an option letter belongs, a null answer, a bare JSON number as the whole answer, right answers."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "guidebench"
    ingest("guidebench-tasks", [Source.of(fixtures / f"{c}_tasks.json") for c in ("chat", "price")], Options())
    ingest(
        "guidebench-predictions",
        [Source.of(fixtures / "generated" / f"{c}_tasks.json") for c in ("chat", "price")],
        Options(model="m", run="generated"),
    )
    body = api.get(URL, {"run": "generated"}).json()
    # evaluate.py: a missing or non-string option counts as "E"; a null price answer as -1 (a bare number as the
    # whole answer makes evaluate.py crash on .get; the portal counts it as missing: -1 too)
    labels = {"chat": (["A", "D", "B"], ["E", "E", "B"]), "price": ([1, 0, 1], [-1, -1, 1])}
    kwargs = {"average": "macro", "zero_division": 0}
    for category, (t, p) in labels.items():
        cell = body["categories"][category]
        assert (cell["n"], cell["unanswered"]) == (3, 2)
        assert cell["accuracy"] == pytest.approx(100 * accuracy_score(t, p)) == pytest.approx(100 / 3)
        assert cell["precision"] == pytest.approx(100 * precision_score(t, p, **kwargs))
        assert cell["recall"] == pytest.approx(100 * recall_score(t, p, **kwargs))
        assert cell["f1"] == pytest.approx(100 * f1_score(t, p, **kwargs))
    assert body["categories"]["price"]["f1"] == pytest.approx(100 * 2 / 9)
    # evaluate.py's "all" needs its six categories
    assert body["reference_overall_accuracy"] is None and body["overall_accuracy"] == pytest.approx(100 / 3)
