"""The compare page as data (runs.views.compare): the paired table of any kind, the instances that flipped and, for
dialogues, the log-rank tests and the two sides' survival curves (runs.selectors.compare)."""

from __future__ import annotations

from dataclasses import replace

from runs.exports import checklist as checklist_exports
from runs.pages import Column, PageData, Table, page_builder


def paired_table(comparison, *, category: str) -> Table:
    """The checklist compare page's paired table (runs.exports.checklist.paired_table: per metric, pooled and per
    judge, then per category) with the kind's name for its categories."""
    table = checklist_exports.paired_table(comparison)
    return replace(
        table, columns=tuple(replace(c, label=category) if c.key == "category" else c for c in table.columns)
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
