"""python manage.py demo [--seed N] [--scale small|default] [--force]"""

import time

from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand, CommandError

from runs.demo import SCALES, demo_database_empty, demo_load


class Command(BaseCommand):
    help = (
        "Fill an empty database with a synthetic study of all four benchmark kinds, "
        "generated as source files and ingested like real ones (deterministic per seed)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=1, help="random seed (same seed, same data; default 1)")
        parser.add_argument("--scale", choices=list(SCALES), default="default", help="size of the study")
        parser.add_argument(
            "--force", action="store_true", help="load even if benchmarks exist (demo benchmarks are updated in place)"
        )

    def handle(self, *args, **opts):
        if not opts["force"] and not demo_database_empty():
            raise CommandError(
                "the database already has benchmarks; the demo only fills an empty database "
                "(pass --force to load it anyway)"
            )
        started = time.perf_counter()
        self.stdout.write(f"Generating the demo study (seed {opts['seed']}, scale {opts['scale']})...")
        results = demo_load(seed=opts["seed"], scale=opts["scale"], log=self.stdout.write)
        loaded = [r for r in results if not r.skipped]
        skipped = [r for r in results if r.skipped]
        self.stdout.write(
            self.style.SUCCESS(f"Demo loaded: {len(loaded)} benchmark(s) in {time.perf_counter() - started:.1f} s")
        )
        for result in skipped:
            self.stdout.write(self.style.WARNING(f"Skipped {result.benchmark}: {result.skipped}"))
        if "demo_audit" in get_commands():  # the audits app adds a pilot campaign over these benchmarks
            call_command("demo_audit", seed=opts["seed"], stdout=self.stdout)
