"""Re-checking stored ManyIH code with the portal's style checkers (a write service).

For every attempt of a run, the code is extracted from the response and every instruction
of the sample, active and suppressed, is checked by `runs.checkers.manyih_style` (source
text only; the code is never run). Verdicts go under the checker judge
"manyih-style-checker" (kind CHECKER): `score` is 1 when the code follows the instruction
and 0 when it does not, for every instruction; `result` is pass/fail for active
instructions and "na" for suppressed ones (following a suppressed instruction is no
success, and rollups then count only what the harness scores). `reasoning` is the
checker's reason. One transaction per run; rows that would not change are left alone, so
a second run writes nothing; rollups are rebuilt for the attempts whose verdicts changed.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from .checkers.manyih_style import STYLE_CHECKERS, Code, check_style, extract_code
from .metrics.hierarchy import CHECKER_JUDGE, LOGGED_JUDGE, UNCHECKED
from .models import Attempt, BenchmarkKind, ChecklistItem, Job, Judge, JudgeKind, Run, Verdict, VerdictResult
from .services import ProgressReporter, benchmarks_lock, job_register, rollups_rebuild_for_attempts, verdict_changes

BATCH = 200
_FIELDS = ("result", "score", "reasoning", "evidence")


@dataclass
class RestyleReport:
    """What a re-check wrote and how its verdicts compare with the logged ones on active instructions."""

    run: str
    judge: str = CHECKER_JUDGE
    logged_judge: str | None = None
    attempts: int = 0
    checked: int = 0
    created: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    unknown_style: int = 0
    agree: int = 0
    disagree: int = 0
    touched: set[int] = field(default_factory=set)

    def as_dict(self) -> dict[str, int]:
        return {
            "attempts": self.attempts, "instructions checked": self.checked, "verdicts created": self.created,
            "verdicts updated": self.updated, "verdicts deleted": self.deleted, "verdicts unchanged": self.unchanged,
            "unknown style": self.unknown_style, "agree with log": self.agree, "disagree with log": self.disagree,
        }

    def summary(self) -> str:
        pairs = self.agree + self.disagree
        share = f"{100.0 * self.agree / pairs:.2f}%" if pairs else "n/a"
        return (
            f"{self.run}: {self.checked} instructions checked on {self.attempts} attempt(s); "
            f"{self.created} created, {self.updated} updated, {self.deleted} deleted, {self.unchanged} unchanged; "
            f"agreement with {self.logged_judge or 'no logged judge'} on active instructions: {share} of {pairs}."
        )


def checker_judge() -> Judge:
    """The judge the re-check writes under (created on first use)."""
    judge, _ = Judge.objects.get_or_create(name=CHECKER_JUDGE, defaults={"kind": JudgeKind.CHECKER})
    return judge


def logged_judge_for(run: Run) -> Judge | None:
    """The judge whose verdicts the harness logged for this run: manyih-log if present, else the first logged one by name."""
    ids = list(Verdict.objects.filter(attempt__run=run, judge__kind=JudgeKind.LOGGED)
               .values_list("judge_id", flat=True).distinct().order_by()[:10])
    judges = list(Judge.objects.filter(id__in=ids).order_by("name"))
    return next((j for j in judges if j.name == LOGGED_JUDGE), judges[0] if judges else None)


def restyle_run(*, run: Run, progress: Callable[[int, int], None] | None = None) -> RestyleReport:
    """Check every instruction of every attempt of `run` with the style checkers and store the verdicts."""
    if run.benchmark.kind != BenchmarkKind.HIERARCHY:
        raise ValueError(f"run '{run.label}' is not a hierarchy run (benchmark kind {run.benchmark.kind})")
    judge = checker_judge()
    with transaction.atomic():
        # the benchmark's write lock first, as ingests do: a concurrent ingest or re-check of this
        # benchmark commits before this one reads the run's attempts and existing verdicts
        benchmarks_lock([run.benchmark_id])
        logged = logged_judge_for(run)
        report = RestyleReport(run=run.label, logged_judge=logged.name if logged else None)
        attempt_ids = list(Attempt.objects.filter(run=run).order_by("id").values_list("id", flat=True))
        for start in range(0, len(attempt_ids), BATCH):
            _restyle_batch(attempt_ids[start:start + BATCH], judge, logged, report)
            report.attempts += len(attempt_ids[start:start + BATCH])
            if progress:
                progress(report.attempts, len(attempt_ids))
        if report.touched:
            rollups_rebuild_for_attempts(report.touched, [judge.id])
    return report


def _restyle_batch(attempt_ids: list[int], judge: Judge, logged: Judge | None, report: RestyleReport) -> None:
    attempts = list(Attempt.objects.filter(id__in=attempt_ids).values_list("id", "instance_id", "response", "outcome__status"))
    items: dict[int, list[tuple[int, dict]]] = {}
    for item_id, instance_id, details in ChecklistItem.objects.filter(
        instance_id__in={a[1] for a in attempts}).values_list("id", "instance_id", "details").order_by("position"):
        items.setdefault(instance_id, []).append((item_id, details or {}))
    existing = {(v.attempt_id, v.item_id): v for v in Verdict.objects.filter(judge=judge, attempt_id__in=attempt_ids)}
    logged_results: dict[tuple[int, int], str] = {}
    if logged is not None:  # agreement leaves out samples the evaluator did not style-check, as the recheck page does
        style_checked = [a for a, _, _, status in attempts if status not in UNCHECKED]
        logged_results = {
            (a, i): r for a, i, r in Verdict.objects.filter(judge=logged, attempt_id__in=style_checked)
            .values_list("attempt_id", "item_id", "result")
        }
    create, update, wanted = [], [], set()
    for attempt_id, instance_id, response, _ in attempts:
        code = Code(extract_code(response or ""))
        for item_id, details in items.get(instance_id, []):
            row = _verdict_fields(code, details)
            if row is None:
                report.unknown_style += 1
                continue
            report.checked += 1
            wanted.add((attempt_id, item_id))
            before = logged_results.get((attempt_id, item_id))
            if before in (VerdictResult.PASS, VerdictResult.FAIL) and row["result"] != VerdictResult.NOT_APPLICABLE:
                if before == row["result"]:
                    report.agree += 1
                else:
                    report.disagree += 1
            old = existing.get((attempt_id, item_id))
            if old is None:
                create.append(Verdict(attempt_id=attempt_id, item_id=item_id, judge=judge, **row))
                report.touched.add(attempt_id)
            elif any(getattr(old, f) != row[f] for f in _FIELDS):
                for f in _FIELDS:
                    setattr(old, f, row[f])
                update.append(old)
                report.touched.add(attempt_id)
            else:
                report.unchanged += 1
    stale = [v.id for key, v in existing.items() if key not in wanted]
    if stale:
        Verdict.objects.filter(id__in=stale).delete()
        report.touched.update(key[0] for key in existing if key not in wanted)
    Verdict.objects.bulk_create(create, batch_size=2000)
    Verdict.objects.bulk_update(update, list(_FIELDS), batch_size=500)
    report.created += len(create)
    report.updated += len(update)
    report.deleted += len(stale)


def _verdict_fields(code: Code, details: dict) -> dict[str, Any] | None:
    """result, score, reasoning and evidence of one instruction, or None when no checker knows its style."""
    style_id = str(details.get("style_id") or "")
    if style_id not in STYLE_CHECKERS:
        return None
    try:
        verdict = check_style(code, style_id)
        satisfied, reason = verdict.passed, verdict.reason
    except Exception as exc:  # a checker bug on odd code must not stop the re-check; the reason says what broke
        satisfied, reason = False, f"checker error: {type(exc).__name__}: {exc}"
    active = bool(details.get("active", True))
    if active:
        result = VerdictResult.PASS if satisfied else VerdictResult.FAIL
    else:
        result = VerdictResult.NOT_APPLICABLE
    if not reason:
        reason = f"the code follows {style_id}" if satisfied else f"the code does not follow {style_id}"
    if not active:
        reason = f"suppressed instruction; {reason}"
    return {"result": result, "score": 1.0 if satisfied else 0.0, "reasoning": reason,
            "evidence": {"satisfied": satisfied, "active": active, "style_id": style_id}}


def job_restyle(job: Job) -> dict[str, Any]:
    """Background job: re-check the runs in job.params["run_ids"]."""
    runs = list(Run.objects.filter(id__in=job.params.get("run_ids", [])).select_related("benchmark").order_by("label"))
    progress = ProgressReporter(job.id)
    totals: dict[str, int] = {}
    summaries = []
    for run in runs:
        report = restyle_run(run=run, progress=progress)
        for key, value in report.as_dict().items():
            totals[key] = totals.get(key, 0) + value
        summaries.append(report.summary())
    changes = verdict_changes(created=totals.get("verdicts created", 0), updated=totals.get("verdicts updated", 0),
                              unchanged=totals.get("verdicts unchanged", 0), removed=totals.get("verdicts deleted", 0))
    return {"counts": {**totals, **changes}, "message": " ".join(summaries) or "no run to re-check"}


job_register("restyle-manyih", "runs.restyle:job_restyle")
