"""What one record of any format may decode to, checked before it is decoded.

A JSON record's Python objects take far more memory than its text: 3 bytes of `[],` become a
list of about 80 bytes, so a few megabytes of brackets (a few kilobytes compressed) would take
gigabytes. Every reader (`base.iter_jsonl`, `base.iter_json_document`, an Inspect AI `.eval`
entry, a tool call's arguments in a trajectory) checks a record's text against these bounds
first, at C speed (`str.count` and one regular expression), and refuses it with the bound it
passes; nothing of it is decoded:

- its text, as Python holds it: `MAX_RECORD_BYTES` (`LARGE_RECORD_BYTES` for a trajectory's
  line), counting 2 bytes a character when the text has one beyond U+00FF and 4 beyond U+FFFF,
  and the strings a `\\u` escape widens the same way;
- its JSON values (objects, lists, keys, strings, numbers, booleans, nulls): `MAX_VALUES`;
- its nesting: `MAX_DEPTH` levels;
- its numbers: Python's integer digit limit (`sys.get_int_max_str_digits()`).

What a record weighs (`weight`: its text plus `VALUE_BYTES` per value) is added to the ingest's
`Context.held` while the reader hands it out. A format that keeps records until it writes them reads
with `keep=True`: they stay counted until it writes them (`Context.release`); for a reader whose
consumer keeps none, a record is let go when the next one is read. A reader refuses a record that
would take `Context.held` past `MAX_HELD_BYTES`.
"""

from __future__ import annotations

import codecs
import json
import math
import re
import sys
from typing import Any

#: the most text one record may be, as held in memory while it is decoded
MAX_RECORD_BYTES = 32 << 20
#: the same for a trajectory's line (`octobench-trajectories`): one attempt of 30,000 messages is about 100 MB
LARGE_RECORD_BYTES = 128 << 20
#: the most JSON values one record may hold
MAX_VALUES = 1_000_000
#: the deepest nesting of arrays and objects a record may have: deeper than any harness writes, and
#: shallow enough for every recursive step after parsing (cleaning, hashing, jsonb) to stay far from
#: Python's recursion limit
MAX_DEPTH = 200
#: about what one decoded value takes in memory (an empty list is 56 bytes and a slot in its parent 8;
#: a small dict over 200): the weight of a record's values beside its text
VALUE_BYTES = 100
#: the most weight of records read and not yet written an ingest holds (a batch is written before); the batch
#: whose COPY is still under way (runs.bulk.copies_behind) comes on top, at most BATCH_HELD_BYTES of it
MAX_HELD_BYTES = 160 << 20
#: the weight at which a format that writes in batches writes the one it holds
BATCH_HELD_BYTES = 48 << 20

#: a JSON string literal (the unrolled form: no backtracking per character)
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
#: a string literal, or a bracket outside one (to find where a value ends)
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
#: an escape of a character beyond U+00FF (the string that holds it takes 2 bytes a character, 4 for a surrogate)
_WIDE_ESCAPE = re.compile(r"\\u(?:0[1-9a-fA-F]|[1-9a-fA-F][0-9a-fA-F])[0-9a-fA-F]{2}")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}")
_DECODE_CHUNK = 1 << 20


#: a string literal (skipped), or a number Python's json writes where JSON has none: NaN, an infinity, or a
#: literal too large for a float
_CONSTANT = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|(?<![\w.])(-?Infinity|NaN|-?\d+(?:\.\d+)?[eE]\+?\d{3,})')


def constant_at(text: str, start: int = 0, end: int | None = None) -> int | None:
    """Where the first NaN, Infinity, -Infinity or out-of-range number outside a string is in
    `text[start:end]` (what a strict decoder refuses without saying where), or None."""
    end = len(text) if end is None else end
    for match in _CONSTANT.finditer(text, start, end):
        word = match.group(1)
        if word and (word[-1] in "yN" or math.isinf(float(word))):
            return match.start(1)
    return None


