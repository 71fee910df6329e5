"""python manage.py page_figures OUT: what every page, fragment, export and API answer shows, as text files to diff.

A refactor that promises no behaviour change proves it with this command: load the demo into a scratch database,
copy it, run the command on the old code and on the new against a copy each, and `diff -r` the two folders::

    IFPORTAL_VAR_DIR=/tmp/figs manage.py migrate && IFPORTAL_VAR_DIR=/tmp/figs manage.py demo
    cp -r /tmp/figs /tmp/figs-old; cp -r /tmp/figs /tmp/figs-new
    git stash / checkout the old code; IFPORTAL_VAR_DIR=/tmp/figs-old manage.py page_figures /tmp/out-old
    the new code;                     IFPORTAL_VAR_DIR=/tmp/figs-new manage.py page_figures /tmp/out-new
    diff -r /tmp/out-old /tmp/out-new

It signs in as each role in turn (a superuser, a read-only reviewer, a blind annotator) and walks the portal from
its home page, the benchmarks' pages and the API's lists, following every link on the same site breadth first, in
sorted order so two runs walk alike. Links that differ only in their numbers (one attempt, one instance) are
followed a few times per shape, so the walk covers every kind of page without every object. Each answer is written
as its status, its content type and its body: JSON sorted and indented, CSV as it is, and HTML as its visible text
(whitespace collapsed, one block per line) followed by its links and its form fields, with what changes from one
request to the next (CSRF tokens, script nonces, "3 minutes ago") masked. Relative times and the job list's clock
are the only things masked, so any change of a number, a word, a link or an error shows in the diff.
"""

import json
import re
from collections import deque
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.test import Client

from runs.models import Benchmark

#: the roles walked, by the demo's user names (manage.py demo and demo_login make them)
ROLES = ("demo", "demo-reviewer", "demo-ann")
#: paths never requested: they sign out, change state on GET in the admin, or are the schema (large, no figures)
SKIP_PREFIXES = ("/logout/", "/admin/", "/api/schema/", "/static/", "/media/", "/login/")
#: how often a link shape (its path with numbers replaced) is followed per role, and how many answers per role
PER_SHAPE = 4
PER_ROLE = 900

MASKS = (
    (re.compile(r"csrfmiddlewaretoken=\S+"), "csrfmiddlewaretoken=…"),
    (
        re.compile(r"\b\d+(?:\.\d+)?\s*(?:seconds?|minutes?|hours?|days?|weeks?|months?)(?:,\s*\d+\s*\w+)?\s+ago\b"),
        "… ago",
    ),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"), "<time>"),
    (re.compile(r"\bnonce=\"[^\"]*\""), 'nonce="…"'),
)


