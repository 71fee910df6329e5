"""Reads for the home, import and job pages and the list APIs; each kind's page state (query -> validated
state -> the page's data, called by its page and its API alike) is `runs/selectors/<kind>.py`.

Counts come from a fixed number of grouped queries (never one per row), and verdict
counts from AttemptRollup (n_items per attempt x judge), so no page scans the verdict table.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.db.models import Count, F, OuterRef, Prefetch, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.urls import NoReverseMatch, reverse

from runs.access import can_write
from runs.jobs import JOB_PROGRESS_UNITS, job_progress
from runs.models import Attempt, AttemptRollup, Benchmark, ChecklistItem, Instance, Job, JobState, JudgeReport, Run
from runs.recheck import RECHECK_PAGES

RECENT_JOBS = 100


@dataclass
class BenchmarkRow:
    """A benchmark with how much is stored for it."""

    id: int
    slug: str
    name: str
    kind: str
    kind_label: str
    version: str
    url: str | None = None
    n_instances: int = 0
    n_items: int = 0
    n_runs: int = 0
    n_attempts: int = 0
    n_verdicts: int = 0
    judges: list[str] = field(default_factory=list)
    #: where its runs came from ("Inspect AI log", "OctoBench files", ...), from the formats they were imported in
    origins: list[str] = field(default_factory=list)


#: what the home page calls the files of each ingest format (by the format name's first word)
ORIGINS = {
    "octobench": "OctoBench files",
    "evolif": "EvolIF files",
    "manyih": "ManyIH files",
    "guidebench": "GuideBench files",
    "native": "native JSONL",
    "inspect": "Inspect AI logs",
    "lm": "lm-evaluation-harness samples",
}


def origin_of(format_name: str) -> str:
    return ORIGINS.get(format_name.split("-")[0], format_name)


@dataclass
class RunRow:
    """A run with its attempts, verdicts and the judges that gave them."""

    id: int
    benchmark_slug: str
    benchmark_name: str
    label: str
    model: str
    repetition: int
    scaffold: str
    created_at: dt.datetime
    n_attempts: int = 0
    n_verdicts: int = 0
    judges: list[str] = field(default_factory=list)


@dataclass
class Overview:
    """Everything the home page lists."""

    benchmarks: list[BenchmarkRow]
    runs: list[RunRow]


#: the page a benchmark's name links to, by kind (a conflict benchmark's own page reads its resolution items)
KIND_PAGES: dict[str, str] = {
    "checklist": "runs:checklist-leaderboard",
    "conflict": "runs:conflict-metrics",
    "dialogue": "runs:dialogue-metrics",
    "hierarchy": "runs:hierarchy-metrics",
    "choice": "runs:choice-metrics",
}
#: kind -> what the search box suggests looking for in that kind's transcripts (its placeholder)
SEARCH_EXAMPLES: dict[str, str] = {
    "checklist": "git push --force",
    "conflict": "system prompt",
    "dialogue": "bullet points",
    "hierarchy": "snake_case",
    "choice": "refund",
}


def benchmark_page_url(benchmark: Benchmark) -> str | None:
    """The main page of the benchmark's kind (None for a kind the portal has no pages for)."""
    name = KIND_PAGES.get(benchmark.kind)
    return reverse(name, kwargs={"slug": benchmark.slug}) if name else None


