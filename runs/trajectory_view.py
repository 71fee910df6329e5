"""A stored trajectory shaped for display: threads, display units (tool results under their call), pages.

Used by the attempt page, the side-by-side comparison and shared attempts, so a
trajectory looks and pages the same everywhere. Only one page of one thread is shaped
into display units' text pieces; long parts are cut and loaded on demand.
"""
from __future__ import annotations

import json

from django.core.paginator import Page, Paginator

from runs.models import Trajectory

CUT = 2000  # characters of a message part shown before "show more"
PAGE = 40  # display units (a message, or an assistant turn with its tool results) per page


def attempt_threads(attempt_id: int) -> list[dict]:
    """The attempt's normalised threads (main first), or [] when no trajectory is stored."""
    threads = Trajectory.objects.filter(attempt_id=attempt_id).values_list("threads", flat=True).first()
    return threads or []


def thread_names(threads: list[dict]) -> list[str]:
    """The tab label of each thread ("main", "sub-agent 1", ...)."""
    return [(t.get("meta") or {}).get("thread", f"thread {n}") for n, t in enumerate(threads)]


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


def display_units(messages: list[dict]) -> list[dict]:
    """Display units: each message, with tool results folded under the call that asked for them."""
    results = {m.get("tool_call_id"): (n, m) for n, m in enumerate(messages) if m.get("role") == "tool" and m.get("tool_call_id")}
    shown_results: set[int] = set()
    units, turn = [], 0
    for n, m in enumerate(messages):
        if n in shown_results:
            continue
        role = str(m.get("role") or "unknown")
        content = str(m.get("content") or "")
        if role == "assistant":
            turn += 1
        calls = []
        for k, call in enumerate(m.get("tool_calls") or []):
            found = results.get(call.get("id"))
            result = None
            if found and found[0] > n:
                shown_results.add(found[0])
                result = {"index": found[0], **text_piece(str(found[1].get("content") or "")), "error": bool(found[1].get("is_error"))}
            calls.append({"k": k, "field": f"call:{k}", "name": call.get("name", ""), "args": text_piece(pretty(call.get("arguments"))), "result": result})
        haystack = " ".join([content, str(m.get("reasoning") or "")] + [c["args"]["text"] + (c["result"]["text"] if c["result"] else "") for c in calls]).lower()
        units.append({
            "index": n, "role": role, "turn": turn if role == "assistant" else None,
            "content": text_piece(content), "reasoning": text_piece(str(m["reasoning"])) if m.get("reasoning") else None,
            "calls": calls, "tool_name": m.get("tool_name", ""), "reminder": "<system-reminder>" in content,
            "haystack": haystack, "indices": [n] + [c["result"]["index"] for c in calls if c["result"]],
        })
    return units


def page_of(units: list[dict], message_index: int) -> int:
    """The page (1-based) holding a message index, directly or as a folded tool result; 1 when absent."""
    for n, unit in enumerate(units):
        if message_index in unit["indices"]:
            return n // PAGE + 1
    return 1


def thread_page(threads: list[dict], *, thread=None, q: str = "", page=None, at=None) -> dict:
    """One page of one thread (optionally only the units containing `q`; `at` opens the page of a message).

    {"threads": names, "thread_no", "q", "page": Page of display units, "tools": the thread's tools}
    """
    thread_no = clamp(thread, 0, len(threads) - 1) if threads else 0
    units = display_units(threads[thread_no].get("messages") or []) if threads else []
    q = (q or "").strip()
    if q:
        units = [u for u in units if q.lower() in u["haystack"]]
    at = str(at or "")
    page_no = page or (page_of(units, int(at)) if at.isdigit() else 1)
    current: Page = Paginator(units, PAGE).get_page(page_no)
    return {"threads": thread_names(threads), "thread_no": thread_no, "q": q, "page": current,
            "tools": threads[thread_no].get("tools", []) if threads else []}


def message_part(threads: list[dict], thread, msg, field: str) -> str:
    """The full text of one part of a message: "content", "reasoning" or "call:<k>" (a call's arguments).

    Raises LookupError when the thread, message or field does not exist.
    """
    try:
        message = threads[int(thread)]["messages"][int(msg)]
    except (TypeError, ValueError, IndexError) as exc:
        raise LookupError("no such message") from exc
    if field.startswith("call:") and field[5:].isdigit():
        calls = message.get("tool_calls") or []
        k = int(field[5:])
        return pretty(calls[k].get("arguments")) if k < len(calls) else ""
    if field in ("content", "reasoning"):
        return str(message.get(field) or "")
    raise LookupError("no such field")
