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

from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from django import forms
from django.db import connection
from django.db.models import (
    Aggregate,
    Avg,
    Count,
    Exists,
    F,
    FloatField,
    IntegerField,
    Max,
    OuterRef,
    Q,
    Sum,
    Value,
)
from django.db.models.functions import Cast, Length, NullIf, Substr
from django.http import QueryDict
from django.urls import reverse

from runs.cache import cached, digest
from runs.charts import checklist as charts
from runs.exclusions import (
    excluded_item_ids,
    exclusion_explain_links,
    exclusion_policy_label,
    exclusion_policy_parts,
    exclusion_sources,
)
from runs.metrics import checklist as metrics
from runs.metrics import comparison, paired, rank_change
from runs.metrics.checklist import (
    GROUPINGS,
    USAGE_FIGURES,
    AttemptRow,
    Cell,
    Filters,
    JudgeScore,
    ModelBase,
    ScoreRow,
    Spread,
    UsageSummary,
    cell_counts,
    group_order,
    group_value,
    judge_score_of,
    paired_comparison,
    score_row_of,
    score_rows,
    token_bucket,
    usage_summary,
    with_bootstrap,
    with_usage,
)
from runs.models import (
    AgentModel,
    Attempt,
    AttemptRollup,
    Benchmark,
    ChecklistItem,
    GroupRollup,
    Instance,
    Judge,
    JudgeDisagreement,
    JudgeReport,
    ReportStatus,
    Run,
    Verdict,
    VerdictResult,
)
from runs.querystring import params_with
from runs.selectors.sides import side_runs
from runs.selectors.state import (
    JUDGE_UNKNOWN,
    RUN_UNKNOWN,
    ExclusionQuery,
    SwitchField,
    exclusion_parameters,
    exclusion_policy_of,
    health_flags,
)
from runs.widgets import CheckboxDropdown

# the page state ------------------------------------------------------------------------------
SORTS = {
    "-isr": "ISR, high first",
    "isr": "ISR, low first",
    "-csr": "CSR, high first",
    "csr": "CSR, low first",
    "model": "model name",
    "-n": "most instances",
    # per attempt, as logged (docs/metrics.md, "Tokens, time and tool calls"); models that logged none go last
    "tokens": "fewest tokens per attempt",
    "-tokens": "most tokens per attempt",
    "wall_time": "shortest wall time per attempt",
    "-wall_time": "longest wall time per attempt",
    "model_time": "shortest model time per attempt",
    "-model_time": "longest model time per attempt",
    "tool_calls": "fewest tool calls per attempt",
    "-tool_calls": "most tool calls per attempt",
}

#: the leaderboard's parameters whose unknown values it says rather than passes over (the others fall back quietly)
STATED = ("run", "judge", "exclude", "health")

#: the by-model table's column sets: the scores, or where the tokens and the time went (the rows are the same)
COLUMN_SETS = {"scores": "scores", "usage": "tokens, time and tool calls"}


class LeaderboardFilterForm(ExclusionQuery):
    """Filters, grouping, sort, the bootstrap flag and the exclusion (an audit policy and item health flags,
    ExclusionQuery) of a checklist leaderboard; choices come from the benchmark (and the policies from
    runs.exclusions)."""

    run = forms.MultipleChoiceField(
        required=False,
        label="Runs",
        widget=CheckboxDropdown(summary_noun="runs"),
        error_messages={"invalid_choice": RUN_UNKNOWN},
    )
    judge = forms.MultipleChoiceField(
        required=False,
        label="Judges",
        widget=CheckboxDropdown(summary_noun="judges"),
        error_messages={"invalid_choice": JUDGE_UNKNOWN},
    )
    scaffold = forms.MultipleChoiceField(
        required=False, label="Scaffolds", widget=CheckboxDropdown(summary_noun="scaffolds")
    )
    primary_category = forms.MultipleChoiceField(
        required=False, label="Primary categories", widget=CheckboxDropdown(summary_noun="categories")
    )
    by = forms.ChoiceField(choices=list(GROUPINGS.items()), required=False, label="Group by")
    sort = forms.ChoiceField(choices=list(SORTS.items()), required=False, label="Sort")
    ci = SwitchField(label="Bootstrap 95% interval")
    cols = forms.ChoiceField(choices=list(COLUMN_SETS.items()), required=False, label="Columns")

    def __init__(self, data, *, benchmark, **kwargs):
        super().__init__(data, **kwargs)
        for name, values in filter_choices(benchmark).items():
            self.fields[name].choices = [(v, v) for v in values]

    def state(self) -> dict:
        """The cleaned state with defaults (call after is_valid, which drops unknown values)."""
        return state_of(self.cleaned_data if self.is_bound and hasattr(self, "cleaned_data") else {})


def state_of(data: dict) -> dict:
    """A leaderboard state from cleaned form data; `state_of({})` is the default state (no filters,
    by model, best ISR first, no interval, every item). `exclude` is the policy applied: the audit policy and the
    item health flags (`health`) composed."""

    def values(name: str) -> list[str]:  # sorted, without repeats: one state however the query lists them
        return sorted(set(data.get(name) or []))

    health = health_flags(data.get("health"))

    return {
        "filters": Filters(
            runs=values("run"),
            judges=values("judge"),
            scaffolds=values("scaffold"),
            primary_categories=values("primary_category"),
        ),
        "by": data.get("by") or "model",
        "sort": data.get("sort") or "-isr",
        "ci": bool(data.get("ci")),
        "exclude": exclusion_policy_of(data.get("exclude"), health),
        "health": health,
        "cols": data.get("cols") or "scores",
    }


def state_query(state: dict) -> QueryDict:
    """The canonical query string of a state: its parameters only, each list sorted and without
    repeats, defaults left out. Two queries that parse to one state give the same one, so what is
    keyed or linked by it cannot be multiplied by inventing parameters or reordering values."""
    default = state_of({})
    query = QueryDict(mutable=True)
    f = state["filters"]
    for name, values in (
        ("run", f.runs),
        ("judge", f.judges),
        ("scaffold", f.scaffolds),
        ("primary_category", f.primary_categories),
    ):
        if values:
            query.setlist(name, list(values))
    for name in ("by", "sort", "cols"):
        if state[name] != default[name]:
            query[name] = state[name]
    exclude, health = exclusion_parameters(state.get("exclude") or "none")
    if exclude != "none":
        query["exclude"] = exclude
    if health:
        query.setlist("health", health)
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
    parts = [
        _choices_part(Run.objects.filter(benchmark=benchmark), 0, "label"),
        _choices_part(Judge.objects.filter(id__in=judge_ids), 1, "name"),
        _choices_part(instances.exclude(scaffold=""), 2, "scaffold"),
        _choices_part(instances.exclude(primary_category=""), 3, "primary_category"),
    ]
    out: dict[str, list[str]] = {name: [] for name in names}
    # UNION (not ALL) also makes each list distinct; ORDER BY sorts in the database's collation, as before
    for part, value in parts[0].union(*parts[1:]).order_by("choice_part", "choice_value"):
        out[names[part]].append(value)
    return out


def _choices_part(qs, n: int, field: str):
    return (
        qs.annotate(choice_part=Value(n, output_field=IntegerField()), choice_value=F(field))
        .values_list("choice_part", "choice_value")
        .order_by()
    )


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
    return {
        "runs": sorted(f.runs),
        "judges": sorted(f.judges),
        "scaffolds": sorted(f.scaffolds),
        "primary_categories": sorted(f.primary_categories),
        "models": sorted(getattr(f, "models", ()) or ()),
    }


