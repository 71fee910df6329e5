"""The paired comparison of two runs of a dialogue, hierarchy, choice or conflict benchmark (runs.selectors.compare):
the regression gate of manage.py compare, figures equal to statsmodels and scipy, and the same figures on the compare
page, in its exports and in GET /api/compare/<slug>/."""

import json
import re
from io import StringIO
from urllib.parse import urlencode

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from scipy.stats import binomtest
from statsmodels.duration.survfunc import survdiff
from statsmodels.stats.contingency_tables import mcnemar

from runs.metrics import comparison, paired
from runs.metrics.dialogue import Dialogue, TurnRow, dialogue_metrics
from runs.models import (
    AgentModel,
    Attempt,
    Benchmark,
    BenchmarkKind,
    ChecklistItem,
    Instance,
    Judge,
    JudgeKind,
    Run,
    ShareLink,
    Verdict,
)
from runs.selectors import compare as selectors
from runs.services import rollups_rebuild_for_attempts

from .test_views_hierarchy import SLUG as HIERARCHY_SLUG
from .test_views_hierarchy import study as hierarchy_study  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db
SLUG = "gate-kinds"


# choice ------------------------------------------------------------------------------------------
def choice_study(rates: dict[str, float], *, n_tasks: int = 80, seed: int = 1) -> tuple[Benchmark, dict]:
    """Tasks of two categories; run `<name>-r1` answers each correctly with the name's rate. Returns the benchmark and
    (run, task) -> answered correctly."""
    rng = np.random.default_rng(seed)
    bench = Benchmark.objects.create(slug=SLUG, name="Choice gate", kind=BenchmarkKind.CHOICE)
    runs = {
        name: Run.objects.create(benchmark=bench, label=f"{name}-r1", model=AgentModel.objects.create(name=name))
        for name in rates
    }
    correct = {}
    for n in range(n_tasks):
        task = Instance.objects.create(
            benchmark=bench, external_id=f"t{n:03d}", primary_category="math" if n % 2 else "chat"
        )
        for name, rate in rates.items():
            ok = bool(rng.random() < rate)
            correct[(name, task.external_id)] = ok
            Attempt.objects.create(
                run=runs[name], instance=task, outcome={"answer": "A" if ok else "B", "ground_truth": "A"}
            )
    return bench, correct


def gate(*args: str) -> tuple[int, str]:
    """manage.py compare's exit status and output."""
    out = StringIO()
    try:
        call_command("compare", "--benchmark", SLUG, *args, stdout=out)
    except CommandError as error:
        return error.returncode, out.getvalue() + str(error)
    return 0, out.getvalue()


def test_the_gate_fails_on_a_seeded_regression_of_a_choice_run():
    choice_study({"base": 0.85, "worse": 0.45})
    status, output = gate("--baseline", "base-r1", "--candidate", "worse-r1", "--fail-on-regression")
    assert status == 1 and output.rstrip().endswith("worse-r1 is significantly worse than base-r1 on accuracy")
    assert gate("--baseline", "base-r1", "--candidate", "worse-r1")[0] == 0  # without the flag it only reports


def test_the_gate_passes_a_noise_only_difference_of_a_choice_run():
    choice_study({"base": 0.7, "same": 0.7}, seed=3)
    status, output = gate("--baseline", "base", "--candidate", "model:same", "--fail-on-regression")
    assert status == 0 and "significantly worse (pooled): none" in output


def test_a_metric_or_judge_the_kind_lacks_exits_2_naming_it():
    choice_study({"base": 0.7, "same": 0.7}, n_tasks=4)
    status, output = gate("--baseline", "base-r1", "--candidate", "same-r1", "--metric", "isr")
    assert status == 2 and "--metric: 'isr' is no figure of a choice benchmark (its figures: accuracy)" in output
    status, output = gate("--baseline", "base-r1", "--candidate", "same-r1", "--judge", "j1")
    assert status == 2 and "--judge: no judge named 'j1'" in output


