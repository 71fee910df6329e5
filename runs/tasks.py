"""Celery tasks: thin wrappers that take ids and call a service."""

from celery import shared_task

from runs.cache_warming import ITEM_HEALTH_TASK, item_health_default
from runs.jobs import RUN_JOB_TASK, job_execute
from runs.jobs import uploads_clean as job_uploads_clean
from runs.search_index import REASONING_INDEX_TASK, reasoning_index_catch_up


@shared_task(name=RUN_JOB_TASK, acks_late=True)
def run_job(job_id: str) -> None:
    """Run one job (ingest, rollup rebuild, re-check) by id; a second delivery does nothing."""
    job_execute(job_id)


@shared_task(name="runs.uploads_clean")
def uploads_clean() -> int:
    """Delete uploads kept past IFPORTAL_UPLOAD_RETENTION_DAYS (daily on the beat schedule)."""
    return len(job_uploads_clean())


@shared_task(name=REASONING_INDEX_TASK)
def reasoning_index() -> int | None:
    """Make the judge reasoning of newly stored verdicts searchable (runs.search_index); None when another
    worker is at it."""
    return reasoning_index_catch_up()


@shared_task(name=ITEM_HEALTH_TASK)
def item_health_fit(benchmark_ids: list[int]) -> None:
    """Fit and cache the item health of these benchmarks after a write (runs.cache_warming)."""
    item_health_default(benchmark_ids)
