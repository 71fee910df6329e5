"""The compare page as data (runs.views.compare): the paired table of any kind, the instances that flipped and, for
dialogues, the log-rank tests and the two sides' survival curves (runs.selectors.compare)."""

from __future__ import annotations

from runs.metrics import comparison as comparison_metrics
from runs.pages import Column, PageData, Table, page_builder


def paired_table(comparison, *, category: str = "Primary category") -> Table:
    """The paired rows (runs.metrics.comparison.paired_figure_dict): per metric, pooled and per judge, then per
    category (`category` names what the kind's categories are); judge and category "pooled" and "all" there."""
    return Table(
        "paired-differences",
        "Is the difference real?",
        (
            Column("metric", "Metric"),
            Column("judge", "Judge"),
            Column("category", category),
            Column("a", "A %", "pct"),
            Column("b", "B %", "pct"),
            Column("diff", "B - A", "pct"),
            Column("low", "95% low", "pct"),
            Column("high", "95% high", "pct"),
            Column("n_instances", "Shared instances", "int"),
            Column("test", "Test"),
            Column("p", "p", "num", places=4),
            Column("b_count", "b (A only)", "int"),
            Column("c_count", "c (B only)", "int"),
        ),
        []
        if comparison is None
        else [
            {**row, "judge": row["judge"] or "pooled", "category": row["category"] or "all"}
            for row in map(comparison_metrics.paired_figure_dict, comparison.figures)
        ],
    )


def _flips(compared) -> Table:
    return Table(
        "flipped-instances",
        "Instances fixed or broken in B",
        (
            Column("direction", "In B"),
            Column("instance", "Instance"),
            Column("category", "Category"),
            Column("judges", "Judges"),
            Column("a_url", "A's attempt"),
            Column("b_url", "B's attempt"),
        ),
        []
        if compared is None
        else [
            {**e, "direction": direction, "judges": ", ".join(e["judges"])}
            for direction, entries in (("fixed", compared.fixed), ("broken", compared.broken))
            for e in entries
        ],
    )


def _page(context: dict, tables: list[Table]) -> PageData:
    compared = context.get("compared")
    facts = {"baseline": compared.table.baseline, "candidate": compared.table.candidate} if compared else {}
    figures = [compared.figure] if compared and compared.figure else []
    return PageData("Compare two runs", tables, figures, help_anchor="paired", facts=facts)


@page_builder(
    ("paired-differences", "Is the difference real?"),
    ("flipped-instances", "Instances fixed or broken in B"),
    per_item=("flipped-instances",),
)
def compare_page(context: dict) -> PageData:
    """B - A per figure, judge and category with its paired interval and test, and the instances that flipped."""
    compared = context.get("compared")
    table = paired_table(
        compared.table if compared else None, category=(compared.category if compared else "category").capitalize()
    )
    return _page(context, [table, _flips(compared)])


@page_builder(
    ("paired-differences", "Is the difference real?"),
    ("survival-tests", "Survival: log-rank test"),
    ("flipped-instances", "Dialogues fixed or broken in B"),
    per_item=("flipped-instances",),
)
def dialogue_compare_page(context: dict) -> PageData:
    """compare_page with the log-rank test of the two sides' survival per judge and their Kaplan-Meier curves."""
    compared = context.get("compared")
    tests = Table(
        "survival-tests",
        "Survival: log-rank test",
        (
            Column("judge", "Judge"),
            Column("n_instances", "Shared scripts", "int"),
            Column("n_a", "A dialogues", "int"),
            Column("events_a", "A ended by patience", "int"),
            Column("n_b", "B dialogues", "int"),
            Column("events_b", "B ended by patience", "int"),
            Column("chi2", "Chi-square", "num", places=4),
            Column("p", "p", "num", places=4),
        ),
        list(compared.survival or []) if compared else [],
    )
    table = paired_table(compared.table if compared else None, category="Primary category")
    return _page(context, [table, tests, _flips(compared)])