def test_choice_accuracy_takes_mcnemar_exact_as_statsmodels_computes_it():
    bench, correct = choice_study({"base": 0.75, "cand": 0.6}, seed=5)
    document = selectors.paired_comparison_document(bench, "base-r1", "cand-r1")
    pooled = next(r for r in document["rows"] if r["category"] is None)
    tasks = sorted({task for _, task in correct})
    b = sum(correct[("base", t)] and not correct[("cand", t)] for t in tasks)
    c = sum(correct[("cand", t)] and not correct[("base", t)] for t in tasks)
    assert pooled["test"] == paired.MCNEMAR and (pooled["b_count"], pooled["c_count"]) == (b, c)
    assert pooled["p"] == pytest.approx(mcnemar([[0, b], [c, 0]], exact=True).pvalue, abs=1e-9)
    assert pooled["p"] == pytest.approx(binomtest(min(b, c), b + c, 0.5).pvalue, abs=1e-9)
    assert pooled["a"] == pytest.approx(100 * sum(correct[("base", t)] for t in tasks) / len(tasks), abs=1e-9)
    assert pooled["diff"] == pytest.approx(pooled["b"] - pooled["a"], abs=1e-9) and pooled["n_instances"] == 80
    assert pooled["low"] <= pooled["diff"] <= pooled["high"]
    assert document["judges"] == [] and document["categories"] == ["chat", "math"]
    # the flips are the discordant tasks, each linked to its task page
    assert (document["n_fixed"], document["n_broken"]) == (c, b)
    assert document["broken"][0]["instance_url"] == f"/b/{SLUG}/choice/tasks/{document['broken'][0]['instance']}/"
    # the seeded bootstrap reproduces itself
    assert selectors.paired_comparison_document(bench, "base-r1", "cand-r1") == document


def test_page_exports_and_api_carry_the_clis_figures(reviewer_client):
    choice_study({"base": 0.8, "worse": 0.5})
    out = StringIO()
    call_command(
        "compare", "--benchmark", SLUG, "--baseline", "base-r1", "--candidate", "worse-r1", "--json", stdout=out
    )
    document = json.loads(out.getvalue())
    api = reviewer_client.get(f"/api/compare/{SLUG}/?" + urlencode({"baseline": "base-r1", "candidate": "worse-r1"}))
    assert api.status_code == 200 and api.json() == document
    page = f"/b/{SLUG}/compare/?" + urlencode({"a": "base-r1", "b": "worse-r1"})
    body = reviewer_client.get(page).content.decode()
    assert "McNemar exact" in body and 'class="regression"' in body and document["broken"][0]["instance"] in body
    exported = json.loads(reviewer_client.get(page + "&export=json").content)
    rows = next(t["rows"] for t in exported["tables"] if t["name"] == "paired-differences")
    assert [(r["metric"], r["diff"], r["low"], r["high"], r["p"], r["n_instances"]) for r in rows] == [
        (r["metric"], r["diff"], r["low"], r["high"], r["p"], r["n_instances"]) for r in document["rows"]
    ]
    flips = next(t["rows"] for t in exported["tables"] if t["name"] == "flipped-instances")
    assert len(flips) == document["n_fixed"] + document["n_broken"]


def test_a_share_snapshot_freezes_the_same_figures(editor_client):
    choice_study({"base": 0.8, "worse": 0.5})
    document = selectors.paired_comparison_document(Benchmark.objects.get(slug=SLUG), "base-r1", "worse-r1")
    path = f"/b/{SLUG}/compare/?" + urlencode({"a": "base-r1", "b": "worse-r1"})
    created = editor_client.post(f"/b/{SLUG}/share-page/", {"path": path})
    token = re.search(r"/s/([A-Za-z0-9_-]+)/", created.content.decode()).group(1)
    [frozen] = [t for t in ShareLink.objects.get().snapshot["tables"] if t["name"] == "paired-differences"]
    assert [(r["diff"], r["p"], r["b_count"], r["c_count"]) for r in frozen["rows"]] == [
        (r["diff"], r["p"], r["b_count"], r["c_count"]) for r in document["rows"]
    ]
    assert "McNemar exact" in Client().get(f"/s/{token}/").content.decode()


def test_the_api_names_a_metric_of_another_kind(reviewer_client):
    choice_study({"base": 0.7, "same": 0.7}, n_tasks=4)
    answer = reviewer_client.get(
        f"/api/compare/{SLUG}/?" + urlencode({"baseline": "base-r1", "candidate": "same-r1", "metric": "acc"})
    )
    assert answer.status_code == 400 and answer.json()["metric"][0].startswith("'acc' is no figure of a choice")


