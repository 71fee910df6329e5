"""Find or create the rows an ingest hangs its records on: benchmark, model, judge, run,
and indexes of existing instances and items for resolving references."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.db import connection

from runs.ingest.base import Context, Source
from runs.ingest.options import option_ask, option_name
from runs.models import AgentModel, Attempt, Benchmark, ChecklistItem, Instance, Judge, JudgeKind, Run
from runs.services import benchmarks_lock, catalog_lock

_SLUG_BAD = re.compile(r"[^-a-zA-Z0-9_]+")


def slug_for(name: str) -> str:
    """A benchmark slug made of a harness's task name (what a slug cannot hold becomes '-')."""
    return (_SLUG_BAD.sub("-", name).strip("-") or "benchmark")[:100]


def category_of(record: Any, field: str | None, default: str) -> str:
    """An instance's primary category: the value of `field` in a harness's sample record (its metadata, an
    lm-eval doc) when asked for and present, else `default` (the task)."""
    value = record.get(field) if field and isinstance(record, dict) else None
    if value is None or isinstance(value, (dict, list)):
        return default[:200]
    return str(value)[:200]


def benchmark_get_or_create(ctx: Context, *, default_slug: str, kind: str, name: str) -> Benchmark:
    """The benchmark named by --benchmark (or the format's default), created if missing, locked
    for the rest of the ingest (see `benchmark_lock_for_ingest`)."""
    slug = ctx.options.benchmark or default_slug
    if slug in ctx.benchmarks_by_slug:  # read and locked by an earlier file of this ingest
        return ctx.benchmarks_by_slug[slug]
    benchmark = Benchmark.objects.filter(slug=slug).first()
    if benchmark is None:
        catalog_lock(slug)
        name = benchmark_name_for(slug, default_slug=default_slug, format_name=name, given=ctx.options.name)
        benchmark_name_check(ctx, slug, name, ctx.source or option_name(ctx.options, "name"), None)
        benchmark, created = Benchmark.objects.get_or_create(slug=slug, defaults={"kind": kind, "name": name})
        if created:
            ctx.report.add("benchmarks", "created")
    benchmark_lock_for_ingest(benchmark, ctx)
    ctx.benchmarks_by_slug[slug] = benchmark
    return benchmark


def benchmark_name_check(ctx: Context, slug: str, name: str, source: Source | str, line: int | None) -> bool:
    """Whether `name` is free for the benchmark `slug` (no other benchmark has it, in any letter case);
    reports a problem if not, so two benchmarks never show the same name."""
    taken = Benchmark.objects.filter(name__iexact=name).exclude(slug=slug).values_list("slug", "name").first()
    if taken is None:
        return True
    ctx.problem(
        source,
        line,
        f"benchmark '{taken[0]}' is already named '{taken[1]}': give the benchmark '{slug}' "
        f"another name ({option_name(ctx.options, 'name')})",
    )
    return False


def benchmark_name_for(slug: str, *, default_slug: str, format_name: str, given: str | None = None) -> str:
    """The display name of a new benchmark: the one given, the format's for its own slug, else the format's
    name with the slug ("OctoBench (octobench-v2)"), so two benchmarks never share a name by default."""
    if given:
        return given.strip()
    return format_name if slug == default_slug else f"{format_name} ({slug})"


def benchmark_existing(ctx: Context, source: Source, *, default_slug: str) -> Benchmark | None:
    """The benchmark results refer to, locked for the rest of the ingest; a missing one is a
    problem (load its instances first)."""
    slug = ctx.options.benchmark or default_slug
    if slug in ctx.benchmarks_by_slug:  # read and locked by an earlier file of this ingest
        return ctx.benchmarks_by_slug[slug]
    benchmark = Benchmark.objects.filter(slug=slug).first()
    if benchmark is None:
        ctx.problem(
            source,
            None,
            f"benchmark '{slug}' does not exist: ingest its instances first (or name the benchmark they "
            f"are in: {option_ask(ctx.options, 'benchmark')})",
            awaits_import=True,
        )
        return None
    benchmark_lock_for_ingest(benchmark, ctx)
    ctx.benchmarks_by_slug[slug] = benchmark
    return benchmark


def benchmark_lock_for_ingest(benchmark: Benchmark, ctx: Context | None = None) -> None:
    """Take the benchmark's write lock before reading any of its rows: a concurrent ingest of
    the same benchmark waits here until the other commits, then sees its rows (so the same
    file ingested twice at once ends with the second one "unchanged"). With `ctx`, the ingest
    remembers the benchmark so its data generation is bumped when the ingest changes anything."""
    benchmarks_lock([benchmark.id])
    if ctx is not None:
        ctx.benchmarks.add(benchmark.id)


def model_get_or_create(name: str) -> AgentModel:
    found = AgentModel.objects.filter(name=name).first()
    if found is not None:
        return found
    catalog_lock()
    return AgentModel.objects.get_or_create(name=name)[0]


def _catalogued(ctx: Context, key: tuple, find: Callable[[], Any]) -> Any:
    """What `find()` gives, asked once per key in an ingest (Context.catalog)."""
    if key not in ctx.catalog:
        ctx.catalog[key] = find()
    return ctx.catalog[key]


def judge_of_ingest(ctx: Context, name: str, kind: str = JudgeKind.LLM) -> Judge:
    """judge_get_or_create, asked once per name in an ingest."""
    return _catalogued(ctx, ("judge", name), lambda: judge_get_or_create(name, kind))


def judge_get_or_create(name: str, kind: str = JudgeKind.LLM) -> Judge:
    found = Judge.objects.filter(name=name).first()
    if found is not None:
        return found
    catalog_lock()
    return Judge.objects.get_or_create(name=name, defaults={"kind": kind})[0]


