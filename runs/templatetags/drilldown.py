"""The drill-down's per-attempt cells (failing items, per-judge counts), rendered in Python.

A page of the drill-down lists up to 50 attempts with their failing items, often 800 and more,
and a badge per judge: through the template engine those would be most of the page's time, and
Django's format_html would spend much of it in its lazy-string and SafeString checks for thousands
of values, the template a dir() call per `counts.0` (docs/performance.md, "The web process"). Every
value is escaped by runs.html.escaped_join, as format_html_join would.
"""

from django import template

from runs.html import escaped_join

register = template.Library()

#: failing items an attempt row lists before the rest folds into "N more" (a page of 50 attempts with every failing
#: item spelled out ran to tens of thousands of pixels)
SHOWN_FAILING = 3

ITEM = (
    '<li><a href="{}#item-{}"><code>{}</code></a> <span class="badge">{}</span> {} <span class="fail">✗ {}</span></li>'
)
BADGE = '<span class="badge{}">{}: {}/{}</span> '


@register.simple_tag
def failing_items(items, attempt_url):
    """<li> of each failing item: its key (a link to it on the attempt page), source category, the
    start of its description and the judges that failed it."""
    return escaped_join(
        ITEM,
        (
            (attempt_url, item["id"], item["key"], item["category"], item["short"], ", ".join(map(str, item["judges"])))
            for item in items
        ),
    )


@register.simple_tag
def failing_items_summary(items, attempt_url):
    """An attempt row's failing items: how many, the first SHOWN_FAILING as a list, the rest in a <details> that
    opens on demand."""
    shown = escaped_join('<ul class="failing-items">{}</ul>', [(failing_items(items[:SHOWN_FAILING], attempt_url),)])
    rest = items[SHOWN_FAILING:]
    if not rest:
        return shown
    return escaped_join(
        '{}<details class="failing-more"><summary>{}</summary><ul class="failing-items">{}</ul></details>',
        [
            (
                shown,
                f"{len(rest)} more failing item{'s' if len(rest) != 1 else ''} ({len(items)} in all)",
                failing_items(rest, attempt_url),
            )
        ],
    )


@register.simple_tag
def judge_badges(judges):
    """A badge per judge of an attempt row ({judge: (applicable, passed)}): passed / applicable, red when
    the judge failed an item, green when it passed every applicable one, plain when none applied."""
    return escaped_join(
        BADGE,
        (
            (
                " fail" if applicable and passed < applicable else " pass" if applicable else " ",
                judge,
                int(passed),
                int(applicable),
            )
            for judge, (applicable, passed) in judges.items()
        ),
    )
