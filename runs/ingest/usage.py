"""Where an attempt's tokens and time went, read from what a harness logged (docs/metrics.md, "Tokens, time
and tool calls"; docs/formats.md says which field of each format).

Each figure is None when the source did not log it, never 0: a page says "not logged". Figures are
tallied while a file streams (a few numbers per attempt, whatever its size).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: the Attempt columns an import fills (and compares with what is stored)
USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "model_seconds",
    "wall_seconds",
    "model_calls",
    "tool_calls",
)


def _count(value: Any) -> int | None:
    """A token count as logged: a whole number of 0 or more, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        return None
    return float(value) if value != float("inf") else None


@dataclass
class Tokens:
    """One call's (or one model's) tokens: input counts every prompt token the model read, cached or not."""

    input: int
    output: int
    total: int


def tokens_of(usage: Any) -> Tokens | None:
    """The tokens of a usage object in any of the shapes harnesses log, or None when it holds no counts.

    - Anthropic Messages API (`input_tokens`, `output_tokens`, `cache_creation_input_tokens`,
      `cache_read_input_tokens`): input = the three input counts (Anthropic's `input_tokens` leaves out
      cached tokens), total = input + output.
    - Inspect AI's ModelUsage (`input_tokens`, `output_tokens`, `total_tokens`, `input_tokens_cache_write`,
      `input_tokens_cache_read`): input = the three input counts (its `input_tokens` leaves out cached
      ones too), total = its `total_tokens` (input + output when it is absent).
    - OpenAI (`prompt_tokens`, `completion_tokens`, `total_tokens`; mini-vela's README shape): input =
      `prompt_tokens` (cached tokens are part of it), total = `total_tokens` (else input + output).
    """
    if not isinstance(usage, dict):
        return None
    if "prompt_tokens" in usage or "completion_tokens" in usage:
        given_in, given_out = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
        cached = 0
    else:
        given_in, given_out = _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))
        cached = sum(
            _count(usage.get(k)) or 0
            for k in (
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
                "input_tokens_cache_write",
                "input_tokens_cache_read",
            )
        )
    if given_in is None or given_out is None:
        return None
    total = _count(usage.get("total_tokens"))
    input_tokens = given_in + cached
    return Tokens(input_tokens, given_out, total if total is not None else input_tokens + given_out)


def tool_calls_in(threads: list[dict] | None) -> int | None:
    """The tool calls an attempt's stored trajectory holds (every thread: main agent and sub-agents);
    None without a trajectory."""
    if threads is None:
        return None
    return sum(
        len(m.get("tool_calls") or ())
        for t in threads
        for m in t.get("messages") or ()
        if isinstance(m, dict) and m.get("role") == "assistant"
    )


@dataclass
class CallTally:
    """Model calls tallied one at a time (OctoBench's raw proxy log: one record per API call).

    A call logged twice (the same request and response again: the proxy writes some calls twice) counts
    once. Tokens are known only when every call logged its usage; the wall time is the span between the
    first and the last call's `request_time` (the proxy records when a call was sent, not when it ended),
    known once there are two calls."""

    calls: int = 0
    input: int = 0
    output: int = 0
    total: int = 0
    unlogged: int = 0
    first_ms: float | None = None
    last_ms: float | None = None
    seen: set[str] = field(default_factory=set)

    def add(self, key: str, usage: Any, request_time: Any) -> None:
        """One call (its identity `key`, its usage object, its request time in milliseconds)."""
        if key in self.seen:
            return
        self.seen.add(key)
        self.calls += 1
        tokens = tokens_of(usage)
        if tokens is None:
            self.unlogged += 1
        else:
            self.input += tokens.input
            self.output += tokens.output
            self.total += tokens.total
        at = _seconds(request_time)
        if at is not None:
            self.first_ms = at if self.first_ms is None else min(self.first_ms, at)
            self.last_ms = at if self.last_ms is None else max(self.last_ms, at)

    def figures(self) -> dict[str, Any]:
        """The attempt's usage columns (model time is not in a proxy log: None)."""
        logged = self.calls > 0 and self.unlogged == 0
        wall = (self.last_ms - self.first_ms) / 1000.0 if self.calls > 1 and self.first_ms is not None else None
        return {
            "input_tokens": self.input if logged else None,
            "output_tokens": self.output if logged else None,
            "total_tokens": self.total if logged else None,
            "model_seconds": None,
            "wall_seconds": wall,
            "model_calls": self.calls or None,
        }


#: the first inspect_ai release whose providers all leave cached tokens out of ModelUsage.input_tokens;
#: before it the OpenAI provider (and some others) counted cache reads in input_tokens as well
INSPECT_CACHE_APART = (0, 3, 184)


def release_of(version: Any) -> tuple[int, ...] | None:
    """A release string's leading numbers ("0.3.150", "0.3.184.dev3+g1a2b" -> (0, 3, 184)); None if it has none."""
    numbers = []
    for part in str(version or "").split("."):
        digits = part[: len(part) - len(part.lstrip("0123456789"))]
        if not digits:
            break
        numbers.append(int(digits))
        if len(digits) < len(part):
            break
    return tuple(numbers) or None


def inspect_tokens(usage: Any, writer: tuple[int, ...] | None) -> Tokens | None:
    """An Inspect AI ModelUsage's tokens as the inspect_ai release that wrote it (`writer`, from the log's
    eval.packages) meant them.

    From INSPECT_CACHE_APART on, `input_tokens` leaves cached tokens out: input = it plus the cache reads
    and writes (tokens_of). Before it (or when the log names no release) a provider may already have
    counted them in `input_tokens`: when `total_tokens` is input_tokens + output_tokens the cache counts are
    part of input_tokens and are not added again. Input is never more than the total."""
    tokens = tokens_of(usage)
    if tokens is None:
        return None
    given_in = _count(usage.get("input_tokens")) or 0
    total = _count(usage.get("total_tokens"))
    if writer is None or writer < INSPECT_CACHE_APART:
        if total is not None and total == given_in + tokens.output:
            return Tokens(given_in, tokens.output, total)
    if total is not None and tokens.input > total:  # a log whose counts disagree: the total bounds the input
        return Tokens(min(given_in, total), tokens.output, total)
    return tokens


def inspect_figures(sample: dict[str, Any], writer: tuple[int, ...] | None) -> dict[str, Any]:
    """An Inspect AI sample's usage: tokens from `model_usage` (summed over its models, counted as the
    release `writer` meant them: inspect_tokens), wall time `total_time`, model time the sum of its model
    events' `working_time` (inspect_ai times only calls that succeeded), model and tool calls the number of
    `model` and `tool` events (None when the sample logged no events)."""
    per_model = sample.get("model_usage") if isinstance(sample.get("model_usage"), dict) else {}
    counted = [t for t in (inspect_tokens(u, writer) for u in per_model.values()) if t is not None]
    events = sample.get("events") if isinstance(sample.get("events"), list) else None
    models = [e for e in events or () if isinstance(e, dict) and e.get("event") == "model"]
    tools = [e for e in events or () if isinstance(e, dict) and e.get("event") == "tool"]
    times = [s for s in (_seconds(e.get("working_time")) for e in models) if s is not None]
    return {
        "input_tokens": sum(t.input for t in counted) if counted else None,
        "output_tokens": sum(t.output for t in counted) if counted else None,
        "total_tokens": sum(t.total for t in counted) if counted else None,
        "model_seconds": sum(times) if times else None,
        "wall_seconds": _seconds(sample.get("total_time")),
        "model_calls": len(models) if events else None,
        "tool_calls": len(tools) if events else None,
    }
