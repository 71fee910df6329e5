"""GET /api/verdicts/: streamed verdicts as JSON lines or CSV, filtered by run and judge, auth like the API."""

import csv
import io
import json

import pytest
from django.db.models.query import QuerySet
from django.http import StreamingHttpResponse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runs.api import verdicts as api_verdicts
from runs.models import AgentModel, Attempt, Benchmark, ChecklistItem, Instance, Judge, Run, Verdict

pytestmark = pytest.mark.django_db
URL = "/api/verdicts/"


@pytest.fixture
def api(reviewer) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=reviewer).key}")
    return client


def study(n_instances=2):
    """Runs alpha-r1 and beta-r1, judges j1 and j2, two items per instance; alpha fails c1 under j1 with a formula-like reasoning."""
    bench = Benchmark.objects.create(slug="octo", name="Octo", kind="checklist")
    judges = [Judge.objects.create(name=j) for j in ("j1", "j2")]
    runs = [
        Run.objects.create(benchmark=bench, model=AgentModel.objects.create(name=m), label=f"{m}-r1")
        for m in ("alpha", "beta")
    ]
    for n in range(n_instances):
        inst = Instance.objects.create(benchmark=bench, external_id=f"task-{n}", content_hash="h")
        items = [
            ChecklistItem.objects.create(instance=inst, key=k, position=p, category=c, check_type=t, content_hash="h")
            for p, (k, c, t) in enumerate(
                (("c0", "System Prompt", "compliance"), ("c1", "User Query", "implementation"))
            )
        ]
        for run in runs:
            attempt = Attempt.objects.create(run=run, instance=inst)
            for judge in judges:
                for item in items:
                    fail = run.label == "alpha-r1" and item.key == "c1" and judge.name == "j1"
                    Verdict.objects.create(
                        attempt=attempt,
                        item=item,
                        judge=judge,
                        result="fail" if fail else "pass",
                        reasoning='=HYPERLINK("http://x")' if fail else "ok, “fine”",
                    )
    return bench


def _body(response) -> str:
    assert isinstance(response, StreamingHttpResponse)
    return b"".join(response.streaming_content).decode("utf-8")


def test_it_streams_json_lines_with_every_column_by_default(api):
    study()
    response = api.get(URL, {"run": "alpha-r1", "judge": "j1"})
    assert response.status_code == 200 and response["Content-Type"].startswith("application/x-ndjson")
    rows = [json.loads(line) for line in _body(response).splitlines()]
    assert len(rows) == 4  # 2 instances x 2 items
    assert set(rows[0]) == set(api_verdicts.COLUMNS)
    failed = [r for r in rows if r["result"] == "fail"]
    assert [(r["instance"], r["item"], r["category"], r["check_type"], r["model"], r["judge"]) for r in failed] == [
        ("task-0", "c1", "User Query", "implementation", "alpha", "j1"),
        ("task-1", "c1", "User Query", "implementation", "alpha", "j1"),
    ]
    assert failed[0]["reasoning"] == '=HYPERLINK("http://x")'  # JSON keeps data as it is


def test_it_takes_repeated_runs_and_judges(api):
    study()
    both = _body(api.get(URL + "?run=alpha-r1&run=beta-r1&judge=j1&judge=j2")).splitlines()
    assert len(both) == 16
    assert {json.loads(line)["run"] for line in both} == {"alpha-r1", "beta-r1"}
    everything = _body(api.get(URL)).splitlines()
    assert len(everything) == 16
    one = _body(api.get(URL, {"judge": "j2"})).splitlines()
    assert {json.loads(line)["judge"] for line in one} == {"j2"} and len(one) == 8


def test_it_answers_csv_with_formula_cells_neutralised(api):
    study()
    response = api.get(URL, {"run": "alpha-r1", "judge": "j1", "format": "csv"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(_body(response))))
    assert tuple(rows[0]) == api_verdicts.COLUMNS and len(rows) == 5
    reasoning = {r[-1] for r in rows[1:] if r[-2] == "fail"}
    assert reasoning == {'\'=HYPERLINK("http://x")'}
    assert "ok, “fine”" in {r[-1] for r in rows[1:]}


def test_it_honours_an_accept_header_for_csv(api):
    study(n_instances=1)
    response = api.get(URL, {"run": "beta-r1"}, HTTP_ACCEPT="text/csv")
    assert response["Content-Type"].startswith("text/csv") and _body(response).startswith("benchmark,run,model")


def test_it_refuses_unknown_runs_judges_and_formats(api):
    study(n_instances=1)
    response = api.get(URL, {"run": ["alpha-r1", "nope"], "judge": "nobody"})
    assert response.status_code == 400
    problems = json.loads(response.content)
    assert problems == {"run": ["unknown run 'nope'"], "judge": ["unknown judge 'nobody'"]}
    assert api.get(URL, {"run": "alpha-r1", "benchmark": "other"}).status_code == 400
    assert api.get(URL, {"format": "xml"}).status_code in (400, 404)


def test_it_needs_a_token_or_a_session(client, reviewer):
    study(n_instances=1)
    assert APIClient().get(URL).status_code == 401
    client.force_login(reviewer)
    assert client.get(URL, {"run": "beta-r1"}).status_code == 200


def test_it_streams_in_chunks_without_reading_every_row_first(api, monkeypatch):
    study(n_instances=5)  # 40 verdicts
    monkeypatch.setattr(api_verdicts, "CHUNK", 3)
    seen = {"chunk_size": None, "fetched": 0}
    original = QuerySet.iterator

    def counting_iterator(self, chunk_size=None):
        seen["chunk_size"] = chunk_size
        for row in original(self, chunk_size=chunk_size):
            seen["fetched"] += 1
            yield row

    monkeypatch.setattr(QuerySet, "iterator", counting_iterator)
    for fmt in ("jsonl", "csv"):
        seen["fetched"] = 0
        response = api.get(URL, {"format": fmt})
        pieces = iter(response.streaming_content)
        next(pieces)
        assert seen["chunk_size"] == 3
        assert seen["fetched"] <= 4  # one piece needs one chunk (plus the row that closes it), not all 40 rows
        rest = list(pieces)
        assert len(rest) >= 10 and seen["fetched"] == 40


def test_the_schema_documents_both_media_types(reviewer_client):
    schema = reviewer_client.get("/api/schema/").content.decode()
    assert "/api/verdicts/:" in schema and "verdicts_stream" in schema
    assert "application/x-ndjson" in schema and "text/csv" in schema
