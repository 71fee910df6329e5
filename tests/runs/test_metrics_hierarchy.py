"""Hierarchy metrics (METRICS.md section 4) on hand-built rows with known answers."""

import pytest

from runs.metrics.hierarchy import (
    ConflictOutcome,
    Member,
    SampleRow,
    accuracy,
    accuracy_by,
    accuracy_by_tiers,
    agreement,
    compare_runs,
    conflict_outcome,
    resolution_rates,
    style_group_rates,
    tiers_of,
)


def row(n, *, test=True, style=True, run="r1", model="m1", tiers=6, groups=None):
    return SampleRow(
        attempt_id=n + (1000 if run != "r1" else 0),
        run=run,
        model=model,
        interface="ordinal",
        sample=str(n),
        instance_id=n,
        tiers=tiers,
        n_instructions=tiers,
        test_passed=test,
        style_passed=style,
        groups=groups or {},
    )


def test_it_counts_a_sample_for_acc_only_when_tests_and_style_both_pass():
    rows = [row(1), row(2, test=False), row(3, style=False), row(4, test=False, style=False)]
    acc = accuracy(rows, label="m1")
    assert (acc.n, acc.acc, acc.acc_test, acc.acc_style) == (4, 25.0, 50.0, 50.0)


def test_it_gives_the_same_bootstrap_interval_every_time_and_brackets_the_mean():
    rows = [row(n, test=n % 3 != 0, style=n % 2 == 0) for n in range(30)]
    first, second = accuracy(rows), accuracy(rows)
    assert first.acc_ci == second.acc_ci and first.acc_style_ci == second.acc_style_ci
    low, high = first.acc_ci
    assert low < first.acc < high
    assert 0.0 <= low and high <= 100.0


def test_it_has_no_interval_for_no_samples_and_a_point_interval_for_unanimous_ones():
    assert accuracy([]).acc is None and accuracy([]).acc_ci is None
    assert accuracy([row(n) for n in range(5)]).acc_ci == (100.0, 100.0)


def test_it_pools_runs_by_model_or_keeps_them_apart():
    rows = [row(1, run="a", model="m"), row(2, run="a", model="m", test=False), row(1, run="b", model="m")]
    by_model = accuracy_by(rows, by="model")
    assert [(r.label, r.n, r.acc, r.runs) for r in by_model] == [("m", 3, pytest.approx(200 / 3), ("a", "b"))]
    assert [(r.label, r.acc) for r in accuracy_by(rows, by="run")] == [("a", 50.0), ("b", 100.0)]
    with pytest.raises(ValueError):
        accuracy_by(rows, by="judge")


def test_it_counts_tiers_as_distinct_privilege_values():
    assert tiers_of([90, 60, 20, 40]) == 4
    assert tiers_of([30, 30, 80, 50, 10]) == 4
    assert tiers_of([]) == 0


def test_it_splits_accuracy_by_tiers():
    rows = [row(1, tiers=6), row(2, tiers=6, style=False), row(3, tiers=12, test=False), row(4, tiers=12)]
    got = [(r.label, r.tiers, r.n, r.acc) for r in accuracy_by_tiers(rows)]
    assert got == [("m1", 6, 2, 50.0), ("m1", 12, 2, 50.0)]


def test_it_rates_each_style_group_over_the_samples_that_have_it():
    rows = [
        row(1, groups={"indent": True, "quotes": False}),
        row(2, groups={"indent": False}),
        row(3, groups={"indent": True}),
    ]
    got = [(g.group, g.n, g.passed, g.rate) for g in style_group_rates(rows)]
    assert got == [("indent", 3, 2, pytest.approx(200 / 3)), ("quotes", 1, 0, 0.0)]


