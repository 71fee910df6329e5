"""Tokens, time and tool calls on the leaderboard (sort, group, columns), its API and exports, and the attempt page."""

import csv
import io
from statistics import median

import pytest
from django.urls import reverse

from runs.metrics.checklist import Filters
from runs.models import Attempt
from runs.selectors import checklist as selectors

from .test_views_checklist import build_study

pytestmark = pytest.mark.django_db


def logged_study():
    """build_study's three instances x alpha, beta; alpha's attempts logged tokens and times, beta's only tool calls,
    and alpha's third attempt no wall time."""
    bench, attempts = build_study()
    alpha = [a for a in attempts if a.run.model.name == "alpha"]
    for n, attempt in enumerate(alpha):
        Attempt.objects.filter(pk=attempt.pk).update(
            input_tokens=1000 * (n + 1),
            output_tokens=100 * (n + 1),
            total_tokens=1100 * (n + 1) if n < 2 else 2_000_000,
            model_seconds=1.5 * (n + 1),
            wall_seconds=10.0 * (n + 1) if n < 2 else None,
            model_calls=n + 2,
            tool_calls=n,
        )
    for n, attempt in enumerate(a for a in attempts if a.run.model.name == "beta"):
        Attempt.objects.filter(pk=attempt.pk).update(tool_calls=5 + n)
    return bench


def test_it_gives_each_model_its_mean_and_median_per_attempt_over_the_attempts_that_logged_it():
    bench = logged_study()
    usage = selectors.usage_by_model(bench.id, Filters())
    alpha, beta = usage["alpha"], usage["beta"]
    assert alpha.n_attempts == beta.n_attempts == 3
    totals = [1100, 2200, 2_000_000]
    assert alpha.figures["total_tokens"].mean == pytest.approx(sum(totals) / 3)
    assert alpha.figures["total_tokens"].median == median(totals)
    assert (alpha.figures["wall_seconds"].n, alpha.figures["wall_seconds"].mean) == (2, 15.0)
    assert beta.figures["total_tokens"].n == 0 and beta.figures["total_tokens"].mean is None
    assert beta.figures["tool_calls"].mean == 6 and beta.figures["tool_calls"].median == 6


def test_the_filters_choose_the_attempts_whose_usage_counts():
    bench = logged_study()
    usage = selectors.usage_by_model(bench.id, Filters(models=["alpha"]))
    assert set(usage) == {"alpha"}
    none = selectors.usage_by_model(bench.id, Filters(judges=["nobody"]))
    assert none == {}


@pytest.mark.parametrize(
    "sort, order",
    [
        ("-tokens", ["alpha", "beta"]),
        ("tokens", ["alpha", "beta"]),
        ("-tool_calls", ["beta", "alpha"]),
        ("tool_calls", ["alpha", "beta"]),
    ],
)
def test_it_sorts_models_by_usage_with_the_unlogged_last(reviewer_client, sort, order):
    bench = logged_study()
    body = reviewer_client.get(reverse("api:leaderboard", args=[bench.slug]) + f"?sort={sort}").json()
    assert [r["model"] for r in body["rows"]] == order


def test_it_sorts_by_tokens_in_both_directions_among_models_that_logged_them(reviewer_client):
    bench = logged_study()
    build_study(models=("gamma",))  # three more instances, gamma only
    for n, attempt in enumerate(Attempt.objects.filter(run__model__name="gamma")):
        Attempt.objects.filter(pk=attempt.pk).update(total_tokens=50 + n)
    api = reverse("api:leaderboard", args=[bench.slug])
    assert [r["model"] for r in reviewer_client.get(api + "?sort=-tokens").json()["rows"]] == ["alpha", "gamma", "beta"]
    assert [r["model"] for r in reviewer_client.get(api + "?sort=tokens").json()["rows"]] == ["gamma", "alpha", "beta"]


def test_it_groups_by_tokens_per_attempt():
    bench = logged_study()
    rows = selectors.leaderboard_rows(bench.id, Filters(), by="tokens")
    cells = {(r.model, r.group): r for r in rows}
    assert set(cells) == {("alpha", "under 10k"), ("alpha", "1M or more"), ("beta", "not logged")}
    # alpha fails c1 on odd instances: task-1 (2,200 tokens) fails, task-0 passes; task-2 (2M tokens) passes
    assert cells[("alpha", "under 10k")].isr == 50.0 and cells[("alpha", "under 10k")].n_attempts == 2
    assert cells[("alpha", "1M or more")].isr == 100.0
    assert cells[("beta", "not logged")].n_attempts == 3
    assert all(r.usage is None for r in rows)


def test_grouping_by_tokens_gives_the_same_cells_from_verdicts_as_from_rollups():
    """The exclusion path recomputes from verdicts: leaving out no real item must change nothing."""
    bench = logged_study()
    from_rollups = selectors.leaderboard_rows(bench.id, Filters(), by="tokens")
    from_verdicts = selectors.leaderboard_rows(bench.id, Filters(), by="tokens", excluded_items=[-1])
    shape = lambda rows: [(r.model, r.group, r.isr, r.csr, r.n_attempts) for r in rows]  # noqa: E731
    assert shape(from_verdicts) == shape(from_rollups)


