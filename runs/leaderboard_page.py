"""The checklist leaderboard page's #results fragment (exports, exclusion box, table or matrix, chart),
rendered once per (benchmark, data generation, validated state) and kept as HTML in the cache.

The fragment holds nothing about who asks: the CSRF token and the user's name are in
base.html and the Share form, outside it. Its links embed the state's canonical query string
(`runs.filters.state_query`: known parameters, sorted lists, no defaults), never the request's
own, so unknown parameters, repeats and orderings all land on one entry. Its key carries that
query, whether it is an htmx swap (which adds the Share form's out-of-band state field), the
benchmark's slug and the URL prefix (its links), and the state's digest with the excluded item
ids (an exclusion policy's items come from audits). Entries move with the data generation like
the tables (`runs.cache.cached`); `page_parts` gets the fragment and the filter form in one cache
round trip.

`warm_default` computes what the first viewer after a data change would otherwise pay for
(the default state's tables, fragment and filter choices); jobs call it after they commit.

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
import logging
from collections.abc import Iterable
from functools import lru_cache

from django.conf import settings
from django.contrib.messages import get_messages
from django.http import QueryDict
from django.middleware.csrf import get_token
from django.template.loader import render_to_string
from django.utils.crypto import salted_hmac
from django.urls import get_script_prefix
from django.utils.safestring import SafeString

from runs.access import request_can_write
from runs.exclusions import exclusion_explain_url, exclusion_policy_label, exclusion_sources, excluded_item_ids
from runs.filters import SORTS, LeaderboardFilterForm, filter_choices, state_of, state_query
from runs.cache import cache_scope, cached, cached_many
from runs.leaderboard_rows import is_default, leaderboard_tables, state_digest
from runs.metrics import rank_change
from runs.metrics.checklist import GROUPINGS, SMALL_CELL, reference_notes
from runs.models import ReportStatus, Run
from runs.querystring import params_with

log = logging.getLogger(__name__)

TEMPLATE = "runs/checklist/leaderboard.html"
#: the ingest formats (the first word of a name in runs.ingest.FORMATS) whose reference scorer the page speaks of, in
#: this order: mini-vela's evaluate.py, Inspect AI's scorers, lm-evaluation-harness; the portal's native format has none
SCORED_BY = ("octobench", "inspect", "lm", "native")


def results_html(benchmark, state: dict, *, request=None) -> SafeString:
    """The #results fragment of the leaderboard for a validated state; `request` tells whether it is an htmx
    swap and whether the user is a blind annotator (no drill-down links). Cached per data generation and state."""
    part, render = _results(benchmark, state, request)
    # kept as the SafeString the template engine made (pickled with its type): anything else in the
    # cache under this key is a miss, so only escaped template output is ever embedded unescaped
    return cached(benchmark.id, part, render, kind=SafeString, charged=not is_default(state))


def page_parts(benchmark, state: dict, *, request=None) -> tuple[SafeString, SafeString]:
    """(#results fragment, filter form) of the full page, read from the cache in one round trip."""
    results, filters = _results(benchmark, state, request), _filters(benchmark, state, request)
    # the page as first opened is one per generation whoever asks (and after a deploy, before any writer
    # warmed it, someone past their budget must still leave it for the next): charged to no one
    found = cached_many(benchmark.id, {results[0]: (results[1], SafeString), filters[0]: (filters[1], SafeString)},
                        charged=not is_default(state))
    return found[results[0]], found[filters[0]]


def full_page(request, benchmark, state: dict, context: dict) -> str:
    """The whole page for a validated state as this request's user gets it: cached per data generation, state
    and viewer (name, blind or not, may write or not: the Share form) with the CSRF token filled in per request; `context` is what the page's
    template needs besides the fragments, which `page_parts` adds when the page is rendered."""
    if len(get_messages(request)) or context.get("query_notes"):  # messages counted, not read: reading marks them shown
        return _page(request, benchmark, state, context, token=None)
    part = _part("page", benchmark, state_query(state).urlencode(), _blind(request), request_can_write(request),
                 request.user.get_username(), request.path, benchmark.name, benchmark.kind, benchmark.searchable)
    html = cached(benchmark.id, part, lambda: _page(request, benchmark, state, context, token=csrf_placeholder()),
                  kind=str, charged=not is_default(state))
    return html.replace(csrf_placeholder(), get_token(request))


def csrf_placeholder() -> str:
    """What a cached page holds where the CSRF token goes: as long as a token, made of its characters, and
    unknown to anyone without SECRET_KEY (computed once per key, not twice per request)."""
    return _placeholder_of(settings.SECRET_KEY)


@lru_cache(maxsize=2)
def _placeholder_of(secret: str) -> str:
    return "ifp" + salted_hmac("runs.leaderboard_page.csrf_placeholder", "page", secret=secret,
                               algorithm="sha256").hexdigest()[:61]


def _page(request, benchmark, state: dict, context: dict, *, token: str | None) -> str:
    """The page rendered (with `token` for the CSRF token when given: the cached copy's placeholder)."""
    results, filters = page_parts(benchmark, state, request=request)
    context = {**context, "results": results, "filters": filters} | ({"csrf_token": token} if token else {})
    return str(render_to_string(TEMPLATE, context, request))


def _results(benchmark, state: dict, request):
    """The cache part and the renderer of the #results fragment."""
    params = state_query(state)
    excluded = excluded_item_ids(benchmark, state["exclude"])
    htmx = bool(request is not None and getattr(request, "htmx", False))
    query = params.urlencode()
    part = _part("results", benchmark, query, htmx, _blind(request), state_digest(state, excluded))

    def render() -> str:
        tables = leaderboard_tables(benchmark, state, excluded_items=excluded)
        exclusion = _exclusion_box(benchmark, state, tables, excluded, params) if excluded is not None else None
        effects = exclusion["rows"] if exclusion else {}
        context = {"benchmark": benchmark, "state": state, "query": query, "params": params, "small": SMALL_CELL, "exclusion": exclusion,
                   "lines": [{"row": r, "effect": effects.get(r.model)} for r in tables.overall],
                   "overall": tables.overall, "sorts": SORTS, "groupings": GROUPINGS,
                   "groups": tables.groups, "matrix": tables.matrix, "figure": tables.figure,
                   "reference": (notes := reference_notes(tables.overall)), "scorers": scorers_of(benchmark),
                   "unscored_reasons": [(ReportStatus(status).label, n) for status, n in sorted(notes.unscored.items())]}
        return render_to_string(f"{TEMPLATE}#results", context, request)

    return part, render


def scorers_of(benchmark) -> list[str]:
    """Which of SCORED_BY the benchmark's runs were imported in, from the files each run records (Run.sources): the
    reference scorers the page speaks of (read when the fragment is rendered, so once per data generation and state)."""
    formats = {str(source.get("format") or "").split("-")[0]
               for sources in Run.objects.filter(benchmark=benchmark).values_list("sources", flat=True).order_by()
               for source in sources if isinstance(source, dict)}
    return [name for name in SCORED_BY if name in formats]


def _filters(benchmark, state: dict, request):
    """The cache part and the renderer of the filter form."""
    query = state_query(state)

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


def _exclusion_box(benchmark, state: dict, tables, excluded, params: QueryDict) -> dict:
    """The page's exclusion box: what the state's exclusion policy did to each model's ISR and rank, Kendall's tau,
    the swaps (the audits' effect page, audits.effect.exclusion_effect, also explains the swaps from verdicts)."""
    before = leaderboard_tables(benchmark, state | {"exclude": "none", "by": "model", "ci": False}).overall
    rows, tau, swaps = rank_change.compare(before, tables.overall)
    explain = exclusion_explain_url(benchmark, state["exclude"])
    filters = params_with(params, exclude=None, by=None, sort=None, ci=None)
    return {"policy": state["exclude"], "label": exclusion_policy_label(state["exclude"]), "n_excluded": len(excluded),
            "sources": exclusion_sources(benchmark, state["exclude"]),
            "rows": {r.model: r for r in rows}, "tau": tau, "swaps": swaps,
            "explain_url": f"{explain}&{filters}" if explain and filters else explain,
            "off_query": params_with(params, exclude=None)}


def warm_default(benchmark_ids: Iterable[int]) -> None:
    """Compute and cache, for these benchmarks' current generation, the summary every leaderboard state is
    derived from (runs.leaderboard_rows.leaderboard_base) and the default leaderboard (no filters, by model,
    best ISR first, every item: the page as first opened): its tables, #results fragment, filter form and
    choices, so no viewer after a data change pays for them. Writers call it once their change committed
    (runs.services); benchmarks without rollups are skipped."""
    _warm(sorted(set(benchmark_ids)))


def _warm(ids: list[int]) -> None:
    from runs.models import AttemptRollup, Benchmark, BenchmarkKind

    with_rollups = set(AttemptRollup.objects.filter(benchmark_id__in=ids).values_list("benchmark_id", flat=True)
                       .distinct().order_by())
    for benchmark in Benchmark.objects.filter(id__in=with_rollups, kind=BenchmarkKind.CHECKLIST).order_by("id"):
        with cache_scope(None):  # the shared default page is no one's spending; one generation for its parts
            state = state_of({})
            filter_choices(benchmark)
            page_parts(benchmark, state)
