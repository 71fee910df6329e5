"""Checklist metrics (METRICS.md section 1) on hand-built cells and rollups with known answers."""

import random

import pytest

from runs.categories import normalise_category
from runs.metrics.checklist import (
    Cell,
    Filters,
    flipped_items,
    flipped_items_of_rollups,
    isr_by_length,
    judge_score,
    paired_comparison,
    rank_stability,
    score_row,
    score_rows,
    turn_bucket,
    with_bootstrap,
)
from runs.models import (
    AgentModel,
    Attempt,
    Benchmark,
    ChecklistItem,
    Instance,
    Judge,
    Run,
    Verdict,
)
from runs.selectors.checklist import leaderboard_rows
from runs.services import rollups_rebuild_for_attempts


def cell(attempt, instance, applicable, passed, *, model="m", judge="j1", run="r1", group=None, turns=None):
    return Cell(attempt, instance, model, run, judge, applicable, passed, group, turns)


def test_it_computes_isr_per_instance_and_csr_pooled_over_items():
    score = judge_score([cell(1, 1, 3, 3), cell(2, 2, 4, 3), cell(3, 3, 1, 0)])
    assert score.isr == pytest.approx(100 / 3)
    assert score.csr == pytest.approx(100 * 6 / 8)  # micro: (3+3+0)/(3+4+1), not the mean of ratios
    assert (score.n_instances, score.n_attempts, score.n_empty) == (3, 3, 0)


def test_it_leaves_out_instances_with_no_applicable_items_and_counts_them():
    score = judge_score([cell(1, 1, 2, 2), cell(2, 2, 0, 0)])
    assert score.isr == 100.0 and score.csr == 100.0
    assert score.n_empty == 1 and score.n_instances == 1
    empty = judge_score([cell(2, 2, 0, 0)])
    assert empty.isr is None and empty.csr is None and empty.n_empty == 1


def test_it_pools_repetitions_under_one_judge():
    # two runs of the same model on the same two instances: 3 of 4 attempts succeed
    cells = [
        cell(1, 1, 2, 2, run="r1"),
        cell(2, 2, 2, 1, run="r1"),
        cell(3, 1, 2, 2, run="r2"),
        cell(4, 2, 2, 2, run="r2"),
    ]
    row = score_row("m", None, cells)
    assert row.isr == 75.0 and row.csr == pytest.approx(87.5)
    assert row.n_instances == 2 and row.n_attempts == 4
    assert row.isr_std == 0.0  # one judge: no spread across judges


def test_it_averages_judges_with_the_population_std():
    # judge a: 1 of 2 succeed (ISR 50, CSR 3/4); judge b: 2 of 2 (ISR 100, CSR 4/4)
    cells = [
        cell(1, 1, 2, 2, judge="a"),
        cell(2, 2, 2, 1, judge="a"),
        cell(1, 1, 2, 2, judge="b"),
        cell(2, 2, 2, 2, judge="b"),
    ]
    row = score_row("m", None, cells)
    assert row.isr == 75.0 and row.isr_std == 25.0
    assert row.csr == pytest.approx(87.5) and row.csr_std == pytest.approx(12.5)
    assert set(row.per_judge) == {"a", "b"} and row.per_judge["a"].isr == 50.0


def test_it_averages_only_the_judges_that_scored_the_model():
    cells = [
        cell(1, 1, 1, 1, model="x", judge="a"),
        cell(1, 1, 1, 0, model="x", judge="b"),
        cell(2, 1, 1, 1, model="y", judge="a"),
    ]
    rows = {r.model: r for r in score_rows(cells)}
    assert rows["x"].isr == 50.0 and rows["x"].isr_std == 50.0
    assert rows["y"].isr == 100.0 and list(rows["y"].per_judge) == ["a"]


