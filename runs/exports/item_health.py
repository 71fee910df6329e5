"""Exports and snapshots of the item health page: its items (filtered and sorted as shown) and its instances."""

from __future__ import annotations

from runs.metrics.item_health import FLAGS
from runs.pages import Column, PageData, Table, page_builder


@page_builder(("items", "Item health"), ("instances", "Instance health"))
def item_health_page(context: dict) -> PageData:
    """Per item: pass rate and interval, models and verdicts, judge split, rest correlation, 2PL difficulty and
    discrimination with their standard errors (when fitted), audit label and flags; per instance the pooled
    figures and how many items carry each flag."""
    page = context.get("health")
    items = Table(
        "items",
        "Item health",
        (
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
        ),
        [
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
        ],
    )
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
    facts = {}
    if page:
        facts = {"models": len(page.report.models), "irt_fitted": page.report.fitted, **page.state}
    return PageData("Item health", [items, instances], help_anchor="item-health", facts=facts)


def _pct(fraction: float | None) -> float | None:
    return None if fraction is None else fraction * 100
