"""The conflict page's rank intervals and tie groups: runs.metrics.paired over each row's per-conflict counts of
attempts that followed the system prompt, whose figure is the row's SP rate over all scenarios (the page's
headline), the same on the page, in its exports, in the API and in a share link's snapshot, per grouping, judge and
exclusion policy.

The study: 30 "UQ vs SP" conflicts (sides UQ, SP: "B" is the system prompt) in three scenarios and 4 "UQ vs MD"
conflicts, which have no system-prompt side and count for no rank. Each run follows SP with its model's seeded
chance (else UQ, or now and then neither): m1 (two runs) and m2 often, m3 and m4 seldom. Judge j2 reads only the
first ten conflicts."""

import csv
import io
import json
import re

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse

from runs import exclusions
from runs.ingest import Options, Source, ingest
from runs.metrics import conflict as metrics
from runs.metrics import paired
from runs.models import Benchmark, ChecklistItem, ShareLink
from runs.selectors.conflict import conflict_metrics, conflict_state

pytestmark = pytest.mark.django_db

SLUG = "octo-conflict-ties"
PAGE = f"/b/{SLUG}/conflict/"
API = "/api/conflict-metrics/"
SP_CONFLICTS = [f"c{n:02d}" for n in range(30)]
MD_CONFLICTS = [f"m{n}" for n in range(4)]
#: run -> (model, chance of following the system prompt)
RUNS = {"m1-r1": ("m1", 0.85), "m1-r2": ("m1", 0.85), "m2-r1": ("m2", 0.8), "m3-r1": ("m3", 0.35), "m4-r1": ("m4", 0.3)}


def _followed() -> dict[tuple[str, str], str]:
    """(run, conflict) -> the side followed, seeded."""
    rng = np.random.default_rng(35)
    out = {}
    for run, (_model, sp) in RUNS.items():
        for key in SP_CONFLICTS + MD_CONFLICTS:
            draw = rng.random()
            out[(run, key)] = "B" if draw < sp else ("neither" if draw > 0.95 else "A")
    return out


FOLLOWED = _followed()


def _instance(key: str) -> dict:
    if key in MD_CONFLICTS:
        conflict = {
            "type": "UQ vs MD",
            "scenario": "indentation",
            "a": {"source": "UQ", "instruction": "Use 2 spaces."},
            "b": {"source": "AGENTS.md", "instruction": "Use 4 spaces."},
        }
    else:
        conflict = {
            "type": "UQ vs SP",
            "scenario": ("emoji", "language", "safety")[SP_CONFLICTS.index(key) % 3],
            "a": {"source": "UQ", "instruction": f"User wants {key}."},
            "b": {"source": "SP", "instruction": f"System forbids {key}."},
        }
    return {
        "type": "instance",
        "id": key,
        "spec": {"conflict": conflict},
        "items": [{"key": "resolution", "check_type": "conflict"}],
    }


@pytest.fixture
def study(tmp_path):
    records = [{"type": "benchmark", "slug": SLUG, "name": "Octo conflict ties", "kind": "conflict"}]
    records += [_instance(k) for k in SP_CONFLICTS + MD_CONFLICTS]
    for run, (model, _) in RUNS.items():
        records.append({"type": "run", "label": run, "model": model})
        for key in SP_CONFLICTS + MD_CONFLICTS:
            records.append({"type": "attempt", "run": run, "instance": key, "response": f"reply of {run}"})
            for judge in ("j1", "j2") if key in SP_CONFLICTS[:10] else ("j1",):
                side = FOLLOWED[(run, key)] if judge == "j1" else "B"
                records.append(
                    {
                        "type": "verdict",
                        "run": run,
                        "instance": key,
                        "item": "resolution",
                        "judge": judge,
                        "result": "na",
                        "evidence": {"followed": side},
                    }
                )
    path = tmp_path / "study.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    ingest("native", [Source.of(path)], Options())
    return Benchmark.objects.get(slug=SLUG)


def _sides(by: str, *, judge: str = "j1", without: frozenset = frozenset()) -> dict[str, paired.Side]:
    """Each row's side counted here from what the study says was followed (independently of runs.metrics.conflict):
    per SP conflict, attempts that followed SP and attempts; j2 read the first ten conflicts and says SP each time.
    `without`: conflicts whose resolution item a policy leaves out."""
    conflicts = [c for c in SP_CONFLICTS if c not in without and (judge == "j1" or c in SP_CONFLICTS[:10])]
    labels = sorted({model if by == "model" else run for run, (model, _) in RUNS.items()})
    sides = {label: (np.zeros((len(conflicts), 1)), np.zeros((len(conflicts), 1))) for label in labels}
    for run, (model, _) in RUNS.items():
        label = model if by == "model" else run
        for n, key in enumerate(conflicts):
            sides[label][0][n] += (FOLLOWED[(run, key)] if judge == "j1" else "B") == "B"
            sides[label][1][n] += 1
    return sides


def _expected(sides) -> dict[str, tuple[int, int, int]]:
    ranks, groups = paired.rank_intervals(sides), paired.tie_groups(sides)
    assert all(ranks.values()) and all(groups.values())
    return {label: (*ranks[label], groups[label]) for label in sides}


