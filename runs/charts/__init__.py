"""Plotly figures as plain dicts, one module per benchmark kind: pure functions of metric rows, unit-testable,
rendered by static/js/charts.js from a data-figure attribute."""
