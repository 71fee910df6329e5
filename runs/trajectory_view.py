"""A stored trajectory shaped for display: threads, display units (tool results under their call), windows.

Used by the attempt page, the side-by-side comparison and shared attempts, so a trajectory looks
and pages the same everywhere. A request reads the threads' headings and one window of PAGE
display units of one thread from `TrajectoryMessage` rows (`runs.trajectory_store` writes them),
cut to CUT characters per part in the database: its memory does not grow with the thread. Long
parts are loaded on demand (`message_part`, one message).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from django.core.paginator import Page, Paginator
from django.db.models import Value
from django.db.models.functions import Length, StrIndex, Substr

from runs.models import Trajectory, TrajectoryMessage

CUT = 2000  # characters of a message part shown before "show more"
PAGE = 40  # display units (a message, or an assistant turn with its tool results) per window
#: message keys kept in their own text columns when they are text (the rest stay in `rest`)
TEXT_KEYS = ("content", "reasoning")
#: keys a thread's heading adds to the thread as imported
HEAD_KEYS = ("message_count", "unit_count")
REMINDER = "<system-reminder>"
#: messages whose units one query looks up (`matching_units`): under SQLite's and PostgreSQL's limits on a
#: statement's parameters
UNITS_BATCH = 5000


@dataclass(frozen=True)
class StoredThread:
    """One thread of an attempt's stored trajectory, without its messages."""

    attempt_id: int
    number: int
    name: str
    tools: list
    message_count: int
    unit_count: int


def attempt_threads(attempt_id: int) -> list[StoredThread]:
    """The attempt's threads (main first), or [] when no trajectory is stored: headings only, one query."""
    heads = Trajectory.objects.filter(attempt_id=attempt_id).values_list("threads", flat=True).first() or []
    return [
        StoredThread(
            attempt_id,
            n,
            (h.get("meta") or {}).get("thread", f"thread {n}"),
            h.get("tools") or [],
            h.get("message_count", 0),
            h.get("unit_count", 0),
        )
        for n, h in enumerate(heads)
    ]


def thread_names(threads: list[StoredThread]) -> list[str]:
    """The tab label of each thread ("main", "sub-agent 1", ...)."""
    return [t.name for t in threads]


def clamp(value, low: int, high: int) -> int:
    """An int from a query parameter, kept within [low, high]; low when it is not a number."""
    try:
        return max(low, min(high, int(value)))
    except (TypeError, ValueError):
        return low


def pretty(arguments) -> str:
    """A tool call's arguments as indented JSON (strings as they are)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, indent=2)


def text_piece(text: str) -> dict:
    """The first CUT characters of a long text, whether it was cut, and its full length."""
    return {"text": text[:CUT], "cut": len(text) > CUT, "size": len(text)}


# windows ---------------------------------------------------------------------------------
def _rows(thread: StoredThread):
    return TrajectoryMessage.objects.filter(attempt_id=thread.attempt_id, thread=thread.number)


def _piece(row: dict, key: str) -> dict:
    """A row's text part cut to CUT (cut by the database), or a non-text value of it as text."""
    if row[f"{key}_head"] is not None:
        return {"text": row[f"{key}_head"], "cut": row[f"{key}_size"] > CUT, "size": row[f"{key}_size"]}
    return text_piece(str(row["rest"].get(key) or ""))


def window_units(thread: StoredThread, units: list[int]) -> list[dict]:
    """The display units numbered `units` (ascending) of a thread: each message with the tool results
    it called folded under its calls; every text part cut to CUT characters."""
    if not units:
        return []
    rows = _rows(thread).filter(unit__gte=units[0], unit__lte=units[-1])
    if len(units) < units[-1] - units[0] + 1:  # a window of matches: not every unit in between
        rows = rows.filter(unit__in=units)
    texts = {f"{key}_head": Substr(key, 1, CUT) for key in TEXT_KEYS} | {
        f"{key}_size": Length(key) for key in TEXT_KEYS
    }
    by_unit: dict[int, list[dict]] = {}
    for row in rows.order_by("index").values(
        "index", "unit", "turn", "role", "rest", **texts, reminder=StrIndex("content", Value(REMINDER))
    ):
        by_unit.setdefault(row["unit"], []).append(row)
    out = []
    for unit in units:
        lead, *folded = by_unit.get(unit) or [None]
        if lead is None:
            continue
        results: dict = {}
        for row in folded:
            results.setdefault(row["rest"].get("tool_call_id"), row)
        message = lead["rest"]
        calls = []
        for k, call in enumerate(message.get("tool_calls") or []):
            found = results.pop(call.get("id"), None) if isinstance(call, dict) else None
            result = None
            if found is not None:
                result = {
                    "index": found["index"],
                    **_piece(found, "content"),
                    "error": bool(found["rest"].get("is_error")),
                }
            call = call if isinstance(call, dict) else {}
            calls.append(
                {
                    "k": k,
                    "field": f"call:{k}",
                    "name": call.get("name", ""),
                    "args": text_piece(pretty(call.get("arguments"))),
                    "result": result,
                }
            )
        has_reasoning = lead["reasoning_size"] if lead["reasoning_head"] is not None else message.get("reasoning")
        out.append(
            {
                "index": lead["index"],
                "role": lead["role"],
                "turn": lead["turn"],
                "content": _piece(lead, "content"),
                "reasoning": _piece(lead, "reasoning") if has_reasoning else None,
                "calls": calls,
                "tool_name": message.get("tool_name", ""),
                "reminder": bool(lead["reminder"]),
                "indices": [lead["index"]] + [c["result"]["index"] for c in calls if c["result"]],
            }
        )
    return out


