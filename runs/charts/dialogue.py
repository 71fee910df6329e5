"""Plotly figure dicts for the dialogue pages: pure functions of metric rows (rendered by static/js/charts.js)."""

from __future__ import annotations

from collections.abc import Sequence

from runs.metrics.dialogue import GroupRate, ModelDialogueRow
from runs.rounding import rounded

_FONT = {"family": "system-ui, sans-serif", "size": 12}


def survival_figure(rows: Sequence[ModelDialogueRow], *, patience: int | None) -> dict:
    """One step line per model: % of dialogues still alive at each turn; hover shows alive / total."""
    data = []
    for row in rows:
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "line": {"shape": "hv", "width": 2},
                "marker": {"size": 5},
                "name": row.label,
                "x": [p.turn for p in row.survival],
                "y": [rounded(p.percent, 2) for p in row.survival],
                "customdata": [[p.alive, p.total] for p in row.survival],
                "hovertemplate": "%{fullData.name}<br>turn %{x}: %{y:.2f}% alive (%{customdata[0]} of %{customdata[1]})<extra></extra>",
            }
        )
    title = "Dialogues still alive at each turn" + (f" (patience {patience})" if patience else "")
    return {
        "data": data,
        "layout": {
            "title": {"text": title, "font": {"size": 14}},
            "font": _FONT,
            "xaxis": {
                "title": {"text": "turn"},
                "dtick": 1 if max((len(r.survival) for r in rows), default=0) <= 30 else 5,
            },
            "yaxis": {"title": {"text": "% of dialogues alive"}, "range": [0, 105], "ticksuffix": "%"},
            "legend": {"orientation": "h", "y": -0.2},
            "margin": {"l": 60, "r": 20, "t": 40, "b": 60},
            "hovermode": "closest",
        },
    }


def groups_figure(rows: Sequence[tuple[str, Sequence[GroupRate]]], groups: Sequence[str]) -> dict:
    """Grouped bars: pass rate per constraint group, one bar colour per model; hover shows passed / active."""
    data = []
    for label, rates in rows:
        by_group = {r.group: r for r in rates}
        present = [g for g in groups if g in by_group and by_group[g].percent is not None]
        data.append(
            {
                "type": "bar",
                "name": label,
                "x": present,
                "y": [rounded(by_group[g].percent, 2) for g in present],
                "customdata": [[by_group[g].passed, by_group[g].applicable] for g in present],
                "hovertemplate": "%{fullData.name}<br>%{x}: %{y:.2f}% (%{customdata[0]} of %{customdata[1]} active turns)<extra></extra>",
            }
        )
    return {
        "data": data,
        "layout": {
            "title": {"text": "Pass rate per constraint group", "font": {"size": 14}},
            "font": _FONT,
            "barmode": "group",
            "xaxis": {"title": {"text": "constraint id"}, "categoryorder": "array", "categoryarray": list(groups)},
            "yaxis": {"title": {"text": "pass rate"}, "range": [0, 100], "ticksuffix": "%"},
            "legend": {"orientation": "h", "y": -0.25},
            "margin": {"l": 60, "r": 20, "t": 40, "b": 80},
        },
    }
