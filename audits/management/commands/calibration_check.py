"""manage.py calibration_check: do the calibrated leaderboard's 95% intervals cover the truth?

Simulated studies with known human labels and a judge lenient on one category (runs.metrics.calibration.
simulate_coverage), at several audit sizes: how often the prediction-powered intervals of CSR and ISR cover the
study's true rates, and how often the raw judge's binomial intervals do. docs/metrics.md reports the table.
"""

from django.core.management.base import BaseCommand, CommandError

from runs.metrics.calibration import CoverageSetting, simulate_coverage

TARGET = 0.93


class Command(BaseCommand):
    help = "Coverage of the calibrated 95% intervals (and the raw judge's) over simulated studies with a lenient judge."

    def add_arguments(self, parser):
        parser.add_argument("--studies", type=int, default=1000, help="simulated studies per setting (>= 200)")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--audited", type=int, nargs="+", default=[100, 200, 400], help="audit sizes (pairs)")

    def handle(self, *args, studies, seed, audited, **options):
        if studies < 200:
            raise CommandError("--studies must be at least 200: a coverage from fewer studies says little")
        self.stdout.write(
            "| audited pairs | calibrated CSR | raw CSR | calibrated ISR | raw ISR | mean CSR interval width |\n"
            "|---|---|---|---|---|---|"
        )
        failed = False
        for n in audited:
            c = simulate_coverage(CoverageSetting(audited=n), studies, seed=seed)
            failed |= c.csr_calibrated < TARGET
            self.stdout.write(
                f"| {n} | {100 * c.csr_calibrated:.1f}% | {100 * c.csr_raw:.1f}% | {100 * c.isr_calibrated:.1f}% "
                f"| {100 * c.isr_raw:.1f}% | {100 * c.csr_width:.1f} points |"
            )
        s = CoverageSetting()
        self.stdout.write(
            f"\n{studies} studies per row: {s.attempts} attempts x {s.items} items ({s.lenient_items} of category B, "
            f"human pass rate {s.pass_b}; the others A, {s.pass_a}); the judge passes a true fail of B with probability "
            f"{s.leniency} and errs both ways on A with probability {s.error}; the audit is proportional by category."
        )
        if failed:
            raise CommandError(f"the calibrated CSR interval covered less than {TARGET:.0%} in some setting")
