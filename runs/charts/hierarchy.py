"""Plotly figures (plain dicts) for the hierarchy pages: pure functions of metric rows, drawn by static/js/charts.js."""

from __future__ import annotations

from collections.abc import Sequence

from runs.charts.checklist import PALETTE
from runs.metrics.hierarchy import AccRow, ResolutionRate
from runs.rounding import rounded

_LEGEND = {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"}
_METRICS = (("acc", "Acc", "#2f5bd3"), ("acc_test", "Acc_test", "#7aa0f0"), ("acc_style", "Acc_style", "#d9822b"))
OUTCOME_COLOURS = {"winner": "#1f8a4c", "suppressed": "#d9822b", "none": "#9aa3af"}


def _error(values: Sequence[float | None], cis: Sequence[tuple[float, float] | None]) -> dict:
    """Asymmetric error bars from bootstrap intervals (0 where there is none)."""
    return {
        "type": "data",
        "symmetric": False,
        "array": [(ci[1] - v) if ci and v is not None else 0 for v, ci in zip(values, cis)],
        "arrayminus": [(v - ci[0]) if ci and v is not None else 0 for v, ci in zip(values, cis)],
    }


def _title(text: str) -> dict:
    return {"text": text, "font": {"size": 13}, "x": 0.01, "xanchor": "left", "y": 0.97}


def accuracy_figure(rows: Sequence[AccRow]) -> dict:
    """Acc, Acc_test and Acc_style per model (or run) as grouped bars with 95% bootstrap error bars."""
    labels = [r.label for r in rows]
    data = []
    for key, name, colour in _METRICS:
        values = [getattr(r, key) for r in rows]
        data.append(
            {
                "type": "bar",
                "name": name,
                "x": labels,
                "y": [rounded(v, 2) for v in values],
                "marker": {"color": colour},
                "error_y": _error(values, [getattr(r, f"{key}_ci") for r in rows]),
                "hovertemplate": f"%{{x}}<br>{name} %{{y:.2f}}%<extra></extra>",
            }
        )
    layout = {
        "barmode": "group",
        "height": 360,
        "margin": {"l": 50, "r": 10, "t": 60, "b": 90},
        "legend": _LEGEND,
        "yaxis": {"range": [0, 105], "ticksuffix": "%"},
        "font": {"size": 12},
        "title": _title("Acc, Acc_test, Acc_style (error bars: 95% bootstrap interval over samples)"),
    }
    return {"data": data, "layout": layout}


def tiers_figure(rows: Sequence[AccRow]) -> dict:
    """Acc by number of tiers: one line per model (or run) with bootstrap error bars."""
    labels = list(dict.fromkeys(r.label for r in rows))
    tiers = sorted({r.tiers for r in rows if r.tiers is not None})
    data = []
    for n, label in enumerate(labels):
        mine = sorted((r for r in rows if r.label == label), key=lambda r: r.tiers or 0)
        values = [r.acc for r in mine]
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": label,
                "x": [r.tiers for r in mine],
                "y": [rounded(v, 2) for v in values],
                "line": {"color": PALETTE[n % len(PALETTE)]},
                "error_y": _error(values, [r.acc_ci for r in mine]),
                "hovertemplate": "%{fullData.name}<br>%{x} tiers: Acc %{y:.2f}%<extra></extra>",
            }
        )
    layout = {
        "height": 340,
        "margin": {"l": 50, "r": 10, "t": 60, "b": 50},
        "legend": _LEGEND,
        "font": {"size": 12},
        "xaxis": {"title": {"text": "tiers (distinct privilege values in the sample)"}, "tickvals": tiers},
        "yaxis": {"range": [0, 105], "ticksuffix": "%"},
        "title": _title("Acc by number of tiers"),
    }
    return {"data": data, "layout": layout}


def resolution_figure(rates: Sequence[ResolutionRate]) -> dict:
    """Share of conflict groups resolved to the winner, a suppressed instruction or none: stacked bars per model and tiers."""
    labels = [r.label if r.tiers is None else f"{r.label} · {r.tiers} tiers" for r in rates]
    data = [
        {
            "type": "bar",
            "name": outcome,
            "x": labels,
            "y": [rounded(r.rate(outcome), 2) for r in rates],
            "marker": {"color": OUTCOME_COLOURS[outcome]},
            "hovertemplate": f"%{{x}}<br>{outcome} %{{y:.2f}}%<extra></extra>",
        }
        for outcome in ("winner", "suppressed", "none")
    ]
    layout = {
        "barmode": "stack",
        "height": 380,
        "margin": {"l": 50, "r": 10, "t": 60, "b": 120},
        "legend": dict(_LEGEND, traceorder="normal"),
        "yaxis": {"range": [0, 100], "ticksuffix": "%"},
        "font": {"size": 12},
        "title": _title("Which instruction of each conflict group the code follows"),
    }
    return {"data": data, "layout": layout}
