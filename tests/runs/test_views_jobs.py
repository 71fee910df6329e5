"""Import page, job page (live progress by htmx polling, retry) and the jobs list."""

import json
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django.utils.html import escape

from runs.forms import FORMAT_DESCRIPTIONS
from runs.ingest import FORMATS
from runs.jobs import HEARTBEAT_STALE_SECONDS, ProgressReporter, job_create
from runs.models import Benchmark, ChecklistItem, Instance, Job, JobState, Verdict

pytestmark = pytest.mark.django_db


def _instances_jsonl(*ids: str) -> bytes:
    records = [
        {
            "instance_id": i,
            "user_query": ["Explain partition()"],
            "category": "Claude.md",
            "checklist": {
                "SP": {
                    "description": "System prompt",
                    "checks": [
                        {"check_id": "SP-1", "description": "no emoji", "check_type": "compliance"},
                        {"check_id": "SP-2", "description": "answer in Chinese", "check_type": "compliance"},
                    ],
                }
            },
        }
        for i in ids
    ]
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def _scores_json(*ids: str) -> bytes:
    return json.dumps(
        {
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
                for i in ids
            ]
        }
    ).encode()


def _upload(client, django_capture_on_commit_callbacks, fmt: str, *files: tuple[str, bytes], **options):
    data = {"format": fmt, "files": [SimpleUploadedFile(name, content) for name, content in files], **options}
    with django_capture_on_commit_callbacks(execute=True):
        return client.post("/import/", data)


def test_it_offers_every_format_with_a_description(editor_client):
    content = editor_client.get("/import/").content.decode()
    assert set(FORMAT_DESCRIPTIONS) == set(FORMATS)
    for name in FORMATS:
        assert f'value="{name}"' in content
        assert escape(FORMAT_DESCRIPTIONS[name]) in content
    assert 'enctype="multipart/form-data"' in content and "multiple" in content


def test_it_sends_anonymous_visitors_to_login(client):
    for url in ("/import/", "/jobs/", f"/jobs/{Job().id}/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), url


def test_it_imports_a_valid_instances_file(editor_client, editor, django_capture_on_commit_callbacks):
    response = _upload(
        editor_client,
        django_capture_on_commit_callbacks,
        "octobench-instances",
        ("instances.jsonl", _instances_jsonl("task-1", "task-2")),
    )
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.id}/"
    assert job.state == JobState.SUCCEEDED and job.created_by == editor
    assert job.params == {"format": "octobench-instances", "options": {}, "surface": "form"}
    assert job.counts["by_kind"]["instances"] == {"created": 2}
    assert job.counts["by_kind"]["checklist items"] == {"created": 4}
    assert Instance.objects.count() == 2 and ChecklistItem.objects.count() == 4
    [stored] = job.files
    assert stored["name"] == "instances.jsonl"
    assert Path(stored["path"]).read_bytes() == _instances_jsonl("task-1", "task-2")
    page = editor_client.get(response["Location"]).content.decode()
    assert "badge-succeeded" in page and "100.00%" in page and "checklist items" in page
    assert 'hx-trigger="every 1s"' not in page


def test_it_passes_the_options_to_the_ingest(editor_client, django_capture_on_commit_callbacks):
    _upload(
        editor_client,
        django_capture_on_commit_callbacks,
        "octobench-instances",
        ("instances.jsonl", _instances_jsonl("task-1")),
    )
    _upload(
        editor_client,
        django_capture_on_commit_callbacks,
        "octobench-scores",
        ("scores.json", _scores_json("task-1")),
        model="model-a",
        judge="judge-x",
        run="a-rep2",
        repetition="2",
    )
    job = Job.objects.order_by("-created_at").first()
    assert job.state == JobState.SUCCEEDED, job.errors
    assert job.params["options"] == {"model": "model-a", "judge": "judge-x", "run": "a-rep2", "repetition": 2}
    assert (
        Verdict.objects.filter(attempt__run__label="a-rep2", attempt__run__repetition=2, judge__name="judge-x").count()
        == 2
    )


