"""The drill-down's list of failing items, rendered in Python.

A page of the drill-down lists up to 50 attempts with all their failing items, often 800 and
more; through the template engine those items were most of the page's time (about 60 of 115 ms
at 1M verdicts). Every value is escaped by format_html_join, as the template would.
"""
from django import template
from django.utils.html import format_html_join

register = template.Library()

ITEM = ('<li><a href="{}#item-{}"><code>{}</code></a> <span class="badge">{}</span> {} '
        '<span class="fail">✗ {}</span></li>')


@register.simple_tag
def failing_items(items, attempt_url):
    """<li> of each failing item: its key (a link to it on the attempt page), source category, the
    start of its description and the judges that failed it."""
    return format_html_join("", ITEM, ((attempt_url, item["id"], item["key"], item["category"], item["short"],
                                        ", ".join(item["judges"])) for item in items))
