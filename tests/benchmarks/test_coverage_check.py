"""The coverage check, fast: fewer studies than `manage.py coverage_check`, bounds loose enough for that, tight enough
to fail an interval that resamples the wrong unit (too narrow) or does not pair the two models (too wide)."""

import json
from io import StringIO

import numpy as np
from django.core.management import call_command

from ifportal.benchmarks.management.commands import coverage_check
from runs.metrics import paired


def test_the_intervals_cover_the_true_figures_and_equal_models_stay_together():
    out = StringIO()
    call_command("coverage_check", "--studies", "60", "--instances", "50", "200", "--json", stdout=out)
    rows = json.loads(out.getvalue())["rows"]
    assert [row["instances"] for row in rows] == [50, 200]
    for row in rows:
        for figure in ("isr", "csr", "isr_diff", "csr_diff"):
            assert 0.85 <= row[figure] <= 1.0, (row["instances"], figure, row[figure])
        assert row["false_splits_2"] <= 0.12
        assert row[f"false_splits_{coverage_check.EQUAL}"] <= 0.12


def test_a_paired_interval_is_narrower_than_one_that_resamples_the_models_apart():
    """The simulation shares each instance's difficulty between models, so pairing must pay off."""
    rng = np.random.default_rng(1)
    widths = []
    for _ in range(10):
        (a, _), (b, _) = coverage_check.simulate(rng, 200, [coverage_check.LOGIT_A, coverage_check.LOGIT_B])
        result = paired.paired_difference(a, b)
        apart = [paired.figure_interval(a), paired.figure_interval(b, seed=1)]
        unpaired = np.hypot(apart[0][1] - apart[0][0], apart[1][1] - apart[1][0])
        widths.append((result.high - result.low) / unpaired)
    assert np.mean(widths) < 0.85


def test_the_table_names_each_figure():
    row = {"instances": 50, "studies": 10, "isr": 0.95, "csr": 0.94, "isr_diff": 0.96, "csr_diff": 0.93}
    row |= {"false_splits_2": 0.05, f"false_splits_{coverage_check.EQUAL}": 0.1}
    text = coverage_check.table([row])
    assert "| 50 | 10 | 95.0% | 94.0% | 96.0% | 93.0% | 5.0% | 10.0% |" in text
