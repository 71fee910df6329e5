"""python manage.py demo_audit [--seed N]: the demo's pilot and settled audit campaigns (after `manage.py demo`)."""

from django.core.management.base import BaseCommand

from audits.demo import demo_audit_load


class Command(BaseCommand):
    help = (
        "Create the demo audits: a pilot (a stratified sample of the demo's checklist items, labelled by two "
        "demo annotators, some disagreements adjudicated, the rest queued) and a settled campaign that exclusion "
        "policies read (once; deterministic per seed)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")

    def handle(self, *args, seed: int, **opts):
        result = demo_audit_load(seed=seed)
        if result.skipped:
            self.stdout.write(self.style.WARNING(f"Demo audit not created: {result.skipped}"))
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo audit: campaign {result.campaign.name!r}, {result.campaign.units.count()} items sampled, "
                f"and the settled {result.settled.name!r}, {result.settled.units.count()} items; "
                + (
                    f"the verdict audit {result.verdicts.name!r}, {result.verdicts.units.count()} verdicts; "
                    if result.verdicts
                    else ""
                )
                + f"{result.labels} labels, {result.adjudicated} disagreements adjudicated"
            )
        )
