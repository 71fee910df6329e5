"""OctoBench (mini-vela harness): instances, trajectories (merged or raw proxy logs) and judge scores."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from runs.categories import normalise_category
from runs.ingest.base import (
    Context,
    Source,
    content_hash,
    iter_json_document,
    iter_jsonl,
    overflows_float,
    require,
    text_limit,
)
from runs.ingest.decode import LARGE_RECORD_BYTES, MAX_VALUES, Refused, count_values, loads
from runs.ingest.lookups import (
    InstanceIndex,
    attempt_ids_for,
    attempts_upsert,
    benchmark_existing,
    benchmark_get_or_create,
    file_items,
    judge_of_ingest,
    run_get_or_create,
)
from runs.ingest.options import model_missing, option_ask, run_missing
from runs.ingest.usage import USAGE_FIELDS, CallTally, tool_calls_in
from runs.ingest.verdicts import verdicts_upsert
from runs.models import (
    AgentModel,
    BenchmarkKind,
    ChecklistItem,
    Instance,
    JudgeKind,
    JudgeReport,
    ReportStatus,
    Run,
    Verdict,
    VerdictResult,
)
from runs.trajectory_store import trajectories_upsert

DEFAULT_SLUG = "octobench"
BATCH = 200


# instances ----------------------------------------------------------------------------
def ingest_instances(sources: Sequence[Source], ctx: Context) -> None:
    """Instances JSONL: one task per line with its checklist grouped by source category."""
    benchmark = benchmark_get_or_create(ctx, default_slug=DEFAULT_SLUG, kind=BenchmarkKind.CHECKLIST, name="OctoBench")
    seen: dict[str, str] = {}
    batch: list[tuple[Source, int, dict[str, Any]]] = []
    for source in sources:
        for line, record in iter_jsonl(source, ctx, keep=True):
            if not _valid_instance(ctx, source, line, record, seen):
                continue
            batch.append((source, line, record))
            if len(batch) >= BATCH or ctx.batch_full:
                _write_instances(ctx, benchmark, batch)
                batch = []
    _write_instances(ctx, benchmark, batch)


def _valid_instance(ctx: Context, source: Source, line: int, record: dict, seen: dict[str, str]) -> bool:
    if "results" in record and "instance_id" not in record:
        ctx.problem(source, line, "this looks like an OctoBench scores file, not instances")
        return False
    if "request_body" in record or "messages" in record or "eval_result" in record:
        ctx.problem(source, line, "this looks like a trajectory or scores record, not an OctoBench instance")
        return False
    if not require(ctx, source, line, record, {"instance_id": (str, int), "checklist": dict}):
        return False
    instance_id = str(record["instance_id"])
    where = f"{source.name}:{line}"
    if instance_id in seen:
        ctx.problem(source, line, f"instance '{instance_id}' appears twice (first at {seen[instance_id]})")
        return False
    seen[instance_id] = where
    ok = True
    keys: set[str] = set()
    for category, group in record["checklist"].items():
        checks = group.get("checks") if isinstance(group, dict) else None
        if not isinstance(checks, list):
            ctx.problem(source, line, f"checklist category '{category}' has no 'checks' list")
            ok = False
            continue
        for n, check in enumerate(checks, 1):
            if (
                not isinstance(check, dict)
                or not check.get("check_id")
                or not isinstance(check["check_id"], (str, int))
            ):
                ctx.problem(source, line, f"check {n} of category '{category}' has no 'check_id'")
                ok = False
                continue
            if check["check_id"] in keys:
                ctx.problem(source, line, f"check id '{check['check_id']}' appears twice in instance '{instance_id}'")
                ok = False
            keys.add(check["check_id"])
            ok = _valid_check_fields(ctx, source, line, category, check) and ok
    return ok


#: text fields of a check and the longest value each may hold (the columns they are stored in)
CHECK_TEXT = {"check_id": text_limit(ChecklistItem, "key"), "check_type": text_limit(ChecklistItem, "check_type")}


def _valid_check_fields(ctx: Context, source: Source, line: int, category: str, check: dict) -> bool:
    """A check's id and type are short text (a number is taken as text); its category name fits its column."""
    ok = True
    for name, limit in CHECK_TEXT.items():
        value = check.get(name)
        if value is None:
            continue
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            ctx.problem(source, line, f"check '{check['check_id']}' of category '{category}': '{name}' should be text")
            ok = False
        elif len(str(value)) > limit:
            ctx.problem(
                source,
                line,
                f"check of category '{category}': '{name}' is {len(str(value)):,} characters; at most {limit} fit",
            )
            ok = False
    if len(category) > (limit := text_limit(ChecklistItem, "category_original")):
        ctx.problem(source, line, f"checklist category name is {len(category):,} characters; at most {limit} fit")
        ok = False
    return ok


