"""Dialogue-benchmark pages (EvolIF): metrics, survival curves, constraint groups, dialogue viewer, re-check."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required

from runs.access import attempt_for, benchmark_for, blind_safe
from runs.charts import dialogue as dialogue_charts
from runs.exports import dialogue as exports
from runs.models import (
    Benchmark,
    BenchmarkKind,
)
from runs.pages import render_page
from runs.querystring import query_with
from runs.selectors import dialogue as selectors
from runs.selectors.run_status import page_status


def _benchmark(request, slug: str) -> Benchmark:
    """The dialogue benchmark with this slug, or 404."""
    return benchmark_for(request, slug, kind=BenchmarkKind.DIALOGUE)


def _state(request, benchmark: Benchmark, *, exclusion: bool = False) -> dict:
    """The page state of the query string (runs.selectors.dialogue, as /api/dialogue-metrics/ reads it)."""
    return {
        **selectors.dialogue_state(benchmark=benchmark, query=request.GET, exclusion=exclusion),
        "query": request.GET.urlencode(),
    }


@blind_safe
@login_required
def metrics(request, slug):
    """The eight EvolIF metrics per model (or run) with dialogue counts, at a chosen patience."""
    benchmark = _benchmark(request, slug)
    state = _state(request, benchmark, exclusion=True)
    state.update(selectors.dialogue_metrics(state), off_query=query_with(request, exclude=None, health=None))
    state.update(page_status(benchmark_id=benchmark.id))
    return render_page(
        request, "runs/dialogue/metrics.html", {**state, "active": "metrics"}, page_data=exports.metrics_page
    )


@blind_safe
@login_required
def survival(request, slug):
    """Survival curves per model with 95% bands, the log-rank tests between them, and each steepest drop."""
    benchmark = _benchmark(request, slug)
    state = _state(request, benchmark)
    state.update(selectors.dialogue_survival(state), **page_status(benchmark_id=benchmark.id))
    state["figure"] = dialogue_charts.survival_figure(state["rows"], state["bands"], patience=state["patience"])
    return render_page(
        request, "runs/dialogue/survival.html", {**state, "active": "survival"}, page_data=exports.survival_page
    )


@blind_safe(drop=("group",))
@login_required
def groups(request, slug):
    """Pass rate per constraint group per model, as a table and a chart; drill down to failing turns."""
    state = _state(request, _benchmark(request, slug))
    state.update(selectors.dialogue_groups(state))
    state["figure"] = dialogue_charts.groups_figure(state["series"], state["groups"])
    return render_page(
        request, "runs/dialogue/groups.html", {**state, "active": "groups"}, page_data=exports.groups_page
    )


@login_required
def dialogues(request, slug):
    """Every selected dialogue with its length and how it ended, linking to the viewer."""
    state = _state(request, _benchmark(request, slug))
    state.update(selectors.dialogue_list(state))
    return render_page(
        request, "runs/dialogue/dialogues.html", {**state, "active": "dialogues"}, page_data=exports.dialogues_page
    )


@login_required
def viewer(request, slug, pk):
    """One dialogue turn by turn: user message, constraint changes, response, verdicts, patience."""
    attempt = attempt_for(request, pk, kinds=(BenchmarkKind.DIALOGUE,), slug=slug)
    context = {**selectors.dialogue_viewer(attempt), "active": "dialogues"}
    return render_page(request, "runs/dialogue/viewer.html", context, page_data=exports.viewer_page, fragment=None)


@login_required
def recheck(request, slug):
    """Agreement between logged verdicts and the portal's checkers, with the disagreeing turns."""
    state = _state(request, _benchmark(request, slug))
    state.update(selectors.dialogue_recheck(state), active="rescore")
    return render_page(request, "runs/recheck.html", state, page_data=exports.recheck_page)
