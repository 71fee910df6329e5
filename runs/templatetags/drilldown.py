"""The drill-down's per-attempt cells (failing items, per-judge counts), rendered in Python.

A page of the drill-down lists up to 50 attempts with all their failing items, often 800 and
more, and a badge per judge; through the template engine those were most of the page's time
(about 60 of 115 ms at 1M verdicts). Django's format_html then still spent 28 of a 175 ms page at
10M verdicts in its lazy-string and SafeString checks for 6,000 values, and each `counts.0` in
the template a dir() call (docs/performance.md, session 9). Every value is escaped here by
`html.escape` with quotes, which is what django.utils.html.escape does to a plain string; none of
these values is ever already-safe HTML.
"""
from html import escape

from django import template
from django.utils.safestring import SafeString

register = template.Library()

ITEM = ('<li><a href="{}#item-{}"><code>{}</code></a> <span class="badge">{}</span> {} '
        '<span class="fail">✗ {}</span></li>')
BADGE = '<span class="badge{}">{}: {}/{}</span> '


@register.simple_tag
def failing_items(items, attempt_url) -> SafeString:
    """<li> of each failing item: its key (a link to it on the attempt page), source category, the
    start of its description and the judges that failed it."""
    url = escape(str(attempt_url))
    return SafeString("".join(
        ITEM.format(url, int(item["id"]), escape(str(item["key"])), escape(str(item["category"])),
                    escape(str(item["short"])), escape(", ".join(map(str, item["judges"]))))
        for item in items))


@register.simple_tag
def judge_badges(judges) -> SafeString:
    """A badge per judge of an attempt row ({judge: (applicable, passed)}): passed / applicable, red when
    the judge failed an item, green when it passed every applicable one, plain when none applied."""
    return SafeString("".join(
        BADGE.format(" fail" if applicable and passed < applicable else " pass" if applicable else " ",
                     escape(str(judge)), int(passed), int(applicable))
        for judge, (applicable, passed) in judges.items()))
