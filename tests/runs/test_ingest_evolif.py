"""EvolIF ingest: dialogue scripts (evolif-dialogs) and evaluation logs (evolif-eval)."""

import json
import shutil
import tracemalloc
from pathlib import Path

import pytest

from runs.ingest import IngestFailed, Options, Source, ingest
from runs.ingest.base import MAX_PROBLEMS_PER_FILE
from runs.ingest.evolif import JUDGE_FAILED
from runs.models import Attempt, AttemptRollup, ChecklistItem, Instance, Judge, JudgeKind, Run, Trajectory, Verdict
from runs.trajectory_view import stored_threads

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "evolif"


def lines_of(name):
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line.strip()]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def dialogs(*paths, **options):
    paths = paths or (FIXTURES / "dialog_1.jsonl", FIXTURES / "dialog_2.jsonl")
    return ingest("evolif-dialogs", [Source.of(p) for p in paths], Options(**options))


def logs(*paths, model="acme-chat", **options):
    paths = paths or (FIXTURES / "eval_1.jsonl", FIXTURES / "eval_2.jsonl")
    return ingest("evolif-eval", [Source.of(p) for p in paths], Options(model=model, **options))


def failure(fmt, paths, **options):
    with pytest.raises(IngestFailed) as caught:
        ingest(fmt, [Source.of(p) for p in paths], Options(**options))
    return str(caught.value)


# dialogs ------------------------------------------------------------------------------
def test_it_stores_one_instance_per_dialog_and_one_item_per_turn_constraint():
    report = dialogs()
    assert Instance.objects.count() == 2
    expected_items = sum(len(t["instructions"]) for n in (1, 2) for t in lines_of(f"dialog_{n}.jsonl"))
    assert ChecklistItem.objects.count() == expected_items == 14
    assert report.counts["instances"]["created"] == 2
    assert report.counts["checklist items"]["created"] == 14
    dialog = Instance.objects.get(external_id="dialog_1")
    assert dialog.benchmark.slug == "evolif" and dialog.benchmark.kind == "dialogue"
    assert dialog.spec["style"]["uuid"] == "fixture-style-1"
    assert len(dialog.spec["turns"]) == 4 and "style" not in dialog.spec["turns"][0]
    assert dialog.spec["turns"][2]["user_query_verified"] == "Mention the tide and the harbour too."


def test_it_keys_items_by_turn_and_constraint_with_a_suffix_for_repeats():
    dialogs()
    items = {i.key: i for i in ChecklistItem.objects.filter(instance__external_id="dialog_1")}
    assert sorted(items) == [
        "t1:format",
        "t2:countableItems",
        "t2:format",
        "t3:countableItems",
        "t3:existence",
        "t3:existence#2",
        "t3:format",
        "t4:endwith",
    ]
    repeat = items["t3:existence#2"]
    assert (repeat.turn, repeat.group) == (3, "existence")
    assert repeat.details == {"args": ["harbour"], "topic": 11}
    assert items["t4:endwith"].details["topic"] == 22
    assert items["t3:existence"].description == "The response must mention 'tide'."


def test_it_creates_nothing_when_the_same_dialogs_are_ingested_again():
    dialogs()
    report = dialogs()
    assert report.total("created") == 0 and report.total("updated") == 0
    assert report.counts["checklist items"]["unchanged"] == 14
    assert Instance.objects.count() == 2


def test_it_updates_a_corrected_dialog_in_place(tmp_path):
    dialogs()
    before = dict(ChecklistItem.objects.values_list("key", "id").filter(instance__external_id="dialog_2"))
    rows = lines_of("dialog_2.jsonl")
    rows[1]["instructions"][1]["description"] = "The response must end with 'Fair winds!'"
    rows = rows[:2]  # the corrected script also drops turn 3
    report = dialogs(FIXTURES / "dialog_1.jsonl", write_jsonl(tmp_path / "dialog_2.jsonl", rows))
    assert report.counts["instances"]["updated"] == 1
    assert report.counts["checklist items"]["updated"] == 1
    assert report.counts["checklist items"]["removed"] == 3
    item = ChecklistItem.objects.get(instance__external_id="dialog_2", key="t2:endwith")
    assert item.id == before["t2:endwith"] and item.description.endswith("'Fair winds!'")
    assert Instance.objects.get(external_id="dialog_2").spec["turns"][-1]["turn"] == 2