def state_digest(state: dict, excluded_items: Collection[int] | None) -> str:
    """A stable hash of everything a table depends on besides the data: filters, grouping, sort,
    interval flag, exclusion policy and the excluded items themselves (order-independent)."""
    document = {
        **filters_document(state["filters"]),
        "by": state["by"],
        "sort": state["sort"],
        "ci": bool(state["ci"]),
        "exclude": state.get("exclude") or "none",
        "excluded": sorted(excluded_items) if excluded_items else None,
    }
    return digest(document)


def leaderboard_tables(benchmark, state: dict, *, excluded_items: Collection[int] | None = None) -> LeaderboardTables:
    """The leaderboard of a benchmark for a state (filters, by, sort, ci) exactly as its page lays it out,
    optionally leaving out excluded checklist items (an audit exclusion policy); cached per data generation."""
    return cached(
        benchmark.id,
        state_digest(state, excluded_items),
        lambda: compute_tables(benchmark.id, state, excluded_items=excluded_items),
        kind=LeaderboardTables,
        charged=not is_default(state, excluded_items),
    )


def is_default(state: dict, excluded_items: Collection[int] | None = None) -> bool:
    """Whether this is the page as first opened (no filters, by model, best ISR first, no interval, every
    item): one per data generation whoever asks, so what it caches is charged to no one's budget."""
    f = state["filters"]
    return (
        not (f.runs or f.judges or f.scaffolds or f.primary_categories or getattr(f, "models", ()))
        and state["by"] == "model"
        and state["sort"] == "-isr"
        and not state["ci"]
        and (state.get("exclude") or "none") == "none"
        and not excluded_items
    )


def leaderboard_base(benchmark_id: int, *, facets: bool = True) -> ModelBase:
    """The benchmark's ModelBase of the current data generation (computed from the rollups when missing); without
    its cells per scaffold and primary category unless `facets` (metrics.needs_facets says when a state needs them):
    a state that does not fetches and unpickles a fifteenth of it (1 MB and 16 ms at 100 models), cached apart."""
    if facets:
        return cached(benchmark_id, "base", lambda: model_base(benchmark_id), kind=ModelBase, charged=False)
    return cached(
        benchmark_id,
        "base-without-facets",
        lambda: metrics.without_facets(leaderboard_base(benchmark_id)),
        kind=ModelBase,
        charged=False,
    )


def leaderboard_usage(benchmark_id: int, filters, base: ModelBase) -> dict[str, UsageSummary]:
    """Per model, the usage of the attempts the filters keep (usage_by_model: no rollup read, which
    attempts a judges filter keeps comes from the generation's base), cached per data generation and filters;
    the unfiltered one, of which there is one per generation, charged to no one. Judges that scored every
    attempt keep what no judges filter keeps: that entry is read (the writers warm the unfiltered one) instead
    of every attempt's figures (0.5-0.8 s at 100 models)."""
    if filters.judges and metrics.judges_score_every_attempt(base, filters.judges):
        filters = replace(filters, judges=())
    document = filters_document(filters)
    return cached(
        benchmark_id,
        f"usage:{digest(document)}",
        lambda: usage_by_model(benchmark_id, filters, base=base),
        kind=dict,
        charged=any(document.values()),
    )


def _rows(benchmark_id: int, filters, *, by: str, ci: bool, excluded_items) -> list[ScoreRow]:
    """Leaderboard rows: from the precomputed base where it answers the state, else from rollups or verdicts.
    Rows by model carry their attempts' usage whichever way they were computed."""
    if not ci and not excluded_items and by in metrics.BASE_GROUPINGS:
        base = leaderboard_base(benchmark_id, facets=metrics.needs_facets(filters, by))
        rows = metrics.base_rows(base, filters, by=by)
        if by == "model" and rows:
            with_usage(rows, leaderboard_usage(benchmark_id, filters, base))
        return rows
    return leaderboard_rows(benchmark_id, filters, by=by, bootstrap=ci, excluded_items=excluded_items)


def compute_tables(
    benchmark_id: int, state: dict, *, excluded_items: Collection[int] | None = None
) -> LeaderboardTables:
    """The tables computed from the base, the rollups (bootstrap intervals, item facets) or the verdicts (items
    excluded), without caching the tables themselves."""
    filters, by, ci = state["filters"], state["by"], state["ci"]
    overall = sort_rows(_rows(benchmark_id, filters, by="model", ci=ci, excluded_items=excluded_items), state["sort"])
    pooled = metrics.runs_by_model(leaderboard_base(benchmark_id, facets=metrics.needs_facets(filters)), filters)
    ties = leaderboard_ties(benchmark_id, filters, rank_figure(state["sort"]), excluded_items=excluded_items)
    for row in overall:
        row.runs = pooled.get(row.model, ())
        row.rank_interval, row.tie_group = ties.ranks.get(row.model), ties.groups.get(row.model)
    if by == "model":
        return LeaderboardTables(overall, overall, [], [], charts.leaderboard_figure(overall))
    cells = _rows(benchmark_id, filters, by=by, ci=ci, excluded_items=excluded_items)
    groups, matrix = matrix_layout(overall, cells, by)
    rows = [cell for line in matrix for cell in line["cells"] if cell is not None]
    figure = charts.matrix_figure(cells, group_label=GROUPINGS[by], groups=groups)
    return LeaderboardTables(overall, rows, groups, matrix, figure)


def rank_figure(sort: str) -> str:
    """The figure a leaderboard's rank intervals and tie groups rank models by: CSR when sorted by CSR, else ISR."""
    return "csr" if sort.lstrip("-") == "csr" else "isr"


@dataclass
class Ties:
    """Per model of a by-model leaderboard, the 95% interval of its rank and its tie group on one figure
    (runs.metrics.paired.rank_intervals and tie_groups, seeded); a model without data has neither (None)."""

    ranks: dict[str, tuple[int, int] | None]
    groups: dict[str, int | None]


def leaderboard_ties(benchmark_id: int, filters, figure: str, *, excluded_items: Collection[int] | None = None) -> Ties:
    """The Ties of the models the filters keep, ranked by `figure` ("isr" or "csr"), leaving out excluded items;
    cached per data generation, filters, exclusion and figure, so every sort ranking by one figure shares them."""
    document = {
        **filters_document(filters),
        "figure": figure,
        "excluded": sorted(excluded_items) if excluded_items else None,
    }
    return cached(
        benchmark_id,
        f"ties:{digest(document)}",
        lambda: compute_ties(benchmark_id, filters, figure, excluded_items=excluded_items),
        kind=Ties,
        charged=bool(excluded_items) or any(filters_document(filters).values()),
    )


def compute_ties(benchmark_id: int, filters, figure: str, *, excluded_items: Collection[int] | None = None) -> Ties:
    """Ties from each model's per-instance counts, without caching them: the generation's InstanceCounts with the
    base's names (no rollup read once they are cached), or the verdicts' cells when items are excluded."""
    if excluded_items:
        cells = leaderboard_cells(benchmark_id, filters, by="model", excluded_items=excluded_items)
        sides = metrics.model_sides(cells, figure=figure)
    else:
        base = leaderboard_base(benchmark_id, facets=False)  # its names: the counts are the instance counts'
        sides = metrics.base_sides(base, leaderboard_instance_counts(benchmark_id), filters, figure=figure)
    return Ties(paired.rank_intervals(sides), paired.tie_groups(sides))


