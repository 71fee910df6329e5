"""Deterministic checkers for the nine EvolIF constraint families (paper Table 2).

Each checker takes the constraint's `args` exactly as the dialogue files store them and
one response, and says whether the response satisfies it and why. The semantics follow
what the EvolIF reference checkers effectively do when its evaluation script runs
(case-insensitive prefix/suffix after trimming whitespace and punctuation, Markdown code
fences unwrapped for the format check, exact counts for bullets and keywords, word
boundaries for one-word keywords), so the portal's verdicts can be compared with the
logged ones. Two deliberate differences, both named in the reason they give:
- sentences are counted by a rule-based splitter (the reference uses NLTK Punkt, which
  is not a dependency here), so "sentence" length checks can differ near abbreviations;
- XML with entity declarations is refused rather than expanded.
Emotion, reader age and style are judged by an LLM in EvolIF: `check_constraint`
returns None for them (and for ids it does not know), and their logged verdicts stand.
"""

from __future__ import annotations

import csv
import io
import json
import re
import string
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: constraint ids an LLM judges in EvolIF; the portal keeps their logged verdicts
LLM_JUDGED = frozenset({"emotion", "reader_age", "style"})


@dataclass(frozen=True)
class CheckResult:
    """A checker's verdict on one response and the reason, in words a reviewer can verify."""

    passed: bool
    reason: str


# EN + CN punctuation the reference trims before prefix/suffix checks (multi-char marks as their chars)
_PUNCTUATION = set(string.punctuation) | set("。，、？！：；（）【】「」『』《》〈〉——……·～—￥?!;()~")
_LEADING_INVISIBLE = re.compile(r"^[\s\ufeff\u00a0\u1680\u180e\u2000-\u200f\u2028\u2029\u202f\u205f\u2060\u3000]+")
_FENCE = re.compile(r"^```[\w.+-]*\s*\n(.*?)\n```\s*$", re.DOTALL)


def _value(args: Any, key: str, default: Any = None) -> Any:
    return args.get(key, default) if isinstance(args, dict) else default


# start with / end with ---------------------------------------------------------------
def check_startwith(args: Any, response: str) -> CheckResult:
    """The response begins with the letter, emoji, keyword or quotation (leading whitespace and punctuation ignored)."""
    mode = _value(args, "mode")
    text = response.lstrip("\ufeff\n\r\t ")
    if mode == "quotation":
        left, right = _value(args, "left"), _value(args, "right")
        if not left or not right:
            return CheckResult(False, "quotation constraint without both quotation marks")
        if not text.startswith(left):
            return CheckResult(False, f"does not start with {left!r}: starts with {text[:12]!r}")
        if right not in text[len(left) :]:
            return CheckResult(False, f"starts with {left!r} but {right!r} never follows")
        return CheckResult(True, f"starts with {left!r} and {right!r} follows")
    text = _LEADING_INVISIBLE.sub("", text)
    text = text.lstrip("".join(_PUNCTUATION))
    expected = str(_value(args, "value", ""))
    if expected == "":
        return CheckResult(True, "no value to start with")
    if mode == "letter":
        first = re.search(r"[A-Za-z]", text)
        if not first:
            return CheckResult(False, "no Latin letter in the response")
        ok = first.group(0).casefold() == expected.casefold()
        return CheckResult(ok, f"first letter is {first.group(0)!r}, expected {expected!r}")
    ok = text.casefold().startswith(expected.casefold())
    return CheckResult(
        ok,
        f"{'starts' if ok else 'does not start'} with {expected!r}"
        + ("" if ok else f": starts with {text[: len(expected) + 10]!r}"),
    )


def check_endwith(args: Any, response: str) -> CheckResult:
    """The response ends with the letter, emoji, keyword or quotation (trailing whitespace and punctuation ignored)."""
    mode = _value(args, "mode")
    text = response.rstrip("\ufeff\n\r\t ")
    if mode == "quotation":
        left, right = _value(args, "left"), _value(args, "right")
        if not left or not right:
            return CheckResult(False, "quotation constraint without both quotation marks")
        if not text.endswith(right):
            return CheckResult(False, f"does not end with {right!r}: ends with {text[-12:]!r}")
        if left not in text[: len(text) - len(right)]:
            return CheckResult(False, f"ends with {right!r} but no {left!r} opens it")
        return CheckResult(True, f"ends with a quotation {left}…{right}")
    expected = str(_value(args, "value", ""))
    if expected == "":
        return CheckResult(True, "no value to end with")
    text = text.rstrip("".join(_PUNCTUATION))
    if mode == "letter":
        letters = re.findall(r"[A-Za-z]", text)
        if not letters:
            return CheckResult(False, "no Latin letter in the response")
        ok = letters[-1].casefold() == expected.casefold()
        return CheckResult(ok, f"last letter is {letters[-1]!r}, expected {expected!r}")
    ok = text.casefold().endswith(expected.casefold())
    return CheckResult(
        ok,
        f"{'ends' if ok else 'does not end'} with {expected!r}"
        + ("" if ok else f": ends with {text[-(len(expected) + 10) :]!r}"),
    )


