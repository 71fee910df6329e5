"""Sortable column headers, one rule for every page that has them: a number sorts high-first on its
first click and reverses on the next (the dialogue page, whose metrics sort one way, asks for `one_way`); the
column the table is sorted by shows an arrow."""

from django import template
from django.template.defaulttags import querystring

register = template.Library()


@register.inclusion_tag("runs/partials/_sort_link.html", takes_context=True)
def sort_link(context, label, field, current, query=None, param="sort", target="", one_way=False):
    """A header link that sorts by `field`, keeping every other parameter of `query` (the request's by
    default). `current` is the sort shown; `param` the parameter that holds it; `target` an element an
    htmx click swaps instead of loading the page; `one_way` for a column with a single order (a name
    A to Z, "-n" most first): the link always asks for `field` as given."""
    bare = field.lstrip("-")
    wanted = field if one_way else bare if current == f"-{bare}" else f"-{bare}"
    arrow = " ↓" if current == f"-{bare}" else " ↑" if current == bare else ""
    return {"href": querystring(context, query, **{param: wanted}), "label": label, "arrow": arrow, "target": target}
