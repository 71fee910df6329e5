"""{% how_computed "anchor" %}: the "How is this computed" link to a section of the metrics help page."""

from django import template
from django.urls import reverse
from django.utils.html import format_html

from runs.help_pages import metrics_help

register = template.Library()


@register.simple_tag
def how_computed(anchor: str, label: str = "How is this computed") -> str:
    """A link to `anchor` on /help/metrics/; an anchor the page does not have is a template error."""
    if anchor not in metrics_help().anchors:
        raise template.TemplateSyntaxError(f"docs/metrics.md has no section with the anchor {anchor!r}")
    return format_html('<a class="how-computed" href="{}#{}">{}</a>', reverse("runs:help-metrics"), anchor, label)
