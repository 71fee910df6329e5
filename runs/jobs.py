"""Background jobs: create, enqueue, claim, heartbeat, execute, retry, fail, progress; and the kinds of job.

A job is a `Job` row with a kind and parameters; `JOB_KINDS` says which function runs each kind (called
with the Job, returns its counts and message). The runner (`job_execute`) claims a queued job, runs it
under a heartbeat and records what it reported or why it failed; the page and the API read progress
from the cache while it runs. Where it runs is `IFPORTAL_JOBS`: inline, in a thread, or on a Celery
worker (`runs.tasks.run_job`, which only calls `job_execute`).
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from runs.ingest import IngestFailed, Options, Problem, Report, ingest_units
from runs.ingest.layout import LayoutError, plan_uploads
from runs.models import Attempt, Job, JobState, Run
from runs.recheck import RecheckReport, recheck_run
from runs.services import benchmarks_changes_collected, rollups_rebuild_for_attempts
from runs.signals import benchmarks_written

log = logging.getLogger(__name__)

#: the Celery task that runs a job on a worker (defined in runs.tasks; sent by name, so this module needs no tasks import)
RUN_JOB_TASK = "runs.run_job"
PROGRESS_EVERY_SECONDS = 0.5
HEARTBEAT_SECONDS = 5
#: a running job whose heartbeat is older than this lost its worker
HEARTBEAT_STALE_SECONDS = 60


# progress -----------------------------------------------------------------------------
def _progress_key(job_id) -> str:
    return f"ifportal:job:{job_id}:progress"


def job_progress(job: Job) -> tuple[int, int]:
    """(done, total) of a running job as last reported; the row for finished ones.

    Progress goes through the cache, not the job row: the ingest transaction would hide
    row updates from the page until it commits.
    """
    if job.finished:
        return job.progress_done, job.progress_total
    live = cache.get(_progress_key(job.id))
    return tuple(live) if live else (job.progress_done, job.progress_total)


class ProgressReporter:
    """Throttled (done, total) reports for a job, readable by other processes."""

    def __init__(self, job_id):
        self.job_id = job_id
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self._last >= PROGRESS_EVERY_SECONDS or (total and done >= total):
            self._last = now
            cache.set(_progress_key(self.job_id), (done, total), timeout=24 * 3600)


def verdict_changes(*, created: int, updated: int, unchanged: int, removed: int = 0) -> dict[str, Any]:
    """A job's counts of the verdicts it wrote, in the shape ingest jobs report (the job page and API read
    `created`/`updated`/`unchanged` and `by_kind`): a re-check says what it created and changed."""
    outcomes = {"created": created, "updated": updated, "unchanged": unchanged, "removed": removed}
    return {**outcomes, "by_kind": {"verdicts": {k: v for k, v in outcomes.items() if v}}}


# the kinds of job ---------------------------------------------------------------------
def _job_ingest(job: Job) -> dict[str, Any]:
    """An upload's files, planned as `manage.py ingest` plans a folder (their paths, an uploaded manifest); its
    problems name options as the page or the API that started it does (`params["surface"]`)."""
    options = Options(
        **{k: v for k, v in job.params.get("options", {}).items() if v not in (None, "")},
        surface=job.params.get("surface", "form"),
    )
    try:
        units = plan_uploads(
            job.params["format"], [(Path(f["path"]), f.get("name") or Path(f["path"]).name) for f in job.files], options
        )
    except LayoutError as exc:
        raise IngestFailed([Problem(exc.where, None, exc.reason)], 1, Report()) from None
    report = ingest_units(
        job.params["format"],
        units,
        progress=ProgressReporter(job.id),
        before_commit=lambda report: job_record(job, _ingest_result(report), final=True),
    )
    return _ingest_result(report)


def _ingest_result(report: Report) -> dict[str, Any]:
    return {"counts": report.as_dict(), "message": report.summary()}


def _job_rollups(job: Job) -> dict[str, Any]:
    """Rebuild the rollups of params["attempt_ids"], or of every attempt of params["benchmark_id"] (or of all)."""
    ids = job.params.get("attempt_ids")
    if ids is None:
        qs = Attempt.objects.all()
        if job.params.get("benchmark_id"):
            qs = qs.filter(run__benchmark_id=job.params["benchmark_id"])
        ids = list(qs.values_list("id", flat=True))
    with transaction.atomic():  # the rebuild and the job's final state commit together
        n = rollups_rebuild_for_attempts(ids)
        return job_record(job, {"counts": {"rollups": n}, "message": f"rebuilt {n} rollups"}, final=True)


def _job_recheck(job: Job) -> dict[str, Any]:
    """Re-check the runs in params["run_ids"] with the portal's checkers of their benchmark's kind.

    Each run is re-checked in its own transaction, which also records in the job what the runs so
    far stored: a job that stops half-way says which runs it re-checked. Progress is in attempts
    checked, over all the runs."""
    runs = list(Run.objects.filter(id__in=job.params.get("run_ids", [])).select_related("benchmark").order_by("label"))
    total = Attempt.objects.filter(run__in=runs).count()
    progress = ProgressReporter(job.id)
    progress(0, total)
    reports: list[RecheckReport] = []
    for n, run in enumerate(runs, 1):
        done = sum(r.attempts for r in reports)
        with transaction.atomic():
            reports.append(recheck_run(run=run, progress=lambda d, _t, done=done: progress(done + d, total)))
            result = job_record(job, _recheck_result(reports, runs[n:]), final=n == len(runs))
    return result if runs else {"counts": {}, "message": "no run to re-check"}


def _recheck_result(reports: list[RecheckReport], remaining: list[Run]) -> dict[str, Any]:
    """What the re-checks of `reports` stored, as a job's counts and message (with the runs still to do)."""
    totals: dict[str, int] = {"runs": len(reports)}
    for report in reports:
        for key, value in report.as_dict().items():
            totals[key] = totals.get(key, 0) + value
    changes = verdict_changes(
        **{key: sum(getattr(r, key) for r in reports) for key in ("created", "updated", "unchanged", "removed")}
    )
    message = " ".join(r.summary() for r in reports)
    if remaining:
        message += " Not re-checked yet: " + ", ".join(run.label for run in remaining) + "."
    return {"counts": {**totals, **changes}, "message": message}


