"""Privilege-hierarchy pages (ManyIH): metrics, conflict resolution, style re-check agreement, sample viewer."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required

from runs.access import attempt_for, benchmark_for, blind_safe
from runs.charts import hierarchy as charts
from runs.exports import hierarchy as exports
from runs.models import (
    Benchmark,
    BenchmarkKind,
)
from runs.pages import render_page
from runs.querystring import query_with
from runs.selectors import hierarchy as selectors
from runs.selectors.run_status import page_status


def _benchmark(request, slug: str) -> Benchmark:
    """The hierarchy benchmark with this slug, or 404."""
    return benchmark_for(request, slug, kind=BenchmarkKind.HIERARCHY)


def _state(request, benchmark: Benchmark) -> dict:
    """The page state of the query string (runs.selectors.hierarchy, as /api/hierarchy-metrics/ reads it)."""
    return {**selectors.hierarchy_state(benchmark=benchmark, query=request.GET), "query": request.GET.urlencode()}


@blind_safe
@login_required
def metrics(request, slug):
    """Acc, Acc_test and Acc_style per model with intervals, per style group, by tiers, and a run-pair comparison;
    under an audit exclusion policy, each row's rank before and after and the swaps."""
    benchmark = _benchmark(request, slug)
    state = _state(request, benchmark)
    state.update(selectors.hierarchy_metrics(state), off_query=query_with(request, exclude=None, health=None))
    state.update(page_status(benchmark_id=benchmark.id))
    state["figure"] = charts.accuracy_figure(state["rows"])
    state["tiers_figure"] = charts.tiers_figure(state["tier_rows"])
    return render_page(
        request, "runs/hierarchy/metrics.html", {**state, "active": "metrics"}, page_data=exports.metrics_page
    )


@blind_safe(drop=("outcome",))
@login_required
def conflicts(request, slug):
    """How each conflict group was resolved (winner, a suppressed instruction, none) per model and tiers; examples."""
    state = _state(request, _benchmark(request, slug))
    state.update(selectors.hierarchy_conflicts(state))
    state["figure"] = charts.resolution_figure([r for r in state["rates"] if r.tiers is not None] or state["rates"])
    return render_page(
        request, "runs/hierarchy/conflicts.html", {**state, "active": "conflicts"}, page_data=exports.conflicts_page
    )


@login_required
def recheck(request, slug):
    """Agreement of the logged per-group verdicts with the style checkers, with the disagreeing samples."""
    state = _state(request, _benchmark(request, slug))
    state.update(selectors.hierarchy_recheck(state), active="recheck")
    return render_page(request, "runs/recheck.html", state, page_data=exports.recheck_page)


@login_required
def sample(request, slug, pk):
    """One attempt at one sample: tagged prompt, conflict groups with the winner and why, code, verdicts, tests."""
    attempt = attempt_for(request, pk, kinds=(BenchmarkKind.HIERARCHY,), slug=slug)
    context = {**selectors.hierarchy_sample(attempt), "active": "samples"}
    return render_page(request, "runs/hierarchy/sample.html", context, page_data=exports.sample_page, fragment=None)
