"""Conflict benchmark page (OctoBench-Conflict): resolution rates per conflict type, SP rate per scenario, drill-down."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required

from runs.access import benchmark_for, blind_safe
from runs.charts import conflict as charts
from runs.exports import conflict as exports
from runs.models import BenchmarkKind
from runs.pages import render_page
from runs.querystring import query_with
from runs.selectors import conflict as selectors
from runs.selectors.run_status import page_status


@blind_safe(drop=selectors.DRILL_DOWN_KEYS)
@login_required
def metrics(request, slug):
    """Resolution rate per model and conflict type, SP rate per scenario, and the attempts behind a chosen cell;
    under an audit exclusion policy, each row's rank by SP rate before and after and the swaps."""
    benchmark = benchmark_for(request, slug, kind=BenchmarkKind.CONFLICT)
    state = selectors.conflict_state(benchmark=benchmark, query=request.GET)
    context = {
        **state,
        **selectors.conflict_metrics(state),
        "query": query_with(request, **dict.fromkeys(selectors.DRILL_DOWN_KEYS)),
        "off_query": query_with(request, exclude=None, health=None),
        **page_status(benchmark_id=benchmark.id),
    }
    context["figure"] = charts.resolution_figure(context["rates"])
    return render_page(request, "runs/conflict/metrics.html", context, page_data=exports.metrics_page)
