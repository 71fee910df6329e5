"""Formatting of audit figures: fractions as percentages with two decimals, kappa with three, rounded as every page
rounds (runs.rounding)."""

from django import template

from audits.rubrics import rubric_for
from runs.rounding import shown_number

register = template.Library()


@register.filter
def pct(value) -> str:
    """A fraction in [0, 1] as a percentage with two decimals; an em dash when missing."""
    if value is None:
        return "—"
    return shown_number(100 * value, 2)


@register.filter
def coef(value) -> str:
    """A coefficient (kappa, alpha, tau) with three decimals; an em dash when undefined."""
    if value is None:
        return "—"
    return shown_number(value, 3)


@register.filter
def dictget(mapping, key):
    """mapping[key], or None (templates cannot index by a variable)."""
    return mapping.get(key) if mapping else None


@register.filter
def make_list_one(value) -> list:
    """[value]: lets a single row go through a template that loops over rows."""
    return [value]


@register.filter
def status_label(status: str, subject: str) -> str:
    """A unit's final status (valid, invalid, unresolved) as the campaign's subject names it: a verdict audit's
    "invalid" is "not satisfied"."""
    return rubric_for(subject).status_label(status)


@register.filter
def answer_label(value: str, subject: str) -> str:
    """An annotator's stored answer as the rubric of the campaign's subject words it ("not_satisfied" is "not
    satisfied"); the value itself when no criterion offers it."""
    for criterion in rubric_for(subject).criteria:
        for choice, label in criterion.choices:
            if choice == value:
                return label
    return value
