"""python manage.py irt_check: how well the portal's 2PL fit (runs.metrics.irt) recovers known parameters from
simulated data, at one and at three verdicts per model and item over several simulated data sets, and how long a
large fit takes (docs/performance.md, "Item response fit")."""

import json
import os
import time

import numpy as np
from django.core.management.base import BaseCommand

from runs.metrics import irt

#: the targets: recovery correlations at 100 models x 2,000 items on every simulated data set, seconds at
#: 100 x 10,000
DIFFICULTY_TARGET = 0.9
DISCRIMINATION_TARGET = 0.8
SECONDS_TARGET = 60.0
#: exit status when a target is missed
MISSED = 1


class Command(BaseCommand):
    help = (
        "Simulate models x items pass/fail counts from a 2PL with known parameters, fit them, and print the "
        "correlations of the fitted difficulty, discrimination and ability with the true ones (mean and minimum "
        "over --seeds data sets, per number of verdicts per model and item) beside the best correlation any "
        "estimator can be expected to reach on each data set, then time a fit of models x timing-items. Exit 1 "
        "when a target is missed: mean difficulty r >= 0.9 and mean discrimination r >= 0.8 over the data sets "
        "at every --verdicts (one data set's r is a draw: the best reachable varies by +-0.015 between seeds), "
        "the timing under 60 s."
    )

    def add_arguments(self, parser):
        parser.add_argument("--models", type=int, default=100)
        parser.add_argument("--items", type=int, default=2000)
        parser.add_argument("--timing-items", type=int, default=10000)
        parser.add_argument(
            "--verdicts",
            type=int,
            action="append",
            default=[],
            help="verdicts per (model, item): attempts x judges (repeatable; default 1 and 3)",
        )
        parser.add_argument("--seed", type=int, default=1, help="the first data set's seed")
        parser.add_argument("--seeds", type=int, default=5, help="simulated data sets per --verdicts")
        parser.add_argument("--json", action="store_true", help="print one JSON document")

    def handle(self, *args, **options):
        models, items, first = options["models"], options["items"], options["seed"]
        seeds = list(range(first, first + options["seeds"]))
        report = {"models": models, "items": items, "seeds": seeds, "recovery": [], "load": os.getloadavg()[0]}
        for verdicts in options["verdicts"] or [1, 3]:
            report["recovery"].append(_recovery(models=models, items=items, verdicts=verdicts, seeds=seeds))
        truth = irt.simulate_2pl(models=models, items=options["timing_items"], seed=first + 1)
        started = time.perf_counter()
        fit = irt.fit_2pl(truth.successes, truth.trials)
        seconds = time.perf_counter() - started
        report["timing"] = {
            "models": models,
            "items": options["timing_items"],
            "seed": first + 1,
            "seconds": round(seconds, 2),
            "iterations": fit.iterations,
            "converged": fit.converged,
            "met": seconds < SECONDS_TARGET,
        }
        report["targets_met"] = all(row["met"] for row in report["recovery"]) and report["timing"]["met"]
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
        else:
            self._print(report)
        if not report["targets_met"]:
            raise SystemExit(MISSED)

    def _print(self, report):
        self.stdout.write(
            f"2PL recovery, {report['models']} models x {report['items']} items, seeds "
            f"{report['seeds'][0]} to {report['seeds'][-1]}: correlation mean (minimum)"
        )
        for row in report["recovery"]:
            figures = {name: f"{row[name]['mean']:.3f} ({row[name]['min']:.3f})" for name in _FIGURES}
            self.stdout.write(
                f"  {row['verdicts']} verdict(s) per cell: difficulty r = {figures['difficulty']} "
                f"(target >= {DIFFICULTY_TARGET}), discrimination r = {figures['discrimination']} "
                f"(target >= {DISCRIMINATION_TARGET}; at best {figures['discrimination_ceiling']}), "
                f"ability r = {figures['ability']}; at most {row['iterations']} EM iterations, "
                f"{row['seconds']} s per fit; {'met' if row['met'] else 'MISSED'}"
            )
            if missed := [str(one["seed"]) for one in row["per_seed"] if not one["met"]]:
                self.stdout.write(f"    below a target on seed(s) {', '.join(missed)}")
        timing = report["timing"]
        self.stdout.write(
            f"fit of {timing['models']} models x {timing['items']} items: {timing['seconds']} s "
            f"(target < {SECONDS_TARGET:.0f} s), {timing['iterations']} EM iterations; load average {report['load']:.1f}"
        )
        self.stdout.write("targets met" if report["targets_met"] else "TARGET MISSED")


#: the correlations reported per data set; discrimination_ceiling is runs.metrics.irt.discrimination_ceiling
_FIGURES = ("difficulty", "discrimination", "discrimination_ceiling", "ability")


def _recovery(*, models: int, items: int, verdicts: int, seeds: list[int]) -> dict:
    """One --verdicts setting: per seed the recovery correlations, then their mean and minimum over the seeds."""
    per_seed = []
    for seed in seeds:
        truth = irt.simulate_2pl(models=models, items=items, attempts=verdicts, seed=seed)
        started = time.perf_counter()
        fit = irt.fit_2pl(truth.successes, truth.trials)
        seconds = time.perf_counter() - started
        found = irt.recovery(fit, truth)
        per_seed.append(
            {
                "seed": seed,
                **found,
                "discrimination_ceiling": irt.discrimination_ceiling(truth),
                "iterations": fit.iterations,
                "seconds": round(seconds, 2),
                "met": found["difficulty"] >= DIFFICULTY_TARGET and found["discrimination"] >= DISCRIMINATION_TARGET,
            }
        )
    row = {"verdicts": verdicts}
    for name in _FIGURES:
        values = [one[name] for one in per_seed]
        row[name] = {"mean": float(np.mean(values)), "min": float(np.min(values))}
    row["iterations"] = max(one["iterations"] for one in per_seed)
    row["seconds"] = round(float(np.mean([one["seconds"] for one in per_seed])), 2)
    # judged on the mean: a single data set's correlation is a draw, whose best reachable value (the ceiling)
    # moves by about 0.015 between seeds at 1 verdict per cell
    row["met"] = (
        row["difficulty"]["mean"] >= DIFFICULTY_TARGET and row["discrimination"]["mean"] >= DISCRIMINATION_TARGET
    )
    row["per_seed"] = per_seed
    return row
