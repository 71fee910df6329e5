"""The audit effect page as data (runs.pages): the leaderboard before and after an exclusion policy, and the
excluded items behind each pair of models whose order changed, for its CSV/JSON exports and its share link."""

from __future__ import annotations

from runs.pages import Column, PageData, Table, page_builder


@page_builder(
    ("effect", "Leaderboard before and after the exclusion"), ("swaps", "Items behind each swap"), per_item=("swaps",)
)
def effect_page(context: dict) -> PageData:
    """ISR and CSR before and after, both ranks and the change per model; per swap, the excluded items the model that
    lost passed more often (pass rates in percent, as the page shows them)."""
    effect, items = context["effect"], context["items"]
    rows = Table(
        "effect",
        "Leaderboard before and after the exclusion",
        (
            Column("model", "Model"),
            Column("isr_before", "ISR % before", "pct"),
            Column("isr_after", "ISR % after", "pct"),
            Column("csr_before", "CSR % before", "pct"),
            Column("csr_after", "CSR % after", "pct"),
            Column("rank_before", "Rank before", "num", places=1),
            Column("rank_after", "Rank after", "num", places=1),
            Column("rank_change", "Rank change", "num", places=1),
        ),
        [
            {
                "model": r.model,
                "isr_before": r.isr_before,
                "isr_after": r.isr_after,
                "csr_before": r.csr_before,
                "csr_after": r.csr_after,
                "rank_before": r.rank_before,
                "rank_after": r.rank_after,
                "rank_change": r.rank_change,
            }
            for r in effect.rows
        ],
    )
    swaps = Table(
        "swaps",
        "Items behind each swap",
        (
            Column("gained", "Gained"),
            Column("on", "On"),
            Column("instance", "Instance"),
            Column("item", "Excluded item"),
            Column("description", "Description"),
            Column("gained_pass", "Pass % of the model that gained", "pct"),
            Column("on_pass", "Pass % of the other", "pct"),
        ),
        [
            {
                "gained": s.up,
                "on": s.down,
                "instance": items[d["item_id"]].instance.external_id,
                "item": items[d["item_id"]].key,
                "description": items[d["item_id"]].description,
                "gained_pass": _percent(d["pass_rate_up"]),
                "on_pass": _percent(d["pass_rate_down"]),
            }
            for s in effect.swaps
            for d in s.items
            if d["item_id"] in items
        ],
    )
    return PageData(
        f"{context['benchmark'].name}: leaderboard under an audit exclusion policy",
        [rows, swaps],
        help_anchor="audits-effect",
        facts={
            "policy": context["policy_label"],
            "items_excluded": effect.n_excluded,
            "kendall_tau": effect.tau,
            "drawn_from": context["sources"],
        },
    )


def _percent(fraction: float | None) -> float | None:
    return None if fraction is None else 100 * fraction


def _estimate_columns(prefix: str, label: str, kind: str = "pct") -> tuple[Column, ...]:
    return (
        Column(prefix, label, kind),
        Column(f"{prefix}_low", f"{label} low", kind),
        Column(f"{prefix}_high", f"{label} high", kind),
    )


def _scaled(value, scale: float):
    return None if value is None else scale * value


def _estimate_cells(prefix: str, est, scale: float = 100.0) -> dict:
    return {
        prefix: _scaled(est.value, scale),
        f"{prefix}_low": _scaled(est.low, scale),
        f"{prefix}_high": _scaled(est.high, scale),
    }


ACCURACY_COLUMNS = (
    Column("judge", "Judge"),
    Column("group", "Group"),
    Column("n", "Decided units", "int"),
    Column("disagreements", "Disagreements", "int"),
    *_estimate_columns("accuracy", "Accuracy %"),
    *_estimate_columns("sensitivity", "Sensitivity %"),
    *_estimate_columns("specificity", "Specificity %"),
    *_estimate_columns("kappa", "Cohen's kappa", "num"),
)


def accuracy_cells(row) -> dict:
    """One AccuracyRow as a table row (rates in percent as the page shows them, kappa as is)."""
    return {
        "judge": row.judge,
        "group": row.group,
        "n": row.n,
        "disagreements": row.disagreements,
        **_estimate_cells("accuracy", row.accuracy),
        **_estimate_cells("sensitivity", row.sensitivity),
        **_estimate_cells("specificity", row.specificity),
        **_estimate_cells("kappa", row.kappa, 1.0),
    }


