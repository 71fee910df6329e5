"""Conflict page's state (OctoBench-Conflict): the query string validated with its defaults, and what the page and
/api/conflict-metrics/ show for it. Numbers come from runs.metrics.conflict (docs/metrics.md#conflict)."""
from __future__ import annotations

from django import forms

from runs.exclusions import exclusion_box
from runs.metrics import conflict as m
from runs.models import Benchmark, Run
from runs.selectors.state import KindQuery, kind_state

#: the drill-down keys a cell link sets (the page state without them is the base of those links)
DRILL_DOWN_KEYS = ("label", "type", "scenario", "followed", "sp")
EXAMPLES_LIMIT = 200
FOLLOWED = [("SP", "SP"), ("UQ", "UQ"), ("MD", "MD"), ("neither", "neither"), ("other", "the non-SP side")]


class ConflictQuery(KindQuery):
    """Which runs and judge the page shows, how rows are grouped, the audit exclusion policy, and which table cell
    is drilled into."""

    label = forms.CharField(required=False, max_length=200)
    type = forms.ChoiceField(required=False, choices=[("", "")] + [(t, t) for t in m.TYPES])
    scenario = forms.CharField(required=False, max_length=200)
    followed = forms.ChoiceField(required=False, choices=[("", "")] + FOLLOWED)
    sp = forms.BooleanField(required=False)

    field_order = ["run", "judge", "by", "label", "type", "scenario", "followed", "sp", "exclude"]


def conflict_state(*, benchmark: Benchmark, query) -> dict:
    """The query validated with its defaults: chosen runs, judge, grouping, exclusion policy and drill-down cell."""
    runs = list(Run.objects.filter(benchmark=benchmark).select_related("model").order_by("label"))
    judges = m.conflict_judges(benchmark)
    form = ConflictQuery(query, runs=runs, judges=judges)
    state = kind_state(form, benchmark=benchmark, runs=runs, judges=judges)
    state["cell"] = _cell(form.cleaned_data)
    return state


def _cell(clean: dict) -> dict:
    """The drill-down filter of the query string (empty when no cell is chosen)."""
    cell = {k: clean.get(k) or "" for k in ("label", "type", "scenario", "followed")}
    if not any(cell.values()):
        return {}
    return {**cell, "sp_only": bool(clean.get("sp"))}


def conflict_metrics(state: dict) -> dict:
    """The page's data: resolution rate per model (or run) and conflict type, SP rate per scenario, what an exclusion
    policy did to the ranking by SP rate, and the attempts behind the chosen cell."""
    judge, excluded, by = state["judge"], state["excluded"], state["by"]
    rows = m.conflict_rows_select(benchmark=state["benchmark"], judge=judge, run_ids=state["run_ids"],
                                  excluded_items=excluded) if judge else []
    rates, scenarios = m.resolution_rates(rows, by=by), m.sp_rates(rows, by=by)
    exclusion = None
    if judge and excluded is not None:
        before = m.conflict_rows_select(benchmark=state["benchmark"], judge=judge, run_ids=state["run_ids"])
        exclusion = _exclusion(state["exclude"], excluded, before, rows, by)
    types, type_table = m.matrix(rates, "type")
    scenario_names, scenario_table = m.matrix(scenarios, "scenario")
    lines = exclusion["lines"] if exclusion else {}
    data = {"rows": rows, "rates": rates, "scenario_rates": scenarios, "exclusion": exclusion, "headline": m.HEADLINE,
            "types": types, "type_table": type_table, "type_heads": [(t, m.TYPES[t]) for t in types],
            "scenarios": scenario_names,
            "scenario_table": [(label, cells, lines.get(label)) for label, cells in scenario_table]}
    if state["cell"]:
        picked = m.drill(rows, by=by, **state["cell"])
        data.update(examples=picked[:EXAMPLES_LIMIT], n_examples=len(picked))
    return data


def _exclusion(policy: str, excluded: set[int], before: list, after: list, by: str) -> dict:
    """What the exclusion policy did: the attempts no longer counted (and those read from an audit's rewrite), ranks
    by SP rate before and after, Kendall's tau, the swaps with the resolution items behind each, and the excluded
    items (resolutions first)."""
    lines, tau, swaps = m.sp_rank_change(before, after, by=by)
    kept = {r.attempt_id for r in after}
    dropped = [r for r in before if r.attempt_id not in kept]
    originals = {r.item_id for r in before}
    items = m.excluded_items_select(excluded)
    shown = sorted(items, key=lambda i: not i["resolution"])
    return {**exclusion_box(policy, excluded, lines, tau, swaps, {i["id"]: i for i in items}, shown),
            "n_resolution": sum(i["resolution"] for i in items), "n_dropped": len(dropped),
            "n_rewritten": sum(r.item_id not in originals for r in after),
            "dropped_instances": sorted({r.instance for r in dropped})}
