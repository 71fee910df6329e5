"""Plotly figures (plain dicts) for the conflict pages: pure functions of metric rows, drawn by static/js/charts.js."""

from __future__ import annotations

from collections.abc import Sequence

from runs.metrics.conflict import NEITHER, ResolutionRate, type_order
from runs.rounding import rounded

#: one colour per instruction source, grey for neither
SOURCE_COLOURS = {"SP": "#2f5bd3", "UQ": "#d9822b", "MD": "#1f8a4c", NEITHER: "#9aa3af"}
SOURCE_NAMES = {
    "SP": "followed the system prompt (SP)",
    "UQ": "followed the user query (UQ)",
    "MD": "followed the project documentation (MD)",
    NEITHER: "followed neither",
}
_LEGEND = {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"}


def resolution_figure(rates: Sequence[ResolutionRate]) -> dict:
    """Stacked bars: for each conflict type and model (or run), % of attempts that followed each source and neither."""
    ordered = sorted(rates, key=lambda r: (type_order(r.type), r.label))
    x = [[r.type for r in ordered], [r.label for r in ordered]]
    data = []
    for source in ("UQ", "SP", "MD", NEITHER):
        values = [
            None if source != NEITHER and source not in r.sources else rounded(r.percent(source) or 0.0, 2)
            for r in ordered
        ]
        if all(v is None for v in values):
            continue
        data.append(
            {
                "type": "bar",
                "name": SOURCE_NAMES[source],
                "x": x,
                "y": values,
                "marker": {"color": SOURCE_COLOURS[source]},
                "customdata": [r.counts.get(source, 0) for r in ordered],
                "hovertemplate": f"%{{x}}<br>{SOURCE_NAMES[source]}: %{{y:.2f}}% (%{{customdata}} attempts)<extra></extra>",
            }
        )
    layout = {
        "barmode": "stack",
        "height": 400,
        "margin": {"l": 50, "r": 10, "t": 70, "b": 110},
        "legend": _LEGEND,
        "font": {"size": 12},
        "yaxis": {"range": [0, 100], "ticksuffix": "%", "title": {"text": "% of attempts"}},
        "xaxis": {"type": "multicategory"},
        "title": {
            "text": "Which side models followed, per conflict type (neither shown apart)",
            "font": {"size": 13},
            "x": 0.01,
            "xanchor": "left",
            "y": 0.97,
        },
    }
    return {"data": data, "layout": layout}
