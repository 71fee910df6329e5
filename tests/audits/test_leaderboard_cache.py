"""Audit decisions bump the benchmark's data generation, and a cached leaderboard under an
exclusion policy changes as soon as a unit is adjudicated."""

import pytest

from audits import services
from audits.models import AuditUnit
from runs.exclusions import excluded_item_ids
from runs.metrics.checklist import Filters
from runs.models import Benchmark
from runs.selectors.checklist import compute_tables, leaderboard_tables

from .conftest import OK, values_for

pytestmark = pytest.mark.django_db


def _state():
    return {"filters": Filters(), "by": "model", "sort": "-isr", "ci": False, "exclude": "adjudicated_invalid"}


def _generation(benchmark) -> int:
    return Benchmark.objects.values_list("data_generation", flat=True).get(pk=benchmark.pk)


def _isr(tables) -> dict[str, float]:
    return {r.model: round(r.isr, 2) for r in tables.rows}


def test_settling_and_adjudicating_a_unit_bump_the_generation_and_the_cached_leaderboard_follows(
    bench, campaign, lead, annotator_a, annotator_b, django_capture_on_commit_callbacks
):
    benchmark = bench["benchmark"]
    with django_capture_on_commit_callbacks(execute=True):
        before = leaderboard_tables(
            benchmark, _state(), excluded_items=excluded_item_ids(benchmark, "adjudicated_invalid")
        )
    assert _isr(before) == {"beta": 33.33, "alpha": 0.0}

    disputed = []
    for _ in range(AuditUnit.objects.filter(campaign=campaign).count()):
        first = services.assignment_next(campaign, annotator_a)
        services.label_submit(first, OK)
        second = services.assignment_next(campaign, annotator_b)
        assert second.unit_id == first.unit_id
        start = _generation(benchmark)
        services.label_submit(second, values_for(second.unit))
        assert _generation(benchmark) == start + 1  # the unit settled: closed or disputed
        unit = AuditUnit.objects.get(pk=first.unit_id)
        if unit.state == "disputed":
            disputed.append(unit)
    assert {u.key.rsplit("/", 1)[-1] for u in disputed} == {"x"}

    for unit in disputed:
        start = _generation(benchmark)
        services.unit_adjudicate(unit, lead=lead, final_status="invalid", reason="ambiguous")
        assert _generation(benchmark) == start + 1

    after = leaderboard_tables(benchmark, _state(), excluded_items=excluded_item_ids(benchmark, "adjudicated_invalid"))
    assert _isr(after) == {"alpha": 100.0, "beta": 33.33}
    assert _isr(after) == _isr(
        compute_tables(benchmark.id, _state(), excluded_items=excluded_item_ids(benchmark, "adjudicated_invalid"))
    )