class Refused(Exception):
    """A record passes a bound: nothing of it is decoded. `reason` says which."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB" if n >= 2**20 else f"{n:,} bytes"


def too_deep_reason() -> str:
    return f"the JSON is nested too deeply (more than {MAX_DEPTH} levels)"


def digits_reason() -> str:
    return f"the JSON has a number of more than {sys.get_int_max_str_digits():,} digits"


def size_reason(size: int, limit: int) -> str:
    return (
        f"the record takes {_mib(size)} as decoded text; at most {_mib(limit)} are read per record "
        "(characters beyond U+00FF take 2 bytes each, beyond U+FFFF 4)"
    )


def _width(text: str, start: int = 0, end: int | None = None) -> int:
    """Bytes a character of `text[start:end]` takes in a Python string (1, 2 or 4)."""
    part = text if start == 0 and end is None else text[start:end]
    if part.isascii():
        return 1
    top = ord(max(part))
    return 1 if top <= 0xFF else 2 if top <= 0xFFFF else 4


def raw_size(raw: bytes, limit: int) -> int:
    """What UTF-8 `raw` takes once decoded (characters times their width), read in slices so that a
    line which would widen past `limit` is never decoded whole; at least `limit + 1` when it would.
    Raises UnicodeDecodeError as decoding would."""
    if raw.isascii() or len(raw) * 4 <= limit:
        return len(raw)  # never more than 4 bytes a character once decoded: checked after decoding
    chars, width, at = 0, 1, 0
    view = memoryview(raw)
    while at < len(raw):
        final = at + _DECODE_CHUNK >= len(raw)
        try:
            part, used = codecs.utf_8_decode(view[at : at + _DECODE_CHUNK], "strict", final)
        except UnicodeDecodeError as exc:
            raise UnicodeDecodeError("utf-8", raw, at + exc.start, at + exc.end, exc.reason) from None
        at += used
        chars += len(part)
        if not part.isascii():
            width = max(width, _width(part))
        if chars * width > limit:
            break
    return chars * width


def structure(text: str, start: int = 0, end: int | None = None) -> int:
    """Commas, colons and opening brackets in `text[start:end]`, strings included (what bounds its values)."""
    end = len(text) if end is None else end
    return (
        text.count(",", start, end)
        + text.count(":", start, end)
        + text.count("[", start, end)
        + text.count("{", start, end)
    )


def count_values(text: str, start: int = 0, end: int | None = None) -> int:
    """How many JSON values `text[start:end]` holds, keys included (more than MAX_VALUES: some number above it).

    Each value is the first of its container or follows a comma; each key is followed by a colon: so
    the commas, colons and opening brackets outside string literals, plus one, bound them."""
    upper = structure(text, start, end) + 1
    if upper <= MAX_VALUES:
        return upper  # counting inside strings too: a bound from above is enough
    return structure(_STRING.sub("", text[start:end])) + 1


def widened_bytes(text: str, start: int = 0, end: int | None = None) -> int:
    """Bytes the strings of `text[start:end]` take beyond their length because a `\\u` escape in them
    names a character beyond U+00FF (looked for only where it can matter: a large text)."""
    end = len(text) if end is None else end
    if not _WIDE_ESCAPE.search(text, start, end):
        return 0
    extra = 0
    for match in _STRING.finditer(text, start, end):
        if _WIDE_ESCAPE.search(text, match.start(), match.end()):
            width = 4 if _SURROGATE_ESCAPE.search(text, match.start(), match.end()) else 2
            extra += (match.end() - match.start()) * (width - 1)
    return extra


def value_end(text: str, start: int) -> int:
    """Where the JSON value starting at `start` ends (its text need not be valid); the end of `text`
    if it goes on past it, or once it has opened more than MAX_VALUES containers."""
    depth = opened = 0
    for match in _TOKEN.finditer(text, start):
        token = match.group()
        if token in "[{":
            depth += 1
            opened += 1
            if opened > MAX_VALUES:
                return len(text)
        elif token in "]}":
            depth -= 1
            if depth <= 0:
                return match.end()
        elif depth == 0:
            return match.end()  # a string at the top: the whole value
    return len(text)


def check(text: str, start: int = 0, end: int | None = None, *, limit: int = MAX_RECORD_BYTES) -> int:
    """Check the record `text[start:end]` against the bounds before decoding it; returns its weight.
    Raises Refused."""
    end = len(text) if end is None else end
    length = end - start
    size = length
    if length * 4 > limit:
        size = length * _width(text, start, end)
        if size > limit:
            raise Refused(size_reason(size, limit))
        size += widened_bytes(text, start, end)
        if size > limit:
            raise Refused(size_reason(size, limit))
    values = count_values(text, start, end)
    if values > MAX_VALUES:
        raise Refused(
            f"the record holds more than {MAX_VALUES:,} JSON values (objects, lists, keys, strings, "
            f"numbers); at most {MAX_VALUES:,} are read per record"
        )
    return size + VALUE_BYTES * values


def loads(text: str, *, limit: int = MAX_RECORD_BYTES, **options: Any) -> tuple[Any, int]:
    """`json.loads(text, **options)` within the bounds: (the value, its weight). Raises Refused for a
    bound (depth and digits included) and json.JSONDecodeError for text that is not JSON."""
    weight = check(text, limit=limit)
    try:
        value = json.loads(text, **options)
    except RecursionError:
        raise Refused(too_deep_reason()) from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # int(): more digits than Python converts
        raise Refused(digits_reason()) from None
    if may_be_deep(text, 0, len(text)) and too_deep(value):
        raise Refused(too_deep_reason())
    return value, weight


def may_be_deep(text: str, start: int, end: int) -> bool:
    """Whether a value's text has enough brackets to nest more than MAX_DEPTH deep (a quick necessary test)."""
    return text.count("{", start, end) + text.count("[", start, end) > MAX_DEPTH


def too_deep(value: Any) -> bool:
    """Whether arrays and objects nest more than MAX_DEPTH levels deep in `value` (iteratively)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False