#: job kind -> the function that runs it (called with the Job; returns {"counts": ..., "message": ...})
JOB_KINDS: dict[str, Callable[[Job], dict[str, Any]]] = {
    "ingest": _job_ingest,
    "rollups": _job_rollups,
    "recheck": _job_recheck,
}
#: job kind -> what its progress counts (an import reads bytes; a re-check checks attempts); none: no progress
JOB_PROGRESS_UNITS: dict[str, str] = {"ingest": "bytes", "recheck": "attempts checked"}


# create, enqueue, retry ---------------------------------------------------------------
def job_create(*, kind: str, params: dict[str, Any], files: list[dict[str, str]] | None = None, user=None) -> Job:
    """A queued job; start it with `job_enqueue` (after the transaction that made it commits)."""
    if kind not in JOB_KINDS:
        raise ValueError(f"unknown job kind {kind!r}; one of: {', '.join(JOB_KINDS)}")
    return Job.objects.create(kind=kind, params=params, files=files or [], created_by=user)


def job_enqueue(job: Job) -> None:
    """Hand a queued job to the configured runner once the current transaction commits."""
    mode = settings.IFPORTAL_JOBS
    if mode == "inline":
        transaction.on_commit(lambda: job_execute(job.id), robust=False)
    elif mode == "thread":
        transaction.on_commit(lambda: _start_thread(job.id))
    else:
        transaction.on_commit(lambda: current_app.send_task(RUN_JOB_TASK, args=[str(job.id)]))


def _start_thread(job_id) -> None:
    def target():
        try:
            job_execute(job_id)
        finally:
            connection.close()  # this thread ends: its session would stay open until garbage collection

    threading.Thread(target=target, name=f"job-{job_id}", daemon=True).start()


def job_retry(job: Job) -> Job:
    """Queue a failed job again with the same parameters and files."""
    if job.state != JobState.FAILED:
        raise ValueError("only a failed job can be retried")
    Job.objects.filter(pk=job.pk).update(
        state=JobState.QUEUED, errors=[], error_count=0, message="", counts={}, finished_at=None, retry_may_fix=True
    )
    job.refresh_from_db()
    job_enqueue(job)
    return job


