"""{{ figure|figure_json }}: a Plotly figure as JSON for a data-figure attribute (autoescaped there); {{ p|p_value }}:
a test's p-value as pages write it.

Charts carry their figure in an attribute rather than a <script type="application/json">
because htmx, configured with allowScriptTags false, drops every script element from swapped
content: a chart re-rendered after a filter change would find no figure.

Plotly reads its own subset of HTML in every label, legend, tick and hover text (`<a href>`
becomes a link, `<span style>` restyles, `<br>` breaks a line), so a model or judge name
shown as given could put a link or giant text into a chart, on the public share page too.
Every string of the figure is therefore entity-escaped for Plotly (which shows `&lt;` as
`<`), except the hover and text templates the chart modules write themselves (they name
data only through `%{...}` placeholders, whose values come escaped from the traces).
"""

import json

from django import template
from django.core.serializers.json import DjangoJSONEncoder

from runs.rounding import shown_p

register = template.Library()

#: keys whose strings are the chart code's own Plotly markup, never data
TEMPLATE_KEYS = frozenset({"hovertemplate", "texttemplate"})


def plotly_escape(text: str) -> str:
    """Text that Plotly shows literally: its markup characters as the entities Plotly decodes."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def plotly_escaped(value, key: str | None = None):
    """The figure (or any part of it) with every string escaped for Plotly, templates excepted."""
    if isinstance(value, str):
        return value if key in TEMPLATE_KEYS else plotly_escape(value)
    if isinstance(value, dict):
        return {k: plotly_escaped(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plotly_escaped(v, key) for v in value]
    return value


@register.filter
def figure_json(figure) -> str:
    """The figure, escaped for Plotly, as JSON text (not marked safe: the template escapes it for the attribute)."""
    return json.dumps(plotly_escaped(figure), cls=DjangoJSONEncoder, ensure_ascii=False, separators=(",", ":"))


@register.filter
def p_value(p: float | None) -> str:
    """A test's p-value as the page writes it (runs.rounding.shown_p: "< 0.0001" rather than 0.0000)."""
    return shown_p(p)