def test_it_orders_groups_by_the_given_order_then_by_name():
    cells = [
        cell(1, 1, 1, 1, group="Zeta"),
        cell(1, 1, 1, 1, group="User Query"),
        cell(1, 1, 1, 1, group="System Prompt"),
    ]
    groups = [r.group for r in score_rows(cells, group_order=("System Prompt", "User Query"))]
    assert groups == ["System Prompt", "User Query", "Zeta"]


def test_it_buckets_assistant_turns_as_metrics_md_says():
    assert [turn_bucket(t) for t in (1, 5, 6, 10, 11, 20, 21, 40, 41, None, 0)] == [
        "1-5",
        "1-5",
        "6-10",
        "6-10",
        "11-20",
        "11-20",
        "21-40",
        "21-40",
        ">40",
        "unknown",
        "unknown",
    ]
    rows = isr_by_length([cell(1, 1, 1, 1, turns=3), cell(2, 2, 1, 0, turns=4), cell(3, 3, 1, 1, turns=50)])
    assert [(r.group, r.isr) for r in rows] == [("1-5", 50.0), (">40", 100.0)]


def test_it_ranks_models_per_judge_and_finds_the_largest_shift():
    cells = []
    # judge a: x > y > z; judge b: z > y > x
    for n, (model, a, b) in enumerate([("x", 3, 1), ("y", 2, 2), ("z", 1, 3)]):
        for k in range(3):
            cells.append(cell(10 * n + k, k, 1, int(k < a), model=model, judge="a"))
            cells.append(cell(10 * n + k, k, 1, int(k < b), model=model, judge="b"))
    stability = rank_stability(score_rows(cells))
    assert stability.ranks["x"] == {"a": 1.0, "b": 3.0}
    assert stability.largest_shift == (["x", "z"], 2.0)  # both move two places: both named
    assert stability.shifts["y"] == 0.0
    assert stability.taus == [("a", "b", -1.0, 3)]


def test_it_compares_two_runs_on_the_instances_both_cover():
    a = [cell(1, 1, 2, 1, run="A"), cell(2, 2, 2, 2, run="A"), cell(3, 3, 2, 0, run="A")]
    b = [cell(4, 1, 2, 2, run="B"), cell(5, 2, 2, 2, run="B"), cell(6, 4, 2, 2, run="B")]
    result = paired_comparison(a, b, label_a="A", label_b="B")
    assert result.n_common == 2 and result.only_a == 1 and result.only_b == 1
    assert result.a.isr == 50.0 and result.b.isr == 100.0 and result.isr_gain == 50.0
    assert result.a.csr == 75.0 and result.csr_gain == 25.0


def test_it_lists_items_that_flipped_in_each_direction():
    a = [(1, 10, "j", "fail"), (1, 11, "j", "pass"), (1, 12, "j", "na"), (1, 13, "j", "pass")]
    b = [(1, 10, "j", "pass"), (1, 11, "j", "fail"), (1, 12, "j", "pass"), (1, 13, "j", "pass")]
    flips = flipped_items(a, b)
    assert [(f.item_id, f.direction) for f in flips] == [(10, "fixed"), (11, "broken")]


