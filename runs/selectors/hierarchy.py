"""Hierarchy pages' state (ManyIH): the query string validated with its defaults, and what the metrics and conflict
pages and /api/hierarchy-metrics/ show for it. Numbers come from runs.metrics.hierarchy (docs/metrics.md#hierarchy)."""
from __future__ import annotations

from django import forms

from runs.exclusions import exclusion_box
from runs.metrics import hierarchy as m
from runs.models import Benchmark, ChecklistItem, JudgeKind, Run
from runs.selectors.state import KindQuery, kind_state

#: drill-down rows (conflict examples) shown at most
EXAMPLES_LIMIT = 200


class HierarchyQuery(KindQuery):
    """Which runs and judge a hierarchy page shows, how rows are grouped, which two runs are compared, which
    conflict outcome is drilled into."""

    a = forms.ChoiceField(required=False, label="Compare run A")
    b = forms.ChoiceField(required=False, label="with run B")
    outcome = forms.ChoiceField(required=False, choices=[(o, o) for o in m.OUTCOMES])
    label = forms.CharField(required=False, max_length=200)
    tiers = forms.IntegerField(required=False, min_value=0)
    group = forms.CharField(required=False, max_length=100)

    field_order = ["run", "judge", "by", "a", "b", "outcome", "label", "tiers", "group", "exclude"]

    def __init__(self, data, *, runs, judges):
        super().__init__(data, runs=runs, judges=judges)
        self.fields["a"].choices = self.fields["b"].choices = [("", "—")] + list(self.fields["run"].choices)


def _default_pair(runs: list[Run]) -> tuple[Run | None, Run | None]:
    """Two runs of one model under different interfaces (ordinal first), else none."""
    for a in runs:
        for b in runs:
            if a.model_id == b.model_id and a.id != b.id and a.settings.get("hierarchy_format") == "ordinal" \
                    and b.settings.get("hierarchy_format") == "scalar":
                return a, b
    return None, None


def _pools_conditions(runs: list[Run]) -> bool:
    """Whether rows per model would pool one model's runs under different privilege interfaces (ordinal and scalar
    prompts are two experimental conditions, not repetitions of one)."""
    formats: dict[int, set] = {}
    for run in runs:
        formats.setdefault(run.model_id, set()).add(run.settings.get("hierarchy_format"))
    return any(len(found) > 1 for found in formats.values())


def hierarchy_state(*, benchmark: Benchmark, query) -> dict:
    """The query validated with its defaults: chosen runs, judge (the logged one unless chosen), grouping (per run
    when rows per model would pool a model's ordinal and scalar runs, else per model), the compared runs (one
    model's ordinal and scalar runs unless chosen), the drill-down, the exclusion policy."""
    runs = list(Run.objects.filter(benchmark=benchmark).select_related("model").order_by("label"))
    judges = m.hierarchy_judges(benchmark)
    data = query.copy()
    default_by = "run" if _pools_conditions(runs) else "model"
    if "by" not in data and default_by != "model":  # the filter bar shows the default it applies
        data["by"] = default_by
    if "a" not in data and "b" not in data:  # preselect one model's ordinal and scalar runs
        a, b = _default_pair(runs)
        if a and b:
            data.update({"a": a.label, "b": b.label})
    form = HierarchyQuery(data, runs=runs, judges=judges)
    logged = next((j for j in judges if j.kind == JudgeKind.LOGGED), None)
    state = kind_state(form, benchmark=benchmark, runs=runs, judges=judges, default_judge=logged, default_by=default_by)
    clean = form.cleaned_data
    by_label = {r.label: r for r in runs}
    state.update(a=by_label.get(clean.get("a") or ""), b=by_label.get(clean.get("b") or ""),
                 checker=next((j for j in judges if j.name == m.CHECKER_JUDGE), None),
                 outcome=clean.get("outcome") or "", label=clean.get("label") or "", tiers=clean.get("tiers"),
                 group=clean.get("group") or "")
    return state


