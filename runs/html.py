"""format_html_join's contract, faster: the one place besides the help page that marks HTML safe.

Pages that write thousands of values (a drill-down page's failing items, a filter form's 300 runs)
spent a third of their time in format_html's lazy-string and SafeString checks per value. Here
each value is escaped with `html.escape` (quotes too), which is what django.utils.html.escape does to
a plain string, unless it is already safe HTML made here or by Django (as conditional_escape does).
The format strings are the callers' literals, never data.
"""

from collections.abc import Iterable, Mapping
from html import escape

from django.utils.safestring import SafeData, SafeString


def escaped(value) -> str:
    """A value as HTML text: escaped, unless it is already safe."""
    return value if isinstance(value, SafeData) else escape(str(value))


def escaped_join(template: str, rows: Iterable[Iterable]) -> SafeString:
    """`template` (a literal with {} fields) formatted with each row's values, every value escaped, joined."""
    return SafeString("".join(template.format(*map(escaped, row)) for row in rows))


def joined(parts: Iterable) -> SafeString:
    """Pieces of HTML joined into one; a piece that is not already safe is escaped."""
    return SafeString("".join(map(escaped, parts)))


def attributes(attrs: Mapping) -> SafeString:
    """HTML attributes as django/forms/widgets/attrs.html writes them: True bare, False left out."""
    return SafeString(
        "".join(
            f" {escaped(key)}" if value is True else f' {escaped(key)}="{escaped(value)}"'
            for key, value in attrs.items()
            if value is not False
        )
    )
