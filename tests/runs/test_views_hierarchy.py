"""Hierarchy pages: metrics, conflict resolution, style re-check, sample viewer, and the metrics page's tables from
/api/hierarchy-metrics/."""

import json
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.ingest import Options, Source, ingest
from runs.models import Attempt, Job, Run
from runs.recheck import recheck_run

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "manyih"
SLUG = "manyih-coding"
API = "/api/hierarchy-metrics/"
EVIL = "<script>alert('x')</script>"


def add_run(tmp_path, label, interface, *, change=None):
    doc = json.loads((FIXTURES / "results_small.json").read_text())
    doc["eval_config"]["hierarchy_format"] = interface
    if change:
        change(doc)
    path = tmp_path / f"{label}.json"
    path.write_text(json.dumps(doc))
    ingest("manyih-results", [Source.of(path)], Options(model="acme/coder-1", run=label))
    run = Run.objects.get(label=label)
    recheck_run(run=run)
    return run


def flip_sample_0(doc):
    """The scalar run fails the unit tests of sample 0 (passed in the ordinal run) and returns hostile code."""
    for r in doc["results"]:
        if r["id"] == 0:
            r["evaluation"].update(test_passed=False, overall_passed=False, test_result=EVIL)
            r["response"] = f'```python\ndef f(x):\n    return "{EVIL}" and x\n```'


@pytest.fixture
def study(tmp_path):
    ingest("manyih-data", [Source.of(FIXTURES / "coding_small.json")], Options())
    return add_run(tmp_path, "coder · ordinal", "ordinal"), add_run(
        tmp_path, "coder · scalar", "scalar", change=flip_sample_0
    )


def url(name, **kwargs):
    return reverse(f"runs:{name}", kwargs={"slug": SLUG, **kwargs})


def test_it_shows_accuracy_with_intervals_and_compares_the_two_interfaces(reviewer_client, study):
    response = reviewer_client.get(url("hierarchy-metrics"))
    page = response.content.decode()
    assert response.status_code == 200
    assert "acme/coder-1" in page and "Acc_style" in page and "How is this computed" in page
    # two runs x three samples: only sample 0 of the ordinal run passes. The model's ordinal and scalar runs are two
    # conditions: rows are per run unless pooling per model is asked for
    rows = response.context["rows"]
    assert response.context["by"] == "run"
    assert [(r.label, r.n, r.acc) for r in rows] == [
        ("coder · ordinal", 3, pytest.approx(100 / 3)),
        ("coder · scalar", 3, 0.0),
    ]
    pooled = reviewer_client.get(url("hierarchy-metrics"), {"by": "model"}).context["rows"]
    assert [(r.label, r.n, r.acc) for r in pooled] == [("acme/coder-1", 6, pytest.approx(100 / 6))]
    assert reviewer_client.get(API, {"benchmark": SLUG}).json()["rows"][0]["label"] == "coder · ordinal"
    comparison = response.context["comparison"]
    assert (comparison.a, comparison.b) == ("coder · ordinal", "coder · scalar")
    assert comparison.delta == pytest.approx(-100 / 3) and comparison.flip_rate == pytest.approx(100 / 3)
    assert [f.sample for f in comparison.flips] == ["0"]
    assert 'data-plotly="acc-figure" data-figure="{' in page


def test_the_api_answers_the_metrics_pages_tables(reviewer_client, study):
    response = reviewer_client.get(API, {"benchmark": SLUG, "by": "run"})
    data = response.json()
    assert response.status_code == 200 and data["judge"] == "manyih-log"
    assert [(r["label"], r["n"], r["acc"]) for r in data["rows"]] == [
        ("coder · ordinal", 3, pytest.approx(100 / 3)),
        ("coder · scalar", 3, 0.0),
    ]
    assert data["rows"][0]["acc_ci"] is not None
    assert {g["group"] for g in data["style_group_rows"]} == {
        "quotes",
        "license",
        "type_hints",
        "indent",
        "naming_convention",
        "function_doc",
    }