def test_the_flips_counted_from_rollups_equal_those_of_the_verdicts():
    """flipped_items_of_rollups over each attempt's passed and failed item lists (as AttemptRollup keeps them) gives
    flipped_items' answer over the verdicts: repetitions, not-applicable verdicts, items one side never judged."""
    rng = random.Random(5)
    verdicts = {"a": [], "b": []}
    rollups = {"a": [], "b": []}
    for side, repetitions in (("a", 3), ("b", 2)):
        for instance in range(1, 9):
            for _ in range(repetitions):  # each an attempt
                for judge in ("j2", "j1"):
                    lists = {"pass": [], "fail": []}
                    for item in range(instance * 100, instance * 100 + 6):
                        if side == "b" and item % 100 == 5:
                            continue  # an item B's judges never scored
                        result = rng.choice(["pass", "pass", "pass", "fail", "na"])
                        verdicts[side].append((instance, item, judge, result))
                        if result in lists:
                            lists[result].append(str(item))
                    rollups[side].append((instance, judge, ",".join(lists["pass"]), ",".join(lists["fail"])))
    expected = flipped_items(verdicts["a"], verdicts["b"])
    found = flipped_items_of_rollups(rollups["a"], rollups["b"])
    listed = [
        (*key, judge, direction)
        for direction in ("fixed", "broken")
        for key, judges in found.listed[direction].items()
        for judge in judges
    ]
    assert sorted(listed) == sorted((f.instance_id, f.item_id, f.judge, f.direction) for f in expected)
    fixed = found.listed["fixed"]
    assert list(fixed) == sorted(fixed) and found.counts == {d: len(found.listed[d]) for d in ("fixed", "broken")}
    assert found.counts["fixed"] > 3 and found.counts["broken"] > 3
    first = flipped_items_of_rollups(rollups["a"], rollups["b"], limit=2)
    assert first.counts == found.counts and first.listed["broken"] == dict(list(found.listed["broken"].items())[:2])
    assert flipped_items_of_rollups([], []).counts == {"fixed": 0, "broken": 0}
    one_way = flipped_items_of_rollups([(1, "j", "", "7")], [(1, "j", "7", "")])
    assert one_way.counts == {"fixed": 1, "broken": 0} and one_way.listed == {"fixed": {(1, 7): ["j"]}, "broken": {}}


def test_it_bootstraps_an_interval_that_contains_the_estimate():
    cells = [cell(n, n, 2, 2 if n % 3 else 1) for n in range(30)]
    row = with_bootstrap(score_row("m", None, cells), cells)
    assert row.isr_ci[0] <= row.isr <= row.isr_ci[1]
    assert row.csr_ci[0] <= row.csr <= row.csr_ci[1]
    assert row.isr_ci[1] - row.isr_ci[0] > 5
    again = with_bootstrap(score_row("m", None, cells), cells)
    assert again.isr_ci == row.isr_ci


# the same metrics read from rollups ----------------------------------------------------
@pytest.fixture
def study(db):
    """Two instances, three categories spelled three ways, two models, two judges (one model unseen by judge b)."""
    bench = Benchmark.objects.create(slug="octo", name="Octo", kind="checklist")
    i1 = Instance.objects.create(
        benchmark=bench, external_id="i1", scaffold="claude-code", primary_category="md", content_hash="x"
    )
    i2 = Instance.objects.create(
        benchmark=bench, external_id="i2", scaffold="kilo", primary_category="sp", content_hash="x"
    )
    items = {}
    for inst in (i1, i2):
        for n, spelling in enumerate(["SP", "System prompt", "UQ", "Memory bank (project)"]):
            items[(inst.external_id, n)] = ChecklistItem.objects.create(
                instance=inst,
                key=f"c{n}",
                position=n,
                category=normalise_category(spelling),
                category_original=spelling,
                check_type="compliance" if n < 2 else "understanding",
                content_hash="x",
            )
    ja, jb = Judge.objects.create(name="a"), Judge.objects.create(name="b")
    mx, my = AgentModel.objects.create(name="x"), AgentModel.objects.create(name="y")
    rx, ry = (
        Run.objects.create(benchmark=bench, model=mx, label="rx"),
        Run.objects.create(benchmark=bench, model=my, label="ry"),
    )
    attempts = {}
    for run in (rx, ry):
        for inst in (i1, i2):
            attempts[(run.label, inst.external_id)] = Attempt.objects.create(run=run, instance=inst, assistant_turns=7)

    def verdicts(run, inst, judge, results):
        for n, result in enumerate(results):
            Verdict.objects.create(attempt=attempts[(run, inst)], item=items[(inst, n)], judge=judge, result=result)

    verdicts("rx", "i1", ja, ["pass", "pass", "pass", "pass"])
    verdicts("rx", "i2", ja, ["pass", "fail", "na", "na"])
    verdicts("rx", "i1", jb, ["pass", "pass", "fail", "pass"])
    verdicts("rx", "i2", jb, ["na", "na", "na", "na"])  # no applicable items under b
    verdicts("ry", "i1", ja, ["fail", "pass", "pass", "pass"])
    verdicts("ry", "i2", ja, ["pass", "pass", "pass", "fail"])
    rollups_rebuild_for_attempts([a.id for a in attempts.values()])
    return bench, items


