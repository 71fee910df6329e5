"""python manage.py search_rebuild [--benchmark SLUG ...]: fill the transcript search rows of data stored before."""

from django.core.management.base import BaseCommand, CommandError

from runs.models import Benchmark
from runs.search import search_rebuild
from runs.search_index import reasoning_index_catch_up, reasoning_missing_listed


class Command(BaseCommand):
    help = (
        "Rebuild the search rows of trajectories and responses (runs.search) from what is stored: run it once "
        "after upgrading to the migration that adds search, for data imported before it. Imports keep them "
        "up to date themselves. Then the judge reasoning that has no copy in the search's index yet is copied "
        "(runs.search_index; PostgreSQL)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", action="append", default=[], help="benchmark slug (repeat; default: all)")

    def handle(self, *args, benchmark: list[str], **opts):
        ids = None
        if benchmark:
            found = dict(Benchmark.objects.filter(slug__in=benchmark).values_list("slug", "id"))
            if missing := [s for s in benchmark if s not in found]:
                raise CommandError(f"no benchmark {missing[0]!r}")
            ids = list(found.values())
        written = search_rebuild(ids)
        self.stdout.write(f"indexed {written['attempts']} attempt(s): {written['rows']} search row(s)")
        listed = reasoning_missing_listed()
        copied = reasoning_index_catch_up(wait=True)
        self.stdout.write(f"judge reasoning: {listed} attempt(s) without a copy listed, {copied} copied")