# claim, heartbeat, execute, fail ------------------------------------------------------
def _claim(job_id) -> Job | None:
    """Mark a queued job running; None unless it is queued (another worker has it, it has
    finished, or it failed and waits for a deliberate retry: a redelivered message after a
    worker died must not rerun it behind the user's back)."""
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.state != JobState.QUEUED:
            return None
        job.state = JobState.RUNNING
        job.started_at = timezone.now()
        job.attempts_made += 1
        job.save(update_fields=["state", "started_at", "attempts_made"])
        return job


def _heartbeat_key(job_id) -> str:
    return f"ifportal:job:{job_id}:heartbeat"


class _Heartbeat:
    """Marks a job alive in the cache every few seconds while it runs, from its own thread."""

    def __init__(self, job_id):
        self.job_id = job_id
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{job_id}", daemon=True)

    def _beat(self) -> None:
        while True:
            cache.set(_heartbeat_key(self.job_id), time.time(), timeout=24 * 3600)
            if self._stop.wait(HEARTBEAT_SECONDS):
                return

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=HEARTBEAT_SECONDS + 1)
        cache.delete(_heartbeat_key(self.job_id))


def job_check_alive(job: Job) -> Job:
    """Mark a running job failed if its worker stopped beating (killed, machine lost); returns the job as now stored.

    The job's open transaction died with its database connection; what its committed transactions
    stored they recorded in the job (`job_record`), so the message says either that nothing was
    stored or what was. The job pages and the job API call this before showing a running job, so a
    job whose worker is gone shows as failed instead of running for ever.
    """
    if job.state != JobState.RUNNING or job.started_at is None:
        return job
    beat = cache.get(_heartbeat_key(job.id))
    last = beat if beat is not None else job.started_at.timestamp()
    if time.time() - last > HEARTBEAT_STALE_SECONDS:
        updated = Job.objects.filter(pk=job.pk, state=JobState.RUNNING).update(
            state=JobState.FAILED,
            message="The worker running this job stopped before it finished; " + _stored_words(job) + " Retry it.",
            errors=["worker lost: no heartbeat for more than a minute"],
            error_count=1,
            finished_at=timezone.now(),
        )
        if updated:  # only the fields it changed: the job's prefetched creator stays loaded for the list page
            job.refresh_from_db(fields=["state", "message", "errors", "error_count", "finished_at"])
    return job


def job_record(job: Job, result: dict[str, Any], *, final: bool) -> dict[str, Any]:
    """Record in the job what it stored (`result`: counts and message), and with `final` that it succeeded;
    returns `result`.

    Called inside the transaction that stores the job's data, so the record commits with the data or
    not at all: a job whose data committed never shows as having stored nothing, whatever happens to
    it afterwards (a lock on the database, a lost worker). A running job's counts are therefore what
    it has stored so far (empty: nothing yet).
    """
    fields: dict[str, Any] = {"counts": result.get("counts", {}), "message": result.get("message", "")}
    if final:
        done, total = job_progress(job)
        fields.update(
            state=JobState.SUCCEEDED, progress_done=total or done, progress_total=total, finished_at=timezone.now()
        )
    Job.objects.filter(pk=job.pk).update(**fields)
    # the runner's copy follows what committed: a job that succeeded is not written again, nor failed
    transaction.on_commit(lambda: job.__dict__.update(fields))
    return result


def _stored_words(job: Job) -> str:
    """What a job that stopped had stored, in words, from what its committed transactions recorded."""
    if not job.counts:
        return "nothing was stored."
    return f"what it stored before is kept ({job.message.strip()})."


def job_execute(job_id) -> None:
    """Run a job to its end, recording counts, errors and the final state. Safe to call twice."""
    try:
        job = _claim(job_id)
    except (InterfaceError, OperationalError) as exc:  # e.g. SQLite busy past its timeout
        _fail_unstarted(job_id, exc)
        return
    if job is None:
        return
    try:
        with benchmarks_changes_collected() as changed, _Heartbeat(job.id):
            result = JOB_KINDS[job.kind](job) or {}
            if job.state != JobState.SUCCEEDED:  # a kind that did not record its end with its data
                done, total = job_progress(job)
                _job_update(
                    job.id,
                    state=JobState.SUCCEEDED,
                    counts=result.get("counts", {}),
                    message=result.get("message", ""),
                    progress_done=total or done,
                    progress_total=total,
                    finished_at=timezone.now(),
                )
    except Exception as exc:  # the job records why it failed; the worker stays up
        _fail(job, exc)
        return
    benchmarks_written.send(sender=__name__, benchmark_ids=changed)


