"""Choice pages' state (GuideBench): the query string validated with its defaults, and what each page and
/api/choice-metrics/ show for it. Numbers come from runs.metrics.choice (docs/metrics.md#choice)."""

from __future__ import annotations

from collections.abc import Sequence

from django import forms
from django.core.paginator import Paginator
from django.db import connection

from runs.cache import cached, digest
from runs.metrics import choice as metrics
from runs.metrics import paired
from runs.models import Attempt, Benchmark, Instance, Run
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
    the page's order in `overall`, each as (run, its category cells, its paired.Tie)) and the per-category tables."""
    rows = choice_rows(benchmark.id, state["runs"], view=state["view"])
    runs = metrics.run_metrics(rows)
    categories = sorted({c for r in runs for c in r.categories})
    ties = choice_ties(benchmark.id, state["runs"], view=state["view"], rows=rows)
    return {
        "run_rows": runs,
        "categories": categories,
        "overall": [
            (r, [r.categories.get(c) for c in categories], ties.get(r.run, paired.Tie()))
            for r in metrics.run_metrics_sorted(runs, state["sort"])
        ],
        "tables": metrics.category_tables(runs, state["dsort"]),
    }


def accuracy_sides(rows: Sequence[metrics.ChoiceRow]) -> dict[str, paired.Side]:
    """Per run (by label), its runs.metrics.paired Side on overall accuracy: one judge (the reference scorer's
    decision), per task num = correct answers and den = scored answers (an unanswered task is scored as the
    reference's default, so it counts in den, as in RunMetrics.accuracy). paired.figure(side) is the run's
    RunMetrics.accuracy."""
    return paired.one_judge_sides((r.run, r.instance_id, r.correct) for r in rows)


def choice_ties(
    benchmark_id: int,
    run_labels: Sequence[str],
    *,
    view: str = metrics.EXACT,
    rows: Sequence[metrics.ChoiceRow] | None = None,
) -> dict[str, paired.Tie]:
    """paired.ties of these runs' accuracy_sides under `view` (from `rows` when the caller has read them), cached
    per data generation, view and runs."""
    document = {"runs": sorted(run_labels), "view": view}

    def compute() -> dict[str, paired.Tie]:
        return paired.ties(
            accuracy_sides(rows if rows is not None else choice_rows(benchmark_id, run_labels, view=view))
        )

    return cached(benchmark_id, f"choice-ties:{digest(document)}", compute, kind=dict)


def choice_confusion(*, benchmark: Benchmark, state: dict) -> dict:
    """The confusion page's data: one category's matrices, one per selected run, and the tasks of a chosen cell."""
    rows = choice_rows(benchmark.id, state["runs"], view=state["view"])
    categories = sorted({r.category for r in rows})
    category = state["category"] if state["category"] in categories else (categories[0] if categories else "")
    rows = [r for r in rows if r.category == category]
    cell = None
    if state["crun"]:
        cell = metrics.rows_matching(
            [r for r in rows if r.run == state["crun"]],
            true_key=state["true"],
            pred_key=state["pred"],
            unanswered=state["missing"],
        )
    return {"categories": categories, "category": category, "matrices": metrics.confusion_matrices(rows), "cell": cell}


def choice_rules(*, benchmark: Benchmark, state: dict) -> dict:
    """The rule-types page's data: accuracy by guideline rule type per run (of the chosen category)."""
    rows = choice_rows(benchmark.id, state["runs"], view=state["view"], with_rules=True)
    runs = list(dict.fromkeys(r.run for r in rows))
    table = metrics.rule_type_rows(rows, runs)
    categories = sorted({r.category for r in table})
    if state["category"]:
        table = [r for r in table if r.category == state["category"]]
    return {"runs": runs, "table": table, "categories": categories}


def choice_tasks(*, benchmark: Benchmark, state: dict) -> dict:
    """The tasks page's data: the answers of the selected runs that match the filters, one page of them."""
    rows = choice_rows(benchmark.id, state["runs"], view=state["view"])
    categories = sorted({r.category for r in rows})
    rows = metrics.rows_matching(
        rows,
        category=state["category"] or None,
        true_key=state["true"],
        pred_key=state["pred"],
        unanswered=state["missing"],
        correct={"wrong": False, "right": True}.get(state["outcome"]),
    )
    return {
        "rows": rows,
        "categories": categories,
        "page": Paginator(rows, TASKS_PAGE).get_page(state["page"]),
        "outcomes": OUTCOMES,
    }


def choice_task(*, instance: Instance, state: dict) -> dict:
    """One task as shown, and every selected run's answer to it."""
    return {
        "task": metrics.choice_task_view(instance.spec, instance.primary_category),
        "answers": choice_task_answers(instance.id, state["runs"]),
    }


def choice_rows(
    benchmark_id: int, run_labels: Sequence[str], *, view: str = metrics.EXACT, with_rules: bool = False
) -> list[metrics.ChoiceRow]:
    """The scored attempts of these runs, in one query (rule types only when asked for).

    Reads Attempt.outcome as runs.metrics.choice.scored_answer describes it. Attempts without a ground truth are
    left out (nothing to compare).
    """
    prefix = "outcome__normalised__" if view == metrics.NORMALISED else "outcome__"
    # PostgreSQL returns the JSON values of keys with their types; SQLite turns the text "1"
    # into the number 1, so there the whole outcome is read (labels must keep their type).
    by_key = connection.vendor == "postgresql"
    if by_key:
        outcome_fields = [f"{prefix}answer", f"{prefix}ground_truth", "outcome__unanswered", "outcome__ground_truth"]
    else:
        outcome_fields = ["outcome"]
    fields = [
        "run__label",
        "run__model__name",
        "run__model__display_name",
        "instance__primary_category",
        "instance_id",
        "instance__external_id",
        "id",
        *outcome_fields,
    ]
    if with_rules:
        fields.append("instance__spec__Guidelines")
    queryset = (
        Attempt.objects.filter(run__benchmark_id=benchmark_id, run__label__in=list(run_labels))
        .order_by("run__label", "instance__primary_category", "instance__external_id")
        .values_list(*fields)
    )
    if by_key:
        queryset = queryset.filter(outcome__has_key="ground_truth")
    rows = []
    for values in queryset.iterator(chunk_size=2000):
        scored = values[7:10] if by_key else metrics.scored_answer(values[7], view=view)
        if scored is None:
            continue
        rows.append(metrics.choice_row(values[:7], *scored, guidelines=values[-1] if with_rules else None))
    return rows


def choice_task_answers(instance_id: int, run_labels: Sequence[str]) -> list[metrics.TaskAnswer]:
    """Every selected run's answer to one task, in the order of `run_labels` (one query)."""
    attempts = Attempt.objects.filter(instance_id=instance_id, run__label__in=list(run_labels)).values_list(
        "id", "run__label", "run__model__name", "run__model__display_name", "outcome"
    )
    return metrics.task_answers(attempts, run_labels)
