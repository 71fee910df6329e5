"""The checklist pages' state and data: the query string validated once with its defaults (`checklist_query`), and
the leaderboard each state shows (`leaderboard`), as its page, its API, its exports and its snapshots read them.

The state is parsed once per request: `checklist_query` binds the filter form, keeps what it cannot use out of
the state (the default applies), states what the page says beside it and the API answers 400 with, and carries
the state's canonical query string (`state_query`: known parameters, sorted lists, no defaults), which every link
and cache key of the page embeds.

The page, the CSV/JSON exports, GET /api/leaderboards/<slug>/ and share snapshots all read their tables through
`leaderboard_tables`, so they cannot disagree on numbers or order. Three things are kept per data generation in
the cache (`runs.cache.cached`): each state's computed tables; the benchmark's `ModelBase`
(runs.metrics.checklist), a summary of its rollups small enough to read whole, from which the tables of any
filters grouped by model, scaffold, primary category or judge are derived without reading the rollups; and per
filters the usage (tokens, time, tool calls) its rows by model carry (one query over the attempts). Writers
precompute the base of the generation they commit, and the default page with it (runs.cache_warming.after_write),
so no request after a change reads the rollups to score them.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from django import forms
from django.db.models import F, IntegerField, Value
from django.http import QueryDict

from runs.cache import cached
from runs.charts import checklist as charts
from runs.exclusions import (
    excluded_item_ids,
    exclusion_explain_url,
    exclusion_policy_choices,
    exclusion_policy_label,
    exclusion_policy_unknown,
    exclusion_sources,
)
from runs.metrics import checklist as metrics
from runs.metrics import rank_change
from runs.metrics.checklist import GROUPINGS, AttemptRow, Filters, ModelBase, ScoreRow, UsageSummary
from runs.models import AttemptRollup, Benchmark, Instance, Judge, Run
from runs.querystring import params_with
from runs.selectors.state import JUDGE_UNKNOWN, RUN_UNKNOWN
from runs.widgets import CheckboxDropdown

# the page state ------------------------------------------------------------------------------
SORTS = {
    "-isr": "ISR, high first", "isr": "ISR, low first", "-csr": "CSR, high first", "csr": "CSR, low first",
    "model": "model name", "-n": "most instances",
    # per attempt, as logged (docs/metrics.md, "Tokens, time and tool calls"); models that logged none go last
    "tokens": "fewest tokens per attempt", "-tokens": "most tokens per attempt",
    "wall_time": "shortest wall time per attempt", "-wall_time": "longest wall time per attempt",
    "model_time": "shortest model time per attempt", "-model_time": "longest model time per attempt",
    "tool_calls": "fewest tool calls per attempt", "-tool_calls": "most tool calls per attempt",
}

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
    scaffold = forms.MultipleChoiceField(required=False, label="Scaffolds",
                                         widget=CheckboxDropdown(summary_noun="scaffolds"))
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
    parts = [_choices_part(Run.objects.filter(benchmark=benchmark), 0, "label"),
             _choices_part(Judge.objects.filter(id__in=judge_ids), 1, "name"),
             _choices_part(instances.exclude(scaffold=""), 2, "scaffold"),
             _choices_part(instances.exclude(primary_category=""), 3, "primary_category")]
    out: dict[str, list[str]] = {name: [] for name in names}
    # UNION (not ALL) also makes each list distinct; ORDER BY sorts in the database's collation, as before
    for part, value in parts[0].union(*parts[1:]).order_by("choice_part", "choice_value"):
        out[names[part]].append(value)
    return out


def _choices_part(qs, n: int, field: str):
    return qs.annotate(choice_part=Value(n, output_field=IntegerField()), choice_value=F(field)).values_list(
        "choice_part", "choice_value").order_by()


def _form_notes(form: LeaderboardFilterForm) -> list[str]:
    """What the page says about its query (an unknown run, judge or exclusion policy: their default applies), in the
    words its API answers 400 with; its exports refuse such a query with them."""
    form.is_valid()
    return [str(message) for name in STATED for message in form.errors.get(name, ())]


def _form_state(form: LeaderboardFilterForm) -> dict:
    """The form's state, with invalid values (unknown runs, judges...) ignored rather than failing the page."""
    if not form.is_valid():
        for name in list(form.errors):
            form.cleaned_data.pop(name, None)
    return form.state()


