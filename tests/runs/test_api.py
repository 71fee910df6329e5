"""REST API: ingest as a job (token and session auth), job status, list endpoints, schema."""

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runs.models import Instance, Job, JobState, Trajectory

pytestmark = pytest.mark.django_db


def _instances_jsonl(*ids: str) -> bytes:
    records = [
        {
            "instance_id": i,
            "user_query": ["Fix the bug"],
            "category": "Skill.md",
            "checklist": {
                "SP": {
                    "checks": [{"check_id": "SP-1", "description": "reads before editing", "check_type": "compliance"}]
                }
            },
        }
        for i in ids
    ]
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def _scores_json(*ids: str) -> bytes:
    return json.dumps(
        {
            "results": [
                {"instance_id": i, "eval_result": {"SP": {"checks": [{"check_id": "SP-1", "result": "success"}]}}}
                for i in ids
            ]
        }
    ).encode()


def _trajectory_jsonl(instance_id: str, model: str) -> bytes:
    record = {
        "meta": {"session_id": instance_id, "model": model},
        "tools": [{"name": "Read"}],
        "messages": [{"role": "user", "content": "Fix the bug"}, {"role": "assistant", "content": "Done."}],
    }
    return (json.dumps(record) + "\n").encode()


@pytest.fixture
def token_client(editor) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=editor).key}")
    return client


@pytest.fixture
def session_client(editor) -> APIClient:
    client = APIClient()
    client.force_login(editor)
    return client


def _post(client, capture, fmt: str, *files: tuple[str, bytes], **options):
    data = {"format": fmt, "files": [SimpleUploadedFile(name, content) for name, content in files], **options}
    with capture(execute=True):
        return client.post("/api/ingest/", data, format="multipart")


@pytest.mark.parametrize("client_fixture", ["token_client", "session_client"])
def test_it_ingests_as_a_job_and_reports_it(request, client_fixture, django_capture_on_commit_callbacks):
    client = request.getfixturevalue(client_fixture)
    response = _post(
        client,
        django_capture_on_commit_callbacks,
        "octobench-instances",
        ("part1.jsonl", _instances_jsonl("t-1", "t-2")),
        ("part2.jsonl", _instances_jsonl("t-3")),
    )
    assert response.status_code == 202
    body = response.json()
    job = Job.objects.get()
    assert body["id"] == str(job.id) and body["state"] == "queued"  # the job starts once the upload commits
    assert body["url"] == f"http://testserver/api/jobs/{job.id}/" == response["Location"]
    status = client.get(body["url"]).json()
    assert status["state"] == "succeeded" and status["format"] == "octobench-instances"
    assert status["file_names"] == ["part1.jsonl", "part2.jsonl"]
    assert status["progress"]["percent"] == 100.0 and status["progress"]["done"] == status["progress"]["total"] > 0
    assert status["counts"]["by_kind"]["instances"] == {"created": 3}
    assert status["errors"] == [] and status["error_count"] == 0 and status["finished_at"]
    assert status["created_by"] == "editor"
    assert Instance.objects.count() == 3


def test_it_reports_problems_of_a_bad_file_in_the_job(token_client, django_capture_on_commit_callbacks):
    response = _post(
        token_client,
        django_capture_on_commit_callbacks,
        "octobench-instances",
        ("bad.jsonl", _instances_jsonl("t-1") + b"not json\n"),
    )
    assert response.status_code == 202
    status = token_client.get(response.json()["url"]).json()
    assert status["state"] == "failed"
    assert status["error_count"] == 1 and status["errors"][0].startswith("bad.jsonl:2: not valid JSON")
    assert "nothing was stored" in status["message"]
    assert Instance.objects.count() == 0


def test_it_rejects_an_unknown_format_with_a_clear_message(token_client):
    response = token_client.post(
        "/api/ingest/", {"format": "octobench", "files": [SimpleUploadedFile("a.jsonl", b"{}")]}, format="multipart"
    )
    assert response.status_code == 400
    message = response.json()["format"][0]
    assert message.startswith('"octobench" is not an ingest format; use one of: octobench-instances,')
    assert Job.objects.count() == 0


def test_it_requires_files_and_valid_options(token_client):
    response = token_client.post(
        "/api/ingest/",
        {"format": "octobench-instances", "repetition": "0", "benchmark": "not a slug"},
        format="multipart",
    )
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {"files", "repetition", "benchmark"}
    assert Job.objects.count() == 0