class ThreadFind(Protocol):
    """A find in one thread (`runs.search.ThreadFind`, which reads the search index)."""

    def messages(self) -> list[int]:
        """The indexes of the messages found, ascending."""

    def snippets(self, messages: Iterable[int]) -> dict[int, list[tuple[str, bool]]]:
        """{message index: the text around its first match as (part, is_match) segments} of those found."""


def matching_units(thread: StoredThread, found: ThreadFind) -> list[int]:
    """The display units of a thread holding a message the find found, ascending; only unit numbers come back,
    looked up through the unique index a batch of messages at a time."""
    messages = found.messages()
    units: set[int] = set()
    for start in range(0, len(messages), UNITS_BATCH):
        units.update(
            _rows(thread).filter(index__in=messages[start : start + UNITS_BATCH]).values_list("unit", flat=True)
        )
    return sorted(units)


def unit_of(thread: StoredThread, message_index: int) -> int | None:
    """The display unit holding a message of the thread (directly or as a folded tool result), or None."""
    return _rows(thread).filter(index=message_index).values_list("unit", flat=True).first()


def thread_page(
    threads: list[StoredThread],
    *,
    thread=None,
    q: str = "",
    page=None,
    at=None,
    find: Callable[[StoredThread, str], ThreadFind] | None = None,
) -> dict:
    """One window of one thread (with `q`, only the units holding a message `find(thread, q)` finds, each unit with
    `found`: the text around each match; `at` opens the window of a message and marks it).

    {"threads": names, "thread_no", "thread": the StoredThread, "q", "at": the marked message index,
     "page": Page of display units, "tools": the thread's tools}
    """
    q = (q or "").strip()
    at = str(at or "")
    at_index = int(at) if at.isdigit() else None
    if not threads:
        return {
            "threads": [],
            "thread_no": 0,
            "thread": None,
            "q": q,
            "at": at_index,
            "page": Paginator([], PAGE).get_page(1),
            "tools": [],
        }
    current = threads[clamp(thread, 0, len(threads) - 1)]
    if q and find is None:
        raise TypeError("a find in a thread (q) needs `find`")
    found = find(current, q) if q and find else None
    units: Iterable[int] = matching_units(current, found) if found is not None else range(current.unit_count)
    paginator = Paginator(units, PAGE)
    page_no = page
    if not page_no and at_index is not None:
        unit = unit_of(current, at_index)
        position = None
        if unit is not None and q:
            found = bisect.bisect_left(units, unit)
            position = found if found < len(units) and units[found] == unit else None
        elif unit is not None:
            position = unit
        page_no = position // PAGE + 1 if position is not None else 1
    window: Page = paginator.get_page(page_no or 1)
    window.object_list = window_units(current, list(window.object_list))
    if found is not None:
        snippets = found.snippets(i for u in window.object_list for i in u["indices"])
        for u in window.object_list:
            u["found"] = [{"index": i, "segments": snippets[i]} for i in u["indices"] if i in snippets]
    return {
        "threads": thread_names(threads),
        "thread_no": current.number,
        "thread": current,
        "q": q,
        "at": at_index,
        "page": window,
        "tools": current.tools,
    }


def message_part(threads: list[StoredThread], thread, msg, field: str) -> str:
    """The full text of one part of a message: "content", "reasoning" or "call:<k>" (a call's arguments).

    Raises LookupError when the thread, message or field does not exist.
    """
    try:
        current = threads[int(thread)]
        index = int(msg)
    except (TypeError, ValueError, IndexError) as exc:
        raise LookupError("no such message") from exc
    row = _rows(current).filter(index=index).values("content", "reasoning", "rest").first() if index >= 0 else None
    if row is None:
        raise LookupError("no such message")
    message = message_of(row)
    if field.startswith("call:") and field[5:].isdigit():
        calls = message.get("tool_calls") or []
        k = int(field[5:])
        return pretty(calls[k].get("arguments")) if k < len(calls) and isinstance(calls[k], dict) else ""
    if field in TEXT_KEYS:
        return str(message.get(field) or "")
    raise LookupError("no such field")


# whole documents -------------------------------------------------------------------------
def message_of(row: dict) -> dict:
    """A stored message as imported, from its row's `rest` and text columns."""
    message = dict(row["rest"])
    for key in TEXT_KEYS:
        if row[key] is not None:
            message[key] = row[key]
    return message


def stored_threads_of(attempt_ids: Iterable[int]) -> dict[int, list[dict]]:
    """{attempt id: its whole threads (heading keys and "messages"), main first} for the attempts that
    have a trajectory. Holds every message in memory: for batch work and short dialogues, not windows."""
    out = {
        a: [{**{k: v for k, v in head.items() if k not in HEAD_KEYS}, "messages": []} for head in heads or []]
        for a, heads in Trajectory.objects.filter(attempt_id__in=list(attempt_ids)).values_list("attempt_id", "threads")
    }
    rows = (
        TrajectoryMessage.objects.filter(attempt_id__in=list(out))
        .order_by("attempt_id", "thread", "index")
        .values("attempt_id", "thread", "content", "reasoning", "rest")
    )
    for row in rows.iterator(chunk_size=2000):
        threads = out[row["attempt_id"]]
        if row["thread"] < len(threads):
            threads[row["thread"]]["messages"].append(message_of(row))
    return out


def stored_threads(attempt_id: int) -> list[dict]:
    """One attempt's whole threads ([] without a trajectory); see `stored_threads_of`."""
    return stored_threads_of([attempt_id]).get(attempt_id, [])
