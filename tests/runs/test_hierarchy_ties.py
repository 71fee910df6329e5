"""The hierarchy metrics page's rank intervals and tie groups: runs.metrics.paired over each row's per-sample Acc
counts, whose figure is the page's Acc, the same on the page, in its exports and in the API, per grouping and
judge."""

import csv
import io

import pytest
from django.http import QueryDict

from runs.metrics import paired
from runs.models import Benchmark
from runs.selectors.hierarchy import acc_sides, hierarchy_metrics, hierarchy_state

from .test_views_hierarchy import API, SLUG, study, url  # noqa: F401  (study: the fixture)

pytestmark = pytest.mark.django_db


def _data(query):
    state = hierarchy_state(benchmark=Benchmark.objects.get(slug=SLUG), query=query)
    return state, hierarchy_metrics(state)


@pytest.mark.parametrize("by", ["run", "model"])
@pytest.mark.parametrize("judge", ["", "manyih-style-checker"])
def test_a_rows_side_reproduces_the_pages_acc(study, by, judge):  # noqa: F811
    query = QueryDict(f"by={by}" + (f"&judge={judge}" if judge else ""))
    _state, data = _data(query)
    sides = acc_sides(data["sample_rows"], by=by)
    assert [r.label for r in data["rows"]] == list(sides)
    for row in data["rows"]:
        assert paired.figure(sides[row.label]) == pytest.approx(row.acc, rel=1e-12, abs=1e-12)
        assert sides[row.label][1].sum() == row.n


@pytest.mark.parametrize("query", [{"by": "run"}, {"by": "model"}, {"by": "run", "judge": "manyih-style-checker"}])
def test_page_export_and_api_show_what_paired_computes(reviewer_client, study, query):  # noqa: F811
    response = reviewer_client.get(url("hierarchy-metrics"), query)
    sides = acc_sides(response.context["sample_rows"], by=query["by"])
    ranks, groups = paired.rank_intervals(sides), paired.tie_groups(sides)
    assert all(ranks.values()) and all(groups.values())
    expected = {label: (*ranks[label], groups[label]) for label in sides}
    page = response.content.decode()
    assert "Tie group" in page and "/help/metrics/#paired" in page
    assert {
        line["row"].label: (*line["tie"].rank_interval, line["tie"].tie_group) for line in response.context["lines"]
    } == expected
    for low, high, group in expected.values():
        shown = f"{low}–{high}" if low != high else f"{low}"
        assert f'<td class="num">{shown}</td>\n        <td class="num">{group}</td>' in page
    exported = reviewer_client.get(url("hierarchy-metrics"), {**query, "export": "json"}).json()
    [table] = [t for t in exported["tables"] if t["name"] == "accuracy"]
    assert {r["label"]: (r["rank_low"], r["rank_high"], r["tie_group"]) for r in table["rows"]} == expected
    text = reviewer_client.get(url("hierarchy-metrics"), {**query, "export": "csv", "table": "accuracy"}).content
    label = "Run" if query["by"] == "run" else "Model"
    got = {
        r[label]: (r["rank_low"], r["rank_high"], r["tie_group"]) for r in csv.DictReader(io.StringIO(text.decode()))
    }
    assert got == {k: tuple(str(v) for v in values) for k, values in expected.items()}
    api = reviewer_client.get(API, {"benchmark": SLUG, **query}).json()["rows"]
    assert {r["label"]: (r["rank_low"], r["rank_high"], r["tie_group"]) for r in api} == expected
