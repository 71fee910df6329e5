"""GET /api/leaderboards/<slug>/ and GET /api/attempts/<id>/verdicts/: shape, equality with the page, auth."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.metrics.checklist import Filters
from runs.models import Benchmark
from runs.selectors import checklist as selectors
from runs.selectors.checklist import score_row_dict

from .test_views_checklist import XSS, build_study

pytestmark = pytest.mark.django_db


def url(slug="octo"):
    return reverse("api:leaderboard", args=[slug])


def test_it_answers_the_documented_shape_in_percent(reviewer_client):
    build_study()
    body = reviewer_client.get(url()).json()
    assert body["benchmark"] == "octo" and body["by"] == "model"
    alpha = next(r for r in body["rows"] if r["model"] == "alpha")
    assert alpha["group"] is None
    assert alpha["isr"] == pytest.approx(200 / 3) and alpha["isr_std"] == 0
    assert alpha["csr"] == pytest.approx(500 / 6) and alpha["n_instances"] == 3 and alpha["n_attempts"] == 3
    assert set(alpha["per_judge"]) == {"j1", "j2"}
    assert alpha["per_judge"]["j1"]["isr"] == pytest.approx(200 / 3)
    assert [r["model"] for r in body["rows"]] == ["beta", "alpha"]  # the page's default sort: ISR, high first


@pytest.mark.parametrize(
    "query,by,filters",
    [
        ("?by=category", "category", Filters()),
        ("?by=judge&judge=j1", "judge", Filters(judges=["j1"])),
        ("?judges=j1,j2&runs=alpha-r1", "model", Filters(judges=["j1", "j2"], runs=["alpha-r1"])),
        (
            "?run=alpha-r1&run=beta-r1&scaffold=claudecode&by=scaffold",
            "scaffold",
            Filters(runs=["alpha-r1", "beta-r1"], scaffolds=["claudecode"]),
        ),
    ],
)
def test_it_returns_the_same_rows_as_the_page(reviewer_client, query, by, filters):
    bench, _ = build_study()
    body = reviewer_client.get(url() + query).json()
    expected = selectors.leaderboard_rows(bench.id, filters, by=by)
    ties = selectors.compute_ties(bench.id, filters, "isr")
    for row in expected if by == "model" else ():
        row.runs = (f"{row.model}-r1",)  # the page names the runs a by-model row pools: one each here
        row.rank_interval, row.tie_group = ties.ranks[row.model], ties.groups[row.model]
    key = lambda r: (r["model"], r["group"] or "")  # noqa: E731
    assert sorted(body["rows"], key=key) == sorted((score_row_dict(r) for r in expected), key=key)
    page = reviewer_client.get(
        reverse("runs:checklist-leaderboard", args=[bench.slug])
        + query.replace("?", "?export=json&").replace("judges=j1,j2", "judge=j1&judge=j2").replace("runs=", "run=")
    ).json()
    assert body["rows"] == page["rows"]


def test_it_adds_intervals_with_ci(reviewer_client):
    build_study()
    rows = reviewer_client.get(url() + "?ci=true").json()["rows"]
    assert all(r["isr_ci"][0] <= r["isr"] <= r["isr_ci"][1] for r in rows)
    assert all(r["isr_ci"] is None for r in reviewer_client.get(url()).json()["rows"])


@pytest.mark.parametrize("word", ["off", "no", "false", "0", "OFF", ""])
def test_ci_off_in_any_of_its_words_means_no_intervals_on_api_and_page(reviewer_client, word):
    build_study(n_instances=2)
    assert all(r["isr_ci"] is None for r in reviewer_client.get(url() + f"?ci={word}").json()["rows"])
    page = reviewer_client.get(reverse("runs:checklist-leaderboard", args=["octo"]) + f"?ci={word}")
    assert page.status_code == 200
    assert not re.search(rb'<input[^>]*name="ci"[^>]*checked', page.content)


def test_ci_takes_on_off_words_and_refuses_others_with_the_pages_words(reviewer_client):
    build_study(n_instances=2)
    for word in ("on", "yes", "true", "1"):
        assert all(r["isr_ci"] for r in reviewer_client.get(url() + f"?ci={word}").json()["rows"])
    refused = reviewer_client.get(url() + "?ci=maybe")
    assert refused.status_code == 400
    assert refused.json()["ci"] == ["'maybe' is neither on nor off (on, off, true, false, 1, 0, yes, no)."]


def test_it_rejects_unknown_values_and_groupings(reviewer_client):
    build_study(n_instances=1)
    assert reviewer_client.get(url() + "?run=nope").status_code == 400
    assert "judge" in reviewer_client.get(url() + "?judges=nobody").json()
    assert reviewer_client.get(url() + "?by=colour").status_code == 400


def test_it_answers_404_for_an_unknown_slug_or_another_kind(reviewer_client):
    Benchmark.objects.create(slug="evo", name="Evo", kind="dialogue")
    assert reviewer_client.get(url("evo")).status_code == 404
    assert reviewer_client.get(url("nothing")).status_code == 404


def test_it_needs_authentication(client):
    build_study(n_instances=1)
    attempt_url = reverse("api:attempt-verdicts", args=[1])
    assert client.get(url()).status_code in (401, 403)
    assert client.get(attempt_url).status_code in (401, 403)


def test_it_accepts_a_token(reviewer):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    build_study(n_instances=1)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION="Token " + Token.objects.create(user=reviewer).key)
    assert api.get(url()).status_code == 200


def _queries(client, address) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(address).status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize("suffix", ["", "?by=category", "?by=judge"])
def test_it_keeps_leaderboard_queries_independent_of_the_number_of_attempts(reviewer_client, suffix):
    build_study(n_instances=2)
    small = _queries(reviewer_client, url() + suffix)
    build_study(n_instances=6, models=("alpha", "beta", "gamma"))
    assert _queries(reviewer_client, url() + suffix) == small
    # one of them the usage per model (runs.selectors.checklist.usage_by_model), one the runs that are not a finished,
    # scored evaluation (runs.selectors.run_status)
    assert small <= 14


# verdicts of an attempt ------------------------------------------------------------------
def test_it_lists_an_attempts_verdicts_with_judge_and_item(reviewer_client):
    _, attempts = build_study(n_instances=2)
    failing = next(a for a in attempts if a.run.label == "alpha-r1" and a.instance.external_id == "task-1")
    body = reviewer_client.get(reverse("api:attempt-verdicts", args=[failing.id])).json()
    assert body["count"] == 4
    first = body["results"][0]
    assert set(first) == {"id", "judge", "judge_kind", "item", "result", "reasoning", "score", "evidence"}
    assert [(v["item"]["key"], v["judge"]) for v in body["results"]] == [
        ("c0", "j1"),
        ("c0", "j2"),
        ("c1", "j1"),
        ("c1", "j2"),
    ]
    c1 = body["results"][2]
    assert c1["result"] == "fail" and c1["reasoning"] == "missing tests " + XSS  # JSON carries it verbatim
    assert c1["item"]["category"] == "User Query" and c1["evidence"] == {"thread": 0, "message": 2}


def test_it_answers_404_for_an_unknown_attempt(reviewer_client):
    assert reviewer_client.get(reverse("api:attempt-verdicts", args=[999999])).status_code == 404


def test_it_keeps_verdict_list_queries_flat(reviewer_client):
    _, attempts = build_study(n_instances=1, judges=("j1",))
    small = _queries(reviewer_client, reverse("api:attempt-verdicts", args=[attempts[0].id]))
    _, more = build_study(n_instances=1, judges=("j1", "j2", "j3"))
    assert _queries(reviewer_client, reverse("api:attempt-verdicts", args=[more[0].id])) == small


def test_the_schema_documents_both_endpoints(reviewer_client):
    response = reviewer_client.get("/api/schema/")
    assert response.status_code == 200
    schema = response.content.decode()
    assert "/api/leaderboards/{slug}/" in schema and "/api/attempts/{id}/verdicts/" in schema
    assert "leaderboard_retrieve" in schema and "attempt_verdicts_list" in schema