def leaderboard_instance_counts(benchmark_id: int) -> metrics.InstanceCounts:
    """The benchmark's InstanceCounts of the current data generation (one pass over the rollups when missing; one per
    generation, charged to no one, computed when a writer warms the default page)."""

    def compute() -> metrics.InstanceCounts:
        instances = (
            Instance.objects.filter(benchmark_id=benchmark_id)
            .order_by("id")
            .values_list("id", "scaffold", "primary_category")
        )
        rollups = (
            AttemptRollup.objects.filter(benchmark_id=benchmark_id)
            .values_list("run_id", "judge_id", "instance_id", "n_applicable", "n_passed")
            .order_by()
        )
        return metrics.instance_counts(instances, rollups.iterator(chunk_size=20000))

    return cached(benchmark_id, "instance-counts", compute, kind=metrics.InstanceCounts, charged=False)


# the leaderboard as plain JSON: what its API, exports and snapshots keep -----------------------
def score_row_dict(row: ScoreRow) -> dict:
    """A leaderboard row as plain JSON (rates in percent): the shape of snapshots, exports and the API."""
    return {
        "model": row.model,
        "group": row.group,
        "runs": list(row.runs),
        "isr": row.isr,
        "isr_std": row.isr_std,
        "csr": row.csr,
        "csr_std": row.csr_std,
        "macro_csr": row.macro_csr,
        "macro_csr_std": row.macro_csr_std,
        "isr_ci": list(row.isr_ci) if row.isr_ci else None,
        "csr_ci": list(row.csr_ci) if row.csr_ci else None,
        **paired.Tie(row.rank_interval, row.tie_group).fields(),
        "n_instances": row.n_instances,
        "n_attempts": row.n_attempts,
        "n_empty": row.n_empty,
        "small": row.small,
        "n_unscored": row.n_unscored,
        "n_unrecognised": row.n_unrecognised,
        "per_judge": {
            judge: {
                "isr": s.isr,
                "csr": s.csr,
                "macro_csr": s.macro_csr,
                "n_instances": s.n_instances,
                "n_attempts": s.n_attempts,
                "n_success": s.n_success,
                "unscored": s.unscored,
                "n_unrecognised": s.n_unrecognised,
            }
            for judge, s in row.per_judge.items()
        },
        "usage": metrics.usage_dict(row.usage),
    }


def state_dict(state: dict) -> dict:
    """A leaderboard state (filters, grouping, sort, interval flag, exclusion policy) as plain JSON: `exclude` is the
    policy applied (audit and item health parts joined by "+"), `health` the item health flags it composes."""
    f: Filters = state["filters"]
    return {
        "run": list(f.runs),
        "judge": list(f.judges),
        "scaffold": list(f.scaffolds),
        "primary_category": list(f.primary_categories),
        "by": state["by"],
        "sort": state["sort"],
        "ci": state["ci"],
        "exclude": state.get("exclude", "none"),
        "health": list(state.get("health") or ()),
    }


_KEY_SEP = "\x1f"


def cell_key(model: str, group: str | None) -> str:
    """The key of a leaderboard cell's frozen attempt list (group "" for a whole model row)."""
    return f"{model}{_KEY_SEP}{group or ''}"


def _drilldown(benchmark: Benchmark, state: dict, tables: LeaderboardTables) -> dict:
    """Per cell the attempts behind it, failing first (drilldown_rows), in a compact form.

    {"judges": [names], "attempts": {id: [instance id, external id, run, turns]},
    "cells": {cell_key: [[attempt id, [[applicable, passed] or None per judge]], ...]}}: an
    attempt's facts are stored once however many cells it is behind.
    """
    cells = [(r.model, "model", None) for r in tables.overall]
    if state["by"] != "model":
        cells += [(r.model, state["by"], r.group) for r in tables.rows]
    frozen: dict[str, list[AttemptRow]] = {}
    for model, by, group in cells:
        frozen[cell_key(model, group)] = drilldown_rows(benchmark.id, state["filters"], model=model, by=by, group=group)
    rows = [r for cell_rows in frozen.values() for r in cell_rows]
    judges = sorted({j for r in rows for j in r.judges})
    external = dict(Instance.objects.filter(id__in={r.instance_id for r in rows}).values_list("id", "external_id"))
    return {
        "judges": judges,
        "attempts": {
            str(r.attempt_id): [r.instance_id, external.get(r.instance_id, ""), r.run, r.assistant_turns] for r in rows
        },
        "cells": {
            key: [[r.attempt_id, [list(r.judges[j]) if j in r.judges else None for j in judges]] for r in cell_rows]
            for key, cell_rows in frozen.items()
        },
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
        "benchmark": benchmark.slug,
        "state": state_dict(state),
        "by": state["by"],
        "by_label": GROUPINGS[state["by"]],
        "overall": [score_row_dict(r) for r in tables.overall],
        "rows": [score_row_dict(r) for r in tables.rows],
        "groups": tables.groups,
        "figure": tables.figure,
        "small_cell": metrics.SMALL_CELL,
    }
    if excluded is not None:
        rows, tau, swaps = _rank_change(benchmark, state, tables)
        layout["exclusion"] = {
            "policy": state["exclude"],
            "label": exclusion_policy_label(state["exclude"]),
            "parts": exclusion_policy_parts(state["exclude"]),
            "n_excluded": len(excluded),
            "items": sorted(excluded),
            "tau": tau,
            "swaps": [list(pair) for pair in swaps],
            "ranks": {
                r.model: {
                    "isr_before": r.isr_before,
                    "isr_after": r.isr_after,
                    "rank_before": r.rank_before,
                    "rank_after": r.rank_after,
                }
                for r in rows
            },
        }
    return layout


def _rank_change(benchmark, state: dict, tables: LeaderboardTables) -> tuple[list, float | None, list[tuple[str, str]]]:
    """runs.metrics.rank_change.compare of the by-model rows with every item and those under the state's exclusion
    policy: the rows by ISR before and after, Kendall's tau-b, the pairs whose order changed."""
    before = leaderboard_tables(benchmark, state | {"exclude": "none", "health": [], "by": "model", "ci": False})
    return rank_change.compare(before.overall, tables.overall)


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
    formats = {
        str(source.get("format") or "").split("-")[0]
        for sources in Run.objects.filter(benchmark=benchmark).values_list("sources", flat=True).order_by()
        for source in sources
        if isinstance(source, dict)
    }
    return [name for name in SCORED_BY if name in formats]