def test_it_compares_two_runs_on_their_common_samples_with_flips():
    a = [row(1), row(2), row(3, test=False), row(4), row(5)]
    b = [row(1, run="b"), row(2, run="b", style=False), row(3, run="b"), row(4, run="b"), row(6, run="b")]
    c = compare_runs(a, b, a="r1", b="b")
    assert c.n == 4 and c.only_a == 1 and c.only_b == 1
    assert (c.acc_a, c.acc_b, c.delta) == (75.0, 75.0, 0.0)
    assert c.flip_rate == 50.0
    assert [(f.sample, f.a_passed, f.b_passed) for f in c.flips] == [("2", True, False), ("3", False, True)]
    assert (c.gained, c.lost) == (1, 1)
    low, high = c.delta_ci
    assert low <= 0.0 <= high


def test_it_reports_no_flip_between_identical_runs():
    a = [row(n, test=n % 2 == 0) for n in range(10)]
    b = [row(n, run="b", test=n % 2 == 0) for n in range(10)]
    c = compare_runs(a, b)
    assert c.flip_rate == 0.0 and c.flips == [] and c.delta == 0.0 and c.delta_ci == (0.0, 0.0)


def member(key, rank, active, satisfied, position=None):
    return Member(
        key=key, style_id=f"s{key}", rank=rank, position=position or int(key), active=active, satisfied=satisfied
    )


def test_it_calls_a_group_won_when_every_active_member_is_satisfied():
    chain = [member("1", 1, True, True), member("2", 2, False, False), member("3", 3, True, True)]
    assert conflict_outcome(chain) == ("winner", None, None)


def test_it_reports_the_highest_ranked_satisfied_suppressed_member():
    members = [
        member("1", 1, True, False),
        member("2", 3, False, True),
        member("3", 2, False, True),
        member("4", 5, False, False),
    ]
    assert conflict_outcome(members) == ("suppressed", 2, 2)


def test_it_reports_none_when_nothing_of_the_group_is_followed():
    members = [member("1", 1, True, False), member("2", 2, False, False)]
    assert conflict_outcome(members) == ("none", None, None)


def test_it_does_not_count_a_half_satisfied_chain_as_won():
    chain = [member("1", 1, True, True), member("2", 2, False, False), member("3", 3, True, False)]
    assert conflict_outcome(chain) == ("none", None, None)


def outcome(model, tiers, kind, place=None):
    return ConflictOutcome(
        attempt_id=1,
        run=model,
        model=model,
        sample="s",
        tiers=tiers,
        group=1,
        style_group="g",
        members=(),
        outcome=kind,
        suppressed_rank=place,
        suppressed_place=place,
    )


def test_it_rates_conflict_outcomes_per_model_overall_and_per_tiers():
    outcomes = [
        outcome("m", 6, "winner"),
        outcome("m", 6, "suppressed", 2),
        outcome("m", 12, "none"),
        outcome("m", 12, "winner"),
    ]
    rates = resolution_rates(outcomes)
    assert [(r.tiers, r.n, r.winner, r.suppressed, r.none) for r in rates] == [
        (None, 4, 50.0, 25.0, 25.0),
        (6, 2, 50.0, 50.0, 0.0),
        (12, 2, 50.0, 0.0, 50.0),
    ]
    assert rates[0].places == {2: 1}


def test_it_counts_agreement_per_group_leaving_out_not_applicable():
    pairs = [
        ("indent", "pass", "pass"),
        ("indent", "pass", "fail"),
        ("indent", "fail", "pass"),
        ("quotes", "fail", "fail"),
        ("quotes", "na", "pass"),
    ]
    rows = {r.group: r for r in agreement(pairs)}
    assert (
        rows["indent"].pairs,
        rows["indent"].agree,
        rows["indent"].logged_pass_checker_fail,
        rows["indent"].logged_fail_checker_pass,
    ) == (3, 1, 1, 1)
    assert rows["quotes"].pairs == 1 and rows["quotes"].percent == 100.0
    assert rows["all groups"].pairs == 4 and rows["all groups"].agree == 2
