"""The figures harnesses reported for a benchmark's runs (runs.models.ReportedFigure), as pages and the API show them:
kept as the harness wrote them, labelled "reported by the harness" (docs/formats.md, "lm-evaluation-harness")."""

from __future__ import annotations

from dataclasses import dataclass

from runs.models import FigureDirection, ReportedFigure


@dataclass(frozen=True)
class ReportedRow:
    """One figure of one run as the harness reported it."""

    run: str
    model: str
    name: str
    #: the value as the harness wrote it: a number, or its word (NaN, Infinity, N/A)
    value: float | None
    value_text: str
    stderr: float | None
    stderr_text: str
    direction: str
    direction_label: str
    aggregation: str
    #: "verdicts" (scored per sample too: the leaderboard has it), "values" or "" (only the reported figure)
    per_sample: str
    sample_mean: float | None
    samples: int
    left_out: int
    source: str

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "direction_label"}


def reported_figures(*, benchmark_id: int) -> list[ReportedRow]:
    """Every reported figure of a benchmark's runs, by run label then figure name (one query)."""
    labels = dict(FigureDirection.choices)
    rows = (
        ReportedFigure.objects.filter(run__benchmark_id=benchmark_id)
        .select_related("run__model")
        .order_by("run__label", "name")
    )
    return [
        ReportedRow(
            run=f.run.label,
            model=f.run.model.name,
            name=f.name,
            value=f.value,
            value_text=f.value_text,
            stderr=f.stderr,
            stderr_text=f.stderr_text,
            direction=f.direction,
            direction_label=labels.get(f.direction, ""),
            aggregation=f.aggregation,
            per_sample=f.per_sample,
            sample_mean=f.sample_mean,
            samples=f.samples,
            left_out=f.left_out,
            source=f.source,
        )
        for f in rows
    ]
