"""Nothing lost: concurrent writers end with every write present exactly once, and an import whose
database connection dies half-way stores nothing, fails with a clear message and can be retried.

PostgreSQL (DATABASE_URL) and, for the worker tests, Redis (CELERY_BROKER_URL); skipped on the
embedded SQLite default, which serialises every writer on one file lock (and its in-memory test
database answers "table is locked" to a second writer instead of waiting).

Two real Celery workers ingesting at once, duplicate deliveries and the half-built-leaderboard
guarantee are in tests/runs/test_concurrency.py; this file adds writers of different kinds on
the same rows: annotators with annotators, imports of one run from two files, an import that
rewrites the verdicts a campaign is auditing, and an import whose backend is terminated.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection, transaction

from audits import services as audit_services
from audits.models import Assignment, AuditUnit, Label, UnitState
from runs import jobs as runner
from runs.ingest import Options, Source, ingest
from runs.models import Attempt, AttemptRollup, Benchmark, ChecklistItem, Job, JobState, Run, Verdict, VerdictResult

from ..threads import race, redis_up, worker_database_url

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
N_INSTANCES, N_ITEMS = 24, 5
OK = {"decidable": "yes", "grounded": "yes", "duplicate": "none", "overall": "ok"}
BAD = {"decidable": "no", "grounded": "yes", "duplicate": "none", "overall": "ambiguous"}
#: marks the worker's database sessions in pg_stat_activity
APP_NAME = f"ifportal-durable-{os.getpid()}"


# fixtures -------------------------------------------------------------------------------
@pytest.fixture
def worker(postgres, settings):
    """One Celery worker on a queue of this test run whose database sessions carry APP_NAME."""
    if not redis_up():
        pytest.skip("needs Redis (CELERY_BROKER_URL) for a Celery worker")
    url = worker_database_url(application_name=APP_NAME)
    queue = f"test-durable-{os.getpid()}"
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
            "-n",
            f"durable-{os.getpid()}@%h",
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
    settings.IFPORTAL_JOBS = "celery"
    from ifportal.celery import app

    previous = app.conf.task_default_queue
    app.conf.task_default_queue = queue
    yield proc
    app.conf.task_default_queue = previous
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


STALL_SQL = """
CREATE OR REPLACE FUNCTION ifportal_test_stall() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(120); RETURN NULL; END $$;
CREATE TRIGGER ifportal_test_stall AFTER INSERT ON {table} FOR EACH STATEMENT EXECUTE FUNCTION ifportal_test_stall();
"""
UNSTALL_SQL = "DROP TRIGGER IF EXISTS ifportal_test_stall ON {table}; DROP FUNCTION IF EXISTS ifportal_test_stall();"


@pytest.fixture
def stall(postgres):
    """`stall.arm()`: the next insert into the verdict table sleeps inside its transaction (rows
    written, not committed) until its backend is killed; `stall.disarm()` ends that. Schema
    changes outlive the test's flush, so the trigger is always dropped at the end."""
    table = Verdict._meta.db_table

    class Stall:
        def arm(self):
            with connection.cursor() as cursor:
                cursor.execute(STALL_SQL.format(table=table))

        def disarm(self):
            with connection.cursor() as cursor:
                cursor.execute(UNSTALL_SQL.format(table=table))

    stall = Stall()
    yield stall
    stall.disarm()


# data -----------------------------------------------------------------------------------
def _instances(path: Path) -> Path:
    with open(path, "w") as out:
        for i in range(N_INSTANCES):
            checks = [
                {"check_id": f"c{k}", "description": f"rule {k} of {i}", "check_type": ["compliance", "testing"][k % 2]}
                for k in range(N_ITEMS)
            ]
            out.write(
                json.dumps(
                    {
                        "instance_id": f"i-{i}",
                        "category": ["code", "docs"][i % 2],
                        "checklist": {"SP": {"checks": checks}},
                    }
                )
                + "\n"
            )
    return path


