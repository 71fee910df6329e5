"""A job's end is recorded with its data: a job whose data committed is never reported as storing
nothing, and a job's final state is written with retries while the database is locked.

The lock is that of another writer (a CLI import on the embedded SQLite, a row lock under PostgreSQL's
lock_timeout); a worker lost after a commit is a BaseException that leaves the runner where it was, as a
killed process would, and the stale-heartbeat check that the job pages run then judges the job.
"""

import threading
import time
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import OperationalError, connection, transaction
from django.utils import timezone

import runs.ingest
from runs import jobs
from runs.ingest import Options, Source, ingest
from runs.models import Job, JobState, Run, Verdict

from ..threads import in_thread

pytestmark = pytest.mark.django_db(transaction=True)
TESTS = Path(__file__).resolve().parents[1]
NATIVE = TESTS / "fixtures" / "native" / "study.jsonl"
MANYIH = TESTS / "fixtures" / "manyih"
JOB_TABLE = Job._meta.db_table


class WorkerLost(BaseException):
    """What a killed worker looks like to the code after the kill: nothing runs any more."""


@contextmanager
def locked_job_table(times: int):
    """The next `times` writes to the job table outside a transaction meet another writer's lock,
    as SQLite reports it once its busy timeout has passed."""
    left = [times]

    def wrapper(execute, sql, params, many, context):
        if (
            sql.lstrip().upper().startswith("UPDATE")
            and JOB_TABLE in sql
            and left[0] > 0
            and not connection.in_atomic_block
        ):
            left[0] -= 1
            raise OperationalError("database is locked")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield left


@pytest.fixture
def quick_retries(monkeypatch):
    monkeypatch.setattr(jobs, "STATE_WRITE_WAITS", (0.05, 0.1, 0.2))


def _native_job(lead) -> Job:
    return jobs.job_create(
        kind="ingest",
        params={"format": "native", "options": {}},
        files=[{"path": str(NATIVE), "name": NATIVE.name}],
        user=lead,
    )


def _worker_lost_long_ago(job: Job) -> Job:
    Job.objects.filter(pk=job.pk).update(
        started_at=timezone.now() - timedelta(seconds=jobs.HEARTBEAT_STALE_SECONDS + 5)
    )
    return jobs.job_check_alive(Job.objects.get(pk=job.pk))


def test_an_import_whose_worker_is_lost_after_its_commit_stays_succeeded_with_its_counts(lead, monkeypatch):
    """The commit is the job's end: what fails after it (here the worker, while the planner statistics
    are refreshed) cannot turn it into a job that stored nothing."""
    job = _native_job(lead)
    real_refresh = runs.ingest.statistics_refresh
    calls = []

    def refresh_then_die(models_):
        calls.append(models_)
        if len(calls) == 2:  # the refresh after the ingest's commit
            raise WorkerLost()
        return real_refresh(models_)

    monkeypatch.setattr(runs.ingest, "statistics_refresh", refresh_then_die)
    with pytest.raises(WorkerLost):
        jobs.job_execute(job.id)

    job = _worker_lost_long_ago(job)
    assert Verdict.objects.count() == 12
    assert job.state == JobState.SUCCEEDED, job.message
    assert job.counts["by_kind"]["verdicts"] == {"created": 12}
    assert "nothing was stored" not in job.message


def test_an_import_whose_last_state_write_meets_a_lock_still_ends_succeeded(lead):
    job = _native_job(lead)
    with locked_job_table(times=3):
        jobs.job_execute(job.id)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and job.counts["by_kind"]["verdicts"] == {"created": 12}
    assert Verdict.objects.count() == 12


def test_a_failed_job_is_marked_failed_through_a_lock_that_lasts_a_few_tries(lead, monkeypatch, quick_retries):
    def broken(job):
        raise ValueError("a bug")

    monkeypatch.setitem(jobs.JOB_KINDS, "ingest", broken)
    job = _native_job(lead)
    with locked_job_table(times=2) as left:
        jobs.job_execute(job.id)
    job.refresh_from_db()
    assert left == [0]
    assert job.state == JobState.FAILED and "internal error ValueError" in job.errors[0]
    assert "nothing was stored" in job.message


def test_a_lock_that_outlasts_the_retries_leaves_the_job_to_the_heartbeat_check(lead, monkeypatch, quick_retries):
    def broken(job):
        raise ValueError("a bug")

    monkeypatch.setitem(jobs.JOB_KINDS, "ingest", broken)
    job = _native_job(lead)
    with locked_job_table(times=len(jobs.STATE_WRITE_WAITS) + 1), pytest.raises(OperationalError):
        jobs.job_execute(job.id)
    assert Job.objects.get(pk=job.pk).state == JobState.RUNNING  # bounded: it gave up
    assert _worker_lost_long_ago(job).state == JobState.FAILED


def _two_manyih_runs() -> list[Run]:
    ingest("manyih-data", [Source.of(MANYIH / "coding_small.json")], Options())
    for model in ("acme/coder-1", "acme/coder-2"):
        ingest("manyih-results", [Source.of(MANYIH / "results_small.json")], Options(model=model, run=model))
    return list(Run.objects.order_by("label"))


def test_a_recheck_whose_worker_is_lost_after_its_first_run_says_what_it_stored(lead, monkeypatch):
    runs = _two_manyih_runs()
    job = jobs.job_create(
        kind="recheck", params={"run_ids": [r.id for r in runs], "benchmark": runs[0].benchmark.slug}, user=lead
    )
    real_recheck = jobs.recheck_run

    def second_run_dies(*, run, progress=None):
        if run.pk == runs[1].pk:
            raise WorkerLost()
        return real_recheck(run=run, progress=progress)

    monkeypatch.setattr(jobs, "recheck_run", second_run_dies)
    with pytest.raises(WorkerLost):
        jobs.job_execute(job.id)

    job = _worker_lost_long_ago(job)
    assert job.state == JobState.FAILED
    assert "nothing was stored" not in job.message
    assert f"{runs[0].label}: " in job.message and f"Not re-checked yet: {runs[1].label}" in job.message
    assert job.counts["runs"] == 1 and job.counts["attempts"] == Run.objects.get(pk=runs[0].pk).attempts.count()
    checked = set(Verdict.objects.filter(judge__kind="checker").values_list("attempt__run_id", flat=True))
    assert checked == {runs[0].pk}


def test_the_final_state_waits_out_a_postgresql_lock_timeout(postgres, lead, quick_retries, caplog):
    """PostgreSQL's equivalent of "database is locked": another transaction holds the job's row while the
    session's lock_timeout is short, and the statement fails with lock_not_available (55P03)."""
    job = _native_job(lead)
    Job.objects.filter(pk=job.pk).update(state=JobState.RUNNING)
    holding, release = threading.Event(), threading.Event()

    def hold():
        with transaction.atomic():
            Job.objects.select_for_update().get(pk=job.pk)
            holding.set()
            release.wait(10)

    holder = in_thread(hold)
    assert holding.wait(10)
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '50ms'")
    threading.Timer(0.2, release.set).start()
    try:
        started = time.monotonic()
        written = jobs._job_update(job.id, state=JobState.SUCCEEDED, message="done")
    finally:
        release.set()
        holder[0].join(10)
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert written == 1 and time.monotonic() - started < 5
    assert "lock timeout" in caplog.text and "trying again" in caplog.text  # refused at least once
    assert Job.objects.get(pk=job.pk).state == JobState.SUCCEEDED
