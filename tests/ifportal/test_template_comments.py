"""Django's {# #} comment ends at its line: one spread over two lines is printed on every page as text. Longer notes
use {% comment %}."""

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def test_no_template_opens_a_one_line_comment_it_does_not_close_on_that_line():
    unclosed = [
        f"{path.relative_to(TEMPLATES)}:{n}"
        for path in sorted(TEMPLATES.rglob("*.html"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\{#(?![^\n]*#\})", line)
    ]
    assert unclosed == []
