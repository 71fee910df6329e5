"""python manage.py coverage_check [--studies 1000] [--quick] [--json]: are the portal's intervals honest?

Simulated studies with known true rates: each instance has a difficulty (a random effect on the logit) shared by
its items, its repetitions, its judges and every model, each item a difficulty of its own, and each model a
model x instance effect; two judges misread an item's outcome at 5% and 10%. The command counts how often the
nominal 95% interval holds the true figure, for ISR, CSR (runs.metrics.paired.figure_interval: the leaderboard's
bootstrap over instances, read by runs.metrics.stats.INSTANCE_INTERVAL_METHOD) and the paired difference B - A of
each (runs.metrics.paired.paired_difference), and how often runs.metrics.paired.tie_groups splits models that are
truly equal. The true figures come from 1,000,000 simulated instances. Seeded: the same arguments print the same
table. A coverage figure from S studies is uncertain by about sqrt(0.95 x 0.05 / S): 1.5 points at 200 studies, so
even an exact 95% interval is likely to show below 93% in one of the sixteen cells (73% of the time were they
independent); the default, 1,000 studies, makes it 0.7 points (4%)."""

import json
import time

import numpy as np
from django.core.management.base import BaseCommand

from runs.metrics import paired

INSTANCES = (50, 100, 200, 500)
QUICK_INSTANCES = (50, 200)
STUDIES = 1000
QUICK_STUDIES = 60
#: model logits: A and B differ; EQUAL models share A's logit
LOGIT_A, LOGIT_B = 0.9, 1.2
EQUAL = 4
REPETITIONS = 2
ITEMS = (3, 8)
JUDGE_ERRORS = (0.05, 0.10)
INSTANCE_SD, ITEM_SD, MODEL_INSTANCE_SD = 1.2, 1.0, 0.5
TRUTH_INSTANCES = 1_000_000
SEED = 20240601


def simulate(rng: np.random.Generator, n: int, logits: list[float]) -> list[tuple[paired.Side, paired.Side]]:
    """(ISR side, CSR side) per model on n shared instances (see the module docstring)."""
    items = rng.integers(ITEMS[0], ITEMS[1] + 1, size=n)
    present = np.arange(ITEMS[1])[None, :] < items[:, None]
    instance = rng.normal(0, INSTANCE_SD, size=(n, 1, 1))
    item = rng.normal(0, ITEM_SD, size=(n, 1, ITEMS[1]))
    sides = []
    for logit in logits:
        model_instance = rng.normal(0, MODEL_INSTANCE_SD, size=(n, 1, 1))
        chance = 1 / (1 + np.exp(-(logit + instance + model_instance + item)))
        passed = rng.random((n, REPETITIONS, ITEMS[1])) < chance
        isr_num, csr_num = np.zeros((n, len(JUDGE_ERRORS))), np.zeros((n, len(JUDGE_ERRORS)))
        for j, error in enumerate(JUDGE_ERRORS):
            seen = (passed ^ (rng.random(passed.shape) < error)) & present[:, None, :]
            isr_num[:, j] = (seen.sum(axis=2) == items[:, None]).sum(axis=1)
            csr_num[:, j] = seen.sum(axis=(1, 2))
        isr_den = np.full(isr_num.shape, float(REPETITIONS))
        csr_den = np.repeat((items * REPETITIONS)[:, None].astype(float), len(JUDGE_ERRORS), axis=1)
        sides.append(((isr_num, isr_den), (csr_num, csr_den)))
    return sides


