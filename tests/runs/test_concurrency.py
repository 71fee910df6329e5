"""Scale-out guarantees on PostgreSQL and Redis (skipped on the embedded SQLite default).

Two real Celery workers ingest different files, and the same file, at the same time;
rollup rebuilds of the same attempts are serialised; a reader polling the leaderboard
during a rebuild sees only complete states; tasks are safe to run twice; a failed job's
retry succeeds once its cause is fixed.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import transaction

from runs import jobs as runner
from runs import services, tasks
from runs.ingest import Options, Source, ingest
from runs.metrics.checklist import Filters
from runs.models import (
    Attempt,
    AttemptRollup,
    Benchmark,
    GroupRollup,
    Instance,
    Job,
    JobState,
    Run,
    Verdict,
    VerdictResult,
)
from runs.selectors import checklist

from ..threads import in_thread, redis_up, worker_database_url

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
SLUG = "octobench"
N_INSTANCES, N_ITEMS = 30, 6


@pytest.fixture
def workers(postgres, settings):
    """Two Celery worker processes on a queue of this test run."""
    if not redis_up():
        pytest.skip("needs Redis (CELERY_BROKER_URL)")
    url = worker_database_url()
    queue = f"test-concurrency-{os.getpid()}"
    env = {**os.environ, "DATABASE_URL": url, "IFPORTAL_JOBS": "celery", "DB_CONN_MAX_AGE": "0"}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "ifportal",
                "worker",
                "--pool=solo",
                "--concurrency=1",
                "-n",
                f"w{k}-{os.getpid()}@%h",
                "--without-heartbeat",
                "--without-gossip",
                "--without-mingle",
                "-Q",
                queue,
                "--loglevel=WARNING",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for k in range(2)
    ]
    settings.IFPORTAL_JOBS = "celery"
    from ifportal.celery import app

    app.conf.task_default_queue = queue
    yield procs
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        proc.wait(timeout=30)


def _wait(jobs, timeout=120):
    deadline = time.monotonic() + timeout
    for job in jobs:
        while True:
            job.refresh_from_db()
            if job.finished:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job.pk} stayed {job.state}")
            time.sleep(0.2)
    return jobs


def _instances(path: Path) -> Path:
    with open(path, "w") as out:
        for i in range(N_INSTANCES):
            checks = [
                {"check_id": f"c{k}", "description": f"rule {k}", "check_type": ["compliance", "testing"][k % 2]}
                for k in range(N_ITEMS)
            ]
            out.write(json.dumps({"instance_id": f"i-{i}", "checklist": {"SP": {"checks": checks}}}) + "\n")
    return path


def _scores(path: Path, seed: int) -> Path:
    results = [
        {
            "instance_id": f"i-{i}",
            "eval_result": {
                "SP": {
                    "checks": [
                        {"check_id": f"c{k}", "result": "success" if (i * 7 + k * 3 + seed) % 5 else "fail"}
                        for k in range(N_ITEMS)
                    ]
                }
            },
        }
        for i in range(N_INSTANCES)
    ]
    path.write_text(json.dumps({"results": results}))
    return path


def _ingest_job(path: Path, fmt: str, **options) -> Job:
    return runner.job_create(
        kind="ingest", params={"format": fmt, "options": options}, files=[{"path": str(path), "name": path.name}]
    )


def _enqueue_together(jobs):
    with transaction.atomic():  # both messages leave on the same commit
        for job in jobs:
            runner.job_enqueue(job)


def _load_study(tmp_path, models=("m-a", "m-b")) -> None:
    ingest("octobench-instances", [Source.of(_instances(tmp_path / "instances.jsonl"))], Options())
    for n, model in enumerate(models):
        ingest(
            "octobench-scores",
            [Source.of(_scores(tmp_path / f"scores-{model}.json", n))],
            Options(model=model, judge="judge-1"),
        )


def test_it_ingests_different_files_on_two_workers_at_once(workers, tmp_path):
    ingest("octobench-instances", [Source.of(_instances(tmp_path / "instances.jsonl"))], Options())
    jobs = [
        _ingest_job(_scores(tmp_path / f"scores-{m}.json", n), "octobench-scores", model=m, judge="judge-1")
        for n, m in enumerate(["m-a", "m-b", "m-c", "m-d"])
    ]
    _enqueue_together(jobs)
    for job in _wait(jobs):
        assert job.state == JobState.SUCCEEDED, job.errors
        assert job.counts["by_kind"]["verdicts"] == {"created": N_INSTANCES * N_ITEMS}
    assert Verdict.objects.count() == 4 * N_INSTANCES * N_ITEMS
    assert Run.objects.count() == 4
    assert AttemptRollup.objects.count() == 4 * N_INSTANCES
    assert set(AttemptRollup.objects.values_list("n_items", flat=True)) == {N_ITEMS}


def test_it_ingests_the_same_file_twice_at_once_and_the_second_finds_it_unchanged(workers, tmp_path):
    instances = _instances(tmp_path / "instances.jsonl")
    first = [_ingest_job(instances, "octobench-instances") for _ in range(2)]
    _enqueue_together(first)
    outcomes = []
    for job in _wait(first):
        assert job.state == JobState.SUCCEEDED, job.errors
        outcomes.append(job.counts["by_kind"]["instances"])
    assert sorted(outcomes, key=str) == [{"created": N_INSTANCES}, {"unchanged": N_INSTANCES}]
    assert Benchmark.objects.count() == 1 and Instance.objects.count() == N_INSTANCES

    scores = _scores(tmp_path / "scores.json", 1)
    second = [_ingest_job(scores, "octobench-scores", model="m-a", judge="judge-1") for _ in range(2)]
    _enqueue_together(second)
    verdict_counts = []
    for job in _wait(second):
        assert job.state == JobState.SUCCEEDED, job.errors
        verdict_counts.append(job.counts["by_kind"]["verdicts"])
    assert sorted(verdict_counts, key=str) == [{"created": N_INSTANCES * N_ITEMS}, {"unchanged": N_INSTANCES * N_ITEMS}]
    assert Verdict.objects.count() == N_INSTANCES * N_ITEMS
    assert Attempt.objects.count() == N_INSTANCES
    assert AttemptRollup.objects.count() == N_INSTANCES


def test_it_runs_a_queued_task_twice_and_changes_nothing_the_second_time(workers, tmp_path):
    ingest("octobench-instances", [Source.of(_instances(tmp_path / "instances.jsonl"))], Options())
    job = _ingest_job(_scores(tmp_path / "scores.json", 2), "octobench-scores", model="m-a", judge="judge-1")
    with transaction.atomic():
        runner.job_enqueue(job)
        transaction.on_commit(lambda: tasks.run_job.delay(str(job.pk)))  # a duplicate delivery
    _wait([job])
    time.sleep(1.5)  # give the duplicate time to be consumed
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and job.attempts_made == 1
    finished = job.finished_at
    tasks.run_job(str(job.pk))  # and once more in this process
    job.refresh_from_db()
    assert job.attempts_made == 1 and job.finished_at == finished
    assert Verdict.objects.count() == N_INSTANCES * N_ITEMS


def test_it_retries_a_failed_job_on_a_worker_and_the_retry_succeeds(workers, tmp_path):
    job = _ingest_job(_scores(tmp_path / "scores.json", 3), "octobench-scores", model="m-a", judge="judge-1")
    _enqueue_together([job])
    _wait([job])
    assert job.state == JobState.FAILED
    assert "does not exist" in job.errors[0]
    assert Verdict.objects.count() == 0
    ingest("octobench-instances", [Source.of(_instances(tmp_path / "instances.jsonl"))], Options())
    with transaction.atomic():
        runner.job_retry(job)
    _wait([job])
    assert job.state == JobState.SUCCEEDED, job.errors
    assert job.attempts_made == 2 and job.errors == []
    assert Verdict.objects.count() == N_INSTANCES * N_ITEMS


def test_it_serialises_concurrent_rollup_rebuilds_of_the_same_attempts(postgres, tmp_path):
    _load_study(tmp_path)
    ids = list(Attempt.objects.values_list("id", flat=True))
    benchmark_id = Benchmark.objects.get().id
    holding, release = threading.Event(), threading.Event()

    def hold_lock():
        with transaction.atomic():
            services.benchmarks_lock([benchmark_id])
            holding.set()
            release.wait(20)

    holder, _, holder_errors = in_thread(hold_lock)
    assert holding.wait(10)
    rebuilds = [in_thread(services.rollups_rebuild_for_attempts, ids) for _ in range(3)]
    time.sleep(1.0)
    assert all(t.is_alive() for t, _, _ in rebuilds), "a rebuild ran while another writer held the benchmark"
    release.set()
    for thread, _, errors in [(holder, None, holder_errors), *rebuilds]:
        thread.join(60)
        assert not thread.is_alive() and errors == []
    assert AttemptRollup.objects.count() == len(ids)
    assert GroupRollup.objects.filter(dimension="check_type").count() == 2 * len(ids)
    assert sorted(AttemptRollup.objects.values_list("attempt_id", flat=True)) == sorted(ids)


def test_it_never_shows_a_half_built_leaderboard_while_a_rebuild_runs(postgres, tmp_path, monkeypatch):
    _load_study(tmp_path)
    benchmark_id = Benchmark.objects.get().id
    ids = list(Attempt.objects.values_list("id", flat=True))

    def state():
        rows = checklist.leaderboard_rows(benchmark_id, Filters())
        return tuple((r.model, r.n_attempts, round(r.isr, 6), round(r.csr, 6)) for r in rows)

    before = state()
    monkeypatch.setattr(services, "ROLLUP_BATCH", 5)  # many batches, each followed by a pause
    real_batch = services._rollups_rebuild_sql

    def slow_batch(batch, judges):
        written = real_batch(batch, judges)
        time.sleep(0.05)
        return written

    monkeypatch.setattr(services, "_rollups_rebuild_sql", slow_batch)
    done = threading.Event()
    seen: set[tuple] = set()

    def read():
        while not done.is_set():
            seen.add(state())
            time.sleep(0.005)

    def write():  # verdicts change first (leaderboards read rollups), then the rebuild on its own
        Verdict.objects.filter(result=VerdictResult.FAIL).update(result=VerdictResult.PASS)
        services.rollups_rebuild_for_attempts(ids)

    reader, _, reader_errors = in_thread(read)
    writer, _, writer_errors = in_thread(write)
    writer.join(60)
    time.sleep(0.1)
    done.set()
    reader.join(30)
    assert writer_errors == [] and reader_errors == []
    after = state()
    assert after != before and all(isr == 100.0 for _, _, isr, _ in after)
    assert seen <= {before, after}, f"a partial state was served: {seen - {before, after}}"
    assert before in seen
