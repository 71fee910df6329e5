"""The two sides of a comparison (runs.selectors.compare): a run label of a benchmark, or "model:<name>" for every run
of a model, as the compare page, GET /api/compare/<slug>/ and manage.py compare name them."""

from __future__ import annotations

from runs.models import Run


class UnknownSide(ValueError):
    """A side names no run and no model of the benchmark; the message says what is unknown."""


def side_of(benchmark_id: int, side: str) -> str:
    """The side as the compare page names it: a run label of the benchmark as given, "model:<name>" for a model with
    runs in it (a bare model name that is no run label is taken as the model). Raises UnknownSide."""
    runs = Run.objects.filter(benchmark_id=benchmark_id)
    if side.startswith("model:"):
        if runs.filter(model__name=side[6:]).exists():
            return side
        raise UnknownSide(f"no model named {side[6:]!r} has a run in this benchmark")
    if runs.filter(label=side).exists():
        return side
    if runs.filter(model__name=side).exists():
        return f"model:{side}"
    raise UnknownSide(f"no run labelled {side!r} and no model named {side!r} in this benchmark")


def side_runs(benchmark_id: int, side: str) -> dict[str, int]:
    """Run label -> id of the runs a side (as side_of names it) stands for."""
    runs = Run.objects.filter(benchmark_id=benchmark_id)
    runs = runs.filter(model__name=side[6:]) if side.startswith("model:") else runs.filter(label=side)
    return dict(runs.values_list("label", "id"))
