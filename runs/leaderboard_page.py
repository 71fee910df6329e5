"""The checklist leaderboard page's HTML: its #results fragment (exclusion box, table or matrix, chart) and filter
form, rendered once per (benchmark, data generation, validated state) and kept in the cache, and the whole page as
sent. The state and the data come from runs.selectors.checklist; this module renders them.

The fragment holds nothing about who asks: the CSRF token and the user's name are in
base.html and the Share form, outside it. Its links embed the state's canonical query string
(`runs.selectors.checklist.state_query`: known parameters, sorted lists, no defaults), never the request's
own, so unknown parameters, repeats and orderings all land on one entry. Its key carries that
query, whether it is an htmx swap (which adds the Share form's out-of-band state field), the
benchmark's slug and the URL prefix (its links), and the state's digest with the excluded item
ids (an exclusion policy's items come from audits). Entries move with the data generation like
the tables (`runs.cache.cached`); `page_parts` gets the fragment and the filter form in one cache
round trip.

`full_page` keeps the whole page as sent, per state and per viewer (their name, in the header, and
whether they label blind and whether they may write, which decide the page's controls), with a placeholder where the CSRF
token goes: a warm page is then one cache read and a string replacement, not the shell's rendering
(a third of a warm request's CPU at 100 models; docs/performance.md). The placeholder is derived
from SECRET_KEY, so text in the data cannot plant one; the token itself never enters the cache.
A request with a message to show (Django's messages, shown once, or a note on its query) gets the page rendered,
uncached.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache

from django.conf import settings
from django.contrib.messages import get_messages
from django.middleware.csrf import get_token
from django.template.loader import render_to_string
from django.urls import get_script_prefix
from django.utils.crypto import salted_hmac
from django.utils.safestring import SafeString

from runs.access import request_can_write
from runs.cache import cached, cached_many
from runs.exclusions import excluded_item_ids
from runs.metrics.checklist import GROUPINGS, SMALL_CELL, reference_notes
from runs.models import ReportStatus
from runs.selectors.checklist import (
    SORTS,
    ChecklistQuery,
    LeaderboardFilterForm,
    exclusion_effect,
    is_default,
    leaderboard_tables,
    scorers_of,
    state_digest,
)
from runs.selectors.reported import reported_figures
from runs.selectors.run_status import page_status

TEMPLATE = "runs/checklist/leaderboard.html"


def results_html(parsed: ChecklistQuery, *, request=None) -> SafeString:
    """The #results fragment of the leaderboard for a parsed query (runs.selectors.checklist.checklist_query);
    `request` tells whether it is an htmx swap and whether the user is a blind annotator (no drill-down links).
    Cached per data generation and state."""
    part, render = _results(parsed, request)
    # kept as the SafeString the template engine made (pickled with its type): anything else in the
    # cache under this key is a miss, so only escaped template output is ever embedded unescaped
    return cached(parsed.benchmark.id, part, render, kind=SafeString, charged=not is_default(parsed.state))


def page_parts(parsed: ChecklistQuery, *, request=None) -> tuple[SafeString, SafeString]:
    """(#results fragment, filter form) of the full page, read from the cache in one round trip."""
    results, filters = _results(parsed, request), _filters(parsed, request)
    # the page as first opened is one per generation whoever asks (and after a deploy, before any writer
    # warmed it, someone past their budget must still leave it for the next): charged to no one
    found = cached_many(
        parsed.benchmark.id,
        {results[0]: (results[1], SafeString), filters[0]: (filters[1], SafeString)},
        charged=not is_default(parsed.state),
    )
    return found[results[0]], found[filters[0]]


def full_page(request, parsed: ChecklistQuery, context: dict) -> str:
    """The whole page for a parsed query as this request's user gets it: cached per data generation, state and
    viewer (name, blind or not, may write or not: the Share form) with the CSRF token filled in per request;
    `context` is what the page's template needs besides the fragments, which `page_parts` adds when the page is
    rendered."""
    if len(get_messages(request)) or parsed.notes:  # messages counted, not read: reading marks them shown
        return _page(request, parsed, context, token=None)
    benchmark = parsed.benchmark
    part = _part(
        "page",
        benchmark,
        parsed.params.urlencode(),
        _blind(request),
        request_can_write(request),
        request.user.get_username(),
        request.path,
        benchmark.name,
        benchmark.kind,
        benchmark.searchable,
    )
    html = cached(
        benchmark.id,
        part,
        lambda: _page(request, parsed, context, token=csrf_placeholder()),
        kind=str,
        charged=not is_default(parsed.state),
    )
    return html.replace(csrf_placeholder(), get_token(request))


def csrf_placeholder() -> str:
    """What a cached page holds where the CSRF token goes: as long as a token, made of its characters, and
    unknown to anyone without SECRET_KEY (computed once per key, not twice per request)."""
    return _placeholder_of(settings.SECRET_KEY)


@lru_cache(maxsize=2)
def _placeholder_of(secret: str) -> str:
    return (
        "ifp"
        + salted_hmac("runs.leaderboard_page.csrf_placeholder", "page", secret=secret, algorithm="sha256").hexdigest()[
            :61
        ]
    )


def _page(request, parsed: ChecklistQuery, context: dict, *, token: str | None) -> str:
    """The page rendered (with `token` for the CSRF token when given: the cached copy's placeholder)."""
    results, filters = page_parts(parsed, request=request)
    context = {**context, "results": results, "filters": filters} | ({"csrf_token": token} if token else {})
    return str(render_to_string(TEMPLATE, context, request))


def _results(parsed: ChecklistQuery, request):
    """The cache part and the renderer of the #results fragment."""
    benchmark, state, params = parsed.benchmark, parsed.state, parsed.params
    excluded = excluded_item_ids(benchmark, state["exclude"])
    htmx = bool(request is not None and getattr(request, "htmx", False))
    query = params.urlencode()
    part = _part("results", benchmark, query, htmx, _blind(request), state_digest(state, excluded))

    def render() -> str:
        tables = leaderboard_tables(benchmark, state, excluded_items=excluded)
        exclusion = exclusion_effect(benchmark, state, tables, excluded, params) if excluded is not None else None
        effects = exclusion["rows"] if exclusion else {}
        context = {
            "benchmark": benchmark,
            "state": state,
            "query": query,
            "params": params,
            "small": SMALL_CELL,
            "exclusion": exclusion,
            "lines": [{"row": r, "effect": effects.get(r.model)} for r in tables.overall],
            "overall": tables.overall,
            "sorts": SORTS,
            "groupings": GROUPINGS,
            "groups": tables.groups,
            "matrix": tables.matrix,
            "figure": tables.figure,
            "reference": (notes := reference_notes(tables.overall)),
            "scorers": scorers_of(benchmark),
            "unscored_reasons": [(ReportStatus(status).label, n) for status, n in sorted(notes.unscored.items())],
            # the same for every state, cached and warmed with the rest of the fragment
            "reported": reported_figures(benchmark_id=benchmark.id),
            # the incomplete runs, and `live`: the fragment polls for itself while a run is being written (its
            # figures grow as samples land; the cached copy goes with the data generation the import moves)
            **page_status(benchmark_id=benchmark.id),
        }
        return render_to_string(f"{TEMPLATE}#results", context, request)

    return part, render


def _filters(parsed: ChecklistQuery, request):
    """The cache part and the renderer of the filter form (bound to the canonical query, not the request's)."""
    benchmark, query = parsed.benchmark, parsed.params

    def render() -> str:
        form = LeaderboardFilterForm(query or None, benchmark=benchmark)
        return render_to_string(f"{TEMPLATE}#filters", {"benchmark": benchmark, "form": form}, request)

    return _part("filters", benchmark, query.urlencode(), _blind(request)), render


def _blind(request) -> bool:
    """Whether the fragment is for a blind annotator (its links and controls differ: runs.access)."""
    return bool(request is not None and getattr(request, "blind_annotator", False))


def _part(name: str, benchmark, query: str, *more) -> str:
    """The cache part of one rendered piece: its name and a digest of what its HTML embeds besides the data."""
    where = json.dumps([benchmark.slug, get_script_prefix(), query, *more])
    return f"{name}:" + hashlib.sha256(where.encode()).hexdigest()
