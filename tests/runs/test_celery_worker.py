"""Jobs on a real Celery worker over Redis, against PostgreSQL (skipped on the embedded default)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from runs import jobs
from runs.models import Instance, Job, JobState

from ..threads import redis_up, worker_database_url

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def worker(settings):
    if connection.vendor != "postgresql" or not redis_up():
        pytest.skip("needs PostgreSQL (DATABASE_URL) and Redis (CELERY_BROKER_URL)")
    url = worker_database_url()
    env = {**os.environ, "DATABASE_URL": url, "IFPORTAL_JOBS": "celery", "DB_CONN_MAX_AGE": "0"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "ifportal",
            "worker",
            "--pool=solo",
            "--concurrency=1",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            "-Q",
            f"test-{os.getpid()}",
            "--loglevel=WARNING",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    settings.IFPORTAL_JOBS = "celery"
    settings.CELERY_TASK_DEFAULT_QUEUE = f"test-{os.getpid()}"
    from ifportal.celery import app

    app.conf.task_default_queue = f"test-{os.getpid()}"
    yield proc
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


def _wait(job, states, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.state in states:
            return job
        time.sleep(0.3)
    raise AssertionError(f"job stayed {job.state}")


def _instances_file(path: Path, n: int, items: int = 5) -> Path:
    import json

    with open(path, "w") as out:
        for i in range(n):
            checks = [{"check_id": f"c{k}", "description": "x" * 200, "check_type": "compliance"} for k in range(items)]
            out.write(json.dumps({"instance_id": f"w-{i}", "checklist": {"SP": {"checks": checks}}}) + "\n")
    return path


def test_it_runs_an_ingest_job_on_a_worker(worker, tmp_path):
    path = _instances_file(tmp_path / "instances.jsonl", 20)
    job = jobs.job_create(
        kind="ingest",
        params={"format": "octobench-instances", "options": {}},
        files=[{"path": str(path), "name": "instances.jsonl"}],
    )
    jobs.job_enqueue(job)
    job = _wait(job, {JobState.SUCCEEDED, JobState.FAILED})
    assert job.state == JobState.SUCCEEDED, job.errors
    assert job.counts["by_kind"]["instances"]["created"] == 20
    assert Instance.objects.count() == 20


def test_a_worker_killed_mid_job_leaves_the_data_as_it_was_and_the_job_failed(worker, tmp_path, monkeypatch):
    path = _instances_file(tmp_path / "big.jsonl", 60000, items=10)
    job = jobs.job_create(
        kind="ingest",
        params={"format": "octobench-instances", "options": {}},
        files=[{"path": str(path), "name": "big.jsonl"}],
    )
    jobs.job_enqueue(job)
    _wait(job, {JobState.RUNNING})
    deadline = time.monotonic() + 60
    while jobs.job_progress(job)[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert jobs.job_progress(job)[0] > 0, "the job never reported progress"
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(timeout=20)
    monkeypatch.setattr(jobs, "HEARTBEAT_STALE_SECONDS", 1)
    time.sleep(jobs.HEARTBEAT_SECONDS + 2)
    job = jobs.job_check_alive(Job.objects.get(pk=job.pk))
    assert job.state == JobState.FAILED
    assert "stopped" in job.message
    assert Instance.objects.count() == 0
