"""Every capability on every kind: each analysis page of each benchmark kind has the frame's tools (CSV and JSON
exports of its tables, a Share form that freezes it into a public snapshot, a "How is this computed" link), and
shows the Share form only to users who may share. A page added to a kind without them fails here."""
import csv
import html
import io
import json
import re

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from runs.demo import SCALES, conflict_plan, evolif_plan, guidebench_plan, manyih_plan, octobench_plan
from runs.ingest import Source, ingest
from runs.models import Run, Verdict
from runs.recheck import CHECKERS, recheck_run
from runs.services import rollups_rebuild_for_attempts

pytestmark = pytest.mark.django_db

#: kind -> (demo plan, benchmark slug, the kind's analysis pages)
KINDS = {
    "checklist": (octobench_plan, "octobench", ["runs:checklist-judges", "runs:checklist-length", "runs:checklist-compare"]),
    "dialogue": (evolif_plan, "evolif", ["runs:dialogue-metrics", "runs:dialogue-survival", "runs:dialogue-groups",
                                         "runs:dialogue-list", "runs:dialogue-recheck"]),
    "hierarchy": (manyih_plan, "manyih-coding", ["runs:hierarchy-metrics", "runs:hierarchy-conflicts", "runs:hierarchy-recheck"]),
    "choice": (guidebench_plan, "guidebench", ["runs:choice-metrics", "runs:choice-confusion", "runs:choice-rules",
                                                "runs:choice-tasks"]),
    "conflict": (conflict_plan, "octobench-conflict", ["runs:conflict-metrics"]),
}
#: a query that gives each page something to show (compare needs two sides)
QUERIES = {"runs:checklist-compare": "a=model:aurora-large&b=model:borealis-pro"}
CASES = [(kind, name) for kind, (_, _, names) in KINDS.items() for name in names]


def _load(kind: str, tmp_path) -> str:
    plan, slug, _ = KINDS[kind]
    for step in plan(1, SCALES["small"], tmp_path).steps:
        ingest(step.format, [Source.of(p) for p in step.paths], step.options)
    for run in Run.objects.filter(benchmark__slug=slug) if kind in CHECKERS else ():  # the re-check pages need it
        recheck_run(run=run)
    return slug


def _client(django_user_model, name: str, group: str | None = None) -> Client:
    user = django_user_model.objects.create_user(name, password=f"pw-{name}-1")
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    client = Client()
    client.force_login(user)
    return client


def _url(name: str, slug: str) -> str:
    query = QUERIES.get(name)
    return reverse(name, args=[slug]) + (f"?{query}" if query else "")


@pytest.mark.parametrize(("kind", "name"), CASES)
def test_every_page_of_every_kind_exports_shares_and_explains(kind, name, tmp_path, django_user_model):
    slug = _load(kind, tmp_path)
    reviewer = _client(django_user_model, "reviewer")
    url = _url(name, slug)
    page = reviewer.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    assert 'class="toolbar page-tools"' in body and "Share…" in body
    assert re.search(r'href="/help/metrics/#[a-z-]+"', body), "no 'How is this computed' link"

    document = json.loads(reviewer.get(url + ("&" if "?" in url else "?") + "export=json").content)
    assert document["tables"] and all(t["columns"] for t in document["tables"])
    assert any(t["rows"] for t in document["tables"]), f"{name} exports no rows"
    for table in document["tables"]:
        response = reviewer.get(url + ("&" if "?" in url else "?") + f"export=csv&table={table['name']}")
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
        lines = list(csv.reader(io.StringIO(response.content.decode())))
        assert lines[0] == [c["label"] for c in table["columns"]]
        assert len(lines) == len(table["rows"]) + 1

    created = reviewer.post(reverse("runs:page-share-create", args=[slug]), {"path": url, "expires_in": "7"})
    assert created.status_code == 200
    token = re.search(r"/s/([A-Za-z0-9_-]+)/", created.content.decode()).group(1)
    anonymous = Client()
    shared = anonymous.get(reverse("runs:share", args=[token]))
    assert shared.status_code == 200
    assert document["title"] in html.unescape(shared.content.decode())
    frozen = json.loads(anonymous.get(reverse("runs:share-export", args=[token]) + "?format=json").content)
    assert [t["rows"] for t in frozen["tables"]] == [t["rows"] for t in document["tables"]]


def test_a_page_snapshot_stays_as_it_was_when_the_data_changes(tmp_path, django_user_model):
    slug = _load("dialogue", tmp_path)
    reviewer = _client(django_user_model, "reviewer")
    url = reverse("runs:dialogue-metrics", args=[slug])
    created = reviewer.post(reverse("runs:page-share-create", args=[slug]), {"path": url})
    token = re.search(r"/s/([A-Za-z0-9_-]+)/", created.content.decode()).group(1)
    export = reverse("runs:share-export", args=[token]) + "?format=csv"
    before = Client().get(export).content
    verdicts = Verdict.objects.filter(attempt__run__benchmark__slug=slug)
    verdicts.update(result="fail")
    rollups_rebuild_for_attempts(set(verdicts.values_list("attempt_id", flat=True)))
    assert reviewer.get(url + "?export=csv").content != before  # the live page changed ...
    assert Client().get(export).content == before  # ... the snapshot did not


def test_a_blind_annotator_sees_exports_but_no_share_form_and_cannot_share(tmp_path, django_user_model):
    slug = _load("dialogue", tmp_path)
    annotator = _client(django_user_model, "annotator", "annotator")
    url = reverse("runs:dialogue-survival", args=[slug])
    body = annotator.get(url).content.decode()
    assert "Share…" not in body
    assert annotator.post(reverse("runs:page-share-create", args=[slug]), {"path": url}).status_code == 403


@pytest.mark.parametrize("path", ["https://example.com/b/evolif/dialogue/", "//example.com/b/evolif/dialogue/",
                                  "/b/octobench/leaderboard/", "/b/evolif/dialogue/123/", "/admin/"])
def test_it_refuses_to_freeze_what_is_not_a_page_of_this_benchmark(path, tmp_path, django_user_model):
    slug = _load("dialogue", tmp_path)
    reviewer = _client(django_user_model, "reviewer")
    response = reviewer.post(reverse("runs:page-share-create", args=[slug]), {"path": path})
    assert response.status_code == 400


def test_csv_keeps_negative_numbers_numeric_and_neutralises_formula_text():
    from runs.pages import Column, Table, table_csv

    table = Table("t", "T", (Column("name", "=label"), Column("gain", "gain", "pct")), [{"name": "=HYPERLINK(1)", "gain": -2.5}])
    assert table_csv(table).splitlines() == ["'=label,gain", "'=HYPERLINK(1),-2.50"]


def test_the_leaderboard_shows_its_share_form_only_to_those_who_may_share(tmp_path, django_user_model):
    slug = _load("checklist", tmp_path)
    url = reverse("runs:checklist-leaderboard", args=[slug])
    assert "Share…" in _client(django_user_model, "reviewer").get(url).content.decode()
    annotator = _client(django_user_model, "annotator", "annotator")
    body = annotator.get(url).content.decode()
    assert "Share…" not in body and "Leaderboard (CSV)" in body