def test_it_keeps_a_later_turns_style_only_where_it_differs(tmp_path):
    rows = lines_of("dialog_2.jsonl")
    rows[2]["style"] = {"uuid": "other"}
    dialogs(write_jsonl(tmp_path / "dialog_9.jsonl", rows))
    turns = Instance.objects.get(external_id="dialog_9").spec["turns"]
    assert ["style" in t for t in turns] == [False, False, True]


@pytest.mark.parametrize(
    "mutate, where, reason",
    [
        (lambda text: text[: len(text) - 40], ":3:", "truncated"),
        (lambda text: text.replace("\n", "\nnot json at all\n", 1), ":2:", "not valid JSON"),
        (
            lambda text: (
                "\n".join(
                    json.dumps({k: v for k, v in json.loads(line).items() if k != "turn"}) if n == 1 else line
                    for n, line in enumerate(text.splitlines())
                )
                + "\n"
            ),
            ":2:",
            "missing required field 'turn'",
        ),
        (lambda text: text.replace('"id": "endwith"', '"idx": "endwith"', 1), ":2:", "has no 'id'"),
        (lambda text: text.replace('"turn": 3', '"turn": 2', 1), ":3:", "turn 2 where turn 3 was expected"),
    ],
    ids=["truncated-last-line", "non-json-line", "missing-turn", "missing-constraint-id", "repeated-turn"],
)
def test_it_rejects_a_bad_dialog_and_stores_nothing(tmp_path, mutate, where, reason):
    bad = tmp_path / "dialog_2.jsonl"
    bad.write_text(mutate((FIXTURES / "dialog_2.jsonl").read_text()))
    message = failure("evolif-dialogs", [FIXTURES / "dialog_1.jsonl", bad])
    assert f"{bad.name}{where}" in message and reason in message
    assert message.startswith("1 problem(s)")
    assert Instance.objects.count() == 0 and ChecklistItem.objects.count() == 0


def test_it_rejects_an_empty_dialog_file(tmp_path):
    empty = tmp_path / "dialog_3.jsonl"
    empty.write_text("")
    message = failure("evolif-dialogs", [FIXTURES / "dialog_1.jsonl", empty])
    assert f"{empty.name}: the file is empty" in message
    assert Instance.objects.count() == 0


def test_it_rejects_an_eval_log_given_as_a_dialog():
    message = failure("evolif-dialogs", [FIXTURES / "eval_1.jsonl"])
    assert "eval_1.jsonl:1: this looks like an EvolIF evaluation log" in message
    assert Instance.objects.count() == 0


# evaluation logs ----------------------------------------------------------------------
def test_it_stores_attempts_outcomes_and_logged_verdicts():
    dialogs()
    report = logs()
    run = Run.objects.get(label="acme-chat")
    assert run.settings == {"patience": 2}
    assert report.counts["attempts"]["created"] == 2
    # dialog_1: all 4 turns evaluated (8 items); dialog_2 ended at turn 2 (1 + 2 items)
    assert Verdict.objects.count() == report.counts["verdicts"]["created"] == 11
    judge = Judge.objects.get(name="evolif-log")
    assert judge.kind == JudgeKind.LOGGED
    one = Attempt.objects.get(run=run, instance__external_id="dialog_1")
    assert one.outcome["ended_by"] == "script_end" and one.outcome["ended_turn"] == 4
    assert one.outcome["patience"] == 2
    assert one.outcome["turns"][1] == {
        "turn": 2,
        "overall_ok": False,
        "remaining_patience": 1,
        "sub_details": {"countableItems": "found 2 bullets"},
    }
    assert one.response == "Knots are fun. Fair winds." and one.assistant_turns == 4
    two = Attempt.objects.get(run=run, instance__external_id="dialog_2")
    assert two.outcome["ended_by"] == "patience" and two.outcome["ended_turn"] == 2
    results = dict(Verdict.objects.filter(attempt=two).values_list("item__key", "result"))
    assert results == {"t1:countableItems": "fail", "t2:countableItems": "pass", "t2:endwith": "fail"}
    repeats = dict(Verdict.objects.filter(attempt=one, item__turn=3).values_list("item__key", "result"))
    assert repeats == {
        "t3:format": "pass",
        "t3:countableItems": "pass",
        "t3:existence": "pass",
        "t3:existence#2": "pass",
    }
    rollup = AttemptRollup.objects.get(attempt=one, judge=judge)
    assert (rollup.n_applicable, rollup.n_passed) == (8, 6)


