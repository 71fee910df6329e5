"""The checklist leaderboard's rank intervals and tie groups: computed by runs.metrics.paired from each model's
per-instance counts, the same whether those come from the generation's InstanceCounts or the cells, and the same
on the page, in its exports and in the API."""

import csv
import io
import runpy
from pathlib import Path

import numpy as np
import pytest
from django.urls import reverse

from runs.metrics import checklist as metrics
from runs.metrics import paired
from runs.metrics.checklist import Filters
from runs.selectors.checklist import (
    attempt_cells,
    compute_ties,
    leaderboard_base,
    leaderboard_instance_counts,
    leaderboard_rows,
    rank_figure,
)

_base = runpy.run_path(str(Path(__file__).with_name("test_leaderboard_base.py")))
varied_study, FILTERS = _base["_varied_study"], _base["FILTERS"]

pytestmark = pytest.mark.django_db


def _ties_from_cells(bench_id, filters, figure):
    sides = metrics.model_sides(attempt_cells(bench_id, filters), figure=figure)
    return paired.rank_intervals(sides), paired.tie_groups(sides)


@pytest.mark.parametrize("figure", ["isr", "csr"])
def test_the_sides_from_the_instance_counts_equal_those_from_the_cells(figure):
    bench, _ = varied_study()
    base, counts = leaderboard_base(bench.id), leaderboard_instance_counts(bench.id)
    for filters in FILTERS:
        from_cells = metrics.model_sides(attempt_cells(bench.id, filters), figure=figure)
        from_base = metrics.base_sides(base, counts, filters, figure=figure)
        assert list(from_base) == list(from_cells), filters
        for model, (num, den) in from_cells.items():
            assert np.array_equal(from_base[model][0], num) and np.array_equal(from_base[model][1], den), filters
        ties = compute_ties(bench.id, filters, figure)
        assert (ties.ranks, ties.groups) == _ties_from_cells(bench.id, filters, figure), filters


def test_a_side_sums_the_attempts_of_an_instance_under_each_judge():
    bench, _ = varied_study()
    sides = metrics.model_sides(attempt_cells(bench.id, Filters(judges=["j1"])), figure="isr")
    row = next(r for r in leaderboard_rows(bench.id, Filters(judges=["j1"])) if r.model == "beta")
    assert paired.figure(sides["beta"]) == pytest.approx(row.per_judge["j1"].isr)


def test_ties_are_seeded():
    bench, _ = varied_study()
    first = compute_ties(bench.id, Filters(), "isr")
    assert compute_ties(bench.id, Filters(), "isr") == first
    assert all(first.groups[m] is not None and first.ranks[m] is not None for m in ("alpha", "beta", "gamma"))


def test_the_sort_decides_the_figure():
    assert [rank_figure(s) for s in ("-isr", "isr", "-csr", "csr", "model", "-n", "tokens")] == [
        "isr",
        "isr",
        "csr",
        "csr",
        "isr",
        "isr",
        "isr",
    ]


@pytest.mark.parametrize(
    "query,figure,filters", [("", "isr", Filters()), ("?sort=csr&judge=j2", "csr", Filters(judges=["j2"]))]
)
def test_page_export_and_api_show_what_paired_computes(reviewer_client, query, figure, filters):
    bench, _ = varied_study()
    ranks, groups = _ties_from_cells(bench.id, filters, figure)
    page_url = reverse("runs:checklist-leaderboard", args=[bench.slug])
    body = reviewer_client.get(page_url + query).content.decode()
    assert "Tie group" in body and "/help/metrics/#paired" in body
    for model, (low, high) in ranks.items():
        shown = f"{low}–{high}" if low != high else f"{low}"
        assert f'<td class="num">{shown}</td>\n        <td class="num">{groups[model]}</td>' in body
    joiner = "&" if query else "?"
    rows = reviewer_client.get(page_url + query + joiner + "export=json").json()["rows"]
    api = reviewer_client.get(reverse("api:leaderboard", args=[bench.slug]) + query).json()["rows"]
    for got in (rows, api):
        assert {r["model"]: (r["rank_low"], r["rank_high"], r["tie_group"]) for r in got} == {
            m: (*ranks[m], groups[m]) for m in ranks
        }
    text = reviewer_client.get(page_url + query + joiner + "export=csv").content.decode()
    table = list(csv.DictReader(io.StringIO(text)))
    assert {r["model"]: (r["rank_low"], r["rank_high"], r["tie_group"]) for r in table} == {
        m: (str(ranks[m][0]), str(ranks[m][1]), str(groups[m])) for m in ranks
    }