def test_it_switches_to_the_checker_judge(reviewer_client, study):
    response = reviewer_client.get(API, {"benchmark": SLUG, "by": "run", "judge": "manyih-style-checker"})
    assert response.json()["judge"] == "manyih-style-checker"
    # the log fails sample 1 (indent) and sample 2 (no response); the checker passes both indent
    # instructions the code follows and finds no docstring in the empty code of sample 2
    assert response.json()["rows"][0]["acc_style"] == 100.0


def test_it_tabulates_how_conflict_groups_were_resolved_and_drills_down(reviewer_client, study):
    response = reviewer_client.get(
        url("hierarchy-conflicts"), {"outcome": "winner", "label": "acme/coder-1", "by": "model"}
    )
    assert response.status_code == 200
    overall = response.context["rates"][0]
    # four conflict groups per run (quotes, license, indent, function_doc), two runs
    assert overall.tiers is None and overall.n == 8
    examples = response.context["examples"]
    assert examples and all(e.outcome == "winner" for e in examples)
    assert (
        reverse("runs:hierarchy-attempt", kwargs={"slug": SLUG, "pk": examples[0].attempt_id})
        in response.content.decode()
    )


def test_it_lists_disagreements_between_log_and_checker(editor_client, study):
    response = editor_client.get(url("hierarchy-recheck"), {"run": "coder · ordinal"})
    rows = {a.group: a for a in response.context["agreement"]}
    # sample 2 is an evaluator error (no response): its logged fail judges no style and is left out
    assert (rows["all groups"].pairs, rows["all groups"].agree) == (6, 4)
    assert response.context["n_disagreements"] == 2
    assert {d["item__group"] for d in response.context["disagreements"]} == {"indent"}
    html = response.content.decode()  # the one re-check template, with the hierarchy kind's head, start form and links
    assert "Style re-check" in html and "<code>manyih-style-checker</code>" in html and "Checker's reason" in html
    assert f'action="{url("hierarchy-recheck-start")}"' in html
    assert url("hierarchy-attempt", pk=response.context["disagreements"][0]["attempt_id"]) in html


