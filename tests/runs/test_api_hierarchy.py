"""GET /api/hierarchy/resolutions/ and /api/hierarchy-metrics/ on the hand-made ManyIH fixtures.

coding_small.json (prompt order = id order): sample 0: quotes 1 (z=50) x 2 (z=80), license 3 (z=30) x 4 (z=30, tie:
the later wins), type_hints 5 (z=10) alone; sample 1: indent chain 1 (90) x 2 (60) x 3 (20): 1 wins, 2 suppressed,
3 active because its only rival was suppressed; naming 4 alone; sample 2: function_doc 1 (70) x 2 (75).
results_small.json: sample 0 passes tests and every style; sample 1 passes tests, indent fails, naming passes;
sample 2 fails tests and has no style verdicts (its active items fail).
"""

import json
from pathlib import Path

import pytest

from runs.api.hierarchy import sample_resolution
from runs.ingest import Options, Source, ingest
from runs.metrics.stats import bootstrap_interval
from runs.models import Judge, JudgeKind

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "manyih"
RESOLUTIONS = "/api/hierarchy/resolutions/"
METRICS = "/api/hierarchy-metrics/"


@pytest.fixture
def samples():
    ingest("manyih-data", [Source.of(FIXTURES / "coding_small.json")], Options())


@pytest.fixture
def run(samples):
    ingest(
        "manyih-results", [Source.of(FIXTURES / "results_small.json")], Options(model="acme/coder-1", run="coder-r1")
    )


def test_it_resolves_every_sample_with_ties_and_chains(reviewer_client, samples):
    body = reviewer_client.get(RESOLUTIONS, {"benchmark": "manyih-coding", "interface": "scalar"}).json()
    assert body["count"] == 3 and body["interface"] == "scalar"
    assert [(r["sample"], r["active"], r["suppressed"]) for r in body["results"]] == [
        ("0", ["2", "4", "5"], ["1", "3"]),
        ("1", ["1", "4", "3"], ["2"]),
        ("2", ["2"], ["1"]),
    ]
    assert body["results"][0]["privileges"] == {"1": 50, "2": 80, "3": 30, "4": 30, "5": 10}


def test_it_gives_the_same_resolution_in_the_ordinal_interface_and_shows_ranks(reviewer_client, samples):
    scalar = reviewer_client.get(RESOLUTIONS, {"benchmark": "manyih-coding", "interface": "scalar"}).json()["results"]
    ordinal = reviewer_client.get(RESOLUTIONS, {"benchmark": "manyih-coding", "interface": "ordinal"}).json()["results"]
    assert [(r["active"], r["suppressed"]) for r in ordinal] == [(r["active"], r["suppressed"]) for r in scalar]
    assert ordinal[0]["privileges"] == {"1": 2, "2": 1, "3": 3, "4": 3, "5": 4}
    assert ordinal[1]["privileges"] == {"1": 1, "2": 2, "3": 4, "4": 3}


def test_it_pages_with_limit_and_offset_in_natural_order(reviewer_client, samples):
    body = reviewer_client.get(RESOLUTIONS, {"benchmark": "manyih-coding", "limit": 2, "offset": 1}).json()
    assert [r["sample"] for r in body["results"]] == ["1", "2"] and body["previous"] and body["next"] is None


def test_it_reads_ordinal_ranks_with_gaps_like_dense_ones():
    items = [
        {"key": "a", "position": 1, "privilege": 5, "details": {"rank": 3, "conflicts_with": ["b"]}},
        {"key": "b", "position": 2, "privilege": 9, "details": {"rank": 1, "conflicts_with": ["a"]}},
        {"key": "c", "position": 3, "privilege": 9, "details": {"rank": 1, "conflicts_with": ["b"]}},
    ]
    for interface in ("scalar", "ordinal"):
        assert sample_resolution(items, interface=interface)["active"] == ["c", "a"]


def test_it_refuses_an_unknown_benchmark_or_interface(reviewer_client, samples):
    assert reviewer_client.get(RESOLUTIONS, {"benchmark": "nope"}).status_code == 404
    assert reviewer_client.get(RESOLUTIONS, {"benchmark": "manyih-coding", "interface": "both"}).status_code == 400
    assert reviewer_client.get(RESOLUTIONS).status_code == 400


def test_it_answers_acc_and_style_groups_of_a_run_in_percent(reviewer_client, run):
    body = reviewer_client.get(METRICS, {"run": "coder-r1"}).json()
    assert body["judge"] == "manyih-log" and body["samples"] == 3 and body["model"] == "acme/coder-1"
    assert (body["acc"], body["acc_test"], body["acc_style"]) == pytest.approx((100 / 3, 200 / 3, 100 / 3))
    passed = [1.0, 0.0, 0.0]  # samples 0, 1, 2
    assert body["acc_ci"] == pytest.approx(list(bootstrap_interval(3, lambda w: w @ passed / 3 * 100)))
    assert body["acc_ci"][0] <= body["acc"] <= body["acc_ci"][1]
    # sample 2 is an evaluator error: the reference leaves it out of its per-group rates (function_doc has no
    # style-checked sample), while Acc and Acc_style count it as failed
    rates = {g: r for g, r in body["by_style_group"].items() if r is not None}
    assert rates == pytest.approx(
        {"quotes": 100.0, "license": 100.0, "type_hints": 100.0, "indent": 0.0, "naming_convention": 100.0}
    )
    assert body["by_style_group"]["function_doc"] is None
    assert body["style_groups"]["function_doc"] == {
        "passed": 0,
        "total": 0,
        "left_out": 1,
        "rate": None,
        "rate_errors_as_failures": 0.0,
    }
    assert body["style_groups"]["indent"] == {
        "passed": 0,
        "total": 1,
        "left_out": 0,
        "rate": 0.0,
        "rate_errors_as_failures": 0.0,
    }
    evaluator = body["evaluator"]
    assert (
        evaluator["total"],
        evaluator["test_passed"],
        evaluator["style_passed"],
        evaluator["overall_passed"],
        evaluator["errors"],
        evaluator["no_code"],
    ) == (3, 2, 1, 1, 1, 0)
    assert evaluator["style_satisfaction_rate"] == pytest.approx((1.0 + 0.5) / 2)


