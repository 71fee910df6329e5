"""Micro-benchmark of tie groups, rank intervals and a paired comparison at the 10M study's shape.

`python -m ifportal.benchmarks.ties [--models 100] [--repeats 5] [--profile]` builds each model's per-instance
ISR and CSR counts as the 10M study (`make benchmark-10m`) leaves them, without a database: 217 instances of 33
items, 100 models of skill 0.80-0.95 (ifportal.benchmarks.study.study_write's draw: an item passes with the
model's skill, the same outcome for every judge of a repetition, each judge misreading it at 7%), 3 repetitions and
5 judges, summed per instance and judge as runs.metrics.checklist.base_sides sums the rollups. It then times
runs.metrics.paired.rank_intervals, tie_groups and paired_difference on them, and the paired table of two models
(runs.metrics.comparison.paired_table) (median and max of `--repeats`
calls, each on fresh copies of the arrays so no per-call cache helps, and the median CPU time) and prints the load
average."""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

import numpy as np

from runs.metrics import comparison, paired


def study_sides(
    *, models: int = 100, instances: int = 217, items: int = 33, repetitions: int = 3, judges: int = 5, seed: int = 7
) -> dict[str, dict[str, paired.Side]]:
    """Per figure ("isr", "csr"), per model name, its Side (instances x judges), as base_sides gives it."""
    rng = np.random.default_rng(seed)
    sides: dict[str, dict[str, paired.Side]] = {"isr": {}, "csr": {}, "macro_csr": {}}
    for m in range(models):
        skill = 0.80 + 0.15 * m / max(1, models - 1)
        truth = rng.random((repetitions, instances, items)) < skill
        misread = rng.random((judges, repetitions, instances, items)) < 0.07
        seen = truth[None] ^ misread
        passed = seen.sum(axis=3)  # (judges, repetitions, instances)
        isr_num = (passed == items).sum(axis=1).T.astype(float)
        csr_num = passed.sum(axis=1).T.astype(float)
        name = f"model-{m}"
        sides["isr"][name] = (isr_num, np.full((instances, judges), float(repetitions)))
        sides["csr"][name] = (csr_num, np.full((instances, judges), float(repetitions * items)))
        sides["macro_csr"][name] = ((passed / items).sum(axis=1).T, np.full((instances, judges), float(repetitions)))
    return sides


def comparison_table(sides: dict[str, dict[str, paired.Side]], baseline: str, candidate: str):
    """runs.metrics.comparison.paired_table of two models on ISR, CSR and macro CSR, per judge and per primary
    category (the study's four, instance i's being i % 4), as runs.selectors.checklist.compare_paired makes it."""
    instances = len(next(iter(sides["isr"].values()))[0])
    judges = next(iter(sides["isr"].values()))[0].shape[1]
    counted = comparison.CountedSides(
        list(range(instances)),
        [f"judge-{j}" for j in range(judges)],
        {i: ["SP", "Skill", "Claude.md", "AGENTS.md"][i % 4] for i in range(instances)},
        tuple({figure: by_model[name] for figure, by_model in sides.items()} for name in (baseline, candidate)),
    )
    return comparison.paired_table(
        "bench", baseline, candidate, counted, metrics={"isr": "ISR", "csr": "CSR", "macro_csr": "macro CSR"}
    )


def _fresh(sides: dict[str, paired.Side]) -> dict[str, paired.Side]:
    return {name: (num.copy(), den.copy()) for name, (num, den) in sides.items()}


def timed(fn, sides: dict[str, paired.Side], repeats: int) -> tuple[float, float, float]:
    """Median and max wall milliseconds of fn(sides) over `repeats` calls, each on fresh copies, and the median
    CPU milliseconds of the process (what a call costs however busy the machine is, numpy's threads included)."""
    times, cpu = [], []
    for _ in range(repeats):
        copy = _fresh(sides)
        start, start_cpu = time.perf_counter(), time.process_time()
        fn(copy)
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return float(np.median(times)), float(max(times)), float(np.median(cpu))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions of each call")
    args = parser.parse_args()
    sides = study_sides(models=args.models)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    names = list(sides["isr"])
    pair = (names[len(names) // 2 - 1], names[len(names) // 2])
    for figure in ("isr", "csr"):
        by_model = sides[figure]
        calls = {
            "rank_intervals": paired.rank_intervals,
            "tie_groups": paired.tie_groups,
            "ties (both)": paired.ties,
            "paired_difference": lambda s: paired.paired_difference(s[pair[0]], s[pair[1]]),
        }
        groups = paired.tie_groups(by_model)
        print(f"{figure}: {len(set(groups.values()))} tie groups among {len(by_model)} models")
        for label, fn in calls.items():
            median, worst, cpu = timed(fn, by_model, args.repeats)
            print(f"  {label:18s} median {median:7.1f} ms  max {worst:7.1f} ms  CPU median {cpu:7.1f} ms")
            if args.profile and label != "ties (both)":
                profile = cProfile.Profile()
                profile.runcall(fn, _fresh(by_model))
                pstats.Stats(profile).sort_stats("cumulative").print_stats(12)
    table = comparison_table(sides, *pair)
    median, worst, cpu = timed(lambda _: comparison_table(sides, *pair), {}, args.repeats)
    print(
        f"paired table of two models ({len(table.figures)} rows: ISR, CSR, macro CSR; pooled, per judge, per category)"
    )
    print(f"  {'paired_table':18s} median {median:7.1f} ms  max {worst:7.1f} ms  CPU median {cpu:7.1f} ms")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
