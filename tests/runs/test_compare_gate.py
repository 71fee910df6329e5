"""The paired comparison of two runs of a checklist benchmark (runs.selectors.checklist.compare_paired) and its
regression gate: manage.py compare, GET /api/compare/<slug>/ and the compare page."""

import json
from io import StringIO
from urllib.parse import urlencode

import numpy as np
import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runs.access import ANNOTATOR
from runs.metrics import checklist as metrics
from runs.metrics import paired
from runs.models import AgentModel, Attempt, Benchmark, ChecklistItem, Instance, Judge, Run, Verdict
from runs.selectors import checklist as selectors
from runs.services import rollups_rebuild_for_attempts

pytestmark = pytest.mark.django_db
SLUG = "gate"


def seeded_study(rates: dict[str, float], *, n_instances: int = 60, judges=("j1",), seed: int = 1) -> Benchmark:
    """Instances of two categories with two items each; run `<name>-r1` passes each item with the name's rate (the
    same draw under every judge)."""
    rng = np.random.default_rng(seed)
    bench = Benchmark.objects.create(slug=SLUG, name="Gate", kind="checklist")
    judge_objs = [Judge.objects.get_or_create(name=j)[0] for j in judges]
    runs = {
        name: Run.objects.create(benchmark=bench, label=f"{name}-r1", model=AgentModel.objects.create(name=name))
        for name in rates
    }
    attempts, verdicts = [], []
    for n in range(n_instances):
        inst = Instance.objects.create(
            benchmark=bench, external_id=f"t{n}", primary_category="Skill.md" if n % 2 else "System Prompt"
        )
        items = [
            ChecklistItem.objects.create(instance=inst, key=f"c{k}", position=k, category="User Query")
            for k in range(2)
        ]
        for name, rate in rates.items():
            attempt = Attempt.objects.create(run=runs[name], instance=inst)
            attempts.append(attempt)
            outcomes = rng.random(len(items)) < rate
            for judge in judge_objs:
                for item, ok in zip(items, outcomes):
                    verdicts.append(Verdict(attempt=attempt, item=item, judge=judge, result="pass" if ok else "fail"))
    Verdict.objects.bulk_create(verdicts)
    rollups_rebuild_for_attempts([a.id for a in attempts])
    return bench


def gate(*args: str) -> tuple[int, str]:
    """manage.py compare's exit status and output."""
    out = StringIO()
    try:
        call_command("compare", "--benchmark", SLUG, *args, stdout=out)
    except CommandError as error:
        return error.returncode, out.getvalue() + str(error)
    return 0, out.getvalue()


def test_the_gate_fails_on_a_seeded_regression():
    seeded_study({"base": 0.85, "worse": 0.45})
    status, output = gate("--baseline", "base-r1", "--candidate", "worse-r1", "--fail-on-regression")
    assert status == 1 and "significantly worse than base-r1 on ISR, CSR, macro CSR" in output
    assert gate("--baseline", "base-r1", "--candidate", "worse-r1")[0] == 0  # without the flag it only reports


def test_the_gate_passes_a_noise_only_difference():
    seeded_study({"base": 0.7, "same": 0.7}, seed=3)
    status, output = gate("--baseline", "base", "--candidate", "model:same", "--fail-on-regression")
    assert status == 0 and "significantly worse (pooled): none" in output


def test_the_gate_fails_only_on_a_named_metric():
    seeded_study({"base": 0.85, "worse": 0.45})
    status, output = gate("--baseline", "base-r1", "--candidate", "worse-r1", "--metric", "csr", "--fail-on-regression")
    assert status == 1 and output.rstrip().endswith("on CSR")
    assert "ISR " not in output  # only the named metric is shown


def test_an_improvement_is_no_regression():
    seeded_study({"base": 0.45, "better": 0.85})
    assert gate("--baseline", "base-r1", "--candidate", "better-r1", "--fail-on-regression")[0] == 0


