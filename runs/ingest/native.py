"""The portal's own JSONL format, for any checklist-, dialogue- or conflict-scored benchmark (docs/formats.md).

One record per line, each with a "type": "benchmark", "instance", "run", "attempt" or
"verdict". A record may refer only to what an earlier line (of this command's files) defined
or what is already stored. Every field is checked for its type; unknown fields are refused
so a misspelt name never drops data silently. Records are validated as they stream and
written in batches (instances, then runs' attempts, then verdicts, so a batch only ever
refers backwards).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from runs.categories import normalise_category
from runs.ingest.base import INT_MAX, INT_MIN, Context, Source, content_hash, iter_jsonl, overflows_float
from runs.ingest.lookups import (
    attempt_ids_for,
    attempts_upsert,
    benchmark_lock_for_ingest,
    benchmark_name_check,
    file_items,
    judge_get_or_create,
    model_get_or_create,
)
from runs.ingest.options import option_ask
from runs.ingest.usage import USAGE_FIELDS, tool_calls_in
from runs.ingest.verdicts import verdicts_upsert
from runs.metrics import conflict as metrics
from runs.models import (
    Benchmark,
    BenchmarkKind,
    ChecklistItem,
    Instance,
    Judge,
    JudgeKind,
    Run,
    VerdictResult,
)
from runs.services import catalog_lock
from runs.trajectory_store import trajectories_upsert

BATCH = 2000  # records per write; measured: 10x fewer round trips than 200, same memory bound (BATCH_BYTES)
BATCH_BYTES = 16 << 20
TYPES = ("benchmark", "instance", "run", "attempt", "verdict")
RESULTS = (VerdictResult.PASS.value, VerdictResult.FAIL.value, VerdictResult.NOT_APPLICABLE.value)
_SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")

# field specs: name -> (kind, required, max length for text); kinds: str, int, bool, number,
# object, list, any. Optional fields may be null (meaning: the default).
Spec = dict[str, tuple[str, bool, int | None]]
BENCHMARK: Spec = {
    "type": ("str", True, None),
    "slug": ("str", True, 100),
    "name": ("str", False, 200),
    "kind": ("str", True, None),
    "version": ("str", False, 50),
    "description": ("str", False, None),
}
INSTANCE: Spec = {
    "type": ("str", True, None),
    "id": ("str", True, 300),
    "primary_category": ("str", False, 200),
    "scaffold": ("str", False, 100),
    "scaffold_version": ("str", False, 50),
    "spec": ("object", False, None),
    "items": ("list", True, None),
}
ITEM: Spec = {
    "key": ("str", True, 300),
    "category": ("str", False, 200),
    "check_type": ("str", False, 100),
    "description": ("str", False, None),
    "conditional": ("bool", False, None),
    "turn": ("int", False, None),
    "group": ("str", False, 100),
    "privilege": ("int", False, None),
    "details": ("object", False, None),
}
RUN: Spec = {
    "type": ("str", True, None),
    "label": ("str", True, 200),
    "model": ("str", True, 200),
    "repetition": ("int", False, None),
    "scaffold": ("str", False, 100),
    "settings": ("object", False, None),
}
ATTEMPT: Spec = {
    "type": ("str", True, None),
    "run": ("str", True, 200),
    "instance": ("str", True, 300),
    "response": ("str", False, None),
    "outcome": ("object", False, None),
    "assistant_turns": ("int", False, None),
    "threads": ("list", False, None),
    "usage": ("object", False, None),
}
#: an attempt's `usage` (docs/metrics.md, "Tokens, time and tool calls"): counts and seconds, each optional
USAGE: Spec = {
    "input_tokens": ("count", False, None),
    "output_tokens": ("count", False, None),
    "total_tokens": ("count", False, None),
    "model_seconds": ("seconds", False, None),
    "wall_seconds": ("seconds", False, None),
    "model_calls": ("calls", False, None),
    "tool_calls": ("calls", False, None),
}
VERDICT: Spec = {
    "type": ("str", True, None),
    "run": ("str", True, 200),
    "instance": ("str", True, 300),
    "item": ("str", True, 300),
    "judge": ("str", False, 200),
    "judge_kind": ("str", False, None),
    "result": ("str", True, None),
    "reasoning": ("str", False, None),
    "score": ("number", False, None),
    "evidence": ("any", False, None),
}
THREAD: Spec = {"meta": ("object", False, None), "tools": ("list", False, None), "messages": ("list", True, None)}
TOOL: Spec = {"name": ("str", True, None), "description": ("str", False, None)}
#: messages may carry other keys (kept as they are); these are checked
MESSAGE: Spec = {
    "role": ("str", True, None),
    "content": ("str", False, None),
    "reasoning": ("str", False, None),
    "tool_calls": ("list", False, None),
    "tool_call_id": ("str", False, None),
    "tool_name": ("str", False, None),
    "turn": ("int", False, None),
}
TOOL_CALL: Spec = {"id": ("str", True, None), "name": ("str", True, None), "arguments": ("any", False, None)}

_KIND_NAMES = {
    "str": "a string",
    "int": "an integer",
    "bool": "true or false",
    "number": "a number",
    "object": "an object",
    "list": "a list",
    "count": "a whole number of 0 or more",
    "calls": "a whole number from 0 to 2,147,483,647",
    "seconds": "a number of seconds, 0 or more",
}


def _is(kind: str, value: Any) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "list":
        return isinstance(value, list)
    if kind == "count":
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2**62
    if kind == "calls":
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT_MAX
    if kind == "seconds":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e15
    return True


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number"}.get(
        type(value), "a value"
    )


def check_fields(record: Any, spec: Spec, where: str = "", *, extra: bool = False) -> list[str]:
    """The reasons `record` does not fit `spec` (missing, wrong type, too long, unknown field)."""
    prefix = f"{where}." if where else ""
    if not isinstance(record, dict):
        return [f"{where or 'the record'} should be an object, found {_json_type(record)}"]
    reasons = []
    for name, (kind, required, max_len) in spec.items():
        value = record.get(name)
        if value is None:
            if required:
                reasons.append(f"missing required field '{prefix}{name}'")
            continue
        if not _is(kind, value):
            reasons.append(f"field '{prefix}{name}' should be {_KIND_NAMES[kind]}, found {_json_type(value)}")
        elif kind == "int" and not INT_MIN <= value <= INT_MAX:
            reasons.append(f"field '{prefix}{name}' is out of range ({str(value)[:30]})")
        elif kind == "number" and overflows_float(value):
            reasons.append(f"field '{prefix}{name}' is out of range (a number of {len(str(abs(value)))} digits)")
        elif kind == "str" and required and not value.strip():
            reasons.append(f"field '{prefix}{name}' is empty")
        elif max_len and len(value) > max_len:
            reasons.append(f"field '{prefix}{name}' is longer than {max_len} characters")
    if not extra:
        unknown = [k for k in record if k not in spec]
        if unknown:
            reasons.append(
                f"unknown field(s) {', '.join(repr(prefix + k) for k in unknown)}; allowed: {', '.join(spec)}"
            )
    return reasons


# state of one command -------------------------------------------------------------------
@dataclass
class _Defined:
    """What this command defined so far for one benchmark, and what is stored."""

    benchmark: Benchmark
    stored_instances: dict[str, int]
    instances: dict[str, tuple[str, frozenset[str]]] = field(default_factory=dict)
    stored_items: dict[int, frozenset[str]] = field(default_factory=dict)
    #: keys of stored items an audit created by rewriting another (no file defines them; re-imports keep them)
    stored_rewrites: dict[int, frozenset[str]] = field(default_factory=dict)
    runs: dict[str, tuple[str, Run | None]] = field(default_factory=dict)
    stored_runs: dict[str, Run | None] = field(default_factory=dict)
    attempts: dict[tuple[str, str], str] = field(default_factory=dict)
    verdicts: dict[tuple[str, str, str, str], str] = field(default_factory=dict)
    #: ids of instances and runs whose record was refused, with where (file name, line): records referring
    #: to them are not stored either, and are summarised once instead of each reported as unknown
    rejected: dict[tuple[str, str], tuple[str, int | None]] = field(default_factory=dict)
    _items_loaded: bool = False

    def item_keys(self, instance: str) -> frozenset[str] | None:
        """Keys a verdict on this instance may name: the file's definition (plus the audit rewrites a
        re-import keeps), else the stored items; None for an unknown instance."""
        pk = self.stored_instances.get(instance)
        if instance in self.instances:
            defined = self.instances[instance][1]
            return defined | self._stored(pk)[1] if pk is not None else defined
        if pk is None:
            return None
        return self._stored(pk)[0]

    def _stored(self, pk: int) -> tuple[frozenset[str], frozenset[str]]:
        """(every stored item key, the audit rewrites' keys) of a stored instance."""
        if not self._items_loaded:  # the whole benchmark's item keys in one query
            keys: dict[int, set[str]] = {}
            rewrites: dict[int, set[str]] = {}
            for iid, key, supersedes in (
                ChecklistItem.objects.filter(instance__benchmark=self.benchmark)
                .values_list("instance_id", "key", "supersedes_id")
                .iterator(chunk_size=20000)
            ):
                keys.setdefault(iid, set()).add(key)
                if supersedes is not None:
                    rewrites.setdefault(iid, set()).add(key)
            self.stored_items = {iid: frozenset(k) for iid, k in keys.items()}
            self.stored_rewrites = {iid: frozenset(k) for iid, k in rewrites.items()}
            self._items_loaded = True
        return self.stored_items.get(pk, frozenset()), self.stored_rewrites.get(pk, frozenset())

    def stored_file_keys(self, instance: str) -> frozenset[str]:
        """Keys of a stored instance's items that files define (not an audit's rewrites); none if not stored."""
        pk = self.stored_instances.get(instance)
        if pk is None:
            return frozenset()
        keys, rewrites = self._stored(pk)
        return keys - rewrites

    def run(self, label: str) -> tuple[bool, Run | None]:
        """(known, stored run or None) for a run label."""
        if label in self.runs:
            return True, self.runs[label][1]
        if label not in self.stored_runs:
            self.stored_runs[label] = Run.objects.filter(benchmark=self.benchmark, label=label).first()
        run = self.stored_runs[label]
        return run is not None, run


@dataclass
class _FollowOn:
    """The lines of one file that refer to a run or instance that was refused or that no line defines,
    reported as one problem at the end of the file (`_NativeIngest.summarise`), not each."""

    source: Source
    #: why the run or instance is missing, after its name ("refused at line 4")
    cause: str
    count: int = 0
    #: whether another import may store it (no line refused it): a retry after that import may pass
    awaits_import: bool = False


class _Awaiting(str):
    """A problem of a record that refers to what no line defines and nothing stores yet: another import may
    store it (Context.problem's awaits_import)."""


@dataclass
class _Batch:
    instances: list[tuple[Source, int, dict]] = field(default_factory=list)
    attempts: list[tuple[Run | None, dict]] = field(default_factory=list)
    verdicts: list[tuple[Run | None, dict]] = field(default_factory=list)
    records: int = 0
    start_bytes: int = 0
    #: bytes the records take beyond what was read from disk for them (a compressed log's entries)
    unpacked_bytes: int = 0


class _NativeIngest:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.benchmarks: dict[str, _Defined] = {}
        self.judge_kinds: dict[str, str] = {}
        self.judges: dict[str, Judge] = {}
        self.batch = _Batch()
        #: (kind, id) -> the file's lines that refer to it, while a file is read
        self.follow: dict[tuple[str, str], _FollowOn] = {}
        #: the latest line of the file that was refused without saying what it defines (not JSON, no known
        #: type, an id that is not a string): a run or instance nothing defines may have been on it
        self.unplaced: tuple[str, int] | None = None

    # reading ------------------------------------------------------------------------
    def read(self, source: Source) -> None:
        self.records((source, line, record) for line, record in iter_jsonl(source, self.ctx, keep=True))

    def records(self, stream: Iterable[tuple[Source, int | None, dict]]) -> None:
        """Check and store one file's records, in order: (where it is, line, record). Other formats
        (Inspect AI logs, lm-evaluation-harness samples) turn their files into this stream."""
        ctx = self.ctx
        current: _Defined | None = None
        if ctx.options.benchmark:
            current = self._stored_benchmark(ctx.options.benchmark)
        first = True
        told_no_benchmark = False
        self.follow, self.unplaced = {}, None
        previous = 0
        for source, line, record in stream:
            refused = ctx.last_problem_at
            if line and refused and refused[0] == source.name and refused[1] and refused[1] > previous:
                self.unplaced = refused  # the reader refused a line since the last record
            previous = line or previous
            kind = record.get("type")
            if kind not in TYPES:
                ctx.problem(source, line, _type_problem(record))
                self.unplaced = (source.name, line)
                first = False
                continue
            if kind == "benchmark":
                if not first:
                    ctx.problem(source, line, "a benchmark record must be the first record of its file")
                else:
                    current = self._benchmark(source, line, record) or current
                first = False
                continue
            first = False
            if current is None:
                if not told_no_benchmark:
                    missing = (
                        f"benchmark '{ctx.options.benchmark}' does not exist"
                        if ctx.options.benchmark
                        else "no benchmark"
                    )
                    ctx.problem(
                        source,
                        line,
                        f"{missing}: start the file with a benchmark record "
                        f"(or name a stored benchmark: {option_ask(ctx.options, 'benchmark')}); the records "
                        "after it are not checked",
                        awaits_import=bool(ctx.options.benchmark),
                    )
                    told_no_benchmark = True
                continue
            getattr(self, f"_{kind}")(source, line, record, current)
            self.batch.records += 1
            batch_bytes = ctx.done_bytes - self.batch.start_bytes + self.batch.unpacked_bytes
            if self.batch.records >= BATCH or batch_bytes >= BATCH_BYTES or ctx.batch_full:
                self.flush(current)
        if current is not None:
            self.flush(current)
        self.summarise()

    def summarise(self) -> None:
        """One problem per run or instance that lines of the file referred to in vain, with why it is missing
        (the lines themselves are counted as rejected where they are read, `_unknown`)."""
        ctx = self.ctx
        for (kind, name), follow in self.follow.items():
            if follow.count:
                rejected = ctx.report.rejected
                lines = "1 more line refers" if follow.count == 1 else f"{follow.count:,} more lines refer"
                ctx.problem(
                    follow.source,
                    None,
                    f"{lines} to {kind} '{name}', {follow.cause}",
                    awaits_import=follow.awaits_import,
                )
                ctx.report.rejected = rejected
        self.follow = {}

    def _where(self, source: Source, where: tuple[str, int | None]) -> str:
        """A line in words: "line 4" in the file being read, "other.jsonl:4" in another."""
        name, line = where
        return f"line {line}" if name == source.name else f"{name}:{line}"

    def _unknown(self, source: Source, key: tuple[str, str], defined: _Defined, reason: str) -> str | None:
        """The problem of a line's reference to a run or instance it cannot find (`reason`), or None when the
        line is counted in the file's summary of that reference instead (`summarise`): a refused record's
        followers, every reference after the first to one that no line defines, and all of them when a line
        refused earlier in the file may have been its record."""
        follow = self.follow.get(key)
        if follow is None:
            if key in defined.rejected:
                cause = f"refused at {self._where(source, defined.rejected[key])}"
            elif self.unplaced is not None:
                cause = (
                    f"which no earlier line defines ({self._where(source, self.unplaced)}, refused above, "
                    "may have been its record)"
                )
            else:
                self.follow[key] = _FollowOn(source, "which no earlier line defines", awaits_import=True)
                return _Awaiting(reason)
            follow = self.follow[key] = _FollowOn(source, cause)
        follow.count += 1
        return None

    def _stored_benchmark(self, slug: str) -> _Defined | None:
        if slug in self.benchmarks:
            return self.benchmarks[slug]
        benchmark = Benchmark.objects.filter(slug=slug).first()
        if benchmark is None:
            return None
        benchmark_lock_for_ingest(benchmark, self.ctx)  # before reading any of its rows
        return self._defined(benchmark)

    def _defined(self, benchmark: Benchmark) -> _Defined:
        if benchmark.slug not in self.benchmarks:
            stored = dict(Instance.objects.filter(benchmark=benchmark).values_list("external_id", "id"))
            self.benchmarks[benchmark.slug] = _Defined(benchmark, stored)
        return self.benchmarks[benchmark.slug]

    def _benchmark(self, source: Source, line: int, record: dict) -> _Defined | None:
        ctx = self.ctx
        reasons = check_fields(record, BENCHMARK)
        if not reasons and record["kind"] not in BenchmarkKind.values:
            reasons.append(f"field 'kind' should be one of {', '.join(BenchmarkKind.values)}, found {record['kind']!r}")
        slug = ctx.options.benchmark or record.get("slug")
        if not reasons and not _SLUG.match(slug):
            reasons.append(f"slug {slug!r} may hold only letters, digits, '-' and '_'")
        for reason in reasons:
            ctx.problem(source, line, reason)
        if reasons:
            return None
        values = {
            "name": ctx.options.name or record.get("name") or slug,
            "kind": record["kind"],
            "version": record.get("version") or "",
            "description": record.get("description") or "",
        }
        if not benchmark_name_check(ctx, slug, values["name"], source, line):
            return None
        benchmark = Benchmark.objects.filter(slug=slug).first()
        created = False
        if benchmark is None:
            catalog_lock(slug)  # as lookups.benchmark_get_or_create: two imports creating it wait for each other
            benchmark, created = Benchmark.objects.get_or_create(slug=slug, defaults=values)
        benchmark_lock_for_ingest(benchmark, ctx)  # before reading any of its rows
        if created:
            ctx.report.add("benchmarks", "created")
        elif benchmark.kind != values["kind"]:
            ctx.problem(
                source, line, f"benchmark '{slug}' is stored as a {benchmark.kind} benchmark, not {values['kind']}"
            )
            return None
        elif any(getattr(benchmark, k) != v for k, v in values.items()):
            for k, v in values.items():
                setattr(benchmark, k, v)
            if not ctx.failed:
                benchmark.save(update_fields=list(values))  # never data_generation: a stale copy would undo a bump
            ctx.report.add("benchmarks", "updated")
        else:
            ctx.report.add("benchmarks", "unchanged")
        return self._defined(benchmark)

    def _instance(self, source: Source, line: int, record: dict, defined: _Defined) -> None:
        ctx = self.ctx
        reasons = check_fields(record, INSTANCE)
        keys: list[str] = []
        for n, item in enumerate(record.get("items") or [] if isinstance(record.get("items"), list) else []):
            item_reasons = check_fields(item, ITEM, f"items[{n}]")
            if not item_reasons:
                if item["key"] in keys:
                    item_reasons.append(f"item key '{item['key']}' appears twice")
                turn = item.get("turn")
                if turn is not None and turn < 1:
                    item_reasons.append(f"field 'items[{n}].turn' should be 1 or more")
                keys.append(item["key"])
            reasons += item_reasons
        if not reasons and defined.benchmark.kind == BenchmarkKind.CONFLICT:  # docs/formats.md, conflict benchmarks
            reasons += metrics.conflict_problems(record.get("spec"))
            if metrics.ITEM_KEY not in keys:
                reasons.append(
                    f"a conflict instance needs an item with key '{metrics.ITEM_KEY}' (the judged side is a verdict on it)"
                )
        if not reasons and record["id"] in defined.instances:
            reasons.append(
                f"instance '{record['id']}' is defined twice (first at {defined.instances[record['id']][0]})"
            )
        for reason in reasons[:20]:
            ctx.problem(source, line, reason)
        if reasons:
            if isinstance(record.get("id"), str):
                defined.rejected[("instance", record["id"])] = (source.name, line)
            else:
                self.unplaced = (source.name, line)
            return
        defined.instances[record["id"]] = (f"{source.name}:{line}", frozenset(keys))
        self.batch.instances.append((source, line, record))

    def _run(self, source: Source, line: int, record: dict, defined: _Defined) -> None:
        ctx = self.ctx
        reasons = check_fields(record, RUN)
        if not reasons and record.get("repetition") is not None and record["repetition"] < 1:
            reasons.append("field 'repetition' should be 1 or more")
        if not reasons and record["label"] in defined.runs:
            reasons.append(f"run '{record['label']}' is defined twice (first at {defined.runs[record['label']][0]})")
        if not reasons:
            known, stored = defined.run(record["label"])
            if stored is not None and stored.model.name != record["model"]:
                reasons.append(
                    f"run '{record['label']}' belongs to model '{stored.model.name}', not '{record['model']}'"
                )
        for reason in reasons:
            ctx.problem(source, line, reason)
        if reasons:
            if isinstance(record.get("label"), str):
                defined.rejected[("run", record["label"])] = (source.name, line)
            else:
                self.unplaced = (source.name, line)
            return
        defined.runs[record["label"]] = (f"{source.name}:{line}", self._write_run(defined, record))

    def _write_run(self, defined: _Defined, record: dict) -> Run | None:
        """Runs are few: written at once (unless the ingest already failed), so attempts can refer to them."""
        ctx = self.ctx
        values = {
            "repetition": record.get("repetition") or 1,
            "scaffold": record.get("scaffold") or "",
            "settings": record.get("settings") or {},
        }
        _, run = defined.run(record["label"])
        if ctx.failed:
            ctx.report.add("runs", "created" if run is None else "unchanged")
            return run
        if run is None:
            model = model_get_or_create(record["model"])
            run = Run.objects.create(benchmark=defined.benchmark, model=model, label=record["label"], **values)
            ctx.report.add("runs", "created")
        elif any(getattr(run, k) != v for k, v in values.items()):
            for k, v in values.items():
                setattr(run, k, v)
            run.save(update_fields=list(values))
            ctx.report.add("runs", "updated")
        else:
            ctx.report.add("runs", "unchanged")
        ctx.touched_runs[run.id] = run
        return run

    def _references(self, source: Source, record: dict, defined: _Defined) -> tuple[list[str], bool, Run | None]:
        """(problems, whether it refers to a run or instance summarised at the end of the file, the run) of an
        attempt or verdict."""
        reasons, refused = [], False
        known, run = defined.run(record["run"])
        if not known:
            reason = self._unknown(
                source,
                ("run", record["run"]),
                defined,
                f"unknown run '{record['run']}': define it with a run record on an earlier line",
            )
            refused = reason is None
            reasons += [reason] if reason else []
        if defined.item_keys(record["instance"]) is None:
            reason = self._unknown(
                source,
                ("instance", record["instance"]),
                defined,
                f"unknown instance '{record['instance']}' of benchmark '{defined.benchmark.slug}': "
                "define it with an instance record on an earlier line",
            )
            refused = refused or reason is None
            reasons += [reason] if reason else []
        return reasons, refused, run

    def _attempt(self, source: Source, line: int, record: dict, defined: _Defined) -> None:
        ctx = self.ctx
        reasons = check_fields(record, ATTEMPT)
        run, refused = None, False
        if not reasons:
            more, refused, run = self._references(source, record, defined)
            reasons += more
        if not reasons and record.get("assistant_turns") is not None and record["assistant_turns"] < 0:
            reasons.append("field 'assistant_turns' should be 0 or more")
        if not reasons and record.get("threads") is not None:
            reasons += check_threads(record["threads"])
        if not reasons and record.get("usage") is not None:
            reasons += check_fields(record["usage"], USAGE, "usage")
        if not reasons:
            key = (record["run"], record["instance"])
            if key in defined.attempts:
                reasons.append(
                    f"attempt of run '{key[0]}' on instance '{key[1]}' appears twice (first at {defined.attempts[key]})"
                )
            defined.attempts[key] = f"{source.name}:{line}"
        for reason in reasons[:20]:
            ctx.problem(source, line, reason, awaits_import=isinstance(reason, _Awaiting))
        if refused and not reasons:
            ctx.report.rejected += 1  # its problem is its reference's, said once in the file's summary
        if not reasons and not refused:
            self.batch.attempts.append((run, record))

    def _verdict(self, source: Source, line: int, record: dict, defined: _Defined) -> None:
        ctx = self.ctx
        reasons = check_fields(record, VERDICT)
        run, refused = None, False
        judge = record.get("judge") if isinstance(record.get("judge"), str) else None
        judge = judge or ctx.options.judge
        if not reasons and not judge:
            reasons.append(f"missing required field 'judge' (or {option_ask(ctx.options, 'judge')})")
        if not reasons and record["result"] not in RESULTS:
            reasons.append(f"field 'result' should be pass, fail or na, found {record['result']!r}")
        kind = record.get("judge_kind")
        if not reasons and kind is not None and kind not in JudgeKind.values:
            reasons.append(f"field 'judge_kind' should be one of {', '.join(JudgeKind.values)}, found {kind!r}")
        if not reasons:
            kind, more = self._judge_kind(judge, kind)
            reasons += more
        if not reasons:
            more, refused, run = self._references(source, record, defined)
            reasons += more
        if not reasons and not refused:
            keys = defined.item_keys(record["instance"]) or frozenset()
            if record["item"] not in keys:
                reasons.append(f"unknown item '{record['item']}' of instance '{record['instance']}'")
        if not reasons and defined.benchmark.kind == BenchmarkKind.CONFLICT and record["item"] == metrics.ITEM_KEY:
            reasons += metrics.followed_problems(record.get("evidence"))
        if not reasons:
            key = (record["run"], record["instance"], record["item"], judge)
            if key in defined.verdicts:
                reasons.append(
                    f"verdict of judge '{judge}' on item '{record['item']}' of run '{record['run']}', "
                    f"instance '{record['instance']}' appears twice (first at {defined.verdicts[key]})"
                )
            defined.verdicts[key] = f"{source.name}:{line}"
        for reason in reasons:
            ctx.problem(source, line, reason, awaits_import=isinstance(reason, _Awaiting))
        if refused and not reasons:
            ctx.report.rejected += 1  # its problem is its reference's, said once in the file's summary
        if not reasons and not refused:
            self.batch.verdicts.append((run, {**record, "judge": judge, "judge_kind": kind}))

    def _judge_kind(self, name: str, kind: str | None) -> tuple[str, list[str]]:
        """The judge's kind: as stored or first given (default llm); a different explicit kind is a problem."""
        if name not in self.judge_kinds:
            stored = Judge.objects.filter(name=name).values_list("kind", flat=True).first()
            self.judge_kinds[name] = stored or kind or JudgeKind.LLM.value
        known = self.judge_kinds[name]
        if kind is not None and kind != known:
            return known, [f"judge '{name}' is a {known} judge, not {kind}"]
        return known, []

    # writing ------------------------------------------------------------------------
    def flush(self, defined: _Defined) -> None:
        batch, self.batch = self.batch, _Batch(start_bytes=self.ctx.done_bytes)
        self.ctx.release()
        if self.ctx.failed:
            return
        self._write_instances(defined, batch.instances)
        self._write_attempts(defined, batch.attempts)
        self._write_verdicts(defined, batch.verdicts)

    def _write_instances(self, defined: _Defined, records: list[tuple[Source, int, dict]]) -> None:
        if not records:
            return
        ctx, benchmark = self.ctx, defined.benchmark
        rows = [
            {
                "benchmark_id": benchmark.id,
                "external_id": r["id"],
                "primary_category": r.get("primary_category") or "",
                "scaffold": r.get("scaffold") or "",
                "scaffold_version": r.get("scaffold_version") or "",
                "spec": r.get("spec") or {},
                "content_hash": content_hash({k: v for k, v in r.items() if k != "type"}),
            }
            for _, _, r in records
        ]
        ids = ctx.upsert(
            Instance,
            rows,
            key=("benchmark_id", "external_id"),
            compare=("content_hash", "primary_category", "scaffold", "scaffold_version"),
            kind="instances",
        )
        items = []
        for _, _, r in records:
            instance_id = ids[(benchmark.id, r["id"])]
            defined.stored_instances[r["id"]] = instance_id
            defined.stored_items.pop(instance_id, None)
            for position, item in enumerate(r["items"], 1):
                category = item.get("category") or ""
                items.append(
                    {
                        "instance_id": instance_id,
                        "key": item["key"],
                        "position": position,
                        "category": normalise_category(category) if category else "",
                        "category_original": category,
                        "check_type": item.get("check_type") or "",
                        "group": item.get("group") or "",
                        "description": item.get("description") or "",
                        "conditional": bool(item.get("conditional")),
                        "turn": item.get("turn"),
                        "privilege": item.get("privilege"),
                        "details": item.get("details") or {},
                        "content_hash": content_hash([position, item]),
                    }
                )
        if items:
            ctx.upsert(
                ChecklistItem, items, key=("instance_id", "key"), compare=("content_hash",), kind="checklist items"
            )
        for source, line, r in records:
            keys = {item["key"] for item in r["items"]}
            dropped = file_items(instance_id=ids[(benchmark.id, r["id"])]).exclude(key__in=keys)
            judged = list(dropped.filter(verdicts__isnull=False).values_list("key", flat=True).distinct()[:5])
            if judged:
                ctx.problem(
                    source,
                    line,
                    f"items {', '.join(judged)} have verdicts and cannot be removed from instance '{r['id']}'",
                )
                continue
            ctx.report.add("checklist items", "removed", dropped.delete()[1].get("runs.ChecklistItem", 0))

    def _write_attempts(self, defined: _Defined, records: list[tuple[Run | None, dict]]) -> None:
        ctx = self.ctx
        by_run: dict[int, tuple[Run, list[dict]]] = {}
        for run, r in records:
            by_run.setdefault(run.id, (run, []))[1].append(r)
        for run, group in by_run.values():
            rows, trajectories = [], {}
            for r in group:
                instance_id = defined.stored_instances[r["instance"]]
                threads = normalised_threads(r["threads"]) if r.get("threads") is not None else None
                turns = r.get("assistant_turns")
                if turns is None and threads:
                    turns = sum(1 for m in threads[0]["messages"] if m.get("role") == "assistant")
                rows.append(
                    {
                        "instance_id": instance_id,
                        "response": r.get("response") or "",
                        "outcome": r.get("outcome") or {},
                        "assistant_turns": turns,
                        **attempt_usage(r.get("usage"), threads),
                    }
                )
                if threads is not None:
                    trajectories[instance_id] = threads
            ids = attempts_upsert(ctx, run, rows, compare=("response", "outcome", "assistant_turns", *USAGE_FIELDS))
            ctx.touched_runs[run.id] = run
            if trajectories:
                trajectories_upsert(
                    ctx,
                    [
                        {"attempt_id": ids[instance_id], "threads": threads}
                        for instance_id, threads in trajectories.items()
                    ],
                )

    def _write_verdicts(self, defined: _Defined, records: list[tuple[Run | None, dict]]) -> None:
        if not records:
            return
        ctx = self.ctx
        instance_ids = {defined.stored_instances[r["instance"]] for _, r in records}
        items = {
            (instance_id, key): pk
            for instance_id, key, pk in ChecklistItem.objects.filter(instance_id__in=instance_ids).values_list(
                "instance_id", "key", "id"
            )
        }
        by_run: dict[int, tuple[Run, list[dict]]] = {}
        for run, r in records:
            by_run.setdefault(run.id, (run, []))[1].append(r)
        rows = []
        for run, group in by_run.values():
            ctx.touched_runs[run.id] = run
            attempts = attempt_ids_for(ctx, run, [defined.stored_instances[r["instance"]] for r in group])
            for r in group:
                instance_id = defined.stored_instances[r["instance"]]
                rows.append(
                    {
                        "attempt_id": attempts[instance_id],
                        "item_id": items[(instance_id, r["item"])],
                        "judge_id": self._judge(r["judge"], r["judge_kind"]).id,
                        "result": r["result"],
                        "reasoning": r.get("reasoning") or "",
                        "score": float(r["score"]) if r.get("score") is not None else None,
                        "evidence": r.get("evidence"),
                    }
                )
        verdicts_upsert(ctx, rows)

    def _judge(self, name: str, kind: str) -> Judge:
        if name not in self.judges:
            self.judges[name] = judge_get_or_create(name, kind)
        return self.judges[name]


def check_threads(threads: list) -> list[str]:
    """Reasons the threads do not have the normalised shape ({meta, tools, messages} per thread)."""
    reasons: list[str] = []
    for t, thread in enumerate(threads):
        where = f"threads[{t}]"
        found = check_fields(thread, THREAD, where)
        if not found:
            for n, tool in enumerate(thread.get("tools") or []):
                found += check_fields(tool, TOOL, f"{where}.tools[{n}]", extra=True)
            for n, message in enumerate(thread["messages"]):
                here = f"{where}.messages[{n}]"
                message_reasons = check_fields(message, MESSAGE, here, extra=True)
                if not message_reasons:
                    for k, call in enumerate(message.get("tool_calls") or []):
                        message_reasons += check_fields(call, TOOL_CALL, f"{here}.tool_calls[{k}]", extra=True)
                found += message_reasons
                if len(found) >= 5:
                    break
        reasons += found
        if len(reasons) >= 5:
            break
    return reasons[:5]


def normalised_threads(threads: list[dict]) -> list[dict]:
    """The threads as stored: main agent first, meta.thread named, tools and content defaulted."""
    out = []
    for n, thread in enumerate(threads):
        meta = dict(thread.get("meta") or {})
        meta.setdefault("thread", "main" if n == 0 else f"sub-agent {n}")
        messages = [{**m, "content": m.get("content") or ""} for m in thread["messages"]]
        out.append({"meta": meta, "tools": list(thread.get("tools") or []), "messages": messages})
    return out


def _type_problem(record: dict) -> str:
    kind = record.get("type")
    if kind is None:
        hint = ""
        if "instance_id" in record or "checklist" in record:
            hint = " (this looks like an OctoBench instance: use octobench-instances)"
        elif "messages" in record or "request_body" in record:
            hint = " (this looks like a trajectory: use octobench-trajectories)"
        elif "turn" in record:
            hint = " (this looks like EvolIF: use evolif-dialogs or evolif-eval)"
        return f"missing required field 'type'{hint}"
    return f"field 'type' should be one of {', '.join(TYPES)}, found {json.dumps(kind, ensure_ascii=False)}"


def ingest_native(sources: Sequence[Source], ctx: Context) -> None:
    """The native JSONL: benchmark, instance, run, attempt and verdict records, in reference order."""
    native = _NativeIngest(ctx)
    for source in sources:
        native.read(source)


__all__ = ["ingest_native", "check_fields", "check_threads", "normalised_threads"]


def attempt_usage(usage: dict | None, threads: list[dict] | None) -> dict[str, Any]:
    """An attempt record's usage columns: what its `usage` gives (None for what it leaves out: not logged);
    the tool calls, when it does not give them, counted in its trajectory."""
    usage = usage or {}
    row = {name: usage.get(name) for name in USAGE_FIELDS}
    row["model_seconds"] = float(row["model_seconds"]) if row["model_seconds"] is not None else None
    row["wall_seconds"] = float(row["wall_seconds"]) if row["wall_seconds"] is not None else None
    if row["tool_calls"] is None:
        row["tool_calls"] = tool_calls_in(threads)
    return row