def test_it_stores_the_dialogue_as_one_thread_of_turn_tagged_messages():
    dialogs()
    logs()
    thread = stored_threads(Trajectory.objects.get(attempt__instance__external_id="dialog_2").attempt_id)
    assert len(thread) == 1 and thread[0]["meta"]["thread"] == "main"
    messages = thread[0]["messages"]
    assert [(m["role"], m["turn"]) for m in messages] == [("user", 1), ("assistant", 1), ("user", 2), ("assistant", 2)]
    assert messages[0]["content"] == "Describe a storm in exactly three bullet points."
    assert messages[1]["content"] == "A storm <script>alert(1)</script> rages."


def test_it_creates_nothing_when_the_same_logs_are_ingested_again():
    dialogs()
    logs()
    report = logs()
    assert report.total("created") == 0 and report.total("updated") == 0
    assert Verdict.objects.count() == 11


def test_it_updates_a_corrected_log_in_place(tmp_path):
    dialogs()
    logs()
    rows = lines_of("eval_1.jsonl")
    rows[3]["eval"] = {"overall_ok": False, "details": {"endwith": False}, "sub_details": {}}
    rows[3]["remaining_patience"] = 1
    rows[3]["response"] = "Knots are fun."
    corrected = write_jsonl(tmp_path / "eval_1.jsonl", rows)
    verdict_id = Verdict.objects.get(item__key="t4:endwith").id
    report = logs(corrected, FIXTURES / "eval_2.jsonl")
    assert report.counts["verdicts"]["updated"] == 1 and report.counts["attempts"]["updated"] == 1
    verdict = Verdict.objects.get(item__key="t4:endwith")
    assert verdict.id == verdict_id and verdict.result == "fail"
    attempt = verdict.attempt
    assert attempt.response == "Knots are fun." and attempt.outcome["turns"][-1]["overall_ok"] is False
    assert AttemptRollup.objects.get(attempt=attempt).n_passed == 5


def test_it_uses_the_judge_given_and_an_existing_run_without_a_model():
    dialogs()
    logs(judge="rerun-checker")
    assert Judge.objects.filter(name="rerun-checker").exists()
    assert not Judge.objects.filter(name="evolif-log").exists()
    again = ingest(
        "evolif-eval", [Source.of(FIXTURES / "eval_1.jsonl")], Options(run="acme-chat", judge="rerun-checker")
    )
    assert again.total("created") == 0 and again.total("updated") == 0
    # the same log under the default judge is a second set of verdicts on the same attempt
    other = ingest("evolif-eval", [Source.of(FIXTURES / "eval_1.jsonl")], Options(run="acme-chat"))
    assert other.counts["verdicts"]["created"] == 8 and other.counts["attempts"]["unchanged"] == 1


def test_it_needs_a_model_or_an_existing_run():
    dialogs()
    message = failure("evolif-eval", [FIXTURES / "eval_1.jsonl"])
    assert "pass --model" in message
    message = failure("evolif-eval", [FIXTURES / "eval_1.jsonl"], run="nope")
    assert "run 'nope' does not exist yet" in message
    assert Run.objects.count() == 0


def test_it_reads_patience_three_from_a_log_that_never_ran_out(tmp_path):
    dialogs()
    rows = lines_of("eval_2.jsonl")
    rows[0]["remaining_patience"] = 2
    rows[1]["remaining_patience"] = 1
    rows.append(
        {
            "turn": 3,
            "response": "{}",
            "remaining_patience": 3,
            "eval": {"overall_ok": True, "details": {"countableItems": True, "endwith": True, "format": True}},
        }
    )
    logs(write_jsonl(tmp_path / "eval_2.jsonl", rows), run="acme-p3")
    attempt = Attempt.objects.get(run__label="acme-p3")
    assert attempt.outcome["patience"] == 3 and attempt.outcome["ended_by"] == "script_end"
    assert Run.objects.get(label="acme-p3").settings["patience"] == 3


