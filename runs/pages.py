"""The page frame's capabilities, built once: CSV/JSON exports and frozen share snapshots of any page.

A page view renders through `render_page`, naming a function that turns its context into
`PageData` (its tables and charts, as the page shows them; those functions live in
`runs/exports/<kind>.py`). The frame then gives the page, with no code of its own:

- `?export=csv&table=<name>` and `?export=json`: the page's tables for the page's own state,
  through the page's own view (so its access rules hold for the export too). CSV rounds as
  the page shows numbers; JSON keeps full precision and the page's state.
- a share snapshot: `page_snapshot` runs the page's view for a path and query, as the user
  who shares it, and keeps its PageData and the page as it was shown (`runs.frozen_html`):
  the public share page shows that markup, with every note, spread and heading of the page,
  and exports the frozen data, whatever happens to the data afterwards.
- the toolbar (`templates/runs/partials/_page_tools.html`) with the export links and the
  Share form, shown only to users who may share. The builder declares its tables
  (`page_builder`), so a page's plain render lists them without building them: the builder
  runs only for an export or a snapshot.
- frozen attempt pages: a column may link each row to an attempt (`Column.link`); a snapshot
  made with its attempts lists those attempts, and the share link opens each of them
  read-only with the verdicts the page read (its `judges`) as they were when it was made.
- tables per viewer: a builder marks the tables whose rows are single items (`per_item`: an
  attempt, a sample, a turn, a task each). A viewer who reads aggregates only (a blind
  annotator, `runs.access.request_is_blind`) gets the page's declaration without them
  (`viewer_declaration`), and the frame takes the tables it gives out from that declaration
  alone: the toolbar does not offer them, the page's exports and snapshots do not hold them,
  and `?export=csv&table=` answers such a table as one the page does not have.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Collection, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import Resolver404, resolve

from runs.access import request_is_blind
from runs.frozen_html import frozen_page
from runs.rounding import shown_number


def csv_safe(value):
    """A CSV cell a spreadsheet will not read as a formula: text starting with = + - @ (or tab, CR) gets a leading '."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


EXPORT_FORMATS = ("csv", "json")
#: the route the frame's Share form posts to (runs.views.sharing.page_share_create), for every page
SHARE_ROUTE = "runs:page-share-create"
#: the frame's toolbar (exports and the Share form) and the id it carries on every page
TOOLBAR_TEMPLATE = "runs/partials/_page_tools.html"
TOOLBAR_ID = b'id="page-tools"'
#: query parameters that address the frame, not the page's state
FRAME_PARAMS = ("export", "table", "page", "fragment")
#: column kinds: how the page shows a number, and so how CSV rounds it
COLUMN_KINDS = ("text", "pct", "num", "int")


