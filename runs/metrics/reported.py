"""Figures a harness reports for a whole run, and the per-sample values it logs beside them.

Python's json module writes NaN and infinities as the bare words `NaN`, `Infinity` and `-Infinity`,
and lm-evaluation-harness writes its results and samples with it: a regression task's MAE can be
`Infinity` with a `NaN` stderr. No database column of a figure or JSON document holds those values,
so a non-finite number is kept as its word (`nonfinite_text`) and left out of any mean, which says how
many it left out (`finite_mean`). A multiple-choice (loglikelihood) sample's choice is the harness's:
the greatest log-likelihood (`acc`), or the greatest per character of the choice (`acc_norm`,
lm_eval/api/task.py `ConfigurableTask.process_results`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

#: a direction a figure is read in: which end is better
HIGHER, LOWER = "higher", "lower"


def nonfinite_text(value: float) -> str:
    """The word Python's json writes for a non-finite float: NaN, Infinity or -Infinity."""
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def storable(value: Any) -> Any:
    """`value` with every non-finite float replaced by its word (NaN, Infinity, -Infinity), which any JSON
    column stores and a page shows as the harness wrote it."""
    if isinstance(value, float) and not math.isfinite(value):
        return nonfinite_text(value)
    if isinstance(value, dict):
        return {k: storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [storable(v) for v in value]
    return value


def figure_value(value: Any) -> tuple[float | None, str]:
    """A reported value as (number, text): a finite number is (it, ""), NaN or an infinity (None, its word),
    anything else the harness writes there ("N/A" for a stderr it did not compute) (None, its text)."""
    if isinstance(value, bool):
        return float(value), ""
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return None, nonfinite_text(value)
        try:
            return float(value), ""
        except OverflowError:
            return None, str(value)[:40]
    if value is None:
        return None, ""
    return None, str(value)[:40]


@dataclass(frozen=True)
class FiniteMean:
    """The mean of the finite values among some numbers, how many it averages and how many it left out."""

    mean: float | None
    n: int
    left_out: int


def finite_mean(values: Iterable[Any]) -> FiniteMean:
    """Arithmetic mean of the finite numbers in `values` (booleans count as 0/1); NaN and infinities are
    left out and counted; anything that is not a number is skipped. None when no value is finite."""
    total, n, left_out = 0.0, 0, 0
    for value in values:
        if isinstance(value, bool):
            value = float(value)
        if not isinstance(value, (int, float)):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            left_out += 1
            continue
        total += value
        n += 1
    return FiniteMean(total / n if n else None, n, left_out)


@dataclass(frozen=True)
class Choice:
    """One answer a multiple-choice sample scored: its text, the model's log-likelihood of it, and whether
    it is the model's greedy continuation."""

    text: str
    loglikelihood: float | None
    greedy: bool | None


def picked(choices: Sequence[Choice], *, per_character: bool = False) -> int | None:
    """The index of the choice the harness counts as the model's answer: the greatest log-likelihood, or
    with `per_character` the greatest log-likelihood per character of the choice's text (acc_norm). The
    first of equal ones, as numpy's argmax takes it; None when a log-likelihood is missing."""
    scores = []
    for choice in choices:
        if choice.loglikelihood is None or math.isnan(choice.loglikelihood):
            return None
        scores.append(
            choice.loglikelihood / len(choice.text) if per_character and choice.text else choice.loglikelihood
        )
    if not scores:
        return None
    return max(range(len(scores)), key=lambda i: (scores[i], -i))
