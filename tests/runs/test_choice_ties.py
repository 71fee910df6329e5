"""The choice metrics page's rank intervals and tie groups: runs.metrics.paired over each run's per-task accuracy
counts, whose figure is the page's overall accuracy, the same on the page, in its exports and in the API."""

import csv
import io

import pytest
from django.urls import reverse

from runs.metrics import choice as metrics
from runs.metrics import paired
from runs.selectors.choice import accuracy_sides, choice_rows

from .test_views_choice import make_study

pytestmark = pytest.mark.django_db


def _expected(bench_id, view):
    labels = ["alpha", "beta", "extra-0", "extra-1"]
    sides = accuracy_sides(choice_rows(bench_id, labels, view=view))
    return paired.rank_intervals(sides), paired.tie_groups(sides)


@pytest.mark.parametrize("view", [metrics.EXACT, metrics.NORMALISED])
def test_a_runs_side_reproduces_the_pages_accuracy(view):
    bench = make_study(n_extra_runs=2)
    rows = choice_rows(bench.id, ["alpha", "beta", "extra-0", "extra-1"], view=view)
    sides = accuracy_sides(rows)
    for run in metrics.run_metrics(rows):
        assert paired.figure(sides[run.run]) == pytest.approx(run.accuracy, rel=1e-12, abs=0)
        assert sides[run.run][1].sum() == run.n  # an unanswered task counts, scored as the reference's default


@pytest.mark.parametrize("query,view", [("", metrics.EXACT), ("?sort=run&view=normalised", metrics.NORMALISED)])
def test_page_export_and_api_show_what_paired_computes(reviewer_client, query, view):
    bench = make_study(n_extra_runs=2)
    ranks, groups = _expected(bench.id, view)
    assert set(ranks) == {"alpha", "beta", "extra-0", "extra-1"} and all(ranks.values())
    page_url = reverse("runs:choice-metrics", args=[bench.slug])
    response = reviewer_client.get(page_url + query)
    body = response.content.decode()
    assert "Tie group" in body and "/help/metrics/#paired" in body
    for m, _cells, tie in response.context["overall"]:
        assert (tie.rank_interval, tie.tie_group) == (ranks[m.run], groups[m.run])
    for run, (low, high) in ranks.items():
        shown = f"{low}–{high}" if low != high else f"{low}"
        assert f'<td class="num">{shown}</td>\n        <td class="num">{groups[run]}</td>' in body
    expected = {run: (*ranks[run], groups[run]) for run in ranks}
    joiner = "&" if query else "?"
    table = reviewer_client.get(page_url + query + joiner + "export=json&table=overall").json()
    rows = table["rows"] if "rows" in table else table["tables"][0]["rows"]
    assert {r["run"]: (r["rank_low"], r["rank_high"], r["tie_group"]) for r in rows} == expected
    text = reviewer_client.get(page_url + query + joiner + "export=csv&table=overall").content.decode()
    got = {r["Run"]: (r["rank_low"], r["rank_high"], r["tie_group"]) for r in csv.DictReader(io.StringIO(text))}
    assert got == {run: tuple(str(v) for v in values) for run, values in expected.items()}
    for run in ranks:
        api = reviewer_client.get(reverse("api:choice-metrics"), {"run": run, "view": view}).json()
        assert (api["rank_low"], api["rank_high"], api["tie_group"]) == expected[run]