def _ties(response) -> dict[str, tuple[int, int, int]]:
    return {
        label: (*tie.rank_interval, tie.tie_group) for label, _cells, _effect, tie in response.context["scenario_table"]
    }


@pytest.mark.parametrize("by", ["model", "run"])
@pytest.mark.parametrize("judge", ["j1", "j2"])
def test_a_rows_side_reproduces_the_pages_sp_rate(study, by, judge):
    state = conflict_state(benchmark=study, query={"by": by, "judge": judge})
    data = conflict_metrics(state)
    sides = metrics.sp_sides(data["rows"], by=by)
    overall = {r.label: r for r in data["scenario_rates"] if r.scenario == metrics.ALL_SCENARIOS}
    assert list(sides) == sorted(overall)
    for label, rate in overall.items():
        assert paired.figure(sides[label]) == pytest.approx(rate.sp_rate, rel=1e-12, abs=1e-12)
        assert sides[label][1].sum() == rate.n
    for label, (num, den) in _sides(by, judge=judge).items():
        assert np.array_equal(sides[label][0], num) and np.array_equal(sides[label][1], den)


@pytest.mark.parametrize("query", [{"by": "model"}, {"by": "run"}])
def test_page_export_api_and_snapshot_show_what_paired_computes(editor_client, study, query):
    expected = _expected(_sides(query["by"]))
    assert len({group for *_, group in expected.values()}) > 1  # the study splits: the test can tell rows apart
    response = editor_client.get(PAGE, query)
    page = response.content.decode()
    assert "Tie group" in page and "/help/metrics/#paired" in page
    assert _ties(response) == expected
    for low, high, group in expected.values():
        rank = f"{low}–{high}" if low != high else f"{low}"
        assert f'<td class="num">{rank}</td>\n        <td class="num">{group}</td>' in page
    exported = editor_client.get(PAGE, {**query, "export": "json"}).json()
    [table] = [t for t in exported["tables"] if t["name"] == "sp-rate"]
    assert {r["label"]: (r["rank_low"], r["rank_high"], r["tie_group"]) for r in table["rows"]} == expected
    text = editor_client.get(PAGE, {**query, "export": "csv", "table": "sp-rate"}).content.decode()
    label = "Run" if query["by"] == "run" else "Model"
    got = {r[label]: (r["rank_low"], r["rank_high"], r["tie_group"]) for r in csv.DictReader(io.StringIO(text))}
    assert got == {k: tuple(str(v) for v in values) for k, values in expected.items()}
    api = editor_client.get(API, {"benchmark": SLUG, **query}).json()["sp_rates"]
    assert {r["label"]: (r["rank_low"], r["rank_high"], r["tie_group"]) for r in api} == expected

    created = editor_client.post(reverse("runs:page-share-create", args=[SLUG]), {"path": f"{PAGE}?by={query['by']}"})
    token = re.search(r"/s/([A-Za-z0-9_-]+)/", created.content.decode()).group(1)
    [frozen] = [t for t in ShareLink.objects.get().snapshot["tables"] if t["name"] == "sp-rate"]
    assert {r["label"]: (r["rank_low"], r["rank_high"], r["tie_group"]) for r in frozen["rows"]} == expected
    public = Client().get(reverse("runs:share", args=[token])).content.decode()
    assert "Tie group" in public
    for low, high, group in expected.values():
        rank = f"{low}–{high}" if low != high else f"{low}"
        assert re.search(rf'<td class="num">{rank}</td>\s*<td class="num">{group}</td>', public)


def test_each_judge_ranks_what_it_read(reviewer_client, study):
    """j2 read ten conflicts and says every run followed SP: one group, everyone ranked first."""
    response = reviewer_client.get(PAGE, {"judge": "j2"})
    assert (
        _ties(response) == _expected(_sides("model", judge="j2")) == dict.fromkeys(["m1", "m2", "m3", "m4"], (1, 1, 1))
    )


def test_under_an_exclusion_policy_the_ties_leave_out_its_conflicts(editor_client, study, monkeypatch):
    without = frozenset(SP_CONFLICTS[:12])
    dropped = set(
        ChecklistItem.objects.filter(instance__benchmark=study, instance__external_id__in=without).values_list(
            "id", flat=True
        )
    )
    monkeypatch.setitem(exclusions._PROVIDERS, "adjudicated_invalid", lambda benchmark, policy, *_: dropped)
    sides = _sides("model", without=without)
    expected = _expected(sides)
    response = editor_client.get(PAGE, {"exclude": "adjudicated_invalid"})
    assert response.context["exclusion"] is not None
    assert _ties(response) == expected
    for label, cells, *_ in response.context["scenario_table"]:
        assert cells[0].sp_rate == pytest.approx(paired.figure(sides[label]))  # the policy's figures
    api = editor_client.get(API, {"benchmark": SLUG, "exclude": "adjudicated_invalid"}).json()["sp_rates"]
    assert {r["label"]: (r["rank_low"], r["rank_high"], r["tie_group"]) for r in api} == expected
