"""Inspect AI eval logs (`.eval` and `.json`) as a checklist benchmark (docs/formats.md, "Inspect AI logs").

The log format is read directly (the `inspect_ai` package is not needed): a `.eval` file is a zip
archive with `header.json` (or, for a log still being written, `_journal/start.json`) and one
`samples/<id>_epoch_<n>.json` entry per sample; a `.json` file is the whole log as one document,
whose `samples` list is streamed one sample at a time. The format versions in `ACCEPTED_VERSIONS`
are read here; another version, or samples in inspect_ai's chunked shape, are read through the
optional inspect_ai package when it can (`read_with_inspect`), else refused saying why.

One log is one run of one model on one task; each epoch is a repetition (a run of its own, labelled
"<label> epoch <n>" when the task has more than one); each sample is an attempt on the instance of
its id. Each scorer is a judge; its value gives verdicts on checklist items (`runs.ingest.verdicts.score_verdict`),
unless it is a measure (numbers other than 0 and 1, without a pass threshold: `measured_scores`), kept per sample
and as the figures Inspect reports for each run (runs.models.ReportedFigure). A run's status, the samples it
planned and whether it was scored are kept in its settings; another evaluation (eval_id) is another run.
The samples become the portal's own records (runs.ingest.native), which check and store them.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import zstandard

from runs.ingest.base import Context, Source, clean, content_hash, iter_json_document, overflows_float
from runs.ingest.decode import MAX_RECORD_BYTES, Refused, loads, raw_size, size_reason
from runs.ingest.lookups import benchmark_name_for, category_of, slug_for
from runs.ingest.native import _NativeIngest
from runs.ingest.options import option_ask, option_name
from runs.ingest.usage import inspect_figures, release_of
from runs.ingest.verdicts import score_verdict
from runs.metrics.reported import figure_value, finite_mean
from runs.models import BenchmarkKind, Judge, JudgeKind, ReportedFigure, Run

#: log format versions read (EvalLog.version; 2 since inspect_ai 0.3.x, checked against 0.3.285)
ACCEPTED_VERSIONS = (2,)
SOURCE_LABEL = "Inspect AI log"
#: the item a scalar score (C/I/P/N, a number, a boolean) is a verdict on: every scorer's whole-answer verdict
ANSWER_ITEM = "answer"
#: the most one sample entry (or the header) of a `.eval` may hold uncompressed: it is read whole, then
#: checked against the bounds of every record (runs.ingest.decode) before it is decoded
MAX_SAMPLE_BYTES = MAX_HEADER_BYTES = MAX_RECORD_BYTES
#: runs.models.ReportedFigure.per_sample of a measure: the portal has its value per sample
PER_SAMPLE_VALUES = "values"
#: the metrics of a scorer that say how spread its values are, not what they are
SPREADS = ("stderr", "std", "var")
#: a tool result or argument longer than this is cut in the event list (the trajectory keeps it whole)
EVENT_TEXT = 300
ZSTD = 93  # the zip compression method of zstandard, which inspect_ai writes .eval entries with
_ATTACHMENT = "attachment://"
#: a sample entry as inspect_ai writes it whole, and an entry of a sample in its chunked shape
_MONOLITH = re.compile(r"^samples/[^/]+\.json$")
_CHUNKED = re.compile(r"^samples/[^/]+/sample\.json$")
_SUMMARIES = re.compile(r"^_journal/summaries/(\d+)\.json$")
SUMMARIES_JSON = "summaries.json"


class LogError(Exception):
    """Why a log (or a sample of it) cannot be read."""


# reading the files ----------------------------------------------------------------------
@dataclass
class Log:
    """The header of one log and where its samples are."""

    source: Source
    header: dict[str, Any]
    #: (where the sample is: the file, or "<file>:<entry>" in a .eval; its line in a .json; the sample;
    #: the bytes it holds beyond those read from disk: a .eval entry's compression)
    samples: Iterator[tuple[Source, int | None, Any, int]] = field(default_factory=lambda: iter(()))
    #: a .eval's sample summaries (each with the sample's scores), one at a time, and how many samples it holds:
    #: what measured_scores reads instead of the samples when there is one summary per sample
    summaries: Callable[[], Iterator[Any]] | None = None
    sample_count: int | None = None
    #: let go of the file when the samples are not read
    close: Callable[[], None] = lambda: None


def _unread(header: dict[str, Any]) -> str | None:
    """Why this module does not read a log of this header itself (another format version), or None."""
    version = header.get("version")
    if version in ACCEPTED_VERSIONS:
        return None
    accepted = ", ".join(map(str, ACCEPTED_VERSIONS))
    return f"log format version {version!r} is not one this portal reads itself (it reads version {accepted})"


def _check_eval(header: dict[str, Any]) -> None:
    if not isinstance(header.get("eval"), dict):
        raise LogError("the log has no 'eval' section (task, model, configuration): is this an Inspect AI log?")


def read_with_inspect(source: Source, ctx: Context, why: str) -> Log:
    """A log this module does not read itself (`why`: another format version, chunked samples), read through
    the optional inspect_ai package when it is installed and can read it; else refused, saying so."""
    try:
        package = importlib.import_module("inspect_ai.log")
    except ImportError:
        raise LogError(
            f"{why}; it is read through the optional inspect_ai package, which is not installed here: "
            "install it beside the portal (pip install inspect_ai), or convert the log with `inspect log convert` "
            "from an inspect_ai release that writes format version 2"
        ) from None
    release = getattr(importlib.import_module("inspect_ai"), "__version__", "?")
    try:
        header = package.read_eval_log(str(source.path), header_only=True).model_dump(
            mode="json", exclude_none=True, exclude={"samples"}
        )
    except Exception as exc:  # whatever inspect_ai raises on a log it cannot read
        raise LogError(f"{why}, and inspect_ai {release} could not read it either ({_said(exc, source)})") from None
    _check_eval(header)
    _file_hash(source, ctx)

    def samples() -> Iterator[tuple[Source, int | None, Any, int]]:
        read = 0
        try:
            for sample in package.read_eval_log_samples(str(source.path), all_samples_required=False):
                read += 1
                here = Source(source.path, f"{source.name}:samples/{sample.id}_epoch_{sample.epoch}")
                text = sample.model_dump_json(exclude_none=True).encode("utf-8")
                try:
                    value = _loads([text], "the sample", ctx)
                except LogError as exc:
                    ctx.problem(here, None, str(exc))
                    continue
                yield here, None, value, len(text)
        except Exception as exc:  # whatever inspect_ai raises on a sample it cannot read
            ctx.problem(source, None, f"inspect_ai {release} could not read its samples ({_said(exc, source)})")
            return
        listed = (header["eval"].get("dataset") or {}).get("sample_ids") or []
        if not read and listed:  # inspect_ai passes over the samples it cannot find in the shape it reads
            ctx.problem(
                source,
                None,
                f"{why}, and inspect_ai {release} read none of the {len(listed)} samples the log lists either: "
                "import the log as `inspect eval` wrote it (one entry per sample), or install an inspect_ai "
                "release that reads this shape",
            )

    return Log(source, header, samples())


def _said(exc: Exception, source: Source) -> str:
    """What inspect_ai said, with the file named as the import names it (not where the server keeps it)."""
    return f"{type(exc).__name__}: {str(exc).replace(str(source.path), source.name)[:300]}"


def _loads(entry: list[bytes], what: str, ctx: Context) -> Any:
    """JSON as inspect_ai writes it: NaN and Infinity are allowed (an unscored sample's value is NaN).
    `entry` holds the entry's bytes, taken out of it once decoded to text; its record is checked against
    the bounds of runs.ingest.decode first, and counted as held until written (Context.hold)."""
    try:
        size = raw_size(entry[0], MAX_RECORD_BYTES)
        if size > MAX_RECORD_BYTES:
            raise LogError(f"{what}: {size_reason(size, MAX_RECORD_BYTES)}")
        text = entry.pop().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LogError(f"{what}: not valid UTF-8 (byte {exc.start + 1})") from None
    try:
        value, weight = loads(text)
        ctx.hold(weight)
        return value
    except Refused as exc:
        raise LogError(f"{what}: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise LogError(f"{what}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


def _entry_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """An entry's bytes, at most `limit` of them, checked against its CRC (a corrupt entry is refused)."""
    if info.file_size > limit:
        raise LogError(f"the entry is {info.file_size:,} bytes uncompressed; at most {limit:,} are read per entry")
    try:
        if info.compress_type != ZSTD:
            with archive.open(info) as handle:
                data = handle.read(limit + 1)
        else:
            data = _zstd_entry(archive, info, limit)
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError, ValueError, RuntimeError) as exc:
        raise LogError(f"the entry is corrupt ({exc})") from None
    if len(data) > limit:
        raise LogError(f"the entry holds more than {limit:,} bytes uncompressed (its header says {info.file_size:,})")
    if zlib.crc32(data) != info.CRC or len(data) != info.file_size:
        raise LogError("the entry is corrupt (its checksum or size does not match the archive's directory)")
    return data


