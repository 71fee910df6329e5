"""Choice pages' state (GuideBench): the query string validated with its defaults, and what each page and
/api/choice-metrics/ show for it. Numbers come from runs.metrics.choice (docs/metrics.md#choice)."""
from __future__ import annotations

from django import forms
from django.core.paginator import Paginator

from runs.metrics import choice as metrics
from runs.models import Benchmark, Instance, Run
from runs.selectors.state import RefusesControlCharacters, query_errors, query_notes

TASKS_PAGE = 50
VIEWS = {metrics.EXACT: "Exact match (reference scorer)", metrics.NORMALISED: "Normalised (lenient, not the reference)"}
#: the query parameters of a confusion cell: they list the cell's tasks with each run's answer (runs.access)
CELL = ("crun", "true", "pred", "missing")
OUTCOMES = {"": "all answers", "wrong": "wrong only", "right": "right only"}


class KnownChoicesField(forms.MultipleChoiceField):
    """A multiple choice that drops unknown values instead of failing (a run may have been deleted)."""

    def clean(self, value):
        return [v for v in self.to_python(value) if self.valid_value(v)]


class ChoiceQuery(RefusesControlCharacters):
    """Selected runs, view, sorts and the task filters of the choice pages; an unknown run is dropped, another
    invalid value is left out (its default applies) and its error kept: the API answers 400 with it."""

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
        self.is_valid()  # an invalid field is left out of cleaned_data: its default applies
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


def choice_state(*, benchmark: Benchmark, query) -> dict:
    """{"form", "state": the query validated with its defaults, "errors"} for every choice page and the API."""
    form = ChoiceQuery(query, benchmark=benchmark)
    state = form.state()
    return {"form": form, "state": state, "errors": query_errors(form), "query_notes": query_notes(form)}


def choice_metrics(*, benchmark: Benchmark, state: dict) -> dict:
    """The metrics page's data: per run accuracy, macro P/R/F1 and unanswered counts per category (`run_rows`, in
    the page's order with their category cells in `overall`) and the per-category tables."""
    runs = metrics.run_metrics(metrics.choice_rows(benchmark.id, state["runs"], view=state["view"]))
    categories = sorted({c for r in runs for c in r.categories})
    return {"run_rows": runs, "categories": categories,
            "overall": [(r, [r.categories.get(c) for c in categories]) for r in metrics.run_metrics_sorted(runs, state["sort"])],
            "tables": metrics.category_tables(runs, state["dsort"])}


def choice_confusion(*, benchmark: Benchmark, state: dict) -> dict:
    """The confusion page's data: one category's matrices, one per selected run, and the tasks of a chosen cell."""
    rows = metrics.choice_rows(benchmark.id, state["runs"], view=state["view"])
    categories = sorted({r.category for r in rows})
    category = state["category"] if state["category"] in categories else (categories[0] if categories else "")
    rows = [r for r in rows if r.category == category]
    cell = None
    if state["crun"]:
        cell = metrics.rows_matching([r for r in rows if r.run == state["crun"]],
                                     true_key=state["true"], pred_key=state["pred"], unanswered=state["missing"])
    return {"categories": categories, "category": category, "matrices": metrics.confusion_matrices(rows), "cell": cell}


def choice_rules(*, benchmark: Benchmark, state: dict) -> dict:
    """The rule-types page's data: accuracy by guideline rule type per run (of the chosen category)."""
    rows = metrics.choice_rows(benchmark.id, state["runs"], view=state["view"], with_rules=True)
    runs = list(dict.fromkeys(r.run for r in rows))
    table = metrics.rule_type_rows(rows, runs)
    categories = sorted({r.category for r in table})
    if state["category"]:
        table = [r for r in table if r.category == state["category"]]
    return {"runs": runs, "table": table, "categories": categories}


def choice_tasks(*, benchmark: Benchmark, state: dict) -> dict:
    """The tasks page's data: the answers of the selected runs that match the filters, one page of them."""
    rows = metrics.choice_rows(benchmark.id, state["runs"], view=state["view"])
    categories = sorted({r.category for r in rows})
    rows = metrics.rows_matching(
        rows, category=state["category"] or None, true_key=state["true"], pred_key=state["pred"],
        unanswered=state["missing"], correct={"wrong": False, "right": True}.get(state["outcome"]),
    )
    return {"rows": rows, "categories": categories, "page": Paginator(rows, TASKS_PAGE).get_page(state["page"]),
            "outcomes": OUTCOMES}


def choice_task(*, instance: Instance, state: dict) -> dict:
    """One task as shown, and every selected run's answer to it."""
    return {"task": metrics.choice_task_view(instance.spec, instance.primary_category),
            "answers": metrics.choice_task_answers(instance.id, state["runs"])}