def exclusion_effect(benchmark, state: dict, tables: LeaderboardTables, excluded: set[int], params: QueryDict) -> dict:
    """The page's exclusion box: what the state's exclusion policy did to each model's ISR and rank, Kendall's tau,
    the swaps (the audits' effect page, audits.effect.exclusion_effect, also explains the swaps from verdicts); under
    a composed policy, a link to each part's explanation."""
    rows, tau, swaps = _rank_change(benchmark, state, tables)
    filters = params_with(params, exclude=None, health=None, by=None, sort=None, ci=None)
    links = [
        {"label": label, "url": f"{url}&{filters}" if filters else url}
        for label, url in exclusion_explain_links(benchmark, state["exclude"])
    ]
    return {
        "policy": state["exclude"],
        "label": exclusion_policy_label(state["exclude"]),
        "parts": exclusion_policy_parts(state["exclude"]),
        "n_excluded": len(excluded),
        "sources": exclusion_sources(benchmark, state["exclude"]),
        "rows": {r.model: r for r in rows},
        "tau": tau,
        "swaps": swaps,
        "explain_url": links[0]["url"] if links else "",
        "explain_links": links,
        "off_query": params_with(params, exclude=None, health=None),
    }


# the reads: rows from the database, scored by runs.metrics.checklist ------------------------------
# Cells from the rollups (attempt, group), or from the verdicts when an exclusion policy leaves items out (rollups
# cannot); the precomputed ModelBase; the usage per model; the attempts behind a cell, an attempt's checklist and
# judge reports, an instance's item x model matrix, the judges' splits and a paired comparison of two sides.
def usage_by_model(benchmark_id: int, filters: Filters, *, base: ModelBase | None = None) -> dict[str, UsageSummary]:
    """Per model, the usage of its attempts the filters keep: every repetition's attempts at the instances kept
    (with a judges filter, those the judges scored). One query: on PostgreSQL the database counts, averages and
    takes the medians (a 48-model study's 31,248 attempts are not sent); elsewhere the figures are read.
    With a judges filter and the generation's `base`, which attempts the judges scored is read from the base's
    bits, not from the rollups (the figures are read, and one query finds the instances' bits)."""
    attempts = _filter(
        Attempt.objects.filter(run__benchmark_id=benchmark_id),
        Filters(
            runs=filters.runs,
            scaffolds=filters.scaffolds,
            primary_categories=filters.primary_categories,
            models=filters.models,
        ),
        model="run__model__name",
    )
    if filters.judges and base is not None:
        judges = set(filters.judges)
        scored: dict[int, int] = defaultdict(int)  # run id -> bits of the instances the judges scored
        for run_id, judge_id, *_, counted, empty in base.merged:
            if base.judges[judge_id] in judges:
                scored[run_id] |= counted | empty
        bit_of = {
            pk: n
            for n, pk in enumerate(
                Instance.objects.filter(benchmark_id=benchmark_id).order_by("id").values_list("id", flat=True)
            )
        }
        kept: dict[str, list[tuple]] = defaultdict(list)
        for run_id, instance_id, model, *figures in attempts.values_list(
            "run_id", "instance_id", "run__model__name", *USAGE_FIGURES
        ).order_by():
            if instance_id in bit_of and scored.get(run_id, 0) >> bit_of[instance_id] & 1:
                kept[model].append(figures)
        return {model: usage_summary(rows) for model, rows in kept.items()}
    if filters.judges:
        attempts = attempts.filter(
            Exists(AttemptRollup.objects.filter(attempt_id=OuterRef("pk"), judge__name__in=list(filters.judges)))
        )
    if connection.vendor != "postgresql":
        by_model: dict[str, list[tuple]] = defaultdict(list)
        for model, *figures in attempts.values_list("run__model__name", *USAGE_FIGURES).order_by():
            by_model[model].append(figures)
        return {model: usage_summary(rows) for model, rows in by_model.items()}
    aggregates = {"n_attempts": Count("id")}
    for name in USAGE_FIGURES:
        aggregates |= {
            f"{name}_n": Count(name),
            f"{name}_mean": Avg(name, output_field=FloatField()),
            f"{name}_median": _Median(name),
        }
    return {
        r["run__model__name"]: UsageSummary(
            r["n_attempts"],
            {name: Spread(r[f"{name}_n"], r[f"{name}_mean"], r[f"{name}_median"]) for name in USAGE_FIGURES},
        )
        for r in attempts.values("run__model__name").annotate(**aggregates).order_by()
    }


class _Median(Aggregate):
    """PostgreSQL's median: the continuous 50th percentile (the mean of the two middle values, as
    statistics.median); NULLs are left out, like not-logged figures in `spread`."""

    function = "PERCENTILE_CONT"
    name = "Median"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


def _filter(qs, filters: Filters, *, via: str = "", model: str = "model__name"):
    """Rows (rollups, or verdicts and judge reports with via="attempt__") the filters keep; `model` is
    the lookup of the model's name (rollups carry the model, verdicts reach it through the attempt's run)."""
    if filters.runs:
        qs = qs.filter(**{f"{via}run__label__in": list(filters.runs)})
    if filters.judges:
        qs = qs.filter(judge__name__in=list(filters.judges))
    if filters.scaffolds:
        qs = qs.filter(**{f"{via}instance__scaffold__in": list(filters.scaffolds)})
    if filters.primary_categories:
        qs = qs.filter(**{f"{via}instance__primary_category__in": list(filters.primary_categories)})
    if filters.models:
        qs = qs.filter(**{f"{model}__in": list(filters.models)})
    return qs


#: _filter's keywords for rows that reach everything through their attempt (verdicts, judge reports)
VIA_ATTEMPT = {"via": "attempt__", "model": "attempt__run__model__name"}


def attempt_cells(benchmark_id: int, filters: Filters, *, by: str = "model") -> list[Cell]:
    """Cells from AttemptRollup, grouped by an instance facet or the judge when asked.

    The rollups are read as ids and counts (the joined names would be sent once per row:
    twice the transfer at 31,248 rows) and named from the few models, runs, judges and
    instances they mention, one small query each."""
    qs = _filter(AttemptRollup.objects.filter(benchmark_id=benchmark_id), filters)
    # grouped by tokens, each rollup also brings its attempt's total tokens (None otherwise: not read)
    tokens = "attempt__total_tokens" if by == "tokens" else "n_unrecognised"
    rows = list(
        qs.values_list(
            "attempt_id",
            "instance_id",
            "model_id",
            "run_id",
            "judge_id",
            "n_applicable",
            "n_passed",
            "attempt__assistant_turns",
            "unscored",
            "n_unrecognised",
            tokens,
        ).order_by()
    )
    facet = {"scaffold": "scaffold", "primary_category": "primary_category"}.get(by)
    wanted = [
        (AgentModel, "name", {r[2] for r in rows}),
        (Run, "label", {r[3] for r in rows}),
        (Judge, "name", {r[4] for r in rows}),
    ] + ([(Instance, facet, {r[1] for r in rows})] if facet else [])
    models, runs, judges, *facets = _names(wanted)
    groups = {i: value or "(none)" for i, value in facets[0].items()} if facet else {}

    def group(instance_id: int, judge_id: int, total: int | None) -> str | None:
        if by == "tokens":
            return token_bucket(total)
        return judges[judge_id] if by == "judge" else groups.get(instance_id) if facet else None

    return [
        Cell(a, i, models[m], runs[r], judges[j], n_app, n_pass, group(i, j, total), turns, unscored, n_unrecognised)
        for a, i, m, r, j, n_app, n_pass, turns, unscored, n_unrecognised, total in rows
    ]


