"""Audit exclusion policies on the hierarchy (ManyIH) metrics: the page and /api/hierarchy-metrics/ (the page's
tables for the same query with ?benchmark=, or one run's figures with ?run=).

The small fixture (tests/fixtures/manyih, see tests/runs/test_api_hierarchy.py): sample 1's active indent
instructions are #1 and #3, and the logged verdict of a style group goes to each of its active instructions.
acme/coder-1 has two runs as logged (sample 0 passes, sample 1 fails indent, sample 2 fails): Acc 2/6.
acme/coder-2 passes indent in both runs; its second run fails naming on sample 1: Acc 3/6.
Annotators flag sample 1's #1 and #3 as incorrect: coder-1 then passes sample 1 in both runs (4/6) and
moves above coder-2 (still 3/6).
"""

import json
from pathlib import Path

import pytest
from django.utils.html import escape

from audits import services
from runs.demo import SCALES, manyih_plan
from runs.exclusions import exclusion_policies
from runs.ingest import Options, Source, ingest
from runs.metrics import hierarchy as metrics
from runs.models import Benchmark, Verdict
from runs.recheck import recheck_run
from runs.selectors.hierarchy import hierarchy_judges, sample_rows_select
from runs.services import rollups_rebuild_for_attempts

from .conftest import client_for, label_all

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "manyih"
SLUG = "manyih-coding"
PAGE = f"/b/{SLUG}/hierarchy/"
API = "/api/hierarchy-metrics/"
FLAGGED = {f"{SLUG}/1/1", f"{SLUG}/1/3"}  # sample 1's two active indent instructions


def _unknown_policy() -> str:
    """What the page and the API say of ?exclude=nope (runs.selectors.state.KindQuery)."""
    return "unknown exclusion policy 'nope'; one of: none, " + ", ".join(exclusion_policies())


def _run(tmp_path, label, model, **groups):
    """Ingest the logged results with sample 1's style groups set as given (True/False)."""
    doc = json.loads((FIXTURES / "results_small.json").read_text())
    for r in doc["results"]:
        if r["id"] == 1 and groups:
            r["evaluation"]["each_style_passed"].update(groups)
            passed = all(r["evaluation"]["each_style_passed"].values())
            r["evaluation"].update(style_passed=passed, overall_passed=passed and r["evaluation"]["test_passed"])
    path = tmp_path / f"{label}.json"
    path.write_text(json.dumps(doc))
    ingest("manyih-results", [Source.of(path)], Options(model=model, run=label))


@pytest.fixture
def study(db, tmp_path):
    ingest("manyih-data", [Source.of(FIXTURES / "coding_small.json")], Options())
    _run(tmp_path, "c1-a", "acme/coder-1")
    _run(tmp_path, "c1-b", "acme/coder-1")
    _run(tmp_path, "c2-a", "acme/coder-2", indent=True)
    _run(tmp_path, "c2-b", "acme/coder-2", indent=True, naming_convention=False)
    return Benchmark.objects.get(slug=SLUG)


@pytest.fixture
def audited(study, lead, annotator_a, annotator_b):
    """Every generated constraint audited by both annotators; both call sample 1's #1 and #3 incorrect."""
    campaign = services.campaign_create(
        name="constraints",
        subject="hierarchy_constraints",
        benchmarks=[study],
        strata=["benchmark"],
        allocation="proportional",
        size=11,
        seed=5,
        user=lead,
    )
    campaign = services.campaign_start(campaign)
    assert campaign.units.count() == 11
    label_all(
        campaign,
        [annotator_a, annotator_b],
        lambda user, unit: {"faithful": "incorrect" if unit.key in FLAGGED else "faithful"},
    )
    return study


def _acc(response):
    return {r.label: r.acc for r in response.context["rows"]}


