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
