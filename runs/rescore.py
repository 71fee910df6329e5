"""Re-checking stored EvolIF responses with the portal's own checkers (a write service).

For every evaluated turn of every attempt of a run, each constraint of the nine
deterministic families gets the verdict of `runs.checkers.evolif` under the checker
judge ("evolif-checker", kind CHECKER). Emotion, reader age and style are judged by an
LLM in EvolIF: their logged verdicts are copied to the checker judge unchanged, so the
checker judge's turns are complete and its metrics comparable with the log's. Running it
twice gives the same rows (the judge's verdicts on the run are replaced in one
transaction) and the turn rollups are rebuilt for the attempts it touched.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from .checkers.evolif import LLM_JUDGED, check_constraint
from .models import Attempt, ChecklistItem, Job, Judge, JudgeKind, Run, Verdict, VerdictResult
from .services import ProgressReporter, benchmarks_lock, job_register, rollups_rebuild_for_attempts, verdict_changes
from .trajectory_view import stored_threads_of

CHECKER_JUDGE = "evolif-checker"
BATCH = 200


@dataclass
class RescoreReport:
    """What a rescore wrote: verdicts checked by the portal, kept from the log, and turns without a response."""

    run: str
    judge: str
    logged_judge: str | None
    attempts: int = 0
    checked: int = 0
    kept: int = 0
    unjudged: int = 0
    agree: int = 0
    disagree: int = 0
    #: the checker judge's verdicts against what it had before: new, different, the same, gone
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "attempts": self.attempts, "checked": self.checked, "kept from log": self.kept,
            "no logged verdict": self.unjudged, "agree with log": self.agree, "disagree with log": self.disagree,
        }

    def summary(self) -> str:
        return (
            f"{self.run}: {self.checked} constraint verdicts checked on {self.attempts} dialogue(s), "
            f"{self.kept} LLM-judged kept from {self.logged_judge or 'no logged judge'}; "
            f"{self.disagree} disagree with the log; verdicts {self.created} created, {self.updated} changed, "
            f"{self.unchanged} unchanged, {self.removed} removed."
        )


def logged_judge_for(run: Run) -> Judge | None:
    """The judge whose verdicts the harness logged for this run (the first by name if several)."""
    ids = (
        Verdict.objects.filter(attempt__run=run, judge__kind=JudgeKind.LOGGED)
        .values_list("judge_id", flat=True).distinct().order_by()
    )
    return Judge.objects.filter(id__in=list(ids[:10])).order_by("name").first()


def rescore_evolif_run(*, run: Run, progress: Callable[[int, int], None] | None = None) -> RescoreReport:
    """Check every evaluated turn of `run` with the portal's EvolIF checkers and store the verdicts."""
    judge, _ = Judge.objects.get_or_create(name=CHECKER_JUDGE, defaults={"kind": JudgeKind.CHECKER})
    with transaction.atomic():
        # the benchmark's write lock first, as ingests do: a concurrent ingest or rescore of this
        # benchmark commits before this one reads the run's attempts and logged verdicts
        benchmarks_lock([run.benchmark_id])
        logged = logged_judge_for(run)
        report = RescoreReport(run=run.label, judge=judge.name, logged_judge=logged.name if logged else None)
        attempt_ids = list(Attempt.objects.filter(run=run).order_by("id").values_list("id", flat=True))
        for start in range(0, len(attempt_ids), BATCH):
            batch = attempt_ids[start:start + BATCH]
            before = {(a, i): (r, t) for a, i, r, t in Verdict.objects.filter(judge=judge, attempt_id__in=batch)
                      .values_list("attempt_id", "item_id", "result", "reasoning")}
            Verdict.objects.filter(judge=judge, attempt_id__in=batch).delete()
            verdicts = _verdicts_for(batch, judge, logged, report)
            Verdict.objects.bulk_create(verdicts, batch_size=2000)
            _count_changes(report, before, verdicts)
            report.attempts += len(batch)
            if progress:
                progress(report.attempts, len(attempt_ids))
        rollups_rebuild_for_attempts(attempt_ids, [judge.id])
    return report