def hierarchy_metrics(state: dict) -> dict:
    """The metrics page's data for the chosen runs and judge, under the chosen exclusion policy: Acc rows per model
    (or run), by tiers, per style group, the run-pair comparison, what the policy did to the ranking, and the
    sample rows they are computed from."""
    if state["judge"] is None:
        return {"rows": [], "tier_rows": [], "group_rates": [], "groups": [], "group_table": [], "comparison": None,
                "exclusion": None, "lines": [],
                "sample_rows": [], "n_samples": 0}
    excluded = state["excluded"]
    rows = m.sample_rows_select(benchmark=state["benchmark"], judge=state["judge"], run_ids=state["run_ids"],
                                excluded_items=excluded)
    comparison = None
    if state["a"] and state["b"] and state["a"] != state["b"]:
        pair = m.sample_rows_select(benchmark=state["benchmark"], judge=state["judge"], run_ids=[state["a"].id, state["b"].id],
                                    excluded_items=excluded)
        comparison = m.compare_runs([r for r in pair if r.run == state["a"].label], [r for r in pair if r.run == state["b"].label],
                                    a=state["a"].label, b=state["b"].label)
    acc_rows = m.accuracy_by(rows, by=state["by"])
    exclusion = None if excluded is None else _exclusion(state, rows, acc_rows)
    group_rates = m.style_group_rates(rows, by=state["by"])
    groups, group_table = m.group_matrix(group_rates)
    return {"rows": acc_rows, "tier_rows": m.accuracy_by_tiers(rows, by=state["by"]), "group_rates": group_rates,
            "groups": groups, "group_table": group_table, "comparison": comparison, "n_samples": len(rows),
            "exclusion": exclusion, "sample_rows": rows,
            "lines": [{"row": r, "effect": exclusion["lines"].get(r.label) if exclusion else None} for r in acc_rows]}


def _exclusion(state: dict, after_rows: list, after: list) -> dict:
    """What the exclusion policy did to the Acc ranking: ranks before and after, Kendall's tau, the swaps with the
    excluded items behind each, the samples that lost every constraint, and the excluded items themselves."""
    excluded = state["excluded"]
    before_rows = m.sample_rows_select(benchmark=state["benchmark"], judge=state["judge"], run_ids=state["run_ids"])
    before = m.accuracy_by(before_rows, by=state["by"])
    kept = {r.attempt_id for r in after_rows}
    dropped = [r for r in before_rows if r.attempt_id not in kept]
    verdicts = m.excluded_verdicts_select(judge=state["judge"], run_ids=state["run_ids"], item_ids=excluded,
                                          by=state["by"]) if excluded else {}
    lines, tau, swaps = m.acc_rank_change(before, after, verdicts)
    items = {i["id"]: i for i in ChecklistItem.objects.filter(id__in=list(excluded)).values(
        "id", "key", "group", "description", "instance__external_id", "details__active")}
    shown = sorted(items.values(), key=lambda i: (m.natural_key(i["instance__external_id"]), m.natural_key(i["key"])))
    return {**exclusion_box(state["exclude"], excluded, lines, tau, swaps, items, shown),
            "n_dropped": len(dropped), "dropped_samples": sorted({r.sample for r in dropped}, key=m.natural_key)}


def hierarchy_run(sample_rows: list, *, label: str) -> dict:
    """One run's figures from its sample rows, as /api/hierarchy-metrics/?run=<label> answers: Acc with intervals,
    per style group, and what the ManyIH evaluator prints."""
    return {"accuracy": m.accuracy(sample_rows, label=label), "groups": m.style_group_rates(sample_rows, by="run"),
            "evaluator": m.evaluator_summary(sample_rows, label=label)}


def hierarchy_conflicts(state: dict) -> dict:
    """The conflicts page's data: how each conflict group was resolved per model (or run) and tiers, by the style
    checker, and the outcomes of the chosen drill-down cell."""
    outcomes = m.conflict_outcomes_select(benchmark=state["benchmark"], checker=state["checker"],
                                          run_ids=state["run_ids"]) if state["checker"] else []
    rates = m.resolution_rates(outcomes, by=state["by"])
    data = {"rates": rates, "places": sorted({p for r in rates for p in r.places}), "n_outcomes": len(outcomes)}
    if state["outcome"]:
        key = (lambda o: o.model) if state["by"] == "model" else (lambda o: o.run)
        picked = [o for o in outcomes if o.outcome == state["outcome"] and (not state["label"] or key(o) == state["label"])
                  and (state["tiers"] is None or o.tiers == state["tiers"])]
        data.update(examples=picked[:EXAMPLES_LIMIT], n_examples=len(picked))
    return data