#: waits, in seconds, between the tries of writing a job's state that the database refused for the moment;
#: about half a minute in all, on top of the database's own wait for a lock (SQLite's timeout)
STATE_WRITE_WAITS = (0.5, 1, 2, 4, 8, 15)


def _job_update(job_id, *, was: str = JobState.RUNNING, **fields) -> int:
    """Write fields of a job still in state `was`, trying again while the database refuses the statement for
    the moment (`_transient`); returns the rows written (0: the job was no longer `was`).

    Outside any transaction only: a statement refused inside one has ended it."""
    for wait in (*STATE_WRITE_WAITS, None):
        try:
            return Job.objects.filter(pk=job_id, state=was).update(**fields)
        except (InterfaceError, OperationalError) as exc:
            if wait is None or connection.in_atomic_block or not _transient(exc):
                raise
            log.warning("job %s: writing its state failed (%s); trying again in %s s", job_id, exc, wait)
            if _connection_lost(exc):
                connection.close()
            time.sleep(wait)
    return 0


def _transient(exc: Exception) -> bool:
    """Whether the database refused a statement for the moment: a lock another writer holds (SQLite's
    "database is locked"; PostgreSQL's serialization failure 40001, deadlock 40P01, lock not available
    55P03, a statement cancelled after a lock or statement timeout 57014) or a lost connection."""
    if _connection_lost(exc):
        return True
    if not isinstance(exc, OperationalError):
        return False
    if connection.vendor == "sqlite":
        return "locked" in str(exc) or "busy" in str(exc)
    return getattr(exc.__cause__, "sqlstate", None) in ("40001", "40P01", "55P03", "57014")


def _fail(job: Job, exc: Exception) -> None:
    """Record why a job failed: an ingest's problems, a lost database session, or an internal error (by id).

    A job that recorded its end with its data (`job_record`) has succeeded whatever fails after that
    commit: the error goes to the log only."""
    if job.state == JobState.SUCCEEDED:
        log.error("job %s failed after its data and its end were stored", job.id, exc_info=exc)
        return
    stored = _stored_words(job)
    retry_may_fix = True
    if isinstance(exc, IngestFailed):
        errors = [str(p) for p in exc.problems]
        count = exc.total
        # what was read is not what was stored: no "created" counts beside "nothing was stored"
        message = f"{exc.total} problem(s); nothing was stored."
        retry_may_fix = exc.retry_may_fix
        if not retry_may_fix:
            message += " A retry would read the same files: fix them and import them again."
    elif _connection_lost(exc):
        log.warning("job %s lost its database connection: %s", job.id, exc)
        errors = ["database connection lost: " + (str(exc).strip().splitlines() or [type(exc).__name__])[0]]
        count = 1
        message = (
            f"The job lost its database connection (the database restarted or ended the session); {stored} Retry it."
        )
    else:
        error_id = _error_id()
        # the traceback (paths, code, values) goes to the log only; the job shows the kind of error and its id
        log.error("job %s failed (error id %s)", job.id, error_id, exc_info=exc)
        errors = [f"internal error {type(exc).__name__} (error id {error_id})"]
        count = 1
        message = (
            f"The job stopped with an internal error (error id {error_id}); {stored} "
            "Retry it; if it fails again, give the error id to an administrator (it is in the server log)."
        )
    fields = {
        "state": JobState.FAILED,
        "errors": errors,
        "error_count": count,
        "message": message,
        "finished_at": timezone.now(),
        "retry_may_fix": retry_may_fix,
    }
    if not job.counts:
        fields["counts"] = {}
    _job_update(job.id, **fields)


def _error_id() -> str:
    """A short id that ties what a user sees to the traceback in the server log."""
    return uuid.uuid4().hex[:12]


