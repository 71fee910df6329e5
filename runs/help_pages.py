"""The portal's help pages: docs/metrics.md rendered to HTML with an anchor per section.

Every "How is this computed" link on a page points at one of these anchors (the
`how_computed` template tag), so a user reads the definition in the portal instead of
being sent to a file they cannot open. The text is the project's own (trusted), rendered
once per process and again only when the file changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import markdown
from django.conf import settings
from django.utils.safestring import mark_safe

METRICS_DOC = Path(settings.BASE_DIR) / "docs" / "metrics.md"
_ANCHOR = re.compile(r'<h[1-6][^>]*\bid="([^"]+)"')


@dataclass(frozen=True)
class HelpPage:
    """A rendered help page: its title, body HTML, table of contents HTML and its headings' anchors."""

    title: str
    html: str
    toc: str
    anchors: frozenset[str]


def metrics_help() -> HelpPage:
    """docs/metrics.md as a HelpPage (re-rendered when the file's modification time changes)."""
    return _render(METRICS_DOC, METRICS_DOC.stat().st_mtime_ns)


@lru_cache(maxsize=4)
def _render(path: Path, _mtime_ns: int) -> HelpPage:
    text = path.read_text(encoding="utf-8")
    title, _, body = text.partition("\n")
    md = markdown.Markdown(extensions=["attr_list", "tables", "toc"], output_format="html")
    html = md.convert(body)
    # the project's own docs/metrics.md, read from the repository: no user or model text reaches it
    return HelpPage(
        title=title.lstrip("# ").strip(),
        html=mark_safe(html),
        toc=mark_safe(md.toc),
        anchors=frozenset(_ANCHOR.findall(html)),
    )