class _Page(HTMLParser):
    """Visible text in blocks, links and form fields of one HTML answer."""

    BLOCKS = {
        "p",
        "div",
        "tr",
        "li",
        "h1",
        "h2",
        "h3",
        "h4",
        "section",
        "table",
        "details",
        "summary",
        "br",
        "dt",
        "dd",
        "option",
        "form",
        "nav",
        "header",
        "footer",
        "main",
        "article",
        "ul",
        "ol",
        "dl",
        "thead",
        "tbody",
    }

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.lines, self.current, self.links, self.fields, self._hidden = [], [], [], [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("script", "style", "template"):
            self._hidden += 1
        if tag in self.BLOCKS or tag in ("td", "th"):
            self._flush(tag in ("td", "th"))
        for name in ("href", "hx-get", "action", "src"):
            if attrs.get(name):
                self.links.append(attrs[name])
        if (
            tag in ("input", "select", "textarea", "button")
            and attrs.get("name")
            and attrs.get("name") != "csrfmiddlewaretoken"
        ):
            checked = " checked" if "checked" in attrs else ""
            self.fields.append(f"{tag} {attrs['name']}={attrs.get('value', '')}{checked}")
        if tag == "option" and "selected" in attrs:
            self.fields.append(f"selected {attrs.get('value', '')}")

    def handle_endtag(self, tag):
        if tag in ("script", "style", "template"):
            self._hidden = max(0, self._hidden - 1)
        if tag in self.BLOCKS:
            self._flush(False)

    def handle_data(self, data):
        if not self._hidden and data.strip():
            self.current.append(" ".join(data.split()))

    def _flush(self, cell: bool):
        if self.current and cell:
            self.current.append("|")
            return
        text = " ".join(self.current).strip(" |")
        if text:
            self.lines.append(text)
        self.current = []


def _mask(text: str) -> str:
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return text


def _shape(url: str) -> str:
    parts = urlsplit(url)
    query = "&".join(sorted(re.sub(r"=.*", "=", p) for p in parts.query.split("&") if p))
    return re.sub(r"\d+", "N", parts.path) + "?" + query


def _file_name(url: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", url.strip("/"))[:180] or "home"


def describe(response) -> tuple[str, list[str]]:
    """The figures of one answer as text, and the same-site links it holds."""
    kind = response.get("Content-Type", "").split(";")[0]
    head = f"{response.status_code} {kind}\n"
    if response.status_code in (301, 302, 303, 307, 308):
        return head + f"Location: {_mask(response['Location'])}\n", [response["Location"]]
    body = b"".join(response.streaming_content) if response.streaming else response.content
    text = body.decode("utf-8", "replace")
    if kind == "application/json":
        try:
            return head + _mask(json.dumps(json.loads(text), indent=1, sort_keys=True, ensure_ascii=False)) + "\n", []
        except ValueError:
            return head + _mask(text), []
    if kind != "text/html":
        return head + _mask(text), []
    page = _Page()
    page.feed(text)
    page._flush(False)
    links = [urldefrag(link)[0] for link in page.links]
    return (
        head
        + _mask("\n".join(page.lines))
        + "\n\n## links\n"
        + _mask("\n".join(links))
        + "\n\n## fields\n"
        + _mask("\n".join(page.fields))
        + "\n"
    ), links


class Command(BaseCommand):
    help = "Write what every page, export and API answer shows, per role, as text files (to diff before and after a change)."

    def add_arguments(self, parser):
        parser.add_argument("out", type=Path, help="folder to write (one sub-folder per role)")
        parser.add_argument("--per-role", type=int, default=PER_ROLE, help="most answers per role")

    def handle(self, *args, out: Path, per_role: int, **opts):
        seeds = [
            "/",
            "/jobs/",
            "/audits/",
            "/audits/mine/",
            "/help/metrics/",
            "/api/benchmarks/",
            "/api/runs/",
            "/api/jobs/",
            "/api/attempts/",
            "/api/audits/campaigns/",
        ]
        for benchmark in Benchmark.objects.order_by("slug"):
            seeds += [f"/api/leaderboards/{benchmark.slug}/", f"/b/{benchmark.slug}/search/?q=the"]
            seeds += [
                f"/api/{kind}-metrics/?benchmark={benchmark.slug}"
                for kind in ("choice", "conflict", "dialogue", "hierarchy")
            ]
        for username in ROLES:
            user = get_user_model().objects.filter(username=username).first()
            if user is None:
                self.stderr.write(f"no user {username}: run manage.py demo and demo_login first")
                continue
            client = Client(HTTP_HOST="127.0.0.1")
            client.force_login(user)
            written = self._walk(client, seeds, out / username, per_role)
            self.stdout.write(f"{username}: {written} answers")

    def _walk(self, client: Client, seeds: list[str], folder: Path, limit: int) -> int:
        folder.mkdir(parents=True, exist_ok=True)
        queue, seen, shapes, written = deque(seeds), set(seeds), {}, 0
        while queue and written < limit:
            url = queue.popleft()
            text, links = describe(client.get(url))
            (folder / f"{_file_name(url)}.txt").write_text(f"GET {url}\n{text}")
            written += 1
            for link in sorted(set(links)):
                target = urljoin(url, link)
                parts = urlsplit(target)
                if parts.netloc not in ("", "127.0.0.1") or parts.scheme not in ("", "http"):
                    continue
                local = parts.path + (f"?{parts.query}" if parts.query else "")
                if local in seen or local.startswith(SKIP_PREFIXES):
                    continue
                shape = _shape(local)
                if shapes.get(shape, 0) >= PER_SHAPE:
                    continue
                shapes[shape] = shapes.get(shape, 0) + 1
                seen.add(local)
                queue.append(local)
        return written