def _scaffold(record: dict) -> tuple[str, str]:
    scaffold = record.get("scaffold")
    if isinstance(scaffold, dict):
        return str(scaffold.get("name") or ""), str(scaffold.get("version") or "")
    return (str(scaffold) if scaffold else ""), ""


def _write_instances(ctx: Context, benchmark, batch: list[tuple[Source, int, dict]]) -> None:
    ctx.release()
    if not batch:
        return
    rows = []
    for _, _, record in batch:
        scaffold, scaffold_version = _scaffold(record)
        spec = {k: v for k, v in record.items() if k != "checklist"}
        spec["checklist_descriptions"] = {
            category: group.get("description", "") for category, group in record["checklist"].items()
        }
        rows.append(
            {
                "benchmark_id": benchmark.id,
                "external_id": str(record["instance_id"]),
                "primary_category": normalise_category(str(record.get("category") or "")),
                "scaffold": ctx.options.scaffold or scaffold,
                "scaffold_version": scaffold_version,
                "spec": spec,
                "content_hash": content_hash(record),
            }
        )
    ids = ctx.upsert(
        Instance,
        rows,
        key=("benchmark_id", "external_id"),
        compare=("content_hash", "primary_category", "scaffold"),
        kind="instances",
    )
    item_rows = []
    for _, _, record in batch:
        instance_id = ids.get((benchmark.id, str(record["instance_id"])))
        position = 0
        for category, group in record["checklist"].items():
            for check in group["checks"]:
                position += 1
                details = {k: v for k, v in check.items() if k not in ("check_id", "description", "check_type")}
                item_rows.append(
                    {
                        "instance_id": instance_id,
                        "key": str(check["check_id"]),
                        "position": position,
                        "category": normalise_category(category),
                        "category_original": category,
                        "check_type": str(check.get("check_type") or ""),
                        "group": "",
                        "description": str(check.get("description") or ""),
                        "conditional": bool(check.get("conditional")),
                        "turn": None,
                        "privilege": None,
                        "details": details,
                        "content_hash": content_hash([category, check, position]),
                    }
                )
    if ctx.failed:
        ctx.report.add("checklist items", "created", len(item_rows))
        return
    ctx.upsert(ChecklistItem, item_rows, key=("instance_id", "key"), compare=("content_hash",), kind="checklist items")
    _remove_dropped_items(ctx, batch, ids, benchmark)


def _remove_dropped_items(ctx: Context, batch, ids, benchmark) -> None:
    """A corrected instance that no longer lists a check loses it, unless verdicts refer to it.

    Three queries per batch, whatever its size: existing keys, judged ones, the delete.
    """
    wanted: dict[int, tuple[Source, int, dict, set[str]]] = {}
    for source, line, record in batch:
        keys = {str(c["check_id"]) for g in record["checklist"].values() for c in g["checks"]}
        wanted[ids[(benchmark.id, str(record["instance_id"]))]] = (source, line, record, keys)
    dropped = {
        pk: (instance_id, key)
        for pk, instance_id, key in file_items(instance_id__in=list(wanted)).values_list("id", "instance_id", "key")
        if key not in wanted[instance_id][3]
    }
    if not dropped:
        return
    judged: dict[int, list[str]] = {}
    for pk in Verdict.objects.filter(item_id__in=list(dropped)).values_list("item_id", flat=True).distinct():
        instance_id, key = dropped[pk]
        judged.setdefault(instance_id, []).append(key)
    for instance_id, keys in judged.items():
        source, line, record, _ = wanted[instance_id]
        ctx.problem(
            source,
            line,
            f"checks {', '.join(sorted(keys)[:5])} have verdicts and cannot be removed from '{record['instance_id']}'",
        )
    removable = [pk for pk, (instance_id, _) in dropped.items() if instance_id not in judged]
    if removable and not ctx.failed:
        ctx.report.add(
            "checklist items",
            "removed",
            ChecklistItem.objects.filter(id__in=removable).delete()[1].get("runs.ChecklistItem", 0),
        )


