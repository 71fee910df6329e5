"""Dialogue metrics (METRICS.md section 3) on hand-built logs, checked against hand computation."""

import math

import pytest

from runs.metrics.dialogue import (
    Dialogue,
    PatienceRefused,
    TurnRow,
    dialogue_metrics,
    ending_counts,
    group_pass_rates,
    longest_success_run,
    patience_cut,
    recoveries_and_lapses,
    reference_metrics,
    resimulate,
    rows_by,
    steepest_drop,
    survival_curve,
    viewer_turns,
)


def dialogue(key, pairs, *, patience=3, model="m", run="r", ended_by=""):
    turns = tuple(TurnRow(turn=i + 1, n_applicable=a, n_passed=p) for i, (a, p) in enumerate(pairs))
    return Dialogue(key=key, turns=turns, patience=patience, model=model, run=run, ended_by=ended_by)


# A ends by patience 3: pass, fail, pass, pass, fail, fail, fail
PATIENCE_ENDED = [(2, 2), (2, 1), (3, 3), (3, 3), (4, 2), (4, 0), (4, 3)]
# B runs out of script with no failure
NO_FAILURES = [(1, 1), (2, 2), (2, 2)]
# C runs out of script: fail, pass, fail, pass
SCRIPT_ENDED = [(1, 0), (1, 1), (2, 1), (2, 2)]


@pytest.fixture
def three():
    return [
        dialogue("A", PATIENCE_ENDED, ended_by="patience"),
        dialogue("B", NO_FAILURES, ended_by="script_end"),
        dialogue("C", SCRIPT_ENDED, ended_by="script_end"),
    ]


def test_it_computes_every_metric_by_hand(three):
    m = dialogue_metrics(three)
    assert m.dialogues == 3 and m.turns == 14
    assert m.csr == pytest.approx(100 * 10.25 / 14)
    assert m.isr == pytest.approx(100 * 8 / 14)
    assert m.act_len == pytest.approx(14 / 3)
    assert m.act_acc == pytest.approx(10.25 / 3)
    assert m.act_succ == pytest.approx(8 / 3)
    assert m.lss == pytest.approx((2 + 3 + 1) / 3)
    assert m.rob == pytest.approx(100 * (3 / 7 + 1 + 2 / 4) / 3)
    assert m.rec == pytest.approx(100 * (1 / 3 + 1) / 2)
    assert (m.rec_dialogues, m.rec_excluded) == (2, 1)


def test_it_reproduces_the_reference_rec_for_a_patience_ended_dialogue():
    d = dialogue("A", PATIENCE_ENDED)
    successes = d.successes
    recoveries, lapses = recoveries_and_lapses(successes)
    reference_denominator = d.length - sum(successes) - 1
    assert lapses == reference_denominator == 3
    assert dialogue_metrics([d]).rec == pytest.approx(100 * recoveries / reference_denominator)


def test_it_leaves_dialogues_without_lapses_out_of_rec_and_counts_them():
    m = dialogue_metrics([dialogue("B", NO_FAILURES)])
    assert m.rec is None and m.rec_dialogues == 0 and m.rec_excluded == 1
    assert m.isr == 100 and m.rob == 100 and m.lss == 3


def test_it_does_not_count_a_failure_on_the_last_turn_as_a_lapse():
    assert recoveries_and_lapses([True, False]) == (0, 0)
    assert recoveries_and_lapses([False, True, False, False]) == (1, 2)


def test_it_finds_the_longest_run_of_successes():
    assert longest_success_run([True, True, False, True, True, True, False]) == 3
    assert longest_success_run([False, False]) == 0
    assert longest_success_run([]) == 0


def test_it_computes_the_survival_curve(three):
    curve = survival_curve(d.length for d in three)
    assert [p.turn for p in curve] == [1, 2, 3, 4, 5, 6, 7]
    assert [p.alive for p in curve] == [3, 3, 3, 2, 1, 1, 1]
    assert curve[3].percent == pytest.approx(200 / 3)
    assert survival_curve([]) == []


def test_it_reports_the_earliest_steepest_drop(three):
    drop = steepest_drop(survival_curve(d.length for d in three))
    assert drop.turn == 4 and drop.lost == 1
    assert drop.before == 100 and drop.after == pytest.approx(200 / 3)
    assert steepest_drop(survival_curve([5, 5])) is None
    assert steepest_drop(survival_curve([2, 6, 6, 6])).turn == 3