def test_it_fails_a_bad_file_with_file_line_errors_and_stores_nothing(
    editor_client, django_capture_on_commit_callbacks
):
    bad = _instances_jsonl("task-1") + b'{"instance_id": "task-2", "checklist": \n' + b'{"checklist": {}}\n'
    response = _upload(editor_client, django_capture_on_commit_callbacks, "octobench-instances", ("bad.jsonl", bad))
    job = Job.objects.get()
    assert job.state == JobState.FAILED
    assert job.error_count == 2
    assert job.errors[0].startswith("bad.jsonl:2: not valid JSON")
    assert job.errors[1] == "bad.jsonl:3: missing required field 'instance_id'"
    assert Benchmark.objects.count() == 0 and Instance.objects.count() == 0
    page = editor_client.get(response["Location"]).content.decode()
    assert "badge-failed" in page and "bad.jsonl:2: not valid JSON" in page and "nothing was stored" in page
    # the valid first line was read, but nothing of it was stored: no "created" beside the failure
    assert job.counts == {}
    assert "created" not in page.split('id="job-status"')[1]
    api = editor_client.get(f"/api/jobs/{job.id}/").json()
    assert api["counts"] == {} and "nothing was stored" in api["message"]


def test_it_rejects_files_over_the_size_limit(editor_client, settings, django_capture_on_commit_callbacks):
    settings.IFPORTAL_MAX_UPLOAD_BYTES = 100
    response = _upload(
        editor_client,
        django_capture_on_commit_callbacks,
        "octobench-instances",
        ("a.jsonl", b"x" * 60),
        ("b.jsonl", b"y" * 60),
    )
    assert response.status_code == 400
    assert "one import takes at most 100" in response.content.decode()
    assert Job.objects.count() == 0


def test_it_asks_for_a_format_and_files(editor_client):
    response = editor_client.post("/import/", {"format": "no-such-format"})
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert "format" in errors and errors["files"] == ["This field is required."]
    assert Job.objects.count() == 0


def _job(state: str, **fields) -> Job:
    job = job_create(kind="ingest", params={"format": "octobench-instances", "options": {}})
    Job.objects.filter(pk=job.pk).update(state=state, **fields)
    job.refresh_from_db()
    return job


def test_it_polls_a_running_job_every_second_with_live_progress(editor_client):
    job = _job(JobState.RUNNING, progress_total=400)
    ProgressReporter(job.id)(100, 400)
    response = editor_client.get(f"/jobs/{job.id}/", HTTP_HX_REQUEST="true")
    content = response.content.decode()
    assert "<html" not in content and 'id="job-status"' in content
    assert f'hx-get="/jobs/{job.id}/"' in content and 'hx-trigger="every 1s"' in content
    assert "25.00%" in content and "100\xa0bytes of 400\xa0bytes" in content


