"""{{ figure|figure_json }}: a Plotly figure as JSON for a data-figure attribute (autoescaped there).

Charts carry their figure in an attribute rather than a <script type="application/json">
because htmx, configured with allowScriptTags false, drops every script element from swapped
content: a chart re-rendered after a filter change would find no figure.
"""
import json

from django import template
from django.core.serializers.json import DjangoJSONEncoder

register = template.Library()


@register.filter
def figure_json(figure) -> str:
    """The figure as JSON text (not marked safe: the template escapes it for the attribute)."""
    return json.dumps(figure, cls=DjangoJSONEncoder, ensure_ascii=False, separators=(",", ":"))