# dialogue ----------------------------------------------------------------------------------------
#: run -> per script, the turns played (each: constraints passed of two) and how the dialogue ended
DIALOGUES = {
    "base-r1": [([2, 2, 2, 2], "script_end"), ([2, 1, 2, 2], "script_end"), ([2, 2, 0], "patience")] * 6,
    "cand-r1": [([2, 0], "patience"), ([2, 2, 1, 2], "script_end"), ([1, 0], "patience")] * 6,
}


@pytest.fixture
def dialogue_study():
    """18 dialogue scripts of four turns, two constraints a turn, logged at patience 3; run cand-r1 ends more of them
    by patience, earlier."""
    bench = Benchmark.objects.create(slug=SLUG, name="Dialogue gate", kind=BenchmarkKind.DIALOGUE)
    judge = Judge.objects.create(name="evolif-log", kind=JudgeKind.LOGGED)
    attempts = []
    for label, played in DIALOGUES.items():
        run = Run.objects.create(
            benchmark=bench, label=label, model=AgentModel.objects.create(name=label[:4]), settings={"patience": 3}
        )
        for n, (turns, ended_by) in enumerate(played):
            script, _ = Instance.objects.get_or_create(benchmark=bench, external_id=f"d{n:02d}")
            attempt = Attempt.objects.create(
                run=run, instance=script, outcome={"patience": 3, "ended_by": ended_by, "ended_turn": len(turns)}
            )
            attempts.append(attempt.id)
            for turn, passed in enumerate(turns, start=1):
                for position in range(2):
                    item, _ = ChecklistItem.objects.get_or_create(
                        instance=script, key=f"t{turn}:{position}", defaults={"turn": turn, "position": position}
                    )
                    Verdict.objects.create(
                        attempt=attempt, item=item, judge=judge, result="pass" if position < passed else "fail"
                    )
    rollups_rebuild_for_attempts(attempts)
    return bench


def _dialogues(label: str) -> list[Dialogue]:
    return [
        Dialogue(
            key=n,
            turns=tuple(TurnRow(t, 2, p) for t, p in enumerate(turns, start=1)),
            ended_by=ended_by,
        )
        for n, (turns, ended_by) in enumerate(DIALOGUES[label])
    ]


def test_dialogue_figures_are_the_metrics_of_each_side_and_the_gate_fails_on_them(dialogue_study):
    document = selectors.paired_comparison_document(dialogue_study, "base-r1", "cand-r1")
    pooled = {r["metric"]: r for r in document["rows"] if r["judge"] is None and r["category"] is None}
    base, cand = (dialogue_metrics(_dialogues(label)) for label in DIALOGUES)
    for key in ("isr", "csr", "rob", "act_len", "act_acc", "act_succ", "lss"):
        assert pooled[key]["a"] == pytest.approx(getattr(base, key), abs=1e-9), key
        assert pooled[key]["b"] == pytest.approx(getattr(cand, key), abs=1e-9), key
        assert pooled[key]["test"] == paired.PERMUTATION and pooled[key]["n_instances"] == 18
    completed = pooled["completed"]
    assert (completed["test"], completed["b_count"], completed["c_count"]) == (paired.MCNEMAR, 6, 0)
    assert completed["p"] == pytest.approx(mcnemar([[6, 6], [0, 6]], exact=True).pvalue, abs=1e-9)
    assert {"completed", "isr", "csr", "rob"} <= set(document["regressions"])
    status, output = gate("--baseline", "base-r1", "--candidate", "cand-r1", "--metric", "isr", "--fail-on-regression")
    assert status == 1 and output.rstrip().endswith("on ISR")
    assert "log-rank on 18 shared dialogue scripts" in output


def test_the_dialogue_survival_test_equals_statsmodels_survdiff(dialogue_study, reviewer_client):
    document = selectors.paired_comparison_document(dialogue_study, "base-r1", "cand-r1")
    [test] = document["survival"]
    lengths = [len(turns) for label in DIALOGUES for turns, _ in DIALOGUES[label]]
    events = [ended == "patience" for label in DIALOGUES for _, ended in DIALOGUES[label]]
    groups = [label for label in DIALOGUES for _ in DIALOGUES[label]]
    chi2, p = survdiff(np.array(lengths), np.array(events, dtype=float), np.array(groups))
    assert test["chi2"] == pytest.approx(chi2, abs=1e-9) and test["p"] == pytest.approx(p, abs=1e-9)
    assert (test["n_a"], test["events_a"], test["n_b"], test["events_b"]) == (18, 6, 18, 12)
    page = reviewer_client.get(f"/b/{SLUG}/compare/?a=base-r1&b=cand-r1")
    body = page.content.decode()
    assert "log-rank" in body and "compare-survival" in body
    exported = json.loads(reviewer_client.get(f"/b/{SLUG}/compare/?a=base-r1&b=cand-r1&export=json").content)
    [row] = next(t["rows"] for t in exported["tables"] if t["name"] == "survival-tests")
    assert row["p"] == test["p"]


