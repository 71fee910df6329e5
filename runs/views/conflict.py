"""Conflict benchmark page (OctoBench-Conflict): resolution rates per conflict type, SP rate per scenario, drill-down."""
from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404

from runs.access import blind_safe
from runs.charts import conflict as charts
from runs.exclusions import (
    excluded_item_ids,
    exclusion_box,
    exclusion_policy_choices,
)
from runs.exports import conflict as exports
from runs.metrics import conflict as m
from runs.models import Benchmark, BenchmarkKind, Run
from runs.pages import render_page
from runs.querystring import query_with

#: the drill-down keys a cell link sets (the page state without them is the base of those links)
DRILL_DOWN_KEYS = dict.fromkeys(("label", "type", "scenario", "followed", "sp"))

EXAMPLES_LIMIT = 200
FOLLOWED = [("SP", "SP"), ("UQ", "UQ"), ("MD", "MD"), ("neither", "neither"), ("other", "the non-SP side")]


class ConflictFilterForm(forms.Form):
    """Which runs and judge the page shows, how rows are grouped, the audit exclusion policy, and which table cell
    is drilled into."""

    run = forms.MultipleChoiceField(required=False, label="Runs")
    judge = forms.ChoiceField(required=False, label="Judge")
    by = forms.ChoiceField(required=False, choices=[("model", "model (runs pooled)"), ("run", "run")], label="Rows per")
    label = forms.CharField(required=False, max_length=200)
    type = forms.ChoiceField(required=False, choices=[("", "")] + [(t, t) for t in m.TYPES])
    scenario = forms.CharField(required=False, max_length=200)
    followed = forms.ChoiceField(required=False, choices=[("", "")] + FOLLOWED)
    sp = forms.BooleanField(required=False)
    exclude = forms.ChoiceField(required=False, label="Audit exclusion")

    def __init__(self, data, *, runs, judges):
        super().__init__(data)
        self.fields["exclude"].choices = exclusion_policy_choices()
        self.fields["run"].choices = [(r.label, f"{r.label} ({r.model.name})") for r in runs]
        self.fields["judge"].choices = [(j.name, f"{j.name} ({j.get_kind_display()})") for j in judges]


@blind_safe(drop=tuple(DRILL_DOWN_KEYS))
@login_required
def metrics(request, slug):
    """Resolution rate per model and conflict type, SP rate per scenario, and the attempts behind a chosen cell;
    under an audit exclusion policy, each row's rank by SP rate before and after and the swaps."""
    benchmark = get_object_or_404(Benchmark, slug=slug, kind=BenchmarkKind.CONFLICT)
    runs = list(Run.objects.filter(benchmark=benchmark).select_related("model").order_by("label"))
    judges = m.conflict_judges(benchmark)
    form = ConflictFilterForm(request.GET, runs=runs, judges=judges)
    form.is_valid()  # a field that does not validate is left out (and its error shown); the others still apply
    clean = form.cleaned_data
    chosen = [r for r in runs if r.label in clean.get("run", [])] or runs
    judge = next((j for j in judges if j.name == clean.get("judge")), judges[0] if judges else None)
    by = clean.get("by") or "model"
    exclude = clean.get("exclude") or "none"
    excluded = excluded_item_ids(benchmark, exclude)
    run_ids = [r.id for r in chosen]
    rows = m.conflict_rows_select(benchmark=benchmark, judge=judge, run_ids=run_ids, excluded_items=excluded) if judge else []
    rates, scenarios = m.resolution_rates(rows, by=by), m.sp_rates(rows, by=by)
    exclusion = None
    if judge and excluded is not None:
        before = m.conflict_rows_select(benchmark=benchmark, judge=judge, run_ids=run_ids)
        exclusion = _exclusion(exclude, excluded, before, rows, by)
    context = {"benchmark": benchmark, "form": form, "judge": judge, "by": by, "rows": rows, "rates": rates,
               "figure": charts.resolution_figure(rates), "query": query_with(request, **DRILL_DOWN_KEYS), "cell": _cell(clean),
               "exclusion": exclusion, "off_query": query_with(request, exclude=None), "headline": m.HEADLINE}
    context["types"], context["type_table"] = m.matrix(rates, "type")
    context["type_heads"] = [(t, m.TYPES[t]) for t in context["types"]]
    context["scenarios"], scenario_table = m.matrix(scenarios, "scenario")
    lines = exclusion["lines"] if exclusion else {}
    context["scenario_table"] = [(label, cells, lines.get(label)) for label, cells in scenario_table]
    if context["cell"]:
        picked = m.drill(rows, by=by, **context["cell"])
        context.update(examples=picked[:EXAMPLES_LIMIT], n_examples=len(picked))
    return render_page(request, "runs/conflict/metrics.html", context, page_data=exports.metrics_page)


def _exclusion(policy: str, excluded: set[int], before: list, after: list, by: str) -> dict:
    """What the exclusion policy did: the attempts no longer counted (and those read from an audit's rewrite), ranks by SP rate before and after, Kendall's
    tau, the swaps with the resolution items behind each, and the excluded items (resolutions first)."""
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


def _cell(clean: dict) -> dict:
    """The drill-down filter of the query string (empty when no cell is chosen)."""
    cell = {k: clean.get(k) or "" for k in ("label", "type", "scenario", "followed")}
    if not any(cell.values()):
        return {}
    return {**cell, "sp_only": bool(clean.get("sp"))}