def _result(i: int, k: int, seed: int) -> str:
    return "success" if (i * 7 + k * 3 + seed) % 5 else "fail"


def _scores(path: Path, seed: int, instances=range(N_INSTANCES)) -> Path:
    results = [
        {
            "instance_id": f"i-{i}",
            "eval_result": {
                "SP": {"checks": [{"check_id": f"c{k}", "result": _result(i, k, seed)} for k in range(N_ITEMS)]}
            },
        }
        for i in instances
    ]
    path.write_text(json.dumps({"results": results}))
    return path


def _expected(seed: int, instances=range(N_INSTANCES)) -> set[tuple[str, str, str]]:
    return {
        (f"i-{i}", f"c{k}", VerdictResult.PASS if _result(i, k, seed) == "success" else VerdictResult.FAIL)
        for i in instances
        for k in range(N_ITEMS)
    }


def _stored(model: str) -> list[tuple[str, str, str]]:
    return list(
        Verdict.objects.filter(attempt__run__model__name=model).values_list(
            "attempt__instance__external_id", "item__key", "result"
        )
    )


def _load_instances(tmp_path) -> Benchmark:
    ingest("octobench-instances", [Source.of(_instances(tmp_path / "instances.jsonl"))], Options())
    return Benchmark.objects.get(slug="octobench")


def _ingest_job(path: Path, fmt: str = "octobench-scores", **options) -> Job:
    return runner.job_create(
        kind="ingest", params={"format": fmt, "options": options}, files=[{"path": str(path), "name": path.name}]
    )


def _enqueue(*jobs):
    with transaction.atomic():  # the messages leave (threads start) on the same commit
        for job in jobs:
            runner.job_enqueue(job)


def _wait(jobs, timeout=90):
    deadline = time.monotonic() + timeout
    for job in jobs:
        while True:
            job.refresh_from_db()
            if job.finished:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job.pk} stayed {job.state}: {job.message}")
            time.sleep(0.1)
    return jobs


# annotators --------------------------------------------------------------------------------
def _campaign(benchmark, lead, size):
    campaign = audit_services.campaign_create(
        name="durable",
        subject="checklist_items",
        benchmarks=[benchmark],
        strata=["category"],
        allocation="proportional",
        size=size,
        seed=7,
        user=lead,
    )
    return audit_services.campaign_start(campaign)


def _label_queue(campaign, annotator, pause=0.0):
    """Label the annotator's queue to its end (x-ish items BAD for annotator_b); returns the units labelled."""
    done = []
    while True:
        assignment = audit_services.assignment_next(campaign, annotator)
        if assignment is None:
            return done
        values = BAD if annotator.username == "annotator_b" and assignment.unit.position % 3 == 0 else OK
        audit_services.label_submit(assignment, values)
        audit_services.label_submit(assignment, values)  # a double click: the same label, saved once
        done.append(assignment.unit_id)
        time.sleep(pause)


def _assert_every_label_once(campaign, annotators, units_labelled):
    units = list(AuditUnit.objects.filter(campaign=campaign))
    for annotator in annotators:
        labelled = units_labelled[annotator.username]
        assert sorted(labelled) == sorted(u.pk for u in units), f"{annotator.username} did not label every unit once"
    labels = Label.objects.filter(assignment__unit__campaign=campaign)
    assert labels.count() == len(annotators) * len(units)
    pairs = list(labels.values_list("assignment__unit_id", "assignment__annotator_id"))
    assert len(set(pairs)) == len(pairs)
    assert not Assignment.objects.filter(unit__campaign=campaign, label__isnull=True).exists()
    for unit in units:
        slots = sorted(Assignment.objects.filter(unit=unit).values_list("slot", flat=True))
        assert slots == [1, 2]
        assert unit.state in (UnitState.CLOSED, UnitState.DISPUTED)
        assert (unit.state == UnitState.DISPUTED) == (unit.position % 3 == 0)


