"""Stored trajectories: each thread's heading on `Trajectory`, each message a `TrajectoryMessage` row.

Why rows, not one JSON document per attempt: an agent's thread can hold 30,000 messages (100 MB).
As a document, every page of it parsed the whole document in the web process, and an import built
it as one JSON value (twice its size in memory, once as text and once as bytes) on top of the
parsed records. As rows keyed (attempt, thread, index), with the display unit each message belongs
to (`unit`, indexed), the attempt page reads one window of units, a jump finds a message's window
through the unique index, "show all" reads one message, and an import copies the rows in batches:
the same on PostgreSQL (COPY) and on the embedded SQLite. Chunks of N messages per row were the
other choice; they fix the window at import, and a jump or "show all" would read a whole chunk.

Writes: `trajectories_upsert` (every ingest format) and `trajectory_save` (one attempt, outside an
import); both replace the attempt's message rows and its search rows (`runs.search`). Reads of the
whole document (`stored_threads`) are for batch work (re-scoring, search rebuilds) and short
dialogues; pages read windows through `runs.trajectory_view`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.db import transaction

from runs import search
from runs.bulk import bulk_insert_rows
from runs.models import Trajectory, TrajectoryMessage
from runs.trajectory_view import TEXT_KEYS

_BATCH = 2000


# shape -----------------------------------------------------------------------------------
def units_of(messages: list[dict]) -> tuple[list[int], list[int | None]]:
    """The display unit and assistant turn of each message of a thread.

    A unit is a message with the tool results its calls asked for folded under it (a result folds
    under the first earlier call with its id and takes that call's unit); turns count assistant units.
    """
    results: dict[Any, int] = {}
    for n, m in enumerate(messages):
        if m.get("role") == "tool" and m.get("tool_call_id"):
            results[m.get("tool_call_id")] = n
    unit_of: list[int | None] = [None] * len(messages)
    turn_of: list[int | None] = [None] * len(messages)
    unit, turn = -1, 0
    for n, m in enumerate(messages):
        if unit_of[n] is not None:
            continue
        unit += 1
        unit_of[n] = unit
        if str(m.get("role") or "unknown") == "assistant":
            turn += 1
            turn_of[n] = turn
        for call in m.get("tool_calls") or []:
            found = results.get(call.get("id")) if isinstance(call, dict) else None
            if found is not None and found > n and unit_of[found] is None:
                unit_of[found] = unit
    return unit_of, turn_of  # type: ignore[return-value]


def thread_heads(threads: list[dict]) -> list[dict]:
    """Each thread without its messages, with its message and display-unit counts."""
    heads = []
    for thread in threads:
        messages = thread.get("messages") or []
        units, _ = units_of(messages)
        heads.append(
            {
                **{k: v for k, v in thread.items() if k != "messages"},
                "message_count": len(messages),
                "unit_count": (max(units) + 1) if units else 0,
            }
        )
    return heads


def message_rows(attempt_id: int, threads: list[dict]) -> Iterator[dict]:
    """The TrajectoryMessage rows of an attempt's threads, in order (they share the messages' text)."""
    for t, thread in enumerate(threads):
        messages = thread.get("messages") or []
        units, turns = units_of(messages)
        for n, m in enumerate(messages):
            texts = {k: m[k] if isinstance(m.get(k), str) else None for k in TEXT_KEYS}
            yield {
                "attempt_id": attempt_id,
                "thread": t,
                "index": n,
                "unit": units[n],
                "turn": turns[n],
                "role": str(m.get("role") or "unknown"),
                **texts,
                "rest": {k: v for k, v in m.items() if texts.get(k) is None},
            }


def _document_chunks(threads: list[dict], *, item_sep: str, key_sep: str, **dumps) -> Iterator[str]:
    """json.dumps(threads, **dumps) with those separators, a message at a time."""
    yield "["
    for t, thread in enumerate(threads):
        yield item_sep if t else ""
        yield "{"
        keys = sorted(thread) if dumps.get("sort_keys") else list(thread)
        for k, key in enumerate(keys):
            yield (item_sep if k else "") + json.dumps(key, **dumps) + key_sep
            value = thread[key]
            if key == "messages" and isinstance(value, list):
                yield "["
                for n, message in enumerate(value):
                    yield (item_sep if n else "") + json.dumps(message, separators=(item_sep, key_sep), **dumps)
                yield "]"
            else:
                yield json.dumps(value, separators=(item_sep, key_sep), **dumps)
        yield "}"
    yield "]"


def document_digest(threads: list[dict]) -> tuple[str, int]:
    """(`runs.ingest.base.content_hash` of the threads, bytes of their JSON), computed a message at a
    time: a 100 MB trajectory is never one string."""
    digest = hashlib.sha256()
    for chunk in _document_chunks(threads, item_sep=",", key_sep=":", sort_keys=True, ensure_ascii=False, default=str):
        digest.update(chunk.encode("utf-8", "surrogatepass"))
    size = sum(
        len(chunk.encode("utf-8", "surrogatepass"))
        for chunk in _document_chunks(threads, item_sep=", ", key_sep=": ", ensure_ascii=False)
    )
    return digest.hexdigest(), size


# writes ----------------------------------------------------------------------------------
def _messages_replace(threads_by_attempt: dict[int, list[dict]]) -> None:
    """Replace these attempts' message rows by their threads' (in batches: the rows share the text)."""
    ids = sorted(threads_by_attempt)
    for start in range(0, len(ids), _BATCH):
        TrajectoryMessage.objects.filter(attempt_id__in=ids[start : start + _BATCH]).delete()
    batch: list[dict] = []
    for attempt_id in ids:
        for row in message_rows(attempt_id, threads_by_attempt[attempt_id]):
            batch.append(row)
            if len(batch) >= _BATCH:
                bulk_insert_rows(TrajectoryMessage, batch)
                batch = []
    bulk_insert_rows(TrajectoryMessage, batch)


def trajectory_head(attempt_id: int, threads: list[dict]) -> dict:
    """The Trajectory row of an attempt's threads: headings, counts, and the digest of the whole document."""
    digest, size = document_digest(threads)
    return {
        "attempt_id": attempt_id,
        "threads": thread_heads(threads),
        "message_count": sum(len(t.get("messages") or []) for t in threads),
        "size_bytes": size,
        "content_hash": digest,
    }