def run_get_or_create(
    ctx: Context,
    *,
    benchmark: Benchmark,
    model_name: str,
    label: str | None = None,
    settings: dict[str, Any] | None = None,
) -> Run:
    """The run named by --run (default: the model name), for --model, with --repetition and --scaffold."""
    label = ctx.options.run or label or model_name
    model = _catalogued(ctx, ("model", model_name), lambda: model_get_or_create(model_name))
    run = ctx.catalog.get(("run", benchmark.id, label))
    if run is None:
        run = Run.objects.filter(benchmark=benchmark, label=label).first()
    if run is None:
        run = Run.objects.create(
            benchmark=benchmark,
            model=model,
            label=label,
            repetition=ctx.options.repetition or 1,
            scaffold=ctx.options.scaffold or "",
            settings=settings or {},
        )
        ctx.report.add("runs", "created")
        ctx.catalog[("run", benchmark.id, label)] = run
        ctx.created_runs.add(run.id)
        return run
    ctx.catalog[("run", benchmark.id, label)] = run
    if run.model_id != model.id:
        ctx.problem(
            option_name(ctx.options, "run"),
            None,
            f"run '{label}' belongs to model '{run.model.name}', not '{model_name}'",
        )
        return run
    changed = False
    if settings:
        merged = {**run.settings, **settings}
        if merged != run.settings:
            run.settings, changed = merged, True
    if ctx.options.repetition and run.repetition != ctx.options.repetition:
        run.repetition, changed = ctx.options.repetition, True
    if ctx.options.scaffold and run.scaffold != ctx.options.scaffold:
        run.scaffold, changed = ctx.options.scaffold, True
    if changed and not ctx.failed:
        run.save()
        ctx.report.add("runs", "updated")
    return run


class InstanceIndex:
    """external id -> instance id, and (instance id, item key) -> item id, loaded lazily; one per benchmark and
    ingest (`of`)."""

    @classmethod
    def of(cls, ctx: Context, benchmark: Benchmark) -> InstanceIndex:
        """The benchmark's index for every file of this ingest: the formats that read it write no instance or
        item, so it is loaded once, not once a file."""
        if benchmark.id not in ctx.instance_indexes:
            ctx.instance_indexes[benchmark.id] = cls(benchmark)
        return ctx.instance_indexes[benchmark.id]

    def __init__(self, benchmark: Benchmark):
        self.benchmark = benchmark
        self.instances: dict[str, int] = dict(
            Instance.objects.filter(benchmark=benchmark).values_list("external_id", "id")
        )
        self._items: dict[int, dict[str, int]] = {}

    def instance_id(self, external_id: str) -> int | None:
        return self.instances.get(str(external_id))

    def items(self, instance_id: int) -> dict[str, int]:
        """{item key: item id} of one instance; the whole benchmark's items load in one query."""
        if not self._items:
            # fetched in one go, not through Django's row iterator: this runs once per ingest, and for a
            # 7,161-item benchmark the iterator took twice as long as the query (the dict holds it all anyway)
            sql, params = (
                ChecklistItem.objects.filter(instance__benchmark=self.benchmark)
                .values_list("instance_id", "key", "id")
                .query.sql_with_params()
            )
            with connection.cursor() as cursor:
                cursor.execute(sql, params)
                for iid, key, pk in cursor.fetchall():
                    self._items.setdefault(iid, {})[key] = pk
            self._items.setdefault(-1, {})  # marks "loaded" for a benchmark without items
        return self._items.get(instance_id, {})


def attempts_upsert(ctx: Context, run: Run, rows: list[dict[str, Any]], *, compare: tuple[str, ...]) -> dict[int, int]:
    """Upsert attempts of `run` keyed by instance id; returns {instance id: attempt id}."""
    for row in rows:
        row["run_id"] = run.id
    ids = ctx.upsert(Attempt, rows, key=("run_id", "instance_id"), compare=compare, kind="attempts")
    found = {k[1]: v for k, v in ids.items()}
    ctx.attempts_known.setdefault(run.id, {}).update(found)  # so attempt_ids_for finds them (a run it created)
    return found


def attempt_ids_for(ctx: Context, run: Run, instance_ids: list[int]) -> dict[int, int]:
    """Existing attempts of a run, {instance id: attempt id}; creates empty ones for the rest
    (verdicts may arrive before or without a trajectory). What this ingest created or found is not read again
    (a run's second judge's file finds every attempt known), nor the attempts of a run it created (none but its own)."""
    known = ctx.attempts_known.setdefault(run.id, {})
    wanted = list(dict.fromkeys(instance_ids))
    found = {i: known[i] for i in wanted if i in known}
    unknown = [i for i in wanted if i not in found]
    if unknown and run.id not in ctx.created_runs:  # a run this ingest created has only the attempts it knows
        found.update(
            Attempt.objects.filter(run=run, instance_id__in=unknown).values_list("instance_id", "id").order_by()
        )  # unordered: the model's ordering joins four tables for nothing here
    missing = [i for i in wanted if i not in found]
    ctx.report.add("attempts", "created", len(missing))
    if missing and not ctx.failed:
        created = Attempt.objects.bulk_create([Attempt(run=run, instance_id=i) for i in missing])
        found.update({a.instance_id: a.id for a in created})
        ctx.created_attempts.update(a.id for a in created)
    known.update(found)
    return found


def file_items(**filters):
    """The checklist items an import file owns and may remove when it no longer lists them: all but an
    audit's rewrites and the versions they superseded (both stay, linked, whatever a file says)."""
    return ChecklistItem.objects.filter(supersedes__isnull=True, superseded_by__isnull=True, **filters)