# trajectories -------------------------------------------------------------------------
def ingest_trajectories(sources: Sequence[Source], ctx: Context) -> None:
    """Merged trajectories ({meta, tools, messages} per thread) or raw proxy logs (one API call
    per line), detected per record; records of one session must be contiguous in a file."""
    benchmark = benchmark_existing(ctx, sources[0], default_slug=DEFAULT_SLUG) if sources else None
    if benchmark is None:
        return
    index = InstanceIndex.of(ctx, benchmark)
    runs: dict[str, Any] = {}
    done_sessions: dict[str, str] = {}
    for source in sources:
        current: _Session | None = None
        for line, record in iter_jsonl(source, ctx, limit=LARGE_RECORD_BYTES, keep=True):
            ctx.release()  # a session keeps one record of a thread at a time (the longest call), not each
            parsed = _trajectory_record(ctx, source, line, record)
            if parsed is None:
                continue
            session_id, kind, model_name = parsed
            if current is None or current.session_id != session_id:
                if current is not None:
                    _write_session(ctx, benchmark, index, runs, current)
                    done_sessions[current.session_id] = f"{source.name}:{current.first_line}"
                if session_id in done_sessions:
                    ctx.problem(
                        source,
                        line,
                        f"session '{session_id}' continues here after other sessions "
                        f"(it started at {done_sessions[session_id]}); keep a session's records together",
                    )
                    current = None
                    continue
                current = _Session(session_id, source, line)
            current.add(kind, record, model_name)
        if current is not None:
            _write_session(ctx, benchmark, index, runs, current)
            done_sessions[current.session_id] = f"{source.name}:{current.first_line}"


def _trajectory_record(ctx: Context, source: Source, line: int, record: dict) -> tuple[str, str, str] | None:
    if "request_body" in record:
        if not require(ctx, source, line, record, {"session_id": (str, int), "request_body": dict}):
            return None
        body = record["request_body"]
        if not isinstance(body.get("messages"), list):
            ctx.problem(source, line, "request_body has no 'messages' list")
            return None
        model = _model_named(ctx, source, line, body.get("model"), "request_body.model")
        return None if model is None else (str(record["session_id"]), "raw", model)
    if "messages" in record:
        meta = record.get("meta")
        if not isinstance(meta, dict) or not meta.get("session_id"):
            ctx.problem(source, line, "missing required field 'meta.session_id'")
            return None
        if not isinstance(record["messages"], list):
            ctx.problem(source, line, "field 'messages' should be a list")
            return None
        model = _model_named(ctx, source, line, meta.get("model"), "meta.model")
        return None if model is None else (str(meta["session_id"]), "merged", model)
    if "checklist" in record:
        ctx.problem(source, line, "this looks like an OctoBench instance, not a trajectory record")
    else:
        ctx.problem(
            source, line, "not a trajectory record: expected 'messages' (merged) or 'request_body' (raw proxy log)"
        )
    return None


def _model_named(ctx: Context, source: Source, line: int, value: Any, field: str) -> str | None:
    """The model a trajectory record names ('' when it names none); None, with a problem, when the value is not
    text or is longer than a model's name (and the run named after it) can be."""
    if not value:
        return ""
    if not isinstance(value, str):
        ctx.problem(source, line, f"field '{field}' should be text (the model's name)")
        return None
    if len(value) > (limit := text_limit(AgentModel, "name")):
        ctx.problem(source, line, f"field '{field}' is {len(value):,} characters; a model's name holds at most {limit}")
        return None
    return value