def test_it_refuses_a_judge_that_scored_nothing_here_in_the_pages_words(reviewer_client, run):
    Judge.objects.create(name="nobody", kind=JudgeKind.HUMAN)
    for name in ("nobody", "ghost"):
        response = reviewer_client.get(METRICS, {"run": "coder-r1", "judge": name})
        assert response.status_code == 400
        assert response.json() == {"judge": [f"No judge named '{name}' scored this benchmark."]}


def test_it_404s_an_unknown_run(reviewer_client, run):
    assert reviewer_client.get(METRICS, {"run": "nope"}).status_code == 404


def test_it_needs_a_login(client, run):
    assert client.get(METRICS, {"run": "coder-r1"}).status_code in (401, 403)
    assert client.get(RESOLUTIONS, {"benchmark": "manyih-coding"}).status_code in (401, 403)


def test_it_is_documented_in_the_openapi_schema(reviewer_client):
    schema = json.loads(reviewer_client.get("/api/schema/", {"format": "json"}).content)
    resolutions = schema["paths"]["/api/hierarchy/resolutions/"]["get"]
    assert {p["name"] for p in resolutions["parameters"]} >= {"benchmark", "interface", "limit", "offset"}
    metrics = schema["paths"]["/api/hierarchy-metrics/"]["get"]
    assert {p["name"] for p in metrics["parameters"]} >= {"run", "judge"}
    assert {"HierarchyMetrics", "ResolutionList", "SampleResolution"} <= set(schema["components"]["schemas"])


def test_it_answers_the_figures_the_evaluator_wrote_in_its_file(reviewer_client, samples):
    """results_evaluator.json was written by ManyIH's own evaluator (sample 0: code it cannot tokenise; 1: no code;
    2: clean): its `analysis` block holds the figures it printed."""
    path = FIXTURES / "results_evaluator.json"
    ingest("manyih-results", [Source.of(path)], Options(model="fake", run="fake-r1"))
    analysis = json.loads(path.read_text())["analysis"]
    body = reviewer_client.get(METRICS, {"run": "fake-r1"}).json()
    summary, fine = analysis["summary"], analysis["fine_grained"]
    ev = body["evaluator"]
    assert (
        (ev["total"], ev["test_passed"], ev["style_passed"], ev["overall_passed"])
        == (summary["total_samples"], summary["test_passed"], summary["style_passed"], summary["overall_passed"])
        == (3, 1, 1, 1)
    )
    assert round(body["acc"], 2) == summary["overall_passed_pct"] == 33.33
    assert ev["test_failure_reasons"] == {k: v["count"] for k, v in analysis["test_failures"]["by_reason"].items()}
    assert (
        (ev["assertion_pass_rate"], ev["total_assertions"], ev["passed_assertions"])
        == (
            fine["assertion_stats"]["avg_pass_rate"],
            fine["assertion_stats"]["total_assertions"],
            fine["assertion_stats"]["passed_assertions"],
        )
        == (0.5, 1, 1)
    )
    assert ev["style_satisfaction_rate"] == fine["style_satisfaction"]["avg_satisfaction_rate"] == 1.0
    assert {g: c["rate"] for g, c in fine["style_satisfaction"]["by_category"].items()} == {"function_doc": 1.0}
    assert {g: r for g, r in body["by_style_group"].items() if r is not None} == {"function_doc": 100.0}
    assert body["style_groups"]["indent"] == {
        "passed": 0,
        "total": 0,
        "left_out": 1,
        "rate": None,
        "rate_errors_as_failures": 0.0,
    }
    assert (ev["no_code"], ev["errors"]) == (1, 1)


def test_the_attempts_api_keeps_what_the_evaluator_logged(reviewer_client, samples):
    ingest("manyih-results", [Source.of(FIXTURES / "results_evaluator.json")], Options(model="fake", run="fake-r1"))
    body = reviewer_client.get("/api/attempts/", {"run": "fake-r1"}).json()
    by_sample = {a["instance"]: a["outcome"] for a in body["results"]}
    assert by_sample["0"]["status"] == "error" and by_sample["0"]["error"].startswith("unindent does not match")
    assert (by_sample["1"]["status"], by_sample["1"]["error"]) == ("no_code", "No code found in response")
    assert (
        by_sample["2"]["extracted_code"],
        by_sample["2"]["passed_assertions"],
        by_sample["2"]["total_assertions"],
    ) == ("def f(x):\n    return x", 1, 1)
    verdicts = reviewer_client.get(
        f"/api/attempts/{next(a['id'] for a in body['results'] if a['instance'] == '1')}/verdicts/"
    )
    reasons = {v["reasoning"] for v in verdicts.json()["results"] if v["result"] == "fail"}
    assert reasons == {
        "the response had no code block; the evaluator counts the sample as failed (No code found in response)"
    }
