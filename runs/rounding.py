"""How the portal rounds a number it shows: one rule for pages, CSV exports, charts and snapshots.

Templates show numbers with Django's `floatformat`, which rounds the number's shortest decimal form
half away from zero (23.125 -> 23.13, 2.675 -> 2.68). Python's `round()` and format specs round the
binary float half to even (23.125 -> 23.12, 2.675 -> 2.67), so a CSV written with them said 23.12
where the page said 23.13. Every place that shows a rounded number outside a template calls
`shown_number` (text) or `rounded` (a number, for chart values), both `floatformat`, so the page, its
CSV, its chart and its snapshot say the same digits.
"""

from __future__ import annotations

import math

from django.template.defaultfilters import floatformat


def shown_number(value: float | int, places: int) -> str:
    """`value` with exactly `places` decimals as a page shows it (`floatformat`: half away from zero on the value's
    shortest decimal form); a reference scorer's nan or inf as Python prints it."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return str(floatformat(value, places))


def rounded(value: float | int | None, places: int) -> float | None:
    """`value` rounded as `shown_number` rounds it, as a number (chart values, whose hover text shows `places`
    decimals); None stays None."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return value
    return float(shown_number(value, places))


#: the smallest p-value a page writes as a number; below it, "< 0.0001" (four decimals would say 0.0000)
P_FLOOR = 0.0001


def shown_p(p: float | None) -> str:
    """A test's p-value as pages and their snapshots write it: four decimals, "< 0.0001" below that, "" when no
    test was made."""
    if p is None:
        return ""
    return f"< {P_FLOOR}" if p < P_FLOOR else shown_number(p, 4)
