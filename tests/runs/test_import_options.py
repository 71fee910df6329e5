"""An import's options are checked before a job exists, and its problems name an option as the place the
import came from does: the import page's field labels, the API's field names, the command line's flags."""

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from runs.ingest import IngestFailed, Options, Source, ingest
from runs.models import Job, JobState, Verdict

pytestmark = pytest.mark.django_db


def _instances(*ids: str) -> bytes:
    return "".join(
        json.dumps(
            {
                "instance_id": i,
                "checklist": {
                    "SP": {"checks": [{"check_id": "SP-1", "description": "no emoji", "check_type": "compliance"}]}
                },
            }
        )
        + "\n"
        for i in ids
    ).encode()


def _scores(*ids: str) -> bytes:
    return json.dumps(
        {
            "results": [
                {"instance_id": i, "eval_result": {"SP": {"checks": [{"check_id": "SP-1", "result": "success"}]}}}
                for i in ids
            ]
        }
    ).encode()


@pytest.fixture
def importer_client(editor_client, tmp_path) -> Client:
    """Someone who may import, with the octobench instance task-1 stored."""
    path = tmp_path / "instances.jsonl"
    path.write_bytes(_instances("task-1"))
    ingest("octobench-instances", [Source.of(path)], Options())
    return editor_client


def _post(client, url, django_capture_on_commit_callbacks, files, **fields):
    data = {"format": "octobench-scores", "files": [SimpleUploadedFile(n, c) for n, c in files], **fields}
    with django_capture_on_commit_callbacks(execute=True):
        return client.post(url, data)


def _uploads(settings) -> list[Path]:
    root = Path(settings.MEDIA_ROOT) / "uploads"
    return list(root.rglob("*")) if root.exists() else []


def test_the_page_refuses_scores_without_a_judge_at_once_in_its_own_words(
    importer_client, settings, django_capture_on_commit_callbacks
):
    response = _post(
        importer_client,
        "/import/",
        django_capture_on_commit_callbacks,
        [("scores.json", _scores("task-1"))],
        model="model-a",
    )

    assert response.status_code == 400
    [error] = response.context["form"].errors["judge"]
    assert "fill in the Judge field" in error and "scores_<judge>.json" in error
    assert "--judge" not in response.content.decode()
    assert not Job.objects.exists() and _uploads(settings) == []


def test_the_api_refuses_scores_without_a_model_at_once_in_its_own_words(
    importer_client, settings, django_capture_on_commit_callbacks
):
    response = _post(
        importer_client,
        "/api/ingest/",
        django_capture_on_commit_callbacks,
        [("scores_judge-x.json", _scores("task-1"))],
    )

    assert response.status_code == 400
    body = response.json()
    assert list(body) == ["model"] and "send the 'model' field" in body["model"][0] and "'run'" in body["model"][0]
    assert not Job.objects.exists() and _uploads(settings) == []


def test_a_judge_the_file_name_gives_needs_no_judge_field(importer_client, django_capture_on_commit_callbacks):
    response = _post(
        importer_client,
        "/import/",
        django_capture_on_commit_callbacks,
        [("scores_judge-x.json", _scores("task-1"))],
        model="model-a",
    )

    job = Job.objects.get()
    assert response.status_code == 302 and job.state == JobState.SUCCEEDED, job.errors
    assert Verdict.objects.filter(judge__name="judge-x").count() == 1


def test_a_manifest_that_fits_no_file_is_refused_before_a_job(importer_client, django_capture_on_commit_callbacks):
    manifest = json.dumps({"files": [{"path": "other.json", "judge": "j"}]}).encode()
    response = _post(
        importer_client,
        "/import/",
        django_capture_on_commit_callbacks,
        [("scores.json", _scores("task-1")), ("ifportal-import.json", manifest)],
        model="m",
        judge="j",
    )

    assert response.status_code == 400
    assert "other.json" in response.context["form"].errors["files"][0]
    assert not Job.objects.exists()


def test_a_job_names_the_options_as_its_page_does(importer_client, django_capture_on_commit_callbacks):
    _post(
        importer_client,
        "/import/",
        django_capture_on_commit_callbacks,
        [("scores.json", _scores("task-1"))],
        run="no-such-run",
        judge="judge-x",
    )

    job = Job.objects.get()
    assert job.state == JobState.FAILED
    assert job.errors == ["scores.json: run 'no-such-run' does not exist yet: fill in the Model field to create it"]


def test_the_command_line_keeps_its_flags(importer_client, tmp_path):
    path = tmp_path / "scores.json"
    path.write_bytes(_scores("task-1"))
    with pytest.raises(IngestFailed) as excinfo:
        ingest("octobench-scores", [Source.of(path)], Options(judge="judge-x"))
    assert "scores do not name the model: pass --model NAME (and --run LABEL" in str(excinfo.value)


def test_a_job_whose_own_files_were_refused_offers_no_retry(importer_client, django_capture_on_commit_callbacks):
    bad = _instances("task-2") + b'{"instance_id": "task-3", "checklist": \n'
    _post(
        importer_client,
        "/import/",
        django_capture_on_commit_callbacks,
        [("bad.jsonl", bad)],
        format="octobench-instances",
    )

    job = Job.objects.get()
    page = importer_client.get(f"/jobs/{job.id}/").content.decode()
    assert job.state == JobState.FAILED and not job.retry_may_fix
    assert "retry/" not in page and "Import the fixed files" in page and "fail the same way" in page
    assert importer_client.post(f"/jobs/{job.id}/retry/").status_code == 403
    assert importer_client.get(f"/api/jobs/{job.id}/").json()["retry_may_fix"] is False


def test_a_job_that_waits_for_another_import_offers_retry(importer_client, django_capture_on_commit_callbacks):
    _post(
        importer_client,
        "/import/",
        django_capture_on_commit_callbacks,
        [("scores.json", _scores("task-1"))],
        model="model-a",
        judge="judge-x",
        benchmark="octobench-v2",
    )

    job = Job.objects.get()
    assert job.state == JobState.FAILED and job.retry_may_fix, job.errors
    assert "benchmark 'octobench-v2' does not exist" in job.errors[0]
    assert f'action="/jobs/{job.id}/retry/"' in importer_client.get(f"/jobs/{job.id}/").content.decode()