def test_it_keeps_every_label_when_two_annotators_label_a_whole_campaign_at_once(
    postgres, tmp_path, lead, annotator_a, annotator_b
):
    benchmark = _load_instances(tmp_path)
    campaign = _campaign(benchmark, lead, size=30)
    labelled = {}

    errors = race(
        [lambda u=u: labelled.__setitem__(u.username, _label_queue(campaign, u)) for u in (annotator_a, annotator_b)]
    )

    assert errors == []
    _assert_every_label_once(campaign, [annotator_a, annotator_b], labelled)


# imports -----------------------------------------------------------------------------------
def test_it_keeps_every_verdict_when_two_imports_fill_one_run_at_once(postgres, settings, tmp_path):
    """Two score files of the same model and judge (one run), halves of the instances, plus the
    same instances file again: one run, every verdict once, every attempt's rollup."""
    settings.IFPORTAL_JOBS = "thread"
    _load_instances(tmp_path)
    half = N_INSTANCES // 2
    jobs = [
        _ingest_job(_scores(tmp_path / "first.json", 1, range(half)), model="m-a", judge="judge-1"),
        _ingest_job(_scores(tmp_path / "second.json", 1, range(half, N_INSTANCES)), model="m-a", judge="judge-1"),
        _ingest_job(tmp_path / "instances.jsonl", "octobench-instances"),
    ]

    _enqueue(*jobs)

    for job in _wait(jobs):
        assert job.state == JobState.SUCCEEDED, job.errors
    assert jobs[0].counts["by_kind"]["verdicts"] == {"created": half * N_ITEMS}
    assert jobs[1].counts["by_kind"]["verdicts"] == {"created": (N_INSTANCES - half) * N_ITEMS}
    assert jobs[2].counts["by_kind"]["instances"] == {"unchanged": N_INSTANCES}
    stored = _stored("m-a")
    assert len(stored) == N_INSTANCES * N_ITEMS and set(stored) == _expected(1)
    assert Run.objects.count() == 1 and Attempt.objects.count() == N_INSTANCES
    assert AttemptRollup.objects.count() == N_INSTANCES
    sources = Run.objects.get().sources
    assert sorted((s["name"], s["format"]) for s in sources) == [
        ("first.json", "octobench-scores"),
        ("second.json", "octobench-scores"),
    ]


def test_it_keeps_every_label_and_the_whole_import_when_an_import_rewrites_the_audited_benchmark(
    postgres, settings, tmp_path, lead, annotator_a, annotator_b
):
    settings.IFPORTAL_JOBS = "thread"
    benchmark = _load_instances(tmp_path)
    ingest("octobench-scores", [Source.of(_scores(tmp_path / "before.json", 1))], Options(model="m-a", judge="judge-1"))
    campaign = _campaign(benchmark, lead, size=30)
    units_before = list(AuditUnit.objects.filter(campaign=campaign).values_list("pk", "key", "item_id"))
    items_before = ChecklistItem.objects.count()
    # the same run judged again (different results) and a second model, while both annotators label
    rewrite = _ingest_job(_scores(tmp_path / "after.json", 3), model="m-a", judge="judge-1")
    added = _ingest_job(_scores(tmp_path / "other.json", 4), model="m-b", judge="judge-1")
    labelled = {}

    def import_both():
        _enqueue(rewrite, added)
        _wait([rewrite, added])

    errors = race(
        [
            lambda u=u: labelled.__setitem__(u.username, _label_queue(campaign, u, pause=0.01))
            for u in (annotator_a, annotator_b)
        ]
        + [import_both]
    )

    assert errors == []
    _assert_every_label_once(campaign, [annotator_a, annotator_b], labelled)
    assert list(AuditUnit.objects.filter(campaign=campaign).values_list("pk", "key", "item_id")) == units_before
    assert ChecklistItem.objects.count() == items_before
    for job in (rewrite, added):
        job.refresh_from_db()
        assert job.state == JobState.SUCCEEDED, job.errors
    changed = len(_expected(1) - _expected(3))
    assert rewrite.counts["by_kind"]["verdicts"] == {"updated": changed, "unchanged": N_INSTANCES * N_ITEMS - changed}
    assert set(_stored("m-a")) == _expected(3) and len(_stored("m-a")) == N_INSTANCES * N_ITEMS
    assert set(_stored("m-b")) == _expected(4) and len(_stored("m-b")) == N_INSTANCES * N_ITEMS
    assert AttemptRollup.objects.count() == 2 * N_INSTANCES


