"""manage.py uploads_clean: --days N keeps N days of finished jobs' uploads, and 0 keeps none of them (the jobs that
are queued or running keep theirs, and an upload folder whose job is not committed yet is never taken for an
orphan); the retention setting's 0 keeps every upload."""

import io
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from runs import jobs
from runs.models import Job, JobState


def _job_with_upload(state: str, *, finished_ago: timedelta | None) -> Job:
    job = jobs.job_create(kind="ingest", params={"format": "native", "options": {}})
    upload = jobs.upload_dir(job.id) / "01-a.jsonl"
    upload.write_bytes(b"{}\n")
    Job.objects.filter(pk=job.pk).update(
        files=[{"path": str(upload), "name": "a.jsonl"}],
        state=state,
        finished_at=None if finished_ago is None else timezone.now() - finished_ago,
    )
    return job


def _orphan(settings, name: str, age: timedelta) -> Path:
    folder = Path(settings.MEDIA_ROOT) / "uploads" / name
    folder.mkdir(parents=True)
    os.utime(folder, (time.time() - age.total_seconds(),) * 2)
    return folder


def _clean(*args) -> str:
    out = io.StringIO()
    call_command("uploads_clean", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_it_deletes_every_finished_jobs_uploads_with_days_0_and_keeps_those_a_job_still_needs(settings):
    settings.IFPORTAL_UPLOAD_RETENTION_DAYS = 7
    done = _job_with_upload(JobState.SUCCEEDED, finished_ago=timedelta(minutes=1))
    failed = _job_with_upload(JobState.FAILED, finished_ago=timedelta(seconds=1))
    running = _job_with_upload(JobState.RUNNING, finished_ago=None)
    queued = _job_with_upload(JobState.QUEUED, finished_ago=None)
    being_saved = _orphan(settings, "999999", timedelta(minutes=5))  # its job row commits after its files
    forgotten = _orphan(settings, "999998", jobs.ORPHAN_UPLOAD_MIN_AGE + timedelta(hours=1))

    assert _clean("--days", "0") == "removed the uploads of 3 job(s)\n"  # two jobs and the old orphan

    for job in (done, failed):
        job.refresh_from_db()
        assert job.files == [{"name": "a.jsonl", "removed": True}]
        assert not jobs.upload_dir(job.id).joinpath("01-a.jsonl").exists()
    for job in (running, queued):
        job.refresh_from_db()
        assert Path(job.files[0]["path"]).exists() and "removed" not in job.files[0]
    assert being_saved.exists() and not forgotten.exists()


@pytest.mark.django_db
def test_it_keeps_the_days_it_is_told_to(settings):
    settings.IFPORTAL_UPLOAD_RETENTION_DAYS = 7
    recent = _job_with_upload(JobState.SUCCEEDED, finished_ago=timedelta(days=1, hours=1))
    older = _job_with_upload(JobState.SUCCEEDED, finished_ago=timedelta(days=3))
    assert _clean("--days", "2") == "removed the uploads of 1 job(s)\n"
    assert jobs.upload_dir(recent.id).joinpath("01-a.jsonl").exists()
    assert not jobs.upload_dir(older.id).joinpath("01-a.jsonl").exists()


@pytest.mark.django_db
def test_it_refuses_a_negative_number_of_days_and_keeps_everything_when_the_setting_says_so(settings):
    settings.IFPORTAL_UPLOAD_RETENTION_DAYS = 0
    job = _job_with_upload(JobState.SUCCEEDED, finished_ago=timedelta(days=30))
    with pytest.raises(CommandError, match="days must be 0 or more"):
        _clean("--days", "-1")
    assert _clean() == "IFPORTAL_UPLOAD_RETENTION_DAYS is 0: uploads are kept (pass --days to delete some)\n"
    assert jobs.upload_dir(job.id).joinpath("01-a.jsonl").exists()
