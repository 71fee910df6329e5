"""python manage.py demo_audit [--seed N]: the demo's pilot audit campaign (after `manage.py demo`)."""
from django.core.management.base import BaseCommand

from audits.demo import demo_audit_load


class Command(BaseCommand):
    help = ("Create the demo pilot audit: a stratified sample of the demo's checklist items, labelled by two "
            "demo annotators, some disagreements adjudicated, the rest queued (once; deterministic per seed).")

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")

    def handle(self, *args, seed: int, **opts):
        result = demo_audit_load(seed=seed)
        if result.skipped:
            self.stdout.write(self.style.WARNING(f"Demo audit not created: {result.skipped}"))
            return
        self.stdout.write(self.style.SUCCESS(
            f"Demo audit: campaign {result.campaign.name!r}, {result.campaign.units.count()} items sampled, "
            f"{result.labels} labels, {result.adjudicated} disagreements adjudicated"))