def test_it_refuses_logs_with_another_patience_in_the_same_run(tmp_path):
    dialogs()
    logs()
    rows = lines_of("eval_2.jsonl")
    rows[0]["remaining_patience"] = 2
    rows[1]["remaining_patience"] = 1
    rows.append(
        {
            "turn": 3,
            "response": "",
            "remaining_patience": 0,
            "eval": {"overall_ok": False, "details": {"countableItems": False}},
        }
    )
    path = write_jsonl(tmp_path / "eval_2.jsonl", rows)
    message = failure("evolif-eval", [path], model="acme-chat")
    assert f"{path.name}:1: this log was recorded with patience 3" in message


def test_it_marks_an_active_constraint_the_log_left_out_as_not_applicable(tmp_path):
    dialogs()
    rows = lines_of("eval_1.jsonl")
    del rows[1]["eval"]["details"]["format"]
    logs(write_jsonl(tmp_path / "eval_1.jsonl", rows))
    verdict = Verdict.objects.get(item__key="t2:format")
    assert verdict.result == "na" and "no result" in verdict.reasoning


def _bad_log(tmp_path, change):
    rows = lines_of("eval_1.jsonl")
    change(rows)
    return write_jsonl(tmp_path / "eval_1.jsonl", rows)


@pytest.mark.parametrize(
    "change, where, reason",
    [
        (
            lambda r: r[1]["eval"]["details"].update({"endwith": True}),
            ":2:",
            "constraint 'endwith' is not active at this turn of 'dialog_1'",
        ),
        (lambda r: r[3].update(turn=9), ":4:", "turn 9 is not in the script of 'dialog_1'"),
        (lambda r: r[2].pop("turn"), ":3:", "missing required field 'turn'"),
        (lambda r: r[2].update(turn=2), ":3:", "turn 2 where turn 3 was expected"),
        (lambda r: r[1].update(remaining_patience=2), ":2:", "does not fit patience 2"),
        (lambda r: r[0]["eval"].update(overall_ok=False), ":1:", "overall_ok is false"),
        (lambda r: r[1].update(remaining_patience=None), ":2:", "remaining_patience is null but other turns"),
        (lambda r: r[0]["eval"]["details"].update(format="yes"), ":1:", "should be true or false"),
    ],
    ids=[
        "inactive-constraint",
        "turn-not-in-script",
        "missing-turn",
        "repeated-turn",
        "patience-mismatch",
        "overall-ok-mismatch",
        "patience-on-some-lines-only",
        "non-boolean-detail",
    ],
)
def test_it_rejects_a_bad_log_and_stores_nothing(tmp_path, change, where, reason):
    dialogs()
    bad = _bad_log(tmp_path, change)
    message = failure("evolif-eval", [bad, FIXTURES / "eval_2.jsonl"], model="acme-chat")
    assert f"{bad.name}{where}" in message and reason in message
    assert message.startswith("1 problem(s)")  # one bad line is one problem, not a cascade
    assert Attempt.objects.count() == 0 and Verdict.objects.count() == 0 and Run.objects.count() == 0


@pytest.mark.parametrize(
    "mutate, where, reason",
    [
        (lambda text: text.replace("\n", "\n{oops\n", 1), ":2:", "not valid JSON"),
        (lambda text: text.replace("\n", '\n{"turn": 2, "resp\n', 1), ":2:", "not valid JSON"),
    ],
    ids=["non-json-line", "cut-off-line-not-last"],
)
def test_it_rejects_an_unreadable_log(tmp_path, mutate, where, reason):
    dialogs()
    bad = tmp_path / "eval_1.jsonl"
    bad.write_text(mutate((FIXTURES / "eval_1.jsonl").read_text()))
    message = failure("evolif-eval", [bad], model="acme-chat")
    assert f"{bad.name}{where}" in message and reason in message
    assert Attempt.objects.count() == 0 and Verdict.objects.count() == 0


