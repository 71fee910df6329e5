"""`{{ benchmark.kind|recheck_page }}`: the route name of a kind's re-check page (runs.recheck.RECHECK_PAGES), for
`runs/recheck.html`, which every kind with portal checkers renders; its start route is that name with "-start"."""

from django import template

from runs.recheck import RECHECK_PAGES

register = template.Library()


@register.filter
def recheck_page(kind: str) -> str:
    """The route name of the re-check page of a benchmark kind that has portal checkers."""
    return RECHECK_PAGES[kind]
