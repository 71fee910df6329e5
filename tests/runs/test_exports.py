"""CSV and JSON exports of a leaderboard (live, for logged-in users) and of a share link's snapshot: the frame's
exports (runs.pages), at the leaderboard's export address of old and at its own ?export=."""

import csv
import io
import json
import re

import pytest
from django.urls import reverse

from runs.metrics.checklist import Filters
from runs.models import Verdict
from runs.selectors import checklist as selectors
from runs.selectors.checklist import score_row_dict

from .test_views_checklist import build_study

pytestmark = pytest.mark.django_db


def export(client, bench, query, fmt):
    """The leaderboard's table or tables for a query, through the frame's export (?export=)."""
    sep = "&" if query else ""
    table = "&table=leaderboard" if fmt == "csv" else ""
    return client.get(reverse("runs:checklist-leaderboard", args=[bench.slug]) + f"?{query}{sep}export={fmt}{table}")


def test_it_exports_json_equal_to_the_page_rows(reviewer_client):
    bench, _ = build_study(models=("alpha", "beta", "gamma"))
    response = export(reviewer_client, bench, "judge=j1&sort=model", "json")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert 'filename="octo-leaderboard.json"' in response["Content-Disposition"]  # the frame's name of the page
    document = json.loads(response.content)
    expected = selectors.leaderboard_rows(bench.id, Filters(judges=["j1"]))
    for row in expected:
        row.runs = (f"{row.model}-r1",)  # the page names the runs a by-model row pools: one each here
    assert document["benchmark"] == "octo" and document["by"] == "model" and document["state"]["judge"] == ["j1"]
    ranked = ("rank_low", "rank_high", "tie_group")  # the tables rank the rows (tests/runs/test_leaderboard_ties.py)
    assert all(row[name] is not None for row in document["rows"] for name in ranked)
    shown = [{k: v for k, v in row.items() if k not in ranked} for row in document["rows"]]
    wanted = [
        {k: v for k, v in score_row_dict(r).items() if k not in ranked} for r in sorted(expected, key=lambda r: r.model)
    ]
    assert shown == wanted
    assert document["rows"][0]["isr"] == pytest.approx(200 / 3) and document["rows"][0]["per_judge"]["j1"][
        "csr"
    ] == pytest.approx(500 / 6)


def test_it_exports_a_matrix_as_csv_in_the_page_order(reviewer_client):
    bench, _ = build_study()
    page = reviewer_client.get(
        reverse("runs:checklist-leaderboard", args=[bench.slug]) + "?by=category"
    ).content.decode()
    response = export(reviewer_client, bench, "by=category", "csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["model"], r["group"]) for r in rows] == [
        ("beta", "System Prompt"),
        ("beta", "User Query"),
        ("alpha", "System Prompt"),
        ("alpha", "User Query"),
    ]
    alpha_user = rows[3]
    # the CSV holds the numbers as the page shows them (two decimals); the JSON keeps the full precision
    assert alpha_user["isr"] == "66.67" and alpha_user["isr_std"] == "0.00"
    assert alpha_user["j1 isr"] and alpha_user["j2 csr"] and alpha_user["n_instances"] == "3"
    assert alpha_user["isr"] in page


def test_it_adds_bootstrap_intervals_when_the_state_asks(reviewer_client):
    bench, _ = build_study()
    rows = json.loads(export(reviewer_client, bench, "ci=on", "json").content)["rows"]
    assert all(len(r["isr_ci"]) == 2 and r["isr_ci"][0] <= r["isr"] <= r["isr_ci"][1] for r in rows)
    lines = list(csv.DictReader(io.StringIO(export(reviewer_client, bench, "", "csv").content.decode())))
    assert lines[0]["isr_ci_low"] == ""


def test_it_keeps_spreadsheet_formulas_out_of_csv(reviewer_client):
    bench, _ = build_study(models=("=HYPERLINK(1)",))
    body = export(reviewer_client, bench, "", "csv").content.decode()
    assert "'=HYPERLINK(1)" in body


def test_it_refuses_anonymous_and_unknown_formats(client, reviewer_client):
    bench, _ = build_study(n_instances=1)
    response = export(client, bench, "", "csv")
    assert response.status_code == 302 and "/login/" in response["Location"]
    refused = export(reviewer_client, bench, "", "xml")
    assert refused.status_code == 400 and "Unknown export format 'xml'" in refused.content.decode()


def test_a_share_link_exports_its_frozen_rows(editor_client, client):
    bench, _ = build_study()
    response = editor_client.post(reverse("runs:share-create", args=[bench.slug]), {"query": "by=judge"})
    token = re.search(r"/s/([A-Za-z0-9_-]+)/", response.content.decode()).group(1)
    before = json.loads(export(editor_client, bench, "by=judge", "json").content)
    Verdict.objects.update(result="fail")
    from runs.services import rollups_rebuild_for_attempts

    rollups_rebuild_for_attempts(list(Verdict.objects.values_list("attempt_id", flat=True).distinct()))
    url = reverse("runs:share-export", args=[token])
    frozen = json.loads(client.get(url + "?format=json").content)
    assert frozen["rows"] == before["rows"] and frozen["state"]["by"] == "judge"
    assert json.loads(export(editor_client, bench, "by=judge", "json").content)["rows"] != before["rows"]
    lines = list(csv.DictReader(io.StringIO(client.get(url + "?format=csv").content.decode())))
    assert [(r["model"], r["group"]) for r in lines] == [(r["model"], r["group"]) for r in before["rows"]]
    assert client.get(url + "?format=xml").status_code == 404