@dataclass(frozen=True)
class Column:
    """One column of a page table: its key in the rows, its heading, how its values are shown."""

    key: str
    label: str
    kind: str = "text"
    places: int = 2
    #: the row key holding the id of the attempt this cell links to ("" for none): a share link's page links it
    #: to the attempt's frozen page
    link: str = ""

    def shown(self, value: Any) -> Any:
        """The value as the page shows it: rates and numbers with `places` decimals, rounded as templates round them
        (runs.rounding), counts whole, text as is."""
        if value is None:
            return ""
        if self.kind in ("pct", "num") and isinstance(value, (int, float)) and not isinstance(value, bool):
            return shown_number(value, self.places)
        return value

    def csv_cell(self, value: Any) -> Any:
        """The value as shown, and text that a spreadsheet would read as a formula neutralised (numbers stay numbers)."""
        shown = self.shown(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and self.kind != "text":
            return shown
        return csv_safe(shown)


@dataclass(frozen=True)
class Table:
    """One table of a page: a name for ?table=, a title, its columns and its rows (dicts keyed by column)."""

    name: str
    title: str
    columns: tuple[Column, ...]
    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class PageData:
    """What a page shows, as data: its title, tables, charts (Plotly figure dicts) and help anchor."""

    title: str
    tables: list[Table]
    figures: list[dict] = field(default_factory=list)
    help_anchor: str = ""
    #: what the numbers were computed under that the query string may leave implicit (judge, patience...)
    facts: dict[str, Any] = field(default_factory=dict)
    #: the judges whose verdicts the page reads, None for every judge: a share link's attempt pages show only theirs
    judges: list[str] | None = None
    #: what a snapshot keeps besides the tables for a page with a layout of its own (the checklist leaderboard's
    #: rows and matrix, runs.selectors.checklist.leaderboard_layout), merged into the snapshot
    layout: dict[str, Any] = field(default_factory=dict)

    def attempt_ids(self) -> list[int]:
        """The attempts the page links to (the `link` columns of its tables), in id order."""
        return sorted(
            {
                int(row[c.link])
                for t in self.tables
                for c in t.columns
                if c.link
                for row in t.rows
                if row.get(c.link) is not None
            }
        )


PageDataBuilder = Callable[[dict], PageData]


#: a page's frozen attempt lists for a snapshot made with its attempts, from the view's context:
#: {"judges": [names], "attempts": {id: facts}, "cells": {key: [[attempt id, ...], ...]}} (runs.selectors.checklist)
AttemptLists = Callable[[dict], dict]


@dataclass(frozen=True)
class Declared:
    """What a PageData builder declares without running: its tables (name, title), whether rows link to attempts,
    for a page whose cells lead to lists of attempts, the function that freezes those lists, and which tables hold
    single items."""

    tables: tuple[tuple[str, str], ...]
    links_attempts: bool = False
    attempt_lists: AttemptLists | None = None
    #: the tables whose rows are single items (an attempt, a sample, a turn, a task) with what was found of each
    per_item: frozenset[str] = frozenset()

    def for_viewer(self, *, reads_items: bool) -> Declared:
        """The declaration as a viewer gets it: whole, or for a viewer who reads aggregates only, without the per-item
        tables and without the attempts the page leads to (each is a single item too)."""
        if reads_items:
            return self
        return replace(
            self,
            tables=tuple(t for t in self.tables if t[0] not in self.per_item),
            links_attempts=False,
            attempt_lists=None,
        )


def page_builder(
    *tables: tuple[str, str],
    links_attempts: bool = False,
    attempt_lists: AttemptLists | None = None,
    per_item: Collection[str] = (),
) -> Callable[[PageDataBuilder], PageDataBuilder]:
    """Declare the tables a PageData builder returns, in order (name, title), whether its rows link to attempts
    (or, with `attempt_lists`, to lists of attempts), and the names of its `per_item` tables (a row per attempt,
    sample, turn or task): the toolbar lists them from the declaration, so a plain render never runs the builder."""
    unknown = set(per_item) - {name for name, _ in tables}
    if unknown:
        raise TypeError(f"per_item names tables the builder does not declare: {sorted(unknown)}")

    def mark(builder: PageDataBuilder) -> PageDataBuilder:
        builder.declared = Declared(
            tuple(tables), links_attempts or attempt_lists is not None, attempt_lists, frozenset(per_item)
        )
        return builder

    return mark


def declared(builder: PageDataBuilder) -> Declared:
    """A builder's declaration; a builder without one is a programming error, named here."""
    found = getattr(builder, "declared", None)
    if found is None:
        raise TypeError(
            f"{builder.__module__}.{builder.__qualname__} declares no tables: decorate it with @page_builder"
        )
    return found


def viewer_declaration(request: HttpRequest, builder: PageDataBuilder) -> Declared:
    """A builder's declaration for the request's user: without its per-item tables for a blind annotator."""
    return declared(builder).for_viewer(reads_items=not request_is_blind(request))


def viewer_page_data(request: HttpRequest, builder: PageDataBuilder, context: dict) -> PageData:
    """What the page gives the request's user to export or freeze: the builder's data with only the tables their
    declaration names (`viewer_declaration`), whatever else the builder returned."""
    data = builder(context)
    names = {name for name, _ in viewer_declaration(request, builder).tables}
    return replace(data, tables=[t for t in data.tables if t.name in names])


class PageDataResponse(HttpResponse):
    """What a page view returns while a snapshot is taken: its PageData, not HTML, and the slug of the benchmark the
    page showed (a page whose address names no benchmark, as an instance's, is frozen only for its own)."""

    def __init__(self, data: PageData, *, benchmark_slug: str | None = None):
        super().__init__(status=200)
        self.page_data = data
        self.benchmark_slug = benchmark_slug


# rendering --------------------------------------------------------------------------------
def render_page(
    request: HttpRequest, template: str, context: dict, *, page_data: PageDataBuilder, fragment: str | None = "results"
) -> HttpResponse:
    """Render a page (or its `fragment` partial for htmx), or its export, or its snapshot data."""
    response = frame_response(request, context, page_data=page_data)
    if response is not None:
        return response
    context["page_tools"] = page_tools(request, page_data)
    if (
        request.htmx and fragment and request.htmx.target in (None, fragment)
    ):  # the page's own fragment, not a nested one
        return swap_response(request, render_to_string(f"{template}#{fragment}", context, request), context)
    return render(request, template, context)


def swap_response(request: HttpRequest, html: str, context: dict) -> HttpResponse:
    """An htmx swap's answer: the swapped fragment's HTML and, when the fragment does not hold the toolbar (the choice
    pages' head, the drill-down's pager, the leaderboard's cached results), the new state's toolbar out of band, so
    Export and Share never keep the state before the swap. `context` holds the toolbar's `page_tools`."""
    if TOOLBAR_ID not in html.encode():
        html += render_to_string(TOOLBAR_TEMPLATE, {**context, "oob": True}, request)
    return HttpResponse(html)


def frame_response(request: HttpRequest, context: dict, *, page_data: PageDataBuilder) -> HttpResponse | None:
    """The frame's answer when the request asks for the page's data (a snapshot being taken, `?export=`), else None:
    the only place a page's builder runs."""
    if getattr(request, "page_snapshot", False):
        data = viewer_page_data(request, page_data, context)
        lists = viewer_declaration(request, page_data).attempt_lists
        if getattr(request, "page_snapshot_attempts", False) and lists is not None:
            data = replace(data, layout={**data.layout, "drilldown": lists(context)})
        return PageDataResponse(data, benchmark_slug=_slug_of(context))
    fmt = request.GET.get("export")
    if fmt:
        return export_response(
            viewer_page_data(request, page_data, context),
            fmt=fmt,
            table=request.GET.get("table"),
            filename=export_filename(request),
            state=page_state(request.GET),
        )
    return None


def _slug_of(context: dict) -> str | None:
    benchmark = context.get("benchmark")
    return getattr(benchmark, "slug", None)


def page_state(query: QueryDict) -> dict[str, list[str]]:
    """The page's state from its query string: every parameter but the frame's own."""
    return {k: query.getlist(k) for k in sorted(query) if k not in FRAME_PARAMS}


def page_query(query: QueryDict) -> str:
    """The query string of the page's state (frame parameters dropped), for export and share links."""
    kept = query.copy()
    for key in FRAME_PARAMS:
        kept.pop(key, None)
    return kept.urlencode()


def page_tools(request: HttpRequest, builder: PageDataBuilder, *, state: QueryDict | None = None) -> dict:
    """The toolbar's facts: export links per table the builder declares for this user (`viewer_declaration`), the
    names of those tables (`shown`: a template shows a per-item table only when it is there), the page's path for
    the Share form, who may share, whether the form offers to include the attempts the page links to. Links carry
    `state` (a page's canonical query) when given, else the request's query."""
    declaration = viewer_declaration(request, builder)
    query = page_query(request.GET if state is None else state)
    base = f"{request.path}?{query + '&' if query else ''}"
    return {
        "tables": [
            {"name": name, "title": title, "csv": f"{base}export=csv&table={name}"}
            for name, title in declaration.tables
        ],
        "shown": [name for name, _ in declaration.tables],
        "json": f"{base}export=json",
        "path": f"{request.path}{'?' + query if query else ''}",
        "query": query,
        "links_attempts": declaration.links_attempts,
        # the Share form's target: the template asks {% reachable %} (runs.access) for this very route before it shows
        # the form, so no role is shown a control that answers 403
        "share_route": SHARE_ROUTE,
    }


def export_filename(request: HttpRequest) -> str:
    """A file name from the page's path: /b/evolif/dialogue/survival/ -> evolif-dialogue-survival."""
    parts = [p for p in request.path.split("/") if p and p != "b"]
    return "-".join(parts) or "export"


# exports ------------------------------------------------------------------------------------
def export_response(data: PageData, *, fmt: str, table: str | None, filename: str, state: dict) -> HttpResponse:
    """The page's tables as CSV (one table, rounded as shown) or JSON (all tables, full precision)."""
    if fmt not in EXPORT_FORMATS:
        return HttpResponse(f"Unknown export format {fmt!r}: use csv or json.", status=400, content_type="text/plain")
    if fmt == "csv":
        chosen = next((t for t in data.tables if t.name == table), None) if table else (data.tables or [None])[0]
        if chosen is None:
            names = ", ".join(t.name for t in data.tables) or "none"
            return HttpResponse(
                f"This page has no table {table!r} (tables: {names}).", status=400, content_type="text/plain"
            )
        response = HttpResponse(table_csv(chosen), content_type="text/csv; charset=utf-8")
        if not filename.endswith(
            f"-{chosen.name}"
        ):  # a page's table named after the page: octobench-leaderboard, not -leaderboard-leaderboard
            filename = f"{filename}-{chosen.name}"
    else:
        response = HttpResponse(
            json.dumps(export_document(data, state), cls=DjangoJSONEncoder, ensure_ascii=False, indent=1),
            content_type="application/json",
        )
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    return response


def table_csv(table: Table) -> str:
    """One table as CSV: a header of column labels, values as the page shows them, no cell a formula."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([csv_safe(c.label) for c in table.columns])
    for row in table.rows:
        writer.writerow([c.csv_cell(row.get(c.key)) for c in table.columns])
    return out.getvalue()


def export_document(data: PageData, state: dict) -> dict:
    """The JSON export: title, the state and facts it was computed under, every table with full-precision values
    (a reference scorer's nan or inf as the text it prints, which JSON has no number for)."""
    document = {
        "title": data.title,
        "state": state,
        "facts": data.facts,
        "tables": [
            {
                "name": t.name,
                "title": t.title,
                "columns": [asdict(c) for c in t.columns],
                "rows": [{k: _json_number(v) for k, v in row.items()} for row in t.rows],
            }
            for t in data.tables
        ],
    }
    return document | {
        k: v for k, v in data.layout.items() if k != "drilldown"
    }  # a page's own layout (the leaderboard's rows)


def _json_number(value: Any) -> Any:
    return str(value) if isinstance(value, float) and not math.isfinite(value) else value


# snapshots ----------------------------------------------------------------------------------
class NotShareable(ValueError):
    """A path that is not a page of this benchmark rendered through the frame."""


def page_snapshot(request: HttpRequest, *, path: str, benchmark_slug: str, include_attempts: bool = False) -> dict:
    """Run the page at `path` (path and query) as the requesting user and freeze what it shows.

    Only pages of `benchmark_slug` rendered through `render_page` can be frozen; the page's own
    view and its access rules run, so a user can freeze only what they may see. With
    `include_attempts`, the snapshot lists the attempts its rows link to ("attempts") and the
    judges whose verdicts the page read ("judges", None for every judge): the link opens those
    attempts, and shows those judges' verdicts stored before it was made (`runs.sharing`)."""
    parts = urlsplit(path)
    if parts.scheme or parts.netloc or not parts.path.startswith("/"):
        raise NotShareable("not a page of this portal")
    try:
        match = resolve(parts.path)
    except Resolver404 as exc:
        raise NotShareable("no such page") from exc
    if match.kwargs.get("slug", benchmark_slug) != benchmark_slug:
        raise NotShareable("not a page of this benchmark")
    sub = _page_request(request, parts)
    sub.page_snapshot, sub.page_snapshot_attempts = True, include_attempts
    response = match.func(sub, *match.args, **match.kwargs)
    if not isinstance(response, PageDataResponse):
        raise NotShareable("this page cannot be shared")
    if response.benchmark_slug != benchmark_slug:  # an address without the benchmark: the page's own must match
        raise NotShareable("not a page of this benchmark")
    data, params = response.page_data, page_state(sub.GET)
    snapshot = {
        **export_document(data, params),
        "kind": "page",
        "path": parts.path,
        "query": sub.GET.urlencode(),
        "state": {"page": data.title, "params": params},
        "help_anchor": data.help_anchor,
        "figures": data.figures,
        "attempts": [],
        "judges": data.judges,
        **data.layout,
        "layout_keys": sorted(data.layout),
    }
    if include_attempts:
        listed = (data.layout.get("drilldown") or {}).get("attempts") or {}
        snapshot["attempts"] = sorted(set(data.attempt_ids()) | {int(i) for i in listed})
    # the page itself, as the user saw it (first page of a paged list): the public page shows this markup, so it
    # says everything the page said, in the page's words and layout; the tables above are its downloads
    shown = match.func(_page_request(request, parts), *match.args, **match.kwargs)
    if shown.status_code == 200 and shown.get("Content-Type", "").startswith("text/html"):
        snapshot["shown"] = frozen_page(shown.content.decode(shown.charset or "utf-8"))
    return snapshot


def _page_request(request: HttpRequest, parts) -> HttpRequest:
    """A plain GET of the page at `parts` (path and query, frame parameters dropped) as the user of `request`."""
    sub = HttpRequest()
    sub.method, sub.path, sub.path_info = "GET", parts.path, parts.path
    sub.GET = QueryDict(page_query(QueryDict(parts.query)))
    sub.user, sub.META, sub.htmx = request.user, {**request.META, "QUERY_STRING": sub.GET.urlencode()}, False
    sub.session = getattr(request, "session", None)
    return sub


def snapshot_page_data(snapshot: dict) -> PageData:
    """The frozen PageData of a page snapshot."""
    tables = [
        Table(t["name"], t["title"], tuple(Column(**c) for c in t["columns"]), t["rows"]) for t in snapshot["tables"]
    ]
    return PageData(
        title=snapshot["title"],
        tables=tables,
        figures=snapshot.get("figures") or [],
        help_anchor=snapshot.get("help_anchor", ""),
        facts=snapshot.get("facts") or {},
        judges=snapshot.get("judges"),
        layout={k: snapshot[k] for k in snapshot.get("layout_keys", ())},
    )


def shown_rows(table: Table, *, attempts: Collection[int] = ()) -> list[list[tuple[Any, bool, int | None]]]:
    """A table's rows as the page shows them, each cell (value, numeric?, attempt id it links to or None) for the
    generic snapshot template; only `attempts` (those the link opens) are linked."""
    allowed = set(attempts)

    def target(column: Column, row: dict) -> int | None:
        value = row.get(column.link) if column.link else None
        return int(value) if value is not None and int(value) in allowed else None

    return [[(c.shown(row.get(c.key)), c.kind != "text", target(c, row)) for c in table.columns] for row in table.rows]


def rows_of(items: Iterable[Any], **getters: Callable[[Any], Any]) -> list[dict[str, Any]]:
    """Rows for a Table: one dict per item, one key per getter."""
    return [{key: get(item) for key, get in getters.items()} for item in items]