def _fail_unstarted(job_id, exc: Exception) -> None:
    """Mark a queued job failed because it could not start (its claim met a database error), so that no
    job waits for ever in `queued`: the user sees why and can retry it. Tries a few times (`_job_update`),
    the database being busy is why it is here."""
    error_id = _error_id()
    log.warning("job %s could not start (error id %s)", job_id, error_id, exc_info=exc)
    fields = {
        "state": JobState.FAILED,
        "error_count": 1,
        "counts": {},
        "finished_at": timezone.now(),
        "errors": [f"could not start: the database was busy or unavailable (error id {error_id})"],
        "message": (
            f"The job could not start: the database was busy or unavailable (error id {error_id}); "
            "nothing was stored. Retry it."
        ),
    }
    try:
        _job_update(job_id, was=JobState.QUEUED, **fields)
    except (InterfaceError, OperationalError):
        log.error("job %s stays queued: marking it failed met the database error again", job_id)


def _connection_lost(exc: Exception) -> bool:
    """Whether a job failed because its database session died (not because of its data).

    The transaction's exit has already reconnected, so the error itself tells: PostgreSQL's
    connection-exception (08) and operator-intervention (57P: terminated, shut down) classes,
    or a client-side error without a server state (socket closed).
    """
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError) or connection.vendor != "postgresql":
        return False
    state = getattr(exc.__cause__, "sqlstate", None)
    return state is None or state.startswith(("08", "57P"))


# uploaded files -----------------------------------------------------------------------
def upload_dir(job_id) -> Path:
    """The folder an import job's uploaded files are saved in (created if missing)."""
    path = Path(settings.MEDIA_ROOT) / "uploads" / str(job_id)
    path.mkdir(parents=True, exist_ok=True)
    return path


#: an upload folder without a committed job may be an import still being saved (its files are written inside the
#: transaction that creates its job): such a folder is removed only once it is this old, whatever `days` says
ORPHAN_UPLOAD_MIN_AGE = timedelta(days=1)


def uploads_clean(*, days: int | None = None, now=None) -> list[str]:
    """Delete the uploaded files of jobs that finished more than `days` ago, and upload folders of jobs that no
    longer exist once as old (and at least ORPHAN_UPLOAD_MIN_AGE); the ids of the folders removed.

    `days` defaults to IFPORTAL_UPLOAD_RETENTION_DAYS, whose 0 keeps uploads for ever; `days=0` given deletes the
    uploads of every finished job (queued and running jobs keep theirs: the job reads them). A negative `days`
    raises ValueError. A cleaned job keeps its file names (its page and the API still say what was imported) with
    `"removed": true` instead of a path, and can no longer be retried (`selectors.job_can_retry`): its files are
    marked removed before they go, and only while it is still finished (a job queued again since keeps them).
    Run by `manage.py uploads_clean` (cron) and, with Celery, daily by the beat schedule.
    """
    if days is None:
        days = settings.IFPORTAL_UPLOAD_RETENTION_DAYS
        if days <= 0:
            return []
    if days < 0:
        raise ValueError(f"days must be 0 or more (0 deletes the uploads of every finished job), not {days}")
    now = now or timezone.now()
    cutoff = now - timedelta(days=days)
    root = Path(settings.MEDIA_ROOT) / "uploads"
    removed = []
    finished = (JobState.SUCCEEDED, JobState.FAILED)
    old = Job.objects.filter(state__in=finished, finished_at__lt=cutoff).exclude(files=[])
    for job in old.only("id", "files").iterator():
        if all(f.get("removed") for f in job.files):
            continue
        marked = Job.objects.filter(pk=job.pk, state__in=finished).update(
            files=[{"name": f.get("name", ""), "removed": True} for f in job.files]
        )
        if marked:
            shutil.rmtree(root / str(job.id), ignore_errors=True)
            removed.append(str(job.id))
    if root.is_dir():
        known = {str(pk) for pk in Job.objects.values_list("id", flat=True)}
        orphaned_before = min(cutoff, now - ORPHAN_UPLOAD_MIN_AGE).timestamp()
        for folder in root.iterdir():
            if folder.name not in known and folder.stat().st_mtime < orphaned_before:
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder.name)
    return removed
