"""lm-evaluation-harness per-sample logs as a checklist benchmark (docs/formats.md, "lm-evaluation-harness").

The files are what `lm_eval --output_path DIR --log_samples` writes (lm_eval/loggers/evaluation_tracker.py):
`results_<time>.json` (the reported metrics, the model and its configuration) and one
`samples_<task>_<time>.jsonl` per task (one line per document and filter: doc_id, doc, target,
arguments, resps, filtered_resps, filter, metrics, doc/prompt/target hashes, and each per-sample
metric under its own name). Results files are read first, whatever order the files come in.

Each task is a benchmark, each doc an instance (its doc_id), each logged response an attempt of the
run named after the results file's model. IFEval (a sample with `inst_level_strict_acc` and the doc's
`instruction_id_list`): every instruction id is a checklist item, and the two lists are the verdicts
of two judges, "strict" and "loose", so ISR is the prompt-level accuracy and CSR the instruction-level
accuracy the harness reports. Other tasks: each per-sample metric that is a boolean or a number is
the verdict of judge "lm-eval" on the item named after the metric (with ",<filter>" when the task
has filters other than "none").
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from runs.ingest.base import Context, Source, clean, iter_json_document, iter_jsonl
from runs.ingest.lookups import benchmark_name_for, category_of, slug_for
from runs.ingest.native import _NativeIngest
from runs.ingest.options import option_ask
from runs.ingest.verdicts import score_verdict
from runs.models import BenchmarkKind, JudgeKind, VerdictResult

SOURCE_LABEL = "lm-evaluation-harness samples"
_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+?)_(?P<time>\d{4}-\d{2}-\d{2}T[0-9.:\-]+)\.jsonl$")
IFEVAL_JUDGES = {"strict": "inst_level_strict_acc", "loose": "inst_level_loose_acc"}
HARNESS_JUDGE = "lm-eval"
#: per-sample keys that are the harness's bookkeeping, not metrics
_BOOKKEEPING = {
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
}
_PRETRAINED = re.compile(r"(?:^|,)\s*(?:peft|delta|pretrained|model|path|engine)=([^,]+)")


def task_of(name: str) -> str | None:
    """The task name in a samples file's name (samples_<task>_<ISO time>.jsonl), or None."""
    found = _SAMPLES_NAME.match(name.rsplit("/", 1)[-1])
    return found["task"] if found else None


def model_of(results: dict[str, Any]) -> str:
    """The model a results file names: model_name, else the model_args' pretrained= (as the harness reads it)."""
    if isinstance(results.get("model_name"), str) and results["model_name"]:
        return results["model_name"]
    config = results.get("config") if isinstance(results.get("config"), dict) else {}
    args = config.get("model_args")
    if isinstance(args, str):
        found = _PRETRAINED.search(args)
        if found:
            return found[1].strip()
    return str(config.get("model") or "")


def reported(results: dict[str, Any], task: str) -> dict[str, Any]:
    """The harness's own numbers for a task, {"metric,filter": value} (no stderr, no alias)."""
    block = (results.get("results") or {}).get(task)
    if not isinstance(block, dict):
        return {}
    return {k: v for k, v in block.items() if "," in k and "_stderr" not in k}


def _response(sample: dict[str, Any]) -> str:
    resps = sample.get("resps")
    first = resps[0] if isinstance(resps, list) and resps else None
    first = first[0] if isinstance(first, list) and first else first
    return first if isinstance(first, str) else ""


def _prompt(sample: dict[str, Any]) -> Any:
    arguments = sample.get("arguments")
    if isinstance(arguments, dict):  # as saved: {"gen_args_0": {"arg_0": prompt, "arg_1": generation kwargs}}
        first = arguments.get("gen_args_0")
        return first.get("arg_0") if isinstance(first, dict) else None
    if isinstance(arguments, list) and arguments and isinstance(arguments[0], list) and arguments[0]:
        return arguments[0][0]
    return None


def is_ifeval(sample: dict[str, Any]) -> bool:
    doc = sample.get("doc")
    return (
        isinstance(sample.get(IFEVAL_JUDGES["strict"]), list)
        and isinstance(doc, dict)
        and isinstance(doc.get("instruction_id_list"), list)
    )


def ifeval_keys(instruction_ids: list[Any]) -> list[str]:
    """Item keys of a prompt's instructions: the instruction id, numbered when it appears twice."""
    keys, seen = [], {}
    for instruction in instruction_ids:
        name = str(instruction)
        seen[name] = seen.get(name, 0) + 1
        keys.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return keys