# format ---------------------------------------------------------------------------------
def check_format(args: Any, response: str) -> CheckResult:
    """The response (or the one code fence around it) is valid JSON, XML, HTML, CSV or Markdown."""
    mode = _value(args, "mode")
    text = response.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    validators: dict[str, Callable[[str], tuple[bool, str]]] = {
        "json": _valid_json,
        "xml": _valid_xml,
        "html": _valid_html,
        "csv": _valid_csv,
        "markdown": _valid_markdown,
    }
    if mode not in validators:
        return CheckResult(False, f"unknown format {mode!r}")
    ok, why = validators[mode](text)
    return CheckResult(ok, f"{mode}: {why}" + (" (inside a code fence)" if fenced else ""))


def _valid_json(text: str) -> tuple[bool, str]:
    try:
        json.loads(text)
    except ValueError as exc:
        return False, f"not parseable ({exc})"
    return True, "parses"


def _valid_xml(text: str) -> tuple[bool, str]:
    if "<!ENTITY" in text.upper():
        return False, "entity declarations are refused (not expanded)"
    try:
        ET.fromstring(text)
    except ET.ParseError as exc:
        return False, f"not well-formed ({exc})"
    return True, "well-formed"


_HTML_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9:-]*)\b[^>]*?>")
_VOID_TAGS = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "param",
    "source",
    "track",
    "wbr",
}


def _valid_html(text: str) -> tuple[bool, str]:
    tags = list(_HTML_TAG.finditer(text))
    if not tags:
        return False, "no HTML tag"
    stack: list[str] = []
    for m in tags:
        tag, name = m.group(0), m.group(1).lower()
        if tag.startswith("</"):
            if not stack:
                return False, f"</{name}> closes nothing"
            top = stack.pop()
            if top != name:
                return False, f"</{name}> closes <{top}>"
        elif not (tag.endswith("/>") or name in _VOID_TAGS):
            stack.append(name)
    if stack:
        return False, f"<{stack[-1]}> is never closed"
    return True, f"{len(tags)} tags, properly nested"


def _valid_csv(text: str) -> tuple[bool, str]:
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        return False, f"not parseable ({exc})"
    if not rows or not rows[0]:
        return False, "no header row"
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        return False, f"rows have {sorted(widths)} columns"
    return True, f"{len(rows)} rows of {rows[0].__len__()} columns"


def _valid_markdown(text: str) -> tuple[bool, str]:
    if text.count("```") % 2:
        return False, "odd number of ``` fences"
    opened = False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            opened = not opened
    if opened:
        return False, "a code fence is never closed"
    return True, "fences balanced"


# case, punctuation ------------------------------------------------------------------------
def check_case(args: Any, response: str) -> CheckResult:
    """All Latin letters upper (or lower) case, or an uppercase share within 3 points of `min` percent."""
    mode = _value(args, "mode")
    if mode == "all_upper":
        bad = re.findall(r"[a-z]", response)
        return CheckResult(not bad, f"{len(bad)} lowercase letter(s)" if bad else "no lowercase letter")
    if mode == "all_lower":
        bad = re.findall(r"[A-Z]", response)
        return CheckResult(not bad, f"{len(bad)} uppercase letter(s)" if bad else "no uppercase letter")
    if mode == "min_upper":
        target = _value(args, "min")
        letters = re.findall(r"[A-Za-z]", response)
        if not isinstance(target, int) or not letters:
            return CheckResult(True, "no Latin letters to measure" if not letters else "no target share")
        share = 100 * sum(c.isupper() for c in letters) / len(letters)
        ok = abs(share - target) <= 3
        return CheckResult(ok, f"{share:.2f}% uppercase letters, target {target}% ± 3")
    return CheckResult(False, f"unknown case mode {mode!r}")


def check_punctuation(args: Any, response: str) -> CheckResult:
    """The response contains (or does not contain) one punctuation mark, compared exactly (full-width marks are distinct)."""
    mode, mark = _value(args, "mode"), _value(args, "value")
    if not isinstance(mark, str) or not mark:
        return CheckResult(False, "no punctuation mark given")
    count = response.count(mark)
    if mode == "must_include":
        return CheckResult(count > 0, f"{mark!r} appears {count} time(s)")
    if mode == "must_not_include":
        return CheckResult(count == 0, f"{mark!r} appears {count} time(s)")
    return CheckResult(False, f"unknown punctuation mode {mode!r}")


# countable items, length -----------------------------------------------------------------
_STAR_BULLET = re.compile(r"^\s*\*[^*].*$", re.MULTILINE)
_DASH_BULLET = re.compile(r"^\s*-.*$", re.MULTILINE)


def count_bullets(response: str) -> int:
    """Lines that start with "*" (not "**") or "-", after indentation."""
    return len(_STAR_BULLET.findall(response)) + len(_DASH_BULLET.findall(response))


def check_countable_items(args: Any, response: str) -> CheckResult:
    """Exactly `num` bullet points, each a line starting with * or -."""
    wanted = _value(args, "num")
    n = count_bullets(response)
    return CheckResult(n == wanted, f"{n} bullet point(s), need exactly {wanted}")


