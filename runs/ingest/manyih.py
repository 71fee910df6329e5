"""ManyIH coding subset: the dataset (samples with privilege-tagged conflicting style
instructions) and the reference evaluator's results file (JHU-CLSP/ManyIH,
`manyih/coding/evaluator.py`).

Dataset: `{"config", "statistics", "data": [{id, task_id, prompt, test_code,
instructions[{id, privilege, description, style_key, style_id, category,
conflicts_with}], metadata{expected_styles, ...}}]}`. Every instruction becomes a
checklist item resolved by `runs.scoring.hierarchy.resolve_privileges`; the resolution must
agree with `metadata.expected_styles` (the styles the harness scores) and with the
privilege tags in the prompt, else the sample is a problem.

Results: `{"eval_config", "stats", ..., "results": [{id, task_id, response,
evaluation{...}}]}`, in completion order. The evaluator (`judge_response` and
`run_evaluation`) writes three shapes of record, each stored as what it is
(`Attempt.outcome["status"]`):

- "scored": `evaluation{code_extracted: true, extracted_code, test_passed, test_result,
  style_passed, each_style_passed{<style_key>: bool}, style_messages, overall_passed,
  assertion_pass_rate, passed_assertions, total_assertions, style_satisfaction_rate}`;
- "no_code": the response held no code (`code_extracted: false`, `error`, no
  `each_style_passed`);
- "error": the evaluator raised (the API call failed, or a style checker could not
  tokenise the code): a top-level `error` and only the three pass flags.

The reference counts the last two as failed samples (Acc, Acc_test, Acc_style), so their
active items get `fail` verdicts carrying the reason; it leaves them out of its per-style-
group rates, which `runs.metrics.hierarchy.style_group_rates` does by their status.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runs.ingest.base import INT_MAX, INT_MIN, Context, Source, content_hash, iter_json_document, require, text_limit
from runs.ingest.lookups import (
    InstanceIndex,
    attempts_upsert,
    benchmark_existing,
    benchmark_get_or_create,
    file_items,
    judge_of_ingest,
    run_get_or_create,
)
from runs.ingest.options import model_missing, run_missing
from runs.ingest.verdicts import parse_result, verdicts_upsert
from runs.metrics.hierarchy import ERROR, NO_CODE, SCORED
from runs.models import BenchmarkKind, ChecklistItem, Instance, JudgeKind, Run, VerdictResult
from runs.scoring.hierarchy import (
    Resolution,
    active_styles,
    ordinal_ranks,
    parse_privilege_tags,
    resolve_privileges,
    same_text,
)

DEFAULT_SLUG = "manyih-coding"
DEFAULT_JUDGE = "manyih-log"
INTERFACES = ("ordinal", "scalar")
BATCH = 200


# dataset ------------------------------------------------------------------------------
def ingest_data(sources: Sequence[Source], ctx: Context) -> None:
    """ManyIH coding dataset JSON: one instance per sample, one item per instruction."""
    benchmark = benchmark_get_or_create(
        ctx, default_slug=DEFAULT_SLUG, kind=BenchmarkKind.HIERARCHY, name="ManyIH coding"
    )
    seen: dict[str, str] = {}
    for source in sources:
        interface: str | None = None
        saw_data = False
        batch: list[tuple[Source, int, dict, dict]] = []
        for key, line, value in iter_json_document(source, ctx, list_keys=("data",), keep=True):
            if key == "config":
                interface = _config_interface(ctx, source, line, value)
            elif key == "results":
                ctx.problem(source, line, "this looks like a ManyIH results file, not the dataset (use manyih-results)")
            elif key == "data":
                saw_data = True
                parsed = _valid_sample(ctx, source, line, value, interface, seen)
                if parsed is not None:
                    batch.append((source, line, value, parsed))
                if len(batch) >= BATCH or ctx.batch_full:
                    _write_samples(ctx, benchmark, batch)
                    batch = []
        if not saw_data and not ctx.failed:
            ctx.problem(source, 1, "no 'data' list: this is not a ManyIH dataset file")
        _write_samples(ctx, benchmark, batch)


def _config_interface(ctx: Context, source: Source, line: int, config: Any) -> str | None:
    if not isinstance(config, dict):
        ctx.problem(source, line, "'config' should be an object")
        return None
    interface = config.get("hierarchy_format")
    if interface is None:
        return None
    if interface not in INTERFACES:
        ctx.problem(source, line, f"config.hierarchy_format {interface!r} is not 'ordinal' or 'scalar'")
        return None
    return interface


#: instruction fields stored as text, and the columns that hold them (id -> key, style_key -> group, category -> check_type)
_INSTRUCTION_TEXT = (
    ("id", text_limit(ChecklistItem, "key")),
    ("style_key", text_limit(ChecklistItem, "group")),
    ("category", text_limit(ChecklistItem, "check_type")),
)


def _valid_sample(
    ctx: Context, source: Source, line: int, sample: Any, interface: str | None, seen: dict
) -> dict | None:
    """Check one sample; returns {"interface", "resolution", "positions"} or None (problems reported)."""
    if not isinstance(sample, dict):
        ctx.problem(source, line, "a sample should be an object")
        return None
    if not require(ctx, source, line, sample, {"id": (int, str), "prompt": str, "instructions": list}):
        return None
    sample_id = str(sample["id"])
    if sample_id in seen:
        ctx.problem(source, line, f"sample '{sample_id}' appears twice (first at {seen[sample_id]})")
        return None
    seen[sample_id] = f"{source.name}:{line}"
    where = f"sample '{sample_id}'"
    ok = True
    ids: set = set()
    for n, instruction in enumerate(sample["instructions"], 1):
        if not isinstance(instruction, dict):
            ctx.problem(source, line, f"{where}: instruction {n} should be an object")
            ok = False
            continue
        missing = [f for f in ("id", "privilege", "style_key") if instruction.get(f) is None]
        if missing:
            ctx.problem(source, line, f"{where}: instruction {n} has no {', '.join(repr(m) for m in missing)}")
            ok = False
            continue
        wrong = [
            f
            for f in ("id", "style_key", "style_id")
            if not isinstance(instruction.get(f), (str, int)) or isinstance(instruction.get(f), bool)
        ]
        if wrong:  # ids are compared and used as keys; an object or list there cannot be
            ctx.problem(
                source, line, f"{where}: instruction {n} has no string or integer {', '.join(map(repr, wrong))}"
            )
            ok = False
            continue
        for name, limit in _INSTRUCTION_TEXT:
            value = instruction.get(name)
            if name == "category" and value is not None and not isinstance(value, str):
                ctx.problem(source, line, f"{where}: instruction {n}: 'category' should be text")
                ok = False
            elif value is not None and len(str(value)) > limit:
                ctx.problem(
                    source,
                    line,
                    f"{where}: instruction {n}: '{name}' is {len(str(value)):,} characters; at most {limit} fit",
                )
                ok = False
        if isinstance(instruction["privilege"], bool) or not isinstance(instruction["privilege"], int):
            ctx.problem(
                source, line, f"{where}: instruction {instruction['id']} has a privilege that is not an integer"
            )
            ok = False
        elif not INT_MIN <= instruction["privilege"] <= INT_MAX:  # the column is an integer (PostgreSQL refuses more)
            ctx.problem(
                source,
                line,
                f"{where}: instruction {instruction['id']}: its privilege is out of range "
                f"(an integer from {INT_MIN} to {INT_MAX})",
            )
            ok = False
        conflicts = instruction.get("conflicts_with", [])
        if not isinstance(conflicts, list) or any(
            not isinstance(c, (str, int)) or isinstance(c, bool) for c in conflicts
        ):
            ctx.problem(
                source,
                line,
                f"{where}: instruction {instruction['id']}: 'conflicts_with' should be a list of instruction ids",
            )
            ok = False
        if instruction["id"] in ids:
            ctx.problem(source, line, f"{where}: instruction id {instruction['id']} appears twice")
            ok = False
        ids.add(instruction["id"])
    if not sample["instructions"]:
        ctx.problem(source, line, f"{where} has no instructions")
        ok = False
    if not ok:
        return None
    instructions = sample["instructions"]
    for instruction in instructions:
        unknown = [c for c in instruction.get("conflicts_with") or [] if c not in ids]
        if unknown:
            ctx.problem(
                source,
                line,
                f"{where}: instruction {instruction['id']} conflicts with unknown instruction(s) {unknown}",
            )
            ok = False
    if not ok:
        return None
    positions = _prompt_positions(ctx, source, line, sample, interface, where)
    if positions is None:
        return None
    tags_interface, positions = positions
    resolution = resolve_privileges([{**i, "position": positions[i["id"]]} for i in instructions])
    metadata = sample.get("metadata")
    expected = metadata.get("expected_styles") if isinstance(metadata, dict) else None
    resolved_styles = active_styles(instructions, resolution)
    if expected is not None and resolved_styles != expected:
        ctx.problem(
            source,
            line,
            f"{where}: metadata.expected_styles {expected} differs from the privilege resolution {resolved_styles}",
        )
        return None
    return {"interface": interface or tags_interface or "scalar", "resolution": resolution, "positions": positions}


def _prompt_positions(ctx, source, line, sample, interface, where) -> tuple[str | None, dict] | None:
    """Each instruction's 1-based order in the prompt, from the privilege tags; the list order
    when the prompt has no tags. Tags must name each instruction once, with its privilege."""
    instructions = sample["instructions"]
    tags = parse_privilege_tags(sample["prompt"])
    if not tags:
        return None, {i["id"]: n for n, i in enumerate(instructions, 1)}
    kinds = {t.interface for t in tags}
    if len(kinds) > 1:
        ctx.problem(source, line, f"{where}: the prompt mixes ordinal and scalar privilege tags")
        return None
    tag_interface = kinds.pop()
    if interface and tag_interface != interface:
        ctx.problem(
            source, line, f"{where}: the prompt uses {tag_interface} tags but config.hierarchy_format is {interface!r}"
        )
        return None
    if len(tags) != len(instructions):
        ctx.problem(
            source, line, f"{where}: the prompt tags {len(tags)} instructions, the sample lists {len(instructions)}"
        )
        return None
    ranks = ordinal_ranks(i["privilege"] for i in instructions)
    positions: dict = {}
    unmatched = []
    for instruction in instructions:
        match = next(
            (t for t in tags if t.position + 1 not in positions.values() and _tag_matches(t, instruction)), None
        )
        if match is None:
            unmatched.append(instruction["id"])
            continue
        positions[instruction["id"]] = match.position + 1
        expected = ranks[instruction["privilege"]] if tag_interface == "ordinal" else instruction["privilege"]
        if match.value != expected:
            ctx.problem(
                source,
                line,
                f"{where}: instruction {instruction['id']} is tagged {tag_interface} {match.value} in the prompt, "
                f"but its privilege {instruction['privilege']} means {expected}",
            )
            return None
    if unmatched:
        ctx.problem(source, line, f"{where}: instruction(s) {unmatched} are not among the privilege tags of the prompt")
        return None
    return tag_interface, positions


def _tag_matches(tag, instruction: dict) -> bool:
    if tag.instruction_id is not None:
        return tag.instruction_id == str(instruction["id"])
    return same_text(tag.text, str(instruction.get("description") or ""))


def _write_samples(ctx: Context, benchmark, batch: list[tuple[Source, int, dict, dict]]) -> None:
    ctx.release()
    if not batch:
        return
    rows = []
    for _, _, sample, parsed in batch:
        spec = {k: v for k, v in sample.items() if k != "instructions"}
        spec["interface"] = parsed["interface"]
        rows.append(
            {
                "benchmark_id": benchmark.id,
                "external_id": str(sample["id"]),
                "primary_category": "",
                "scaffold": "",
                "scaffold_version": "",
                "spec": spec,
                "content_hash": content_hash(spec | {"instructions": sample["instructions"]}),
            }
        )
    ids = ctx.upsert(Instance, rows, key=("benchmark_id", "external_id"), compare=("content_hash",), kind="instances")
    item_rows = []
    for _, _, sample, parsed in batch:
        instance_id = ids.get((benchmark.id, str(sample["id"])))
        resolution: Resolution = parsed["resolution"]
        for instruction in sample["instructions"]:
            resolved = resolution.instructions[instruction["id"]]
            details = {
                "style_id": instruction.get("style_id"),
                "conflicts_with": list(instruction.get("conflicts_with") or []),
                "rank": resolved.rank,
                "active": resolved.active,
                "suppressed_by": list(resolved.suppressed_by),
                "conflict_group": None if resolved.group is None else resolved.group + 1,
            }
            extra = {k: v for k, v in instruction.items() if k not in _ITEM_FIELDS}
            if extra:
                details["extra"] = extra
            row = {
                "instance_id": instance_id,
                "key": str(instruction["id"]),
                "position": parsed["positions"][instruction["id"]],
                "category": "",
                "category_original": "",
                "check_type": str(instruction.get("category") or ""),
                "group": str(instruction["style_key"]),
                "description": str(instruction.get("description") or ""),
                "conditional": False,
                "turn": None,
                "privilege": instruction["privilege"],
                "details": details,
            }
            row["content_hash"] = content_hash({k: v for k, v in row.items() if k != "instance_id"})
            item_rows.append(row)
    if ctx.failed:
        ctx.report.add("checklist items", "created", len(item_rows))
        return
    ctx.upsert(ChecklistItem, item_rows, key=("instance_id", "key"), compare=("content_hash",), kind="checklist items")
    for source, line, sample, _ in batch:
        keys = {str(i["id"]) for i in sample["instructions"]}
        _remove_dropped_items(
            ctx, source, line, ids[(benchmark.id, str(sample["id"]))], keys, f"sample '{sample['id']}'"
        )


_ITEM_FIELDS = {"id", "privilege", "description", "style_key", "style_id", "category", "conflicts_with"}


def _remove_dropped_items(
    ctx: Context, source: Source, line: int, instance_id: int, keys: set[str], where: str
) -> None:
    """A corrected sample that no longer lists an instruction loses its item, unless verdicts refer to it."""
    dropped = file_items(instance_id=instance_id).exclude(key__in=keys)
    judged = list(dropped.filter(verdicts__isnull=False).values_list("key", flat=True).distinct()[:5])
    if judged:
        ctx.problem(source, line, f"instructions {', '.join(judged)} have verdicts and cannot be removed from {where}")
        return
    ctx.report.add("checklist items", "removed", dropped.delete()[1].get("runs.ChecklistItem", 0))


# results ------------------------------------------------------------------------------
def ingest_results(sources: Sequence[Source], ctx: Context) -> None:
    """ManyIH evaluator results JSON: one attempt per result, verdicts on the active instructions."""
    benchmark = benchmark_existing(ctx, sources[0], default_slug=DEFAULT_SLUG) if sources else None
    if benchmark is None:
        return
    run, run_is_new = _run_for_results(ctx, benchmark, sources[0])
    if run is None:
        return
    judge = judge_of_ingest(ctx, ctx.options.judge or DEFAULT_JUDGE, JudgeKind.LOGGED)
    index = InstanceIndex.of(ctx, benchmark)
    seen: dict[str, str] = {}
    eval_config: dict | None = None
    pending: list[dict] = []
    for source in sources:
        saw_results = False
        for key, line, value in iter_json_document(source, ctx, list_keys=("results",), keep=True):
            if key == "eval_config":
                if not isinstance(value, dict):
                    ctx.problem(source, line, "'eval_config' should be an object")
                elif eval_config is not None and eval_config != value:
                    ctx.problem(source, line, "the files of one run have different eval_config")
                else:
                    eval_config = value
            elif key == "data":
                ctx.problem(source, line, "this looks like the ManyIH dataset, not a results file (use manyih-data)")
                break
            elif key == "results":
                saw_results = True
                parsed = _valid_result(ctx, source, line, value, index, seen)
                if parsed is not None:
                    pending.append(parsed)
                if len(pending) >= BATCH or ctx.batch_full:
                    _write_results(ctx, run, judge, pending)
                    pending = []
        if not saw_results and not ctx.failed:
            ctx.problem(source, 1, "no 'results' list: this is not a ManyIH results file")
    _write_results(ctx, run, judge, pending)
    if eval_config is not None:
        _run_settings_update(ctx, run, eval_config, run_is_new)


def _run_for_results(ctx: Context, benchmark, source: Source) -> tuple[Run | None, bool]:
    if ctx.options.run and not ctx.options.model:
        run = Run.objects.filter(benchmark=benchmark, label=ctx.options.run).first()
        if run is None:
            ctx.problem(source, None, run_missing(ctx.options), awaits_import=True)
        else:
            ctx.touched_runs[run.id] = run
        return run, False
    if not ctx.options.model:
        ctx.problem(source, None, model_missing(ctx.options, "results"))
        return None, False
    label = ctx.options.run or ctx.options.model
    existed = Run.objects.filter(benchmark=benchmark, label=label).exists()
    run = run_get_or_create(ctx, benchmark=benchmark, model_name=ctx.options.model)
    ctx.touched_runs[run.id] = run
    return run, not existed


def _run_settings_update(ctx: Context, run: Run, eval_config: dict, run_is_new: bool) -> None:
    """Run.settings = the evaluator's eval_config (merged over what the run had)."""
    merged = {**run.settings, **eval_config}
    if merged == run.settings:
        return
    if not run_is_new:
        ctx.report.add("runs", "updated")
    if not ctx.failed:
        run.settings = merged
        run.save(update_fields=["settings"])