def test_it_cuts_at_the_first_run_of_p_consecutive_failures():
    successes = [True, False, True, True, False, False, False]
    assert patience_cut(successes, 3) == 7
    assert patience_cut(successes, 2) == 6
    assert patience_cut(successes, 1) == 2
    assert patience_cut([False, True, False, True], 2) == 4
    assert patience_cut([False, True, False, True], 1) == 1


def test_it_resimulates_patience_three_to_two(three):
    cut = {d.key: d for d in resimulate(three, 2)}
    assert (cut["A"].length, cut["B"].length, cut["C"].length) == (6, 3, 4)
    assert cut["A"].ended_by == "patience" and cut["C"].ended_by == "script_end"
    m = dialogue_metrics(cut.values())
    # A keeps pass, fail, pass, pass, fail, fail: r = 1 + .5 + 1 + 1 + .5 + 0
    assert m.turns == 13
    assert m.csr == pytest.approx(100 * (4 + 3 + 2.5) / 13)
    assert m.act_succ == pytest.approx((3 + 3 + 2) / 3)
    assert m.rob == pytest.approx(100 * (3 / 6 + 1 + 2 / 4) / 3)
    # A: recoveries 1 of lapses 2 (turn 3 after 2, turn 6 after 5)
    assert m.rec == pytest.approx(100 * (1 / 2 + 1) / 2)


def test_it_resimulates_patience_three_to_one(three):
    cut = {d.key: d for d in resimulate(three, 1)}
    assert (cut["A"].length, cut["B"].length, cut["C"].length) == (2, 3, 1)
    assert cut["C"].ended_by == "patience"
    m = dialogue_metrics(cut.values())
    assert m.act_len == pytest.approx(6 / 3)
    assert m.isr == pytest.approx(100 * 4 / 6)
    # under patience 1 no turn follows a failure: every dialogue leaves REC
    assert m.rec is None and m.rec_excluded == 3
    assert [p.alive for p in survival_curve(d.length for d in cut.values())] == [3, 2, 1]


def test_it_keeps_the_log_at_the_recorded_patience(three):
    assert [d.length for d in resimulate(three, 3)] == [7, 3, 4]
    assert resimulate(three, None) == three


def test_it_refuses_a_patience_higher_than_recorded(three):
    with pytest.raises(PatienceRefused, match="higher than the patience 3"):
        resimulate(three, 4)


def test_it_refuses_patience_below_one_and_unknown_recorded_patience(three):
    with pytest.raises(PatienceRefused):
        resimulate(three, 0)
    with pytest.raises(PatienceRefused, match="without a recorded patience"):
        resimulate([dialogue("X", NO_FAILURES, patience=None)], 2)


def test_it_pools_group_pass_rates():
    rates = group_pass_rates([("format", 2, 1), ("length", 1, 0), ("format", 2, 2)])
    assert [(r.group, r.applicable, r.passed) for r in rates] == [("format", 4, 3), ("length", 1, 0)]
    assert rates[0].percent == 75 and rates[1].percent == 0


def test_it_groups_rows_by_model_or_run():
    ds = [
        dialogue("a", NO_FAILURES, model="m1", run="m1-r1"),
        dialogue("b", SCRIPT_ENDED, model="m1", run="m1-r2"),
        dialogue("c", PATIENCE_ENDED, model="m2", run="m2-r1", ended_by="patience"),
    ]
    by_model = rows_by(ds)
    assert [(r.label, r.metrics.dialogues, r.runs) for r in by_model] == [
        ("m1", 2, ["m1-r1", "m1-r2"]),
        ("m2", 1, ["m2-r1"]),
    ]
    assert by_model[1].ended_by_patience == 1
    assert [r.label for r in rows_by(ds, by="run")] == ["m1-r1", "m1-r2", "m2-r1"]


def test_it_treats_a_turn_without_active_constraints_as_satisfied():
    row = TurnRow(turn=1, n_applicable=0, n_passed=0)
    assert row.success and row.ratio == 1.0