def true_figures(logit: float, seed: int = SEED) -> tuple[float, float]:
    """ISR and CSR of a model with this logit over TRUTH_INSTANCES simulated instances (pooled sums, as the
    figure pools them)."""
    rng = np.random.default_rng(seed)
    sums = np.zeros((4, len(JUDGE_ERRORS)))
    chunk = 100_000
    for _ in range(TRUTH_INSTANCES // chunk):
        (isr, csr) = simulate(rng, chunk, [logit])[0]
        sums += [isr[0].sum(axis=0), isr[1].sum(axis=0), csr[0].sum(axis=0), csr[1].sum(axis=0)]
    return float(paired.judge_figure(sums[0], sums[1])), float(paired.judge_figure(sums[2], sums[3]))


def _holds(interval, truth: float) -> bool:
    return interval is not None and interval[0] <= truth <= interval[1]


def check(n: int, studies: int, truth: dict, seed: int = SEED) -> dict:
    """Coverage (share of studies whose interval holds the truth) and false-split rates at n instances."""
    rng = np.random.default_rng([seed, n])
    held = dict.fromkeys(("isr", "csr", "isr_diff", "csr_diff"), 0)
    split_pairs = split_many = 0
    for _ in range(studies):
        (a_isr, a_csr), (b_isr, b_csr), *equal = simulate(rng, n, [LOGIT_A, LOGIT_B] + [LOGIT_A] * (EQUAL - 1))
        held["isr"] += _holds(paired.figure_interval(a_isr), truth["A"][0])
        held["csr"] += _holds(paired.figure_interval(a_csr), truth["A"][1])
        for key, (a, b), k in (("isr_diff", (a_isr, b_isr), 0), ("csr_diff", (a_csr, b_csr), 1)):
            result = paired.paired_difference(a, b)
            held[key] += _holds((result.low, result.high), truth["B"][k] - truth["A"][k])
        same = {"A": a_isr} | {f"E{k}": sides[0] for k, sides in enumerate(equal)}
        split_pairs += len(set(paired.tie_groups({"A": a_isr, "E0": equal[0][0]}).values())) > 1
        split_many += len(set(paired.tie_groups(same).values())) > 1
    return {
        "instances": n,
        "studies": studies,
        **{key: value / studies for key, value in held.items()},
        "false_splits_2": split_pairs / studies,
        f"false_splits_{EQUAL}": split_many / studies,
    }


def table(rows: list[dict]) -> str:
    """The coverage table in Markdown, percentages with one decimal."""
    head = (
        "| instances | studies | ISR | CSR | ISR difference | CSR difference | false splits, 2 equal models "
        f"| false splits, {EQUAL} equal models |"
    )
    lines = [head, "|" + "---|" * 8]
    for row in rows:
        cells = [row["isr"], row["csr"], row["isr_diff"], row["csr_diff"], row["false_splits_2"]]
        cells.append(row[f"false_splits_{EQUAL}"])
        lines.append(
            f"| {row['instances']} | {row['studies']} | " + " | ".join(f"{100 * c:.1f}%" for c in cells) + " |"
        )
    return "\n".join(lines)


class Command(BaseCommand):
    help = "Empirical coverage of the 95% intervals and false-split rate of the tie groups on simulated studies."

    def add_arguments(self, parser):
        parser.add_argument("--studies", type=int, default=STUDIES, help="simulated studies per setting")
        parser.add_argument("--instances", type=int, nargs="+", help=f"settings (default {INSTANCES})")
        parser.add_argument("--quick", action="store_true", help=f"{QUICK_STUDIES} studies at {QUICK_INSTANCES}")
        parser.add_argument("--json", action="store_true", help="print the figures as JSON")

    def handle(self, *args, **options):
        quick = options["quick"]
        settings = options["instances"] or (QUICK_INSTANCES if quick else INSTANCES)
        studies = QUICK_STUDIES if quick and options["studies"] == STUDIES else options["studies"]
        start = time.perf_counter()
        truth = {"A": true_figures(LOGIT_A), "B": true_figures(LOGIT_B)}
        rows = [check(n, studies, truth) for n in settings]
        if options["json"]:
            self.stdout.write(json.dumps({"truth": truth, "rows": rows}, indent=2))
            return
        self.stdout.write(table(rows))
        self.stdout.write(f"\n{time.perf_counter() - start:.0f} s; target: coverage >= 93%, false splits <= 5%")
