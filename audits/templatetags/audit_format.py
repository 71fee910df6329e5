"""Formatting of audit figures: fractions as percentages with two decimals, kappa with three, rounded as every page
rounds (runs.rounding)."""

from django import template

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