@dataclass
class ChecklistQuery:
    """A checklist page's query string parsed once (`checklist_query`): the state with its defaults, what the page
    says of the query (`notes`: an unknown run, judge or exclusion policy, whose default applies), every field's
    error as the API answers 400 with it (`errors`, in the same words), and the state's canonical query string
    (`params`). The filter form is bound to the query; for an empty query it is built only when asked for (the
    page as first opened shows the cached form and needs no choices)."""

    benchmark: Benchmark
    state: dict
    notes: list[str]
    errors: dict[str, list[str]]
    params: QueryDict
    bound: LeaderboardFilterForm | None

    @cached_property
    def form(self) -> LeaderboardFilterForm:
        """The filter form: bound to the query, or unbound for an empty one."""
        return self.bound if self.bound is not None else LeaderboardFilterForm(None, benchmark=self.benchmark)


def checklist_query(benchmark, query) -> ChecklistQuery:
    """The state of a checklist page's query string (a QueryDict: the request's GET, or the API's parameters), its
    notes and errors, and its canonical query; invalid values are left out of the state rather than failing."""
    if not query:
        return ChecklistQuery(benchmark, state_of({}), [], {}, QueryDict(), None)
    form = LeaderboardFilterForm(query, benchmark=benchmark)
    state = _form_state(form)
    errors = {name: [str(m) for m in messages] for name, messages in form.errors.items()}
    return ChecklistQuery(benchmark, state, _form_notes(form), errors, state_query(state), form)



# the leaderboard's tables ------------------------------------------------------------------
@dataclass
class LeaderboardTables:
    """What the leaderboard page shows for one state: overall rows, the rows it exports, groups, matrix, chart."""

    overall: list[ScoreRow]
    rows: list[ScoreRow]  # overall when by == "model", else the model x group cells in page order
    groups: list[str]
    matrix: list[dict]  # [{"row": overall row, "cells": [ScoreRow or None per group]}]; empty when by == "model"
    figure: dict


def sort_rows(rows: Sequence[ScoreRow], sort: str) -> list[ScoreRow]:
    """Rows in a leaderboard sort order (a key of SORTS); rows without a value go last."""
    key = sort.lstrip("-")
    reverse = sort.startswith("-")
    if key == "model":
        return sorted(rows, key=lambda r: r.model)
    if key == "n":
        return sorted(rows, key=lambda r: -r.n_instances)
    missing = [r for r in rows if getattr(r, key) is None]
    present = sorted((r for r in rows if getattr(r, key) is not None), key=lambda r: getattr(r, key), reverse=reverse)
    return present + missing


def matrix_layout(overall: Sequence[ScoreRow], cells: Sequence[ScoreRow], by: str) -> tuple[list[str], list[dict]]:
    """Groups in display order and one matrix line per overall row (cells None where a model has no group value)."""
    order = list(metrics.group_order(by))
    groups = sorted({r.group for r in cells}, key=lambda g: (order.index(g) if g in order else len(order), g))
    by_key = {(r.model, r.group): r for r in cells}
    return groups, [{"row": o, "cells": [by_key.get((o.model, g)) for g in groups]} for o in overall]


def filters_document(f) -> dict:
    """The filters as a JSON document that does not depend on the order values were given in."""
    return {"runs": sorted(f.runs), "judges": sorted(f.judges), "scaffolds": sorted(f.scaffolds),
            "primary_categories": sorted(f.primary_categories), "models": sorted(getattr(f, "models", ()) or ())}