# the pure assembly -------------------------------------------------------------------------------
def test_sides_align_on_the_instances_and_judges_and_flips_need_every_attempt():
    a, b = comparison.SideFigures(), comparison.SideFigures()
    for instance, judge, num_a, num_b in (("x", "j1", 1, 0), ("x", "j2", 1, 1), ("y", "j1", 0, 1), ("z", "j2", 1, 0)):
        a.add("acc", instance, judge, num_a, 1)
        b.add("acc", instance, judge, num_b, 1)
    b.add("acc", "z", "j2", 1, 1)  # a second attempt of B passes: z did not flip
    counted = comparison.aligned(a, b, ["acc"], ["j1", "j2"])
    assert counted.instances == ["x", "y", "z"]
    assert counted.sides[1]["acc"][1].tolist() == [[1, 1], [1, 0], [0, 2]]
    flips = comparison.flipped_instances(counted, "acc")
    assert flips == [
        comparison.FlippedInstance("y", "fixed", ("j1",)),
        comparison.FlippedInstance("x", "broken", ("j1",)),
    ]
    table = comparison.paired_table("s", "A", "B", counted, metrics={"acc": "Acc"})
    assert [(f.judge, f.difference.test) for f in table.figures] == [
        (None, paired.PERMUTATION),
        ("j1", paired.MCNEMAR),
        ("j2", paired.PERMUTATION),
    ]
    assert table.judges == ["j1", "j2"] and table.categories == []


def test_every_kind_lists_the_flips_of_one_of_its_figures():
    for kind, how in selectors.KINDS.items():
        assert how.flip_metric in how.metrics and how.category, kind
    assert set(selectors.ALL_METRICS) >= {"isr", "csr", "macro_csr", "acc", "accuracy", "sp_rate", "completed"}


# hierarchy ---------------------------------------------------------------------------------------
def test_hierarchy_acc_per_judge_is_the_metrics_pages_comparison(reviewer_client, hierarchy_study):  # noqa: F811
    """Two interfaces of one model on three samples: the scalar run fails sample 0, which the ordinal run passes."""
    bench = Benchmark.objects.get(slug=HIERARCHY_SLUG)
    document = selectors.paired_comparison_document(bench, "coder · ordinal", "coder · scalar")
    assert document["kind"] == "hierarchy" and "manyih-log" in document["judges"]
    logged = next(r for r in document["rows"] if r["metric"] == "acc" and r["judge"] == "manyih-log")
    assert (logged["a"], logged["b"], logged["n_instances"]) == (pytest.approx(100 / 3), 0.0, 3)
    assert (logged["test"], logged["b_count"], logged["c_count"]) == (paired.MCNEMAR, 1, 0)
    assert logged["p"] == pytest.approx(mcnemar([[0, 1], [0, 2]], exact=True).pvalue, abs=1e-9)
    assert [(f["instance"], f["judges"]) for f in document["broken"]][:1] == [("0", document["judges"])]
    assert document["broken"][0]["b_url"].startswith(f"/b/{HIERARCHY_SLUG}/hierarchy/attempts/")
    assert document["categories"] and all(c.endswith(" tiers") for c in document["categories"])
    body = reviewer_client.get(
        f"/b/{HIERARCHY_SLUG}/compare/?" + urlencode({"a": "coder · ordinal", "b": "coder · scalar"})
    ).content.decode()
    assert "<script>alert" not in body and "Broken in B (1)" in body and "privilege tiers" in body


