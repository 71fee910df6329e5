"""A table a page keeps from a blind annotator is absent from everything the page frame gives them: the toolbar's
export links, `?export=csv&table=` (refused like a table the page does not have), `?export=json` and a snapshot.

The ManyIH metrics page comparing two runs lists the samples that flip between them, each with both runs' pass/fail
and a link to each attempt: per-item results, declared so (`page_builder(per_item=...)`), which a reviewer reads and
a blind annotator does not."""

import csv
import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.test import Client, RequestFactory
from django.urls import reverse

from runs import pages
from runs.exports import hierarchy as exports
from runs.ingest import Options, Source, ingest

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "manyih"
SLUG = "manyih-coding"
COMPARED = {"a": "coder-ordinal", "b": "coder-scalar"}
AGGREGATES = ["accuracy", "style-groups", "tiers"]


@pytest.fixture
def compared_runs(tmp_path):
    """Two runs of one model whose sample 0 passes in the first and fails in the second: one flip."""
    ingest("manyih-data", [Source.of(FIXTURES / "coding_small.json")], Options())
    doc = json.loads((FIXTURES / "results_small.json").read_text())
    for label in COMPARED.values():
        path = tmp_path / f"{label}.json"
        path.write_text(json.dumps(doc))
        ingest("manyih-results", [Source.of(path)], Options(model="acme/coder-1", run=label))
        sample_0 = next(r for r in doc["results"] if r["id"] == 0)
        sample_0["evaluation"].update(test_passed=False, overall_passed=False)


@pytest.fixture
def blind(django_user_model):
    user = django_user_model.objects.create_user("blind", password="pw-blind-1")
    user.groups.add(Group.objects.get_or_create(name="annotator")[0])
    return user


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _page(**params) -> str:
    query = "&".join(f"{k}={v}" for k, v in {**COMPARED, **params}.items())
    return f"{reverse('runs:hierarchy-metrics', args=[SLUG])}?{query}"


def test_a_reviewer_gets_the_flips_page_tool_csv_and_json(compared_runs, reviewer):
    client = _client(reviewer)
    assert "Samples that flip between the compared runs (CSV)" in client.get(_page()).content.decode()
    rows = list(csv.reader(io.StringIO(client.get(_page(export="csv", table="flips")).content.decode())))
    assert rows[1][2:] == ["pass", "fail"]
    document = client.get(_page(export="json")).json()
    flips = next(t for t in document["tables"] if t["name"] == "flips")
    assert flips["rows"][0]["a"] == "pass" and flips["rows"][0]["a_attempt"]


def test_a_blind_annotator_is_neither_offered_nor_answered_the_flips(compared_runs, blind):
    client = _client(blind)
    page = client.get(_page()).content.decode()
    assert "Flip rate" in page  # the comparison's aggregate stays
    assert "Samples that flip" not in page and "table=flips" not in page
    refused, unknown = client.get(_page(export="csv", table="flips")), client.get(_page(export="csv", table="nosuch"))
    assert (refused.status_code, unknown.status_code) == (400, 400)
    assert refused.content.decode() == f"This page has no table 'flips' (tables: {', '.join(AGGREGATES)})."
    assert unknown.content.decode().replace("'nosuch'", "'flips'") == refused.content.decode()
    document = client.get(_page(export="json")).json()
    assert [t["name"] for t in document["tables"]] == AGGREGATES
    assert "attempt" not in json.dumps(document)


def test_a_snapshot_taken_as_a_blind_annotator_holds_no_per_item_table(compared_runs, blind, reviewer):
    """The frame's snapshot runs the page as the user who asks for it (the share form is not theirs to use, and
    page_snapshot still holds to the same declaration)."""

    def snapshot(user) -> dict:
        request = RequestFactory().get("/")
        request.user, request.session = user, None
        return pages.page_snapshot(request, path=_page(), benchmark_slug=SLUG, include_attempts=True)

    seen = snapshot(reviewer)
    assert [t["name"] for t in seen["tables"]] == [*AGGREGATES, "flips"] and seen["attempts"]
    kept = snapshot(blind)
    assert [t["name"] for t in kept["tables"]] == AGGREGATES and kept["attempts"] == []


def test_a_declaration_of_a_per_item_table_the_builder_does_not_have_is_refused():
    assert pages.declared(exports.metrics_page).per_item == {"flips"}
    with pytest.raises(TypeError, match="does not declare"):
        pages.page_builder(("accuracy", "Acc"), per_item=("flips",))
