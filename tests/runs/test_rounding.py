"""One rounding for every number the portal shows (runs.rounding): the page's floatformat, the CSV, the charts and
a snapshot's tables say the same digits, half cases included (23.125 is 23.13 everywhere, never 23.12 in the CSV)."""

import csv
import io

import pytest
from django.template import Context, Template
from django.urls import reverse

from runs.charts.checklist import leaderboard_figure
from runs.metrics.checklist import ScoreRow
from runs.models import AgentModel, Attempt, Benchmark, ChecklistItem, Instance, Judge, Run, Verdict
from runs.pages import Column, Table, table_csv
from runs.rounding import rounded, shown_number, shown_p
from runs.services import rollups_rebuild_for_attempts

#: (value, places): values whose dropped digits are exactly a half in their decimal form, which binary rounding
#: (round(), format specs) sends the other way for some of them
HALF_CASES = [
    (23.125, 2),
    (0.125, 2),
    (2.675, 2),
    (1.005, 2),
    (-2.675, 2),
    (1234567.125, 2),
    (23.135, 2),
    (0.0625, 3),
    (12.5, 0),
    (0.5, 0),
    (99.995, 2),
    (3.125, 2),
]


def _floatformat(value, places) -> str:
    return Template("{{ v|floatformat:p }}").render(Context({"v": value, "p": places}))


@pytest.mark.parametrize(("value", "places"), HALF_CASES)
def test_the_csv_rounds_a_half_as_the_page_shows_it(value, places):
    table = Table("t", "T", (Column("v", "v", "pct", places=places),), [{"v": value}])
    cell = list(csv.reader(io.StringIO(table_csv(table))))[1][0]
    assert cell == _floatformat(value, places) == shown_number(value, places)


def test_it_rounds_half_away_from_zero_on_the_decimal_form():
    assert (
        shown_number(23.125, 2) == "23.13" and shown_number(2.675, 2) == "2.68" and shown_number(-2.675, 2) == "-2.68"
    )
    assert rounded(23.125, 2) == 23.13 and rounded(None, 2) is None
    assert shown_number(float("nan"), 2) == "nan" and shown_number(float("inf"), 2) == "inf"


def test_a_chart_plots_the_value_the_table_shows():
    row = ScoreRow(
        model="m", group=None, isr=23.125, isr_std=0.0, csr=2.675, csr_std=0.0, n_instances=1, n_attempts=1, n_empty=0
    )
    bars = {trace["name"]: trace["y"][0] for trace in leaderboard_figure([row])["data"]}
    assert bars == {"ISR": 23.13, "CSR": 2.68}


@pytest.mark.django_db
def test_the_leaderboard_and_its_csv_both_say_23_13_for_23_125(reviewer_client):
    """37 of 160 instances fully passed: ISR and CSR are 23.125 %; the page and its CSV show 23.13."""
    bench = Benchmark.objects.create(slug="halves", name="Halves", kind="checklist")
    judge = Judge.objects.create(name="j1")
    run = Run.objects.create(benchmark=bench, label="m-r1", model=AgentModel.objects.create(name="m"))
    instances = Instance.objects.bulk_create(
        Instance(benchmark=bench, external_id=f"t{n}", content_hash="x", spec={}) for n in range(160)
    )
    items = ChecklistItem.objects.bulk_create(
        ChecklistItem(instance=i, key="c0", position=0, category="System Prompt", description="d", content_hash="x")
        for i in instances
    )
    attempts = Attempt.objects.bulk_create(Attempt(run=run, instance=i) for i in instances)
    Verdict.objects.bulk_create(
        Verdict(attempt=a, item=item, judge=judge, result="pass" if n < 37 else "fail")
        for n, (a, item) in enumerate(zip(attempts, items))
    )
    rollups_rebuild_for_attempts([a.id for a in attempts])
    page = reverse("runs:checklist-leaderboard", args=[bench.slug])
    body = reviewer_client.get(page).content.decode()
    row = next(csv.DictReader(io.StringIO(reviewer_client.get(page + "?export=csv").content.decode())))
    assert row["isr"] == row["csr"] == "23.13"
    assert ">23.13 <" in body.replace("\n", " ") and "23.12" not in body


@pytest.mark.parametrize(
    ("p", "shown"),
    [(None, ""), (0.0, "< 0.0001"), (0.0000999, "< 0.0001"), (0.0001, "0.0001"), (0.04996, "0.0500"), (1.0, "1.0000")],
)
def test_a_p_value_below_the_fourth_decimal_is_said_as_below_it(p, shown):
    assert shown_p(p) == shown