@pytest.mark.parametrize(
    "args,words",
    [
        (("--baseline", "nope", "--candidate", "base-r1"), "--baseline: no run labelled 'nope' and no model named"),
        (("--baseline", "base-r1", "--candidate", "model:nope"), "--candidate: no model named 'nope'"),
        (("--baseline", "base-r1", "--candidate", "same-r1", "--judge", "jx"), "--judge: no judge named 'jx'"),
    ],
)
def test_an_unknown_side_or_judge_exits_2_naming_it(args, words):
    seeded_study({"base": 0.7, "same": 0.7}, n_instances=4)
    status, output = gate(*args)
    assert status == 2 and words in output


def test_an_unknown_benchmark_exits_2():
    with pytest.raises(CommandError, match="no benchmark has the slug 'gate'") as raised:
        call_command("compare", "--benchmark", SLUG, "--baseline", "a", "--candidate", "b", stdout=StringIO())
    assert raised.value.returncode == 2


def test_the_table_covers_each_metric_per_judge_pooled_and_per_category():
    bench = seeded_study({"base": 0.6, "cand": 0.7}, n_instances=20, judges=("j1", "j2"))
    comparison = selectors.compare_paired(bench, "base-r1", "cand-r1")
    keys = [(f.metric, f.judge, f.category) for f in comparison.figures]
    assert keys[:5] == [
        ("isr", None, None),
        ("isr", "j1", None),
        ("isr", "j2", None),
        ("isr", None, "Skill.md"),
        ("isr", None, "System Prompt"),
    ]
    assert len(keys) == 15 and comparison.categories == ["Skill.md", "System Prompt"]


def test_the_figures_equal_the_paired_metric_on_counts_built_by_hand():
    """ISR is one pass/fail per instance under one judge (McNemar's test); CSR and macro CSR take the permutation
    test, and their figures equal the leaderboard's."""
    bench = seeded_study({"base": 0.6, "cand": 0.7}, n_instances=30)
    comparison = selectors.compare_paired(bench, "base-r1", "cand-r1")
    rows = {(f.metric, f.judge, f.category): f.difference for f in comparison.figures}
    cells = {
        side: {(c.instance_id): c for c in selectors.attempt_cells(bench.id, selectors._side_filters(side))}
        for side in ("base-r1", "cand-r1")
    }
    instances = sorted(cells["base-r1"])
    a = [float(cells["base-r1"][i].success) for i in instances]
    b = [float(cells["cand-r1"][i].success) for i in instances]
    expected = paired.paired_difference((a, [1.0] * len(a)), (b, [1.0] * len(b)))
    assert rows[("isr", None, None)] == expected and expected.test == paired.MCNEMAR
    assert rows[("csr", None, None)].test == paired.PERMUTATION
    board = {r.model: r for r in selectors.leaderboard_rows(bench.id, selectors.Filters())}
    for metric in ("isr", "csr", "macro_csr"):
        assert rows[(metric, None, None)].a == pytest.approx(getattr(board["base"], metric))
        assert rows[(metric, None, None)].b == pytest.approx(getattr(board["cand"], metric))


def test_the_json_is_the_table_with_the_regressions_and_the_flips():
    seeded_study({"base": 0.85, "worse": 0.45}, n_instances=20)
    status, output = gate("--baseline", "base-r1", "--candidate", "worse-r1", "--json")
    document = json.loads(output)
    assert status == 0 and document["regressions"] == ["isr", "csr", "macro_csr"]
    assert document["baseline"] == "base-r1" and len(document["rows"]) == 3 * 4
    assert document["n_broken"] > document["n_fixed"]
    assert document["broken"][0]["instance_url"].startswith("/instances/")


# GET /api/compare/<slug>/ ------------------------------------------------------------------
def api_url(**params) -> str:
    return reverse("api:compare", args=[SLUG]) + ("?" + urlencode(params, doseq=True) if params else "")


