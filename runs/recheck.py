"""Re-checking stored responses with the portal's own checkers (a write service), for every kind that has them.

`recheck_run(run=...)` dispatches on the benchmark's kind (`CHECKERS`):

- dialogue (EvolIF): for every evaluated turn of every attempt, each constraint of the nine
  deterministic families gets the verdict of `runs.checkers.evolif`. Emotion, reader age and style
  are judged by an LLM in EvolIF: their logged verdicts are copied unchanged, so the checker
  judge's turns are complete and its metrics comparable with the log's.
- hierarchy (ManyIH): the code is extracted from the response and every instruction of the
  sample, active and suppressed, is checked by `runs.checkers.manyih_style` (source text only;
  the code is never run). `score` is 1 when the code follows the instruction and 0 when it does
  not; `result` is pass/fail for active instructions and "na" for suppressed ones (following a
  suppressed instruction is no success, and rollups then count only what the harness scores).

Either way the verdicts go under the kind's checker judge (kind CHECKER), in one transaction per
run under the benchmark's write lock; rows that would not change are left alone (a second run
writes nothing), rows no longer produced are deleted, and the rollups of the attempts whose
verdicts changed are rebuilt. The report counts what changed and how the checker agrees with the
logged judge (`logged_judge_for`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Q

from runs.checkers.evolif import LLM_JUDGED, check_constraint
from runs.checkers.manyih_style import STYLE_CHECKERS, Code, check_style, extract_code
from runs.ingest.evolif import DEFAULT_JUDGE as EVOLIF_LOG
from runs.metrics.hierarchy import CHECKER_JUDGE as MANYIH_CHECKER
from runs.metrics.hierarchy import LOGGED_JUDGE as MANYIH_LOG
from runs.metrics.hierarchy import UNCHECKED
from runs.models import Attempt, BenchmarkKind, ChecklistItem, Judge, JudgeKind, Run, Verdict, VerdictResult
from runs.rounding import shown_number
from runs.search_index import reasoning_changed
from runs.services import benchmarks_lock, rollups_rebuild_for_attempts
from runs.trajectory_view import stored_threads_of

EVOLIF_CHECKER = "evolif-checker"
BATCH = 200
#: the constraints a dialogue re-check judges: those active at a turn
DIALOGUE_ITEMS = Q(turn__isnull=False)
#: the verdict fields a re-check writes (and compares with what its judge already has)
FIELDS = ("result", "score", "reasoning", "evidence")

#: (attempt id, item id) -> the verdict's FIELDS
Rows = dict[tuple[int, int], dict[str, Any]]


@dataclass
class RecheckReport:
    """What a re-check of one run wrote, and how its verdicts compare with the logged ones."""

    run: str
    judge: str
    logged_judge: str | None
    #: what was checked, in words ("constraint verdicts", "instructions")
    noun: str
    attempts: int = 0
    checked: int = 0
    #: LLM-judged constraints whose logged verdict was copied (dialogue)
    kept: int = 0
    #: LLM-judged constraints without a logged verdict to copy (dialogue)
    unjudged: int = 0
    #: instructions no checker knows (hierarchy)
    unknown_style: int = 0
    agree: int = 0
    disagree: int = 0
    #: the checker judge's verdicts against what it had before: new, different, the same, gone
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    #: attempts whose checker verdicts changed (their rollups are rebuilt)
    touched: set[int] = field(default_factory=set)

    def as_dict(self) -> dict[str, int]:
        """The counts a re-check job shows (its verdict changes are added as `runs.jobs.verdict_changes`)."""
        return {
            "attempts": self.attempts,
            "checked": self.checked,
            "kept from log": self.kept,
            "no logged verdict": self.unjudged,
            "unknown style": self.unknown_style,
            "agree with log": self.agree,
            "disagree with log": self.disagree,
        }

    def summary(self) -> str:
        pairs = self.agree + self.disagree
        share = f"{shown_number(100.0 * self.agree / pairs, 2)}%" if pairs else "n/a"
        kept = f", {self.kept} LLM-judged kept from the log" if self.kept else ""
        return (
            f"{self.run}: {self.checked} {self.noun} checked on {self.attempts} attempt(s){kept}; "
            f"verdicts {self.created} created, {self.updated} changed, {self.unchanged} unchanged, {self.removed} removed; "
            f"agreement with {self.logged_judge or 'no logged judge'}: {share} of {pairs}."
        )


@dataclass(frozen=True)
class Checker:
    """How the portal re-checks one kind of benchmark: its judge, the harness's own judge, the verdicts."""

    judge: str
    #: the judge a harness of this kind logs under, preferred when a run has several logged judges
    log_judge: str
    noun: str
    #: the checklist items a re-check may give a verdict (each attempt's instance's items matching it)
    items: Q
    #: (attempt ids, logged judge, report) -> the checker's verdicts on those attempts; counts what it checked
    verdicts: Callable[[list[int], Judge | None, RecheckReport], Rows]