def overview() -> Overview:
    """Every benchmark and every run with their counts, in six queries whatever the number of rows."""
    benchmarks = {
        b.id: BenchmarkRow(
            id=b.id,
            slug=b.slug,
            name=b.name,
            kind=b.kind,
            kind_label=b.get_kind_display(),
            version=b.version,
            url=benchmark_page_url(b),
        )
        for b in Benchmark.objects.all()
    }
    for row in Instance.objects.values("benchmark_id").annotate(n=Count("id")).order_by():
        benchmarks[row["benchmark_id"]].n_instances = row["n"]
    items = ChecklistItem.objects.values(bid=F("instance__benchmark_id")).annotate(n=Count("id")).order_by()
    for row in items:
        benchmarks[row["bid"]].n_items = row["n"]

    runs: dict[int, RunRow] = {}
    run_benchmark: dict[int, int] = {}
    for run in Run.objects.select_related("benchmark", "model").order_by("benchmark__slug", "label"):
        runs[run.id] = RunRow(
            id=run.id,
            benchmark_slug=run.benchmark.slug,
            benchmark_name=str(run.benchmark),
            label=run.label,
            model=str(run.model),
            repetition=run.repetition,
            scaffold=run.scaffold,
            created_at=run.created_at,
        )
        run_benchmark[run.id] = run.benchmark_id
        benchmarks[run.benchmark_id].n_runs += 1
        origins = benchmarks[run.benchmark_id].origins
        for source in run.sources:
            origin = (
                origin_of(str(source.get("format") or ""))
                if isinstance(source, dict) and source.get("format")
                else None
            )
            if origin and origin not in origins:
                origins.append(origin)
    for row in Attempt.objects.values("run_id").annotate(n=Count("id")).order_by():
        runs[row["run_id"]].n_attempts = row["n"]
        benchmarks[run_benchmark[row["run_id"]]].n_attempts += row["n"]

    benchmark_judges: dict[int, set[str]] = defaultdict(set)
    rollups = (
        AttemptRollup.objects.values("run_id", judge_name=F("judge__name"))
        .annotate(n=Sum("n_items"))
        .order_by("judge_name")
    )
    for row in rollups:
        run = runs[row["run_id"]]
        run.n_verdicts += row["n"]
        run.judges.append(row["judge_name"])
        bid = run_benchmark[row["run_id"]]
        benchmarks[bid].n_verdicts += row["n"]
        benchmark_judges[bid].add(row["judge_name"])
    for bid, names in benchmark_judges.items():
        benchmarks[bid].judges = sorted(names)
    return Overview(benchmarks=list(benchmarks.values()), runs=list(runs.values()))


def jobs_recent(*, state: str | None = None, limit: int = RECENT_JOBS) -> QuerySet[Job]:
    """The latest jobs (newest first), optionally in one state, with who started them."""
    qs = Job.objects.select_related("created_by").order_by("-created_at")
    if state in JobState.values:
        qs = qs.filter(state=state)
    return qs[:limit]


def job_can_retry(user, job: Job) -> bool:
    """Only the person who started a failed job (or staff), while they may write (runs.access.can_write), queues it
    again, while its uploads are kept (runs.jobs.uploads_clean deletes them after the retention period), and only
    when a retry may end otherwise (`Job.retry_may_fix`: not when the job's own files were refused)."""
    return (
        job.state == JobState.FAILED
        and job.retry_may_fix
        and (user.is_staff or job.created_by_id == user.id)
        and can_write(user)
        and not job_files_removed(job)
    )


def job_files_removed(job: Job) -> bool:
    """Whether the job's uploaded files were deleted after the retention period."""
    return any(f.get("removed") for f in job.files)


# API lists ----------------------------------------------------------------------------
def benchmarks_list() -> QuerySet[Benchmark]:
    """Benchmarks with their instance and run counts (subqueries, so the two joins do not multiply)."""
    return Benchmark.objects.annotate(
        n_instances=_count_of(Instance, "benchmark"), n_runs=_count_of(Run, "benchmark")
    ).order_by("slug")


def _count_of(model, field_name: str):
    sub = model.objects.filter(**{field_name: OuterRef("pk")}).values(field_name).annotate(n=Count("id")).values("n")
    return Coalesce(Subquery(sub), 0)


def runs_list(*, benchmark: str | None = None, model: str | None = None) -> QuerySet[Run]:
    """Runs filtered by benchmark slug and model name, with their attempt count."""
    qs = Run.objects.select_related("benchmark", "model").annotate(n_attempts=_count_of(Attempt, "run"))
    if benchmark:
        qs = qs.filter(benchmark__slug=benchmark)
    if model:
        qs = qs.filter(model__name=model)
    return qs.order_by("benchmark__slug", "label")


def attempts_list(
    *, benchmark: str | None = None, run: str | None = None, instance: str | None = None
) -> QuerySet[Attempt]:
    """Attempts filtered by benchmark slug, run label and instance external id; trajectories are not loaded."""
    qs = (
        Attempt.objects.select_related("run__benchmark", "run__model", "instance")
        .annotate(message_count=F("trajectory__message_count"), trajectory_bytes=F("trajectory__size_bytes"))
        .defer("instance__spec")
        .prefetch_related(
            Prefetch("judge_reports", queryset=JudgeReport.objects.select_related("judge").order_by("judge__name"))
        )
    )
    if benchmark:
        qs = qs.filter(run__benchmark__slug=benchmark)
    if run:
        qs = qs.filter(run__label=run)
    if instance:
        qs = qs.filter(instance__external_id=instance)
    return qs.order_by("run__benchmark__slug", "run__label", "instance__external_id")


