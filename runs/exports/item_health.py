"""Exports and snapshots of the item health page: its items (filtered and sorted as shown) and its instances."""

from __future__ import annotations

from dataclasses import replace

from runs.metrics.item_health import FLAGS, TASK
from runs.pages import Column, PageData, Table, page_builder

#: the items table's columns; a choice benchmark's tasks (TASK_COLUMNS) have no item key, kind of check, judges or
#: audit labels
ITEM_COLUMNS = (
    Column("instance", "Instance"),
    Column("key", "Item"),
    Column("category", "Category"),
    Column("check_type", "Kind of check"),
    Column("pass_rate", "Pass rate %", "pct"),
    Column("pass_low", "Pass rate low %", "pct"),
    Column("pass_high", "Pass rate high %", "pct"),
    Column("models", "Models", "int"),
    Column("verdicts", "Verdicts", "int"),
    Column("split_rate", "Judge split %", "pct"),
    Column("judged_twice", "Attempts judged twice", "int"),
    Column("rest_correlation", "Rest correlation", "num", places=3),
    Column("difficulty", "Difficulty", "num", places=2),
    Column("difficulty_se", "Difficulty SE", "num", places=2),
    Column("discrimination", "Discrimination", "num", places=2),
    Column("discrimination_se", "Discrimination SE", "num", places=2),
    Column("audit_status", "Audit label"),
    Column("audit_agreement", "Audit agreement", "num", places=2),
    Column("flags", "Flags"),
)
_NOT_OF_TASKS = {"key", "check_type", "split_rate", "judged_twice", "audit_status", "audit_agreement"}
_TASK_LABELS = {"instance": "Task", "verdicts": "Answers"}
TASK_COLUMNS = tuple(
    replace(c, label=_TASK_LABELS.get(c.key, c.label)) for c in ITEM_COLUMNS if c.key not in _NOT_OF_TASKS
)


def _items_table(page) -> Table:
    tasks = page is not None and page.report.unit == TASK
    columns = TASK_COLUMNS if tasks else ITEM_COLUMNS
    rows = [
        {
            "instance": i.instance,
            "key": i.key,
            "category": i.category,
            "check_type": i.check_type,
            "pass_rate": _pct(i.pass_rate),
            "pass_low": _pct(i.pass_low),
            "pass_high": _pct(i.pass_high),
            "models": i.models,
            "verdicts": i.verdicts,
            "split_rate": _pct(i.split_rate),
            "judged_twice": i.judged_twice,
            "rest_correlation": i.rest_correlation,
            "difficulty": i.difficulty,
            "difficulty_se": i.difficulty_se,
            "discrimination": i.discrimination,
            "discrimination_se": i.discrimination_se,
            "audit_status": i.audit_status,
            "audit_agreement": i.audit_agreement,
            "flags": " ".join(i.flags),
        }
        for i in (page.items if page else [])
    ]
    keys = {c.key for c in columns}
    return Table("items", "Task health" if tasks else "Item health", columns, [_kept(r, keys) for r in rows])


def _kept(row: dict, keys: set[str]) -> dict:
    return {k: v for k, v in row.items() if k in keys}


def _facts(page) -> dict:
    if not page:
        return {}
    return {"unit": page.report.unit, "models": len(page.report.models), "irt_fitted": page.report.fitted, **page.state}


@page_builder(("items", "Task health"))
def task_health_page(context: dict) -> PageData:
    """A choice benchmark's item health page: per task the figures of an item but judges and audits (its tasks are
    its instances, so there is no instance table)."""
    page = context.get("health")
    return PageData("Item health", [_items_table(page)], help_anchor="item-health", facts=_facts(page))


@page_builder(("items", "Item health"), ("instances", "Instance health"))
def item_health_page(context: dict) -> PageData:
    """Per item: pass rate and interval, models and verdicts, judge split, rest correlation, 2PL difficulty and
    discrimination with their standard errors (when fitted), audit label and flags; per instance the pooled
    figures and how many items carry each flag."""
    page = context.get("health")
    items = _items_table(page)
    instances = Table(
        "instances",
        "Instance health",
        (
            Column("instance", "Instance"),
            Column("category", "Category"),
            Column("items", "Items", "int"),
            Column("pass_rate", "Pass rate %", "pct"),
            Column("pass_low", "Pass rate low %", "pct"),
            Column("pass_high", "Pass rate high %", "pct"),
            Column("verdicts", "Verdicts", "int"),
            Column("split_rate", "Judge split %", "pct"),
            Column("flagged", "Flagged items", "int"),
            *(Column(f"flag:{flag}", f"Items: {flag}", "int") for flag in FLAGS),
        ),
        [
            {
                "instance": s.instance,
                "category": s.category,
                "items": s.items,
                "pass_rate": _pct(s.pass_rate),
                "pass_low": _pct(s.pass_low),
                "pass_high": _pct(s.pass_high),
                "verdicts": s.verdicts,
                "split_rate": _pct(s.split_rate),
                "flagged": s.flagged,
                **{f"flag:{flag}": s.flag_counts[flag] for flag in FLAGS},
            }
            for s in (page.report.instances if page else [])
        ],
    )
    return PageData("Item health", [items, instances], help_anchor="item-health", facts=_facts(page))


def _pct(fraction: float | None) -> float | None:
    return None if fraction is None else fraction * 100