def logged_judge_for(run: Run) -> Judge | None:
    """The judge whose verdicts the harness logged for this run: the kind's own log judge if present,
    else the first logged judge by name."""
    ids = list(
        Verdict.objects.filter(attempt__run=run, judge__kind=JudgeKind.LOGGED)
        .values_list("judge_id", flat=True)
        .distinct()
        .order_by()[:10]
    )
    judges = list(Judge.objects.filter(id__in=ids).order_by("name"))
    checker = CHECKERS.get(run.benchmark.kind)
    preferred = checker.log_judge if checker else None
    return next((j for j in judges if j.name == preferred), judges[0] if judges else None)


def checker_judge(kind: str) -> Judge:
    """The judge a re-check of this kind writes under (created on first use)."""
    judge, _ = Judge.objects.get_or_create(name=CHECKERS[kind].judge, defaults={"kind": JudgeKind.CHECKER})
    return judge


def recheck_run(*, run: Run, progress: Callable[[int, int], None] | None = None) -> RecheckReport:
    """Check every attempt of `run` with the portal's checkers of its benchmark's kind and store the verdicts."""
    checker = CHECKERS.get(run.benchmark.kind)
    if checker is None:
        raise ValueError(
            f"run '{run.label}' has no portal checkers (benchmark kind {run.benchmark.kind}); "
            f"re-checks exist for: {', '.join(CHECKERS)}"
        )
    judge = checker_judge(run.benchmark.kind)
    with transaction.atomic():
        # the benchmark's write lock first, as ingests do: a concurrent ingest or re-check of this
        # benchmark commits before this one reads the run's attempts and existing verdicts
        benchmarks_lock([run.benchmark_id])
        logged = logged_judge_for(run)
        report = RecheckReport(
            run=run.label, judge=judge.name, logged_judge=logged.name if logged else None, noun=checker.noun
        )
        attempt_ids = list(Attempt.objects.filter(run=run).order_by("id").values_list("id", flat=True))
        for start in range(0, len(attempt_ids), BATCH):
            batch = attempt_ids[start : start + BATCH]
            _store(batch, judge, checker.verdicts(batch, logged, report), report)
            report.attempts += len(batch)
            if progress:
                progress(report.attempts, len(attempt_ids))
        if report.touched:
            rollups_rebuild_for_attempts(report.touched, [judge.id])
    return report


def _store(attempt_ids: list[int], judge: Judge, wanted: Rows, report: RecheckReport) -> None:
    """Make the judge's verdicts on these attempts `wanted`: create, update and delete only what differs."""
    existing = {(v.attempt_id, v.item_id): v for v in Verdict.objects.filter(judge=judge, attempt_id__in=attempt_ids)}
    create, update = [], []
    for (attempt_id, item_id), row in wanted.items():
        old = existing.get((attempt_id, item_id))
        if old is None:
            create.append(Verdict(attempt_id=attempt_id, item_id=item_id, judge=judge, **row))
            report.touched.add(attempt_id)
        elif any(getattr(old, f) != row[f] for f in FIELDS):
            for f in FIELDS:
                setattr(old, f, row[f])
            update.append(old)
            report.touched.add(attempt_id)
        else:
            report.unchanged += 1
    stale = {key: v.id for key, v in existing.items() if key not in wanted}
    if stale:
        Verdict.objects.filter(id__in=list(stale.values())).delete()
        report.touched.update(attempt_id for attempt_id, _ in stale)
    Verdict.objects.bulk_create(create, batch_size=2000)
    Verdict.objects.bulk_update(update, list(FIELDS), batch_size=500)
    reasoning_changed(v.attempt_id for v in create if v.reasoning)  # updates: the verdict table's trigger
    report.created += len(create)
    report.updated += len(update)
    report.removed += len(stale)