def test_it_marks_constraint_changes_against_the_previous_turn_of_the_same_topic():
    spec = {
        "turns": [
            {"turn": 1, "active_topic": "A"},
            {"turn": 2, "active_topic": "B"},
            {"turn": 3, "active_topic": "A"},
            {"turn": 4, "active_topic": "A"},
        ]
    }
    items = [
        {"id": 1, "key": "t1:length", "turn": 1, "group": "length", "details": {"args": {"number": 5}}},
        {"id": 2, "key": "t1:case", "turn": 1, "group": "case", "details": {"args": {"mode": "all_lower"}}},
        {"id": 3, "key": "t2:format", "turn": 2, "group": "format", "details": {"args": {"mode": "csv"}}},
        {"id": 4, "key": "t3:length", "turn": 3, "group": "length", "details": {"args": {"number": 9}}},
    ]
    outcome = {"turns": [{"turn": t, "overall_ok": True, "remaining_patience": 3} for t in (1, 2, 3)], "ended_turn": 3}
    verdicts = [{"item_id": 4, "judge": "log", "result": "pass", "reasoning": ""}]
    turns = viewer_turns(spec=spec, outcome=outcome, messages=[], items=items, verdicts=verdicts)
    assert [t.turn for t in turns] == [1, 2, 3]  # turn 4 comes after the log ended
    assert [t.topic_event for t in turns] == ["start", "new", "return"]
    back = turns[2]
    assert [(c.group, c.change, c.previous_args) for c in back.constraints] == [("length", "changed", {"number": 5})]
    assert back.removed == [{"group": "case", "args": '{"mode": "all_lower"}'}]
    assert back.constraints[0].verdicts["log"]["result"] == "pass" and back.is_end


# what EvolIF's src/score.py prints for the same dialogues -------------------------------------
def test_the_reference_figures_are_score_py_computed_by_hand(three):
    ref = reference_metrics(three)
    # A: s = 1,0,1,1,0,0,0; r = 1, .5, 1, 1, .5, 0, .75. B: s = 1,1,1. C: s = 0,1,0,1; r = 0, 1, .5, 1
    assert (ref.dialogues, ref.turns) == (3, 14)
    assert ref.act_len == pytest.approx(14 / 3) and ref.act_succ == pytest.approx(8 / 3)
    assert ref.act_acc == pytest.approx((4.75 + 3 + 2.5) / 3)
    assert ref.lss == pytest.approx((2 + 3 + 1) / 3)
    assert ref.csr == pytest.approx(100 * 10.25 / 14) and ref.isr == pytest.approx(100 * 8 / 14)
    assert ref.rob == pytest.approx(100 * (3 / 7 + 1 + 2 / 4) / 3)
    # Recovery: recoveries / (N - successes - 1): A 1/3; B 0/-1 = -0.0; C 2/1 (the first turn counts as after a success)
    assert ref.rec == pytest.approx(100 * (1 / 3 + 0 + 2) / 3)
    assert ref.survival == (3, 3, 3, 2, 1, 1, 1)
    # the portal: REC over the dialogues with a lapse (A 1/3, C 2/2); every other figure is score.py's
    metrics = dialogue_metrics(three)
    assert metrics.rec == pytest.approx(100 * (1 / 3 + 1) / 2)
    assert set(ref.differs_from(metrics)) == {"rec"}


def test_the_reference_prints_inf_nan_where_score_py_divides_by_zero():
    stopped_after_one_failure = dialogue("D", [(1, 1), (1, 0)], ended_by="stopped")  # 0 / (2 - 1 - 1): nan
    recovered_at_the_end = dialogue("E", [(1, 0), (1, 1)], ended_by="script_end")  # 1 / (2 - 1 - 1): inf
    empty = dialogue("F", [], ended_by="stopped")  # Robustness 0 / 0: nan
    assert math.isnan(reference_metrics([stopped_after_one_failure]).rec)
    assert reference_metrics([recovered_at_the_end]).rec == math.inf
    ref = reference_metrics([recovered_at_the_end, empty])
    assert math.isnan(ref.rob) and ref.act_len == 1.0 and ref.survival == (1, 1)
    metrics = dialogue_metrics([recovered_at_the_end, empty])
    assert metrics.rob == 50.0 and set(ref.differs_from(metrics)) == {"rob", "rec"}
    assert ending_counts([stopped_after_one_failure, recovered_at_the_end, empty, dialogue("G", [(1, 1)])]) == {
        "patience": 0,
        "script_end": 2,
        "stopped": 2,
    }


def test_rows_carry_the_reference_and_say_where_it_differs(three):
    row = rows_by(three)[0]
    assert row.reference == reference_metrics(three) and set(row.reference_differs) == {"rec"}
    assert (row.ended_by_patience, row.ended_by_script, row.ended_stopped) == (1, 2, 0)