def state_digest(state: dict, excluded_items: Collection[int] | None) -> str:
    """A stable hash of everything a table depends on besides the data: filters, grouping, sort,
    interval flag, exclusion policy and the excluded items themselves (order-independent)."""
    document = {
        **filters_document(state["filters"]), "by": state["by"], "sort": state["sort"], "ci": bool(state["ci"]),
        "exclude": state.get("exclude") or "none",
        "excluded": sorted(excluded_items) if excluded_items else None,
    }
    return hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def leaderboard_tables(benchmark, state: dict, *, excluded_items: Collection[int] | None = None) -> LeaderboardTables:
    """The leaderboard of a benchmark for a state (filters, by, sort, ci) exactly as its page lays it out,
    optionally leaving out excluded checklist items (an audit exclusion policy); cached per data generation."""
    return cached(benchmark.id, state_digest(state, excluded_items),
                  lambda: compute_tables(benchmark.id, state, excluded_items=excluded_items), kind=LeaderboardTables,
                  charged=not is_default(state, excluded_items))


def is_default(state: dict, excluded_items: Collection[int] | None = None) -> bool:
    """Whether this is the page as first opened (no filters, by model, best ISR first, no interval, every
    item): one per data generation whoever asks, so what it caches is charged to no one's budget."""
    f = state["filters"]
    return (not (f.runs or f.judges or f.scaffolds or f.primary_categories or getattr(f, "models", ()))
            and state["by"] == "model" and state["sort"] == "-isr" and not state["ci"]
            and (state.get("exclude") or "none") == "none" and not excluded_items)


def leaderboard_base(benchmark_id: int) -> ModelBase:
    """The benchmark's ModelBase of the current data generation (computed from the rollups when missing)."""
    return cached(benchmark_id, "base", lambda: metrics.model_base(benchmark_id), kind=ModelBase, charged=False)


def leaderboard_usage(benchmark_id: int, filters, base: ModelBase) -> dict[str, UsageSummary]:
    """Per model, the usage of the attempts the filters keep (metrics.usage_by_model: no rollup read, which
    attempts a judges filter keeps comes from the generation's base), cached per data generation and filters;
    the unfiltered one, of which there is one per generation, charged to no one. Judges that scored every
    attempt keep what no judges filter keeps: that entry is read (the writers warm the unfiltered one) instead
    of every attempt's figures (0.5-0.8 s at 100 models)."""
    if filters.judges and metrics.judges_score_every_attempt(base, filters.judges):
        filters = replace(filters, judges=())
    document = filters_document(filters)
    digest = hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return cached(benchmark_id, f"usage:{digest}", lambda: metrics.usage_by_model(benchmark_id, filters, base=base),
                  kind=dict, charged=any(document.values()))


def _rows(benchmark_id: int, filters, *, by: str, ci: bool, excluded_items) -> list[ScoreRow]:
    """Leaderboard rows: from the precomputed base where it answers the state, else from rollups or verdicts.
    Rows by model carry their attempts' usage whichever way they were computed."""
    if not ci and not excluded_items and by in metrics.BASE_GROUPINGS:
        base = leaderboard_base(benchmark_id)
        rows = metrics.base_rows(base, filters, by=by)
        if by == "model" and rows:
            metrics.with_usage(rows, benchmark_id, filters, usage=leaderboard_usage(benchmark_id, filters, base))
        return rows
    return metrics.leaderboard_rows(benchmark_id, filters, by=by, bootstrap=ci, excluded_items=excluded_items)


def compute_tables(benchmark_id: int, state: dict, *,
                   excluded_items: Collection[int] | None = None) -> LeaderboardTables:
    """The tables computed from the base, the rollups (bootstrap intervals, item facets) or the verdicts (items
    excluded), without caching the tables themselves."""
    filters, by, ci = state["filters"], state["by"], state["ci"]
    overall = sort_rows(_rows(benchmark_id, filters, by="model", ci=ci, excluded_items=excluded_items), state["sort"])
    pooled = metrics.runs_by_model(leaderboard_base(benchmark_id), filters)
    for row in overall:
        row.runs = pooled.get(row.model, ())
    if by == "model":
        return LeaderboardTables(overall, overall, [], [], charts.leaderboard_figure(overall))
    cells = _rows(benchmark_id, filters, by=by, ci=ci, excluded_items=excluded_items)
    groups, matrix = matrix_layout(overall, cells, by)
    rows = [cell for line in matrix for cell in line["cells"] if cell is not None]
    figure = charts.matrix_figure(cells, group_label=GROUPINGS[by], groups=groups)
    return LeaderboardTables(overall, rows, groups, matrix, figure)