class _Session:
    """The records of one session as they are read; raw calls keep only the longest per thread."""

    def __init__(self, session_id: str, source: Source, line: int):
        self.session_id = session_id
        self.source = source
        self.first_line = line
        self.merged: list[dict] = []
        self.raw_threads: dict[str, tuple[int, int, dict]] = {}
        self.model = ""
        self._order = 0
        #: the raw calls' tokens and times, tallied as they stream past (docs/metrics.md, "Tokens, time and tool calls")
        self.calls = CallTally()

    def add(self, kind: str, record: dict, model_name: str) -> None:
        self.model = self.model or model_name
        if kind == "merged":
            self.merged.append(record)
            return
        body = record["request_body"]
        thread_key = content_hash([_text_of(body.get("system")), _first_message_text(body["messages"])])
        length = len(body["messages"])
        response = record.get("response_body") if isinstance(record.get("response_body"), dict) else {}
        usage = response.get("usage") if isinstance(response.get("usage"), dict) else record.get("usage")
        self.calls.add(content_hash([thread_key, length, response.get("content")]), usage, record.get("request_time"))
        self._order += 1
        known = self.raw_threads.get(thread_key)
        if known is None or length >= known[0]:
            order = known[1] if known else self._order
            self.raw_threads[thread_key] = (length, order, record)

    def threads(self) -> list[dict]:
        threads = [_normalise_merged(r) for r in self.merged]
        raw = sorted(self.raw_threads.values(), key=lambda t: t[1])
        threads += [_normalise_raw(r) for _, _, r in raw]
        # the main agent's thread offers tools; of those, the longest; sub-agents follow in order
        main = max(
            range(len(threads)), key=lambda i: (bool(threads[i]["tools"]), len(threads[i]["messages"])), default=None
        )
        if main is None:
            return []
        ordered = [threads[main]] + [t for i, t in enumerate(threads) if i != main]
        ordered[0]["meta"]["thread"] = "main"
        for n, thread in enumerate(ordered[1:], 1):
            thread["meta"]["thread"] = f"sub-agent {n}"
        return ordered


def _write_session(ctx: Context, benchmark, index: InstanceIndex, runs: dict, session: _Session) -> None:
    instance_id = index.instance_id(session.session_id)
    if instance_id is None:
        ctx.problem(
            session.source,
            session.first_line,
            f"session '{session.session_id}' is not an instance of benchmark '{benchmark.slug}'",
            awaits_import=True,
        )
        return
    model_name = ctx.options.model or session.model
    if not model_name:
        ctx.problem(
            session.source,
            session.first_line,
            f"no model: the records do not name one; {option_ask(ctx.options, 'model')}",
        )
        return
    run = runs.get(model_name)
    if run is None:
        run = runs[model_name] = run_get_or_create(ctx, benchmark=benchmark, model_name=model_name)
        ctx.touched_runs[run.id] = run
    threads = session.threads()
    main = threads[0]["messages"] if threads else []
    assistant = [m for m in main if m["role"] == "assistant"]
    response = next((m["content"] for m in reversed(assistant) if m.get("content")), "")
    usage = session.calls.figures() if session.raw_threads else dict.fromkeys(USAGE_FIELDS)
    usage["tool_calls"] = tool_calls_in(threads)
    ids = attempts_upsert(
        ctx,
        run,
        [{"instance_id": instance_id, "response": response, "assistant_turns": len(assistant), **usage}],
        compare=("response", "assistant_turns", *USAGE_FIELDS),
    )
    if ctx.failed:
        ctx.report.add("trajectories", "created")
        return
    trajectories_upsert(ctx, [{"attempt_id": ids.get(instance_id), "threads": threads}])


