"""python manage.py recheck --benchmark SLUG --run LABEL [--run LABEL ...]: re-check stored responses with the
portal's checkers of the benchmark's kind (runs.recheck: EvolIF constraints, ManyIH coding styles)."""

from django.core.management.base import BaseCommand, CommandError

from runs.models import Run
from runs.recheck import CHECKERS, recheck_run


class Command(BaseCommand):
    help = (
        "Re-check the stored responses of runs with the portal's own checkers and store their verdicts under "
        "the kind's checker judge: " + ", ".join(f"{kind} -> {c.judge}" for kind, c in CHECKERS.items()) + "."
    )

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", required=True, help="benchmark slug")
        parser.add_argument("--run", action="append", required=True, help="run label (repeat for several runs)")

    def handle(self, *args, **opts):
        runs = []
        for label in opts["run"]:
            run = Run.objects.select_related("benchmark").filter(benchmark__slug=opts["benchmark"], label=label).first()
            if run is None:
                raise CommandError(f"no run '{label}' in benchmark '{opts['benchmark']}'")
            if run.benchmark.kind not in CHECKERS:
                raise CommandError(
                    f"run '{label}' has no portal checkers (benchmark kind {run.benchmark.kind}); "
                    f"re-checks exist for: {', '.join(CHECKERS)}"
                )
            runs.append(run)
        for run in runs:
            self.stdout.write(recheck_run(run=run).summary())