def test_the_api_answers_the_clis_json(reviewer_client):
    seeded_study({"base": 0.85, "worse": 0.45}, n_instances=20, judges=("j1", "j2"))
    answer = reviewer_client.get(api_url(baseline="base-r1", candidate="worse", metric="isr,csr", judge=["j1"]))
    assert answer.status_code == 200
    _, output = gate(
        "--baseline", "base-r1", "--candidate", "worse", "--metric", "isr", "--metric", "csr", "--judge", "j1", "--json"
    )
    assert answer.json() == json.loads(output)
    assert answer.json()["candidate"] == "model:worse" and answer.json()["judges"] == ["j1"]


def test_the_api_accepts_a_token(reviewer):
    seeded_study({"base": 0.7, "same": 0.7}, n_instances=4)
    api = APIClient()
    assert api.get(api_url(baseline="base-r1", candidate="same-r1")).status_code in (401, 403)
    api.credentials(HTTP_AUTHORIZATION="Token " + Token.objects.create(user=reviewer).key)
    assert api.get(api_url(baseline="base-r1", candidate="same-r1")).status_code == 200


@pytest.mark.parametrize(
    "params,errors",
    [
        ({"baseline": "nope", "candidate": "base-r1"}, {"baseline": ["no run labelled 'nope' and no model named"]}),
        ({"baseline": "base-r1", "candidate": "model:x"}, {"candidate": ["no model named 'x' has a run"]}),
        ({"baseline": "base-r1", "candidate": "same-r1", "judge": "jx"}, {"judge": ["no judge named 'jx'"]}),
        ({"baseline": "base-r1"}, {"candidate": ["This field is required."]}),
        ({"baseline": "base-r1", "candidate": "same-r1", "metric": "nope"}, {"metric": {0: ['"nope" is not a valid']}}),
        (
            {"baseline": "base-r1", "candidate": "same-r1", "metric": "acc"},
            {"metric": ["'acc' is no figure of a checklist benchmark (its figures: isr, csr, macro_csr)"]},
        ),
    ],
)
def test_the_api_answers_400_naming_what_is_unknown(reviewer_client, params, errors):
    seeded_study({"base": 0.7, "same": 0.7}, n_instances=4)
    answer = reviewer_client.get(api_url(**params))
    assert answer.status_code == 400
    body = answer.json()
    for name, words in errors.items():
        shown = body[name] if isinstance(words, list) else body[name][str(next(iter(words)))]
        expected = words if isinstance(words, list) else next(iter(words.values()))
        assert shown[0].startswith(expected[0])


def test_a_blind_annotator_is_refused(django_user_model):
    seeded_study({"base": 0.7, "same": 0.7}, n_instances=4)
    annotator = django_user_model.objects.create_user("blind", password="pw-blind-1")
    annotator.groups.add(Group.objects.get_or_create(name=ANNOTATOR)[0])
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION="Token " + Token.objects.create(user=annotator).key)
    assert api.get(api_url(baseline="base-r1", candidate="same-r1")).status_code == 403


# the compare page ---------------------------------------------------------------------------
def test_the_page_shows_the_same_numbers_and_its_export_carries_them(reviewer_client):
    seeded_study({"base": 0.85, "worse": 0.45}, n_instances=20)
    page = reverse("runs:checklist-compare", args=[SLUG]) + "?a=base-r1&b=worse-r1"
    body = reviewer_client.get(page).content.decode()
    document = json.loads(gate("--baseline", "base-r1", "--candidate", "worse-r1", "--json")[1])
    pooled = next(r for r in document["rows"] if r["metric"] == "csr" and r["judge"] is None and not r["category"])
    shown = f'{pooled["diff"]:.2f}</td><td class="num">{pooled["low"]:.2f} to {pooled["high"]:.2f}</td>'
    assert shown in body and 'href="/help/metrics/#paired"' in body and "Broken in B (" in body
    assert body.count('class="regression"') >= 3  # at least each metric's pooled row is marked
    exported = reviewer_client.get(page + "&export=json").json()
    rows = next(t for t in exported["tables"] if t["name"] == "paired-differences")["rows"]
    assert rows[0]["metric"] == "isr" and rows[0]["judge"] == "pooled" and rows[0]["category"] == "all"
    assert [r["diff"] for r in rows] == [r["diff"] for r in document["rows"]]


