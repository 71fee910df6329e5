"""Synthetic demo study: source files in each benchmark's own format, ingested through `runs.ingest`.

`demo_load(seed=..., scale=...)` (what `manage.py demo` and `make run` call) writes OctoBench, EvolIF, ManyIH,
GuideBench and OctoBench-Conflict files into a temporary directory and ingests them exactly as a user would, so
the demo shows what the real ingest path stores. Everything is drawn from random generators seeded by
(seed, benchmark), so one seed always gives the same rows. All texts are written for the demo (no real data).

One module per benchmark (`octobench.py`, `evolif.py`, `manyih.py`, `guidebench.py`, `conflict.py`) holds its
planner, which returns a `plan.Plan`: the files it wrote and the ingest steps that read them. `plan.py` holds
what they share (the study sizes, the seeded random source, the file writers); this module runs the plans.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from runs.demo.conflict import conflict_plan
from runs.demo.evolif import evolif_plan
from runs.demo.guidebench import guidebench_plan
from runs.demo.manyih import manyih_plan
from runs.demo.octobench import octobench_plan
from runs.demo.plan import SCALES, Plan, Scale
from runs.ingest import FORMATS, Source, ingest
from runs.models import Attempt, Benchmark, ChecklistItem, Instance, Run, Verdict
from runs.recheck import recheck_run

__all__ = [
    "PLANNERS",
    "SCALES",
    "BenchmarkResult",
    "benchmark_counts",
    "conflict_plan",
    "demo_database_empty",
    "demo_load",
    "evolif_plan",
    "format_available",
    "guidebench_plan",
    "manyih_plan",
    "octobench_plan",
    "verdict_fingerprint",
]


@dataclass
class BenchmarkResult:
    """What the demo stored for one benchmark (or why it skipped it)."""

    benchmark: str
    slug: str
    skipped: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


#: one planner per benchmark, in the order the demo loads them
PLANNERS: list[Callable[[int, Scale, Path], Plan]] = [
    octobench_plan,
    evolif_plan,
    manyih_plan,
    guidebench_plan,
    conflict_plan,
]


def format_available(name: str) -> bool:
    """True if the ingest format's module is present (other formats may not have landed yet)."""
    module_name, func = FORMATS[name].split(":")
    try:
        module = importlib.import_module(f"runs.ingest.{module_name}")
    except ImportError:
        return False
    return callable(getattr(module, func, None))


def demo_database_empty() -> bool:
    """True if no benchmark exists yet (the demo refuses to mix into real data unless forced)."""
    return not Benchmark.objects.exists()


def demo_load(
    *, seed: int = 1, scale: str = "default", log: Callable[[str], None] = lambda _: None
) -> list[BenchmarkResult]:
    """Generate the demo study for `seed` and `scale` and ingest it; returns what each benchmark got."""
    sizes = SCALES[scale]
    results = []
    with tempfile.TemporaryDirectory(prefix="ifportal-demo-") as tmp:
        for planner in PLANNERS:
            started = time.perf_counter()
            plan = planner(seed, sizes, Path(tmp))
            missing = [f for f in plan.formats if not format_available(f)]
            if missing:
                result = BenchmarkResult(
                    plan.benchmark, plan.slug, skipped=f"ingest format(s) not available: {', '.join(missing)}"
                )
                log(f"{plan.benchmark}: skipped ({result.skipped})")
                results.append(result)
                continue
            for step in plan.steps:
                sources = [Source.of(path, path.name) for path in step.paths]
                ingest(step.format, sources, step.options)
                if step.run_settings:
                    _record_run_settings(plan.slug, step.run_settings)
            if plan.recheck:
                for run in Run.objects.filter(benchmark__slug=plan.slug).order_by("id"):
                    recheck_run(run=run)
            result = BenchmarkResult(
                plan.benchmark, plan.slug, counts=benchmark_counts(plan.slug), seconds=time.perf_counter() - started
            )
            log(
                f"{plan.benchmark}: "
                + ", ".join(f"{v} {k}" for k, v in result.counts.items())
                + f" ({result.seconds:.1f} s)"
            )
            results.append(result)
    return results


def _record_run_settings(slug: str, by_label: dict[str, dict]) -> None:
    for run in Run.objects.filter(benchmark__slug=slug, label__in=list(by_label)):
        merged = {**run.settings, **by_label[run.label]}
        if merged != run.settings:
            run.settings = merged
            run.save(update_fields=["settings"])


def benchmark_counts(slug: str) -> dict[str, int]:
    """Rows stored for one benchmark: instances, items, models, runs, attempts, verdicts, judges."""
    runs = Run.objects.filter(benchmark__slug=slug)
    verdicts = Verdict.objects.filter(attempt__run__benchmark__slug=slug)
    return {
        "instances": Instance.objects.filter(benchmark__slug=slug).count(),
        "checklist items": ChecklistItem.objects.filter(instance__benchmark__slug=slug).count(),
        "models": runs.values("model").distinct().count(),
        "runs": runs.count(),
        "attempts": Attempt.objects.filter(run__benchmark__slug=slug).count(),
        "verdicts": verdicts.count(),
        "judges": verdicts.values("judge").distinct().count(),
    }


def verdict_fingerprint() -> str:
    """SHA-256 of every verdict as sorted (benchmark, run, instance, item, judge, result) tuples."""
    rows = sorted(
        Verdict.objects.values_list(
            "attempt__run__benchmark__slug",
            "attempt__run__label",
            "attempt__instance__external_id",
            "item__key",
            "judge__name",
            "result",
        )
    )
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()
