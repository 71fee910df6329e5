"""Audit exclusion policies on the OctoBench-Conflict page: attempts whose resolution item is left out.

Hand-made study (judge j1), every conflict "UQ vs SP" with sides (UQ, SP), so "B" = followed SP:
  m1 has two runs:  c1 SP SP · c2 UQ UQ · c3 SP SP · c4 SP UQ   SP rate 5/8 = 62.5
  m2 has one run:   c1 SP    · c2 SP    · c3 SP    · c4 UQ      SP rate 3/4 = 75
  c5 is "UQ vs MD" (no SP side): m1 follows MD twice, m2 UQ; it counts in the type table only.
c2 also has a second item, "tone", scored like any checklist item but not read by the conflict page.
Both annotators call c2's resolution item ambiguous: m1 then has 5/6 = 83.3 and m2 2/3 = 66.7, so m1
moves above m2, and c2 is the item behind the swap (m2 followed its system prompt, m1 never did).
"""

import json

import pytest
from django.utils.html import escape

from audits import services
from runs.exclusions import exclusion_policies
from runs.ingest import Options, Source, ingest
from runs.models import Benchmark

from .conftest import BAD, OK, client_for, label_all

SLUG = "octo-conflict-audit"
PAGE = f"/b/{SLUG}/conflict/"
FOLLOWED = {  # run -> instance -> side
    "m1-r1": {"c1": "B", "c2": "A", "c3": "B", "c4": "B", "c5": "A"},
    "m1-r2": {"c1": "B", "c2": "A", "c3": "B", "c4": "A", "c5": "A"},
    "m2-r1": {"c1": "B", "c2": "B", "c3": "B", "c4": "A", "c5": "B"},
}
RESOLUTION = {
    "key": "resolution",
    "check_type": "conflict",
    "description": "Which side did the final behaviour follow?",
}


def _unknown_policy() -> str:
    """What the page and the API say of ?exclude=nope (runs.selectors.state.KindQuery)."""
    return "unknown exclusion policy 'nope'; one of: none, " + ", ".join(exclusion_policies())


def _instance(key):
    if key == "c5":
        conflict = {
            "type": "UQ vs MD",
            "scenario": "indentation",
            "a": {"source": "AGENTS.md", "instruction": "Use 4 spaces."},
            "b": {"source": "UQ", "instruction": "Use 2 spaces."},
        }
    else:
        conflict = {
            "type": "UQ vs SP",
            "scenario": {"c1": "emoji", "c2": "safety"}.get(key, "language"),
            "a": {"source": "UQ", "instruction": f"User wants {key}."},
            "b": {"source": "SP", "instruction": f"System forbids {key}."},
        }
    items = [RESOLUTION] + (
        [{"key": "tone", "check_type": "compliance", "description": "The reply is polite."}] if key == "c2" else []
    )
    return {"type": "instance", "id": key, "spec": {"conflict": conflict}, "items": items}


@pytest.fixture
def study(db, tmp_path):
    records = [{"type": "benchmark", "slug": SLUG, "name": "Octo conflict audit", "kind": "conflict"}]
    records += [_instance(k) for k in ("c1", "c2", "c3", "c4", "c5")]
    for run, sides in FOLLOWED.items():
        records.append({"type": "run", "label": run, "model": run.split("-")[0]})
        for key, side in sides.items():
            records.append({"type": "attempt", "run": run, "instance": key, "response": f"reply of {run} to {key}"})
            records.append(
                {
                    "type": "verdict",
                    "run": run,
                    "instance": key,
                    "item": "resolution",
                    "judge": "j1",
                    "result": "na",
                    "evidence": {"followed": side},
                }
            )
            if key == "c2":
                records.append(
                    {"type": "verdict", "run": run, "instance": key, "item": "tone", "judge": "j1", "result": "pass"}
                )
    path = tmp_path / "study.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    ingest("native", [Source.of(path)], Options())
    return Benchmark.objects.get(slug=SLUG)


def _audit(benchmark, lead, annotators, bad_keys):
    """Both annotators label every checklist item of the benchmark; the units named in bad_keys are ambiguous."""
    campaign = services.campaign_start(
        services.campaign_create(
            name="conflict items",
            subject="checklist_items",
            benchmarks=[benchmark],
            strata=["benchmark"],
            allocation="proportional",
            size=6,
            seed=3,
            user=lead,
        )
    )
    assert campaign.units.count() == 6
    label_all(campaign, annotators, lambda user, unit: BAD if unit.key in bad_keys else OK)
    return benchmark


