"""The by-model leaderboard counted in the database equals the one scored from cells in Python,
row for row and float for float, including attempts with no applicable item under one judge or
under every judge, filters, and filters that match nothing. Runs on SQLite and PostgreSQL."""

import runpy
from pathlib import Path

import pytest

from runs.metrics.checklist import Filters, score_rows
from runs.models import Verdict
from runs.selectors.checklist import attempt_cells, leaderboard_rows, model_rows_counted, rows_with_usage
from runs.services import rollups_rebuild_for_attempts

build_study = runpy.run_path(str(Path(__file__).with_name("test_views_checklist.py")))["build_study"]
pytestmark = pytest.mark.django_db


def test_counting_in_the_database_gives_the_rows_of_the_cells():
    bench, attempts = build_study(n_instances=5, models=("alpha", "beta", "gamma"), judges=("j1", "j2", "j3"))
    alpha = [a for a in attempts if a.run.model.name == "alpha"]
    beta = [a for a in attempts if a.run.model.name == "beta"]
    Verdict.objects.filter(attempt=alpha[0], judge__name="j1").update(result="na")  # empty under one judge
    Verdict.objects.filter(attempt=alpha[1]).update(result="na")  # empty under every judge
    Verdict.objects.filter(attempt__in=beta[:2], judge__name="j2", item__key="c0").update(result="fail")
    Verdict.objects.filter(attempt=beta[3], item__key="c1").update(result="na")
    rollups_rebuild_for_attempts([a.id for a in attempts])
    for filters in (
        Filters(),
        Filters(judges=["j1"]),
        Filters(judges=["j2", "j3"], runs=["alpha-r1", "beta-r1"]),
        Filters(scaffolds=["claudecode"]),
        Filters(primary_categories=["nothing"]),
    ):
        expected = score_rows(attempt_cells(bench.id, filters))
        assert model_rows_counted(bench.id, filters) == expected
        assert leaderboard_rows(bench.id, filters) == rows_with_usage(
            expected, bench.id, filters
        )  # the page adds usage
    rows = {r.model: r for r in model_rows_counted(bench.id, Filters())}
    assert rows["alpha"].n_empty == 1 and rows["alpha"].n_attempts == 4 and rows["alpha"].per_judge["j1"].n_empty == 2
    assert rows["beta"].per_judge["j2"].isr == 60.0 and rows["beta"].isr_std > 0