def _zstd_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """A zstandard-compressed entry (Python's zipfile does not read them): its raw bytes after the local
    header, decompressed by at most `limit` bytes."""
    handle = archive.fp
    handle.seek(info.header_offset)
    local = handle.read(30)
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        raise LogError("the archive is corrupt (no entry header where its directory says)")
    name_len, extra_len = int.from_bytes(local[26:28], "little"), int.from_bytes(local[28:30], "little")
    handle.seek(info.header_offset + 30 + name_len + extra_len)
    raw = handle.read(info.compress_size)
    if len(raw) < info.compress_size:
        raise LogError("the archive ends inside the entry (the file is truncated)")
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(raw)
        return reader.read(limit + 1) if info.file_size else b""
    except zstandard.ZstdError as exc:
        raise LogError(f"the entry is corrupt ({exc})") from None


def _file_hash(source: Source, ctx: Context) -> None:
    digest = hashlib.sha256()
    with open(source.path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    ctx.source_hashes[source.name] = digest.hexdigest()


def read_eval(source: Source, ctx: Context) -> Log:
    """A `.eval` archive: its header now, its samples one entry at a time."""
    try:
        archive = zipfile.ZipFile(source.path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise LogError(
            f"not a complete .eval archive ({exc}): the file is truncated or is not an Inspect AI .eval log"
        ) from None
    _file_hash(source, ctx)
    names = {info.filename: info for info in archive.infolist()}
    info = names.get("header.json") or names.get("_journal/start.json")
    if info is None:
        archive.close()
        raise LogError("the archive has neither header.json nor _journal/start.json: is this an Inspect AI .eval log?")
    try:
        header = _loads([_entry_bytes(archive, info, MAX_HEADER_BYTES)], "the entry", ctx)
    except LogError as exc:
        archive.close()
        raise LogError(f"{info.filename}: {exc}") from None
    if not isinstance(header, dict):
        archive.close()
        raise LogError(f"{info.filename} is not a JSON object")
    if info.filename != "header.json":  # inspect_ai writes the header when the evaluation ends: until then it runs
        header.setdefault("status", "started")
    why = _unread(header)
    if why is None and any(_CHUNKED.match(name) for name in names):
        why = "its samples are in inspect_ai's chunked shape (samples/<id>_epoch_<n>/sample.json and sequences)"
    if why is not None:
        archive.close()
        return read_with_inspect(source, ctx, why)
    _check_eval(header)
    entries = [i for i in archive.infolist() if _MONOLITH.match(i.filename)]

    def samples() -> Iterator[tuple[Source, int | None, Any, int]]:
        with archive:
            for entry in entries:
                ctx.advance(entry.compress_size)
                here = Source(source.path, f"{source.name}:{entry.filename}")
                try:
                    sample = _loads([_entry_bytes(archive, entry, MAX_SAMPLE_BYTES)], "the entry", ctx)
                except LogError as exc:
                    ctx.problem(here, None, str(exc))
                    continue
                yield here, None, sample, entry.file_size - entry.compress_size

    def summaries() -> Iterator[Any]:
        """The summaries inspect_ai writes beside the samples: `_journal/summaries/<n>.json` as it goes, else
        `summaries.json` when it finishes (each a list of summaries, checked as an entry is)."""
        journal = sorted(
            (i for i in archive.infolist() if _SUMMARIES.match(i.filename)),
            key=lambda i: int(_SUMMARIES.match(i.filename).group(1)),
        )
        for info in journal or [names[n] for n in (SUMMARIES_JSON,) if n in names]:
            listed = _loads([_entry_bytes(archive, info, MAX_SAMPLE_BYTES)], "the entry", ctx)
            yield from listed if isinstance(listed, list) else ()

    return Log(source, header, samples(), summaries, len(entries), archive.close)


def read_json(source: Source, ctx: Context) -> Log | None:
    """A `.json` log: streamed (the header keys come before `samples` in every log inspect_ai writes)."""
    stream = iter_json_document(
        source,
        ctx,
        list_keys=("samples",),
        allow_constants=True,
        keep=True,
        extra_hint="a .json log is one JSON document",
    )
    header: dict[str, Any] = {}
    first_sample: tuple[int, Any] | None = None
    before = ctx.problem_count
    for key, line, value in stream:
        if key == "samples":
            first_sample = (line, value)
            break
        header[key] = value
    if ctx.problem_count > before:  # the document broke before its samples (the problem says where)
        return None
    why = _unread(header)
    if why is not None:
        return read_with_inspect(source, ctx, why)
    _check_eval(header)

    def samples() -> Iterator[tuple[Source, int | None, Any, int]]:
        if first_sample and first_sample[1] is not None:  # "samples": null is a log written without them
            yield source, first_sample[0], first_sample[1], 0
        for key, line, value in stream:
            if key == "samples" and value is not None:
                yield source, line, value, 0

    return Log(source, header, samples())


# turning a sample into records ----------------------------------------------------------------
def finite(value: Any) -> Any:
    """NaN and infinities (which inspect_ai writes) become null: no database JSON column takes them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def _resolve(value: Any, attachments: dict[str, str]) -> Any:
    """Put back the text inspect_ai moved to the sample's attachments ("attachment://<hash>")."""
    if isinstance(value, str):
        if value.startswith(_ATTACHMENT):
            return attachments.get(value[len(_ATTACHMENT) :], value)
        return value
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    return value


def _text(content: Any) -> tuple[str, str]:
    """(text, reasoning) of a message's content: a string or a list of content parts."""
    if isinstance(content, str):
        return content, ""
    texts, reasoning = [], []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            texts.append(str(part.get("text") or ""))
        elif kind == "reasoning":
            reasoning.append(
                str(
                    part.get("summary")
                    or part.get("reasoning")
                    or ("[redacted reasoning]" if part.get("redacted") else "")
                )
            )
        elif kind in ("image", "audio", "video", "document", "data"):
            texts.append(f"[{kind}]")
        elif kind:
            texts.append(f"[{kind}] {json.dumps(part, ensure_ascii=False)[:EVENT_TEXT]}")
    return "\n".join(t for t in texts if t), "\n".join(r for r in reasoning if r)


def thread_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """Inspect chat messages as the trajectory viewer's messages (tool calls paired with their results by id)."""
    out = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = str(message.get("role") or "unknown")
        text, reasoning = _text(message.get("content"))
        converted: dict[str, Any] = {"role": role, "content": text}
        if reasoning:
            converted["reasoning"] = reasoning
        if role == "assistant" and isinstance(message.get("tool_calls"), list):
            converted["tool_calls"] = [
                {
                    "id": str(call.get("id") or f"call_{len(out)}_{k}"),
                    "name": str(call.get("function") or ""),
                    "arguments": call.get("arguments"),
                }
                for k, call in enumerate(message["tool_calls"])
                if isinstance(call, dict)
            ]
        if role == "tool":
            if message.get("tool_call_id"):
                converted["tool_call_id"] = str(message["tool_call_id"])
            if message.get("function"):
                converted["tool_name"] = str(message["function"])
            error = message.get("error")
            if isinstance(error, dict) and error.get("message"):
                converted["content"] = (
                    f"{text}\n[tool error: {error.get('type') or 'error'}] {error['message']}".strip()
                )
        out.append(converted)
    return out


def _cut(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= EVENT_TEXT else text[:EVENT_TEXT] + "…"


def event_summary(event: dict[str, Any], attachments: dict[str, str] | None = None) -> dict[str, Any] | None:
    """What the attempt page lists of one event: its kind, when, and for model calls the tokens and
    time, for tool calls the function, arguments, result and time, for spans their name and type."""
    kind = event.get("event")
    if not isinstance(kind, str):
        return None
    row: dict[str, Any] = {"event": kind, "at": event.get("timestamp"), "span": event.get("span_id")}
    if kind == "model":
        output = event.get("output") if isinstance(event.get("output"), dict) else {}
        usage = output.get("usage") if isinstance(output.get("usage"), dict) else {}
        row.update(
            model=event.get("model"),
            input_tokens=usage.get("input_tokens"),
            output_tokens=usage.get("output_tokens"),
            total_tokens=usage.get("total_tokens"),
            seconds=event.get("working_time") or output.get("time"),
            cached=bool(event.get("cache")),
            error=_cut(event["error"]) if event.get("error") else None,
        )
    elif kind == "tool":
        error = event.get("error")
        row.update(
            function=event.get("function"),
            arguments=_cut(_resolve(event.get("arguments"), attachments or {})),
            result=_cut(_resolve(event.get("result"), attachments or {})),
            seconds=event.get("working_time"),
            agent=event.get("agent"),
            error=_cut(error.get("message") if isinstance(error, dict) else error) if error else None,
        )
    elif kind in ("span_begin", "span_end"):
        row.update(id=event.get("id"), name=event.get("name"), type=event.get("type"), parent=event.get("parent_id"))
    elif kind == "score":
        score = event.get("score") if isinstance(event.get("score"), dict) else {}
        row.update(
            scorer=event.get("scorer"), value=_cut(score.get("value")), intermediate=bool(event.get("intermediate"))
        )
    elif kind == "score_edit":
        edit = event.get("edit") if isinstance(event.get("edit"), dict) else {}
        row.update(scorer=event.get("score_name"), value=_cut(edit.get("value")), provenance=edit.get("provenance"))
    elif kind in ("error", "logger", "info", "approval", "sandbox", "input"):
        detail = (
            event.get("error") or event.get("message") or event.get("data") or event.get("cmd") or event.get("decision")
        )
        row["detail"] = _cut(detail) if detail is not None else None
    return {k: v for k, v in row.items() if v not in (None, "")}


class InspectIngest:
    """Turns logs into native records, sample by sample, and feeds them to the native ingest."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.native = _NativeIngest(ctx)
        #: (benchmark, instance id) -> (item keys, hash of the spec) of the instances this command defined
        #: (several logs of one task share them)
        self.defined: dict[tuple[str, str], tuple[frozenset[str], str]] = {}
        self.judge_kinds: dict[str, str] = {}
        #: (scorer, key) of the log being read whose values are measures (numbers), not verdicts
        self.measures: set[tuple[str, str]] = set()
        #: whether any sample of the log being read holds a score
        self.scored = True
        #: the inspect_ai release that wrote the log being read (eval.packages), which says how it counted tokens
        self.writer: tuple[int, ...] | None = None

    def read(self, source: Source) -> None:
        ctx = self.ctx
        reader = read_json if source.name.lower().endswith(".json") else read_eval
        try:
            log = reader(source, ctx)
        except LogError as exc:
            ctx.problem(source, None, str(exc))
            return
        if log is None:
            return
        results = log.header.get("results") if isinstance(log.header.get("results"), dict) else {}
        if ctx.options.pass_threshold is None or log.header.get("status") != "success":
            measures, self.scored = measured_scores(source, reader, ctx.options)
            self.measures = measures if ctx.options.pass_threshold is None else set()
        else:  # a finished log's results say whether it was scored
            self.measures, self.scored = set(), bool(results.get("scores"))
        self.native.records(self._records(log))

    def _records(self, log: Log) -> Iterator[tuple[Source, int | None, dict[str, Any]]]:
        ctx, source, header = self.ctx, log.source, log.header
        spec = header["eval"]
        task = str(spec.get("task_display_name") or spec.get("task") or "task")
        default_slug = slug_for(str(spec.get("task") or task))
        slug = ctx.options.benchmark or default_slug
        name = benchmark_name_for(slug, default_slug=default_slug, format_name=task[:150], given=ctx.options.name)
        yield (
            source,
            None,
            {
                "type": "benchmark",
                "slug": slug,
                "name": name[:200],
                "kind": BenchmarkKind.CHECKLIST,
                "version": str(spec.get("task_version") or "")[:50],
                "description": f"Imported from {SOURCE_LABEL}s of the task {task}.",
            },
        )
        model = ctx.options.model or str(spec.get("model") or "")
        if not model:
            ctx.problem(source, None, f"the log names no model (eval.model): {option_ask(ctx.options, 'model')}")
            return
        config = spec.get("config") if isinstance(spec.get("config"), dict) else {}
        epochs = config.get("epochs") if isinstance(config.get("epochs"), int) else 1
        threshold = ctx.options.pass_threshold
        packages = spec.get("packages") if isinstance(spec.get("packages"), dict) else {}
        self.writer = release_of(packages.get("inspect_ai"))
        eval_id = str(spec.get("eval_id") or "")
        label = self._label(source, slug, task, model, eval_id, epochs)
        if label is None:
            return
        status = str(header.get("status") or "")
        error = header.get("error") if isinstance(header.get("error"), dict) else {}
        settings = finite(
            {
                "source": SOURCE_LABEL,
                "task": task,
                "eval_id": spec.get("eval_id"),
                "run_id": spec.get("run_id"),
                "created": spec.get("created"),
                "log_version": header.get("version"),
                "status": status,
                "error": str(error.get("message") or "")[:2000] or None,
                "samples_planned": samples_planned(spec, config),
                "epochs": epochs,
                "pass_threshold": threshold,
                "inspect_ai": packages.get("inspect_ai"),
                "results": _reported(header.get("results")),
                "measures": sorted({measure_name(*pair) for pair in self.measures}),
                "scored": self.scored,
            }
        )
        runs: dict[int, str] = {}
        #: each run's measures, sample by sample (a number each: bounded by the samples, not their size)
        measured: dict[int, dict[str, list[float | None]]] = {}
        seen = 0
        for here, line, sample, unpacked in log.samples:
            # a batch of records is written when it holds BATCH_BYTES, counted uncompressed (bounded memory)
            self.native.batch.unpacked_bytes += unpacked
            records = self._sample(here, line, sample, slug, task, threshold)
            if records is None:
                continue
            seen += 1
            epoch = records[0]
            if epoch not in runs:
                runs[epoch] = f"{label} epoch {epoch}" if epochs > 1 or epoch > 1 else label
                yield (
                    source,
                    None,
                    {
                        "type": "run",
                        "label": runs[epoch],
                        "model": model,
                        "repetition": epoch,
                        "scaffold": ctx.options.scaffold or None,
                        "settings": {**settings, "epoch": epoch},
                    },
                )
            for record in records[1]:
                if record["type"] in ("attempt", "verdict"):
                    record["run"] = runs[epoch]
                if record["type"] == "attempt":
                    for measure, value in record["outcome"].get("measures", {}).items():
                        measured.setdefault(epoch, {}).setdefault(measure, []).append(value)
                yield here, line, record
        if not seen and not ctx.failed:
            ctx.problem(
                source,
                None,
                f"the log holds no samples (status: {header.get('status')}): "
                "was it written with log_samples off, or did the eval stop before any sample ended?",
            )
            return
        self._say(source, status, settings, seen, epochs)
        self._write_measures(slug, runs, measured, header.get("results"))

    def _say(self, source: Source, status: str, settings: dict, seen: int, epochs: int) -> None:
        """The import summary's note on a log that is not a finished, scored evaluation."""
        planned = settings["samples_planned"]
        of = f"{seen:,} of {planned * epochs:,}" if planned is not None else f"{seen:,}"
        if status != "success":
            cause = f" ({settings['error']})" if settings.get("error") else ""
            self.ctx.report.notes.append(
                f"{source.name}: the evaluation's status is '{status or 'unknown'}'{cause}; {of} samples were "
                "logged: its runs show that status and the samples done of those planned"
            )
        elif planned is not None and seen < planned * epochs:
            self.ctx.report.notes.append(
                f"{source.name}: {of} samples were logged: its runs show the samples done of those planned"
            )
        if not settings["scored"]:
            self.ctx.report.notes.append(
                f"{source.name}: the log holds no scores (it was written before `inspect score`?): its runs show "
                "'not scored' and have no verdicts; score it with `inspect score` and import it again"
            )

    def _write_measures(
        self, slug: str, runs: dict[int, str], measured: dict[int, dict[str, list[float | None]]], results: Any
    ) -> None:
        """Each run's measures as figures Inspect reports (runs.models.ReportedFigure): the log's own metrics of the
        scorer (its mean, and stderr when the scorer has it), beside the mean of the run's per-sample values."""
        defined = self.native.benchmarks.get(slug)
        reported = _reported(results)
        rows = []
        for epoch, label in runs.items():
            run = defined.runs.get(label, ("", None))[1] if defined is not None else None
            for scorer, key in sorted(self.measures):
                name = measure_name(scorer, key)
                metrics = reported.get(scorer if key == ANSWER_ITEM else key, {})
                aggregation = "mean" if "mean" in metrics else next((m for m in metrics if m not in SPREADS), "")
                value, value_text = figure_value(metrics.get(aggregation)) if aggregation else (None, "not reported")
                stderr, stderr_text = figure_value(metrics["stderr"]) if "stderr" in metrics else (None, "")
                mean = finite_mean(measured.get(epoch, {}).get(name, ()))
                rows.append(
                    {
                        "run_id": run.id if run is not None else None,
                        "name": name[:200],
                        "value": value,
                        "value_text": value_text,
                        "stderr": stderr,
                        "stderr_text": stderr_text,
                        "direction": "",
                        "aggregation": aggregation[:100],
                        "per_sample": PER_SAMPLE_VALUES,
                        "sample_mean": mean.mean,
                        "samples": mean.n,
                        "left_out": mean.left_out,
                        "source": SOURCE_LABEL,
                    }
                )
        if rows and not self.ctx.failed:
            self.ctx.upsert(
                ReportedFigure,
                rows,
                key=("run_id", "name"),
                compare=tuple(k for k in rows[0] if k not in ("run_id", "name")),
                kind="reported figures",
            )

    def _label(self, source: Source, slug: str, task: str, model: str, eval_id: str, epochs: int) -> str | None:
        """The label of this log's runs: --run, else the model. A stored run of that label from another
        evaluation (another eval_id) is not overwritten: without --run the log's runs are labelled with its
        eval_id as well; with it, the log is refused, naming --run."""
        ctx = self.ctx
        label = (ctx.options.run or model)[:180]
        first = f"{label} epoch 1" if epochs > 1 else label
        stored = Run.objects.filter(benchmark__slug=slug, label=first).values_list("settings", flat=True).first() or {}
        other = stored.get("eval_id") if isinstance(stored, dict) else None
        if not eval_id or not other or other == eval_id:
            return label
        if ctx.options.run:
            ctx.problem(
                source,
                None,
                f"the run '{first}' holds another evaluation of {task} (eval_id {other}) than this log "
                f"(eval_id {eval_id}): a run is updated in place only by a copy of its own evaluation; "
                f"give another {option_name(ctx.options, 'run')}, or leave it out to import the log as a run of "
                "its own",
            )
            return None
        return f"{model[:150]} (eval {eval_id[:24]})"

    def _sample(
        self, here: Source, line: int | None, sample: Any, slug: str, task: str, threshold: float | None
    ) -> tuple[int, list[dict]] | None:
        if not isinstance(sample, dict):
            self.ctx.problem(here, line, "a sample should be a JSON object")
            return None
        named = f"sample {str(sample.get('id'))[:100]!r} (epoch {str(sample.get('epoch'))[:20]}): "

        def problem(reason: str) -> None:
            self.ctx.problem(here, line, named + reason)

        reasons = []
        if not isinstance(sample.get("id"), (str, int)) or isinstance(sample.get("id"), bool):
            reasons.append("missing or bad field 'id' (a string or an integer)")
        if (
            not isinstance(sample.get("epoch"), int)
            or isinstance(sample.get("epoch"), bool)
            or sample.get("epoch", 0) < 1
        ):
            reasons.append("missing or bad field 'epoch' (1 or more)")
        if not isinstance(sample.get("messages", []), list):
            reasons.append("field 'messages' should be a list")
        if not isinstance(sample.get("events", []), list):
            reasons.append("field 'events' should be a list")
        scores = sample.get("scores") or {}
        if not isinstance(scores, dict):
            reasons.append("field 'scores' should be an object")
        for reason in reasons:
            problem(reason)
        if reasons:
            return None
        attachments = sample.get("attachments") if isinstance(sample.get("attachments"), dict) else {}
        instance = str(sample["id"])
        verdicts, score_details, measures = [], {}, {}
        for scorer, score in scores.items():
            if not isinstance(score, dict) or "value" not in score:
                problem(f"score '{scorer}' has no value")
                continue
            value, explanation = score["value"], str(_resolve(score.get("explanation") or "", attachments))
            history = score.get("history") if isinstance(score.get("history"), list) else []
            if history:
                edits = [h for h in history if isinstance(h, dict) and isinstance(h.get("provenance"), dict)]
                if edits:
                    who = edits[-1]["provenance"]
                    explanation = (
                        f"edited by {who.get('author') or 'someone'}"
                        f"{': ' + str(who['reason']) if who.get('reason') else ''}. {explanation}"
                    ).strip()
            pairs = list(value.items()) if isinstance(value, dict) else [(ANSWER_ITEM, value)]
            for item, item_value in pairs:
                if (str(scorer), str(item)) in self.measures:  # a measure, kept as Inspect reports it
                    measures[measure_name(str(scorer), str(item))] = measure_value(item_value)
                    continue
                found = score_verdict(str(item), item_value, threshold, explanation)
                if isinstance(found, str):
                    problem(f"scorer '{scorer}': {found}")
                    continue
                verdicts.append(
                    {
                        "type": "verdict",
                        "instance": instance,
                        "item": found.item,
                        "judge": str(scorer),
                        "judge_kind": self._judge_kind(str(scorer)),
                        "result": found.result,
                        "score": found.score,
                        "reasoning": found.reasoning,
                    }
                )
            score_details[str(scorer)] = finite(
                {"value": value, "answer": score.get("answer"), "history": history, "reason": score.get("reason")}
            )
        items = {v["item"] for v in verdicts}
        records = self._instance(problem, sample, instance, slug, task, items, attachments)
        messages = thread_messages(_resolve(sample.get("messages") or [], attachments))
        events = [
            e for e in (event_summary(e, attachments) for e in sample.get("events") or [] if isinstance(e, dict)) if e
        ]
        output = sample.get("output") if isinstance(sample.get("output"), dict) else {}
        response = output.get("completion") if isinstance(output.get("completion"), str) else ""
        if not response:
            response = next((m["content"] for m in reversed(messages) if m["role"] == "assistant"), "")
        error = sample.get("error")
        outcome = finite(
            {
                "source": SOURCE_LABEL,
                "epoch": sample["epoch"],
                "scores": score_details,
                "measures": measures,
                "events": events,
                "model_usage": sample.get("model_usage") or {},
                "total_time": sample.get("total_time"),
                "working_time": sample.get("working_time"),
                "invalidated": sample.get("invalidation"),
                "error": error.get("message") if isinstance(error, dict) else error,
                "pass_threshold": threshold,
            }
        )
        tools = _tools(sample.get("events") or [])
        main_ids = {
            m["id"] for m in sample.get("messages") or [] if isinstance(m, dict) and isinstance(m.get("id"), str)
        }
        threads = [
            {"meta": {"thread": "main"}, "tools": tools, "messages": messages},
            *subagent_threads(sample.get("events") or [], sample.get("events_data"), main_ids, attachments),
        ]
        attempt = {
            "type": "attempt",
            "instance": instance,
            "response": _resolve(response, attachments),
            "outcome": outcome,
            "threads": threads,
            "usage": {k: v for k, v in inspect_figures(sample, self.writer).items() if v is not None},
        }
        return sample["epoch"], clean(finite([*records, attempt, *verdicts]))

    def _instance(
        self,
        problem: Callable[[str], None],
        sample: dict,
        instance: str,
        slug: str,
        task: str,
        items: set[str],
        attachments: dict[str, str],
    ) -> list[dict]:
        """The instance record the first time this command meets the sample (with the stored items kept),
        none after; a sample of the same id with another input, or new score keys, is a problem."""
        spec = finite(
            {
                "input": _resolve(sample.get("input"), attachments),
                "target": sample.get("target"),
                "choices": sample.get("choices"),
                "metadata": sample.get("metadata") or {},
            }
        )
        digest = content_hash(spec)
        known = self.defined.get((slug, instance))
        if known is not None:
            if known[1] != digest:
                problem(
                    f"another input, target or metadata than the sample '{instance}' of an earlier log in this "
                    "import: logs of different tasks need a benchmark each (leave out "
                    f"{option_name(self.ctx.options, 'benchmark')})"
                )
            elif not items <= known[0]:
                problem(
                    f"score keys {', '.join(sorted(items - known[0]))} that an earlier sample of '{instance}' in "
                    "these logs did not have: import the logs one at a time"
                )
            return []
        defined = self.native.benchmarks.get(slug)
        stored = defined.stored_file_keys(instance) if defined else frozenset()
        keys = sorted(items | stored, key=lambda k: (k != ANSWER_ITEM, k))
        self.defined[(slug, instance)] = (frozenset(keys), digest)
        return [
            {
                "type": "instance",
                "id": instance[:300],
                "spec": spec,
                "primary_category": category_of(spec.get("metadata"), self.ctx.options.category_field, task),
                "items": [
                    {
                        "key": key[:300],
                        "category": (key.split(":")[0] if ":" in key else key)[:200],
                        "description": (
                            "Each scorer's verdict on the whole answer"
                            if key == ANSWER_ITEM
                            else f"The score key '{key}'"
                        ),
                    }
                    for key in keys
                ],
            }
        ]

    def _judge_kind(self, name: str) -> str:
        """A judge already stored keeps its kind; a scorer new to the portal is a verdict the harness logged."""
        if name not in self.judge_kinds:
            stored = Judge.objects.filter(name=name).values_list("kind", flat=True).first()
            self.judge_kinds[name] = stored or JudgeKind.LOGGED
        return self.judge_kinds[name]


def is_measure(value: Any) -> bool:
    """Whether a score value is a number other than 0 and 1 (a measure, not a pass/fail verdict)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and value not in (0, 1)


def measure_name(scorer: str, key: str) -> str:
    """A measure's name: its scorer's, and for a dict score's key "<scorer>/<key>"."""
    return scorer if key == ANSWER_ITEM else f"{scorer}/{key}"


def measure_value(value: Any) -> float | None:
    """A measure's value as kept: a finite number, else None (unscored: NaN, or not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or overflows_float(value):
        return None
    return float(value) if math.isfinite(value) else None


def measured_scores(
    source: Source, reader: Callable[[Source, Context], Log | None], options: Any
) -> tuple[set[tuple[str, str]], bool]:
    """(the (scorer, key) pairs of a log whose values include a number other than 0 and 1, whether any sample
    holds a score). Such a scorer is a measure in every sample (its 0s and 1s too), kept as Inspect reports
    it, not a verdict. Read once before the samples are stored, on a scratch context (the read that stores
    them reports any problem)."""
    scratch = Context(options)
    try:
        log = reader(source, scratch)
    except LogError:
        return set(), True
    if log is None:
        return set(), True
    if log.summaries is not None:  # a .eval: its summaries, when there is one per sample (a tenth of the work)
        try:
            summaries = _score_values(log.summaries(), scratch)
        except LogError:
            summaries = None
        if summaries is not None and summaries[2] == log.sample_count:
            log.close()
            return summaries[0], summaries[1]
    found, scored, _ = _score_values((sample for _, _, sample, _ in log.samples), scratch)
    return found, scored


def _score_values(samples: Iterator[Any], scratch: Context) -> tuple[set[tuple[str, str]], bool, int]:
    """(the (scorer, key) pairs with a number other than 0 and 1, whether any holds a score, how many were
    read) of samples or their summaries."""
    found: set[tuple[str, str]] = set()
    scored, n = False, 0
    for sample in samples:
        scratch.release()
        n += 1
        scores = sample.get("scores") if isinstance(sample, dict) else None
        scored = scored or bool(scores)
        for scorer, score in scores.items() if isinstance(scores, dict) else ():
            value = score.get("value") if isinstance(score, dict) else None
            pairs = value.items() if isinstance(value, dict) else [(ANSWER_ITEM, value)]
            found.update((str(scorer), str(key)) for key, v in pairs if is_measure(v))
    return found, scored, n


def samples_planned(spec: dict[str, Any], config: dict[str, Any]) -> int | None:
    """The samples an evaluation set out to run per epoch: its dataset's sample ids (or count, cut by the
    `limit` it was given); None when the log does not say."""
    dataset = spec.get("dataset") if isinstance(spec.get("dataset"), dict) else {}
    if isinstance(dataset.get("sample_ids"), list):
        return len(dataset["sample_ids"])
    count = dataset.get("samples")
    if not isinstance(count, int) or isinstance(count, bool):
        return None
    limit = config.get("limit")
    if isinstance(limit, int) and not isinstance(limit, bool):
        return min(count, limit)
    if isinstance(limit, list) and len(limit) == 2 and all(isinstance(n, int) for n in limit):
        return max(0, min(count, limit[1]) - limit[0])
    return count


def subagent_threads(
    events: list[Any], events_data: Any, main_ids: set[str], attachments: dict[str, str]
) -> list[dict[str, Any]]:
    """A thread per sub-agent: the conversation of the last model call inside each `agent` span (its input,
    from the pool inspect_ai condenses inputs into, and its output). An agent whose last message is already
    in the sample's messages (the main agent, a handoff that shares the history) gets none."""
    spans: dict[str, tuple[Any, Any, Any]] = {}
    for event in events:
        if isinstance(event, dict) and event.get("event") == "span_begin" and isinstance(event.get("id"), str):
            spans[event["id"]] = (event.get("parent_id"), event.get("type"), event.get("name"))

    def agent_of(span: Any) -> str | None:
        for _ in range(len(spans) + 1):  # a parent chain longer than the spans is a cycle
            if not isinstance(span, str) or span not in spans:
                return None
            if spans[span][1] == "agent":
                return span
            span = spans[span][0]
        return None

    last: dict[str, dict[str, Any]] = {}
    for event in events:
        if isinstance(event, dict) and event.get("event") == "model":
            agent_span = agent_of(event.get("span_id"))
            if agent_span is not None:
                last[agent_span] = event
    pool = (
        events_data.get("messages")
        if isinstance(events_data, dict) and isinstance(events_data.get("messages"), list)
        else []
    )
    threads = []
    for span, event in last.items():
        output = event.get("output") if isinstance(event.get("output"), dict) else {}
        choices = output.get("choices") if isinstance(output.get("choices"), list) else []
        reply = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
        if isinstance(reply, dict) and isinstance(reply.get("id"), str) and reply["id"] in main_ids:
            continue
        given = list(event["input"]) if isinstance(event.get("input"), list) else []
        refs = event.get("input_refs") if isinstance(event.get("input_refs"), list) else []  # damaged: none
        if not given:
            for pair in refs:
                if isinstance(pair, list) and len(pair) == 2 and all(isinstance(n, int) for n in pair):
                    given += pool[max(pair[0], 0) : max(pair[1], 0)]
        messages = thread_messages(_resolve([*given, *([reply] if isinstance(reply, dict) else [])], attachments))
        threads.append(
            {
                "meta": {"thread": f"sub-agent {str(spans[span][2] or span)[:100]}", "span": span},
                "tools": _tools([event]),
                "messages": messages,
            }
        )
    return threads


def _tools(events: list[Any]) -> list[dict[str, str]]:
    """The tools offered in the sample's last model call (name and description)."""
    for event in reversed(events):
        if isinstance(event, dict) and event.get("event") == "model" and isinstance(event.get("tools"), list):
            return [
                {"name": str(t.get("name") or ""), "description": str(t.get("description") or "")}
                for t in event["tools"]
                if isinstance(t, dict)
            ]
    return []


def _reported(results: Any) -> dict[str, dict[str, float]]:
    """The log's own metrics, {score name: {metric: value}} (what Inspect reported for the run)."""
    if not isinstance(results, dict):
        return {}
    out: dict[str, dict[str, float]] = {}
    for score in results.get("scores") or []:
        if isinstance(score, dict) and isinstance(score.get("metrics"), dict):
            out[str(score.get("name"))] = {
                str(k): m.get("value") for k, m in score["metrics"].items() if isinstance(m, dict)
            }
    return out


def ingest_inspect(sources: Sequence[Source], ctx: Context) -> None:
    """Inspect AI eval logs, `.eval` or `.json`: one run per log and epoch, one attempt per sample."""
    reader = InspectIngest(ctx)
    for source in sources:
        reader.read(source)