def test_it_starts_the_re_check_job_and_redirects_to_it(editor_client, study, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = editor_client.post(url("hierarchy-recheck-start"), {"run": ["coder · scalar"], "confirm": "1"})
    job = Job.objects.get(kind="recheck")
    assert response.status_code == 302 and response["Location"] == reverse("runs:job", kwargs={"job_id": job.id})
    job.refresh_from_db()
    assert job.state == "succeeded" and job.params["run_ids"] == [study[1].id]
    assert editor_client.get(url("hierarchy-recheck-start")).status_code == 405


def test_it_shows_a_sample_with_badges_winners_and_escaped_model_text(reviewer_client, study):
    attempt = Attempt.objects.get(run=study[1], instance__external_id="0")
    response = reviewer_client.get(url("hierarchy-attempt", pk=attempt.id))
    page = response.content.decode()
    assert response.status_code == 200
    assert "Privilege 1 ★" in page and "Privilege 4" in page
    assert EVIL not in page and "&lt;script&gt;alert(" in page
    groups = {g["style_group"]: g for g in response.context["groups"]}
    license_group = groups["license"]["members"]
    # a tie on privilege 30: the later instruction (#4, no licence) wins
    assert [(i["key"], i["active"]) for i in license_group] == [("4", True), ("3", False)]
    assert "later one in the prompt wins" in license_group[0]["why"]
    assert groups["quotes"]["outcome"][0] == "winner"


def test_it_explains_a_chain_where_a_low_instruction_stays_active(reviewer_client, study):
    attempt = Attempt.objects.get(run=study[0], instance__external_id="1")
    response = reviewer_client.get(url("hierarchy-attempt", pk=attempt.id))
    indent = {i["key"]: i for i in response.context["groups"][0]["members"]}
    assert indent["3"]["active"] and "was suppressed" in indent["3"]["why"]
    assert indent["2"]["why"] == "suppressed by #1 (higher privilege)"


def test_it_serves_only_the_results_partial_to_htmx(reviewer_client, study):
    for name in ("hierarchy-metrics", "hierarchy-conflicts", "hierarchy-recheck"):
        response = reviewer_client.get(url(name), {"by": "run"}, HTTP_HX_REQUEST="true")
        page = response.content.decode()
        assert response.status_code == 200 and page.lstrip().startswith('<section id="results"')
        assert "<html" not in page


def test_it_redirects_anonymous_visitors_to_login(client, study):
    attempt = Attempt.objects.first()
    for target in (
        url("hierarchy-metrics"),
        url("hierarchy-conflicts"),
        url("hierarchy-recheck"),
        url("hierarchy-attempt", pk=attempt.id),
    ):
        response = client.get(target)
        assert response.status_code == 302 and "/login/" in response["Location"]
    assert client.post(url("hierarchy-recheck-start")).status_code == 302


def test_it_answers_404_for_another_kind_of_benchmark(reviewer_client, study):
    assert reviewer_client.get(reverse("runs:hierarchy-metrics", kwargs={"slug": "nope"})).status_code == 404


def test_it_keeps_the_query_count_when_runs_are_added(reviewer_client, study, tmp_path):
    counts = {}
    targets = {name: url(name) for name in ("hierarchy-metrics", "hierarchy-conflicts", "hierarchy-recheck")}
    targets["api"] = f"{API}?benchmark={SLUG}"
    for n in (2, 3):
        if n == 3:
            add_run(tmp_path, "coder · again", "ordinal")
        for name, target in targets.items():
            with CaptureQueriesContext(connection) as queries:
                assert reviewer_client.get(target).status_code == 200
            counts[(name, n)] = len(queries)
    for name in targets:
        # 2 fewer than before the user cache: the session's user and roles come from it (ifportal.auth)
        assert counts[(name, 2)] == counts[(name, 3)] <= 22, name
    attempt = Attempt.objects.first()
    with CaptureQueriesContext(connection) as queries:
        reviewer_client.get(url("hierarchy-attempt", pk=attempt.id))
    assert len(queries) <= 12


def test_it_says_in_plain_words_when_the_evaluator_found_no_code_or_failed(reviewer_client, tmp_path):
    ingest("manyih-data", [Source.of(FIXTURES / "coding_small.json")], Options())
    ingest("manyih-results", [Source.of(FIXTURES / "results_evaluator.json")], Options(model="fake", run="fake-r1"))
    pages = {
        a.instance.external_id: reviewer_client.get(url("hierarchy-attempt", pk=a.id)).content.decode()
        for a in Attempt.objects.select_related("instance")
    }
    assert "The response had no code block" in pages["1"] and "No code found in response" in pages["1"]
    assert "The evaluator recorded an error on this sample (it has no response)" in pages["0"]
    assert "unindent does not match any outer indentation level" in pages["0"]
    assert "1 of 1 assertion passed" in pages["2"] and "As the evaluator extracted it" in pages["2"]
    metrics = reviewer_client.get(url("hierarchy-metrics")).content.decode()
    assert "1 left out · as failures 0.00" in metrics


def test_it_escapes_the_evaluators_error_and_extracted_code(reviewer_client, tmp_path):
    doc = json.loads((FIXTURES / "results_evaluator.json").read_text())
    for r in doc["results"]:
        if r["id"] == 0:
            r["error"] = f"checker failed on {EVIL}"
        if r["id"] == 2:
            r["evaluation"]["extracted_code"] = f"def f(x):\n    return '{EVIL}'"
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    ingest("manyih-data", [Source.of(FIXTURES / "coding_small.json")], Options())
    ingest("manyih-results", [Source.of(path)], Options(model="fake", run="fake-r1"))
    for attempt in Attempt.objects.filter(instance__external_id__in=["0", "2"]):
        page = reviewer_client.get(url("hierarchy-attempt", pk=attempt.id)).content.decode()
        assert EVIL not in page and "&lt;script&gt;alert(" in page


def test_one_start_view_serves_both_kinds_and_refuses_a_benchmark_of_the_other_kind(editor_client, study):
    # the dialogue route with a hierarchy benchmark: not found, and no job made
    assert editor_client.post(reverse("runs:dialogue-rescore-start", args=[SLUG])).status_code == 404
    assert not Job.objects.exists()
