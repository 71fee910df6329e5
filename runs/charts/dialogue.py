"""Plotly figure dicts for the dialogue pages: pure functions of metric rows (rendered by static/js/charts.js)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from runs.charts.checklist import PALETTE
from runs.metrics.dialogue import GroupRate, ModelDialogueRow
from runs.metrics.survival import BandPoint
from runs.rounding import rounded

_FONT = {"family": "system-ui, sans-serif", "size": 12}


def survival_figure(
    rows: Sequence[ModelDialogueRow], bands: Mapping[str, Sequence[BandPoint]], *, patience: int | None
) -> dict:
    """One step line per model: its Kaplan-Meier S(t) (today's % alive when no dialogue is censored), over a
    translucent 95% band of the same colour (a legend click hides both); hover shows the band and how many dialogues
    reached the turn."""
    data = []
    opacity = 0.2 if len(rows) <= 2 else 0.08  # overlapping bands stay readable: fainter the more there are
    for n, row in enumerate(rows):
        points, colour = bands[row.label], PALETTE[n % len(PALETTE)]
        turns = [p.turn for p in points]
        for bound in ("lower", "upper"):
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "line": {"shape": "hv", "width": 0, "color": colour},
                    "x": turns,
                    "y": [rounded(getattr(p, bound), 2) for p in points],
                    "fill": "tonexty" if bound == "upper" else "none",
                    "fillcolor": _translucent(colour, opacity),
                    "legendgroup": row.label,
                    "showlegend": False,
                    "hoverinfo": "skip",
                    "name": f"{row.label} 95% {bound}",
                }
            )
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "line": {"shape": "hv", "width": 2, "color": colour},
                "marker": {"size": 5, "color": colour},
                "name": row.label,
                "legendgroup": row.label,
                "x": turns,
                "y": [rounded(p.percent, 2) for p in points],
                "customdata": [
                    [rounded(p.lower, 2), rounded(p.upper, 2), p.at_risk, row.metrics.dialogues] for p in points
                ],
                "hovertemplate": "%{fullData.name}<br>turn %{x}: %{y:.2f}% alive"
                " (95% %{customdata[0]:.2f}–%{customdata[1]:.2f}%)"
                "<br>%{customdata[2]} of %{customdata[3]} dialogues reached it<extra></extra>",
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


def _translucent(colour: str, alpha: float) -> str:
    """A "#rrggbb" colour as rgba with this opacity (the band under a line of that colour)."""
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"


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
