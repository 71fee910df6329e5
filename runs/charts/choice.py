"""Plotly figures of choice-benchmark metrics as plain dicts (pure), drawn by static/js/charts.js."""

from __future__ import annotations

from collections.abc import Sequence

from runs.metrics.choice import RuleTypeRow, RunMetrics
from runs.rounding import rounded, shown_number

PALETTE = ["#2f5bd3", "#d9822b", "#1f8a4c", "#c23b32", "#7b4fc9", "#0f8b8d", "#a8326e", "#6b7280", "#b59b00", "#3d7ea6"]
OVERALL = "overall (weighted)"


def accuracy_figure(runs: Sequence[RunMetrics]) -> dict:
    """Accuracy per category and overall, one bar trace per run, bootstrap 95% intervals as error bars."""
    categories = sorted({c for m in runs for c in m.categories})
    data = []
    for n, m in enumerate(runs):
        xs = [c for c in categories if c in m.categories] + [OVERALL]
        cells = [m.categories[c] for c in xs[:-1]]
        values = [c.accuracy for c in cells] + [m.accuracy]
        lows = [c.ci_low for c in cells] + [m.ci_low]
        highs = [c.ci_high for c in cells] + [m.ci_high]
        counts = [c.n for c in cells] + [m.n]
        data.append(
            {
                "type": "bar",
                "name": f"{m.run} ({m.model})" if m.model != m.run else m.run,
                "x": xs,
                "y": [rounded(v, 2) for v in values],
                "customdata": [[rounded(lo, 2), rounded(hi, 2), k] for lo, hi, k in zip(lows, highs, counts)],
                "hovertemplate": "%{x}: %{y:.2f}% [%{customdata[0]:.2f}, %{customdata[1]:.2f}], n=%{customdata[2]}"
                "<extra>%{fullData.name}</extra>",
                "marker": {"color": PALETTE[n % len(PALETTE)]},
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": [rounded(hi - v, 2) for v, hi in zip(values, highs)],
                    "arrayminus": [rounded(v - lo, 2) for v, lo in zip(values, lows)],
                },
            }
        )
    layout = {
        "title": {
            "text": "Accuracy by category (error bars: bootstrap 95% interval, 1,000 resamples)",
            "font": {"size": 13},
        },
        "barmode": "group",
        "height": 380,
        "margin": {"l": 50, "r": 10, "t": 40, "b": 60},
        "legend": {"orientation": "h", "y": -0.18},
        "font": {"size": 12},
        "yaxis": {"range": [0, 105], "ticksuffix": "%"},
        "xaxis": {"categoryorder": "array", "categoryarray": categories + [OVERALL]},
    }
    return {"data": data, "layout": layout}


def rule_type_figure(rows: Sequence[RuleTypeRow], runs: Sequence[str]) -> dict:
    """Heatmap of accuracy: guideline rule types (grouped by category) down, runs across."""
    labels = [f"{r.category} · {r.rule_type}" for r in rows]
    z = [[rounded(cell[3], 2) for cell in r.cells] for r in rows]
    text = [
        [("—" if cell[3] is None else f"{shown_number(cell[3], 2)}% (n={cell[1]})") for cell in r.cells] for r in rows
    ]
    data = [
        {
            "type": "heatmap",
            "x": list(runs),
            "y": labels,
            "z": z,
            "text": text,
            "texttemplate": "%{z:.1f}",
            "hovertemplate": "%{y}<br>%{x}: %{text}<extra></extra>",
            "zmin": 0,
            "zmax": 100,
            "colorscale": [[0, "#c23b32"], [0.5, "#f3d27a"], [1, "#1f8a4c"]],
            "colorbar": {"ticksuffix": "%", "len": 0.8},
        }
    ]
    layout = {
        "title": {"text": "Accuracy on tasks citing each rule type", "font": {"size": 13}},
        "height": max(300, 26 * len(rows) + 140),
        "margin": {"l": 260, "r": 20, "t": 40, "b": 90},
        "yaxis": {"autorange": "reversed", "automargin": True},
        "xaxis": {"side": "bottom", "automargin": True},
        "font": {"size": 12},
    }
    return {"data": data, "layout": layout}