class LmEvalIngest:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.native = _NativeIngest(ctx)
        self.results: dict[str, Any] = {}
        self.results_name = ""
        #: the task of the samples file being read
        self.task = ""

    def read_results(self, source: Source) -> None:
        found = {key: value for key, _, value in iter_json_document(source, self.ctx, keep=True)}
        if not found:
            return
        if not isinstance(found.get("results"), dict):
            self.ctx.problem(
                source, None, "a results file has a 'results' object (the harness's results_<time>.json): is this one?"
            )
            return
        if self.results:
            self.ctx.problem(
                source,
                None,
                f"a second results file (the first was {self.results_name}): import one run's files at a time",
            )
            return
        self.results, self.results_name = found, source.name

    def read_samples(self, source: Source) -> None:
        task = task_of(source.name)
        if task is None:
            self.ctx.problem(
                source,
                None,
                "a samples file is named samples_<task>_<time>.jsonl, as the harness "
                "writes it (the task is read from the name)",
            )
            return
        self.native.records(self._records(source, task))

    def _records(self, source: Source, task: str) -> Iterator[tuple[Source, int | None, dict[str, Any]]]:
        ctx, results = self.ctx, self.results
        self.task = task
        if results and task not in (results.get("results") or {}):
            ctx.problem(
                source,
                None,
                f"the results file {self.results_name} has no task '{task}': are the files of the same run?",
            )
            return
        default_slug = slug_for(f"lm-eval-{task}")
        slug = ctx.options.benchmark or default_slug
        name = benchmark_name_for(slug, default_slug=default_slug, format_name=task[:150], given=ctx.options.name)
        configs = results.get("configs") if isinstance(results.get("configs"), dict) else {}
        versions = results.get("versions") if isinstance(results.get("versions"), dict) else {}
        yield (
            source,
            None,
            {
                "type": "benchmark",
                "slug": slug,
                "name": name[:200],
                "kind": BenchmarkKind.CHECKLIST,
                "version": str(versions.get(task) or "")[:50],
                "description": f"Imported from {SOURCE_LABEL} of the task {task}.",
            },
        )
        model = ctx.options.model or model_of(results)
        if not model:
            ctx.problem(
                source,
                None,
                "no model: give the results file beside the samples (its model_name or "
                f"model_args name the model), or {option_ask(ctx.options, 'model')}",
            )
            return
        label = ctx.options.run or model
        numbers = reported(results, task)
        filters = sorted({k.split(",", 1)[1] for k in numbers})
        config = results.get("config") if isinstance(results.get("config"), dict) else {}
        n_shot = (results.get("n-shot") or {}).get(task) if isinstance(results.get("n-shot"), dict) else None
        yield (
            source,
            None,
            {
                "type": "run",
                "label": label[:200],
                "model": model[:200],
                "repetition": ctx.options.repetition,
                "scaffold": ctx.options.scaffold or None,
                "settings": clean(
                    {
                        "source": SOURCE_LABEL,
                        "task": task,
                        "results_file": self.results_name or None,
                        "model_args": config.get("model_args"),
                        "gen_kwargs": config.get("gen_kwargs"),
                        "n_shot": n_shot,
                        "date": results.get("date"),
                        "lm_eval_version": results.get("lm_eval_version"),
                        "git_hash": results.get("git_hash"),
                        "task_version": versions.get(task),
                        "reported": numbers,
                        "pass_threshold": ctx.options.pass_threshold,
                        "generation_config": (configs.get(task) or {}).get("generation_kwargs")
                        if isinstance(configs.get(task), dict)
                        else None,
                    }
                ),
            },
        )
        seen: set[str] = set()
        for line, sample in iter_jsonl(source, ctx, keep=True):
            doc_id = sample.get("doc_id")
            if not isinstance(doc_id, (int, str)) or isinstance(doc_id, bool):
                ctx.problem(source, line, "missing or bad field 'doc_id' (the document's number)")
                continue
            instance = str(doc_id)
            first = instance not in seen
            seen.add(instance)
            records = (
                self._ifeval(source, line, sample, instance, first)
                if is_ifeval(sample)
                else self._metrics(source, line, sample, instance, first, filters)
            )
            for record in records:
                if record["type"] in ("attempt", "verdict"):
                    record["run"] = label[:200]
                yield source, line, record

    def _attempt(self, sample: dict[str, Any], instance: str) -> dict[str, Any]:
        metrics = {k: v for k, v in sample.items() if k not in _BOOKKEEPING}
        prompt = _prompt(sample)
        response = _response(sample)
        messages = [
            {"role": "user", "content": prompt if isinstance(prompt, str) else str(prompt or "")},
            {"role": "assistant", "content": response},
        ]
        return {
            "type": "attempt",
            "instance": instance,
            "response": response,
            "outcome": {
                "source": SOURCE_LABEL,
                "metrics": metrics,
                "filter": sample.get("filter"),
                "filtered_resps": sample.get("filtered_resps"),
                "target": sample.get("target"),
                "pass_threshold": self.ctx.options.pass_threshold,
            },
            "threads": [{"meta": {"thread": "main"}, "messages": messages}],
        }

    def _spec(self, sample: dict[str, Any]) -> dict[str, Any]:
        return {
            "doc": sample.get("doc"),
            "target": sample.get("target"),
            "prompt": _prompt(sample),
            "doc_hash": sample.get("doc_hash"),
        }

    def _ifeval(self, source: Source, line: int, sample: dict[str, Any], instance: str, first: bool) -> list[dict]:
        doc = sample["doc"]
        keys = ifeval_keys(doc["instruction_id_list"])
        kwargs = doc.get("kwargs") if isinstance(doc.get("kwargs"), list) else []
        records: list[dict] = []
        if first:
            records.append(
                clean(
                    {
                        "type": "instance",
                        "id": instance[:300],
                        "spec": self._spec(sample),
                        "primary_category": category_of(sample.get("doc"), self.ctx.options.category_field, self.task),
                        "items": [
                            {
                                "key": key[:300],
                                "category": key.split(":")[0][:200],
                                "check_type": key.split("#")[0][:100],
                                "description": key.split("#")[0],
                                "details": {"kwargs": kwargs[n] if n < len(kwargs) else None},
                            }
                            for n, key in enumerate(keys)
                        ],
                    }
                )
            )
            records.append(clean(self._attempt(sample, instance)))
        for judge, field in IFEVAL_JUDGES.items():
            values = sample.get(field)
            if not isinstance(values, list) or len(values) != len(keys):
                self.ctx.problem(
                    source,
                    line,
                    f"field '{field}' should be a list of {len(keys)} true/false values, one per instruction id",
                )
                continue
            for key, value in zip(keys, values):
                if not isinstance(value, bool):
                    self.ctx.problem(source, line, f"field '{field}' holds {value!r}, not true or false")
                    break
                records.append(
                    {
                        "type": "verdict",
                        "instance": instance,
                        "item": key[:300],
                        "judge": judge,
                        "judge_kind": JudgeKind.LOGGED,
                        "score": float(value),
                        "result": VerdictResult.PASS if value else VerdictResult.FAIL,
                    }
                )
        return records

    def _metrics(
        self, source: Source, line: int, sample: dict[str, Any], instance: str, first: bool, filters: list[str]
    ) -> list[dict]:
        names = (
            sample.get("metrics")
            if isinstance(sample.get("metrics"), list)
            else [k for k in sample if k not in _BOOKKEEPING]
        )
        flt = str(sample.get("filter") or "none")
        named = len(filters) > 1 or flt != "none"

        def key(metric: str) -> str:
            return f"{metric},{flt}" if named else metric

        verdicts = []
        for metric in map(str, names):
            value = sample.get(metric)
            if isinstance(value, (bool, int, float)):
                found = score_verdict(key(metric), value, self.ctx.options.pass_threshold, "")
                if isinstance(found, str):
                    self.ctx.problem(source, line, found)
                    continue
                verdicts.append(
                    {
                        "type": "verdict",
                        "instance": instance,
                        "item": found.item[:300],
                        "judge": HARNESS_JUDGE,
                        "judge_kind": JudgeKind.LOGGED,
                        "result": found.result,
                        "score": found.score,
                    }
                )
        records: list[dict] = []
        if first:
            # every filter's items at once: the harness writes a document's line for each filter
            item_keys = sorted(
                {f"{m},{f}" for m in map(str, names) for f in filters}
                if named and filters
                else {key(m) for m in map(str, names)}
            )
            records.append(
                clean(
                    {
                        "type": "instance",
                        "id": instance[:300],
                        "spec": self._spec(sample),
                        "primary_category": category_of(sample.get("doc"), self.ctx.options.category_field, self.task),
                        "items": [
                            {
                                "key": k[:300],
                                "category": k.split(",")[0][:200],
                                "description": f"the harness's per-sample {k}",
                            }
                            for k in item_keys
                        ],
                    }
                )
            )
            records.append(clean(self._attempt(sample, instance)))
        return records + verdicts


def ingest_lm_eval(sources: Sequence[Source], ctx: Context) -> None:
    """lm-evaluation-harness results JSON and samples_<task>_<time>.jsonl files of one run."""
    reader = LmEvalIngest(ctx)
    for source in sources:
        if source.name.lower().endswith(".json"):
            reader.read_results(source)
    for source in sources:
        if not source.name.lower().endswith(".json"):
            reader.read_samples(source)