def _count_changes(report: RescoreReport, before: dict[tuple[int, int], tuple[str, str]], verdicts: list[Verdict]) -> None:
    """Count the new verdicts against the judge's previous ones on the same attempts."""
    for verdict in verdicts:
        old = before.pop((verdict.attempt_id, verdict.item_id), None)
        if old is None:
            report.created += 1
        elif old == (verdict.result, verdict.reasoning):
            report.unchanged += 1
        else:
            report.updated += 1
    report.removed += len(before)


def _verdicts_for(attempt_ids: list[int], judge: Judge, logged: Judge | None, report: RescoreReport) -> list[Verdict]:
    attempts = list(Attempt.objects.filter(id__in=attempt_ids).only("id", "instance_id"))
    threads_of = stored_threads_of(attempt_ids)
    instance_ids = {a.instance_id for a in attempts}
    items: dict[int, dict[int, list[tuple[int, str, Any]]]] = {}
    for item_id, instance_id, turn, group, details in ChecklistItem.objects.filter(
        instance_id__in=instance_ids, turn__isnull=False
    ).values_list("id", "instance_id", "turn", "group", "details"):
        items.setdefault(instance_id, {}).setdefault(turn, []).append((item_id, group, (details or {}).get("args")))
    logged_rows: dict[tuple[int, int], tuple[str, str]] = {}
    if logged is not None:
        for attempt_id, item_id, result, reasoning in Verdict.objects.filter(
            judge=logged, attempt_id__in=attempt_ids
        ).values_list("attempt_id", "item_id", "result", "reasoning"):
            logged_rows[(attempt_id, item_id)] = (result, reasoning)
    out = []
    for attempt in attempts:
        for turn, response in _responses(threads_of.get(attempt.id, [])).items():
            for item_id, group, args in items.get(attempt.instance_id, {}).get(turn, []):
                before = logged_rows.get((attempt.id, item_id))
                verdict = check_constraint(group, args, response)
                if verdict is None or group in LLM_JUDGED:
                    if before is None:
                        report.unjudged += 1
                        continue
                    report.kept += 1
                    reasoning = f"kept from {logged.name}: '{group}' is not checked deterministically"
                    out.append(Verdict(attempt_id=attempt.id, item_id=item_id, judge=judge, result=before[0], reasoning=reasoning))
                    continue
                result = VerdictResult.PASS if verdict.passed else VerdictResult.FAIL
                report.checked += 1
                if before is not None and before[0] != VerdictResult.NOT_APPLICABLE:
                    if before[0] == result:
                        report.agree += 1
                    else:
                        report.disagree += 1
                out.append(Verdict(attempt_id=attempt.id, item_id=item_id, judge=judge, result=result, reasoning=verdict.reason))
    return out


def _responses(threads: list[dict]) -> dict[int, str]:
    """turn -> the assistant's response at that turn, from the stored trajectory's threads."""
    out: dict[int, str] = {}
    for thread in threads:
        for message in thread.get("messages", []):
            if message.get("role") == "assistant" and isinstance(message.get("turn"), int):
                content = message.get("content")
                out[message["turn"]] = content if isinstance(content, str) else ""
    return out


def job_rescore_evolif(job: Job) -> dict[str, Any]:
    """Background job: rescore the runs in job.params["run_ids"]."""
    runs = list(Run.objects.filter(id__in=job.params.get("run_ids", [])).order_by("label"))
    progress = ProgressReporter(job.id)
    totals: dict[str, int] = {}
    changes = {"created": 0, "updated": 0, "unchanged": 0, "removed": 0}
    summaries = []
    for run in runs:
        report = rescore_evolif_run(run=run, progress=progress)
        for key, value in report.as_dict().items():
            totals[key] = totals.get(key, 0) + value
        for key in changes:
            changes[key] += getattr(report, key)
        summaries.append(report.summary())
    return {"counts": {**totals, **verdict_changes(**changes)}, "message": " ".join(summaries) or "no run to rescore"}


job_register("rescore-evolif", "runs.rescore:job_rescore_evolif")
