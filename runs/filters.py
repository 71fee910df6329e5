"""GET forms that parse leaderboard and drill-down state from the query string."""
from __future__ import annotations

from django import forms
from django.db.models import F, IntegerField, Value
from django.http import QueryDict

from runs.exclusions import exclusion_policy_choices, exclusion_policy_unknown
from runs.cache import cached
from runs.metrics.checklist import GROUPINGS, Filters
from runs.models import AttemptRollup, Instance, Judge, Run
from runs.widgets import CheckboxDropdown

SORTS = {
    "-isr": "ISR, high first", "isr": "ISR, low first", "-csr": "CSR, high first", "csr": "CSR, low first",
    "model": "model name", "-n": "most instances",
    # per attempt, as logged (docs/metrics.md, "Tokens, time and tool calls"); models that logged none go last
    "tokens": "fewest tokens per attempt", "-tokens": "most tokens per attempt",
    "wall_time": "shortest wall time per attempt", "-wall_time": "longest wall time per attempt",
    "model_time": "shortest model time per attempt", "-model_time": "longest model time per attempt",
    "tool_calls": "fewest tool calls per attempt", "-tool_calls": "most tool calls per attempt",
}

#: the words every kind's page says an unknown run or judge in (a note beside its defaults) and its API refuses it with
#: (400): a form's invalid_choice message, `%(value)s` standing for the value given (runs.selectors.state.KindQuery too)
RUN_UNKNOWN = "No run of this benchmark is labelled '%(value)s'."
JUDGE_UNKNOWN = "No judge named '%(value)s' scored this benchmark."
#: the leaderboard's parameters whose unknown values it says rather than passes over (the others fall back quietly)
STATED = ("run", "judge", "exclude")

#: the by-model table's column sets: the scores, or where the tokens and the time went (the rows are the same)
COLUMN_SETS = {"scores": "scores", "usage": "tokens, time and tool calls"}


class LeaderboardFilterForm(forms.Form):
    """Filters, grouping, sort, the bootstrap flag and the audit exclusion policy of a checklist leaderboard;
    choices come from the benchmark (and the policies from runs.exclusions)."""

    run = forms.MultipleChoiceField(required=False, label="Runs", widget=CheckboxDropdown(summary_noun="runs"),
                                    error_messages={"invalid_choice": RUN_UNKNOWN})
    judge = forms.MultipleChoiceField(required=False, label="Judges", widget=CheckboxDropdown(summary_noun="judges"),
                                      error_messages={"invalid_choice": JUDGE_UNKNOWN})
    scaffold = forms.MultipleChoiceField(required=False, label="Scaffolds", widget=CheckboxDropdown(summary_noun="scaffolds"))
    primary_category = forms.MultipleChoiceField(required=False, label="Primary categories",
                                                 widget=CheckboxDropdown(summary_noun="categories"))
    by = forms.ChoiceField(choices=list(GROUPINGS.items()), required=False, label="Group by")
    sort = forms.ChoiceField(choices=list(SORTS.items()), required=False, label="Sort")
    ci = forms.BooleanField(required=False, label="Bootstrap 95% interval")
    cols = forms.ChoiceField(choices=list(COLUMN_SETS.items()), required=False, label="Columns")
    exclude = forms.ChoiceField(required=False, label="Audit exclusion")

    def __init__(self, data, *, benchmark, **kwargs):
        super().__init__(data, **kwargs)
        self.fields["exclude"].choices = exclusion_policy_choices()
        self.fields["exclude"].error_messages["invalid_choice"] = exclusion_policy_unknown()  # the API's words
        for name, values in filter_choices(benchmark).items():
            self.fields[name].choices = [(v, v) for v in values]

    def state(self) -> dict:
        """The cleaned state with defaults (call after is_valid, which drops unknown values)."""
        return state_of(self.cleaned_data if self.is_bound and hasattr(self, "cleaned_data") else {})


def state_of(data: dict) -> dict:
    """A leaderboard state from cleaned form data; `state_of({})` is the default state (no filters,
    by model, best ISR first, no interval, every item)."""
    def values(name: str) -> list[str]:  # sorted, without repeats: one state however the query lists them
        return sorted(set(data.get(name) or []))

    return {
        "filters": Filters(runs=values("run"), judges=values("judge"), scaffolds=values("scaffold"),
                           primary_categories=values("primary_category")),
        "by": data.get("by") or "model",
        "sort": data.get("sort") or "-isr",
        "ci": bool(data.get("ci")),
        "exclude": data.get("exclude") or "none",
        "cols": data.get("cols") or "scores",
    }


def state_query(state: dict) -> QueryDict:
    """The canonical query string of a state: its parameters only, each list sorted and without
    repeats, defaults left out. Two queries that parse to one state give the same one, so what is
    keyed or linked by it cannot be multiplied by inventing parameters or reordering values."""
    default = state_of({})
    query = QueryDict(mutable=True)
    f = state["filters"]
    for name, values in (("run", f.runs), ("judge", f.judges), ("scaffold", f.scaffolds),
                         ("primary_category", f.primary_categories)):
        if values:
            query.setlist(name, list(values))
    for name in ("by", "sort", "exclude", "cols"):
        if state[name] != default[name]:
            query[name] = state[name]
    if state["ci"]:
        query["ci"] = "on"
    return query


def filter_choices(benchmark) -> dict[str, list[str]]:
    """The values each filter offers (runs, judges present in the rollups, scaffolds, primary categories),
    cached per data generation like the tables (every write that adds or removes one bumps it)."""
    return cached(benchmark.id, "choices", lambda: _filter_choices(benchmark), kind=dict, charged=False)


def _filter_choices(benchmark) -> dict[str, list[str]]:
    """The four lists in one query (UNION of four, each in the database's collation order)."""
    names = ("run", "judge", "scaffold", "primary_category")
    judge_ids = AttemptRollup.objects.filter(benchmark=benchmark).values("judge_id").distinct()
    instances = Instance.objects.filter(benchmark=benchmark)
    parts = [_part(Run.objects.filter(benchmark=benchmark), 0, "label"),
             _part(Judge.objects.filter(id__in=judge_ids), 1, "name"),
             _part(instances.exclude(scaffold=""), 2, "scaffold"),
             _part(instances.exclude(primary_category=""), 3, "primary_category")]
    out: dict[str, list[str]] = {name: [] for name in names}
    # UNION (not ALL) also makes each list distinct; ORDER BY sorts in the database's collation, as before
    for part, value in parts[0].union(*parts[1:]).order_by("choice_part", "choice_value"):
        out[names[part]].append(value)
    return out


def _part(qs, n: int, field: str):
    return qs.annotate(choice_part=Value(n, output_field=IntegerField()), choice_value=F(field)).values_list(
        "choice_part", "choice_value").order_by()


def form_notes(form: LeaderboardFilterForm) -> list[str]:
    """What the page says about its query (an unknown run, judge or exclusion policy: their default applies), in the
    words its API answers 400 with; its exports refuse such a query with them."""
    form.is_valid()
    return [str(message) for name in STATED for message in form.errors.get(name, ())]


def form_state(form: LeaderboardFilterForm) -> dict:
    """The form's state, with invalid values (unknown runs, judges...) ignored rather than failing the page."""
    if not form.is_valid():
        for name in list(form.errors):
            form.cleaned_data.pop(name, None)
    return form.state()