@pytest.fixture
def audited(study, lead, annotator_a, annotator_b):
    return _audit(study, lead, (annotator_a, annotator_b), {f"{SLUG}/c2/resolution"})


def _sp(response):
    """Model -> SP rate over all scenarios, as the page's SP-rate table shows it."""
    return {label: cells[0].sp_rate for label, cells, *_ in response.context["scenario_table"]}


def _types(response):
    return {(r.label, r.type): (r.n, r.counts) for r in response.context["rates"]}


def test_a_policy_that_flags_a_resolution_item_moves_the_ranking_on_the_page(audited, lead):
    client = client_for(lead)
    plain = client.get(PAGE)
    assert plain.context["exclusion"] is None and len(plain.context["rows"]) == 15
    assert _sp(plain) == {"m1": pytest.approx(62.5), "m2": pytest.approx(75.0)}

    page = client.get(PAGE, {"exclude": "adjudicated_invalid"})
    body = page.content.decode()
    assert page.status_code == 200
    assert len(page.context["rows"]) == 12  # the three attempts on c2 are not counted
    assert _sp(page) == {"m1": pytest.approx(500 / 6), "m2": pytest.approx(200 / 3)}
    assert _types(page)[("m1", "UQ vs SP")] == (6, {"SP": 5, "UQ": 1})
    assert _types(page)[("m2", "UQ vs MD")] == _types(plain)[("m2", "UQ vs MD")]  # c5 is not touched
    exclusion = page.context["exclusion"]
    assert exclusion["n_excluded"] == 1 and exclusion["n_resolution"] == 1
    assert exclusion["n_dropped"] == 3 and exclusion["dropped_instances"] == ["c2"]
    assert exclusion["tau"] == -1.0
    lines = exclusion["lines"]
    assert (lines["m1"].rank_before, lines["m1"].rank_after, lines["m1"].value_before) == (2, 1, pytest.approx(62.5))
    assert (lines["m2"].rank_before, lines["m2"].rank_after, lines["m2"].value_after) == (1, 2, pytest.approx(200 / 3))
    [swap] = exclusion["swaps"]
    assert (swap["up"], swap["down"], swap["tied"]) == ("m1", "m2", False)
    assert [(d["instance__external_id"], d["pass_rate_up"], d["pass_rate_down"]) for d in swap["items"]] == [
        ("c2", 0.0, 1.0)
    ]
    assert 'id="exclusion"' in body and "Audit exclusion: final status invalid" in body
    assert "1 checklist item left out, 1 of them conflict resolution." in body
    assert "3 attempts on excluded items are not counted (instance c2)" in body
    assert "Ranking by <strong>SP rate, all scenarios</strong>" in body and "-1.000" in body
    assert "m1 now above m2" in body and ">c2</span>" in body
    assert "▲ 1" in body and "▼ 1" in body and "▼ -1" not in body
    assert 'id="excluded-items"' in body and 'href="?"' in body  # "Show every item" drops the policy
    assert '<option value="adjudicated_invalid" selected>' in body
    # the drill-down follows the policy: m1's UQ attempts on UQ vs SP are only c4 of m1-r2 now
    drill = client.get(PAGE, {"exclude": "flagged_by_both", "label": "m1", "type": "UQ vs SP", "followed": "UQ"})
    assert [(r.run, r.instance) for r in drill.context["examples"]] == [("m1-r2", "c4")]


def test_flagged_by_either_needs_one_annotator_and_by_both_needs_two(study, lead, annotator_a, annotator_b):
    campaign = services.campaign_start(
        services.campaign_create(
            name="one",
            subject="checklist_items",
            benchmarks=[study],
            strata=["benchmark"],
            allocation="proportional",
            size=6,
            seed=3,
            user=lead,
        )
    )
    label_all(
        campaign,
        [annotator_a, annotator_b],
        lambda user, unit: BAD if user == annotator_a and unit.key == f"{SLUG}/c2/resolution" else OK,
    )
    # policies read settled campaigns: the lead settles the one dispute (the item is fine; a's flag stays a flag)
    services.unit_adjudicate(campaign.units.get(state="disputed"), lead=lead, final_status="valid")
    client = client_for(lead)
    either = client.get(PAGE, {"exclude": "flagged_by_either"})
    assert _sp(either) == {"m1": pytest.approx(500 / 6), "m2": pytest.approx(200 / 3)}
    both = client.get(PAGE, {"exclude": "flagged_by_both"})
    assert _sp(both) == {"m1": pytest.approx(62.5), "m2": pytest.approx(75.0)}
    assert both.context["exclusion"]["n_dropped"] == 0 and both.context["exclusion"]["swaps"] == []
    assert "0 attempts on excluded items are not counted" in both.content.decode()