def _names(wanted: list[tuple[type, str, set[int]]]) -> list[dict]:
    """For each (model class, field, ids): {id: field} of those rows; one query for all (UNION ALL)."""
    parts = [
        model.objects.filter(id__in=sorted(ids))
        .annotate(_part=Value(n, output_field=IntegerField()))
        .values_list("_part", "id", field)
        .order_by()
        for n, (model, field, ids) in enumerate(wanted)
        if ids
    ]
    out: list[dict] = [{} for _ in wanted]
    if parts:
        for part, pk, value in parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]:
            out[part][pk] = value
    return out


def group_cells(benchmark_id: int, filters: Filters, *, dimension: str) -> list[Cell]:
    """Cells from GroupRollup for an item facet ("category" or "check_type"), as ids named afterwards."""
    qs = _filter(GroupRollup.objects.filter(benchmark_id=benchmark_id, dimension=dimension), filters, via="attempt__")
    rows = list(
        qs.values_list(
            "attempt_id",
            "attempt__instance_id",
            "model_id",
            "attempt__run_id",
            "judge_id",
            "n_applicable",
            "n_passed",
            "value",
            "attempt__assistant_turns",
        ).order_by()
    )
    models, runs, judges = _names(
        [
            (AgentModel, "name", {r[2] for r in rows}),
            (Run, "label", {r[3] for r in rows}),
            (Judge, "name", {r[4] for r in rows}),
        ]
    )
    return [
        Cell(a, i, models[m], runs[r], judges[j], n_app, n_pass, value, turns)
        for a, i, m, r, j, n_app, n_pass, value, turns in rows
    ]


def verdict_cells(benchmark_id: int, filters: Filters, *, by: str, excluded_items: Collection[int]) -> list[Cell]:
    """Cells recomputed from verdicts with some items left out (the exclusion-policy path only)."""
    field_of = {
        "category": "item__category",
        "check_type": "item__check_type",
        "scaffold": "attempt__instance__scaffold",
        "primary_category": "attempt__instance__primary_category",
        "judge": "judge__name",
        "tokens": "attempt__total_tokens",
    }
    qs = _filter(Verdict.objects.filter(attempt__run__benchmark_id=benchmark_id), filters, **VIA_ATTEMPT)
    qs = qs.exclude(item_id__in=list(excluded_items))
    keys = [
        "attempt_id",
        "attempt__instance_id",
        "attempt__run__model__name",
        "attempt__run__label",
        "judge__name",
        "attempt__assistant_turns",
    ]
    group_field = field_of.get(by)
    if group_field and group_field not in keys:
        keys.append(group_field)
    rows = (
        qs.values(*keys)
        .annotate(
            n_applicable=Count("id", filter=~Q(result=VerdictResult.NOT_APPLICABLE)),
            n_passed=Count("id", filter=Q(result=VerdictResult.PASS)),
        )
        .order_by()
    )
    # keyed by the group as named (a token bucket, "(none)"), as _add_judge_reports finds the cells
    cells = {}
    for r in rows:
        group = group_value(by, r[group_field]) if group_field else None
        cells[(r["attempt_id"], r["judge__name"], group)] = Cell(
            r["attempt_id"],
            r["attempt__instance_id"],
            r["attempt__run__model__name"],
            r["attempt__run__label"],
            r["judge__name"],
            r["n_applicable"],
            r["n_passed"],
            group,
            r["attempt__assistant_turns"],
        )
    _add_judge_reports(cells, benchmark_id, filters, keys, group_field, excluded_items, by=by)
    return list(cells.values())


def _add_judge_reports(
    cells: dict[tuple, Cell],
    benchmark_id: int,
    filters: Filters,
    keys: list[str],
    group_field: str | None,
    excluded_items: Collection[int],
    *,
    by: str = "model",
) -> None:
    """Judge reports added to verdict cells as runs.services adds them to the rollups: an attempt the judge
    could not score counts its instance's items (those not excluded, at least one) as failed, per item facet
    when grouped by one; a scored attempt adds the checks the checklist lacks (not per item facet)."""
    by_item = group_field is not None and group_field.startswith("item__")
    qs = _filter(JudgeReport.objects.filter(attempt__run__benchmark_id=benchmark_id), filters, **VIA_ATTEMPT)
    reports = list(
        qs.values(
            *(k for k in keys if not k.startswith("item__")),
            "status",
            "n_applicable_extra",
            "n_passed_extra",
            "unrecognised",
        ).order_by()
    )
    facet = group_field.removeprefix("item__") if by_item else "key"
    items: dict[int, list[str]] = defaultdict(list)
    for instance_id, value in (
        ChecklistItem.objects.filter(
            instance_id__in={r["attempt__instance_id"] for r in reports if r["status"] != ReportStatus.SCORED}
        )
        .exclude(id__in=list(excluded_items))
        .values_list("instance_id", facet)
    ):
        items[instance_id].append(value)
    for r in reports:
        unscored = "" if r["status"] == ReportStatus.SCORED else r["status"]
        if by_item:
            counts = Counter(value or "(none)" for value in items[r["attempt__instance_id"]]) if unscored else {}
        else:
            group = group_value(by, r[group_field]) if group_field else None
            extra = max(len(items[r["attempt__instance_id"]]), 1) if unscored else r["n_applicable_extra"]
            counts = {group: extra}
        for group, n in counts.items():
            key = (r["attempt_id"], r["judge__name"], group)
            if key not in cells and not n:  # a scored attempt whose verdicts were all left out stays out
                continue
            cell = cells.get(key) or Cell(
                r["attempt_id"],
                r["attempt__instance_id"],
                r["attempt__run__model__name"],
                r["attempt__run__label"],
                r["judge__name"],
                0,
                0,
                group,
                r["attempt__assistant_turns"],
            )
            passed = 0 if unscored or by_item else r["n_passed_extra"]
            if by_item:  # as GroupRollup, which keeps counts only
                cells[key] = cell._replace(n_applicable=cell.n_applicable + n)
                continue
            cells[key] = cell._replace(
                n_applicable=cell.n_applicable + n,
                n_passed=cell.n_passed + passed,
                unscored=unscored,
                n_unrecognised=len(r["unrecognised"] or {}),
            )


def leaderboard_cells(
    benchmark_id: int, filters: Filters, *, by: str = "model", excluded_items: Collection[int] | None = None
) -> list[Cell]:
    """The cells behind a leaderboard grouped `by` (a key of GROUPINGS); rollups unless items are excluded."""
    if by not in GROUPINGS:
        raise ValueError(f"unknown grouping {by!r}")
    if excluded_items:
        return verdict_cells(benchmark_id, filters, by=by, excluded_items=excluded_items)
    if by in ("category", "check_type"):
        return group_cells(benchmark_id, filters, dimension=by)
    return attempt_cells(benchmark_id, filters, by=by)


def leaderboard_rows(
    benchmark_id: int,
    filters: Filters,
    *,
    by: str = "model",
    bootstrap: bool = False,
    excluded_items: Collection[int] | None = None,
) -> list[ScoreRow]:
    """Leaderboard rows (by model, or a model x group matrix), with bootstrap intervals when asked."""
    if by == "model" and not bootstrap and not excluded_items:
        return rows_with_usage(model_rows_counted(benchmark_id, filters), benchmark_id, filters)
    cells = leaderboard_cells(benchmark_id, filters, by=by, excluded_items=excluded_items)
    rows = score_rows(cells, group_order=group_order(by))
    if bootstrap:
        grouped: dict[tuple[str, str | None], list[Cell]] = defaultdict(list)
        for c in cells:
            grouped[(c.model, c.group)].append(c)
        for row in rows:
            with_bootstrap(row, grouped[(row.model, row.group)])
    return rows_with_usage(rows, benchmark_id, filters) if by == "model" else rows