def test_it_rejects_uploads_over_the_limit(token_client, settings):
    settings.IFPORTAL_MAX_UPLOAD_BYTES = 10
    response = token_client.post(
        "/api/ingest/", {"format": "native", "files": [SimpleUploadedFile("a.jsonl", b"x" * 11)]}, format="multipart"
    )
    assert response.status_code == 400 and "at most 10" in response.json()["files"][0]


def test_it_refuses_anonymous_callers():
    client = APIClient()
    for method, url in [
        ("post", "/api/ingest/"),
        ("get", "/api/jobs/"),
        ("get", "/api/benchmarks/"),
        ("get", "/api/runs/"),
        ("get", "/api/attempts/"),
        ("get", f"/api/jobs/{Job().id}/"),
    ]:
        assert getattr(client, method)(url).status_code in (401, 403), url
    assert APIClient(HTTP_AUTHORIZATION="Token wrong").get("/api/runs/").status_code in (401, 403)


def test_it_answers_404_for_an_unknown_job(token_client):
    assert token_client.get(f"/api/jobs/{Job().id}/").status_code == 404


def test_it_shows_live_progress_of_a_running_job(token_client):
    from runs.jobs import ProgressReporter, job_create

    job = job_create(kind="ingest", params={"format": "native", "options": {}})
    Job.objects.filter(pk=job.pk).update(state=JobState.RUNNING)
    ProgressReporter(job.id)(1, 3)
    body = token_client.get(f"/api/jobs/{job.id}/").json()
    assert body["state"] == "running" and body["progress"] == {"done": 1, "total": 3, "percent": 33.33, "unit": "bytes"}


@pytest.fixture
def study(token_client, django_capture_on_commit_callbacks):
    """Two benchmarks; octobench has runs of two models, one with trajectories."""
    cap = django_capture_on_commit_callbacks
    _post(token_client, cap, "octobench-instances", ("i.jsonl", _instances_jsonl("t-1", "t-2")))
    _post(token_client, cap, "octobench-instances", ("j.jsonl", _instances_jsonl("u-1")), benchmark="octo-lite")
    _post(token_client, cap, "octobench-scores", ("s.json", _scores_json("t-1", "t-2")), model="model-a", judge="j1")
    _post(token_client, cap, "octobench-scores", ("s.json", _scores_json("t-1")), model="model-b", judge="j1")
    _post(
        token_client,
        cap,
        "octobench-scores",
        ("s.json", _scores_json("u-1")),
        model="model-a",
        judge="j1",
        benchmark="octo-lite",
    )
    _post(token_client, cap, "octobench-trajectories", ("t.jsonl", _trajectory_jsonl("t-1", "model-a")))
    assert set(Job.objects.values_list("state", flat=True)) == {"succeeded"}


def test_it_lists_benchmarks_with_counts(token_client, study):
    body = token_client.get("/api/benchmarks/").json()
    assert body["count"] == 2
    rows = {b["slug"]: b for b in body["results"]}
    assert (rows["octobench"]["n_instances"], rows["octobench"]["n_runs"], rows["octobench"]["kind"]) == (
        2,
        2,
        "checklist",
    )
    assert (rows["octo-lite"]["n_instances"], rows["octo-lite"]["n_runs"]) == (1, 1)


def test_it_filters_runs_by_benchmark_and_model(token_client, study):
    all_runs = token_client.get("/api/runs/").json()
    assert all_runs["count"] == 3
    rows = token_client.get("/api/runs/?benchmark=octobench").json()["results"]
    assert [(r["label"], r["model"], r["n_attempts"]) for r in rows] == [
        ("model-a", "model-a", 2),
        ("model-b", "model-b", 1),
    ]
    rows = token_client.get("/api/runs/?model=model-a").json()["results"]
    assert sorted(r["benchmark"] for r in rows) == ["octo-lite", "octobench"]
    assert token_client.get("/api/runs/?benchmark=nope").json()["count"] == 0


def test_it_filters_attempts_and_leaves_trajectories_out(token_client, study):
    rows = token_client.get("/api/attempts/?benchmark=octobench&run=model-a").json()["results"]
    assert [r["instance"] for r in rows] == ["t-1", "t-2"]
    with_trajectory = rows[0]
    assert with_trajectory["message_count"] == 2 and with_trajectory["trajectory_bytes"] > 0
    assert (
        with_trajectory["response"] == "Done."
        and "threads" not in with_trajectory
        and "trajectory" not in with_trajectory
    )
    assert rows[1]["message_count"] is None
    rows = token_client.get("/api/attempts/?instance=t-1").json()["results"]
    assert sorted(r["run"] for r in rows) == ["model-a", "model-b"]
    assert token_client.get("/api/attempts/?run=model-a").json()["count"] == 3


