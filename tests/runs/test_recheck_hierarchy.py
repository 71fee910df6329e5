"""Style re-check of ManyIH runs (runs.recheck, hierarchy kind): checker verdicts on every instruction, idempotent, agreement with the log."""

from pathlib import Path

import pytest
from django.core.management import call_command

from runs.ingest import Options, Source, ingest
from runs.jobs import job_create, job_execute
from runs.metrics.hierarchy import CHECKER_JUDGE
from runs.models import AttemptRollup, ChecklistItem, JobState, Judge, JudgeKind, Run, Verdict
from runs.recheck import recheck_run

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "manyih"


@pytest.fixture
def run():
    ingest("manyih-data", [Source.of(FIXTURES / "coding_small.json")], Options())
    ingest("manyih-results", [Source.of(FIXTURES / "results_small.json")], Options(model="acme/coder-1"))
    return Run.objects.get()


def checker_verdicts():
    return {
        (v.attempt.instance.external_id, v.item.key): (v.result, v.score)
        for v in Verdict.objects.filter(judge__name=CHECKER_JUDGE).select_related("attempt__instance", "item")
    }


def test_it_checks_every_instruction_active_and_suppressed(run):
    report = recheck_run(run=run)
    assert report.checked == ChecklistItem.objects.count() == 11
    assert Judge.objects.get(name=CHECKER_JUDGE).kind == JudgeKind.CHECKER
    got = checker_verdicts()
    # sample 0: double quotes (active) followed, single quotes (suppressed) not; no licence notice (active)
    assert got[("0", "2")] == ("pass", 1.0)
    assert got[("0", "1")] == ("na", 0.0)
    assert got[("0", "4")] == ("pass", 1.0)
    assert got[("0", "3")] == ("na", 0.0)
    # sample 1: two-space indentation; tabs (suppressed) not followed
    assert got[("1", "1")] == ("pass", 1.0)
    assert got[("1", "2")] == ("na", 0.0)
    reason = Verdict.objects.get(judge__name=CHECKER_JUDGE, item__key="2", attempt__instance__external_id="1").reasoning
    assert reason.startswith("suppressed instruction;")


def test_it_reports_agreement_with_the_logged_verdicts_on_active_instructions(run):
    report = recheck_run(run=run)
    # sample 0: 3 active, log and checker pass; sample 1: log fails both indent instructions the code
    # follows (2 disagree), naming agrees; sample 2 has no response (an evaluator error): its logged fail
    # judges no style, so it is left out (the checker still passes doc_none on the empty code)
    assert (report.agree, report.disagree) == (4, 2)
    assert report.logged_judge == "manyih-log"


def test_it_changes_nothing_when_run_twice(run):
    first = recheck_run(run=run)
    before = {v.id: (v.result, v.score, v.reasoning, v.evidence) for v in Verdict.objects.all()}
    rollups = sorted(AttemptRollup.objects.values_list("id", "n_applicable", "n_passed"))
    second = recheck_run(run=run)
    assert first.created == 11 and second.created == second.updated == second.removed == 0
    assert second.unchanged == 11 and not second.touched
    assert {v.id: (v.result, v.score, v.reasoning, v.evidence) for v in Verdict.objects.all()} == before
    assert sorted(AttemptRollup.objects.values_list("id", "n_applicable", "n_passed")) == rollups


def test_it_rebuilds_rollups_counting_only_active_instructions(run):
    recheck_run(run=run)
    rollup = AttemptRollup.objects.get(judge__name=CHECKER_JUDGE, attempt__instance__external_id="0")
    assert (rollup.n_items, rollup.n_applicable, rollup.n_passed) == (5, 3, 3)


def test_it_repairs_a_changed_verdict_on_the_next_run(run):
    recheck_run(run=run)
    verdict = Verdict.objects.get(judge__name=CHECKER_JUDGE, item__key="2", attempt__instance__external_id="0")
    Verdict.objects.filter(pk=verdict.pk).update(result="fail", score=0.0)
    report = recheck_run(run=run)
    assert report.updated == 1 and report.touched == {verdict.attempt_id}
    verdict.refresh_from_db()
    assert (verdict.result, verdict.score) == ("pass", 1.0)


def test_it_runs_as_a_job_and_from_the_command(run, capsys):
    job = job_create(kind="recheck", params={"run_ids": [run.id]})
    job_execute(job.id)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and job.counts["checked"] == 11 and job.counts["disagree with log"] == 2
    # in the shape the job page reads: created verdicts, not "Nothing changed"
    assert (job.counts["created"], job.counts["updated"], job.counts["unchanged"]) == (11, 0, 0)
    again = job_create(kind="recheck", params={"run_ids": [run.id]})
    job_execute(again.id)
    again.refresh_from_db()
    assert (again.counts["created"], again.counts["updated"], again.counts["unchanged"]) == (0, 0, 11)
    call_command("recheck", "--benchmark", run.benchmark.slug, "--run", run.label)
    assert "verdicts 0 created, 0 changed, 11 unchanged, 0 removed" in capsys.readouterr().out


def test_it_refuses_an_unknown_run(run):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("recheck", "--benchmark", run.benchmark.slug, "--run", "nope")
