"""The conflict page (OctoBench-Conflict) as data: resolution rates per conflict type, SP rate per scenario."""

from __future__ import annotations

from runs.exclusions import exclusion_facts
from runs.metrics.conflict import NEITHER
from runs.pages import Column, PageData, Table, page_builder

#: a row's rank interval and tie group by SP rate over all scenarios (runs.metrics.paired.Tie.fields)
_TIES = ("rank_low", "rank_high", "tie_group")


@page_builder(
    ("resolution", "Resolution rate per conflict type"),
    ("sp-rate", "System-prompt rate per scenario"),
    ("attempts", "Attempts behind the chosen cell"),
    links_attempts=True,
    per_item=("attempts",),
)
def metrics_page(context: dict) -> PageData:
    """Per model (or run) and conflict type the share that followed each side or neither; per scenario the SP rate,
    with ranks before and after an exclusion policy and the row's rank interval and tie group by SP rate over all
    scenarios; with a cell chosen, the attempts behind it."""
    label = Column("label", "Run" if context["by"] == "run" else "Model")
    types = Table(
        "resolution",
        "Resolution rate per conflict type",
        (
            label,
            Column("type", "Conflict type"),
            Column("n", "Attempts", "int"),
            Column("side_a", "Side A"),
            Column("side_a_pct", "Followed side A %", "pct"),
            Column("side_b", "Side B"),
            Column("side_b_pct", "Followed side B %", "pct"),
            Column("neither_pct", "Followed neither %", "pct"),
        ),
        [
            {
                "label": r.label,
                "type": r.type,
                "n": r.n,
                "side_a": r.sources[0],
                "side_a_pct": r.first,
                "side_b": r.sources[1],
                "side_b_pct": r.second,
                "neither_pct": r.percent(NEITHER),
            }
            for r in context.get("rates", [])
        ],
    )
    exclusion = bool(context.get("exclusion"))
    columns = (
        label,
        Column("scenario", "Scenario"),
        Column("n", "Attempts", "int"),
        Column("sp_rate", "Followed SP %", "pct"),
        Column("other_rate", "Followed the other side %", "pct"),
        Column("neither_rate", "Followed neither %", "pct"),
    )
    if exclusion:
        columns += (
            Column("rank_after", "Rank", "num"),
            Column("value_before", f"{context['headline']} % with every item", "pct"),
            Column("rank_before", "Rank with every item", "num"),
        )
    # last: columns added after scripts learnt the others' places (the label's rank interval and tie group)
    columns += tuple(Column(k, k, "int") for k in _TIES)
    rows = []
    for name, cells, effect, tie in context.get("scenario_table", []):
        for c in cells:
            if c is not None:
                rows.append(
                    {
                        "label": name,
                        "scenario": c.scenario,
                        "n": c.n,
                        "sp_rate": c.sp_rate,
                        "other_rate": c.other_rate,
                        "neither_rate": c.neither_rate,
                        **{k: getattr(effect, k, None) for k in ("rank_after", "value_before", "rank_before")},
                        **tie.fields(),
                    }
                )
    scenarios = Table("sp-rate", "System-prompt rate per scenario", columns, rows)
    attempts = Table(
        "attempts",
        "Attempts behind the chosen cell",
        (
            Column("run", "Run"),
            Column("model", "Model"),
            Column("instance", "Instance", link="attempt_id"),
            Column("type", "Type"),
            Column("scenario", "Scenario"),
            Column("a", "A"),
            Column("b", "B"),
            Column("followed", "Followed"),
            Column("followed_source", "Followed source"),
        ),
        [
            {
                "run": r.run,
                "model": r.model,
                "instance": r.instance,
                "attempt_id": r.attempt_id,
                "type": r.type,
                "scenario": r.scenario,
                "a": r.a,
                "b": r.b,
                "followed": r.followed,
                "followed_source": r.followed_source,
            }
            for r in context.get("examples", [])
        ],
    )
    figures = [context["figure"]] if context.get("rates") and context.get("figure") else []
    judge = context.get("judge")
    return PageData(
        "Instruction conflicts",
        [types, scenarios, attempts],
        figures,
        help_anchor="conflict",
        judges=[judge.name] if judge else None,
        facts={"exclusion": exclusion_facts(context["exclusion"])} if context.get("exclusion") else {},
    )
