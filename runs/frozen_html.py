"""A page as its viewer saw it, frozen for a share link: the `<main>` of the rendered page, with its words, numbers,
notes and layout, and none of its controls.

A snapshot keeps the page's tables as data (its exports) and this markup (what the public page shows), so an
outsider reads the same caveats, spreads and headings as the person who shared it. The markup is rebuilt from
the page's HTML through an allow-list: only the elements and attributes below survive, every text and attribute
value is escaped again (quotes too, so no text reads as an attribute), and scripts, forms, navigation and the
frame's toolbar are dropped with what they hold. A frozen page keeps only the links a public page can re-point (in-page
anchors and paths on this site, `local`); any other (javascript:, data:, another site) is its text alone. Links never
nest and each is closed, so `relinked` sees every one. Each link then goes through a function the caller gives (`href`,
through `relinked` on the public page): it keeps the help page and in-page anchors, points the attempts a link opens
at their frozen pages, and shows every other link as plain text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html import escape, unescape
from html.parser import HTMLParser

from django.utils.safestring import SafeString

#: elements kept as they are (attributes filtered by ATTRIBUTES); any other element is unwrapped: its content stays
KEPT = frozenset(
    {
        "a",
        "abbr",
        "article",
        "aside",
        "b",
        "blockquote",
        "br",
        "caption",
        "code",
        "col",
        "colgroup",
        "dd",
        "del",
        "details",
        "div",
        "dl",
        "dt",
        "em",
        "figcaption",
        "figure",
        "footer",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "i",
        "ins",
        "kbd",
        "li",
        "mark",
        "meter",
        "ol",
        "p",
        "pre",
        "progress",
        "q",
        "s",
        "samp",
        "section",
        "small",
        "span",
        "strong",
        "sub",
        "summary",
        "sup",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "time",
        "tr",
        "ul",
        "var",
    }
)
VOID = frozenset({"br", "col", "hr"})
#: elements dropped with everything they hold: code, and the controls of a live page (filters, Share and re-check
#: forms, page tabs), which act on the portal, not on the frozen data
DROPPED = frozenset(
    {
        "script",
        "style",
        "template",
        "noscript",
        "form",
        "button",
        "input",
        "select",
        "textarea",
        "option",
        "datalist",
        "nav",
        "iframe",
        "object",
        "embed",
        "svg",
        "math",
        "head",
        "title",
        "link",
        "meta",
    }
)
#: classes and ids of kept elements dropped all the same: the way back to pages an outsider cannot open, the frame's
#: toolbar (the snapshot has its own downloads), messages meant for the viewer, and words about the live page's
#: controls ("Click a rate for its attempts": a template marks them `live-only`), which a frozen page does not have
DROPPED_CLASSES = frozenset({"crumbs", "messages", "page-tools", "live-only"})
DROPPED_IDS = frozenset({"page-tools", "page-share-result"})
ATTRIBUTES = frozenset(
    {
        "class",
        "id",
        "title",
        "colspan",
        "rowspan",
        "scope",
        "headers",
        "role",
        "aria-label",
        "aria-hidden",
        "aria-describedby",
        "data-plotly",
        "data-figure",
        "open",
        "datetime",
        "lang",
        "value",
        "min",
        "max",
        "low",
        "high",
        "optimum",
        "abbr",
    }
)
#: an attribute value is kept only when it is this plain (ids and classes name CSS, never code)
_TOKEN = re.compile(r"^[\w\- :.,%#/()+]*$")
_STRUCTURED = frozenset({"title", "aria-label", "data-figure", "abbr"})  # free text: escaped, not pattern-checked
_CSS = re.compile(r"/css/([a-z][a-z0-9_-]*)(?:\.[0-9a-f]{8,})?\.css\b")
#: a link as `_Rebuild` writes it: the target first, then the kept attributes, then what it holds
_LINK = re.compile(r'<a href="([^"]*)"([^>]*)>(.*?)</a>', re.S)
#: a link target a public page can re-point: an in-page anchor or a path on this site (not `//host` nor `/\\host`,
#: which browsers read as another site), without the blanks and control characters browsers strip from a scheme
_LOCAL = re.compile(r"(?:#|/(?![/\\]))[^\s\\\x00-\x1f\x7f]*")

Href = Callable[[str], str | None]


class _Rebuild(HTMLParser):
    """Re-emits allowed markup; `within` limits it to the content of one element (the page's <main>)."""

    def __init__(self, href: Href, within: str | None):
        super().__init__(convert_charrefs=True)
        self.href, self.within = href, within
        self.inside = within is None
        self.out: list[str] = []
        self.dropping: list[str] = []  # tag names opened since a dropped element began (its own first)
        self.links: list[bool] = []  # per open <a>: whether it was emitted

    def handle_starttag(self, tag, attrs):
        self._start(tag, attrs, closed=False)

    def handle_startendtag(self, tag, attrs):
        self._start(tag, attrs, closed=True)

    def _start(self, tag: str, attrs: list[tuple[str, str | None]], *, closed: bool) -> None:
        if not self.inside:
            self.inside = tag == self.within
            return
        if self.dropping:
            if not closed and tag not in VOID:
                self.dropping.append(tag)
            return
        found = dict(attrs)
        classes = set((found.get("class") or "").split())
        if tag in DROPPED or classes & DROPPED_CLASSES or found.get("id") in DROPPED_IDS or "hx-swap-oob" in found:
            if not closed and tag not in VOID:
                self.dropping.append(tag)
            return
        if tag not in KEPT:
            return
        kept = [(name, value) for name, value in attrs if name in ATTRIBUTES and self._plain(name, value)]
        if tag == "a":
            target = None if any(self.links) else self.href(found.get("href") or "")  # a link inside one is text
            if target is None:
                if not closed:
                    self.links.append(False)
                return
            kept.insert(0, ("href", target))
            if not closed:
                self.links.append(True)
        text = "".join(
            f' {name}="{escape(value or "", quote=True)}"' if value is not None else f" {name}" for name, value in kept
        )
        self.out.append(f"<{tag}{text}>" + (f"</{tag}>" if closed and tag not in VOID else ""))

    @staticmethod
    def _plain(name: str, value: str | None) -> bool:
        return value is None or name in _STRUCTURED or bool(_TOKEN.match(value))

    def handle_endtag(self, tag):
        if not self.inside:
            return
        if self.dropping:
            if tag in self.dropping:  # close what was opened inside, up to this tag (an unclosed <p> closes with it)
                while self.dropping and self.dropping.pop() != tag:
                    pass
            return
        if tag == self.within:
            self.close_links()
            self.inside = False
            return
        if tag == "a":
            if self.links and self.links.pop():
                self.out.append("</a>")
            return
        if tag in KEPT and tag not in VOID:
            self.out.append(f"</{tag}>")

    def handle_data(self, data):
        if self.inside and not self.dropping:
            self.out.append(escape(data, quote=True))

    def close_links(self) -> None:
        """Close the links left open (a page's `<a>` without its `</a>`)."""
        self.out.extend("</a>" for emitted in self.links if emitted)
        self.links.clear()


def rebuilt(html: str, *, href: Href, within: str | None = None) -> str:
    """`html` rebuilt through the allow-list, each link's target through `href` (None: the link's text without the
    link); with `within`, only the content of the first such element."""
    parser = _Rebuild(href, within)
    parser.feed(html)
    parser.close()
    parser.close_links()
    return "".join(parser.out)


def local(target: str) -> str | None:
    """`target` when a public page can re-point it (an in-page anchor or a path on this site), else None."""
    return target if _LOCAL.fullmatch(target) else None


def frozen_page(html: str) -> dict:
    """What a snapshot keeps of a rendered page: its <main> rebuilt (links as the page had them, for the public page
    to map; only `local` ones), the names of the page's own stylesheets under static/css, and whether it draws charts."""
    head = html.split("<main", 1)[0]
    body = rebuilt(html, href=local, within="main")
    return {"html": body, "stylesheets": sorted(set(_CSS.findall(head)) - {"portal"}), "charts": "data-plotly=" in body}


def relinked(body: str, *, href: Href) -> SafeString:
    """Markup `frozen_page` kept, each link's target through `href` (None, or a target `local` refuses: what the link
    holds, without the link).

    The public page's one pass over a stored snapshot: the allow-list rebuilt it when the link was made, so only
    the links change here, by a regular expression over markup of that one shape (a full rebuild per view cost
    1.3 ms per KB: 90 ms on a drill-down page's 72 KB)."""

    def one(match: re.Match) -> str:
        target = href(unescape(match.group(1)))
        if target is None or local(target) is None:
            return match.group(3)
        return f'<a href="{escape(target, quote=True)}"{match.group(2)}>{match.group(3)}</a>'

    return SafeString(_LINK.sub(one, body))  # every text and attribute escaped by the rebuild, every link `local`