# a lost database connection -----------------------------------------------------------------
def _stalled_backend(timeout=30) -> tuple[int, str]:
    """(pid, application_name) of the session sleeping in the stall trigger of this database."""
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT pid, application_name FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND wait_event = 'PgSleep' AND query ILIKE %s",
                ["%" + Verdict._meta.db_table + "%"],
            )
            row = cursor.fetchone()
            if row:
                return row
            time.sleep(0.1)
    raise AssertionError("the import never reached its verdict inserts")


def _terminate(pid: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        assert cursor.fetchone()[0] is True


def _assert_nothing_stored():
    assert Verdict.objects.count() == 0
    assert Attempt.objects.count() == 0 and Run.objects.count() == 0 and AttemptRollup.objects.count() == 0


def _lose_the_connection_then_retry(tmp_path, stall, kill, *, app_name=None):
    _load_instances(tmp_path)
    job = _ingest_job(_scores(tmp_path / "scores.json", 2), model="m-a", judge="judge-1")
    stall.arm()
    _enqueue(job)
    pid, name = _stalled_backend()
    if app_name:
        assert name == app_name
    kill(pid)

    _wait([job], timeout=60)

    assert job.state == JobState.FAILED
    assert "database connection" in job.message.lower() and "nothing was stored" in job.message.lower(), job.message
    assert job.errors and job.error_count == 1
    _assert_nothing_stored()

    stall.disarm()
    with transaction.atomic():
        runner.job_retry(job)
    _wait([job], timeout=60)
    assert job.state == JobState.SUCCEEDED, job.errors
    assert job.attempts_made == 2 and job.errors == []
    assert job.counts["by_kind"]["verdicts"] == {"created": N_INSTANCES * N_ITEMS}
    stored = _stored("m-a")
    assert len(stored) == N_INSTANCES * N_ITEMS and set(stored) == _expected(2)
    assert Run.objects.count() == 1 and Attempt.objects.count() == N_INSTANCES
    assert AttemptRollup.objects.count() == N_INSTANCES


def test_it_fails_cleanly_and_retries_when_a_workers_connection_is_killed_mid_import(worker, stall, tmp_path):
    _lose_the_connection_then_retry(tmp_path, stall, _terminate, app_name=APP_NAME)
    assert worker.poll() is None, "the worker died with its connection"


def test_it_fails_cleanly_and_retries_when_a_thread_jobs_connection_is_killed_mid_import(
    postgres, stall, settings, tmp_path
):
    settings.IFPORTAL_JOBS = "thread"
    _lose_the_connection_then_retry(tmp_path, stall, _terminate)


def _restart_postgres(pid: int) -> None:
    cluster = sorted(os.listdir("/etc/postgresql"))[0]
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", cluster, "main", "restart"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    for _ in range(60):
        if subprocess.run(["pg_isready", "-q", "-h", "127.0.0.1"], check=False).returncode == 0:
            break
        time.sleep(0.5)
    connection.close()  # the test's own session died with the server


@pytest.mark.skipif(
    os.environ.get("IFPORTAL_TEST_PG_RESTART") != "1",
    reason="restarts the PostgreSQL server: only where nothing else uses it (.ci/run sets IFPORTAL_TEST_PG_RESTART=1)",
)
def test_it_fails_cleanly_and_retries_when_postgresql_restarts_mid_import(worker, stall, tmp_path):
    _lose_the_connection_then_retry(tmp_path, stall, _restart_postgres, app_name=APP_NAME)
    assert worker.poll() is None, "the worker died with the server"