def test_the_page_groups_by_tokens_and_drills_into_a_bucket(reviewer_client):
    bench = logged_study()
    page = reviewer_client.get(reverse("runs:checklist-leaderboard", args=[bench.slug]) + "?by=tokens").content.decode()
    assert "1M or more" in page and "not logged" in page
    drill = reviewer_client.get(
        reverse("runs:checklist-attempts", args=[bench.slug]) + "?by=tokens&model=alpha&group=under+10k"
    )
    assert drill.status_code == 200
    text = drill.content.decode()
    assert "task-0" in text and "task-1" in text and "task-2" not in text  # task-2 took 2M tokens


def test_the_usage_columns_show_figures_and_not_logged_never_zero(reviewer_client):
    bench = logged_study()
    url = reverse("runs:checklist-leaderboard", args=[bench.slug])
    page = reviewer_client.get(url + "?cols=usage").content.decode()
    table = page[
        page.index('<table class="grid usage">') : page.index("</table>", page.index('<table class="grid usage">'))
    ]
    beta = table[table.index(">beta<") :]
    beta = beta[: beta.index("</tr>")]
    assert beta.count("not logged") == 6  # tokens x3, model time, wall time, model calls
    assert "median 6" in beta and ">0<" not in beta
    alpha = table[table.index(">alpha<") :]
    alpha = alpha[: alpha.index("</tr>")]
    assert "667,767<" in alpha and "median 2,200" in alpha  # total tokens: (1,100 + 2,200 + 2,000,000) / 3
    assert "2 of 3 logged" in alpha  # the wall time
    assert "/help/metrics/#usage" in page
    assert '<table class="grid usage">' not in reviewer_client.get(url).content.decode()


def test_the_api_and_the_exports_carry_the_usage(reviewer_client):
    bench = logged_study()
    body = reviewer_client.get(reverse("api:leaderboard", args=[bench.slug])).json()
    beta = next(r for r in body["rows"] if r["model"] == "beta")
    assert beta["usage"]["n_attempts"] == 3
    assert beta["usage"]["total_tokens"] == {"n": 0, "mean": None, "median": None}
    assert beta["usage"]["tool_calls"] == {"n": 3, "mean": 6.0, "median": 6.0}
    export = reverse("runs:checklist-leaderboard", args=[bench.slug])
    document = reviewer_client.get(export + "?export=json").json()
    assert document["rows"] == body["rows"]
    lines = list(csv.DictReader(io.StringIO(reviewer_client.get(export + "?export=csv").content.decode())))
    by_model = {line["model"]: line for line in lines}
    assert by_model["beta"]["total_tokens_mean"] == "" and by_model["beta"]["total_tokens_n"] == "0"
    assert float(by_model["alpha"]["total_tokens_median"]) == 2200
    assert by_model["alpha"]["wall_seconds_n"] == "2"
    grouped = reviewer_client.get(reverse("api:leaderboard", args=[bench.slug]) + "?by=tokens").json()
    assert all(r["usage"] is None for r in grouped["rows"])


def test_the_attempt_page_says_what_was_logged_and_what_was_not(reviewer_client):
    logged_study()
    alpha = Attempt.objects.filter(run__model__name="alpha").order_by("instance__external_id")[1]
    page = reviewer_client.get(reverse("runs:attempt", args=[alpha.pk])).content.decode()
    line = page[page.index('id="usage"') : page.index("</p>", page.index('id="usage"'))]
    assert "2,000 in · 200 out · <strong>2,200</strong> total" in line
    assert "3.00 s" in line and "20.00 s" in line and "/help/metrics/#usage" in line
    beta = Attempt.objects.filter(run__model__name="beta").order_by("instance__external_id")[0]
    line = reviewer_client.get(reverse("runs:attempt", args=[beta.pk])).content.decode()
    line = line[line.index('id="usage"') : line.index("</p>", line.index('id="usage"'))]
    assert line.count("not logged") == 4 and "tool calls</span> 5" in line


def test_the_drilldown_lists_each_attempts_tokens_wall_time_and_tool_calls(reviewer_client):
    bench = logged_study()
    attempts = reverse("runs:checklist-attempts", args=[bench.slug])
    alpha = reviewer_client.get(attempts + "?model=alpha").content.decode()
    assert '2,000,000 · <span class="muted not-logged">not logged</span> · 2<' in alpha  # task-2 logged no wall time
    assert "1,100 · 10.0 · 0<" in alpha
    beta = reviewer_client.get(attempts + "?model=beta").content.decode()
    assert 'not-logged">not logged</span> · <span class="muted not-logged">not logged</span> · 5<' in beta


@pytest.mark.parametrize("suffix", ["?cols=usage", "?sort=-tokens", "?by=tokens"])
def test_the_usage_views_keep_their_queries_independent_of_the_number_of_attempts(reviewer_client, suffix):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    bench = logged_study()
    url = reverse("runs:checklist-leaderboard", args=[bench.slug]) + suffix

    def queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert reviewer_client.get(url).status_code == 200
        return len(ctx.captured_queries)

    small = queries()
    build_study(n_instances=6, models=("alpha", "beta", "gamma"))
    assert queries() == small