def test_a_policy_that_flags_constraints_changes_acc_and_the_ranking_on_the_page(audited, lead):
    client = client_for(lead)
    plain = client.get(PAGE)
    assert plain.context["exclusion"] is None
    assert _acc(plain) == {"acme/coder-1": pytest.approx(100 * 2 / 6), "acme/coder-2": pytest.approx(100 * 3 / 6)}

    page = client.get(PAGE, {"exclude": "adjudicated_invalid"})
    html = page.content.decode()
    assert page.status_code == 200
    assert _acc(page) == {"acme/coder-1": pytest.approx(100 * 4 / 6), "acme/coder-2": pytest.approx(100 * 3 / 6)}
    exclusion = page.context["exclusion"]
    assert exclusion["n_excluded"] == 2 and exclusion["tau"] == -1.0
    lines = exclusion["lines"]
    assert (lines["acme/coder-1"].rank_before, lines["acme/coder-1"].rank_after) == (2, 1)
    assert (lines["acme/coder-2"].rank_before, lines["acme/coder-2"].rank_after) == (1, 2)
    assert [(s["up"], s["down"]) for s in exclusion["swaps"]] == [("acme/coder-1", "acme/coder-2")]
    # coder-1 failed both flagged constraints every time, coder-2 passed them: both are behind the swap
    assert sorted((d["instance__external_id"], d["key"]) for d in exclusion["swaps"][0]["items"]) == [
        ("1", "1"),
        ("1", "3"),
    ]
    assert 'id="exclusion"' in html and "Audit exclusion: final status invalid" in html
    assert "2 generated constraints left out" in html and "-1.000" in html
    assert "acme/coder-1 now above acme/coder-2" in html and "sample 1 #3 (indent)" in html
    assert "▲ 1" in html and "▼ 1" in html and "▼ -1" not in html
    assert 'id="excluded-items"' in html and "Indent with 2 spaces." in html
    assert 'href="?"' in html  # "Show every constraint" drops the policy
    assert '<option value="adjudicated_invalid" selected>' in html


def test_without_a_policy_the_numbers_are_those_before_the_audit(study, lead, annotator_a, annotator_b):
    client = client_for(lead)
    before = client.get(API, {"benchmark": SLUG, "by": "run"}).json()
    services_audit = services.campaign_start(
        services.campaign_create(
            name="c",
            subject="hierarchy_constraints",
            benchmarks=[study],
            strata=["benchmark"],
            allocation="proportional",
            size=11,
            seed=5,
            user=lead,
        )
    )
    label_all(
        services_audit,
        [annotator_a, annotator_b],
        lambda user, unit: {"faithful": "incorrect" if unit.key in FLAGGED else "faithful"},
    )
    after = client.get(API, {"benchmark": SLUG, "by": "run"}).json()
    none = client.get(API, {"benchmark": SLUG, "by": "run", "exclude": "none"}).json()
    assert after == before == none
    assert before["exclude"] == "none" and before["excluded_items"] == 0 and before["exclusion"] is None


def test_the_json_of_the_page_states_the_policy_and_the_rank_change(audited, lead):
    body = client_for(lead).get(API, {"benchmark": SLUG, "exclude": "flagged_by_both"}).json()
    assert body["exclude"] == "flagged_by_both" and body["excluded_items"] == 2
    assert {r["label"]: r["acc"] for r in body["rows"]} == {
        "acme/coder-1": pytest.approx(400 / 6),
        "acme/coder-2": pytest.approx(50.0),
    }
    assert body["exclusion"]["tau"] == -1.0
    assert {r["label"]: r["rank_change"] for r in body["exclusion"]["ranks"]} == {"acme/coder-1": 1, "acme/coder-2": -1}
    swap = body["exclusion"]["swaps"][0]
    assert (swap["up"], swap["down"]) == ("acme/coder-1", "acme/coder-2")
    assert {(d["sample"], d["key"], d["pass_rate_up"], d["pass_rate_down"]) for d in swap["items"]} == {
        ("1", "1", 0.0, 1.0),
        ("1", "3", 0.0, 1.0),
    }


def test_the_api_recomputes_a_runs_acc_under_a_policy(audited, lead):
    api = client_for(lead)
    plain = api.get(API, {"run": "c1-a"}).json()
    assert plain["exclude"] == "none" and plain["excluded_items"] == 0
    assert plain["acc"] == pytest.approx(100 / 3) and plain["by_style_group"]["indent"] == 0.0
    body = api.get(API, {"run": "c1-a", "exclude": "adjudicated_invalid"}).json()
    assert body["exclude"] == "adjudicated_invalid" and body["excluded_items"] == 2
    assert body["acc"] == pytest.approx(200 / 3) and body["acc_style"] == pytest.approx(200 / 3)
    assert "indent" not in body["by_style_group"]  # no indent constraint of any sample is left to judge
    # flagged_by_either: one annotator flagging is enough, so the same two constraints here
    assert api.get(API, {"run": "c1-a", "exclude": "flagged_by_either"}).json()["acc"] == pytest.approx(200 / 3)


def test_an_unknown_policy_is_refused_with_a_clear_message(audited, lead):
    client = client_for(lead)
    api = client.get(API, {"run": "c1-a", "exclude": "nope"})
    assert api.status_code == 400 and "unknown exclusion policy 'nope'" in api.json()["exclude"][0]
    assert "adjudicated_invalid" in api.json()["exclude"][0]
    page_json = client.get(API, {"benchmark": SLUG, "exclude": "nope"})
    assert page_json.status_code == 400 and "unknown exclusion policy 'nope'" in page_json.json()["exclude"][0]
    page = client.get(PAGE, {"exclude": "nope"})  # the page shows the form's error and every constraint
    assert page.status_code == 200 and page.context["exclusion"] is None
    assert page.context["errors"]["exclude"] == [_unknown_policy()]  # the API's words (runs.selectors.state)
    assert escape(_unknown_policy()) in page.content.decode()
    assert _acc(page) == {"acme/coder-1": pytest.approx(100 * 2 / 6), "acme/coder-2": pytest.approx(100 * 3 / 6)}