def _valid_result(
    ctx: Context, source: Source, line: int, result: Any, index: InstanceIndex, seen: dict
) -> dict | None:
    if not isinstance(result, dict):
        ctx.problem(source, line, "a result should be an object")
        return None
    if not require(ctx, source, line, result, {"id": (int, str), "evaluation": dict}):
        return None
    sample_id = str(result["id"])
    instance_id = index.instance_id(sample_id)
    if instance_id is None:
        ctx.problem(
            source,
            line,
            f"unknown sample id '{sample_id}' (ingest the dataset with manyih-data first)",
            awaits_import=True,
        )
        return None
    if sample_id in seen:
        ctx.problem(source, line, f"sample '{sample_id}' has two results (first at {seen[sample_id]})")
        return None
    seen[sample_id] = f"{source.name}:{line}"
    evaluation = result["evaluation"]
    ok = True
    flags = {}
    for name in ("test_passed", "style_passed", "overall_passed"):
        if not isinstance(evaluation.get(name), bool):
            ctx.problem(source, line, f"sample '{sample_id}': evaluation.{name} should be true or false")
            ok = False
        flags[name] = evaluation.get(name)
    status = result_status(result)
    error = result.get("error") if status == ERROR else evaluation.get("error")
    each = evaluation.get("each_style_passed")
    if status == SCORED and each is None:
        ctx.problem(
            source,
            line,
            f"sample '{sample_id}': evaluation has no 'each_style_passed', no top-level 'error' "
            "and no 'code_extracted: false' (not a record the ManyIH evaluator writes)",
        )
        ok = False
    elif each is not None and not isinstance(each, dict):
        ctx.problem(source, line, f"sample '{sample_id}': evaluation.each_style_passed should be an object")
        ok = False
    elif each is not None and status != SCORED:
        beside = "a top-level error" if status == ERROR else "code_extracted: false"
        ctx.problem(source, line, f"sample '{sample_id}': evaluation.each_style_passed is not written beside {beside}")
        ok = False
    logged = _logged_fields(ctx, source, line, sample_id, evaluation)
    if not ok or logged is None:
        return None
    return {
        "source": source,
        "line": line,
        "sample_id": sample_id,
        "instance_id": instance_id,
        "result": result,
        "flags": flags,
        "each": each if status == SCORED else None,
        "error": error,
        "status": status,
        "logged": logged,
    }