def test_it_pages_lists(token_client, study):
    body = token_client.get("/api/attempts/?limit=2&offset=2").json()
    assert body["count"] == 4 and len(body["results"]) == 2 and body["previous"]


def _query_count(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


@pytest.mark.parametrize("url", ["/api/benchmarks/", "/api/runs/", "/api/attempts/", "/api/jobs/"])
def test_it_lists_in_a_constant_number_of_queries(token_client, django_capture_on_commit_callbacks, url):
    cap = django_capture_on_commit_callbacks
    _post(token_client, cap, "octobench-instances", ("i.jsonl", _instances_jsonl("t-1", "t-2", "t-3")))
    _post(token_client, cap, "octobench-scores", ("s.json", _scores_json("t-1")), model="m-1", judge="j1")
    small = _query_count(token_client, url)
    _post(token_client, cap, "octobench-instances", ("i.jsonl", _instances_jsonl("u-1", "u-2")), benchmark="other")
    for n in range(2, 5):
        _post(
            token_client,
            cap,
            "octobench-scores",
            ("s.json", _scores_json("t-1", "t-2", "t-3")),
            model=f"m-{n}",
            judge="j1",
        )
    _post(token_client, cap, "octobench-trajectories", ("t.jsonl", _trajectory_jsonl("t-2", "m-2")))
    assert Trajectory.objects.count() == 1
    assert _query_count(token_client, url) == small


def test_it_publishes_the_openapi_schema(session_client):
    response = session_client.get("/api/schema/?format=json")
    assert response.status_code == 200
    paths = json.loads(response.content)["paths"]
    for path in ("/api/ingest/", "/api/jobs/{id}/", "/api/benchmarks/", "/api/runs/", "/api/attempts/"):
        assert path in paths
    assert "multipart/form-data" in paths["/api/ingest/"]["post"]["requestBody"]["content"]
    assert {p["name"] for p in paths["/api/runs/"]["get"]["parameters"]} >= {"benchmark", "model", "limit", "offset"}


def test_it_generates_the_schema_without_warnings_for_these_endpoints(capsys):
    from drf_spectacular.drainage import GENERATOR_STATS

    GENERATOR_STATS.reset()
    call_command("spectacular", "--file", "/dev/null", "--urlconf", "runs.api.urls")
    assert not GENERATOR_STATS, capsys.readouterr().err


def test_it_creates_tokens_from_the_command_line(reviewer):
    call_command("drf_create_token", "reviewer")
    key = Token.objects.get(user=reviewer).key
    assert APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/benchmarks/").status_code == 200


def test_it_refuses_an_oversized_body_before_reading_it(token_client, settings):
    settings.IFPORTAL_MAX_UPLOAD_BYTES = 10
    big = SimpleUploadedFile("a.jsonl", b"x" * (200 * 1024))
    response = token_client.post("/api/ingest/", {"format": "native", "files": [big]}, format="multipart")
    assert response.status_code == 413 and "at most 10" in response.json()["files"][0]
    assert Job.objects.count() == 0


def test_it_takes_an_empty_file_for_the_format_to_judge(token_client, django_capture_on_commit_callbacks):
    # an EvolIF log is empty when the model call failed at turn 1: the upload passes it to the ingest
    harness = Path(__file__).resolve().parents[1] / "fixtures" / "evolif" / "harness"
    dialogs = [(p.name, p.read_bytes()) for p in sorted((harness / "dialog").glob("dialog_*.jsonl"))]
    assert _post(token_client, django_capture_on_commit_callbacks, "evolif-dialogs", *dialogs).status_code == 202
    logs = [(p.name, p.read_bytes()) for p in sorted((harness / "pass1").glob("eval_*.jsonl"))]
    assert logs[-1] == ("eval_4.jsonl", b"")
    response = _post(token_client, django_capture_on_commit_callbacks, "evolif-eval", *logs, model="fake-model")
    status = token_client.get(response.json()["url"]).json()
    assert status["state"] == "succeeded" and status["counts"]["by_kind"]["attempts"] == {"created": 4}
    # a format with no meaning for an empty file still says so, naming it
    response = _post(token_client, django_capture_on_commit_callbacks, "octobench-instances", ("empty.jsonl", b""))
    status = token_client.get(response.json()["url"]).json()
    assert status["state"] == "failed" and status["errors"] == ["empty.jsonl: the file is empty"]


# a results folder in one upload ------------------------------------------------------------
def test_it_ingests_a_results_folder_by_its_paths(token_client, django_capture_on_commit_callbacks):
    from runs.models import Benchmark, Run, Verdict

    _post(
        token_client,
        django_capture_on_commit_callbacks,
        "octobench-instances",
        ("i.jsonl", _instances_jsonl("t-1", "t-2")),
        benchmark="study-x",
        name="Study X",
    )
    scores = _scores_json("t-1", "t-2")
    paths = ["gpt-a/rep1/scores_judge-1.json", "gpt-a/rep2/scores_judge-1.json", "gpt-b/rep1/scores_judge-2.json"]
    data = {
        "format": "octobench-scores",
        "benchmark": "study-x",
        "paths": paths,
        "files": [SimpleUploadedFile("scores.json", scores) for _ in paths],
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = token_client.post("/api/ingest/", data, format="multipart")

    status = token_client.get(response.json()["url"]).json()
    assert status["state"] == "succeeded", status["errors"]
    assert status["file_names"] == paths
    assert Benchmark.objects.get(slug="study-x").name == "Study X"
    assert sorted(Run.objects.values_list("label", "repetition")) == [("gpt-a-r1", 1), ("gpt-a-r2", 2), ("gpt-b-r1", 1)]
    assert Verdict.objects.filter(attempt__run__label="gpt-b-r1", judge__name="judge-2").count() == 2


def test_it_reads_an_uploaded_manifest_and_refuses_paths_that_do_not_fit(
    token_client, django_capture_on_commit_callbacks
):
    from runs.models import Run

    _post(token_client, django_capture_on_commit_callbacks, "octobench-instances", ("i.jsonl", _instances_jsonl("t-1")))
    manifest = json.dumps(
        {
            "files": [
                {"path": "a.json", "model": "m-1", "judge": "j-1"},
                {"path": "b.json", "model": "m-2", "judge": "j-1", "repetition": 3},
            ]
        }
    ).encode()
    response = _post(
        token_client,
        django_capture_on_commit_callbacks,
        "octobench-scores",
        ("a.json", _scores_json("t-1")),
        ("b.json", _scores_json("t-1")),
        ("ifportal-import.json", manifest),
    )
    status = token_client.get(response.json()["url"]).json()
    assert status["state"] == "succeeded", status["errors"]
    assert sorted(Run.objects.values_list("label", "model__name")) == [("m-1", "m-1"), ("m-2-r3", "m-2")]

    bad = _post(
        token_client,
        django_capture_on_commit_callbacks,
        "octobench-scores",
        ("a.json", _scores_json("t-1")),
        ("ifportal-import.json", b'{"files": [{"path": "a.json", "x": 1}]}'),
    )
    # refused before a job exists: a retry of such a job would fail the same way
    assert bad.status_code == 400 and Job.objects.count() == 2
    assert bad.json() == {
        "files": [
            "ifportal-import.json: files[1] has unknown field(s) x; a file may set model, run, "
            "judge, repetition, scaffold"
        ]
    }
    for paths in (["a.json", "b.json"], ["../a.json"], ["/etc/a.json"]):
        response = token_client.post(
            "/api/ingest/",
            {"format": "octobench-scores", "paths": paths, "files": [SimpleUploadedFile("a.json", b"{}")]},
            format="multipart",
        )
        assert response.status_code == 400 and "paths" in response.json()


def test_a_new_slug_never_takes_an_existing_benchmark_name(token_client, django_capture_on_commit_callbacks):
    from runs.models import Benchmark

    _post(token_client, django_capture_on_commit_callbacks, "octobench-instances", ("i.jsonl", _instances_jsonl("t-1")))
    _post(
        token_client,
        django_capture_on_commit_callbacks,
        "octobench-instances",
        ("i.jsonl", _instances_jsonl("t-1")),
        benchmark="octobench-v2",
    )
    assert dict(Benchmark.objects.values_list("slug", "name")) == {
        "octobench": "OctoBench",
        "octobench-v2": "OctoBench (octobench-v2)",
    }
    taken = _post(
        token_client,
        django_capture_on_commit_callbacks,
        "octobench-instances",
        ("i.jsonl", _instances_jsonl("t-1")),
        benchmark="octobench-v3",
        name="octobench",
    )
    status = token_client.get(taken.json()["url"]).json()
    assert status["state"] == "failed"
    assert (
        "benchmark 'octobench' is already named 'OctoBench': give the benchmark 'octobench-v3' another name"
        in status["errors"][0]
    )
    assert not Benchmark.objects.filter(slug="octobench-v3").exists()
