"""Plotly figures as plain dicts: pure functions of metric rows, rendered by static/js/charts.js."""

from __future__ import annotations

from collections.abc import Sequence

from runs.metrics.checklist import ScoreRow
from runs.rounding import rounded

ISR_COLOUR = "#2f5bd3"
CSR_COLOUR = "#7aa0f0"
PALETTE = ["#2f5bd3", "#d9822b", "#1f8a4c", "#c23b32", "#7b4fc9", "#0f8b8d", "#a8326e", "#6b7280", "#b59b00", "#3d7ea6"]
_LAYOUT = {
    "margin": {"l": 50, "r": 10, "t": 60, "b": 90},
    "height": 360,
    "barmode": "group",
    "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
    "yaxis": {"range": [0, 105], "ticksuffix": "%"},
    "font": {"size": 12},
}


def _error(rows: Sequence[ScoreRow], metric: str, use_ci: bool) -> dict:
    """Error bars: the bootstrap interval when computed, else the std across judges."""
    if use_ci:
        values = [getattr(r, metric) for r in rows]
        cis = [getattr(r, f"{metric}_ci") for r in rows]
        return {
            "type": "data",
            "symmetric": False,
            "array": [(ci[1] - v) if ci and v is not None else 0 for v, ci in zip(values, cis)],
            "arrayminus": [(v - ci[0]) if ci and v is not None else 0 for v, ci in zip(values, cis)],
        }
    return {"type": "data", "array": [getattr(r, f"{metric}_std") or 0 for r in rows], "visible": True}


def leaderboard_figure(rows: Sequence[ScoreRow]) -> dict:
    """ISR and CSR per model as grouped bars, with judge std (or bootstrap interval) as error bars."""
    use_ci = bool(rows) and all(r.isr_ci is not None for r in rows)
    models = [r.model for r in rows]
    bar = "bootstrap 95% interval" if use_ci else "std across judges"
    data = [
        {
            "type": "bar",
            "name": "ISR",
            "x": models,
            "y": [rounded(r.isr, 2) for r in rows],
            "marker": {"color": ISR_COLOUR},
            "error_y": _error(rows, "isr", use_ci),
        },
        {
            "type": "bar",
            "name": "CSR",
            "x": models,
            "y": [rounded(r.csr, 2) for r in rows],
            "marker": {"color": CSR_COLOUR},
            "error_y": _error(rows, "csr", use_ci),
        },
    ]
    layout = dict(
        _LAYOUT,
        title={
            "text": f"ISR and CSR per model (error bars: {bar})",
            "font": {"size": 13},
            "x": 0.01,
            "xanchor": "left",
            "y": 0.97,
        },
    )
    return {"data": data, "layout": layout}


def matrix_figure(
    rows: Sequence[ScoreRow], *, metric: str = "isr", group_label: str = "group", groups: Sequence[str] | None = None
) -> dict:
    """One bar trace per model over the groups of a model x group matrix."""
    groups = list(groups) if groups is not None else list(dict.fromkeys(r.group for r in rows))
    use_ci = bool(rows) and all(getattr(r, f"{metric}_ci") is not None for r in rows)
    data = []
    models = list(dict.fromkeys(r.model for r in rows))
    for n, model in enumerate(models):
        by_group = {r.group: r for r in rows if r.model == model}
        series = [by_group.get(g) for g in groups]
        present = [(g, r) for g, r in zip(groups, series) if r is not None]
        data.append(
            {
                "type": "bar",
                "name": model,
                "x": [g for g, _ in present],
                "y": [rounded(getattr(r, metric), 2) for _, r in present],
                "marker": {"color": PALETTE[n % len(PALETTE)]},
                "error_y": _error([r for _, r in present], metric, use_ci),
            }
        )
    layout = dict(
        _LAYOUT,
        title={
            "text": f"{metric.upper()} by {group_label}",
            "font": {"size": 13},
            "x": 0.01,
            "xanchor": "left",
            "y": 0.97,
        },
        xaxis={"categoryorder": "array", "categoryarray": groups},
    )
    return {"data": data, "layout": layout}


def length_figure(rows: Sequence[ScoreRow], *, buckets: Sequence[str]) -> dict:
    """ISR per model over assistant-turn buckets, as lines with markers."""
    data = []
    models = list(dict.fromkeys(r.model for r in rows))
    for n, model in enumerate(models):
        by_bucket = {r.group: r for r in rows if r.model == model}
        xs = [b for b in buckets if b in by_bucket]
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": model,
                "x": xs,
                "y": [rounded(by_bucket[b].isr, 2) for b in xs],
                "text": [f"n={by_bucket[b].n_attempts}" for b in xs],
                "line": {"color": PALETTE[n % len(PALETTE)]},
            }
        )
    layout = dict(
        _LAYOUT,
        title={
            "text": "ISR by number of assistant turns",
            "font": {"size": 13},
            "x": 0.01,
            "xanchor": "left",
            "y": 0.97,
        },
        xaxis={"categoryorder": "array", "categoryarray": list(buckets), "title": {"text": "assistant turns"}},
    )
    return {"data": data, "layout": layout}
