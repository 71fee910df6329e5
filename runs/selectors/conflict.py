"""Conflict page's state (OctoBench-Conflict): the query string validated with its defaults, and what the page and
/api/conflict-metrics/ show for it. Numbers come from runs.metrics.conflict (docs/metrics.md#conflict)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from django import forms
from django.db.models import Q

from runs.cache import cached, digest
from runs.exclusions import exclusion_box
from runs.metrics import conflict as metrics
from runs.metrics import paired
from runs.models import Benchmark, ChecklistItem, Instance, Judge, Run, Verdict
from runs.selectors.state import KindQuery, SwitchField, kind_state

#: the drill-down keys a cell link sets (the page state without them is the base of those links)
DRILL_DOWN_KEYS = ("label", "type", "scenario", "followed", "sp")
EXAMPLES_LIMIT = 200
FOLLOWED = [("SP", "SP"), ("UQ", "UQ"), ("MD", "MD"), ("neither", "neither"), ("other", "the non-SP side")]


class ConflictQuery(KindQuery):
    """Which runs and judge the page shows, how rows are grouped, the audit exclusion policy, and which table cell
    is drilled into."""

    label = forms.CharField(required=False, max_length=200)
    type = forms.ChoiceField(required=False, choices=[("", "")] + [(t, t) for t in metrics.TYPES])
    scenario = forms.CharField(required=False, max_length=200)
    followed = forms.ChoiceField(required=False, choices=[("", "")] + FOLLOWED)
    sp = SwitchField()

    field_order = ["run", "judge", "by", "label", "type", "scenario", "followed", "sp", "exclude"]


def conflict_state(*, benchmark: Benchmark, query) -> dict:
    """The query validated with its defaults: chosen runs, judge, grouping, exclusion policy and drill-down cell."""
    runs = list(Run.objects.filter(benchmark=benchmark).select_related("model").order_by("label"))
    judges = conflict_judges(benchmark)
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
    """The page's data: resolution rate per model (or run) and conflict type, SP rate per scenario, each row's 95% rank
    interval and tie group by SP rate (`ties`; the 4th of each `scenario_table` entry), what an exclusion policy did
    to the ranking by SP rate, and the attempts behind the chosen cell."""
    judge, excluded, by = state["judge"], state["excluded"], state["by"]
    rows = (
        conflict_rows_select(
            benchmark=state["benchmark"], judge=judge, run_ids=state["run_ids"], excluded_items=excluded
        )
        if judge
        else []
    )
    rates, scenarios = metrics.resolution_rates(rows, by=by), metrics.sp_rates(rows, by=by)
    exclusion = None
    if judge and excluded is not None:
        before = conflict_rows_select(benchmark=state["benchmark"], judge=judge, run_ids=state["run_ids"])
        exclusion = _exclusion(state["exclude"], excluded, before, rows, by)
    types, type_table = metrics.matrix(rates, "type")
    scenario_names, scenario_table = metrics.matrix(scenarios, "scenario")
    lines = exclusion["lines"] if exclusion else {}
    ties = conflict_ties(state, rows)
    data = {
        "rows": rows,
        "rates": rates,
        "scenario_rates": scenarios,
        "exclusion": exclusion,
        "headline": metrics.HEADLINE,
        "types": types,
        "type_table": type_table,
        "type_heads": [(t, metrics.TYPES[t]) for t in types],
        "scenarios": scenario_names,
        "ties": ties,
        "scenario_table": [
            (label, cells, lines.get(label), ties.get(label, paired.Tie())) for label, cells in scenario_table
        ],
    }
    if state["cell"]:
        picked = metrics.drill(rows, by=by, **state["cell"])
        data.update(examples=picked[:EXAMPLES_LIMIT], n_examples=len(picked))
    return data


def conflict_ties(state: dict, rows: Sequence[metrics.ConflictRow]) -> dict[str, paired.Tie]:
    """paired.ties of the rows' runs.metrics.conflict.sp_sides (the headline, SP rate over all scenarios; an instance
    is a conflict) under the state's judge, runs, grouping and exclusion policy, cached per data generation and those
    choices; empty without a judge."""
    if state["judge"] is None:
        return {}
    document = {
        "judge": state["judge"].id,
        "runs": sorted(state["run_ids"]),
        "by": state["by"],
        "excluded": sorted(state["excluded"]) if state["excluded"] is not None else None,
    }
    return cached(
        state["benchmark"].id,
        f"conflict-ties:{digest(document)}",
        lambda: paired.ties(metrics.sp_sides(rows, by=state["by"])),
        kind=dict,
    )


def _exclusion(policy: str, excluded: set[int], before: list, after: list, by: str) -> dict:
    """What the exclusion policy did: the attempts no longer counted (and those read from an audit's rewrite), ranks
    by SP rate before and after, Kendall's tau, the swaps with the resolution items behind each, and the excluded
    items (resolutions first)."""
    lines, tau, swaps = metrics.sp_rank_change(before, after, by=by)
    kept = {r.attempt_id for r in after}
    dropped = [r for r in before if r.attempt_id not in kept]
    originals = {r.item_id for r in before}
    items = excluded_items_select(excluded)
    shown = sorted(items, key=lambda i: not i["resolution"])
    return {
        **exclusion_box(policy, excluded, lines, tau, swaps, {i["id"]: i for i in items}, shown),
        "n_resolution": sum(i["resolution"] for i in items),
        "n_dropped": len(dropped),
        "n_rewritten": sum(r.item_id not in originals for r in after),
        "dropped_instances": sorted({r.instance for r in dropped}),
    }


def conflict_judges(benchmark) -> list:
    """Judges with a verdict on this benchmark's resolution items, by name."""
    ids = (
        Verdict.objects.filter(item__instance__benchmark=benchmark, item__key=metrics.ITEM_KEY)
        .values_list("judge_id", flat=True)
        .distinct()
        .order_by()
    )
    return list(Judge.objects.filter(id__in=list(ids)).order_by("name"))


def conflict_rows_select(
    *, benchmark, judge, run_ids: Sequence[int], excluded_items: Collection[int] | None = None
) -> list[metrics.ConflictRow]:
    """One row per attempt of these runs that the judge read (attempts on instances without a valid pair are left out).

    With `excluded_items` (an audit exclusion policy's checklist items), verdicts on those items are
    left out. The page reads one item per instance, `resolution`; when it is left out and an audit
    rewrote it (`resolution@v2`, ...), the first version that is not left out is read instead (so
    `superseded` reads the newest), else the attempt has no row. Excluded items other than
    resolutions change nothing here.
    """
    conflicts = Instance.objects.filter(benchmark=benchmark).values_list("id", "spec__conflict").order_by()
    verdicts = Verdict.objects.filter(judge=judge, attempt__run_id__in=list(run_ids))
    if excluded_items is None:
        verdicts = verdicts.filter(item__key=metrics.ITEM_KEY)
    else:
        verdicts = verdicts.filter(
            Q(item__key=metrics.ITEM_KEY) | Q(item__key__startswith=metrics.REWRITE_PREFIX)
        ).exclude(item_id__in=list(excluded_items))
    verdicts = verdicts.values_list(
        "attempt_id",
        "attempt__run__label",
        "attempt__run__model__name",
        "attempt__instance_id",
        "attempt__instance__external_id",
        "evidence",
        "item_id",
    ).order_by("attempt__run__label", "attempt__instance__external_id", "item__version")
    return metrics.conflict_rows(list(conflicts), verdicts)


def excluded_items_select(item_ids: Collection[int]) -> list[dict]:
    """The checklist items an exclusion policy leaves out, with their instance and whether each is a conflict's
    resolution item (the only item this page reads), by instance then key."""
    items = (
        ChecklistItem.objects.filter(id__in=list(item_ids))
        .values(
            "id",
            "key",
            "description",
            "instance__external_id",
            "instance__spec__conflict__type",
            "instance__spec__conflict__scenario",
        )
        .order_by("instance__external_id", "key")
    )
    return [{**i, "resolution": metrics.is_resolution_key(i["key"])} for i in items]
