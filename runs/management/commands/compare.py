"""python manage.py compare --benchmark SLUG --baseline A --candidate B: the paired comparison of two runs (or
models) of a benchmark of any kind, and a regression gate for pipelines (--fail-on-regression)."""

import json

from django.core.management.base import BaseCommand, CommandError

from runs.exclusions import excluded_item_ids
from runs.models import Benchmark
from runs.rounding import shown_p
from runs.selectors import compare as selectors

#: exit status when the candidate is significantly worse on a named metric (and --fail-on-regression)
REGRESSED = 1
#: exit status when a benchmark, side, judge or policy is unknown
UNKNOWN = 2


class Command(BaseCommand):
    help = (
        "Compare a candidate run (or model) with a baseline on the instances both cover: per metric, per judge and "
        "pooled, per category, B - A with its 95% paired bootstrap interval, the test and its p. A side is a "
        "run label or model:<name> (a bare model name that is no run label is the model). With "
        "--fail-on-regression, exit 1 when the candidate is significantly worse (p < 0.05 and the interval below "
        "0) on a named metric's pooled figure; unknown names exit 2."
    )

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", required=True, metavar="SLUG", help="the benchmark (any kind)")
        parser.add_argument("--baseline", required=True, metavar="A", help="run label or model:<name>")
        parser.add_argument("--candidate", required=True, metavar="B", help="run label or model:<name>")
        parser.add_argument(
            "--metric",
            action="append",
            choices=list(selectors.ALL_METRICS),
            default=[],
            help="a metric of the benchmark's kind to show and gate on (repeatable; default: all)",
        )
        parser.add_argument("--judge", action="append", default=[], metavar="NAME", help="only this judge (repeatable)")
        parser.add_argument("--exclude", default="none", metavar="POLICY", help="audit exclusion policy (default none)")
        parser.add_argument("--fail-on-regression", action="store_true", help="exit 1 on a significant regression")
        parser.add_argument("--json", action="store_true", help="print the comparison as JSON (the API's answer)")

    def handle(self, *args, **opts):
        benchmark = Benchmark.objects.filter(slug=opts["benchmark"]).first()
        if benchmark is None:
            raise CommandError(f"no benchmark has the slug {opts['benchmark']!r}", returncode=UNKNOWN)
        names = selectors.metrics_of(benchmark)
        unknown_metrics = selectors.metric_unknown(benchmark, opts["metric"])
        if unknown_metrics:
            raise CommandError(
                f"--metric: {', '.join(map(repr, unknown_metrics))} is no figure of a {benchmark.kind} benchmark "
                f"(its figures: {', '.join(names)})",
                returncode=UNKNOWN,
            )
        sides = {}
        for role in ("baseline", "candidate"):
            try:
                sides[role] = selectors.side_of(benchmark.id, opts[role])
            except selectors.UnknownSide as unknown:
                raise CommandError(f"--{role}: {unknown}", returncode=UNKNOWN) from None
        unknown_judges = selectors.judge_unknown(benchmark, opts["judge"])
        if unknown_judges:
            raise CommandError(
                f"--judge: no judge named {', '.join(map(repr, unknown_judges))} scored this benchmark",
                returncode=UNKNOWN,
            )
        try:
            excluded = excluded_item_ids(benchmark, opts["exclude"])
        except ValueError as unknown:
            raise CommandError(f"--exclude: {unknown}", returncode=UNKNOWN) from None
        document = selectors.paired_comparison_document(
            benchmark,
            sides["baseline"],
            sides["candidate"],
            metrics=opts["metric"],
            judges=opts["judge"],
            excluded_items=excluded,
        )
        self.stdout.write(json.dumps(document, indent=2) if opts["json"] else "\n".join(table_lines(document, names)))
        if opts["fail_on_regression"] and document["regressions"]:
            worse = ", ".join(names[m] for m in document["regressions"])
            raise CommandError(
                f"{document['candidate']} is significantly worse than {document['baseline']} on {worse}",
                returncode=REGRESSED,
            )


def table_lines(document: dict, names: dict[str, str]) -> list[str]:
    """The comparison as a fixed-width table: one line per metric and judge (pooled first), then per category; the
    flips, the dialogue kind's log-rank tests, and the metrics significantly worse. `names`: metric -> its name."""
    lines = [
        f"{document['benchmark']}: A = {document['baseline']}, B = {document['candidate']}; B - A in points with its "
        f"95% paired bootstrap interval; resampled: {document['resampled']}",
        "",
        f"{'metric':<10} {'judge':<16} {'category':<22} {'A %':>7} {'B %':>7} {'B - A':>7} {'95% interval':>18} "
        f"{'n':>5}  {'test':<18} {'p':>8} {'b':>5} {'c':>5}",
    ]
    for row in document["rows"]:
        line = (
            f"{names[row['metric']]:<10} {row['judge'] or 'pooled':<16.16} "
            f"{row['category'] or 'all':<22.22} {_number(row['a']):>7} {_number(row['b']):>7} "
            f"{_number(row['diff'], signed=True):>7} {_interval(row):>18} {row['n_instances']:>5}  "
            f"{row['test'] or '-':<18} {_p(row['p']):>8} {_count(row['b_count']):>5} {_count(row['c_count']):>5}"
            + ("  worse" if row["regression"] else "")
        )
        lines.append(line.rstrip())
    flipped = "items" if "flip_metric" not in document else f"instances ({names[document['flip_metric']]})"
    lines += ["", f"{flipped} fixed in B: {document['n_fixed']}, broken in B: {document['n_broken']}"]
    for test in document.get("survival", []):
        lines.append(
            f"survival ({test['judge']}): log-rank on {test['n_instances']} shared dialogue scripts, "
            f"A {test['events_a']}/{test['n_a']} ended by patience, B {test['events_b']}/{test['n_b']}, "
            f"chi2 {_number(test['chi2'])}, p {_p(test['p'])}"
        )
    regressions = ", ".join(names[m] for m in document["regressions"])
    lines.append(f"significantly worse (pooled): {regressions or 'none'}")
    return lines


def _number(value, *, signed: bool = False) -> str:
    return "-" if value is None else f"{value:+.2f}" if signed else f"{value:.2f}"


def _interval(row: dict) -> str:
    return "-" if row["low"] is None else f"[{row['low']:+.2f}, {row['high']:+.2f}]"


def _p(value) -> str:
    return shown_p(value) or "-"


def _count(value) -> str:
    return "" if value is None else str(value)
