"""The figures a benchmark's runs' harness reported (runs.selectors.reported) as a table of a page's exports:
the page lists them under "Reported by the harness", its CSV/JSON exports and snapshots carry the same rows."""

from __future__ import annotations

from runs.pages import Column, Table
from runs.selectors.reported import ReportedRow


def reported_table(rows: list[ReportedRow]) -> Table:
    """One row per run and figure: the value as the harness wrote it (a number, or its word in value_text: NaN,
    Infinity, N/A), its stderr likewise, the direction, the aggregation and what exists per sample."""
    return Table(
        "reported",
        "Reported by the harness",
        (
            Column("run", "run"),
            Column("model", "model"),
            Column("name", "figure"),
            Column("value", "value", "num", 4),
            Column("value_text", "value_text"),
            Column("stderr", "stderr", "num", 4),
            Column("stderr_text", "stderr_text"),
            Column("direction", "direction"),
            Column("aggregation", "aggregation"),
            Column("per_sample", "per_sample"),
            Column("sample_mean", "sample_mean", "num", 4),
            Column("samples", "samples", "int"),
            Column("left_out", "left_out", "int"),
            Column("source", "source"),
        ),
        [row.as_dict() for row in rows],
    )