def test_it_rejects_a_log_whose_dialog_was_never_ingested(tmp_path):
    dialogs()
    orphan = tmp_path / "eval_7.jsonl"
    shutil.copy(FIXTURES / "eval_1.jsonl", orphan)
    message = failure("evolif-eval", [FIXTURES / "eval_2.jsonl", orphan], model="acme-chat")
    assert f"{orphan.name}:1: dialog 'dialog_7' was never ingested" in message
    assert Verdict.objects.count() == 0


def test_it_finds_the_dialog_of_a_log_named_after_it(tmp_path):
    dialogs()
    named = tmp_path / "dialog_2.jsonl"
    shutil.copy(FIXTURES / "eval_2.jsonl", named)
    logs(named)
    assert Attempt.objects.get().instance.external_id == "dialog_2"


def test_it_rejects_an_empty_log_and_a_dialog_given_as_a_log(tmp_path):
    dialogs()
    empty = tmp_path / "eval_1.jsonl"
    empty.write_text("\n")
    message = failure("evolif-eval", [empty], model="acme-chat")
    assert f"{empty.name}: the file holds no records" in message
    message = failure("evolif-eval", [FIXTURES / "dialog_1.jsonl"], model="acme-chat")
    assert "dialog_1.jsonl:1: this looks like an EvolIF dialog script" in message
    assert Attempt.objects.count() == 0


#: a junk file as large as the one whose import, listed whole before any check, took 421 MB
JUNK_BYTES = 30_000_000
#: what reading such a file may cost at most (the checks stop at its first line, or after MAX_PROBLEMS_PER_FILE)
JUNK_PEAK_BYTES = 5_000_000