def test_it_reads_the_leaderboard_from_rollups(study):
    bench, _ = study
    rows = {r.model: r for r in leaderboard_rows(bench.id, Filters())}
    x = rows["x"]
    assert x.per_judge["a"].isr == 50.0 and x.per_judge["a"].csr == pytest.approx(100 * 5 / 6)
    assert x.per_judge["b"].isr == 0.0 and x.per_judge["b"].csr == 75.0 and x.per_judge["b"].n_empty == 1
    assert x.isr == 25.0 and x.isr_std == 25.0
    assert x.n_instances == 2 and x.n_attempts == 2 and x.n_empty == 0
    assert list(rows["y"].per_judge) == ["a"] and rows["y"].isr == 0.0


def test_it_groups_categories_spelled_several_ways_into_one(study):
    bench, _ = study
    rows = leaderboard_rows(bench.id, Filters(judges=["a"]), by="category")
    x = {r.group: r for r in rows if r.model == "x"}
    assert list(x) == ["System Prompt", "User Query", "Memory"]
    # System Prompt: i1 2/2, i2 1/2 -> ISR_c 50, CSR_c 75
    assert x["System Prompt"].isr == 50.0 and x["System Prompt"].csr == 75.0
    # User Query: applicable only on i1 -> ISR_c over one instance
    assert x["User Query"].n_instances == 1 and x["User Query"].isr == 100.0
    assert x["User Query"].n_empty == 1


def test_it_filters_and_groups_by_instance_facets_and_judge(study):
    bench, _ = study
    rows = leaderboard_rows(bench.id, Filters(scaffolds=["kilo"]), by="scaffold")
    assert {(r.model, r.group) for r in rows} == {("x", "kilo"), ("y", "kilo")}
    by_judge = {(r.model, r.group): r for r in leaderboard_rows(bench.id, Filters(), by="judge")}
    assert by_judge[("x", "b")].isr == 0.0 and by_judge[("x", "a")].isr == 50.0
    assert ("y", "b") not in by_judge
    checks = {(r.model, r.group): r for r in leaderboard_rows(bench.id, Filters(models=["y"]), by="check_type")}
    assert checks[("y", "compliance")].csr == 75.0 and checks[("y", "understanding")].isr == 50.0


def test_it_recomputes_from_verdicts_when_items_are_excluded(study):
    bench, items = study
    excluded = {items[("i2", 1)].id}  # the one failing item of x on i2 under judge a
    rows = {r.model: r for r in leaderboard_rows(bench.id, Filters(judges=["a"]), excluded_items=excluded)}
    assert rows["x"].isr == 100.0 and rows["x"].csr == 100.0
    plain = {r.model: r for r in leaderboard_rows(bench.id, Filters(judges=["a"]))}
    assert plain["x"].isr == 50.0
    grouped = {
        (r.model, r.group): r
        for r in leaderboard_rows(bench.id, Filters(judges=["a"]), by="category", excluded_items=excluded)
    }
    assert grouped[("x", "System Prompt")].isr == 100.0


def test_it_bootstraps_leaderboard_rows_on_request(study):
    bench, _ = study
    rows = leaderboard_rows(bench.id, Filters(), bootstrap=True)
    assert all(r.isr_ci is not None for r in rows)
    assert leaderboard_rows(bench.id, Filters())[0].isr_ci is None
