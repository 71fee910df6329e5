"""Verdict spellings, scores as verdicts (letter grades, booleans, numbers against a pass threshold), and the
verdict upsert shared by every results format."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from django.db import connection

from runs.bulk import bulk_insert_rows
from runs.ingest.base import Context, overflows_float
from runs.models import Run, Verdict, VerdictResult
from runs.search import benchmarks_mark_searchable
from runs.search_index import reasoning_changed

_RESULTS = {
    "success": VerdictResult.PASS,
    "pass": VerdictResult.PASS,
    "passed": VerdictResult.PASS,
    "true": VerdictResult.PASS,
    "yes": VerdictResult.PASS,
    "1": VerdictResult.PASS,
    "fail": VerdictResult.FAIL,
    "failed": VerdictResult.FAIL,
    "failure": VerdictResult.FAIL,
    "false": VerdictResult.FAIL,
    "no": VerdictResult.FAIL,
    "0": VerdictResult.FAIL,
    "not_applicable": VerdictResult.NOT_APPLICABLE,
    "not applicable": VerdictResult.NOT_APPLICABLE,
    "n/a": VerdictResult.NOT_APPLICABLE,
    "na": VerdictResult.NOT_APPLICABLE,
    "skip": VerdictResult.NOT_APPLICABLE,
    "skipped": VerdictResult.NOT_APPLICABLE,
    "not_triggered": VerdictResult.NOT_APPLICABLE,
}


def parse_result(value: Any) -> str | None:
    """A verdict from the spellings harnesses use (success/fail/not_applicable, booleans); None if unknown."""
    if isinstance(value, bool):
        return VerdictResult.PASS if value else VerdictResult.FAIL
    if value is None:
        return None
    # the spelling as written first: harnesses write one of the keys, and this runs once per verdict
    return _RESULTS.get(value) if type(value) is str and value in _RESULTS else _RESULTS.get(str(value).strip().lower())


#: Inspect AI's letter grades as its value_to_float counts them (P and N included)
LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
LETTER_NAMES = {"C": "correct", "I": "incorrect", "P": "partially correct", "N": "no answer"}


@dataclass(frozen=True)
class ScoredVerdict:
    item: str
    result: str
    score: float | None
    reasoning: str


def score_verdict(item: str, value: Any, threshold: float | None, explanation: str) -> ScoredVerdict | str:
    """One score value as a verdict on `item`, or the reason it cannot be one.

    C pass, I fail, N (no answer) fail; P (partially correct, 0.5 as Inspect counts it) passes only when
    the pass threshold is at most 0.5; a boolean passes when true; a number is the verdict's score and
    passes when at least the threshold (which a number other than 0 and 1 needs; without one, 1 passes
    and 0 fails); NaN (unscored) is not applicable."""
    reasoning = explanation
    if isinstance(value, str) and value in LETTERS:
        score = LETTERS[value]
        if value in ("C", "I", "N"):
            result = VerdictResult.PASS if value == "C" else VerdictResult.FAIL
        else:
            result = VerdictResult.PASS if threshold is not None and score >= threshold else VerdictResult.FAIL
        if value in ("N", "P"):
            reasoning = f"{LETTER_NAMES[value]}. {explanation}".strip()
        return ScoredVerdict(item, result, score, reasoning)
    if isinstance(value, bool):
        return ScoredVerdict(item, VerdictResult.PASS if value else VerdictResult.FAIL, float(value), reasoning)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ScoredVerdict(item, VerdictResult.NOT_APPLICABLE, None, f"unscored. {explanation}".strip())
    if isinstance(value, (int, float)):
        if overflows_float(value) or not math.isfinite(value):
            return f"the value of '{item}' is {value}, not a number a verdict can hold"
        if threshold is None:
            if value in (0, 1):  # a 0/1 score (accuracy, exact match): 1 passes
                return ScoredVerdict(
                    item, VerdictResult.PASS if value == 1 else VerdictResult.FAIL, float(value), reasoning
                )
            return (
                f"the value of '{item}' is a number ({value}): choose the score that passes with --pass-threshold "
                "(the import form's Pass threshold field)"
            )
        return ScoredVerdict(
            item, VerdictResult.PASS if value >= threshold else VerdictResult.FAIL, float(value), reasoning
        )
    shown = json.dumps(value, ensure_ascii=False)[:60]
    return f"the value of '{item}' is {shown}: a score value should be C, I, P, N, a number or a boolean"


def verdicts_upsert(ctx: Context, rows: list[dict[str, Any]]) -> None:
    """Upsert verdicts keyed by (attempt, item, judge); attempts whose verdicts changed get their rollups rebuilt.

    Verdicts of (attempt, judge) pairs that have none stored yet (a first import of a judge's
    scores, the common case) are copied in without fetching and comparing what is stored.
    """
    changed: set[tuple] = set()
    for row in rows:
        row.setdefault("reasoning", "")
        row.setdefault("score", None)
        row.setdefault("evidence", None)
    attempts, judges = {row["attempt_id"] for row in rows}, {row["judge_id"] for row in rows}
    new = rows and (ctx.known_unjudged(attempts, judges) or _all_new(attempts, judges))
    ctx.judged_pairs.update((row["attempt_id"], row["judge_id"]) for row in rows)
    if new:
        by_key = {(row["attempt_id"], row["item_id"], row["judge_id"]): row for row in rows}
        ctx.check_lengths(Verdict, by_key, "verdicts")
        ctx.report.add("verdicts", "created", len(by_key))
        if not ctx.failed:
            bulk_insert_rows(Verdict, list(by_key.values()), behind=ctx.copy_behind)
            ctx.touched_attempts.update(attempts)
            ctx.touched_judges.update(judges)
            _reasoned(ctx, rows)
        return
    ctx.upsert(
        Verdict,
        rows,
        key=("attempt_id", "item_id", "judge_id"),
        compare=("result", "reasoning", "score", "evidence"),
        kind="verdicts",
        changed=changed,
        returning_ids=False,
    )
    ctx.touched_attempts.update(k[0] for k in changed if k[0] is not None)
    ctx.touched_judges.update(k[2] for k in changed if k[0] is not None)
    if not ctx.failed:
        _reasoned(ctx, rows)


def _reasoned(ctx: Context, rows: list[dict[str, Any]]) -> None:
    ctx.reasoned_attempts.update(
        row["attempt_id"] for row in rows if row["reasoning"] and row["attempt_id"] is not None
    )


#: attempt ids per query when finding the benchmarks of verdicts with reasoning
_REASONED_BATCH = 10_000


def reasoning_searchable(ctx: Context) -> None:
    """Mark the benchmarks of the attempts that got judge reasoning searchable, and list those attempts for the
    copy into the search's index that follows the commit (runs.search_index): once, at the end of the ingest's
    transaction, for every file's verdicts (a statement per batch of verdicts cost a second a million)."""
    reasoned = sorted(ctx.reasoned_attempts)
    reasoning_changed(reasoned)
    for start in range(0, len(reasoned), _REASONED_BATCH):
        benchmarks_mark_searchable(
            Run.objects.filter(attempts__id__in=reasoned[start : start + _REASONED_BATCH])
            .values_list("benchmark_id", flat=True)
            .distinct()
            .order_by()
        )


def _all_new(attempts: set[int | None], judges: set[int]) -> bool:
    """Whether no verdict is stored for any of these attempts and judges (all attempts known)."""
    if None in attempts:
        return False
    judges = sorted(judges)
    if connection.vendor != "postgresql":
        return not Verdict.objects.filter(attempt_id__in=attempts, judge_id__in=judges).exists()
    # driven by the attempts ("+ 0" keeps the planner off the judge index, whose entries for one judge
    # grow with the table; see runs.services._rollups_rebuild_sql). Ordered by the attempt, not EXISTS:
    # a first import fills the table in its own transaction, where the statistics still say it is empty,
    # and EXISTS then scans it all, expecting an early match, for every file (9.5 s of a 1M-verdict
    # import); a sequential scan cannot give the order, the attempt-leading index gives it at once
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {connection.ops.quote_name(Verdict._meta.db_table)} "
            f"WHERE attempt_id = ANY(%s) AND judge_id + 0 = ANY(%s) ORDER BY attempt_id LIMIT 1",
            [sorted(attempts), judges],
        )
        return cursor.fetchone() is None