#: evaluation fields kept in Attempt.outcome as logged, with the check each must pass
_COUNTS = ("passed_assertions", "total_assertions")
_RATES = ("assertion_pass_rate", "style_satisfaction_rate")


def result_status(result: dict) -> str:
    """ "error" (a top-level error: the evaluator raised), "no_code" (code_extracted false) or "scored"."""
    if result.get("error") is not None:
        return ERROR
    if result.get("evaluation", {}).get("code_extracted") is False:
        return NO_CODE
    return SCORED


def _logged_fields(ctx: Context, source: Source, line: int, sample_id: str, evaluation: dict) -> dict | None:
    """The evaluator's code, assertion counts and rates as logged (each checked), or None after a problem."""
    out: dict[str, Any] = {}
    ok = True
    for name in _COUNTS:
        value = evaluation.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            ctx.problem(source, line, f"sample '{sample_id}': evaluation.{name} = {value!r} is not a count")
            ok = False
        out[name] = value
    if ok and out.get("passed_assertions", 0) > out.get("total_assertions", out.get("passed_assertions", 0)):
        ctx.problem(
            source,
            line,
            f"sample '{sample_id}': evaluation.passed_assertions {out['passed_assertions']} "
            f"exceeds total_assertions {out['total_assertions']}",
        )
        ok = False
    for name in _RATES:
        value = evaluation.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            ctx.problem(source, line, f"sample '{sample_id}': evaluation.{name} = {value!r} is not a rate from 0 to 1")
            ok = False
        out[name] = value
    if isinstance(evaluation.get("code_extracted"), bool):
        out["code_extracted"] = evaluation["code_extracted"]
    code = evaluation.get("extracted_code")
    if code is not None:
        if not isinstance(code, str):
            ctx.problem(source, line, f"sample '{sample_id}': evaluation.extracted_code should be text")
            ok = False
        out["extracted_code"] = code
    return out if ok else None