def _junk(path, head=""):
    line = json.dumps({"id": 1, "text": "lorem ipsum dolor sit amet " * 8, "tags": ["a", "b"]}) + "\n"
    path.write_text(head + line * (JUNK_BYTES // len(line)))
    return path


def _failure_and_peak(path) -> tuple[str, int]:
    tracemalloc.start()
    try:
        message = failure("evolif-eval", [path], model="acme-chat")
        return message, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_it_rejects_a_large_file_that_is_not_a_log_at_its_first_line_in_bounded_memory(tmp_path):
    dialogs()
    message, peak = _failure_and_peak(_junk(tmp_path / "eval_1.jsonl"))
    assert message.startswith("1 problem(s)")
    assert (
        "eval_1.jsonl:1: this is not an EvolIF evaluation log: its first record has no valid 'turn', 'eval', "
        "'remaining_patience'"
        in message
        and "the rest of the file was not read" in message
    )
    assert peak < JUNK_PEAK_BYTES
    assert Attempt.objects.count() == 0 and Run.objects.count() == 0


def test_it_stops_reading_a_log_whose_first_line_is_good_after_too_many_bad_ones_in_bounded_memory(tmp_path):
    dialogs()
    first = (FIXTURES / "eval_1.jsonl").read_text().splitlines(keepends=True)[0]
    message, peak = _failure_and_peak(_junk(tmp_path / "eval_1.jsonl", head=first))
    assert message.startswith(f"{MAX_PROBLEMS_PER_FILE + 1} problem(s)")
    assert "eval_1.jsonl:2: missing required field 'turn'" in message
    assert peak < JUNK_PEAK_BYTES
    assert Attempt.objects.count() == 0


def test_it_rejects_an_unfinished_last_line_that_eval_py_did_not_start(tmp_path):
    # only a line eval.py began writing ({"turn": ...) is skipped as a cut-off write; other text is junk
    dialogs()
    junk = tmp_path / "eval_1.jsonl"
    junk.write_text("x" * 100_000)
    message = failure("evolif-eval", [junk], model="acme-chat")
    assert "eval_1.jsonl:1: not valid JSON" in message
    assert Attempt.objects.count() == 0


# what EvolIF's eval.py leaves behind (tests/fixtures/evolif/harness: written by eval.py itself,
# see tests/runs/test_evolif_reference.py) ---------------------------------------------------
HARNESS = FIXTURES / "harness"


def harness(pass_name):
    dialogs(*sorted((HARNESS / "dialog").glob("dialog_*.jsonl")))
    return logs(*sorted((HARNESS / pass_name).glob("eval_*.jsonl")), model="fake-model")


def test_it_stores_a_stopped_log_and_an_empty_one_as_eval_py_left_them():
    report = harness("pass1")
    outcomes = {a.instance.external_id: a.outcome for a in Attempt.objects.select_related("instance")}
    assert {k: (o["ended_by"], o["ended_turn"]) for k, o in outcomes.items()} == {
        "dialog_1": ("patience", 6),
        "dialog_2": ("script_end", 4),
        "dialog_3": ("stopped", 3),
        "dialog_4": ("stopped", 0),
    }
    assert outcomes["dialog_3"]["turns"][-1]["remaining_patience"] == 1
    empty = Attempt.objects.get(instance__external_id="dialog_4")
    assert empty.assistant_turns == 0 and empty.response == "" and not empty.verdicts.exists()
    assert Run.objects.get(label="fake-model").settings == {"patience": 3}
    assert report.counts["attempts"]["created"] == 4


def test_it_takes_a_resumed_log_as_the_same_dialogue_continued():
    harness("pass1")
    first = {a.instance.external_id: a.id for a in Attempt.objects.select_related("instance")}
    report = harness("pass2")
    assert {a.instance.external_id: a.id for a in Attempt.objects.select_related("instance")} == first
    resumed = Attempt.objects.get(instance__external_id="dialog_3")
    assert (resumed.outcome["ended_by"], resumed.outcome["ended_turn"], resumed.assistant_turns) == ("script_end", 5, 5)
    assert resumed.response == "FAREWELL"
    assert report.counts["attempts"]["updated"] == 2 and report.counts["verdicts"]["created"] == 2 + 3


def test_it_keeps_the_llm_judges_scores_and_rationales():
    harness("pass2")
    judged = {
        (v.attempt.instance.external_id, v.item.key): (v.result, v.score, v.reasoning)
        for v in Verdict.objects.select_related("attempt__instance", "item")
    }
    assert judged[("dialog_2", "t2:emotion")] == ("fail", 4.0, "the fake judge read marker 4")
    assert judged[("dialog_2", "t4:reader_age")] == ("pass", 7.0, "the fake judge read marker 7")
    # eval.py logs [0.0, ""] when its judge call raises: the style checker never passes its base_url
    assert judged[("dialog_3", "t2:style")] == ("fail", 0.0, JUDGE_FAILED)
    assert judged[("dialog_3", "t1:case")] == ("pass", None, "")


def _cut(line: str) -> str:
    """A line as eval.py leaves it when killed while writing it: the first half, no newline."""
    return line[: len(line) // 2]


def test_it_skips_a_last_line_cut_off_mid_write_as_eval_py_does(tmp_path):
    lines = (HARNESS / "pass2" / "eval_3.jsonl").read_text().splitlines(keepends=True)
    cut = tmp_path / "eval_3.jsonl"
    cut.write_text("".join(lines[:4]) + _cut(lines[4]))
    dialogs(*sorted((HARNESS / "dialog").glob("dialog_*.jsonl")))
    report = logs(cut, model="fake-model")
    attempt = Attempt.objects.get()
    assert (attempt.outcome["ended_by"], attempt.outcome["ended_turn"]) == ("stopped", 4)
    assert report.counts["log lines with a cut-off write"] == {"skipped": 1}


def test_it_reads_a_turn_eval_py_played_again_after_a_cut_off_line(tmp_path):
    # killed while writing turn 3, resumed (turn 3 glued after the cut), killed while writing turn 4, resumed again:
    # eval.py could not read the glued line, so it played turn 3 once more
    lines = (HARNESS / "pass2" / "eval_3.jsonl").read_text().splitlines(keepends=True)
    again = json.loads(lines[2])
    again["response"] = "HOORAY AGAIN"
    replayed = json.dumps(again, ensure_ascii=False) + "\n"
    log = tmp_path / "eval_3.jsonl"
    log.write_text("".join(lines[:2]) + _cut(lines[2]) + lines[2] + _cut(lines[3]) + replayed + "".join(lines[3:]))
    dialogs(*sorted((HARNESS / "dialog").glob("dialog_*.jsonl")))
    report = logs(log, model="fake-model")
    attempt = Attempt.objects.get()
    assert [t["turn"] for t in attempt.outcome["turns"]] == [1, 2, 3, 4, 5] and attempt.outcome[
        "ended_by"
    ] == "script_end"
    assert report.counts["log lines with a cut-off write"] == {"read": 2}
    assert report.counts["log turns played again after a cut-off line"] == {"replaced": 1}
    messages = stored_threads(Trajectory.objects.get().attempt_id)[0]["messages"]
    assert [m["content"] for m in messages if m["turn"] == 3 and m["role"] == "assistant"] == ["HOORAY AGAIN"]


def test_a_log_that_is_only_a_cut_off_line_has_no_turn_yet(tmp_path):
    lines = (HARNESS / "pass2" / "eval_3.jsonl").read_text().splitlines(keepends=True)
    log = tmp_path / "eval_3.jsonl"
    log.write_text(_cut(lines[0]))
    dialogs(*sorted((HARNESS / "dialog").glob("dialog_*.jsonl")))
    logs(log, model="fake-model")
    attempt = Attempt.objects.get()
    assert (attempt.outcome["ended_by"], attempt.outcome["ended_turn"], attempt.assistant_turns) == ("stopped", 0, 0)


def test_it_reads_other_notes_in_sub_details_as_reasoning(tmp_path):
    dialogs()
    logs()
    assert (
        Verdict.objects.get(item__key="t2:countableItems", attempt__instance__external_id="dialog_1").reasoning
        == "found 2 bullets"
    )


def test_it_stores_a_log_without_patience(tmp_path):
    dialogs()
    rows = lines_of("eval_1.jsonl")
    for r in rows:
        r["remaining_patience"] = None
    logs(write_jsonl(tmp_path / "eval_1.jsonl", rows))
    attempt = Attempt.objects.get()
    assert attempt.outcome["patience"] is None and attempt.outcome["ended_by"] == "script_end"
    assert Run.objects.get().settings == {}


def test_it_needs_the_dialogs_before_the_logs():
    message = failure("evolif-eval", [FIXTURES / "eval_1.jsonl"], model="acme-chat")
    assert "benchmark 'evolif' does not exist" in message


# the released scripts -----------------------------------------------------------------
def test_it_ingests_both_released_dialog_scripts(shared_data):
    paths = sorted((shared_data / "evolif").glob("dialog_*.jsonl"))
    assert [p.name for p in paths] == ["dialog_1.jsonl", "dialog_2.jsonl"]
    turns = {p.stem: [json.loads(line) for line in p.read_text().splitlines() if line.strip()] for p in paths}
    expected_items = sum(len(t["instructions"]) for rows in turns.values() for t in rows)
    report = dialogs(*paths)
    assert report.counts["instances"]["created"] == 2
    assert ChecklistItem.objects.count() == report.counts["checklist items"]["created"] == expected_items
    for stem, rows in turns.items():
        instance = Instance.objects.get(external_id=stem)
        assert len(instance.spec["turns"]) == len(rows)
        assert instance.spec["style"] == rows[0]["style"]
        assert instance.items.filter(turn=len(rows)).count() == len(rows[-1]["instructions"])
    assert dialogs(*paths).total("created") == 0


def test_it_ingests_a_generated_log_for_a_released_script(shared_data, tmp_path):
    path = shared_data / "evolif" / "dialog_2.jsonl"
    script = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    dialogs(path)
    # a harness with patience 3: pass every third turn, so it never runs out, up to the script's end
    rows, patience = [], 3
    for t in script:
        ok = t["turn"] % 3 == 0
        patience = 3 if ok else patience - 1
        details = {i["id"]: ok for i in t["instructions"]}
        rows.append(
            {
                "turn": t["turn"],
                "response": f"reply {t['turn']}",
                "remaining_patience": patience,
                "eval": {"overall_ok": ok, "details": details, "sub_details": {}},
            }
        )
        if patience == 0:
            break
    logs(write_jsonl(tmp_path / "eval_2.jsonl", rows))
    attempt = Attempt.objects.get()
    assert attempt.outcome["ended_by"] == "script_end" and attempt.outcome["ended_turn"] == len(script)
    assert Verdict.objects.count() == sum(len(t["instructions"]) for t in script)