def rows_with_usage(rows: list[ScoreRow], benchmark_id: int, filters: Filters) -> list[ScoreRow]:
    """The rows (by model) with their attempts' usage as usage_by_model reads it (no query when there are none)."""
    return with_usage(rows, usage_by_model(benchmark_id, filters) if rows else {})


def model_rows_counted(benchmark_id: int, filters: Filters) -> list[ScoreRow]:
    """`score_rows(attempt_cells(...))` by model, with the counting done in the database: the same
    integers (two GROUP BY queries over the rollups), so the same rows, without building a cell
    per rollup in Python. ISR, CSR, means and stds are computed from them by the same functions."""
    rollups = _filter(AttemptRollup.objects.filter(benchmark_id=benchmark_id), filters).order_by()
    counted = Q(n_applicable__gt=0)
    statuses = [s for s in ReportStatus.values if s != ReportStatus.SCORED]
    per_judge = list(
        rollups.values("model_id", "judge_id")
        .annotate(
            attempts=Count("id", filter=counted),
            success=Count("id", filter=counted & Q(n_passed=F("n_applicable"))),
            applicable=Sum("n_applicable", filter=counted, default=0),
            passed=Sum("n_passed", filter=counted, default=0),
            instances=Count("instance_id", filter=counted, distinct=True),
            empty=Count("attempt_id", filter=Q(n_applicable=0), distinct=True),
            rate_sum=Sum(Cast("n_passed", FloatField()) / NullIf("n_applicable", 0), filter=counted, default=0.0),
            unrecognised=Sum("n_unrecognised", default=0),
            **{f"unscored_{s}": Count("id", filter=Q(unscored=s)) for s in statuses},
        )
        .values_list(
            "model_id",
            "judge_id",
            "attempts",
            "success",
            "applicable",
            "passed",
            "instances",
            "empty",
            "rate_sum",
            "unrecognised",
            *(f"unscored_{s}" for s in statuses),
        )
    )
    # across judges: an attempt counts when any judge had an applicable item, else it is empty
    inner, params = (
        rollups.values("model_id", "attempt_id", "instance_id")
        .annotate(most=Max("n_applicable"))
        .values_list("model_id", "attempt_id", "instance_id", "most")
        .query.sql_with_params()
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.model_id, COUNT(DISTINCT t.instance_id) FILTER (WHERE t.most > 0), "
            "COUNT(*) FILTER (WHERE t.most > 0), COUNT(*) FILTER (WHERE t.most = 0) "
            f"FROM ({inner}) t GROUP BY t.model_id",
            params,
        )
        across = {m: (i, a, e) for m, i, a, e in cursor.fetchall()}
    names = _names([(AgentModel, "name", set(across)), (Judge, "name", {j for _, j, *_ in per_judge})])
    judges: dict[int, dict[str, JudgeScore]] = defaultdict(dict)
    for m, j, attempts, success, applicable, passed, instances, empty, rate_sum, unrecognised, *unscored in per_judge:
        judges[m][names[1][j]] = judge_score_of(
            attempts,
            success,
            applicable,
            passed,
            instances,
            empty,
            rate_sum=rate_sum,
            unscored=dict(zip(statuses, unscored)),
            n_unrecognised=unrecognised,
        )
    rows = [
        score_row_of(names[0][m], None, dict(sorted(judges[m].items())), n_instances=i, n_attempts=a, n_empty=e)
        for m, (i, a, e) in across.items()
    ]
    return sorted(rows, key=lambda r: r.model)


def model_base(benchmark_id: int) -> ModelBase:
    """The ModelBase of a benchmark from its AttemptRollup rows as committed now (one pass over them)."""
    instances = (
        Instance.objects.filter(benchmark_id=benchmark_id)
        .order_by("id")
        .values_list("id", "scaffold", "primary_category")
    )
    rollups = (
        AttemptRollup.objects.filter(benchmark_id=benchmark_id)
        .values_list(
            "run_id", "model_id", "judge_id", "instance_id", "n_applicable", "n_passed", "unscored", "n_unrecognised"
        )
        .order_by()
    )
    sums = metrics.base_sums(instances, rollups.iterator(chunk_size=20000))
    labels, models, judges = _names(
        [
            (Run, "label", set(sums.model_of)),
            (AgentModel, "name", set(sums.model_of.values())),
            (Judge, "name", {c[1] for c in sums.cells}),
        ]
    )
    runs = {pk: (label, sums.model_of[pk]) for pk, label in labels.items()}
    return ModelBase(
        runs,
        models,
        judges,
        sums.cells,
        sums.merged,
        n_instances=sums.n_instances,
        n_runs=Run.objects.filter(benchmark_id=benchmark_id).count(),
    )


def drilldown_rows(
    benchmark_id: int, filters: Filters, *, model: str, by: str = "model", group: str | None = None
) -> list[AttemptRow]:
    """The attempts behind one cell (model, and group value when grouped), failing first, worst first."""
    scoped = Filters(
        runs=filters.runs,
        judges=filters.judges,
        scaffolds=filters.scaffolds,
        primary_categories=filters.primary_categories,
        models=[model],
    )
    cells = leaderboard_cells(benchmark_id, scoped, by=by)
    if by != "model":
        cells = [c for c in cells if c.group == group]
    rows: dict[int, AttemptRow] = {}
    for c in cells:
        row = rows.setdefault(c.attempt_id, AttemptRow(c.attempt_id, c.instance_id, c.run, c.assistant_turns, {}))
        row.judges[c.judge] = (c.n_applicable, c.n_passed)
    # the few attempts a judge could not score (group cells do not say which): one query on the rollups
    unscored = _filter(AttemptRollup.objects.filter(benchmark_id=benchmark_id), scoped).exclude(unscored="")
    for attempt_id, judge, status in unscored.values_list("attempt_id", "judge__name", "unscored").order_by():
        if attempt_id in rows and judge in rows[attempt_id].judges:
            rows[attempt_id].unscored[judge] = ReportStatus(status).label
    return sorted(rows.values(), key=lambda r: (not r.failing, r.pass_ratio, -r.n_failed, r.attempt_id))


def attach_failing_items(
    rows: Sequence[AttemptRow],
    *,
    by: str = "model",
    group: str | None = None,
    judges: Collection[str] | None = (),
    newest_verdict_id: int | None = None,
) -> None:
    """Fill external ids, usage (tokens, wall time, tool calls) and failing items (with the judges that failed
    them) of a page of rows; two queries. `newest_verdict_id` keeps only verdicts stored up to it (a share link's
    attempts, as they were when it was made)."""
    if not rows:
        return
    facts = {
        a: rest
        for a, *rest in Attempt.objects.filter(id__in=[r.attempt_id for r in rows])
        .values_list("id", "instance__external_id", "total_tokens", "wall_seconds", "tool_calls")
        .order_by()
    }
    qs = Verdict.objects.filter(attempt_id__in=[r.attempt_id for r in rows], result=VerdictResult.FAIL)
    if judges:
        qs = qs.filter(judge__name__in=list(judges))
    if newest_verdict_id is not None:
        qs = qs.filter(id__lte=newest_verdict_id)
    if by == "category":
        qs = qs.filter(item__category=group)
    elif by == "check_type":
        qs = qs.filter(item__check_type=group)
    elif by == "judge":
        qs = qs.filter(judge__name=group)
    failing = metrics.failing_items(
        qs.values_list(
            "attempt_id", "item_id", "item__key", "item__description", "item__category", "judge__name"
        ).order_by("item__position", "judge__name")
    )
    for row in rows:
        row.external_id, row.total_tokens, row.wall_seconds, row.tool_calls = facts.get(
            row.attempt_id, ("", None, None, None)
        )
        row.failing_items = list(failing.get(row.attempt_id, ()))