# jobs ---------------------------------------------------------------------------------
OUTCOME_ORDER = ("created", "updated", "unchanged", "removed")


@dataclass
class JobStatus:
    """What the job page and the job API show: live progress, counts per kind, the listed errors."""

    job: Job
    done: int
    total: int
    percent: float
    outcomes: list[str]
    by_kind: list[tuple[str, list[int]]]
    errors: list[str]
    more_errors: int
    seconds: float | None
    #: what `done` and `total` count ("bytes": an import's files), or None for a job without progress
    unit: str | None = None


@dataclass
class RecheckedRuns:
    """The runs a re-check job checked, each with its re-check page, and the page of them all."""

    benchmark: Benchmark
    url_name: str
    url: str
    runs: list[tuple[str, str]]


def job_rechecked(job: Job) -> RecheckedRuns | None:
    """The benchmark and runs of a re-check job, with the pages that show what it wrote (runs deleted since are
    left out); None for other jobs. Two queries: the job page calls it, not the job lists."""
    if job.kind != "recheck":
        return None
    runs = list(
        Run.objects.filter(id__in=job.params.get("run_ids") or []).select_related("benchmark").order_by("label")
    )
    benchmark = runs[0].benchmark if runs else Benchmark.objects.filter(slug=job.params.get("benchmark") or "").first()
    url_name = RECHECK_PAGES.get(benchmark.kind, "") if benchmark is not None else ""
    try:
        page = reverse(url_name, args=[benchmark.slug]) if benchmark is not None else None
    except NoReverseMatch:  # a kind without re-checks (the job was started by hand)
        page = None
    if page is None:
        return None
    return RecheckedRuns(
        benchmark=benchmark,
        url_name=url_name,
        url=page + ("?" + urlencode([("run", r.label) for r in runs]) if runs else ""),
        runs=[(r.label, f"{page}?{urlencode({'run': r.label})}") for r in runs],
    )


def job_status(job: Job) -> JobStatus:
    """The job with its live progress (from the cache while it runs) in its kind's unit and its counts laid out
    as a table."""
    done, total = job_progress(job)
    if job.state == JobState.SUCCEEDED:
        percent = 100.0
    else:
        percent = round(min(100.0, 100 * done / total), 2) if total else 0.0
    by_kind: dict[str, dict] = (job.counts or {}).get("by_kind") or {}
    seen = {outcome for counts in by_kind.values() for outcome in counts}
    outcomes = [o for o in OUTCOME_ORDER if o in seen] + sorted(seen - set(OUTCOME_ORDER))
    rows = [(kind, [counts.get(o, 0) for o in outcomes]) for kind, counts in by_kind.items()]
    errors = list(job.errors or [])
    return JobStatus(
        job=job,
        done=done,
        total=total,
        percent=percent,
        outcomes=outcomes,
        by_kind=rows,
        errors=errors,
        more_errors=max(0, job.error_count - len(errors)),
        seconds=(job.finished_at - job.started_at).total_seconds() if job.finished_at and job.started_at else None,
        unit=JOB_PROGRESS_UNITS.get(job.kind),
    )


def item_versions(instance_id: int) -> dict[int, dict]:
    """The version links of an instance's rewritten items (one query); items never rewritten are absent.

    item id -> {"version", "supersedes": the older version's {id, key, version, description} or None,
    "superseded_by": the newer version's {id, key, version, description} or None}. An audit
    rewrite keeps both versions in the same instance (ChecklistItem.supersedes).
    """
    rows = {
        r["id"]: r
        for r in ChecklistItem.objects.filter(instance_id=instance_id)
        .filter(Q(supersedes__isnull=False) | Q(superseded_by__isnull=False))
        .values("id", "key", "version", "description", "supersedes_id")
        .order_by()
    }
    out = {pk: {"version": r["version"], "supersedes": None, "superseded_by": None} for pk, r in rows.items()}
    for pk, row in rows.items():
        older = rows.get(row["supersedes_id"])
        if older is not None:
            out[pk]["supersedes"] = older
            out[older["id"]]["superseded_by"] = row
    return out
