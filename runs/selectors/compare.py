"""Paired comparison of two runs or models of one benchmark, for every kind (docs/metrics.md, "Is the difference
real?"): per headline figure of the kind, pooled across judges, per judge and per category, B - A on the instances
both sides cover with its 95% paired bootstrap interval and test (runs.metrics.comparison, runs.metrics.paired), and
the instances that flipped. The compare page, its exports, GET /api/compare/<slug>/ and manage.py compare all read
it here.

A side is a run label, or "model:<name>" for every run of a model. Each kind gives, in its section below, both
sides' per-instance counts of its figures (`SideFigures`) and the page of one attempt; the checklist kind counts
its own (runs.selectors.checklist.compare_paired) and lists the checklist items that flipped.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.urls import reverse

from runs.charts import dialogue as dialogue_charts
from runs.metrics import comparison, survival
from runs.metrics.comparison import SideFigures, SidesComparison
from runs.metrics.conflict import NEITHER, SP
from runs.metrics.dialogue import Dialogue, longest_success_run, recoveries_and_lapses, resimulate, rows_by
from runs.metrics.hierarchy import natural_key
from runs.models import Benchmark, BenchmarkKind, Instance
from runs.selectors import checklist as checklist_selector
from runs.selectors import choice as choice_selector
from runs.selectors import conflict as conflict_selector
from runs.selectors import dialogue as dialogue_selector
from runs.selectors import hierarchy as hierarchy_selector
from runs.selectors import sides as sides_selector

REGRESSION_ALPHA = comparison.REGRESSION_ALPHA
UnknownSide = sides_selector.UnknownSide
side_of = sides_selector.side_of
#: flipped instances (or items) listed at most, per direction
FLIPS_LIMIT = 200


# the kinds --------------------------------------------------------------------------------------
#: (benchmark, the sides' runs (label -> id), judge names, excluded items) -> (A's counts, B's counts, extras)
SidesCounter = Callable[[Benchmark, Sequence[dict[str, int]], Sequence[str], Collection[int] | None], tuple]


@dataclass(frozen=True)
class KindComparison:
    """How a kind is compared: its headline figures (key -> name, in the table's order), the pass/fail figure whose
    flips are listed, what its categories are, its judges' names, the per-instance counts of both sides, and the
    page of an attempt (benchmark, instance name, attempt id -> URL)."""

    metrics: dict[str, str]
    flip_metric: str
    category: str
    judges: Callable[[Benchmark], list[str]]
    sides: SidesCounter
    attempt_url: Callable[[Benchmark, str, int], str]
    has_judges: bool = True
    #: the order of the categories (default: by name)
    category_key: Callable[[str], Any] | None = None
    #: figures where less is better: B regresses when they rise
    lower_is_better: frozenset[str] = frozenset()


@dataclass
class Compared:
    """A comparison of a kind other than checklist: its table, flips and the kind's extras (dialogue: survival)."""

    kind: str
    table: SidesComparison
    flip_metric: str
    flip_name: str = ""
    fixed: list[dict] = field(default_factory=list)
    broken: list[dict] = field(default_factory=list)
    n_fixed: int = 0
    n_broken: int = 0
    survival: list[dict] | None = None
    figure: dict | None = None
    category: str = ""


def judge_names(judges) -> list[str]:
    return [j.name for j in judges]


def kind_of(benchmark: Benchmark) -> KindComparison | None:
    """How this benchmark's kind is compared (None for the checklist kind, which counts its own)."""
    return KINDS.get(benchmark.kind)


def metrics_of(benchmark: Benchmark) -> dict[str, str]:
    """The figures a comparison of this benchmark covers, key -> name, in table order."""
    kind = kind_of(benchmark)
    return dict(checklist_selector.PAIRED_METRICS) if kind is None else dict(kind.metrics)


def judge_unknown(benchmark: Benchmark, judges: Collection[str]) -> list[str]:
    """The judges named that scored nothing in the benchmark."""
    kind = kind_of(benchmark)
    if kind is None:
        return checklist_selector.judge_unknown(benchmark.id, judges)
    return sorted(set(judges) - set(kind.judges(benchmark)))


def metric_unknown(benchmark: Benchmark, metrics: Collection[str]) -> list[str]:
    """The metrics named that are no figure of the benchmark's kind."""
    return sorted(set(metrics) - set(metrics_of(benchmark)))


def compare_kind(
    benchmark: Benchmark,
    baseline: str,
    candidate: str,
    *,
    metrics: Sequence[str] = (),
    judges: Collection[str] = (),
    excluded_items: Collection[int] | None = None,
) -> Compared:
    """The paired comparison of two sides (as side_of names them) of a benchmark of a kind other than checklist, on
    the judges given (default: every judge of the kind)."""
    kind = KINDS[benchmark.kind]
    names = [m for m in kind.metrics if m in metrics] or list(kind.metrics)
    judge_axis = [j for j in kind.judges(benchmark) if not judges or j in judges] if kind.has_judges else [""]
    runs = [sides_selector.side_runs(benchmark.id, side) for side in (baseline, candidate)]
    a, b, extras = kind.sides(benchmark, runs, judge_axis, excluded_items)
    counted = comparison.aligned(a, b, list(kind.metrics), judge_axis)
    table = comparison.paired_table(
        benchmark.slug,
        baseline,
        candidate,
        counted,
        metrics={m: kind.metrics[m] for m in names},
        per_judge=kind.has_judges,
        excluded_items=len(excluded_items or ()),
        category_key=kind.category_key,
        lower_is_better=kind.lower_is_better,
    )
    entries: dict[str, list[dict]] = {"fixed": [], "broken": []}
    for flip in comparison.flipped_instances(counted, kind.flip_metric):
        name = (a.names.get(flip.instance) or b.names.get(flip.instance)) or str(flip.instance)
        urls = [
            kind.attempt_url(benchmark, name, side.attempts[flip.instance][0])
            if side.attempts.get(flip.instance)
            else ""
            for side in (a, b)
        ]
        entries[flip.direction].append(
            {
                "instance": name,
                "instance_url": urls[0] or urls[1],
                "item": None,
                "a_url": urls[0],
                "b_url": urls[1],
                "category": counted.categories.get(flip.instance),
                "judges": [j for j in flip.judges if j],
            }
        )
    return Compared(
        kind=benchmark.kind,
        table=table,
        flip_metric=kind.flip_metric,
        flip_name=kind.metrics[kind.flip_metric],
        fixed=entries["fixed"][:FLIPS_LIMIT],
        broken=entries["broken"][:FLIPS_LIMIT],
        n_fixed=len(entries["fixed"]),
        n_broken=len(entries["broken"]),
        survival=extras.get("survival"),
        figure=extras.get("figure"),
        category=kind.category,
    )


# documents --------------------------------------------------------------------------------------
def compared_document(compared: Compared) -> dict:
    """A comparison of another kind as plain JSON: the checklist's document with flipped instances (each with both
    sides' attempt pages) instead of items, the kind, the figure whose flips are listed and, for dialogues, the
    log-rank test of the two survival curves per judge."""
    document = {
        **comparison.table_document(compared.table),
        "kind": compared.kind,
        "flip_metric": compared.flip_metric,
        "n_fixed": compared.n_fixed,
        "n_broken": compared.n_broken,
        "fixed": compared.fixed,
        "broken": compared.broken,
    }
    if compared.survival is not None:
        document["survival"] = compared.survival
    return document


def paired_comparison_document(
    benchmark: Benchmark,
    baseline: str,
    candidate: str,
    *,
    metrics: Sequence[str] = (),
    judges: Collection[str] = (),
    excluded_items: Collection[int] | None = None,
) -> dict:
    """What GET /api/compare/<slug>/ answers and manage.py compare --json prints, for a benchmark of any kind."""
    if kind_of(benchmark) is None:
        return checklist_selector.paired_comparison_document(
            benchmark,
            baseline,
            candidate,
            metrics=[m for m in checklist_selector.PAIRED_METRICS if m in metrics]
            or list(checklist_selector.PAIRED_METRICS),
            judges=judges,
            excluded_items=excluded_items,
        )
    return compared_document(
        compare_kind(benchmark, baseline, candidate, metrics=metrics, judges=judges, excluded_items=excluded_items)
    )


# choice: accuracy per task, scored by the reference scorer (no judges) -----------------------------
def choice_sides(benchmark, runs, judges, excluded_items) -> tuple:
    """Per task, correct answers and scored answers of each side (choice_selector.choice_rows: the exact view, an
    unanswered task scored as the reference's default); the task's category."""
    rows = choice_selector.choice_rows(benchmark.id, sorted({label for side in runs for label in side}))
    sides = (SideFigures(), SideFigures())
    for r in rows:
        for side, labels in zip(sides, runs):
            if r.run in labels:
                side.add("accuracy", r.instance_id, "", r.correct, 1)
                side.attempt(r.instance_id, r.attempt_id, name=r.external_id, category=r.category)
    return *sides, {}


# hierarchy: Acc, Acc_test and Acc_style per sample, per judge ---------------------------------------
def hierarchy_sides(benchmark, runs, judges, excluded_items) -> tuple:
    """Per sample and judge, each side's attempts that passed Acc (unit tests and every active instruction),
    Acc_test and Acc_style, out of its attempts (hierarchy_selector.sample_rows_select); a sample's category is its
    number of privilege tiers."""
    ids = sorted({pk for side in runs for pk in side.values()})
    sides = (SideFigures(), SideFigures())
    for judge in hierarchy_selector.hierarchy_judges(benchmark):
        if judge.name not in judges:
            continue
        rows = hierarchy_selector.sample_rows_select(
            benchmark=benchmark, judge=judge, run_ids=ids, excluded_items=excluded_items
        )
        for r in rows:
            for side, labels in zip(sides, runs):
                if r.run in labels:
                    side.add("acc", r.instance_id, judge.name, r.passed, 1)
                    side.add("acc_test", r.instance_id, judge.name, r.test_passed, 1)
                    side.add("acc_style", r.instance_id, judge.name, r.style_passed, 1)
                    side.attempt(r.instance_id, r.attempt_id, name=r.sample, category=f"{r.tiers} tiers")
    return *sides, {}


# conflict: SP rate and "followed neither" per conflict, per judge -----------------------------------
def conflict_sides(benchmark, runs, judges, excluded_items) -> tuple:
    """Per conflict and judge, each side's attempts that followed the system prompt (over conflicts with an SP side:
    the page's headline SP rate) and that followed neither side, out of its attempts the judge read
    (conflict_selector.conflict_rows_select, under the exclusion policy); a conflict's category is its type."""
    ids = sorted({pk for side in runs for pk in side.values()})
    sides = (SideFigures(), SideFigures())
    for judge in conflict_selector.conflict_judges(benchmark):
        if judge.name not in judges:
            continue
        rows = conflict_selector.conflict_rows_select(
            benchmark=benchmark, judge=judge, run_ids=ids, excluded_items=excluded_items
        )
        for r in rows:
            for side, labels in zip(sides, runs):
                if r.run in labels:
                    if r.has_sp:
                        side.add("sp_rate", r.instance, judge.name, r.followed_source == SP, 1)
                    side.add("neither", r.instance, judge.name, r.followed == NEITHER, 1)
                    side.attempt(r.instance, r.attempt_id, name=r.instance, category=r.type)
    return *sides, {}


# dialogue: the per-dialogue figures, per judge, and the two sides' survival curves ---------------------
#: figures in turns are counted with den 100 per dialogue, so runs.metrics.paired's percent is the mean in turns
_TURNS = 100


def dialogue_sides(benchmark, runs, judges, excluded_items) -> tuple:
    """Per dialogue script and judge, each side's sums over its dialogues of the EvolIF figures (runs.metrics.dialogue
    .dialogue_metrics, at the recorded patience of the two sides' dialogues, as the metrics page counts them):
    completed (not ended by patience, pass/fail), ISR and CSR over turns, ROB over dialogues with turns, REC over
    dialogues with a lapse, ACT and LSS in turns per dialogue. Extras: per judge the log-rank test of the two sides'
    survival on the scripts both played, and the first judge's Kaplan-Meier curves with 95% bands."""
    ids = sorted({pk for side in runs for pk in side.values()})
    sides = (SideFigures(), SideFigures())
    categories = dict(
        Instance.objects.filter(benchmark=benchmark)
        .exclude(primary_category="")
        .values_list("external_id", "primary_category")
    )
    tests, figure = [], None
    for judge in dialogue_selector.dialogue_judges(benchmark):
        if judge.name not in judges:
            continue
        full = dialogue_selector.dialogues_select(
            benchmark=benchmark, judge=judge, run_ids=ids, excluded_items=excluded_items
        )
        known = [d.patience for d in full]
        dialogues = resimulate(full, min(known) if known and None not in known else None)
        per_side: list[list] = [[], []]
        for d in dialogues:
            for n, (side, labels) in enumerate(zip(sides, runs)):
                if d.run in labels:
                    per_side[n].append(d)
                    _count_dialogue(side, d, judge.name)
                    side.attempt(d.instance, d.key, name=d.instance, category=categories.get(d.instance))
        shared = {d.instance for d in per_side[0]} & {d.instance for d in per_side[1]}
        paired_side = [[d for d in ds if d.instance in shared] for ds in per_side]
        labels = ["A", "B"]
        observations = [[survival.observation(d) for d in ds] for ds in paired_side]
        [test] = survival.log_rank_table(list(zip(labels, observations)))
        tests.append(
            {
                "judge": judge.name,
                "test": "log-rank",
                "n_instances": len(shared),
                "n_a": test.n_first,
                "events_a": test.events_first,
                "n_b": test.n_second,
                "events_b": test.events_second,
                "chi2": test.chi2,
                "p": test.p,
            }
        )
        if figure is None and shared:
            relabelled = [replace(d, model=label) for label, ds in zip(labels, paired_side) for d in ds]
            rows = rows_by(relabelled, by="model")
            bands = {label: survival.kaplan_meier(obs) for label, obs in zip(labels, observations)}
            figure = dialogue_charts.survival_figure(rows, bands, patience=None)
            figure.setdefault("layout", {})["title"] = {"text": f"Dialogues still alive at each turn ({judge.name})"}
    return *sides, {"survival": tests, "figure": figure}


def _count_dialogue(side: SideFigures, d: Dialogue, judge: str) -> None:
    """Add one dialogue's terms of each figure (see dialogue_sides)."""
    ratios = sum(t.ratio for t in d.turns)
    successes = sum(d.successes)
    recoveries, lapses = recoveries_and_lapses(d.successes)
    side.add("completed", d.instance, judge, d.ended_by != "patience", 1)
    side.add("isr", d.instance, judge, successes, d.length)
    side.add("csr", d.instance, judge, ratios, d.length)
    side.add("rob", d.instance, judge, successes / d.length if d.length else 0, 1 if d.length else 0)
    side.add("rec", d.instance, judge, recoveries / lapses if lapses else 0, 1 if lapses else 0)
    side.add("act_len", d.instance, judge, d.length, _TURNS)
    side.add("act_acc", d.instance, judge, ratios, _TURNS)
    side.add("act_succ", d.instance, judge, successes, _TURNS)
    side.add("lss", d.instance, judge, longest_success_run(d.successes), _TURNS)


def _attempt_page(benchmark, name: str, attempt_id: int) -> str:
    return reverse("runs:attempt", args=[attempt_id])


KINDS: dict[str, KindComparison] = {
    BenchmarkKind.CHOICE: KindComparison(
        metrics={"accuracy": "accuracy"},
        flip_metric="accuracy",
        category="category",
        judges=lambda benchmark: [],
        sides=choice_sides,
        attempt_url=lambda benchmark, name, attempt_id: reverse("runs:choice-task", args=[benchmark.slug, name]),
        has_judges=False,
    ),
    BenchmarkKind.HIERARCHY: KindComparison(
        metrics={"acc": "Acc", "acc_test": "Acc_test", "acc_style": "Acc_style"},
        flip_metric="acc",
        category="privilege tiers",
        judges=lambda benchmark: judge_names(hierarchy_selector.hierarchy_judges(benchmark)),
        sides=hierarchy_sides,
        category_key=natural_key,
        attempt_url=lambda benchmark, name, attempt_id: reverse(
            "runs:hierarchy-attempt", args=[benchmark.slug, attempt_id]
        ),
    ),
    BenchmarkKind.CONFLICT: KindComparison(
        metrics={"sp_rate": "SP rate", "neither": "followed neither"},
        flip_metric="sp_rate",
        lower_is_better=frozenset({"neither"}),
        category="conflict type",
        judges=lambda benchmark: judge_names(conflict_selector.conflict_judges(benchmark)),
        sides=conflict_sides,
        attempt_url=_attempt_page,
    ),
    BenchmarkKind.DIALOGUE: KindComparison(
        metrics={
            "completed": "completed",
            "isr": "ISR",
            "csr": "CSR",
            "rob": "ROB",
            "rec": "REC",
            "act_len": "ACT len (turns)",
            "act_acc": "ACT acc (turns)",
            "act_succ": "ACT succ (turns)",
            "lss": "LSS (turns)",
        },
        flip_metric="completed",
        category="primary category",
        judges=lambda benchmark: judge_names(dialogue_selector.dialogue_judges(benchmark)),
        sides=dialogue_sides,
        attempt_url=lambda benchmark, name, attempt_id: reverse(
            "runs:dialogue-viewer", args=[benchmark.slug, attempt_id]
        ),
    ),
}

#: every figure a comparison of some kind covers (the CLI's and the API's choices)
ALL_METRICS = {**checklist_selector.PAIRED_METRICS, **{m: n for k in KINDS.values() for m, n in k.metrics.items()}}
