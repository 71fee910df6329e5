"""Choice-benchmark pages (GuideBench): metrics, confusion matrices, rule types, tasks, task viewer.

Every page reads its state (selected runs, exact or normalised view, sort, category) from the query string
through runs.selectors.choice, as /api/choice-metrics/ does; numbers come from runs.metrics.choice.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import QueryDict
from django.shortcuts import render

from runs.access import benchmark_for, blind_safe, instance_for
from runs.charts import choice as choice_charts
from runs.exports import choice as exports
from runs.metrics.choice import EXACT
from runs.models import Benchmark, BenchmarkKind
from runs.pages import PageDataBuilder, render_page
from runs.selectors import choice as selectors
from runs.selectors.choice import CELL, VIEWS
from runs.selectors.run_status import page_status


def _benchmark(request, slug: str) -> Benchmark:
    """The choice benchmark with this slug, or 404."""
    return benchmark_for(request, slug, kind=BenchmarkKind.CHOICE)


def _state(request, benchmark: Benchmark) -> dict:
    """The page state of the query string (runs.selectors.choice, as /api/choice-metrics/ reads it)."""
    return selectors.choice_state(benchmark=benchmark, query=request.GET)


def _page(
    request,
    benchmark: Benchmark,
    template: str,
    context: dict,
    fragment: str | None = None,
    page_data: PageDataBuilder | None = None,
):
    """Render the page (through the frame, with its exports and share, when it has `page_data`), or only `fragment`
    when htmx targets it; `keep` carries runs and view across pages."""
    state = context["state"]
    selected = [r for r in request.GET.getlist("run") if r in state["runs"]]
    keep = QueryDict(mutable=True)
    keep.setlist("run", selected)
    if state["view"] != EXACT:
        keep["view"] = state["view"]
    context = {"benchmark": benchmark, "views": VIEWS, "keep": keep.urlencode(), "selected_runs": selected, **context}
    if page_data is not None:
        return render_page(request, template, context, page_data=page_data, fragment=fragment)
    if fragment and request.htmx and request.htmx.target == fragment:
        template = f"{template}#{fragment}"
    return render(request, template, context)


# metrics --------------------------------------------------------------------------------
@blind_safe
@login_required
def metrics(request, slug):
    """Accuracy, macro P/R/F1 and unanswered counts per run and category, overall weighted accuracy."""
    benchmark = _benchmark(request, slug)
    context = _state(request, benchmark)
    context.update(selectors.choice_metrics(benchmark=benchmark, state=context["state"]))
    context.update(page_status(benchmark_id=benchmark.id))
    context["figure"] = choice_charts.accuracy_figure(context["run_rows"])
    return _page(
        request, benchmark, "runs/choice/metrics.html", context, fragment="tables", page_data=exports.metrics_page
    )


# confusion ------------------------------------------------------------------------------
@blind_safe(drop=CELL)
@login_required
def confusion(request, slug):
    """Confusion matrices of one category, one per selected run; a cell links to its tasks."""
    benchmark = _benchmark(request, slug)
    context = _state(request, benchmark)
    context.update(selectors.choice_confusion(benchmark=benchmark, state=context["state"]))
    return _page(
        request,
        benchmark,
        "runs/choice/confusion.html",
        context,
        fragment="cell-tasks",
        page_data=exports.confusion_page,
    )


# rule types -----------------------------------------------------------------------------
@blind_safe
@login_required
def rules(request, slug):
    """Accuracy by guideline rule type per run, weakest types first."""
    benchmark = _benchmark(request, slug)
    context = _state(request, benchmark)
    context.update(selectors.choice_rules(benchmark=benchmark, state=context["state"]))
    context["figure"] = choice_charts.rule_type_figure(context["table"], context["runs"]) if context["table"] else None
    return _page(request, benchmark, "runs/choice/rules.html", context, page_data=exports.rules_page)


# tasks ----------------------------------------------------------------------------------
@login_required
def tasks(request, slug):
    """Answers of the selected runs, filtered by category, confusion cell (true/pred/missing) or outcome."""
    benchmark = _benchmark(request, slug)
    context = _state(request, benchmark)
    context.update(selectors.choice_tasks(benchmark=benchmark, state=context["state"]))
    return _page(
        request, benchmark, "runs/choice/tasks.html", context, fragment="task-list", page_data=exports.tasks_page
    )


@login_required
def task(request, slug, external_id):
    """One task: instruction, rules, context, options, ground truth with analysis, and every run's answer."""
    benchmark = _benchmark(request, slug)
    instance = instance_for(request, benchmark=benchmark, external_id=external_id)
    context = _state(request, benchmark)
    context.update(selectors.choice_task(instance=instance, state=context["state"]), instance=instance)
    return _page(request, benchmark, "runs/choice/task.html", context, page_data=exports.task_page)