@page_builder(
    ("overall", "Per judge"),
    ("category", "Per judge and item category"),
    ("model", "Per judge and model"),
    ("disagreements", "Units where the judge and the humans disagree"),
    per_item=("disagreements",),
)
def judge_accuracy_page(context: dict) -> PageData:
    """Each judge's accuracy, sensitivity, specificity and kappa with 95% intervals, overall, per category and per
    model, and the units where it disagrees with the humans (with its reasoning)."""
    page = context["page"]
    tables = [
        Table(name, title, ACCURACY_COLUMNS, [accuracy_cells(r) for r in page.rows[name]])
        for name, title in (
            ("overall", "Per judge"),
            ("category", "Per judge and item category"),
            ("model", "Per judge and model"),
        )
    ]
    tables.append(
        Table(
            "disagreements",
            "Units where the judge and the humans disagree",
            (
                Column("unit", "Unit", "int"),
                Column("key", "Key"),
                Column("judge", "Judge"),
                Column("model", "Model"),
                Column("category", "Category"),
                Column("item", "Item"),
                Column("human", "Humans"),
                Column("verdict", "Judge"),
                Column("reasoning", "Judge's reasoning"),
                Column("attempt", "Attempt", "int", link="attempt"),
            ),
            page.disagreements,
        )
    )
    return PageData(
        f"{page.campaign.name}: judge accuracy",
        tables,
        help_anchor="audits-judge-accuracy",
        facts={"campaign": page.campaign.name, "units": page.n_units, "closed": page.n_closed},
    )


def calibrated_rows(page) -> list[dict]:
    """The calibrated leaderboard's rows (percent), each with its ranks under the judge and under the audit."""
    by_judge = {c.judge: c for c in page.rankings}
    return [
        {
            "model": r.model,
            "judge": r.judge,
            "raw_isr": _scaled(r.raw_isr, 100),
            **_estimate_cells("isr", r.isr),
            "raw_csr": _scaled(r.raw_csr, 100),
            **_estimate_cells("csr", r.csr),
            "rectifier": _scaled(r.rectifier, 100),
            "rank_judge": by_judge[r.judge].raw_ranks.get(r.model),
            "rank_calibrated": by_judge[r.judge].calibrated_ranks.get(r.model),
            "n_pairs": r.n_pairs,
            "n_audited": r.n_audited,
        }
        for r in page.rows
    ]


def ranking_rows(page) -> list[dict]:
    return [
        {"judge": c.judge, "tau": c.tau, "swaps": "; ".join(f"{a} / {b}" for a, b in c.swaps)} for c in page.rankings
    ]


@page_builder(("calibrated", "Calibrated ISR and CSR per model and judge"), ("rankings", "Rankings per judge"))
def calibrated_page(context: dict) -> PageData:
    """Per model and judge: the judge's raw ISR and CSR and their calibrated estimates with 95% intervals, both
    ranks by CSR; per judge Kendall's tau between its ranking and the calibrated one, and the swapped pairs."""
    page = context["page"]
    return PageData(
        f"{context['benchmark'].name}: leaderboard calibrated by a verdict audit",
        [
            Table(
                "calibrated",
                "Calibrated ISR and CSR per model and judge",
                (
                    Column("model", "Model"),
                    Column("judge", "Judge"),
                    Column("raw_isr", "ISR % (judge)", "pct"),
                    *_estimate_columns("isr", "ISR % calibrated"),
                    Column("raw_csr", "CSR % (judge)", "pct"),
                    *_estimate_columns("csr", "CSR % calibrated"),
                    Column("rectifier", "Rectifier (points)", "pct"),
                    Column("rank_judge", "Rank by the judge's CSR", "num", places=1),
                    Column("rank_calibrated", "Rank by calibrated CSR", "num", places=1),
                    Column("n_pairs", "Judged pairs", "int"),
                    Column("n_audited", "Audited pairs", "int"),
                ),
                calibrated_rows(page),
            ),
            Table(
                "rankings",
                "Rankings per judge",
                (Column("judge", "Judge"), Column("tau", "Kendall's tau-b", "num"), Column("swaps", "Swapped pairs")),
                ranking_rows(page),
            ),
        ],
        help_anchor="audits-calibrated",
        facts={"campaign": page.campaign.name if page.campaign else None, "small_audit": page.small},
    )
