"""Choice-benchmark pages (GuideBench): metrics, confusion matrices, rule types, tasks, task viewer.

Every page reads its state (selected runs, exact or normalised view, sort, category)
from the query string; numbers come from runs.metrics.choice (METRICS.md section 5).
"""
from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import QueryDict
from django.shortcuts import get_object_or_404, render

from runs.access import blind_safe
from runs.charts import choice as choice_charts
from runs.exports import choice as exports
from runs.metrics import choice as metrics
from runs.models import Benchmark, BenchmarkKind, Instance, Run
from runs.pages import PageDataBuilder, render_page

TASKS_PAGE = 50
VIEWS = {metrics.EXACT: "Exact match (reference scorer)", metrics.NORMALISED: "Normalised (lenient, not the reference)"}
#: the query parameters of a confusion cell: they list the cell's tasks with each run's answer (runs.access)
CELL = ("crun", "true", "pred", "missing")
OUTCOMES = {"": "all answers", "wrong": "wrong only", "right": "right only"}


class KnownChoicesField(forms.MultipleChoiceField):
    """A multiple choice that drops unknown values instead of failing (a run may have been deleted)."""

    def clean(self, value):
        return [v for v in self.to_python(value) if self.valid_value(v)]


class ChoiceStateForm(forms.Form):
    """Selected runs, view, sorts and the task filters of the choice pages; unknown values are dropped."""

    run = KnownChoicesField(required=False, label="Runs")
    view = forms.ChoiceField(choices=list(VIEWS.items()), required=False)
    sort = forms.CharField(required=False, max_length=250)
    dsort = forms.ChoiceField(required=False, choices=[(s, s) for f in metrics.CATEGORY_SORTS for s in (f, f"-{f}")])
    category = forms.CharField(required=False, max_length=200)
    true = forms.CharField(required=False, max_length=2000)
    pred = forms.CharField(required=False, max_length=2000)
    missing = forms.NullBooleanField(required=False)
    outcome = forms.ChoiceField(required=False, choices=list(OUTCOMES.items()))
    crun = forms.CharField(required=False, max_length=200)
    page = forms.IntegerField(required=False, min_value=1)

    def __init__(self, data, *, benchmark: Benchmark, **kwargs):
        super().__init__(data, **kwargs)
        self.runs = list(Run.objects.filter(benchmark=benchmark).select_related("model").order_by("label"))
        self.fields["run"].choices = [(r.label, r.label) for r in self.runs]

    def state(self) -> dict:
        """The cleaned state with defaults; every run when none is selected."""
        if not self.is_valid():
            for name in list(self.errors):
                self.cleaned_data.pop(name, None)
        data = self.cleaned_data
        return {
            "runs": data.get("run") or [r.label for r in self.runs],
            "view": data.get("view") or metrics.EXACT,
            "sort": data.get("sort") or "-accuracy",
            "dsort": data.get("dsort") or "-accuracy",
            "category": data.get("category") or "",
            "true": data.get("true") or None,  # no label key is empty (see label_key)
            "pred": data.get("pred") or None,
            "missing": data.get("missing"),
            "outcome": data.get("outcome") or "",
            "crun": data.get("crun") or "",
            "page": data.get("page") or 1,
        }


def _benchmark(slug: str) -> Benchmark:
    """The choice benchmark with this slug, or 404."""
    return get_object_or_404(Benchmark, slug=slug, kind=BenchmarkKind.CHOICE)


def _page(request, benchmark: Benchmark, template: str, context: dict, fragment: str | None = None,
          page_data: PageDataBuilder | None = None):
    """Render the page (through the frame, with its exports and share, when it has `page_data`), or only `fragment`
    when htmx targets it; `keep` carries runs and view across pages."""
    state = context["state"]
    selected = [r for r in request.GET.getlist("run") if r in state["runs"]]
    keep = QueryDict(mutable=True)
    keep.setlist("run", selected)
    if state["view"] != metrics.EXACT:
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
def metrics_page(request, slug):
    """Accuracy, macro P/R/F1 and unanswered counts per run and category, overall weighted accuracy."""
    benchmark = _benchmark(slug)
    form = ChoiceStateForm(request.GET, benchmark=benchmark)
    state = form.state()
    runs = metrics.run_metrics(metrics.choice_rows(benchmark.id, state["runs"], view=state["view"]))
    categories = sorted({c for m in runs for c in m.categories})
    context = {
        "form": form, "state": state, "categories": categories,
        "overall": [(m, [m.categories.get(c) for c in categories]) for m in metrics.run_metrics_sorted(runs, state["sort"])],
        "tables": metrics.category_tables(runs, state["dsort"]),
        "figure": choice_charts.accuracy_figure(runs),
    }
    return _page(request, benchmark, "runs/choice/metrics.html", context, fragment="tables", page_data=exports.metrics_page)


