"""GuideBench answers, scored exactly as the reference scorer does (METRICS.md section 5).

The reference is `evaluate.py` of Dlxxx/GuideBench. Per category it reads one value out
of each task's `LLMAnswer` and compares it with the ground truth using Python equality
(then scikit-learn):

- multiple-choice categories (chat, summary, hallu): `LLMAnswer.OptimalOption` against
  `Groundtruth.OptimalOption`; a missing key counts as "E", and so does any value that
  is not a string (null, a number). An empty string stays "" (it is a string).
- answer categories (price, relevance, math): `LLMAnswer.CandidateAnswer` against
  `Groundtruth.ReferenceAnswer`, with no conversion at all: "170" is not 170 and "1" is
  not 1. A missing (or null) answer counts as "0" for math, "-1(No Result)" for
  relevance and -1 for every other answer category; for those other categories an empty
  string "" also counts as -1 (for math and relevance "" stays "").

The reference's printed "yes/total" compares before those defaults but the accuracy it
writes (`accuracy_score`) compares after them; the portal uses the written one. Where the
reference would crash (an `LLMAnswer` that is not an object), the portal counts the
answer as missing and marks it unparsable.

A category the reference does not know is scored like the reference's own fallback: by
the ground truth it has (`OptimalOption` -> multiple choice, else answer with -1).

`choice_answer_normalised` is a separate, lenient comparison ("2（强相关）" = "2",
"170.0" = "170", 1 = "1", "B." = "B"). It is offered as a labelled alternative view and
never replaces the exact one.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

OPTION = "option"
ANSWER = "answer"
Kind = Literal["option", "answer"]

#: categories the reference scores as multiple choice, and as answers
OPTION_CATEGORIES = ("chat", "summary", "hallu")
ANSWER_CATEGORIES = ("price", "relevance", "math")
#: what a missing option counts as
MISSING_OPTION = "E"
#: what a missing answer counts as, per answer category; others use MISSING_ANSWER_OTHER
MISSING_ANSWER = {"math": "0", "relevance": "-1(No Result)"}
MISSING_ANSWER_OTHER = -1

#: the fields a predictions file adds to a task (the GuideBench generator adds both)
PREDICTION_FIELDS = ("LLMAnswer", "cleaned_response")


@dataclass(frozen=True)
class ScoredAnswer:
    """One prediction as the reference scores it.

    `raw` is the value read from LLMAnswer (None when absent), `answer` the value compared
    (after the reference's missing-answer default), `unanswered` whether the model gave no
    usable answer (`reason`: "missing", "empty" or "unparsable"; "" when answered).
    """

    category: str
    kind: Kind
    raw: Any
    answer: Any
    ground_truth: Any
    correct: bool
    unanswered: bool
    reason: str = ""


@dataclass(frozen=True)
class NormalisedAnswer:
    """The lenient comparison: both sides normalised to text; None when there is no answer."""

    answer: str | None
    ground_truth: str | None
    correct: bool


def choice_kind(category: str, groundtruth: Any = None) -> Kind:
    """ "option" or "answer" for a category: by name when the reference knows it, else by its ground truth."""
    name = category.strip().lower()
    if name in OPTION_CATEGORIES:
        return OPTION
    if name in ANSWER_CATEGORIES:
        return ANSWER
    if isinstance(groundtruth, dict) and "OptimalOption" in groundtruth and "ReferenceAnswer" not in groundtruth:
        return OPTION
    return ANSWER


def choice_answer_field(kind: Kind) -> tuple[str, str]:
    """(LLMAnswer key, Groundtruth key) compared for a kind of category."""
    return ("OptimalOption", "OptimalOption") if kind == OPTION else ("CandidateAnswer", "ReferenceAnswer")


def choice_missing_default(category: str, kind: Kind) -> Any:
    """What a missing prediction counts as in this category (the reference's default)."""
    if kind == OPTION:
        return MISSING_OPTION
    return MISSING_ANSWER.get(category.strip().lower(), MISSING_ANSWER_OTHER)


def choice_ground_truth(category: str, groundtruth: Any) -> Any:
    """The ground-truth value the reference compares with (a missing option counts as "E")."""
    kind = choice_kind(category, groundtruth)
    gt = groundtruth if isinstance(groundtruth, dict) else {}
    _, gt_key = choice_answer_field(kind)
    if kind == OPTION:
        return gt.get(gt_key, MISSING_OPTION)
    return gt.get(gt_key)


def choice_answer_scored(category: str, llm_answer: Any, groundtruth: Any, *, present: bool = True) -> ScoredAnswer:
    """Score one prediction exactly as the reference scorer: `llm_answer` is the task's LLMAnswer
    (`present=False` when the task has none), `groundtruth` its Groundtruth object."""
    kind = choice_kind(category, groundtruth)
    key, _ = choice_answer_field(kind)
    ground_truth = choice_ground_truth(category, groundtruth)
    default = choice_missing_default(category, kind)
    name = category.strip().lower()
    reason = ""
    if not present or llm_answer is None:
        raw, reason = None, "missing"
    elif not isinstance(llm_answer, dict):
        raw, reason = None, "unparsable"
    elif key not in llm_answer or llm_answer[key] is None:
        raw, reason = None, ("unparsable" if not llm_answer else "missing")
    else:
        raw = llm_answer[key]
    if kind == OPTION:
        answer = raw if isinstance(raw, str) else default
        if raw is not None and not isinstance(raw, str):
            reason = "unparsable"
    else:
        answer = default if raw is None else raw
        if name not in MISSING_ANSWER and isinstance(raw, str) and raw == "":
            answer = default
        if isinstance(raw, (dict, list)):
            reason = "unparsable"
    if not reason and isinstance(raw, str) and not raw.strip():
        reason = "empty"
    return ScoredAnswer(
        category=category,
        kind=kind,
        raw=raw,
        answer=answer,
        ground_truth=ground_truth,
        correct=_equal(answer, ground_truth),
        unanswered=bool(reason),
        reason=reason,
    )


def choice_task_scored(category: str, task: dict[str, Any]) -> ScoredAnswer:
    """Score a task of a predictions file (its LLMAnswer against its Groundtruth)."""
    return choice_answer_scored(category, task.get("LLMAnswer"), task.get("Groundtruth"), present="LLMAnswer" in task)


def _equal(a: Any, b: Any) -> bool:
    """Python equality, as the reference (and numpy's elementwise ==) compares."""
    try:
        return bool(a == b)
    except Exception:  # pragma: no cover - JSON values always compare
        return False


# the lenient comparison -----------------------------------------------------------------
_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)")
_OPTION = re.compile(r"^(?:选项|option)?\s*[(\[]?([a-e])[)\]]?(?:$|[\s.、:,;)，。：；])")


def choice_answer_normalised(
    category: str, llm_answer: Any, groundtruth: Any, *, present: bool = True
) -> NormalisedAnswer:
    """The lenient comparison (not the reference's): text normalised on both sides (NFKC, case,
    spaces), options reduced to their letter, answers to their leading number when they start
    with one. A missing answer is never correct."""
    kind = choice_kind(category, groundtruth)
    key, gt_key = choice_answer_field(kind)
    raw = llm_answer.get(key) if present and isinstance(llm_answer, dict) else None
    gt = groundtruth.get(gt_key) if isinstance(groundtruth, dict) else None
    answer, truth = normalise_value(raw, kind), normalise_value(gt, kind)
    return NormalisedAnswer(answer=answer, ground_truth=truth, correct=answer is not None and answer == truth)


def normalise_value(value: Any, kind: Kind) -> str | None:
    """A canonical text for a value under the lenient comparison; None for no answer."""
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return _canonical_number(str(value))
    text = " ".join(unicodedata.normalize("NFKC", str(value)).split()).strip().strip("\"'`").strip().lower()
    if not text:
        return None
    if kind == OPTION:
        match = _OPTION.match(text)
        return match.group(1).upper() if match else text
    match = _NUMBER.match(text.replace(",", ""))
    if match:
        return _canonical_number(match.group(0))
    return text


def _canonical_number(text: str) -> str:
    try:
        number = Decimal(text) + 0  # + 0 turns -0 into 0
        if number == number.to_integral_value():
            return format(number.quantize(Decimal(1)), "f")
        return format(number.normalize(), "f")
    except InvalidOperation:
        return text