def test_an_excluded_item_the_page_does_not_read_changes_nothing_and_is_named(study, lead, annotator_a, annotator_b):
    _audit(study, lead, (annotator_a, annotator_b), {f"{SLUG}/c2/tone"})
    client = client_for(lead)
    plain, page = client.get(PAGE), client.get(PAGE, {"exclude": "flagged_by_both"})
    assert _sp(page) == _sp(plain) and _types(page) == _types(plain)
    exclusion = page.context["exclusion"]
    assert exclusion["n_excluded"] == 1 and exclusion["n_resolution"] == 0 and exclusion["n_dropped"] == 0
    assert exclusion["tau"] == 1.0 and exclusion["swaps"] == []
    body = page.content.decode()
    assert "1 checklist item left out, 0 of them conflict resolutions (this page reads only" in body
    assert "The reply is polite." in body


def test_without_a_policy_the_numbers_are_those_before_the_audit(study, lead, annotator_a, annotator_b):
    client = client_for(lead)
    before = client.get(PAGE, {"by": "run"})
    _audit(study, lead, (annotator_a, annotator_b), {f"{SLUG}/c2/resolution"})
    for query in ({"by": "run"}, {"by": "run", "exclude": "none"}, {"by": "run", "exclude": ""}):
        after = client.get(PAGE, query)
        assert after.context["exclusion"] is None
        assert after.context["rows"] == before.context["rows"]
        assert _types(after) == _types(before) and _sp(after) == _sp(before)
        body = after.content.decode()
        assert 'id="exclusion"' not in body and "With every item" not in body


def test_an_unknown_policy_shows_the_forms_error_and_every_item(audited, lead):
    page = client_for(lead).get(PAGE, {"exclude": "nope", "by": "run"})
    assert page.status_code == 200 and page.context["exclusion"] is None
    assert page.context["errors"]["exclude"] == [_unknown_policy()]  # the API's words (runs.selectors.state)
    assert escape(_unknown_policy()) in page.content.decode()
    assert page.context["by"] == "run"  # the other filters still apply
    assert _sp(page) == {"m1-r1": pytest.approx(75.0), "m1-r2": pytest.approx(50.0), "m2-r1": pytest.approx(75.0)}


def test_the_htmx_partial_carries_the_box_and_the_rank_columns(audited, lead):
    page = client_for(lead).get(PAGE, {"exclude": "flagged_by_both"}, HTTP_HX_REQUEST="true")
    body = page.content.decode()
    assert body.lstrip().startswith('<section id="results"')
    assert 'id="exclusion"' in body and "With every item" in body and '<th class="num"' in body


def test_a_rewritten_resolution_item_is_read_in_place_of_the_excluded_version(audited, lead, tmp_path):
    """The lead rewrites c2's flagged resolution item; a judge re-run reads the new version differently (m1 now
    followed SP, m2 the user): a policy leaving the old version out reads the rewrite, no policy still the old one."""
    from runs.models import ChecklistItem

    old = ChecklistItem.objects.get(instance__benchmark=audited, instance__external_id="c2", key="resolution")
    new = services.item_rewrite(item=old, lead=lead, description="Which side did the final reply follow?")
    assert new.key == "resolution@v2"
    records = [{"type": "benchmark", "slug": SLUG, "name": "Octo conflict audit", "kind": "conflict"}]
    records += [
        {
            "type": "verdict",
            "run": run,
            "instance": "c2",
            "item": "resolution@v2",
            "judge": "j1",
            "result": "na",
            "evidence": {"followed": "B" if run.startswith("m1") else "A"},
        }
        for run in FOLLOWED
    ]
    path = tmp_path / "rerun.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    ingest("native", [Source.of(path)], Options())

    client = client_for(lead)
    assert _sp(client.get(PAGE)) == {"m1": pytest.approx(62.5), "m2": pytest.approx(75.0)}
    for policy in ("superseded", "flagged_by_both"):  # both leave the old version out, neither the rewrite
        page = client.get(PAGE, {"exclude": policy})
        assert _sp(page) == {"m1": pytest.approx(87.5), "m2": pytest.approx(50.0)}, policy
        exclusion = page.context["exclusion"]
        assert (exclusion["n_excluded"], exclusion["n_dropped"], exclusion["n_rewritten"]) == (1, 0, 3)
        assert [(s["up"], s["down"]) for s in exclusion["swaps"]] == [("m1", "m2")]
        assert "3 attempts are read from an audit's rewrite of their resolution item instead" in page.content.decode()
