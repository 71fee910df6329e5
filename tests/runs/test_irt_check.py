"""python manage.py irt_check: it reports the recovery at one and three verdicts per cell over several simulated
data sets, and exits 1 when either setting misses a target on the mean over them."""

import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

from runs.management.commands import irt_check
from runs.metrics import irt

SMALL = ["--models", "30", "--items", "80", "--timing-items", "100", "--seeds", "2", "--seed", "3", "--json"]


def _run(*args):
    out = StringIO()
    call_command("irt_check", *args, stdout=out)
    return json.loads(out.getvalue())


def test_it_reports_both_settings_over_the_seeds_with_figures_a_fit_of_its_own_reproduces(monkeypatch):
    monkeypatch.setattr(irt_check, "DIFFICULTY_TARGET", -1.0)
    monkeypatch.setattr(irt_check, "DISCRIMINATION_TARGET", -1.0)
    report = _run(*SMALL)
    assert report["targets_met"] and report["seeds"] == [3, 4]
    assert [row["verdicts"] for row in report["recovery"]] == [1, 3]
    for row in report["recovery"]:
        assert [one["seed"] for one in row["per_seed"]] == [3, 4]
        truth = irt.simulate_2pl(models=30, items=80, attempts=row["verdicts"], seed=4)
        fit = irt.fit_2pl(truth.successes, truth.trials)
        expected = np.corrcoef(fit.discrimination, truth.discrimination)[0, 1]
        assert row["per_seed"][1]["discrimination"] == pytest.approx(expected)
        values = [one["discrimination"] for one in row["per_seed"]]
        assert row["discrimination"] == {"mean": pytest.approx(np.mean(values)), "min": min(values)}


def test_it_exits_1_when_one_setting_misses_on_the_mean_and_names_the_seeds_below(monkeypatch):
    monkeypatch.setattr(irt_check, "DIFFICULTY_TARGET", -1.0)
    monkeypatch.setattr(irt_check, "DISCRIMINATION_TARGET", -1.0)
    means = {row["verdicts"]: row["discrimination"]["mean"] for row in _run(*SMALL)["recovery"]}
    worse, better = sorted(means, key=means.get)
    assert means[worse] < means[better]
    monkeypatch.setattr(irt_check, "DISCRIMINATION_TARGET", (means[worse] + means[better]) / 2)
    out = StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("irt_check", *SMALL[:-1], stdout=out)
    assert exited.value.code == irt_check.MISSED
    text = out.getvalue()
    assert "TARGET MISSED" in text and text.count("MISSED") == 2  # the one row and the verdict
    assert f"{worse} verdict(s) per cell" in text and "below a target on seed(s)" in text