def test_an_audit_with_nothing_flagged_leaves_the_numbers_and_says_so(study, lead):
    page = client_for(lead).get(PAGE, {"exclude": "flagged_by_either"})
    exclusion = page.context["exclusion"]
    assert exclusion["n_excluded"] == 0 and exclusion["swaps"] == [] and exclusion["tau"] == 1.0
    assert "0 generated constraints left out" in page.content.decode()


# the verdict path against the rollups, on the demo's ManyIH study (9 samples of 6-12 tiers, 5 runs, 2 judges)
@pytest.fixture
def demo_study(db, tmp_path):
    for step in manyih_plan(1, SCALES["small"], tmp_path).steps:
        ingest(step.format, [Source.of(p) for p in step.paths], step.options)
    benchmark = Benchmark.objects.get(slug=SLUG)
    for run in benchmark.runs.all():
        recheck_run(run=run)
    return benchmark


def test_the_verdict_path_gives_the_rollups_numbers_when_nothing_is_excluded(demo_study):
    run_ids = list(demo_study.runs.values_list("id", flat=True))
    judges = hierarchy_judges(demo_study)
    assert [j.name for j in judges] == [metrics.LOGGED_JUDGE, metrics.CHECKER_JUDGE]
    # an edge the harness can produce: one attempt's verdicts on a whole style group are "na" (the group has no row)
    verdict = Verdict.objects.filter(attempt__run__benchmark=demo_study, judge=judges[0]).exclude(result="na").first()
    Verdict.objects.filter(attempt=verdict.attempt, item__group=verdict.item.group).update(result="na")
    rollups_rebuild_for_attempts([verdict.attempt_id])
    for judge in judges:
        rollups = sample_rows_select(benchmark=demo_study, judge=judge, run_ids=run_ids)
        verdicts = sample_rows_select(benchmark=demo_study, judge=judge, run_ids=run_ids, excluded_items={-1})
        assert len(rollups) == 45 and any(not r.style_passed for r in rollups) and any(r.passed for r in rollups)
        assert verdicts == rollups


def test_excluding_items_gives_what_rollups_without_their_verdicts_give(demo_study):
    run_ids = list(demo_study.runs.values_list("id", flat=True))
    # every instruction of two style groups, and every instruction of sample 0 (its attempts lose all their verdicts)
    items = demo_study.instances.get(external_id="0").items.values_list("id", flat=True)
    excluded = set(
        Verdict.objects.filter(attempt__run__benchmark=demo_study, item__group__in=["indent", "license"]).values_list(
            "item_id", flat=True
        )
    ) | set(items)
    judges = hierarchy_judges(demo_study)
    recomputed = {
        j.name: sample_rows_select(benchmark=demo_study, judge=j, run_ids=run_ids, excluded_items=excluded)
        for j in judges
    }
    Verdict.objects.filter(item_id__in=excluded).delete()
    rollups_rebuild_for_attempts(list(demo_study.runs.values_list("attempts__id", flat=True)))
    for judge in judges:
        rebuilt = sample_rows_select(benchmark=demo_study, judge=judge, run_ids=run_ids)
        assert recomputed[judge.name] == rebuilt
        assert all(r.sample != "0" for r in rebuilt) and all("indent" not in r.groups for r in rebuilt)


def test_a_sample_whose_every_constraint_is_left_out_is_not_counted_and_named(study, lead, annotator_a, annotator_b):
    campaign = services.campaign_start(
        services.campaign_create(
            name="sample 2",
            subject="hierarchy_constraints",
            benchmarks=[study],
            strata=["benchmark"],
            allocation="proportional",
            size=11,
            seed=5,
            user=lead,
        )
    )
    label_all(
        campaign,
        [annotator_a, annotator_b],
        lambda user, unit: {"faithful": "unclear" if unit.key.startswith(f"{SLUG}/2/") else "faithful"},
    )
    page = client_for(lead).get(PAGE, {"exclude": "flagged_by_both", "by": "run"})
    assert {r.label: (r.n, r.acc) for r in page.context["rows"]} == {
        "c1-a": (2, 50.0),
        "c1-b": (2, 50.0),
        "c2-a": (2, 100.0),
        "c2-b": (2, 50.0),
    }
    assert page.context["exclusion"]["dropped_samples"] == ["2"]
    assert "Sample 2 has no constraint left and is not counted (4 attempts)." in page.content.decode()