def trajectories_upsert(ctx, rows: Iterable[dict]) -> None:
    """What an ingest stores for trajectories (rows: {"attempt_id", "threads": the whole normalised
    threads}): the headings through `ctx.upsert` (created / updated / unchanged by content hash), and
    for the new and changed ones their message rows and search rows, in the ingest's transaction."""
    by_attempt = {row["attempt_id"]: row["threads"] for row in rows}
    changed: set[tuple] = set()
    ctx.upsert(
        Trajectory,
        [trajectory_head(a, threads) for a, threads in by_attempt.items()],
        key=("attempt_id",),
        compare=("content_hash",),
        kind="trajectories",
        changed=changed,
    )
    if ctx.failed:
        return
    written = {a: threads for a, threads in by_attempt.items() if (a,) in changed}
    if written:
        _messages_replace(written)
        search.trajectories_index(written)


@transaction.atomic
def trajectory_save(*, attempt_id: int, threads: list[dict]) -> Trajectory:
    """Store one attempt's whole trajectory outside an import (replacing what was stored)."""
    head = trajectory_head(attempt_id, threads)
    trajectory, _ = Trajectory.objects.update_or_create(attempt_id=attempt_id, defaults=head)
    _messages_replace({attempt_id: threads})
    search.trajectories_index({attempt_id: threads})
    return trajectory


__all__ = [
    "units_of",
    "thread_heads",
    "message_rows",
    "document_digest",
    "trajectory_head",
    "trajectories_upsert",
    "trajectory_save",
]