def attempt_checklist(
    attempt_id: int,
    *,
    reasoning_cut: int | None = None,
    judges: Collection[str] | None = None,
    newest_verdict_id: int | None = None,
) -> list[dict]:
    """The attempt's checklist with each judge's verdict and reasoning; items any judge failed come first.

    With `reasoning_cut`, each reasoning is read only up to that many characters (the database cuts it:
    a 5 MB reasoning is never loaded for a page), with its full "reasoning_size" and "reasoning_cut".
    `judges` keeps only those judges' verdicts and `newest_verdict_id` only verdicts stored up to that
    id: a share link shows what its snapshot saw, not verdicts imported after it was made. A verdict's
    `written` is the result the judge wrote when the reference scorer does not recognise it (as JSON)."""
    instance_id = Attempt.objects.filter(id=attempt_id).values_list("instance_id", flat=True).first()
    items = list(
        ChecklistItem.objects.filter(instance_id=instance_id).values(
            "id", "key", "description", "category", "category_original", "check_type", "position"
        )
    )
    written = dict(
        JudgeReport.objects.filter(attempt_id=attempt_id)
        .exclude(unrecognised={})
        .values_list("judge__name", "unrecognised")
    )
    text = F("reasoning") if reasoning_cut is None else Substr("reasoning", 1, reasoning_cut)
    verdicts = Verdict.objects.filter(attempt_id=attempt_id).annotate(text=text, size=Length("reasoning"))
    if judges is not None:
        verdicts = verdicts.filter(judge__name__in=list(judges))
    if newest_verdict_id is not None:
        verdicts = verdicts.filter(id__lte=newest_verdict_id)
    return metrics.checklist_items(
        items,
        written,
        verdicts.values("id", "item_id", "judge__name", "result", "text", "size", "evidence").order_by("judge__name"),
    )


#: evaluate.py's error texts for an instance it could not give the judge, in plain words
REFERENCE_ERRORS = {
    "轨迹文件为空": "the trajectory file was empty",
    "case 中没有 checklist": "the instance has no checklist",
}


def attempt_judge_reports(attempt_id: int, *, judges: Collection[str] | None = None) -> list[dict]:
    """What each judge's scores file said about the attempt as a whole, by judge name: the reward and
    binary reward it wrote, and for an unscored attempt the reason in plain words, the error and the reply
    (only `judges`' reports when given, as a share link's scope says)."""
    reports = JudgeReport.objects.filter(attempt_id=attempt_id)
    if judges is not None:
        reports = reports.filter(judge__name__in=list(judges))
    out = []
    for r in reports.select_related("judge").order_by("judge__name"):
        reason = ReportStatus(r.status).label if r.unscored else ""
        if r.status == ReportStatus.FAILED and r.error in REFERENCE_ERRORS:
            reason = f"evaluate.py did not call the judge: {REFERENCE_ERRORS[r.error]}"
        out.append(
            {
                "judge": r.judge.name,
                "judge_id": r.judge_id,
                "status": r.status,
                "unscored": r.unscored,
                "reason": reason,
                "error": r.error,
                "reply": r.raw_reply,
                "reward": r.reward,
                "binary_reward": r.binary_reward,
                "unrecognised": r.unrecognised,
                "extra_checks": r.extra_checks,
                "counted_failed": r.n_applicable_extra if r.unscored else 0,
            }
        )
    return out


def item_model_matrix(instance_id: int) -> dict:
    """Per checklist item and model: pass rate over applicable verdicts (all judges, all repetitions) of one instance."""
    items = list(
        ChecklistItem.objects.filter(instance_id=instance_id).values(
            "id", "key", "description", "category", "category_original", "check_type", "position"
        )
    )
    counts = (
        Verdict.objects.filter(attempt__instance_id=instance_id)
        .values("item_id", "attempt__run__model__name")
        .annotate(
            n=Count("id", filter=~Q(result=VerdictResult.NOT_APPLICABLE)),
            passed=Count("id", filter=Q(result=VerdictResult.PASS)),
            na=Count("id", filter=Q(result=VerdictResult.NOT_APPLICABLE)),
        )
        .order_by()
    )
    return metrics.item_matrix(items, counts)


def judge_disagreements(benchmark_id: int, filters: Filters, *, limit: int = 20) -> list[dict]:
    """Items on which judges split most often: attempts where one judge passed and another failed the item.

    The split pairs are read from JudgeDisagreement (kept by the rollup rebuild), counted per item in
    the database; a judge filter keeps the pairs some chosen judge passed and another failed. Only the
    `limit` items shown read their verdicts, for the attempts judged on them (the rate's denominator)."""
    pairs = _filter(JudgeDisagreement.objects.filter(benchmark_id=benchmark_id), replace(filters, judges=()))
    if filters.judges:
        judge_keys = [str(i) for i in Judge.objects.filter(name__in=list(filters.judges)).values_list("id", flat=True)]
        if not judge_keys:
            return []
        pairs = pairs.filter(passed_by__has_any_keys=judge_keys, failed_by__has_any_keys=judge_keys)
    top = list(
        pairs.values("item_id").annotate(n=Count("id")).order_by("-n", "item_id").values_list("item_id", "n")[:limit]
    )
    if not top:
        return []
    ids = [i for i, _ in top]
    qs = _filter(
        Verdict.objects.filter(attempt__run__benchmark_id=benchmark_id, item_id__in=ids), filters, **VIA_ATTEMPT
    )
    judged = dict(
        qs.exclude(result=VerdictResult.NOT_APPLICABLE)
        .values("item_id")
        .annotate(n=Count("attempt_id", distinct=True))
        .order_by()
        .values_list("item_id", "n")
    )
    info = {
        i["id"]: i
        for i in ChecklistItem.objects.filter(id__in=ids).values(
            "id", "key", "description", "category", "instance_id", "instance__external_id"
        )
    }
    return [
        {**info[i], "split": n, "judged": judged.get(i, 0), "rate": 100.0 * n / judged[i] if judged.get(i) else None}
        for i, n in top
    ]


def _side_filters(side: str) -> Filters:
    """A comparison side: "model:<name>" for all runs of a model, else a run label."""
    if side.startswith("model:"):
        return Filters(models=[side[6:]])
    return Filters(runs=[side])


def _flipped_items(
    benchmark_id: int, a: str, b: str, instances: Collection[int], judges: Collection[str], *, limit: int
) -> metrics.Flips:
    """The items that flipped between two sides on the instances and judges given, from the items each attempt
    rollup lists as passed and failed (metrics.flipped_items_of_rollups), not from the verdicts."""
    judge_of = dict(Judge.objects.filter(name__in=list(judges)).values_list("id", "name"))

    def rollups(side: str) -> list[tuple[int, str, str, str]]:
        rows = AttemptRollup.objects.filter(
            run_id__in=list(side_runs(benchmark_id, side).values()),
            instance_id__in=list(instances),
            judge_id__in=list(judge_of),
        ).values_list("instance_id", "judge_id", "passed_items", "failed_items")
        return [(instance, judge_of[judge], passed, failed) for instance, judge, passed, failed in rows.order_by()]

    return metrics.flipped_items_of_rollups(rollups(a), rollups(b), limit=limit)