def test_it_stops_polling_once_the_job_has_finished(editor_client):
    job = _job(
        JobState.SUCCEEDED,
        progress_done=400,
        progress_total=400,
        counts={"created": 3, "by_kind": {"instances": {"created": 3}}},
    )
    content = editor_client.get(f"/jobs/{job.id}/", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in content and 'id="job-status"' in content
    assert "hx-trigger" not in content and "hx-get" not in content
    assert "100.00%" in content


def test_it_serves_the_whole_page_without_htmx(editor_client):
    job = _job(JobState.QUEUED)
    content = editor_client.get(f"/jobs/{job.id}/").content.decode()
    assert "<html" in content and 'hx-trigger="every 1s"' in content and "waiting for a worker" in content


def test_it_answers_404_for_an_unknown_job(editor_client):
    assert editor_client.get(f"/jobs/{Job().id}/").status_code == 404


def test_it_retries_a_failed_job(editor_client, django_capture_on_commit_callbacks):
    # scores before their instances: the job fails, then succeeds once the instances are in
    _upload(
        editor_client,
        django_capture_on_commit_callbacks,
        "octobench-scores",
        ("scores.json", _scores_json("task-1")),
        model="model-a",
        judge="judge-x",
    )
    job = Job.objects.get()
    assert job.state == JobState.FAILED and "does not exist" in job.errors[0]
    page = editor_client.get(f"/jobs/{job.id}/").content.decode()
    assert f'action="/jobs/{job.id}/retry/"' in page
    _upload(
        editor_client,
        django_capture_on_commit_callbacks,
        "octobench-instances",
        ("instances.jsonl", _instances_jsonl("task-1")),
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = editor_client.post(f"/jobs/{job.id}/retry/")
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.id}/"
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and job.attempts_made == 2 and job.errors == []
    assert Verdict.objects.count() == 2


def test_it_lets_only_the_starter_retry(editor_client, outsider, django_capture_on_commit_callbacks):
    _upload(
        editor_client,
        django_capture_on_commit_callbacks,
        "octobench-scores",
        ("scores.json", _scores_json("task-1")),
        model="model-a",
        judge="judge-x",
    )
    job = Job.objects.get()
    other = Client()
    other.force_login(outsider)
    assert 'retry/"' not in other.get(f"/jobs/{job.id}/").content.decode()
    assert other.post(f"/jobs/{job.id}/retry/").status_code == 403
    job.refresh_from_db()
    assert job.state == JobState.FAILED and job.attempts_made == 1


def test_it_does_not_retry_a_succeeded_job(editor_client, editor):
    job = _job(JobState.SUCCEEDED, created_by=editor)
    assert editor_client.post(f"/jobs/{job.id}/retry/").status_code == 403
    assert editor_client.get(f"/jobs/{job.id}/retry/").status_code == 405


def test_it_lists_recent_jobs_with_state_and_who(editor_client, editor):
    done = _job(
        JobState.SUCCEEDED, created_by=editor, counts={"created": 7, "updated": 0, "unchanged": 1, "rejected": 0}
    )
    _job(JobState.FAILED, error_count=3)
    response = editor_client.get("/jobs/")
    content = response.content.decode()
    assert f"/jobs/{done.id}/" in content and "badge-succeeded" in content and "badge-failed" in content
    assert "editor" in content
    assert 'hx-trigger="every 2s"' not in content  # nothing is running
    failed_only = editor_client.get("/jobs/?state=failed").context["jobs"]
    assert [j.state for j in failed_only] == ["failed"]


def test_it_refreshes_the_jobs_table_while_a_job_runs(editor_client):
    _job(JobState.RUNNING)
    response = editor_client.get("/jobs/", HTTP_HX_REQUEST="true")
    content = response.content.decode()
    assert "<html" not in content and 'id="jobs-table"' in content and 'hx-trigger="every 2s"' in content


def test_it_lists_jobs_in_a_constant_number_of_queries(editor_client, django_user_model):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            editor_client.get("/jobs/")
        return len(queries)

    users = [django_user_model.objects.create_user(f"user{n}") for n in range(4)]
    _job(JobState.SUCCEEDED, created_by=users[0])
    small = count()
    for user in users:
        _job(JobState.FAILED, created_by=user)
    assert count() == small


def test_it_links_the_import_page_to_the_jobs(editor_client, editor):
    job = _job(JobState.SUCCEEDED, created_by=editor)
    content = editor_client.get("/import/").content.decode()
    assert 'href="/jobs/"' in content and f'href="/jobs/{job.id}/"' in content


def test_the_page_takes_a_benchmark_name_and_a_manifest_among_the_files(
    editor_client, django_capture_on_commit_callbacks
):
    from runs.models import Run

    _upload(
        editor_client,
        django_capture_on_commit_callbacks,
        "octobench-instances",
        ("instances.jsonl", _instances_jsonl("task-1")),
        benchmark="octo-team",
        name="OctoBench, team run",
    )
    manifest = json.dumps(
        {
            "files": [
                {"path": "s1.json", "model": "model-a", "judge": "judge-x"},
                {"path": "s2.json", "model": "model-b", "judge": "judge-x", "repetition": 2},
            ]
        }
    )
    _upload(
        editor_client,
        django_capture_on_commit_callbacks,
        "octobench-scores",
        ("s1.json", _scores_json("task-1")),
        ("s2.json", _scores_json("task-1")),
        ("ifportal-import.json", manifest.encode()),
        benchmark="octo-team",
    )

    job = Job.objects.order_by("-created_at").first()
    assert job.state == JobState.SUCCEEDED, job.errors
    assert Benchmark.objects.get(slug="octo-team").name == "OctoBench, team run"
    assert sorted(Run.objects.values_list("label", "repetition")) == [("model-a", 1), ("model-b-r2", 2)]


def test_a_recheck_job_page_shows_what_it_created_not_nothing_changed(editor_client):
    job = job_create(kind="recheck", params={"run_ids": []})
    Job.objects.filter(pk=job.pk).update(
        state=JobState.SUCCEEDED,
        message="m1: 3 constraint verdicts checked",
        counts={
            "checked": 3,
            "created": 4,
            "updated": 0,
            "unchanged": 0,
            "removed": 0,
            "by_kind": {"verdicts": {"created": 4}},
        },
    )
    page = editor_client.get(f"/jobs/{job.id}/").content.decode()
    assert "Nothing changed" not in page and "m1: 3 constraint verdicts checked" in page
    assert '<span class="stat-value num">4</span><span class="stat-label">created</span>' in page
    Job.objects.filter(pk=job.pk).update(
        counts={"checked": 3, "created": 0, "updated": 0, "unchanged": 4, "removed": 0}
    )
    page = editor_client.get(f"/jobs/{job.id}/").content.decode()
    assert "Nothing changed: every verdict it wrote was already stored." in page


def test_a_running_job_whose_worker_stopped_beating_shows_as_failed_and_can_be_retried(editor_client, editor):
    started = timezone.now() - timedelta(seconds=HEARTBEAT_STALE_SECONDS + 30)
    lost = _job(JobState.RUNNING, started_at=started, created_by=editor)
    alive = _job(JobState.RUNNING, started_at=started, created_by=editor)
    cache.set(f"ifportal:job:{alive.id}:heartbeat", time.time(), timeout=60)  # its worker beat just now

    listed = editor_client.get("/jobs/").content.decode()
    page = editor_client.get(f"/jobs/{lost.id}/").content.decode()
    api = editor_client.get(f"/api/jobs/{lost.id}/").json()

    lost.refresh_from_db()
    alive.refresh_from_db()
    assert lost.state == JobState.FAILED and alive.state == JobState.RUNNING
    assert "The worker running this job stopped before it finished" in page
    assert f'action="/jobs/{lost.id}/retry/"' in page
    assert api["state"] == "failed" and "worker lost" in api["errors"][0]
    assert listed.count("badge-failed") == 1 and listed.count("badge-running") == 1


def test_a_running_job_with_a_recent_heartbeat_is_left_running(editor_client):
    job = _job(JobState.RUNNING, started_at=timezone.now())  # started now: no beat yet is not a lost worker
    assert editor_client.get(f"/api/jobs/{job.id}/").json()["state"] == "running"
    job.refresh_from_db()
    assert job.state == JobState.RUNNING


def test_a_running_recheck_counts_attempts_checked_not_bytes_and_offers_no_import(reviewer_client):
    job = job_create(kind="recheck", params={"run_ids": []})
    Job.objects.filter(pk=job.pk).update(state=JobState.RUNNING, started_at=timezone.now())
    ProgressReporter(job.id)(3, 8)
    page = reviewer_client.get(f"/jobs/{job.id}/").content.decode()
    api = reviewer_client.get(f"/api/jobs/{job.id}/").json()
    assert "3 of 8 attempts checked" in page and "bytes" not in page.split('id="job-status"')[1]
    assert "New import" not in page
    assert api["progress"] == {"done": 3, "total": 8, "percent": 37.5, "unit": "attempts checked"}