# the leaderboard as plain JSON: what its API, exports and snapshots keep -----------------------
def score_row_dict(row: ScoreRow) -> dict:
    """A leaderboard row as plain JSON (rates in percent): the shape of snapshots, exports and the API."""
    return {
        "model": row.model, "group": row.group, "runs": list(row.runs),
        "isr": row.isr, "isr_std": row.isr_std, "csr": row.csr, "csr_std": row.csr_std,
        "macro_csr": row.macro_csr, "macro_csr_std": row.macro_csr_std,
        "isr_ci": list(row.isr_ci) if row.isr_ci else None, "csr_ci": list(row.csr_ci) if row.csr_ci else None,
        "n_instances": row.n_instances, "n_attempts": row.n_attempts, "n_empty": row.n_empty, "small": row.small,
        "n_unscored": row.n_unscored, "n_unrecognised": row.n_unrecognised,
        "per_judge": {judge: {"isr": s.isr, "csr": s.csr, "macro_csr": s.macro_csr, "n_instances": s.n_instances,
                              "n_attempts": s.n_attempts, "n_success": s.n_success, "unscored": s.unscored,
                              "n_unrecognised": s.n_unrecognised}
                      for judge, s in row.per_judge.items()},
        "usage": metrics.usage_dict(row.usage),
    }


def state_dict(state: dict) -> dict:
    """A leaderboard state (filters, grouping, sort, interval flag, exclusion policy) as plain JSON."""
    f: Filters = state["filters"]
    return {"run": list(f.runs), "judge": list(f.judges), "scaffold": list(f.scaffolds),
            "primary_category": list(f.primary_categories), "by": state["by"], "sort": state["sort"], "ci": state["ci"],
            "exclude": state.get("exclude", "none")}


_KEY_SEP = "\x1f"


def cell_key(model: str, group: str | None) -> str:
    """The key of a leaderboard cell's frozen attempt list (group "" for a whole model row)."""
    return f"{model}{_KEY_SEP}{group or ''}"


def _drilldown(benchmark: Benchmark, state: dict, tables: LeaderboardTables) -> dict:
    """Per cell the attempts behind it, failing first (metrics.drilldown_rows), in a compact form.

    {"judges": [names], "attempts": {id: [instance id, external id, run, turns]},
    "cells": {cell_key: [[attempt id, [[applicable, passed] or None per judge]], ...]}}: an
    attempt's facts are stored once however many cells it is behind.
    """
    cells = [(r.model, "model", None) for r in tables.overall]
    if state["by"] != "model":
        cells += [(r.model, state["by"], r.group) for r in tables.rows]
    frozen: dict[str, list[AttemptRow]] = {}
    for model, by, group in cells:
        frozen[cell_key(model, group)] = metrics.drilldown_rows(
            benchmark.id, state["filters"], model=model, by=by, group=group)
    rows = [r for cell_rows in frozen.values() for r in cell_rows]
    judges = sorted({j for r in rows for j in r.judges})
    external = dict(Instance.objects.filter(id__in={r.instance_id for r in rows}).values_list("id", "external_id"))
    return {
        "judges": judges,
        "attempts": {str(r.attempt_id): [r.instance_id, external.get(r.instance_id, ""), r.run, r.assistant_turns]
                     for r in rows},
        "cells": {key: [[r.attempt_id, [list(r.judges[j]) if j in r.judges else None for j in judges]]
                        for r in cell_rows]
                  for key, cell_rows in frozen.items()},
    }