def compare_sides(
    benchmark_id: int, a: str, b: str, *, limit: int = 200, cells: tuple[list[Cell], list[Cell]] | None = None
) -> dict:
    """Paired comparison of two sides and the items that flipped each way (verdicts of the common instances): every
    flip counted, the first `limit` of each direction listed with their item. `cells`: both sides' attempt cells
    when the caller has read them (compare_checklist)."""
    cells_a, cells_b = cells or tuple(attempt_cells(benchmark_id, _side_filters(side)) for side in (a, b))
    paired = paired_comparison(cells_a, cells_b, label_a=a, label_b=b)
    common = {c.instance_id for c in cells_a} & {c.instance_id for c in cells_b}

    flips = (
        _flipped_items(benchmark_id, a, b, common, paired.judges, limit=limit)
        if common
        else metrics.Flips({"fixed": 0, "broken": 0}, {"fixed": {}, "broken": {}})
    )
    shown = [key for entries in flips.listed.values() for key in entries]
    items = {
        i["id"]: i
        for i in ChecklistItem.objects.filter(id__in={item for _, item in shown}).values(
            "id", "key", "description", "category"
        )
    }
    external = dict(
        Instance.objects.filter(id__in={instance for instance, _ in shown}).values_list("id", "external_id")
    )

    def entry(direction: str, instance_id: int, item_id: int, judges: list[str]) -> dict:
        return {
            **items.get(item_id, {}),
            "instance_id": instance_id,
            "external_id": external.get(instance_id, ""),
            "direction": direction,
            "judges": judges,
        }

    return {
        "paired": paired,
        **{
            direction: [entry(direction, *key, judges) for key, judges in entries.items()]
            for direction, entries in flips.listed.items()
        },
        "n_fixed": flips.counts["fixed"],
        "n_broken": flips.counts["broken"],
    }


# Paired comparison ------------------------------------------------------------------------------
# Two sides of one benchmark (a run label, or "model:<name>" for every run of a model, as the compare page names
# them) on the instances both cover: per figure, per judge and pooled across judges, and per primary category, B - A
# with its paired interval and test (runs.metrics.paired), from the rollups' cells (the verdicts' only when an
# exclusion policy leaves items out); and the items that flipped (compare_sides). runs.selectors.compare assembles
# them for the compare page, its exports, GET /api/compare/<slug>/ and manage.py compare.

#: the figures a paired comparison covers, in the order it shows them, with their names
PAIRED_METRICS = metrics.COUNTED_FIGURES
SidesComparison = comparison.SidesComparison


def judge_unknown(benchmark_id: int, judges: Collection[str]) -> list[str]:
    """The judges named that scored nothing in the benchmark."""
    known = set(
        AttemptRollup.objects.filter(benchmark_id=benchmark_id, judge__name__in=list(judges))
        .values_list("judge__name", flat=True)
        .distinct()
    )
    return sorted(set(judges) - known)


def compare_paired(
    benchmark: Benchmark,
    baseline: str,
    candidate: str,
    *,
    metrics: Sequence[str] = tuple(PAIRED_METRICS),
    judges: Collection[str] = (),
    excluded_items: Collection[int] | None = None,
    cells: Sequence[list[Cell]] | None = None,
) -> SidesComparison:
    """The paired table of two sides (named as side_of returns them), on the judges given (default: all); `cells`:
    both sides' _paired_cells where the caller has read them."""
    cells = cells or [_paired_cells(benchmark.id, side, judges, excluded_items or ()) for side in (baseline, candidate)]
    instances = sorted({c.instance_id for side in cells for c in side})
    judge_names = sorted({c.judge for side in cells for c in side})
    category_of = {c.instance_id: c.group or comparison.NO_CATEGORY for side in cells for c in side}
    axes = ({pk: n for n, pk in enumerate(instances)}, {name: n for n, name in enumerate(judge_names)})
    counted = comparison.CountedSides(
        instances, judge_names, category_of, (cell_counts(cells[0], *axes), cell_counts(cells[1], *axes))
    )
    return comparison.paired_table(
        benchmark.slug,
        baseline,
        candidate,
        counted,
        metrics={m: PAIRED_METRICS[m] for m in metrics},
        excluded_items=len(excluded_items or ()),
    )


def _paired_cells(benchmark_id: int, side: str, judges: Collection[str], excluded_items: Collection[int]) -> list[Cell]:
    """A side's cells with the instance's primary category as their group."""
    filters = replace(_side_filters(side), judges=list(judges))
    if excluded_items:
        return verdict_cells(benchmark_id, filters, by="primary_category", excluded_items=excluded_items)
    return attempt_cells(benchmark_id, filters, by="primary_category")


def compare_checklist(
    benchmark: Benchmark,
    baseline: str,
    candidate: str,
    *,
    metrics: Sequence[str] = tuple(PAIRED_METRICS),
    judges: Collection[str] = (),
    excluded_items: Collection[int] | None = None,
) -> tuple[SidesComparison, dict]:
    """compare_paired and compare_sides of two sides, each side's rollups read once where both read the same (every
    judge, no item left out)."""
    cells = tuple(_paired_cells(benchmark.id, side, (), ()) for side in (baseline, candidate))
    table = compare_paired(
        benchmark,
        baseline,
        candidate,
        metrics=metrics,
        judges=judges,
        excluded_items=excluded_items,
        cells=None if judges or excluded_items else cells,
    )
    return table, compare_sides(benchmark.id, baseline, candidate, cells=cells)


def paired_document(table: SidesComparison, flips: dict) -> dict:
    """A checklist comparison as plain JSON: the table, the regressions, and the flipped items with their instance's
    page (`flips` as runs.selectors.checklist.compare_sides returns them)."""

    def flip(entry: dict) -> dict:
        return {
            "instance": entry["external_id"],
            "instance_url": reverse("runs:instance", args=[entry["instance_id"]]),
            "item": entry.get("key"),
            "category": entry.get("category"),
            "judges": entry["judges"],
        }

    return {
        **comparison.table_document(table),
        "n_fixed": flips["n_fixed"],
        "n_broken": flips["n_broken"],
        "fixed": [flip(e) for e in flips["fixed"]],
        "broken": [flip(e) for e in flips["broken"]],
    }


def paired_comparison_document(
    benchmark: Benchmark,
    baseline: str,
    candidate: str,
    *,
    metrics: Sequence[str] = tuple(PAIRED_METRICS),
    judges: Collection[str] = (),
    excluded_items: Collection[int] | None = None,
) -> dict:
    """paired_document of compare_paired and the flipped items: a checklist benchmark's answer to
    GET /api/compare/<slug>/ and manage.py compare --json (runs.selectors.compare.paired_comparison_document)."""
    table, flips = compare_checklist(
        benchmark, baseline, candidate, metrics=metrics, judges=judges, excluded_items=excluded_items
    )
    return paired_document(table, flips)
