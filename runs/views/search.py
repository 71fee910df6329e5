"""The transcript search page of a benchmark: /b/<slug>/search/ (the selector is `runs.search.search`)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from runs import search as s
from runs.access import benchmark_for
from runs.exports import search as exports
from runs.models import Run, VerdictResult
from runs.pages import render_page
from runs.querystring import query_with
from runs.selectors import KIND_PAGES, SEARCH_EXAMPLES
from runs.selectors.checklist import filter_choices
from runs.trajectory_view import clamp


@login_required  # not blind_safe: it returns trajectory, response and reasoning text (runs.access)
def search(request, slug):
    """Find text in every trajectory, response and judge's reasoning of a benchmark, with filters."""
    benchmark = benchmark_for(request, slug)
    runs = list(Run.objects.filter(benchmark=benchmark).select_related("model").order_by("label"))
    context = {
        "benchmark": benchmark,
        "kind_home": KIND_PAGES.get(benchmark.kind, "runs:home"),
        "example": SEARCH_EXAMPLES.get(benchmark.kind, ""),
        "runs": runs,
        "models": sorted({r.model.name for r in runs}),
        "judges": filter_choices(benchmark)["judge"],
        "verdicts": VerdictResult.choices,
        "sources": s.SearchSource.choices,
        "modes": s.MODES,
        "max_query": s.MAX_QUERY,
        "min_query": s.MIN_QUERY,
        "q": request.GET.get("q", "")[: s.MAX_QUERY * 2],
        "chosen": {
            "run": request.GET.getlist("run"),
            "model": request.GET.getlist("model"),
            "judge": request.GET.get("judge", ""),
            "verdict": request.GET.get("verdict", ""),
            "item": request.GET.get("item", ""),
            "mode": request.GET.get("mode", "text"),
            "source": request.GET.getlist("source"),
        },
    }
    busy = None
    counting = request.GET.get("count") == "1"
    if request.GET.get("q", "").strip() and counting and request.htmx:
        return hits_total(request, benchmark, context)
    if request.GET.get("q", "").strip():
        try:
            query = s.search_query_of(request.GET)
            context["page"] = page = s.search(benchmark, query)
            context["count_url"] = "?" + query_with(request, count=1, known=page.known)
            if counting and page.total is None:  # the count's link followed without htmx: the page with its count
                page.total, page.total_exact = s.hits_total(benchmark, query, known=page.known)
            if page.next_after:
                context["next_url"] = "?" + query_with(request, after=page.next_after, count=None, known=None)
            if query.after:
                context["first_url"] = "?" + query_with(request, after=None, count=None, known=None)
        except (s.SearchRefused, s.SearchTooSlow) as exc:
            context["error"] = str(exc)
        except s.SearchBusy as exc:
            context["error"], busy = str(exc), exc
    response = render_page(request, "runs/search.html", context, page_data=exports.search_page, fragment=None)
    if busy is not None:
        response.status_code, response["Retry-After"] = 429, str(busy.retry_after)
    return response


def hits_total(request, benchmark, context: dict):
    """The search's count of hits (`?count=1`), as the fragment the page loads once it is shown; `known`: the hits
    the page has shown, the least it may say."""
    context["count_url"] = "?" + query_with(request)
    try:
        context["total"], context["total_exact"] = s.hits_total(
            benchmark, s.search_query_of(request.GET), known=clamp(request.GET.get("known"), 0, s.PAGE_SIZE + 1)
        )
        context["counted"] = True
    except (s.SearchRefused, s.SearchTooSlow, s.SearchBusy) as exc:
        context["count_error"] = str(exc)
    return render(request, "runs/search.html#total", context)
