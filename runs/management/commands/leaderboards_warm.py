"""python manage.py leaderboards_warm [--benchmark SLUG ...]: precompute the leaderboards after a deploy."""

import time

from django.core.management.base import BaseCommand, CommandError

from runs.cache_warming import leaderboards_default
from runs.models import Benchmark, BenchmarkKind


class Command(BaseCommand):
    help = (
        "Precompute every checklist benchmark's leaderboard summary and default page for the running code. "
        "Writers do this after each change of data; a deploy changes the code version that keys the cache, so "
        "run this once after a deploy and the first viewer does not pay for it."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--benchmark",
            action="append",
            default=[],
            metavar="SLUG",
            help="only this benchmark (repeatable); default: every checklist benchmark",
        )

    def handle(self, *args, benchmark: list[str], **opts):
        chosen = Benchmark.objects.filter(kind=BenchmarkKind.CHECKLIST)
        if benchmark:
            chosen = chosen.filter(slug__in=benchmark)
            missing = sorted(set(benchmark) - set(chosen.values_list("slug", flat=True)))
            if missing:
                raise CommandError(f"no checklist benchmark has the slug {', '.join(map(repr, missing))}")
        ids = dict(chosen.values_list("id", "slug"))
        started = time.monotonic()
        leaderboards_default(ids)
        self.stdout.write(
            f"warmed {len(ids)} leaderboard(s) in {time.monotonic() - started:.1f} s: "
            f"{', '.join(sorted(ids.values())) or 'none'}"
        )
