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

What cannot be scored per sample is kept as the harness reported it (runs.models.ReportedFigure, "reported by
the harness"), with no items: a metric the harness aggregates over the whole task (its config's
aggregation is not "mean": F1, MCC, BLEU, perplexity; per sample it logs the pair the aggregation takes),
and, without --pass-threshold, a numeric metric that is not 0/1 (MAE; its per-sample values stay on the
attempts, and their mean over the finite ones beside the figure). Every figure of the results file is
kept, with its stderr and its direction (the file's `higher_is_better`). Python's json writes NaN and
infinities as bare words, and the harness writes its files with it: they are read where it writes
them, stored as their words, and left out of means with a count (runs.metrics.reported).
A multiple-choice (loglikelihood) sample keeps its choices with their log-likelihoods, the one the
harness counts as picked and the target; its response is the picked choice.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from runs.ingest.base import Context, Source, clean, iter_json_document, iter_jsonl
from runs.ingest.lookups import benchmark_name_for, category_of, slug_for
from runs.ingest.native import _NativeIngest
from runs.ingest.options import option_ask
from runs.ingest.verdicts import ScoredVerdict, score_verdict
from runs.metrics.reported import (
    HIGHER,
    LOWER,
    Choice,
    figure_value,
    finite_mean,
    nonfinite_text,
    picked,
    storable,
)
from runs.models import BenchmarkKind, JudgeKind, ReportedFigure, VerdictResult

SOURCE_LABEL = "lm-evaluation-harness samples"
#: who computed a reported figure
HARNESS = "lm-evaluation-harness"
_RESULTS_NAME = re.compile(r"^results_(?P<time>\d{4}-\d{2}-\d{2}T[0-9.:\-]+)\.json$")
#: how a metric of a task is kept: verdicts on items per sample, per-sample values, or only the reported figure
VERDICTS, VALUES, REPORTED = "verdicts", "values", ""
#: which way a metric goes when its values disagree: one value no verdict can be makes it VALUES, one that is
#: not a number REPORTED
_PRECEDENCE = {VERDICTS: 0, VALUES: 1, REPORTED: 2}
#: the aggregation the harness registers for its built-in metrics that are not a mean over samples
#: (lm_eval/api/metrics.py `register_metric`), used when a task's config names none
REGISTERED_AGGREGATION = {
    "perplexity": "perplexity",
    "word_perplexity": "weighted_perplexity",
    "byte_perplexity": "weighted_perplexity",
    "bits_per_byte": "bits_per_byte",
    "mcc": "matthews_corrcoef",
    "f1": "f1",
    "bleu": "bleu",
    "chrf": "chrf",
    "ter": "ter",
    "bypass": "bypass",
}
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


def _section(results: dict[str, Any], name: str) -> dict[str, Any]:
    value = results.get(name)
    return value if isinstance(value, dict) else {}


def sampled_tasks(results: dict[str, Any]) -> list[str]:
    """The tasks of a results file that have samples files: its configured tasks (groups have none of their own)."""
    configs = _section(results, "configs")
    if configs:
        return sorted(configs)
    groups = {name for name, subtasks in _section(results, "group_subtasks").items() if subtasks}
    return sorted(task for task in _section(results, "results") if task not in groups)


def samples_names(results_name: str, results: dict[str, Any]) -> list[str]:
    """The samples files a results file names: samples_<task>_<its time>.jsonl per task (the harness writes
    them with the results file's time)."""
    found = _RESULTS_NAME.match(results_name.rsplit("/", 1)[-1])
    stamp = found["time"] if found else "<time>"
    return [f"samples_{task}_{stamp}.jsonl" for task in sampled_tasks(results)]


def aggregation_of(results: dict[str, Any], task: str, metric: str) -> str:
    """How the harness aggregates a task's metric over its samples ("mean", "f1", "bleu"...): the task config's
    `metric_list`, else the aggregation the harness registers for the metric; "" when neither says."""
    config = _section(results, "configs").get(task)
    metric_list = config.get("metric_list") if isinstance(config, dict) else None
    for entry in metric_list if isinstance(metric_list, list) else []:
        if isinstance(entry, dict) and entry.get("metric") == metric:
            aggregation = entry.get("aggregation")
            if isinstance(aggregation, str):
                return aggregation[:100]
    return REGISTERED_AGGREGATION.get(metric, "")


def direction_of(results: dict[str, Any], task: str, metric: str) -> str:
    """Which end of a metric is better, from the results file's higher_is_better ("" when it does not say)."""
    flags = _section(results, "higher_is_better").get(task)
    flag = flags.get(metric) if isinstance(flags, dict) else None
    return "" if not isinstance(flag, bool) else HIGHER if flag else LOWER


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


def _number(text: Any) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def choices_of(sample: dict[str, Any]) -> list[Choice] | None:
    """A loglikelihood sample's choices: per request (gen_args_<i>: context, continuation) the continuation
    and the (log-likelihood, is greedy) pair the harness logged for it in `resps` (as strings); None when
    the sample is not one (a generation's resps are text)."""
    arguments, resps = sample.get("arguments"), sample.get("resps")
    if not isinstance(arguments, dict) or not isinstance(resps, list) or len(resps) != len(arguments):
        return None
    choices = []
    for n, resp in enumerate(resps):
        request = arguments.get(f"gen_args_{n}")
        pair = resp[0] if isinstance(resp, list) and resp and isinstance(resp[0], list) else None
        if not isinstance(request, dict) or not isinstance(request.get("arg_1"), str) or not pair or len(pair) != 2:
            return None
        text = request["arg_1"]
        choices.append(
            Choice(
                text=text[1:] if text.startswith(" ") else text,  # the harness's target delimiter
                loglikelihood=_number(pair[0]),
                greedy={"True": True, "False": False}.get(str(pair[1])),
            )
        )
    return choices or None


def target_index(target: Any, choices: list[Choice]) -> int | None:
    """Which choice the target is: the harness writes the target's index (as text) or the choice itself."""
    text = str(target).strip()
    if text.isdigit() and int(text) < len(choices):
        return int(text)
    return next((n for n, c in enumerate(choices) if c.text.strip() == text), None)


def _metric_names(sample: dict[str, Any]) -> list[Any]:
    """The per-sample metrics a sample logs: its `metrics` list, else every key that is not bookkeeping."""
    names = sample.get("metrics")
    return names if isinstance(names, list) else [k for k in sample if k not in _BOOKKEEPING]


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


def metric_verdict(item: str, value: Any, threshold: float | None, direction: str) -> ScoredVerdict | str:
    """A per-sample value as a verdict (runs.ingest.verdicts.score_verdict), read in the metric's direction:
    with a threshold, a lower-is-better value passes at the threshold or below; an infinity passes or fails
    by the same comparison and has no score."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if number and threshold is not None and not (isinstance(value, float) and math.isnan(value)):
        if math.isinf(value) or direction == LOWER:
            passed = value <= threshold if direction == LOWER else value >= threshold
            score = None if math.isinf(value) else float(value)
            reasoning = f"the harness's value is {nonfinite_text(value)}" if score is None else ""
            return ScoredVerdict(item, VerdictResult.PASS if passed else VerdictResult.FAIL, score, reasoning)
    return score_verdict(item, value, threshold, "")


@dataclass
class _Task:
    """What is learnt of one task while its samples file is read."""

    name: str
    slug: str = ""
    label: str = ""
    #: "metric,filter" -> VERDICTS, VALUES or REPORTED: from every value (`_scan`), or with a threshold its first
    kinds: dict[str, str] = field(default_factory=dict)
    #: "metric,filter" -> its per-sample values (VALUES metrics)
    values: dict[str, list[Any]] = field(default_factory=dict)


class LmEvalIngest:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.native = _NativeIngest(ctx)
        self.results: dict[str, Any] = {}
        self.results_name = ""
        #: a results file that was given but refused (its problems say why)
        self.refused_results = ""
        #: the task of the samples file being read
        self.task = ""
        self.current = _Task("")

    def read_results(self, source: Source) -> None:
        before = self.ctx.problem_count
        found = {key: value for key, _, value in iter_json_document(source, self.ctx, keep=True, allow_constants=True)}
        if self.ctx.problem_count > before:
            self.refused_results = self.refused_results or source.name
            return
        if not found:
            return
        if not isinstance(found.get("results"), dict):
            self.refused_results = self.refused_results or source.name
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

    def no_samples(self) -> None:
        """A results file given alone: its figures are a run's only with the samples (they name the run's
        benchmark and documents), so it is refused, naming the samples files it needs."""
        if not self.results:
            return
        names = samples_names(self.results_name, self.results)
        shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        self.ctx.problem(
            self.results_name,
            None,
            f"no samples file was given: this results file names {len(names)} task(s) whose samples files are "
            f"missing ({shown or 'none'}); give them beside it (the harness writes them with --log_samples)",
        )

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
        self.current = _Task(task)
        self.task = task
        self.current.kinds = self._scan(source)
        self.native.records(self._records(source, task))
        self._write_figures(source)

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
        configs = _section(results, "configs")
        versions = _section(results, "versions")
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
            if self.refused_results:
                reason = (
                    f"not read: the results file {self.refused_results} given with it was refused (its problem is "
                    f"listed), and it names the model; fix it, or {option_ask(ctx.options, 'model')}"
                )
            else:
                reason = (
                    "no model: give the results file beside the samples (its model_name or "
                    f"model_args name the model), or {option_ask(ctx.options, 'model')}"
                )
            ctx.problem(source, None, reason)
            return
        label = ctx.options.run or model
        self.current.slug, self.current.label = slug, label[:200]
        numbers = reported(results, task)
        filters = sorted({k.split(",", 1)[1] for k in numbers})
        config = _section(results, "config")
        n_shot = _section(results, "n-shot").get(task)
        yield (
            source,
            None,
            {
                "type": "run",
                "label": label[:200],
                "model": model[:200],
                "repetition": ctx.options.repetition,
                "scaffold": ctx.options.scaffold or None,
                "settings": storable(
                    clean(
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
                            "output_type": (configs.get(task) or {}).get("output_type")
                            if isinstance(configs.get(task), dict)
                            else None,
                            "reported": numbers,
                            "pass_threshold": ctx.options.pass_threshold,
                            "generation_config": (configs.get(task) or {}).get("generation_kwargs")
                            if isinstance(configs.get(task), dict)
                            else None,
                        }
                    )
                ),
            },
        )
        seen: set[str] = set()
        for line, sample in iter_jsonl(source, ctx, keep=True, allow_constants=True):
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
        choices = choices_of(sample)
        outcome: dict[str, Any] = {
            "source": SOURCE_LABEL,
            "metrics": metrics,
            "filter": sample.get("filter"),
            "filtered_resps": sample.get("filtered_resps"),
            "target": sample.get("target"),
            "pass_threshold": self.ctx.options.pass_threshold,
        }
        response = _response(sample)
        if choices:
            chosen = picked(choices)
            outcome["choices"] = [
                {"text": c.text, "loglikelihood": c.loglikelihood, "greedy": c.greedy} for c in choices
            ]
            outcome["picked"] = chosen
            outcome["picked_norm"] = picked(choices, per_character=True)
            outcome["target_index"] = target_index(sample.get("target"), choices)
            response = choices[chosen].text if chosen is not None else ""
        messages = [
            {"role": "user", "content": prompt if isinstance(prompt, str) else str(prompt or "")},
            {"role": "assistant", "content": response},
        ]
        return {
            "type": "attempt",
            "instance": instance,
            "response": response,
            "outcome": storable(outcome),
            "threads": [{"meta": {"thread": "main"}, "messages": messages}],
        }

    def _spec(self, sample: dict[str, Any]) -> dict[str, Any]:
        return storable(
            {
                "doc": sample.get("doc"),
                "target": sample.get("target"),
                "prompt": _prompt(sample),
                "doc_hash": sample.get("doc_hash"),
            }
        )

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
                                "details": storable({"kwargs": kwargs[n] if n < len(kwargs) else None}),
                            }
                            for n, key in enumerate(keys)
                        ],
                    }
                )
            )
            records.append(clean(self._attempt(sample, instance)))
        for judge, field_name in IFEVAL_JUDGES.items():
            values = sample.get(field_name)
            if not isinstance(values, list) or len(values) != len(keys):
                self.ctx.problem(
                    source,
                    line,
                    f"field '{field_name}' should be a list of {len(keys)} true/false values, one per instruction id",
                )
                continue
            for key, value in zip(keys, values):
                if not isinstance(value, bool):
                    self.ctx.problem(source, line, f"field '{field_name}' holds {value!r}, not true or false")
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

    def _scan(self, source: Source) -> dict[str, str]:
        """How each metric of a samples file is kept, from all its values: the file is read once before it is
        stored (its problems are found then), so a metric whose first values are 0 and 1 and a later one 0.43
        (ROUGE) is VALUES from its first sample. Without a pass threshold only: with one, numbers are verdicts."""
        kinds: dict[str, str] = {}
        if self.ctx.options.pass_threshold is not None:
            return kinds
        scratch = Context(self.ctx.options)
        for _, sample in iter_jsonl(source, scratch, allow_constants=True):
            if is_ifeval(sample):
                continue
            flt = str(sample.get("filter") or "none")
            for metric in map(str, _metric_names(sample)):
                value = sample.get(metric)
                if value is None:
                    continue
                kind = self._kind(metric, value)
                figure = f"{metric},{flt}"
                kinds[figure] = max(kinds.get(figure, kind), kind, key=_PRECEDENCE.__getitem__)
        return kinds

    def _kind(self, metric: str, value: Any) -> str:
        """How a metric of the task is kept, by one of its values and its config's aggregation: a metric
        aggregated over the whole task, or whose values are not numbers, is REPORTED; a number that is not
        0/1 (or any value of a lower-is-better metric) without a pass threshold is VALUES; else VERDICTS."""
        aggregation = aggregation_of(self.results, self.task, metric)
        if aggregation not in ("", "mean") or not isinstance(value, (bool, int, float)):
            return REPORTED
        if isinstance(value, bool) or self.ctx.options.pass_threshold is not None:
            return VERDICTS
        if direction_of(self.results, self.task, metric) == LOWER or value not in (0, 1):
            return VALUES
        return VERDICTS

    def _metrics(
        self, source: Source, line: int, sample: dict[str, Any], instance: str, first: bool, filters: list[str]
    ) -> list[dict]:
        names = _metric_names(sample)
        flt = str(sample.get("filter") or "none")
        named = len(filters) > 1 or flt != "none"
        kinds = self.current.kinds

        def key(metric: str) -> str:
            return f"{metric},{flt}" if named else metric

        verdicts = []
        for metric in map(str, names):
            value = sample.get(metric)
            figure = f"{metric},{flt}"
            kind = kinds.setdefault(figure, self._kind(metric, value))
            if kind == VALUES:
                self.current.values.setdefault(figure, []).append(value)
                continue
            if kind != VERDICTS:
                continue
            direction = direction_of(self.results, self.task, metric)
            found = metric_verdict(key(metric), value, self.ctx.options.pass_threshold, direction)
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
                    **({"reasoning": found.reasoning} if found.reasoning else {}),
                }
            )
        records: list[dict] = []
        if first:
            # every filter's items at once: the harness writes a document's line for each filter
            scored = [m for m in map(str, names) if kinds.get(f"{m},{flt}") == VERDICTS]
            item_keys = sorted(
                {f"{m},{f}" for m in scored for f in filters} if named and filters else {key(m) for m in scored}
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

    def _write_figures(self, source: Source) -> None:
        """The task's figures as the results file reports them, on its run; the summary names those kept
        only as reported (no items scored per sample)."""
        ctx, task = self.ctx, self.current
        block = _section(self.results, "results").get(task.name)
        if not isinstance(block, dict) or not task.label:
            return
        defined = self.native.benchmarks.get(task.slug)
        run = defined.runs.get(task.label, ("", None))[1] if defined is not None else None
        rows, kept = [], []
        for name, raw in block.items():
            if "," not in name or "_stderr," in name:
                continue
            metric, flt = name.split(",", 1)
            value, value_text = figure_value(raw)
            stderr, stderr_text = figure_value(block.get(f"{metric}_stderr,{flt}"))
            per_sample = task.kinds.get(name, REPORTED)
            mean = finite_mean(task.values.get(name, ()))
            rows.append(
                {
                    "run_id": run.id if run is not None else None,
                    "name": name[:200],
                    "value": value,
                    "value_text": value_text,
                    "stderr": stderr,
                    "stderr_text": stderr_text,
                    "direction": direction_of(self.results, task.name, metric),
                    "aggregation": aggregation_of(self.results, task.name, metric),
                    "per_sample": per_sample,
                    "sample_mean": mean.mean,
                    "samples": mean.n,
                    "left_out": mean.left_out,
                    "source": HARNESS,
                }
            )
            if per_sample != VERDICTS:
                shown = value_text or f"{value:.4g}"
                why = "per-sample values, no pass/fail" if per_sample == VALUES else "computed over the whole task"
                left = f"; {mean.left_out} non-finite per-sample value(s) left out of the mean" if mean.left_out else ""
                kept.append(f"{name} = {shown} ({why}{left})")
        if kept:
            ctx.report.notes.append(f"{task.name}: kept as reported by the harness: " + "; ".join(kept))
        if run is None or ctx.failed:
            return
        ctx.upsert(
            ReportedFigure,
            rows,
            key=("run_id", "name"),
            compare=tuple(k for k in rows[0] if k not in ("run_id", "name")) if rows else (),
            kind="reported figures",
        )


def ingest_lm_eval(sources: Sequence[Source], ctx: Context) -> None:
    """lm-evaluation-harness results JSON and samples_<task>_<time>.jsonl files of one run."""
    reader = LmEvalIngest(ctx)
    for source in sources:
        if source.name.lower().endswith(".json"):
            reader.read_results(source)
    samples = [source for source in sources if not source.name.lower().endswith(".json")]
    if not samples:
        reader.no_samples()
    for source in samples:
        reader.read_samples(source)
