"""python manage.py irt_check: how well the portal's 2PL fit (runs.metrics.irt) recovers known parameters from
simulated data, and how long a large fit takes (docs/performance.md, "Item response fit")."""

import json
import os
import time

from django.core.management.base import BaseCommand

from runs.metrics import irt

#: the targets: recovery correlations at 100 models x 2,000 items, seconds at 100 x 10,000
DIFFICULTY_TARGET = 0.9
DISCRIMINATION_TARGET = 0.8
SECONDS_TARGET = 60.0
#: exit status when a target is missed
MISSED = 1


class Command(BaseCommand):
    help = (
        "Simulate models x items pass/fail counts from a 2PL with known parameters, fit them, and print the "
        "correlations of the fitted difficulty, discrimination and ability with the true ones (per number of "
        "verdicts per model and item), then time a fit of models x timing-items. Exit 1 when a target is missed "
        "(difficulty >= 0.9 and discrimination >= 0.8 at the largest --verdicts, the timing under 60 s)."
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
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--json", action="store_true", help="print one JSON document")

    def handle(self, *args, **options):
        models, items, seed = options["models"], options["items"], options["seed"]
        report = {"models": models, "items": items, "seed": seed, "recovery": [], "load": os.getloadavg()[0]}
        for verdicts in options["verdicts"] or [1, 3]:
            truth = irt.simulate_2pl(models=models, items=items, attempts=verdicts, seed=seed)
            started = time.perf_counter()
            fit = irt.fit_2pl(truth.successes, truth.trials)
            seconds = time.perf_counter() - started
            row = {"verdicts": verdicts, **irt.recovery(fit, truth), "iterations": fit.iterations}
            row["seconds"] = round(seconds, 2)
            report["recovery"].append(row)
        truth = irt.simulate_2pl(models=models, items=options["timing_items"], seed=seed + 1)
        started = time.perf_counter()
        fit = irt.fit_2pl(truth.successes, truth.trials)
        report["timing"] = {
            "models": models,
            "items": options["timing_items"],
            "seconds": round(time.perf_counter() - started, 2),
            "iterations": fit.iterations,
            "converged": fit.converged,
        }
        best = report["recovery"][-1]
        report["targets_met"] = (
            best["difficulty"] >= DIFFICULTY_TARGET
            and best["discrimination"] >= DISCRIMINATION_TARGET
            and report["timing"]["seconds"] < SECONDS_TARGET
        )
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
        else:
            self._print(report)
        if not report["targets_met"]:
            raise SystemExit(MISSED)

    def _print(self, report):
        self.stdout.write(f"2PL recovery, {report['models']} models x {report['items']} items, seed {report['seed']}")
        for row in report["recovery"]:
            self.stdout.write(
                f"  {row['verdicts']} verdict(s) per cell: difficulty r = {row['difficulty']:.3f} "
                f"(target >= {DIFFICULTY_TARGET}), discrimination r = {row['discrimination']:.3f} "
                f"(target >= {DISCRIMINATION_TARGET}), ability r = {row['ability']:.3f}; "
                f"{row['iterations']} EM iterations, {row['seconds']} s"
            )
        timing = report["timing"]
        self.stdout.write(
            f"fit of {timing['models']} models x {timing['items']} items: {timing['seconds']} s "
            f"(target < {SECONDS_TARGET:.0f} s), {timing['iterations']} EM iterations; load average {report['load']:.1f}"
        )
        self.stdout.write("targets met" if report["targets_met"] else "TARGET MISSED")
