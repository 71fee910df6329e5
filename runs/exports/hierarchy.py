"""Hierarchy pages (ManyIH) as data: Acc metrics, style groups, tiers, run comparison, conflict resolution, re-check."""
from __future__ import annotations

from runs.exports import agreement_table
from runs.pages import Column, PageData, Table


def _label(context: dict) -> Column:
    return Column("label", "Run" if context["by"] == "run" else "Model")


def _ci(prefix: str, label: str) -> tuple[Column, ...]:
    return (Column(prefix, f"{label} %", "pct"), Column(f"{prefix}_ci_low", f"{label} 95% CI low", "pct"),
            Column(f"{prefix}_ci_high", f"{label} 95% CI high", "pct"))


def _acc(row) -> dict:
    """Acc, Acc_test and Acc_style of an AccRow with their interval ends."""
    out = {}
    for key in ("acc", "acc_test", "acc_style"):
        ci = getattr(row, f"{key}_ci") or (None, None)
        out |= {key: getattr(row, key), f"{key}_ci_low": ci[0], f"{key}_ci_high": ci[1]}
    return out


def metrics_page(context: dict) -> PageData:
    """Acc per model (or run) with intervals and exclusion ranks, per style group, by tiers, and the run comparison."""
    effect = {line["row"].label: line["effect"] for line in context.get("lines", [])}
    columns = (_label(context), Column("n", "Samples", "int"), *_ci("acc", "Acc"), *_ci("acc_test", "Acc_test"),
               *_ci("acc_style", "Acc_style"), Column("runs", "Runs"))
    if context.get("exclusion"):
        columns += (Column("rank_after", "Rank", "num"), Column("value_before", "Acc % with every constraint", "pct"),
                    Column("rank_before", "Rank with every constraint", "num"))
    rows = [{"label": r.label, "n": r.n, **_acc(r), "runs": ", ".join(r.runs),
             **{k: getattr(effect.get(r.label), k, None) for k in ("rank_after", "value_before", "rank_before")}}
            for r in context.get("rows", [])]
    tables = [Table("accuracy", "Acc per " + ("run" if context["by"] == "run" else "model"), columns, rows)]
    tables.append(Table("style-groups", "Pass rate per style group", (
        _label(context), Column("group", "Style group"), Column("rate", "Pass rate % (reference: style-checked samples)", "pct"),
        Column("passed", "Passed", "int"), Column("n", "Style-checked samples", "int"),
        Column("errors", "Left out (no code or evaluator error)", "int"),
        Column("rate_errors_as_failures", "Pass rate % counting those as failures", "pct")),
        [{"label": g.label, "group": g.group, "rate": g.rate, "passed": g.passed, "n": g.n, "errors": g.errors,
          "rate_errors_as_failures": g.rate_errors_as_failures} for g in context.get("group_rates", [])]))
    tables.append(Table("tiers", "Acc by number of tiers", (
        _label(context), Column("tiers", "Tiers", "int"), Column("n", "Samples", "int"), *_ci("acc", "Acc"),
        Column("acc_test", "Acc_test %", "pct"), Column("acc_style", "Acc_style %", "pct")),
        [{"label": r.label, "tiers": r.tiers, "n": r.n, **_acc(r)} for r in context.get("tier_rows", [])]))
    comparison = context.get("comparison")
    if comparison:
        tables.append(Table("flips", f"Samples that flip: {comparison.a} → {comparison.b}", (
            Column("sample", "Sample"), Column("tiers", "Tiers", "int"), Column("a", comparison.a), Column("b", comparison.b)),
            [{"sample": f.sample, "tiers": f.tiers, "a": "pass" if f.a_passed else "fail", "b": "pass" if f.b_passed else "fail"}
             for f in comparison.flips]))
    figures = [f for f in (context.get("figure"), context.get("tiers_figure")) if f and context.get("rows")]
    return PageData("Privilege hierarchy metrics", tables, figures, help_anchor="hierarchy")


def conflicts_page(context: dict) -> PageData:
    """How conflict groups were resolved per model (or run) and number of tiers."""
    places = context.get("places", [])
    columns = (_label(context), Column("tiers", "Tiers"), Column("n", "Conflict groups", "int"),
               Column("winner", "Winner %", "pct"), Column("suppressed", "Suppressed %", "pct"),
               *(Column(f"place_{p}", f"Suppressed: number {p} in group", "int") for p in places), Column("none", "None %", "pct"))
    rows = [{"label": r.label, "tiers": "all" if r.tiers is None else r.tiers, "n": r.n, "winner": r.winner,
             "suppressed": r.suppressed, "none": r.none, **{f"place_{p}": r.places.get(p) for p in places}}
            for r in context.get("rates", [])]
    figures = [context["figure"]] if context.get("rates") and context.get("figure") else []
    return PageData("Conflict resolution", [Table("resolution", "Conflict resolution", columns, rows)], figures,
                    help_anchor="hierarchy-conflicts")


def recheck_page(context: dict) -> PageData:
    """Agreement of the logged per-group verdicts with the portal's style checkers."""
    return PageData("Style re-check", [agreement_table(context.get("agreement", []), group_label="Style group")],
                    help_anchor="hierarchy-recheck")