def _write_results(ctx: Context, run: Run, judge, pending: list[dict]) -> None:
    ctx.release()
    if not pending:
        return
    items = _items_of([p["instance_id"] for p in pending])
    attempt_rows, verdicts = [], []
    for p in pending:
        rows = _verdict_rows(ctx, p, items.get(p["instance_id"], []))
        if rows is None:
            continue
        evaluation = p["result"]["evaluation"]
        outcome = {**p["flags"], "test_result": evaluation.get("test_result"), "status": p["status"], **p["logged"]}
        if p["error"] is not None:
            outcome["error"] = str(p["error"])
        response = p["result"].get("response")
        attempt_rows.append(
            {
                "instance_id": p["instance_id"],
                "response": response if isinstance(response, str) else "",
                "outcome": outcome,
                "assistant_turns": 1 if isinstance(response, str) else 0,
            }
        )
        verdicts.append((p["instance_id"], rows))
    ids = attempts_upsert(ctx, run, attempt_rows, compare=("response", "outcome", "assistant_turns"))
    rows = []
    for instance_id, item_verdicts in verdicts:
        for v in item_verdicts:
            rows.append({"attempt_id": ids.get(instance_id), "judge_id": judge.id, **v})
    verdicts_upsert(ctx, rows)


def _items_of(instance_ids: list[int]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for item in ChecklistItem.objects.filter(instance_id__in=instance_ids).values(
        "id", "instance_id", "key", "group", "details"
    ):
        out.setdefault(item["instance_id"], []).append(item)
    return out


def _verdict_rows(ctx: Context, p: dict, items: list[dict]) -> list[dict] | None:
    """Each active item of style group g gets each_style_passed[g]; suppressed items get na."""
    source, line, sample_id = p["source"], p["line"], p["sample_id"]
    groups = {item["group"] for item in items}
    active_groups = {item["group"] for item in items if item["details"].get("active")}
    each = p["each"] or {}
    ok = True
    results: dict[str, str] = {}
    for key, value in each.items():
        if key not in groups:
            ctx.problem(
                source,
                line,
                f"sample '{sample_id}': style key '{key}' is not a style group of this sample "
                f"(groups: {', '.join(sorted(groups))})",
            )
            ok = False
            continue
        if key not in active_groups:
            ctx.problem(
                source,
                line,
                f"sample '{sample_id}': style group '{key}' has no active instruction, yet it has a result",
            )
            ok = False
            continue
        result = parse_result(value)
        if result is None or result == VerdictResult.NOT_APPLICABLE:
            ctx.problem(
                source, line, f"sample '{sample_id}': each_style_passed['{key}'] = {value!r} is not true or false"
            )
            ok = False
            continue
        results[key] = result
    if p["each"] is not None:
        missing = sorted(active_groups - set(each))
        if missing:
            ctx.problem(
                source,
                line,
                f"sample '{sample_id}': each_style_passed has no result for style group(s) {', '.join(missing)}",
            )
            ok = False
    if not ok:
        return None
    messages = p["result"]["evaluation"].get("style_messages")
    messages = messages if isinstance(messages, dict) else {}
    rows = []
    for item in items:
        if not item["details"].get("active"):
            beaten = ", ".join(str(k) for k in item["details"].get("suppressed_by") or [])
            rows.append(
                {
                    "item_id": item["id"],
                    "result": VerdictResult.NOT_APPLICABLE,
                    "reasoning": f"suppressed by instruction {beaten}" if beaten else "suppressed",
                }
            )
        elif p["each"] is None:
            rows.append({"item_id": item["id"], "result": VerdictResult.FAIL, "reasoning": _unscored_reason(p)})
        else:
            message = messages.get(item["group"])
            rows.append(
                {
                    "item_id": item["id"],
                    "result": results[item["group"]],
                    "reasoning": "" if message is None else str(message),
                }
            )
    return rows


def _unscored_reason(p: dict) -> str:
    """Why an active instruction of a result the evaluator did not style-check fails, in plain words."""
    if p["status"] == NO_CODE:
        said = f" ({p['error']})" if p["error"] else ""
        return f"the response had no code block; the evaluator counts the sample as failed{said}"
    return f"the evaluator recorded an error and counts the sample as failed: {p['error']}"