# dialogue (EvolIF) --------------------------------------------------------------------
def _dialogue_verdicts(attempt_ids: list[int], logged: Judge | None, report: RecheckReport) -> Rows:
    attempts = list(Attempt.objects.filter(id__in=attempt_ids).only("id", "instance_id"))
    threads_of = stored_threads_of(attempt_ids)
    items: dict[int, dict[int, list[tuple[int, str, Any]]]] = {}
    for item_id, instance_id, turn, group, details in ChecklistItem.objects.filter(
        DIALOGUE_ITEMS, instance_id__in={a.instance_id for a in attempts}
    ).values_list("id", "instance_id", "turn", "group", "details"):
        items.setdefault(instance_id, {}).setdefault(turn, []).append((item_id, group, (details or {}).get("args")))
    logged_results: dict[tuple[int, int], str] = {}
    if logged is not None:
        logged_results = {
            (a, i): r
            for a, i, r in Verdict.objects.filter(judge=logged, attempt_id__in=attempt_ids).values_list(
                "attempt_id", "item_id", "result"
            )
        }
    out: Rows = {}
    for attempt in attempts:
        for turn, response in _responses(threads_of.get(attempt.id, [])).items():
            for item_id, group, args in items.get(attempt.instance_id, {}).get(turn, []):
                before = logged_results.get((attempt.id, item_id))
                verdict = check_constraint(group, args, response)
                if verdict is None or group in LLM_JUDGED:
                    if before is None:
                        report.unjudged += 1
                        continue
                    report.kept += 1
                    out[(attempt.id, item_id)] = {
                        "result": before,
                        "score": None,
                        "evidence": None,
                        "reasoning": f"kept from {logged.name}: '{group}' is not checked deterministically",
                    }
                    continue
                result = VerdictResult.PASS if verdict.passed else VerdictResult.FAIL
                report.checked += 1
                if before is not None and before != VerdictResult.NOT_APPLICABLE:
                    if before == result:
                        report.agree += 1
                    else:
                        report.disagree += 1
                out[(attempt.id, item_id)] = {
                    "result": result,
                    "score": None,
                    "evidence": None,
                    "reasoning": verdict.reason,
                }
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


# hierarchy (ManyIH) -------------------------------------------------------------------
def _hierarchy_verdicts(attempt_ids: list[int], logged: Judge | None, report: RecheckReport) -> Rows:
    attempts = list(
        Attempt.objects.filter(id__in=attempt_ids).values_list("id", "instance_id", "response", "outcome__status")
    )
    items: dict[int, list[tuple[int, dict]]] = {}
    for item_id, instance_id, details in (
        ChecklistItem.objects.filter(instance_id__in={a[1] for a in attempts})
        .values_list("id", "instance_id", "details")
        .order_by("position")
    ):
        items.setdefault(instance_id, []).append((item_id, details or {}))
    logged_results: dict[tuple[int, int], str] = {}
    if logged is not None:  # agreement leaves out samples the evaluator did not style-check, as the re-check page does
        style_checked = [a for a, _, _, status in attempts if status not in UNCHECKED]
        logged_results = {
            (a, i): r
            for a, i, r in Verdict.objects.filter(judge=logged, attempt_id__in=style_checked).values_list(
                "attempt_id", "item_id", "result"
            )
        }
    out: Rows = {}
    for attempt_id, instance_id, response, _ in attempts:
        code = Code(extract_code(response or ""))
        for item_id, details in items.get(instance_id, []):
            row = _style_verdict(code, details)
            if row is None:
                report.unknown_style += 1
                continue
            report.checked += 1
            before = logged_results.get((attempt_id, item_id))
            if before in (VerdictResult.PASS, VerdictResult.FAIL) and row["result"] != VerdictResult.NOT_APPLICABLE:
                if before == row["result"]:
                    report.agree += 1
                else:
                    report.disagree += 1
            out[(attempt_id, item_id)] = row
    return out


def _style_verdict(code: Code, details: dict) -> dict[str, Any] | None:
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
    return {
        "result": result,
        "score": 1.0 if satisfied else 0.0,
        "reasoning": reason,
        "evidence": {"satisfied": satisfied, "active": active, "style_id": style_id},
    }


#: benchmark kind -> how its runs are re-checked (the kinds without an entry have no portal checkers)
CHECKERS: dict[str, Checker] = {
    BenchmarkKind.DIALOGUE: Checker(
        judge=EVOLIF_CHECKER,
        log_judge=EVOLIF_LOG,
        noun="constraint verdicts",
        items=DIALOGUE_ITEMS,
        verdicts=_dialogue_verdicts,
    ),
    BenchmarkKind.HIERARCHY: Checker(
        judge=MANYIH_CHECKER,
        log_judge=MANYIH_LOG,
        noun="instructions",
        items=Q(details__style_id__in=list(STYLE_CHECKERS)),
        verdicts=_hierarchy_verdicts,
    ),
}

#: benchmark kind -> the route name of the page that shows its re-check (the agreement of the log with the checker);
#: the route that starts a re-check is that name with "-start"
RECHECK_PAGES: dict[str, str] = {
    BenchmarkKind.DIALOGUE: "runs:dialogue-rescore",
    BenchmarkKind.HIERARCHY: "runs:hierarchy-recheck",
}