def test_the_page_names_an_unknown_side(reviewer_client):
    seeded_study({"base": 0.7, "same": 0.7}, n_instances=4)
    body = reviewer_client.get(reverse("runs:checklist-compare", args=[SLUG]) + "?a=base-r1&b=nope").content.decode()
    assert "no run labelled &#x27;nope&#x27; and no model named &#x27;nope&#x27;" in body


def test_the_items_that_flipped_are_counted_in_the_database_as_the_metric_defines_them():
    """compare_sides asks the database for each side's outcome of an (instance, item, judge); the same flips as
    runs.metrics.checklist.flipped_items over the verdicts, with models of three and two runs (repetitions), not-applicable
    verdicts, an item only one side judged and an instance only one side covers."""
    rng = np.random.default_rng(7)
    bench = Benchmark.objects.create(slug=SLUG, name="Gate", kind="checklist")
    judges = [Judge.objects.get_or_create(name=j)[0] for j in ("j1", "j2")]
    a_model, b_model = AgentModel.objects.create(name="a"), AgentModel.objects.create(name="b")
    runs = {
        "a": [Run.objects.create(benchmark=bench, label=f"a-r{n}", model=a_model) for n in (1, 2, 3)],
        "b": [Run.objects.create(benchmark=bench, label=f"b-r{n}", model=b_model) for n in (1, 2)],
    }
    rows = {"a": [], "b": []}
    attempts, verdicts = [], []
    for n in range(12):
        inst = Instance.objects.create(benchmark=bench, external_id=f"t{n}", primary_category="System Prompt")
        items = [ChecklistItem.objects.create(instance=inst, key=f"c{k}", position=k) for k in range(4)]
        for side, side_runs in runs.items():
            if side == "b" and n == 11:
                continue  # an instance only A covers
            for run in side_runs:  # a model's runs are its repetitions
                attempt = Attempt.objects.create(run=run, instance=inst)
                attempts.append(attempt)
                for judge in judges:
                    for item in items:
                        if side == "b" and item.key == "c3" and judge.name == "j2":
                            continue  # an item only A's judge j2 scored
                        result = str(rng.choice(["pass", "pass", "pass", "fail", "na"]))
                        verdicts.append(Verdict(attempt=attempt, item=item, judge=judge, result=result))
                        rows[side].append((inst.id, item.id, judge.name, result))
    Verdict.objects.bulk_create(verdicts)
    rollups_rebuild_for_attempts([a.id for a in attempts])

    found = selectors.compare_sides(bench.id, "model:a", "model:b", limit=10_000)
    expected = metrics.flipped_items(
        [r for r in rows["a"] if r[0] != Instance.objects.get(benchmark=bench, external_id="t11").id], rows["b"]
    )
    listed = sorted(
        (entry["instance_id"], entry["id"], judge, entry["direction"])
        for direction in ("fixed", "broken")
        for entry in found[direction]
        for judge in entry["judges"]
    )
    assert listed == sorted((f.instance_id, f.item_id, f.judge, f.direction) for f in expected)
    assert found["n_fixed"] > 3 and found["n_broken"] > 3


def test_the_page_says_when_it_lists_only_the_first_flipped_items(reviewer_client, monkeypatch):
    seeded_study({"base": 0.5, "other": 0.5}, n_instances=30)
    monkeypatch.setattr(selectors.compare_sides, "__kwdefaults__", {"limit": 3, "cells": None})
    body = reviewer_client.get(
        reverse("runs:checklist-compare", args=[SLUG]) + "?a=base-r1&b=other-r1"
    ).content.decode()
    fixed = int(body.split("Fixed in B (", 1)[1].split(")", 1)[0])
    assert fixed > 3 and f"The first 3 of {fixed}, by instance." in body
    assert 'href="/help/metrics/#checklist-compare"' in body