# conflict ----------------------------------------------------------------------------------------
def conflict_study(follows: dict[str, list[str]]) -> Benchmark:
    """One UQ-vs-SP conflict per entry of each run's list; the run's attempt follows that side ("A": the user query,
    "B": the system prompt, or "neither"), read by one judge."""
    bench = Benchmark.objects.create(slug=SLUG, name="Conflict gate", kind=BenchmarkKind.CONFLICT)
    judge = Judge.objects.create(name="judge-c")
    for label, sides in follows.items():
        run = Run.objects.create(benchmark=bench, label=label, model=AgentModel.objects.create(name=label))
        for n, side in enumerate(sides):
            spec = {
                "conflict": {
                    "type": "UQ vs SP",
                    "scenario": "tests",
                    "a": {"source": "User Query", "instruction": "use tabs"},
                    "b": {"source": "System Prompt", "instruction": "use spaces"},
                }
            }
            instance, _ = Instance.objects.get_or_create(
                benchmark=bench, external_id=f"c{n:02d}", defaults={"spec": spec}
            )
            item, _ = ChecklistItem.objects.get_or_create(instance=instance, key="resolution")
            attempt = Attempt.objects.create(run=run, instance=instance)
            Verdict.objects.create(attempt=attempt, item=item, judge=judge, result="pass", evidence={"followed": side})
    return bench


def test_the_conflict_sp_rate_is_the_pages_headline_and_gates_a_regression():
    bench = conflict_study({"base": ["B"] * 36 + ["A"] * 4, "cand": ["B"] * 14 + ["A"] * 20 + ["neither"] * 6})
    document = selectors.paired_comparison_document(bench, "base", "cand")
    sp = next(r for r in document["rows"] if r["metric"] == "sp_rate" and r["judge"] is None)
    assert (sp["a"], sp["b"], sp["n_instances"]) == (90.0, 35.0, 40)
    assert (sp["test"], sp["b_count"], sp["c_count"]) == (paired.MCNEMAR, 22, 0)
    assert sp["p"] == pytest.approx(mcnemar([[14, 22], [0, 4]], exact=True).pvalue, abs=1e-9)
    neither = next(r for r in document["rows"] if r["metric"] == "neither" and r["judge"] is None)
    assert (neither["a"], neither["b"]) == (0.0, 15.0)
    assert document["categories"] == ["UQ vs SP"] and document["n_broken"] == 22
    assert gate("--baseline", "base", "--candidate", "cand", "--metric", "sp_rate", "--fail-on-regression")[0] == 1
    assert gate("--baseline", "base", "--candidate", "base", "--fail-on-regression")[0] == 0


def test_followed_neither_regresses_when_it_rises_not_when_it_falls():
    bench = conflict_study({"base": ["B"] * 40, "cand": ["B"] * 30 + ["neither"] * 10})
    rising = selectors.paired_comparison_document(bench, "base", "cand")
    neither = next(r for r in rising["rows"] if r["metric"] == "neither" and r["judge"] is None)
    assert (neither["a"], neither["b"]) == (0.0, 25.0) and neither["p"] < 0.05 and neither["low"] > 0
    assert "neither" in rising["regressions"]
    assert gate("--baseline", "base", "--candidate", "cand", "--metric", "neither", "--fail-on-regression")[0] == 1
    falling = selectors.paired_comparison_document(bench, "cand", "base")
    assert "neither" not in falling["regressions"]
    assert gate("--baseline", "cand", "--candidate", "base", "--metric", "neither", "--fail-on-regression")[0] == 0


def test_a_kinds_compare_page_has_its_pages_tabs_and_says_how_it_is_computed(dialogue_study, reviewer_client):
    empty = reviewer_client.get(f"/b/{SLUG}/compare/").content.decode()
    assert f'href="/b/{SLUG}/dialogue/survival/"' in empty  # the dialogue pages' tabs, the compare one current
    assert f'href="/b/{SLUG}/compare/" aria-current="true"' in empty
    assert "#paired-compare" in empty  # before any choice, the help link is there


def test_the_conflict_compare_page_leads_back_to_the_conflicts(reviewer_client):
    conflict = conflict_study({"base": ["B"] * 4, "cand": ["A"] * 4})
    page = reviewer_client.get(f"/b/{conflict.slug}/compare/").content.decode()
    assert f'href="/b/{conflict.slug}/conflict/">Conflicts</a>' in page and 'aria-current="true">Compare runs' in page
    compared = reviewer_client.get(f"/b/{conflict.slug}/compare/?a=base&b=cand").content.decode()
    # the sides' columns are A and B; McNemar's discordant counts are named apart from them
    assert (
        '">A</th>' in compared and '">B</th>' in compared and ">A only</th>" in compared and ">B only</th>" in compared
    )