def _text_of(content: Any) -> str:
    """The text of a content field: a string, or the text blocks of a block list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") in (None, "text"):
                    parts.append(str(block.get("text", "")))
                elif block.get("type") == "tool_result":
                    parts.append(_text_of(block.get("content")))
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False)


def _first_message_text(messages: list) -> str:
    return _text_of(messages[0].get("content")) if messages and isinstance(messages[0], dict) else ""


def _normalise_merged(record: dict) -> dict:
    """A merged thread record, with tool results paired to their calls by order."""
    messages = []
    pending: list[dict] = []
    decoded = 0
    for n, message in enumerate(record["messages"]):
        if not isinstance(message, dict):
            continue
        role = str(message.get("role") or "unknown")
        out: dict[str, Any] = {"role": role, "content": _text_of(message.get("content"))}
        if message.get("reasoning_content"):
            out["reasoning"] = str(message["reasoning_content"])
        if role == "assistant" and message.get("tool_calls"):
            calls = []
            given = message["tool_calls"]  # a single call (not in a list) is kept as one call, not a crash
            for k, call in enumerate(given if isinstance(given, list) else [given]):
                call = call if isinstance(call, dict) else {"name": str(call)}
                function = call.get("function") if isinstance(call.get("function"), dict) else call
                arguments = function.get("arguments")
                # the arguments of a thread's calls decode to MAX_VALUES values in all, as one record's
                # would (runs.ingest.decode); beyond, an argument string is kept as text
                if isinstance(arguments, str) and decoded + (values := count_values(arguments)) <= MAX_VALUES:
                    try:
                        arguments, _ = loads(arguments)
                        decoded += values
                    except (ValueError, Refused):
                        pass
                calls.append(
                    {
                        "id": str(call.get("id") or f"call_{n}_{k}"),
                        "name": str(function.get("name") or ""),
                        "arguments": arguments,
                    }
                )
            out["tool_calls"] = calls
            pending = list(calls)
        if role == "tool":
            call_id = message.get("tool_call_id")
            match = next((c for c in pending if c["id"] == call_id), None) if call_id else None
            if match is None and pending:
                match = next((c for c in pending if c["name"] == message.get("tool_name")), pending[0])
            if match is not None:
                pending.remove(match)
                out["tool_call_id"] = match["id"]
            out["tool_name"] = str(message.get("tool_name") or (match or {}).get("name") or "")
        messages.append(out)
    meta = record.get("meta") if isinstance(record.get("meta"), dict) else {}
    return {"meta": dict(meta), "tools": _tool_names(record.get("tools")), "messages": messages}


def _tool_names(tools: Any) -> list[dict]:
    """Tools as {name, description}; schemas are large and kept only by name in the thread."""
    out = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        out.append({"name": str(function.get("name") or ""), "description": str(function.get("description") or "")})
    return out


def _normalise_raw(record: dict) -> dict:
    """One thread from its longest raw API call: request messages plus the response."""
    body = record["request_body"]
    messages: list[dict] = []
    system = _text_of(body.get("system"))
    if system:
        messages.append({"role": "system", "content": system})
    names: dict[str, str] = {}
    for message in body["messages"]:
        if isinstance(message, dict):
            messages.extend(_anthropic_message(message, names))
    response = record.get("response_body") or {}
    if isinstance(response, dict) and response.get("content") is not None:
        messages.extend(_anthropic_message({"role": "assistant", "content": response["content"]}, names))
    meta = {
        "session_id": str(record["session_id"]),
        "model": str(body.get("model") or ""),
        "request_time": record.get("request_time"),
    }
    return {"meta": meta, "tools": _tool_names(body.get("tools")), "messages": messages}


def _anthropic_message(message: dict, names: dict[str, str]) -> list[dict]:
    """Anthropic content blocks as normalised messages: thinking -> reasoning, tool_use -> tool_calls,
    tool_result -> a tool message paired by its tool_use_id."""
    role = str(message.get("role") or "unknown")
    content = message.get("content")
    if not isinstance(content, list):
        return [{"role": role, "content": _text_of(content)}]
    texts, thinking, calls, results = [], [], [], []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind in ("thinking", "redacted_thinking"):
            thinking.append(str(block.get("thinking") or block.get("data") or ""))
        elif kind == "tool_use":
            call_id = str(block.get("id") or f"call_{len(names)}")
            names[call_id] = str(block.get("name") or "")
            calls.append({"id": call_id, "name": names[call_id], "arguments": block.get("input")})
        elif kind == "tool_result":
            call_id = str(block.get("tool_use_id") or "")
            result = {
                "role": "tool",
                "tool_call_id": call_id,
                "tool_name": names.get(call_id, ""),
                "content": _text_of(block.get("content")),
            }
            if block.get("is_error"):
                result["is_error"] = True
            results.append(result)
        else:
            texts.append(f"[{kind} block]")
    out: list[dict] = list(results)
    if texts or thinking or calls or not results:
        msg: dict[str, Any] = {"role": role, "content": "\n".join(texts)}
        if thinking:
            msg["reasoning"] = "\n".join(thinking)
        if calls:
            msg["tool_calls"] = calls
        out.append(msg)
    return out


# scores -------------------------------------------------------------------------------
def ingest_scores(sources: Sequence[Source], ctx: Context) -> None:
    """Scores JSON (mini-vela evaluate output), one file per judge: verdicts per check id."""
    benchmark = benchmark_existing(ctx, sources[0], default_slug=DEFAULT_SLUG) if sources else None
    if benchmark is None:
        return
    if not ctx.options.judge:
        ctx.problem(sources[0], None, f"scores need a judge: {option_ask(ctx.options, 'judge')}")
        return
    # a run named by its model is found or made at the first write, not before the file is read: the look-up waits
    # for the verdicts the previous file is still copying in (Context.copy_behind), and this file is read meanwhile
    run = None
    if not ctx.options.model:
        run = _run_for_results(ctx, benchmark, sources[0])
        if run is None:
            return
    judge = judge_of_ingest(ctx, ctx.options.judge, JudgeKind.LLM)
    index = InstanceIndex.of(ctx, benchmark)
    seen: dict[str, str] = {}
    pending: list[tuple[int, list[dict]]] = []
    for source in sources:
        saw_results = False
        for key, line, value in iter_json_document(source, ctx, list_keys=("results",), keep=True):
            if key != "results":
                continue
            saw_results = True
            rows = _score_rows(ctx, source, line, value, index, seen)
            if rows is not None:
                pending.append(rows)
            if len(pending) >= BATCH or ctx.batch_full:
                run = run or _run_for_results(ctx, benchmark, sources[0])
                _write_scores(ctx, run, judge, pending)
                pending = []
        if not saw_results and not ctx.failed:
            ctx.problem(source, 1, "no 'results' list: this is not an OctoBench scores file")
    _write_scores(ctx, run or _run_for_results(ctx, benchmark, sources[0]), judge, pending)


def _run_for_results(ctx: Context, benchmark, source: Source):
    if ctx.options.run and not ctx.options.model:
        run = Run.objects.filter(benchmark=benchmark, label=ctx.options.run).first()
        if run is None:
            ctx.problem(source, None, run_missing(ctx.options), awaits_import=True)
        return run
    if not ctx.options.model:
        ctx.problem(source, None, model_missing(ctx.options, "scores"))
        return None
    run = run_get_or_create(ctx, benchmark=benchmark, model_name=ctx.options.model)
    ctx.touched_runs[run.id] = run
    return run


#: the result strings mini-vela's evaluate.py recognises: only "success" passes (`item.get("result") ==
#: "success"`); "fail" is the other word its judge prompt allows. Anything else counts as failed, as there.
PASSED_RESULT, FAILED_RESULT = "success", "fail"


def _score_rows(ctx, source, line, value, index: InstanceIndex, seen) -> tuple[int, list[dict], dict] | None:
    """A result record as (instance id, verdict rows, judge report row), counted as evaluate.py counts it.

    Every shape evaluate.py writes is accepted: a scored `eval_result`, one it read as an error (the
    judge's reply was not JSON: `{"error", "raw_response"}`), and `success: false` with an `error`
    (the judge API call failed). Shapes it cannot write (its own reward computation would have
    raised) are problems."""
    if not isinstance(value, dict):
        ctx.problem(source, line, "a result should be an object")
        return None
    if not require(ctx, source, line, value, {"instance_id": (str, int)}):
        return None
    external = str(value["instance_id"])
    instance_id = index.instance_id(external)
    if instance_id is None:
        ctx.problem(source, line, f"unknown instance '{external}'", awaits_import=True)
        return None
    if external in seen:
        ctx.problem(source, line, f"instance '{external}' is scored twice (first at {seen[external]})")
        return None
    seen[external] = f"{source.name}:{line}"
    report = _report_of(value)
    if "eval_result" not in value:
        if value.get("success") is True:
            ctx.problem(source, line, "a result with success true has no 'eval_result'")
            return None
        report["status"] = ReportStatus.FAILED
        return instance_id, [], _unscored(report, index.items(instance_id))
    eval_result = value["eval_result"]
    if _reads_as_error(eval_result):
        not_json = isinstance(eval_result, dict) and "raw_response" in eval_result
        report["status"] = ReportStatus.REPLY_NOT_JSON if not_json else ReportStatus.REPLY_ERROR
        report["error"] = _text(eval_result.get("error")) if isinstance(eval_result, dict) else ""
        report["raw_reply"] = (
            _text(eval_result["raw_response"]) if not_json else json.dumps(eval_result, ensure_ascii=False)
        )
        return instance_id, [], _unscored(report, index.items(instance_id))
    if not isinstance(eval_result, dict):
        ctx.problem(source, line, "'eval_result' should be an object (evaluate.py writes no other shape)")
        return None
    rows = _check_rows(ctx, source, line, eval_result, index.items(instance_id), report)
    if rows is None:
        return None
    if not rows and not report["extra_checks"]:
        report["status"] = ReportStatus.NO_CHECKS
        return instance_id, [], _unscored(report, index.items(instance_id))
    return instance_id, rows, report


def _report_of(value: dict) -> dict:
    """The judge report row of a result, before its status and counts are known."""
    reward, binary = value.get("reward"), value.get("binary_reward")
    number = (int, float)
    return {
        "status": ReportStatus.SCORED,
        "error": _text(value.get("error")) if "eval_result" not in value else "",
        "raw_reply": "",
        "unrecognised": {},
        "extra_checks": [],
        "n_applicable_extra": 0,
        "n_passed_extra": 0,
        "reward": float(reward) if isinstance(reward, number) and not isinstance(reward, bool) else None,
        "binary_reward": int(binary) if isinstance(binary, number) and not isinstance(binary, bool) else None,
    }


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _reads_as_error(eval_result: Any) -> bool:
    """Whether evaluate.py's `calculate_reward` gives this eval_result reward 0 as an error (`"error" in it`)."""
    return isinstance(eval_result, (dict, list, str)) and "error" in eval_result


def _unscored(report: dict, items: dict) -> dict:
    """An instance the judge did not score counts as every check of its checklist failed (reward 0)."""
    report["n_applicable_extra"] = max(len(items), 1)
    return report


def _check_rows(ctx, source, line, eval_result: dict, items: dict, report: dict) -> list[dict] | None:
    """Verdict rows of a scored eval_result; checks the checklist does not have go to the report's extras."""
    rows: list[dict] = []
    used: set[str] = set()
    ok = True
    for category, group in eval_result.items():
        checks = group.get("checks", []) if isinstance(group, dict) else None
        if checks in ("", {}):  # evaluate.py iterates them: no checks
            checks = []
        if not isinstance(checks, list):
            ctx.problem(source, line, f"eval_result category '{category}' has no 'checks' list")
            ok = False
            continue
        for check in checks:
            if not isinstance(check, dict):
                ctx.problem(source, line, f"eval_result category '{category}': a check should be an object")
                ok = False
                continue
            raw = check.get("result")
            passed = raw == PASSED_RESULT
            check_id = str(check["check_id"]) if isinstance(check.get("check_id"), (str, int)) else ""
            reasoning = check.get("reasoning")
            reasoning = reasoning if type(reasoning) is str else _text(reasoning)
            if check_id not in items or check_id in used:
                why = "no check id" if not check_id else "repeated" if check_id in used else "not in the checklist"
                report["extra_checks"].append(
                    {"check_id": check_id, "category": str(category), "result": raw, "reasoning": reasoning, "why": why}
                )
                report["n_applicable_extra"] += 1
                report["n_passed_extra"] += passed
                continue
            used.add(check_id)
            if raw not in (PASSED_RESULT, FAILED_RESULT):
                report["unrecognised"][check_id] = raw
            evidence = None
            if "evidence" in check or "message_index" in check:
                evidence, reason = _evidence(check)
                if reason:
                    ctx.problem(source, line, f"check '{check_id}': {reason}")
                    ok = False
                    continue
            score = check.get("score")
            if overflows_float(score):
                ctx.problem(
                    source,
                    line,
                    f"check '{check_id}': score is out of range (a number of {len(str(abs(score)))} digits)",
                )
                ok = False
                continue
            rows.append(
                {
                    "item_id": items[check_id],
                    "result": VerdictResult.PASS if passed else VerdictResult.FAIL,
                    "reasoning": reasoning,
                    "score": float(score) if isinstance(score, (int, float)) else None,
                    "evidence": evidence,
                }
            )
    return rows if ok else None


def _evidence(check: dict) -> tuple[dict | None, str]:
    """A check's optional `evidence` (a main-thread message index, or {"thread", "message"}) or `message_index`,
    as {"thread": t, "message": i}; and the problem when it has the wrong type. Indices are not checked
    against the trajectory: it may be ingested later."""
    has_evidence, has_index = check.get("evidence") is not None, check.get("message_index") is not None
    if has_evidence and has_index:
        return None, "give either 'evidence' or 'message_index', not both"
    if not (has_evidence or has_index):
        return None, ""
    value = check["evidence"] if has_evidence else check["message_index"]
    name = "evidence" if has_evidence else "message_index"

    def index(v) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    if index(value):
        return {"thread": 0, "message": value}, ""
    if (
        has_evidence
        and isinstance(value, dict)
        and index(value.get("message"))
        and index(value.get("thread", 0))
        and set(value) <= {"thread", "message"}
    ):
        return {"thread": value.get("thread", 0), "message": value["message"]}, ""
    shapes = (
        'a message index (an integer >= 0) or {"thread": n, "message": i}'
        if has_evidence
        else "a message index (an integer >= 0)"
    )
    return None, f"'{name}' should be {shapes}, found {json.dumps(value, ensure_ascii=False)[:80]}"


def _write_scores(ctx: Context, run, judge, pending: list[tuple[int, list[dict], dict]]) -> None:
    ctx.release()
    if not pending:
        return
    attempts = attempt_ids_for(ctx, run, [instance_id for instance_id, _, _ in pending])
    rows, reports, unscored = [], [], []
    for instance_id, verdicts, report in pending:
        attempt_id = attempts.get(instance_id)
        for v in verdicts:  # rows of this batch only: completed in place
            v["attempt_id"], v["judge_id"] = attempt_id, judge.id
        rows.extend(verdicts)
        reports.append({**report, "attempt_id": attempt_id, "judge_id": judge.id})
        if report["status"] != ReportStatus.SCORED:
            unscored.append(attempt_id)
    # asked before the verdicts are written: they make the pairs judged
    fresh = ctx.known_unjudged({r["attempt_id"] for r in reports}, {judge.id})
    changed: set[tuple] = set()
    ctx.upsert(
        JudgeReport,
        reports,
        key=("attempt_id", "judge_id"),
        compare=REPORT_FIELDS,
        kind="judge reports",
        changed=changed,
        returning_ids=False,
        new=fresh,
    )
    if unscored and not ctx.failed:  # a result that is unscored now drops what the judge said before
        stale = Verdict.objects.filter(attempt_id__in=unscored, judge_id=judge.id)
        if removed := stale.delete()[1].get("runs.Verdict", 0):
            ctx.report.add("verdicts", "removed", removed)
            changed.update((a, judge.id) for a in unscored)
    ctx.touched_attempts.update(k[0] for k in changed if k[0] is not None)
    ctx.touched_judges.update(k[1] for k in changed if k[0] is not None)
    # last: their COPY runs behind while the next file is read (Context.copy_behind)
    verdicts_upsert(ctx, rows)
    ctx.judged_pairs.update((r["attempt_id"], judge.id) for r in reports)


#: the judge report fields an import compares with what is stored
REPORT_FIELDS = (
    "status",
    "error",
    "raw_reply",
    "reward",
    "binary_reward",
    "unrecognised",
    "extra_checks",
    "n_applicable_extra",
    "n_passed_extra",
)
