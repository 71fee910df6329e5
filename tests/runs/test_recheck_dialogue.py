"""Re-checking stored EvolIF responses (runs.recheck, dialogue kind) under the checker judge, from the command, the service and the job."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from runs.jobs import job_create, job_enqueue, job_execute
from runs.models import (
    AgentModel,
    Attempt,
    Benchmark,
    ChecklistItem,
    GroupRollup,
    Instance,
    Job,
    JobState,
    Judge,
    JudgeKind,
    Run,
    Verdict,
)
from runs.recheck import EVOLIF_CHECKER as CHECKER_JUDGE
from runs.recheck import logged_judge_for, recheck_run
from runs.selectors.dialogue import agreement_rows, dialogues_select, disagreements
from runs.services import rollups_rebuild_for_attempts
from runs.trajectory_store import trajectory_save

pytestmark = pytest.mark.django_db

SCRIPT = [
    # turn, topic, [(id, args)]
    (1, 7, [("startwith", {"mode": "letter", "value": "z"})]),
    (2, 7, [("startwith", {"mode": "letter", "value": "z"}), ("reader_age", {"reader_age": "child"})]),
    (3, 9, [("forbidden", ["manager"])]),
]
RESPONSES = {1: "Zebras first.", 2: "Apples first.", 3: "Ask a manager."}
# the harness logged turn 2 startwith as pass (the checker says fail) and reader_age as fail
LOGGED = {(1, "startwith"): "pass", (2, "startwith"): "pass", (2, "reader_age"): "fail", (3, "forbidden"): "fail"}


def build_run(label="m1", model="model-one"):
    benchmark, _ = Benchmark.objects.get_or_create(slug="evolif", defaults={"name": "EvolIF", "kind": "dialogue"})
    instance, _ = Instance.objects.get_or_create(
        benchmark=benchmark,
        external_id="dialog_1",
        defaults={
            "spec": {
                "turns": [
                    {
                        "turn": t,
                        "active_topic": topic,
                        "user_query_verified": f"query {t}",
                        "instructions": [{"id": i, "args": a} for i, a in ins],
                    }
                    for t, topic, ins in SCRIPT
                ]
            },
            "content_hash": "x",
        },
    )
    items = {}
    for turn, topic, ins in SCRIPT:
        for cid, args in ins:
            item, _ = ChecklistItem.objects.get_or_create(
                instance=instance,
                key=f"t{turn}:{cid}",
                defaults={"turn": turn, "group": cid, "details": {"args": args, "topic": topic}, "content_hash": "x"},
            )
            items[(turn, cid)] = item
    run = Run.objects.create(
        benchmark=benchmark,
        model=AgentModel.objects.get_or_create(name=model)[0],
        label=label,
        settings={"patience": 3},
    )
    outcome = {
        "turns": [{"turn": t, "overall_ok": t == 1, "remaining_patience": 3 if t == 1 else 4 - t} for t in (1, 2, 3)],
        "ended_turn": 3,
        "patience": 3,
        "ended_by": "script_end",
    }
    attempt = Attempt.objects.create(run=run, instance=instance, response=RESPONSES[3], outcome=outcome)
    messages = []
    for t in (1, 2, 3):
        messages += [
            {"role": "user", "content": f"query {t}", "turn": t},
            {"role": "assistant", "content": RESPONSES[t], "turn": t},
        ]
    trajectory_save(attempt_id=attempt.id, threads=[{"meta": {"thread": "main"}, "tools": [], "messages": messages}])
    judge, _ = Judge.objects.get_or_create(name="evolif-log", defaults={"kind": JudgeKind.LOGGED})
    for key, result in LOGGED.items():
        Verdict.objects.create(attempt=attempt, item=items[key], judge=judge, result=result)
    rollups_rebuild_for_attempts([attempt.id])
    return run, attempt, items


def test_it_checks_deterministic_families_and_keeps_llm_verdicts():
    run, attempt, items = build_run()
    report = recheck_run(run=run)
    checker = Judge.objects.get(name=CHECKER_JUDGE)
    assert checker.kind == JudgeKind.CHECKER
    results = {(v.item.turn, v.item.group): v for v in Verdict.objects.filter(judge=checker).select_related("item")}
    assert {k: v.result for k, v in results.items()} == {
        (1, "startwith"): "pass",
        (2, "startwith"): "fail",
        (2, "reader_age"): "fail",
        (3, "forbidden"): "fail",
    }
    assert "first letter is 'A'" in results[(2, "startwith")].reasoning
    assert "kept from evolif-log" in results[(2, "reader_age")].reasoning
    assert (report.checked, report.kept, report.agree, report.disagree) == (3, 1, 2, 1)


def test_it_gives_the_same_rows_when_run_twice():
    run, attempt, _ = build_run()
    recheck_run(run=run)
    first = sorted(Verdict.objects.filter(judge__name=CHECKER_JUDGE).values_list("item_id", "result"))
    recheck_run(run=run)
    assert sorted(Verdict.objects.filter(judge__name=CHECKER_JUDGE).values_list("item_id", "result")) == first


def test_it_rebuilds_the_turn_rollups_of_the_checker_judge():
    run, attempt, _ = build_run()
    recheck_run(run=run)
    checker = Judge.objects.get(name=CHECKER_JUDGE)
    rows = dict(
        GroupRollup.objects.filter(attempt=attempt, judge=checker, dimension="turn").values_list("value", "n_passed")
    )
    assert rows == {"1": 1, "2": 0, "3": 0}
    dialogue = dialogues_select(benchmark=run.benchmark, judge=checker)[0]
    assert dialogue.successes == [True, False, False]


def test_it_counts_agreement_and_lists_disagreeing_turns():
    run, attempt, _ = build_run()
    recheck_run(run=run)
    logged, checker = Judge.objects.get(name="evolif-log"), Judge.objects.get(name=CHECKER_JUDGE)
    rows = {r.group: r for r in agreement_rows(run_ids=[run.id], logged=logged, checker=checker)}
    assert set(rows) == {"startwith", "forbidden"}  # reader_age is LLM-judged: no agreement row
    assert (rows["startwith"].pairs, rows["startwith"].agree, rows["startwith"].logged_pass_checker_fail) == (2, 1, 1)
    assert rows["forbidden"].percent == 100
    listed = disagreements(run_ids=[run.id], logged=logged, checker=checker)
    assert [(d["item__turn"], d["item__group"], d["result"], d["checker"]) for d in listed] == [
        (2, "startwith", "pass", "fail")
    ]


def test_it_rechecks_from_the_command_and_refuses_an_unknown_run(capsys):
    run, _, _ = build_run(label="cmd-run")
    call_command("recheck", benchmark="evolif", run=["cmd-run"])
    assert (
        "cmd-run: 3 constraint verdicts checked on 1 attempt(s), 1 LLM-judged kept from the log"
        in capsys.readouterr().out
    )
    with pytest.raises(CommandError, match="no run 'nope'"):
        call_command("recheck", benchmark="evolif", run=["nope"])


def test_it_runs_as_a_background_job():
    run, _, _ = build_run()
    job = job_create(kind="recheck", params={"run_ids": [run.id]})
    from django.db import transaction

    with transaction.atomic():
        job_enqueue(job)
    job.refresh_from_db()
    if job.state == JobState.QUEUED:  # the test transaction swallowed on_commit: run it directly
        job_execute(job.id)
        job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED, job.errors
    assert job.counts["checked"] == 3 and job.counts["disagree with log"] == 1
    assert Verdict.objects.filter(judge__name=CHECKER_JUDGE).count() == 4
    assert Job.objects.count() == 1
    # the job says what it wrote: 4 new verdicts (not "Nothing changed")
    assert (job.counts["created"], job.counts["updated"], job.counts["unchanged"]) == (4, 0, 0)
    assert job.counts["by_kind"] == {"verdicts": {"created": 4}}


def test_a_second_recheck_counts_its_verdicts_unchanged_and_a_changed_one_updated():
    run, _, _ = build_run()
    first = recheck_run(run=run)
    assert (first.created, first.updated, first.unchanged, first.removed) == (4, 0, 0, 0)
    verdict = Verdict.objects.filter(judge__name=CHECKER_JUDGE).order_by("id").first()
    Verdict.objects.filter(pk=verdict.pk).update(reasoning="edited by hand")

    again = recheck_run(run=run)

    assert (again.created, again.updated, again.unchanged, again.removed) == (0, 1, 3, 0)
    assert "verdicts 0 created, 1 changed, 3 unchanged, 0 removed" in again.summary()
    assert "agreement with evolif-log: 66.67% of 3" in again.summary()


def test_it_compares_with_the_harness_log_judge_when_a_run_has_several_logged_judges():
    run, attempt, items = build_run()
    earlier = Judge.objects.create(name="aaa-import", kind=JudgeKind.LOGGED)  # first by name, but not EvolIF's log
    Verdict.objects.create(attempt=attempt, item=items[(1, "startwith")], judge=earlier, result="fail")
    assert logged_judge_for(run).name == "evolif-log"
    assert recheck_run(run=run).logged_judge == "evolif-log"


def test_it_refuses_a_run_of_a_kind_without_checkers_and_an_unknown_job_kind():
    benchmark = Benchmark.objects.create(slug="octo", name="Octo", kind="checklist")
    run = Run.objects.create(benchmark=benchmark, model=AgentModel.objects.create(name="m"), label="octo-run")
    with pytest.raises(ValueError, match="no portal checkers"):
        recheck_run(run=run)
    with pytest.raises(CommandError, match="no portal checkers"):
        call_command("recheck", benchmark="octo", run=["octo-run"])
    with pytest.raises(ValueError, match="unknown job kind 'rescore-evolif'"):
        job_create(kind="rescore-evolif", params={"run_ids": [run.id]})
