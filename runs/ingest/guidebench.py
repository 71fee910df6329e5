"""GuideBench: category task lists (`<category>_tasks.json`) and the same lists with predictions.

A task is identified by its content: external id f"{category}-{h}", h the first 12 hex of
the SHA-256 of the task without its prediction fields, so a predictions file finds its
tasks whatever order or formatting it has. Scoring is `runs.scoring.choice` (the reference scorer).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

from runs.ingest.base import Context, Source, content_hash, iter_json_document, require
from runs.ingest.lookups import (
    attempts_upsert,
    benchmark_existing,
    benchmark_get_or_create,
    judge_of_ingest,
    run_get_or_create,
)
from runs.ingest.options import model_missing, option_name, run_missing
from runs.ingest.verdicts import verdicts_upsert
from runs.models import BenchmarkKind, ChecklistItem, Instance, JudgeKind, Run
from runs.scoring.choice import (
    ANSWER,
    OPTION,
    PREDICTION_FIELDS,
    choice_answer_field,
    choice_answer_normalised,
    choice_kind,
    choice_missing_default,
    choice_task_scored,
)

DEFAULT_SLUG = "guidebench"
DEFAULT_JUDGE = "exact-match"
ITEM_KEY = "answer"
CHECK_TYPE = "exact-match"
BATCH = 200
_TASK_FIELDS = {"Instruction": str, "Guidelines": list, "Context": str, "Groundtruth": dict}


def category_from_name(name: str) -> str:
    """The category a file holds: its name before "_tasks" (else before the first "_"), as written."""
    stem = PurePath(name).name
    if stem.lower().endswith(".json"):
        stem = stem[: -len(".json")]
    if "_tasks" in stem:
        return stem[: stem.rindex("_tasks")].strip()
    return stem.split("_", 1)[0].strip()


def task_identity(task: dict[str, Any]) -> dict[str, Any]:
    """The task without the fields a predictions file adds."""
    return {k: v for k, v in task.items() if k not in PREDICTION_FIELDS}


def task_external_id(category: str, task: dict[str, Any], occurrence: int = 1) -> str:
    """f"{category}-{h}"; the n-th identical copy of a task in one file gets "~n" appended."""
    base = f"{category}-{content_hash(task_identity(task))[:12]}"
    return base if occurrence == 1 else f"{base}~{occurrence}"


#: generate_resp.py opens its output in append mode: a second run adds a second list to the same file
_APPENDED = (
    "is this a JSONL file? GuideBench's generate_resp.py appends its list to an existing file on every run, "
    "and its evaluate.py cannot read such a file either: keep one run's list per file"
)


class _FileTasks:
    """Reads one category file as a list of tasks, reporting anything that is not one."""

    def __init__(self, ctx: Context, source: Source):
        self.ctx = ctx
        self.source = source
        self.category = category_from_name(source.name)
        self.occurrences: dict[str, int] = {}

    def __iter__(self):
        ctx, source = self.ctx, self.source
        if not self.category:
            ctx.problem(source, None, "the file name names no category: name it <category>_tasks.json")
            return
        found = 0
        for key, line, value in iter_json_document(source, ctx, extra_hint=_APPENDED, keep=True):
            found += 1
            if key is not None:
                ctx.problem(source, line, f"expected a JSON list of tasks, found an object{_looks_like({key: value})}")
                return
            if not isinstance(value, dict):
                ctx.problem(source, line, "a task should be a JSON object")
                continue
            if not self._valid(line, value):
                continue
            identity = content_hash(task_identity(value))[:12]
            n = self.occurrences[identity] = self.occurrences.get(identity, 0) + 1
            yield line, value, task_external_id(self.category, value, n)
        if not found and not ctx.failed:
            ctx.problem(source, None, "the file holds no tasks (an empty list)")

    def _valid(self, line: int, task: dict) -> bool:
        ctx, source = self.ctx, self.source
        hint = _looks_like(task)
        if hint:
            ctx.problem(source, line, f"not a GuideBench task{hint}")
            return False
        if not require(ctx, source, line, task, _TASK_FIELDS):
            return False
        kind = choice_kind(self.category, task["Groundtruth"])
        _, gt_key = choice_answer_field(kind)
        if task["Groundtruth"].get(gt_key) is None:
            label = "multiple-choice" if kind == OPTION else "answer"
            ctx.problem(
                source, line, f"missing required field 'Groundtruth.{gt_key}' ({self.category} is an {label} category)"
            )
            return False
        if kind == OPTION and not isinstance(task["Groundtruth"][gt_key], str):
            ctx.problem(source, line, f"field 'Groundtruth.{gt_key}' should be str (an option letter)")
            return False
        return True


def _looks_like(record: dict) -> str:
    """A hint naming the format a record belongs to, when it is clearly another one."""
    if "checklist" in record or "instance_id" in record:
        return " (this looks like OctoBench: use octobench-instances or octobench-scores)"
    if "results" in record or "eval_result" in record:
        return " (this looks like a scores or results file)"
    if "data" in record or "config" in record:
        return " (this looks like a ManyIH dataset: use manyih-data)"
    if "messages" in record or "request_body" in record:
        return " (this looks like a trajectory: use octobench-trajectories)"
    if "turn" in record and ("instructions" in record or "eval" in record):
        return " (this looks like EvolIF: use evolif-dialogs or evolif-eval)"
    if "type" in record and "Instruction" not in record:
        return " (this looks like the native format: use native)"
    return ""


# tasks --------------------------------------------------------------------------------
def ingest_tasks(sources: Sequence[Source], ctx: Context) -> None:
    """Category task lists: one Instance per task with one "answer" item (exact match)."""
    benchmark = benchmark_get_or_create(ctx, default_slug=DEFAULT_SLUG, kind=BenchmarkKind.CHOICE, name="GuideBench")
    if not _is_choice(ctx, benchmark, sources):
        return
    seen: dict[str, str] = {}
    in_files: dict[str, set[str]] = {}
    for source in sources:
        tasks = _FileTasks(ctx, source)
        batch: list[tuple[str, dict]] = []
        for line, task, external_id in tasks:
            if external_id in seen:
                ctx.problem(source, line, f"task '{external_id}' is already in {seen[external_id]}")
                continue
            seen[external_id] = f"{source.name}:{line}"
            in_files.setdefault(tasks.category, set()).add(external_id)
            batch.append((external_id, task))
            if len(batch) >= BATCH or ctx.batch_full:
                _write_tasks(ctx, benchmark, tasks.category, batch)
                batch = []
        _write_tasks(ctx, benchmark, tasks.category, batch)
    for category, in_file in in_files.items():
        _report_kept(ctx, benchmark, category, in_file)


def _is_choice(ctx: Context, benchmark, sources: Sequence[Source]) -> bool:
    if benchmark.kind != BenchmarkKind.CHOICE:
        ctx.problem(
            sources[0] if sources else option_name(ctx.options, "benchmark"),
            None,
            f"benchmark '{benchmark.slug}' is a {benchmark.kind} benchmark, not a choice benchmark",
        )
        return False
    return True


def _write_tasks(ctx: Context, benchmark, category: str, batch: list[tuple[str, dict]]) -> None:
    ctx.release()
    if not batch:
        return
    rows = []
    for external_id, task in batch:
        spec = task_identity(task)
        rows.append(
            {
                "benchmark_id": benchmark.id,
                "external_id": external_id,
                "primary_category": category,
                "scaffold": ctx.options.scaffold or "",
                "scaffold_version": "",
                "spec": spec,
                "content_hash": content_hash(spec),
            }
        )
    ids = ctx.upsert(
        Instance,
        rows,
        key=("benchmark_id", "external_id"),
        compare=("content_hash", "primary_category", "scaffold"),
        kind="instances",
    )
    items = []
    for external_id, task in batch:
        kind = choice_kind(category, task["Groundtruth"])
        _, gt_key = choice_answer_field(kind)
        truth = task["Groundtruth"][gt_key]
        default = choice_missing_default(category, kind)
        details = {"kind": kind, "ground_truth": truth, "missing_counts_as": default}
        items.append(
            {
                "instance_id": ids.get((benchmark.id, external_id)),
                "key": ITEM_KEY,
                "position": 1,
                "category": category,
                "category_original": category,
                "check_type": CHECK_TYPE,
                "group": "",
                "description": _item_description(kind, gt_key, truth, default),
                "conditional": False,
                "turn": None,
                "privilege": None,
                "details": details,
                "content_hash": content_hash([category, details]),
            }
        )
    if ctx.failed:
        ctx.report.add("checklist items", "created", len(items))
        return
    ctx.upsert(ChecklistItem, items, key=("instance_id", "key"), compare=("content_hash",), kind="checklist items")


def _item_description(kind: str, gt_key: str, truth: Any, default: Any) -> str:
    what = "option" if kind == OPTION else "answer"
    return (
        f"The {what} equals Groundtruth.{gt_key} = {json.dumps(truth, ensure_ascii=False)} exactly "
        f"(a missing {what} counts as {json.dumps(default, ensure_ascii=False)})."
    )


def _report_kept(ctx: Context, benchmark, category: str, in_file: set[str]) -> None:
    """Tasks of this category stored earlier but absent from the file stay (a corrected task is a
    new instance, since its id is its content); the report counts them so nothing goes unnoticed."""
    if ctx.failed:
        return
    stored = Instance.objects.filter(benchmark=benchmark, primary_category=category).values_list(
        "external_id", flat=True
    )
    kept = sum(1 for external_id in stored.iterator() if external_id not in in_file)
    ctx.report.add("instances", "kept (not in this file)", kept)


# predictions --------------------------------------------------------------------------
def ingest_predictions(sources: Sequence[Source], ctx: Context) -> None:
    """Category task lists with LLMAnswer: one attempt per task and one verdict by the exact-match judge."""
    benchmark = benchmark_existing(ctx, sources[0], default_slug=DEFAULT_SLUG) if sources else None
    if benchmark is None or not _is_choice(ctx, benchmark, sources):
        return
    run = _run(ctx, benchmark, sources[0])
    if run is None:
        return
    judge = judge_of_ingest(ctx, ctx.options.judge or DEFAULT_JUDGE, JudgeKind.CHECKER)
    instances = dict(Instance.objects.filter(benchmark=benchmark).values_list("external_id", "id"))
    items = dict(
        ChecklistItem.objects.filter(instance__benchmark=benchmark, key=ITEM_KEY).values_list("instance_id", "id")
    )
    seen: dict[str, str] = {}
    for source in sources:
        tasks = _FileTasks(ctx, source)
        batch: list[tuple[int, int, dict]] = []
        answered = 0
        total = 0
        for line, task, external_id in tasks:
            total += 1
            answered += "LLMAnswer" in task
            instance_id = instances.get(external_id)
            if instance_id is None or instance_id not in items:
                ctx.problem(
                    source,
                    line,
                    f"task '{external_id}' was never ingested: no {tasks.category} task of "
                    f"benchmark '{benchmark.slug}' has this content (ingest it with guidebench-tasks first)",
                    awaits_import=True,
                )
                continue
            if external_id in seen:
                ctx.problem(source, line, f"task '{external_id}' is predicted twice (first at {seen[external_id]})")
                continue
            seen[external_id] = f"{source.name}:{line}"
            batch.append((instance_id, items[instance_id], _scored_task(tasks.category, task)))
            if len(batch) >= BATCH or ctx.batch_full:
                _write_predictions(ctx, run, judge, batch)
                batch = []
        _write_predictions(ctx, run, judge, batch)
        if total and not answered:
            ctx.problem(
                source, None, "no task has an 'LLMAnswer': this is a tasks file (use guidebench-tasks), not predictions"
            )


def _run(ctx: Context, benchmark, source: Source):
    if ctx.options.run and not ctx.options.model:
        run = Run.objects.filter(benchmark=benchmark, label=ctx.options.run).first()
        if run is None:
            ctx.problem(source, None, run_missing(ctx.options), awaits_import=True)
        else:
            ctx.touched_runs[run.id] = run
        return run
    if not ctx.options.model:
        ctx.problem(source, None, model_missing(ctx.options, "predictions"))
        return None
    run = run_get_or_create(ctx, benchmark=benchmark, model_name=ctx.options.model)
    ctx.touched_runs[run.id] = run
    return run


def _scored_task(category: str, task: dict) -> dict[str, Any]:
    """The attempt and verdict fields of one predicted task."""
    scored = choice_task_scored(category, task)
    raw = task.get("LLMAnswer")
    lenient = choice_answer_normalised(category, raw, task.get("Groundtruth"), present="LLMAnswer" in task)
    analysis = None
    if isinstance(raw, dict):
        analysis = raw.get("AnswerAnalysis", raw.get("CandidateAnalysis"))
    outcome = {
        "answer": scored.answer,
        "raw": raw,
        "analysis": analysis,
        "unanswered": scored.unanswered,
        "unanswered_reason": scored.reason,
        "ground_truth": scored.ground_truth,
        "kind": scored.kind,
        "correct": scored.correct,
        "normalised": {"answer": lenient.answer, "ground_truth": lenient.ground_truth, "correct": lenient.correct},
    }
    if "cleaned_response" in task:
        outcome["cleaned_response"] = task["cleaned_response"]
    if raw is None:
        response = ""
    elif isinstance(raw, str):
        response = raw
    else:
        response = json.dumps(raw, ensure_ascii=False)
    shown = json.dumps(scored.answer, ensure_ascii=False)
    truth = json.dumps(scored.ground_truth, ensure_ascii=False)
    reasoning = f"answer {shown} {'=' if scored.correct else '!='} ground truth {truth}"
    if scored.unanswered:
        reasoning += f" (no usable answer: {scored.reason}; scored as the reference scorer does)"
    return {"response": response, "outcome": outcome, "correct": scored.correct, "reasoning": reasoning}


def _write_predictions(ctx: Context, run, judge, batch: list[tuple[int, int, dict]]) -> None:
    ctx.release()
    if not batch:
        return
    ids = attempts_upsert(
        ctx,
        run,
        [
            {"instance_id": instance_id, "response": p["response"], "outcome": p["outcome"]}
            for instance_id, _, p in batch
        ],
        compare=("response", "outcome"),
    )
    verdicts_upsert(
        ctx,
        [
            {
                "attempt_id": ids.get(instance_id),
                "item_id": item_id,
                "judge_id": judge.id,
                "result": "pass" if p["correct"] else "fail",
                "reasoning": p["reasoning"],
                "score": 1.0 if p["correct"] else 0.0,
            }
            for instance_id, item_id, p in batch
        ],
    )


__all__ = ["ANSWER", "OPTION", "category_from_name", "ingest_predictions", "ingest_tasks", "task_external_id"]