_ABBREVIATIONS = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
    "sr",
    "jr",
    "st",
    "vs",
    "etc",
    "e.g",
    "i.e",
    "inc",
    "ltd",
    "co",
    "no",
    "fig",
    "approx",
    "dept",
    "est",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "u.s",
    "u.k",
    "a.m",
    "p.m",
    "vol",
    "al",
}
_SENTENCE_END = re.compile(r"(?P<mark>[.!?…]+)[\"'”’)\]]*(?=\s|$)|[。！？]+[\"'”’)\]]*")


def count_sentences(text: str) -> int:
    """Sentences: text closed by . ! ? … followed by a space or the end (or by 。！？), where a
    single "." after a known abbreviation or a one-letter initial does not close one."""
    text = text.strip()
    count, start = 0, 0
    for m in _SENTENCE_END.finditer(text):
        words = text[start : m.start()].split()
        if not words:
            continue
        last = words[-1].lower()
        if m.group("mark") == "." and (last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())):
            continue
        count += 1
        start = m.end()
    return count + bool(text[start:].strip())


def check_length(args: Any, response: str) -> CheckResult:
    """Words, paragraphs, characters or sentences less than / more than / exactly `number`."""
    mode, relation, number = _value(args, "mode"), _value(args, "relation"), _value(args, "number")
    if not isinstance(number, int):
        return CheckResult(False, "no number given")
    if mode == "word":
        count = len(re.findall(r"\w+", response))
    elif mode == "paragraph":
        stripped = response.strip()
        count = len([p for p in re.split(r"(?:\r?\n\s*){2,}", stripped) if p.strip()]) if stripped else 0
    elif mode == "characters":
        count = len(response)
    elif mode == "sentence":
        count = count_sentences(response)
    else:
        return CheckResult(False, f"unknown length unit {mode!r}")
    ok = {"less_than": count < number, "more_than": count > number, "exactly": count == number}.get(relation)
    if ok is None:
        return CheckResult(False, f"unknown relation {relation!r}")
    unit = {"word": "words", "paragraph": "paragraphs", "characters": "characters", "sentence": "sentences"}[mode]
    note = " (rule-based sentence splitter, not NLTK Punkt)" if mode == "sentence" else ""
    return CheckResult(ok, f"{count} {unit}, need {relation.replace('_', ' ')} {number}{note}")


# keywords ---------------------------------------------------------------------------------
def count_keyword(text: str, keyword: str) -> int:
    """Case-insensitive occurrences: whole words for a one-word keyword, substrings otherwise."""
    if not keyword:
        return 0
    pattern = rf"\b{re.escape(keyword)}\b" if re.fullmatch(r"\w+", keyword) else re.escape(keyword)
    return len(re.findall(pattern, text, flags=re.IGNORECASE))


def check_existence(args: Any, response: str) -> CheckResult:
    """Each keyword appears exactly the number of times given."""
    if not isinstance(args, dict) or not args:
        return CheckResult(True, "no keyword required")
    wrong = []
    for keyword, wanted in args.items():
        if not isinstance(wanted, int) or wanted < 1:
            continue
        n = count_keyword(response, keyword)
        if n != wanted:
            wrong.append(f"{keyword!r} {n}× (need {wanted})")
    if wrong:
        return CheckResult(False, "; ".join(wrong))
    return CheckResult(True, "every keyword appears exactly as often as required")


def check_forbidden(args: Any, response: str) -> CheckResult:
    """None of the keywords appears (case-insensitive; whole words for one-word keywords)."""
    keywords = args.get("keywords") if isinstance(args, dict) else args
    keywords = [k for k in (keywords or []) if isinstance(k, str) and k.strip()]
    found = [f"{k!r} {n}×" for k in keywords if (n := count_keyword(response, k.lower()))]
    if found:
        return CheckResult(False, "forbidden keyword(s) present: " + "; ".join(found))
    return CheckResult(True, f"none of {len(keywords)} forbidden keyword(s) appears")


#: constraint id (as in the dialogue files) -> checker
CHECKERS: dict[str, Callable[[Any, str], CheckResult]] = {
    "startwith": check_startwith,
    "endwith": check_endwith,
    "format": check_format,
    "case": check_case,
    "punctuation": check_punctuation,
    "countableItems": check_countable_items,
    "length": check_length,
    "existence": check_existence,
    "forbidden": check_forbidden,
}


def check_constraint(constraint_id: str, args: Any, response: str | None) -> CheckResult | None:
    """The verdict of the portal's checker on one constraint, or None when EvolIF has an LLM judge it
    (emotion, reader age, style) or the id is not one of the nine deterministic families."""
    checker = CHECKERS.get(constraint_id)
    if checker is None:
        return None
    if not isinstance(response, str):
        return CheckResult(False, "no response")
    try:
        return checker(args, response)
    except Exception as exc:  # malformed args must not stop a rescore; the reason says what broke
        return CheckResult(False, f"could not check: {type(exc).__name__}: {exc}")
