"""Home page: benchmarks and runs with their counts, the empty state, login, query count."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.ingest import Options, Source, ingest

pytestmark = pytest.mark.django_db


def _instance(instance_id: str, checks: int = 2) -> dict:
    return {
        "instance_id": instance_id,
        "user_query": ["Explain partition()"],
        "system_prompt": "",
        "category": "Claude.md",
        "scaffold": {"name": "claudecode", "version": "2.0"},
        "checklist": {
            "SP": {
                "description": "System prompt",
                "checks": [
                    {"check_id": f"SP-{n}", "description": f"check {n}", "check_type": "compliance"}
                    for n in range(1, checks + 1)
                ],
            }
        },
    }


def _ingest_study(tmp_path, *, runs: list[tuple[str, str]], instances=("task-1", "task-2"), benchmark=None) -> None:
    """OctoBench instances, then one scores file per (model, judge), through the real ingest."""
    path = tmp_path / f"instances-{benchmark or 'octobench'}.jsonl"
    path.write_text("".join(json.dumps(_instance(i)) + "\n" for i in instances))
    ingest("octobench-instances", [Source.of(path)], Options(benchmark=benchmark))
    for n, (model, judge) in enumerate(runs):
        scores = {
            "results": [
                {
                    "instance_id": i,
                    "eval_result": {
                        "SP": {
                            "checks": [
                                {"check_id": "SP-1", "result": "success"},
                                {"check_id": "SP-2", "result": "fail"},
                            ]
                        }
                    },
                }
                for i in instances
            ]
        }
        spath = tmp_path / f"scores-{benchmark or 'octobench'}-{n}.json"
        spath.write_text(json.dumps(scores))
        ingest("octobench-scores", [Source.of(spath)], Options(benchmark=benchmark, model=model, judge=judge))


def test_it_sends_anonymous_visitors_to_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=/")


def test_it_shows_a_finished_login_page(client):
    response = client.get("/login/")
    assert response.status_code == 200
    assert b"Sign in to ifportal" in response.content
    assert b'name="password"' in response.content


def test_it_logs_in_and_lands_on_home(client, reviewer):
    response = client.post("/login/", {"username": "reviewer", "password": "pw-reviewer-1"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_it_shows_an_empty_state_that_links_to_import_and_demo(editor_client):
    response = editor_client.get("/")
    content = response.content.decode()
    assert "Nothing imported yet" in content
    assert 'href="/import/"' in content
    assert "python manage.py demo" in content


def test_it_lists_benchmarks_and_runs_with_counts(reviewer_client, tmp_path):
    _ingest_study(tmp_path, runs=[("model-a", "judge-x"), ("model-a", "judge-y"), ("model-b", "judge-x")])
    response = reviewer_client.get("/")
    overview = response.context["overview"]
    [bench] = overview.benchmarks
    assert (bench.slug, bench.kind, bench.n_instances, bench.n_items, bench.n_runs) == (
        "octobench",
        "checklist",
        2,
        4,
        2,
    )
    # 2 runs x 2 attempts; verdicts: model-a 2 judges x 2 attempts x 2 items, model-b 1 judge x 4
    assert (bench.n_attempts, bench.n_verdicts, bench.judges) == (4, 12, ["judge-x", "judge-y"])
    runs = {r.label: r for r in overview.runs}
    assert (runs["model-a"].n_attempts, runs["model-a"].n_verdicts, runs["model-a"].judges) == (
        2,
        8,
        ["judge-x", "judge-y"],
    )
    assert (runs["model-b"].model, runs["model-b"].n_verdicts, runs["model-b"].judges) == ("model-b", 4, ["judge-x"])
    content = response.content.decode()
    assert "badge-kind-checklist" in content and "model-b" in content
    assert "Nothing imported yet" not in content


def test_it_says_when_a_benchmark_has_no_runs_yet(reviewer_client, tmp_path):
    _ingest_study(tmp_path, runs=[])
    content = reviewer_client.get("/").content.decode()
    assert "No runs yet" in content


def test_it_escapes_names_from_files(reviewer_client, tmp_path):
    _ingest_study(tmp_path, runs=[("<script>alert(1)</script>", "judge-x")])
    content = reviewer_client.get("/").content.decode()
    assert "<script>alert(1)</script>" not in content
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in content


def test_it_keeps_the_query_count_flat_as_runs_grow(reviewer_client, tmp_path):
    _ingest_study(tmp_path, runs=[("model-a", "judge-x")])
    reviewer_client.get("/")  # warm the session
    with CaptureQueriesContext(connection) as small:
        reviewer_client.get("/")
    _ingest_study(tmp_path, runs=[("model-b", "judge-x"), ("model-c", "judge-y"), ("model-d", "judge-z")])
    _ingest_study(tmp_path, runs=[("model-a", "judge-x")], benchmark="octobench-v2", instances=("t-9",))
    with CaptureQueriesContext(connection) as large:
        response = reviewer_client.get("/")
    assert len(response.context["overview"].runs) == 5
    assert len(large) == len(small)
    assert len(large) <= 8  # user + their roles (runs.access: blind or not) + six overview queries


def test_it_links_a_benchmark_only_to_a_page_that_exists(reviewer_client, tmp_path):
    from runs.models import Benchmark

    _ingest_study(tmp_path, runs=[])
    Benchmark.objects.create(slug="odd", name="Odd one", kind="no-such-kind")
    rows = {b.slug: b for b in reviewer_client.get("/").context["overview"].benchmarks}
    assert rows["odd"].url is None
    if rows["octobench"].url is not None:
        assert reviewer_client.get(rows["octobench"].url).status_code == 200
