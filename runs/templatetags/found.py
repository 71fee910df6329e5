"""`text|found_in:q`: a text cut around each match of a find in a thread, for `runs/partials/_segments.html`."""

from __future__ import annotations

from django import template

from runs.search import segments

register = template.Library()


@register.filter
def found_in(text: str, q: str) -> list[tuple[str, bool]]:
    """`text` as (part, is_match) segments around every match of `q`, folding letters as the search does."""
    return segments(text or "", [q] if q else [])