@dataclass
class Leaderboard:
    """The leaderboard of one state as its API, exports and snapshots keep it: its tables, the items its exclusion
    policy leaves out (None: no policy), and its layout as plain JSON (`leaderboard_layout`)."""

    tables: LeaderboardTables
    excluded: set[int] | None
    layout: dict


def leaderboard(benchmark: Benchmark, state: dict) -> Leaderboard:
    """The leaderboard of a validated state, leaving out the items its exclusion policy names (the API, the exports,
    the snapshots; the page renders the same tables from `leaderboard_tables`)."""
    excluded = excluded_item_ids(benchmark, state.get("exclude"))
    tables = leaderboard_tables(benchmark, state, excluded_items=excluded)
    return Leaderboard(tables, excluded, leaderboard_layout(benchmark, state, tables, excluded))


def leaderboard_layout(benchmark: Benchmark, state: dict, tables: LeaderboardTables, excluded: set[int] | None) -> dict:
    """What the leaderboard's export and snapshot keep besides the frame's tables: its rows as plain JSON (the shape
    of the API), the matrix's groups, the chart, and the exclusion policy applied."""
    layout = {
        "benchmark": benchmark.slug, "state": state_dict(state), "by": state["by"], "by_label": GROUPINGS[state["by"]],
        "overall": [score_row_dict(r) for r in tables.overall], "rows": [score_row_dict(r) for r in tables.rows],
        "groups": tables.groups, "figure": tables.figure, "small_cell": metrics.SMALL_CELL,
    }
    if excluded is not None:
        layout["exclusion"] = {"policy": state["exclude"], "label": exclusion_policy_label(state["exclude"]),
                               "n_excluded": len(excluded)}
    return layout


def leaderboard_attempt_lists(benchmark: Benchmark, state: dict) -> dict:
    """Each leaderboard cell's attempts, failing first, frozen for a share link made with its attempts
    (`_drilldown`)."""
    excluded = excluded_item_ids(benchmark, state.get("exclude"))
    return _drilldown(benchmark, state, leaderboard_tables(benchmark, state, excluded_items=excluded))




# what the page's #results fragment shows besides the tables -------------------------------------
#: the ingest formats (the first word of a name in runs.ingest.FORMATS) whose reference scorer the page speaks of, in
#: this order: mini-vela's evaluate.py, Inspect AI's scorers, lm-evaluation-harness; the portal's native format has none
SCORED_BY = ("octobench", "inspect", "lm", "native")


def scorers_of(benchmark) -> list[str]:
    """Which of SCORED_BY the benchmark's runs were imported in, from the files each run records (Run.sources): the
    reference scorers the page speaks of (read when the fragment is rendered, so once per data generation and state)."""
    formats = {str(source.get("format") or "").split("-")[0]
               for sources in Run.objects.filter(benchmark=benchmark).values_list("sources", flat=True).order_by()
               for source in sources if isinstance(source, dict)}
    return [name for name in SCORED_BY if name in formats]


def exclusion_effect(benchmark, state: dict, tables: LeaderboardTables, excluded: set[int], params: QueryDict) -> dict:
    """The page's exclusion box: what the state's exclusion policy did to each model's ISR and rank, Kendall's tau,
    the swaps (the audits' effect page, audits.effect.exclusion_effect, also explains the swaps from verdicts)."""
    before = leaderboard_tables(benchmark, state | {"exclude": "none", "by": "model", "ci": False}).overall
    rows, tau, swaps = rank_change.compare(before, tables.overall)
    explain = exclusion_explain_url(benchmark, state["exclude"])
    filters = params_with(params, exclude=None, by=None, sort=None, ci=None)
    return {"policy": state["exclude"], "label": exclusion_policy_label(state["exclude"]), "n_excluded": len(excluded),
            "sources": exclusion_sources(benchmark, state["exclude"]),
            "rows": {r.model: r for r in rows}, "tau": tau, "swaps": swaps,
            "explain_url": f"{explain}&{filters}" if explain and filters else explain,
            "off_query": params_with(params, exclude=None)}