# confusion ------------------------------------------------------------------------------
@blind_safe(drop=CELL)
@login_required
def confusion(request, slug):
    """Confusion matrices of one category, one per selected run; a cell links to its tasks."""
    benchmark = _benchmark(slug)
    form = ChoiceStateForm(request.GET, benchmark=benchmark)
    state = form.state()
    rows = metrics.choice_rows(benchmark.id, state["runs"], view=state["view"])
    categories = sorted({r.category for r in rows})
    category = state["category"] if state["category"] in categories else (categories[0] if categories else "")
    rows = [r for r in rows if r.category == category]
    cell = None
    if state["crun"]:
        cell = metrics.rows_matching(
            [r for r in rows if r.run == state["crun"]],
            true_key=state["true"], pred_key=state["pred"], unanswered=state["missing"],
        )
    context = {
        "form": form, "state": state, "categories": categories, "category": category,
        "matrices": metrics.confusion_matrices(rows), "cell": cell,
    }
    return _page(request, benchmark, "runs/choice/confusion.html", context, fragment="cell-tasks", page_data=exports.confusion_page)


# rule types -----------------------------------------------------------------------------
@blind_safe
@login_required
def rules(request, slug):
    """Accuracy by guideline rule type per run, weakest types first."""
    benchmark = _benchmark(slug)
    form = ChoiceStateForm(request.GET, benchmark=benchmark)
    state = form.state()
    rows = metrics.choice_rows(benchmark.id, state["runs"], view=state["view"], with_rules=True)
    runs = list(dict.fromkeys(r.run for r in rows))
    table = metrics.rule_type_rows(rows, runs)
    categories = sorted({r.category for r in table})
    if state["category"]:
        table = [r for r in table if r.category == state["category"]]
    context = {
        "form": form, "state": state, "runs": runs, "table": table, "categories": categories,
        "figure": choice_charts.rule_type_figure(table, runs) if table else None,
    }
    return _page(request, benchmark, "runs/choice/rules.html", context, page_data=exports.rules_page)


# tasks ----------------------------------------------------------------------------------
@login_required
def tasks(request, slug):
    """Answers of the selected runs, filtered by category, confusion cell (true/pred/missing) or outcome."""
    benchmark = _benchmark(slug)
    form = ChoiceStateForm(request.GET, benchmark=benchmark)
    state = form.state()
    rows = metrics.choice_rows(benchmark.id, state["runs"], view=state["view"])
    categories = sorted({r.category for r in rows})
    rows = metrics.rows_matching(
        rows, category=state["category"] or None, true_key=state["true"], pred_key=state["pred"],
        unanswered=state["missing"], correct={"wrong": False, "right": True}.get(state["outcome"]),
    )
    page = Paginator(rows, TASKS_PAGE).get_page(state["page"])
    context = {"form": form, "state": state, "page": page, "rows": rows, "categories": categories, "outcomes": OUTCOMES}
    return _page(request, benchmark, "runs/choice/tasks.html", context, fragment="task-list", page_data=exports.tasks_page)


@login_required
def task(request, slug, external_id):
    """One task: instruction, rules, context, options, ground truth with analysis, and every run's answer."""
    benchmark = _benchmark(slug)
    instance = get_object_or_404(Instance, benchmark=benchmark, external_id=external_id)
    form = ChoiceStateForm(request.GET, benchmark=benchmark)
    state = form.state()
    context = {
        "form": form, "state": state, "instance": instance,
        "task": metrics.choice_task_view(instance.spec, instance.primary_category),
        "answers": metrics.choice_task_answers(instance.id, state["runs"]),
    }
    return _page(request, benchmark, "runs/choice/task.html", context)
