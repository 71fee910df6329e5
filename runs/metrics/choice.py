"""Answer-match metrics of choice benchmarks such as GuideBench (METRICS.md section 5).

Pure functions over `ChoiceRow`s: accuracy, macro precision/recall/F1 as scikit-learn
computes them with ``average='macro', zero_division=0`` (over the union of true and
predicted labels), bootstrap intervals of accuracy, overall accuracy weighted by task
count, confusion matrices and accuracy by guideline rule type. All percentages.

A row's `predicted` is the value the reference scorer compares: a missing answer has
already been replaced by the reference's default ("E", -1, "0", "-1(No Result)"), so the
numbers equal the reference's; `unanswered` keeps the fact visible. The selector
(`runs.selectors.choice.choice_rows`) reads the attempts and builds the rows with `choice_row`.
"""

from __future__ import annotations

import bisect
import json
import math
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runs.metrics.item_health import AttemptItem
from runs.scoring.choice import choice_ground_truth

#: the task counts GuideBench's evaluate.py weights its six categories by for its "all" figure, whatever the
#: files hold (the full benchmark's sizes); it reads no other category
REFERENCE_TASK_COUNTS = {"price": 442, "relevance": 192, "math": 52, "chat": 180, "summary": 58, "hallu": 118}
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20250101
EXACT, NORMALISED = "exact", "normalised"


@dataclass(frozen=True)
class ChoiceRow:
    """One attempt at one task: its run, category and the two labels the scorer compares."""

    run: str
    model: str
    category: str
    instance_id: int
    external_id: str
    truth: Any
    predicted: Any
    unanswered: bool = False
    rule_types: tuple[str, ...] = ()
    #: the attempt the row reads (a page links it; a share link opens it)
    attempt_id: int | None = None

    @property
    def truth_key(self) -> str:
        return label_key(self.truth)

    @property
    def predicted_key(self) -> str:
        return label_key(self.predicted)

    @property
    def correct(self) -> bool:
        return self.truth_key == self.predicted_key


@dataclass(frozen=True)
class CategoryMetrics:
    """Accuracy and macro P/R/F1 of one run on one category, in percent (METRICS.md section 5)."""

    run: str
    model: str
    category: str
    n: int
    correct: int
    unanswered: int
    accuracy: float
    precision: float
    recall: float
    f1: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class RunMetrics:
    """One run: overall accuracy weighted by task count, its interval, and its categories."""

    run: str
    model: str
    n: int
    correct: int
    unanswered: int
    accuracy: float
    ci_low: float
    ci_high: float
    categories: dict[str, CategoryMetrics]
    #: evaluate.py's "all" (percent): its six categories weighted by REFERENCE_TASK_COUNTS; None unless the run has
    #: all six (the reference cannot run without them)
    reference_accuracy: float | None = None


@dataclass(frozen=True)
class ConfusionColumn:
    """A predicted-label column; `unanswered` collects the missing answers (scored as `key`)."""

    key: str
    unanswered: bool = False


@dataclass(frozen=True)
class ConfusionCell:
    true_key: str
    column: ConfusionColumn
    count: int
    share: float
    diagonal: bool

    @property
    def level(self) -> int:
        """Shade 0-5 from the share of its row, for the heat colouring."""
        return 0 if self.count == 0 else 1 + min(4, int(self.share * 5))


@dataclass(frozen=True)
class ConfusionMatrix:
    """Counts of (true label, predicted label) of one run on one category."""

    run: str
    model: str
    category: str
    columns: list[ConfusionColumn]
    rows: list[tuple[str, list[ConfusionCell], int]]  # (true key, cells, row total)


@dataclass(frozen=True)
class RuleTypeRow:
    """Accuracy on the tasks whose guidelines contain a rule of this type, per run."""

    category: str
    rule_type: str
    n_tasks: int
    cells: list[tuple[str, int, int, float | None]]  # (run, n, correct, accuracy %)


# labels ---------------------------------------------------------------------------------


def label_key(value: Any) -> str:
    """A string naming a label exactly as Python equality tells labels apart.

    Text stays as it is unless it is empty or would read as a JSON value, then it is quoted; other
    values are their JSON (integral floats as integers, since 1 == 1.0). So the integer 1
    and the text "1" stay two labels, as in the reference scorer, and no two differ only
    in their key.
    """
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            return value if value else '""'  # the empty key means "any" in a filter
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def label_sort_key(key: str) -> tuple:
    """Numbers (and numeric text) first in numeric order, then text."""
    try:
        value = json.loads(key)
    except ValueError:
        value = key
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return (1, 0.0, key)
    try:
        number = float(value)
    except ValueError:
        return (1, 0.0, key)
    return (0, number, key) if math.isfinite(number) else (1, 0.0, key)


# scikit-learn-equal scores ----------------------------------------------------------------


def accuracy(truth: Sequence[str], predicted: Sequence[str]) -> float:
    """Share of equal labels, as sklearn.metrics.accuracy_score (0 when empty)."""
    if not truth:
        return 0.0
    return sum(t == p for t, p in zip(truth, predicted, strict=True)) / len(truth)


def macro_precision_recall_f1(truth: Sequence[str], predicted: Sequence[str]) -> tuple[float, float, float]:
    """Macro-averaged precision, recall and F1 over the union of labels, zero_division=0.

    Equal to scikit-learn's precision_score/recall_score/f1_score(average='macro',
    zero_division=0): per label P = tp/(tp+fp), R = tp/(tp+fn), F1 = 2tp/(2tp+fp+fn),
    each 0 when its denominator is 0, then the unweighted mean over labels.
    """
    labels = set(truth) | set(predicted)
    if not labels:
        return 0.0, 0.0, 0.0
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    for t, p in zip(truth, predicted, strict=True):
        if t == p:
            tp[t] += 1
        else:
            fp[p] += 1
            fn[t] += 1
    precision = recall = f1 = 0.0
    for label in sorted(labels):  # scikit-learn's order (np.unique), so the sum rounds alike on every run
        precision += _ratio(tp[label], tp[label] + fp[label])
        recall += _ratio(tp[label], tp[label] + fn[label])
        f1 += _ratio(2 * tp[label], 2 * tp[label] + fp[label] + fn[label])
    return precision / len(labels), recall / len(labels), f1 / len(labels)


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


# bootstrap -------------------------------------------------------------------------------


def bootstrap_accuracy_interval(
    strata: Sequence[tuple[int, int]],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval of pooled accuracy (percent) from (n, correct) per stratum.

    Each resample draws n tasks with replacement inside every stratum (category); the
    number of correct ones in such a draw is Binomial(n, correct/n), which is sampled
    exactly by inverting its distribution function, so 1,000 resamples cost O(n + 1000 log n).
    A fixed seed makes the interval the same on every request.
    """
    strata = [(n, k) for n, k in strata if n > 0]
    total = sum(n for n, _ in strata)
    if not total:
        return 0.0, 0.0
    rng = random.Random(seed)
    cdfs = [_binomial_cdf(n, k / n) for n, k in strata]
    draws = sorted(100.0 * sum(bisect.bisect_left(cdf, rng.random()) for cdf in cdfs) / total for _ in range(resamples))
    tail = (1.0 - level) / 2 * 100
    return _percentile(draws, tail), _percentile(draws, 100 - tail)


def _binomial_cdf(n: int, p: float) -> list[float]:
    if p <= 0.0:
        return [1.0] * (n + 1)
    if p >= 1.0:
        return [0.0] * n + [1.0]
    log_p, log_q = math.log(p), math.log1p(-p)
    head = math.lgamma(n + 1)
    cdf, acc = [], 0.0
    for j in range(n + 1):
        acc += math.exp(head - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * log_p + (n - j) * log_q)
        cdf.append(acc)
    cdf[-1] = 1.0  # rounding must not leave u > cdf[n]
    return cdf


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy.percentile's default)."""
    pos = (len(sorted_values) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


# metrics over rows -------------------------------------------------------------------------


def category_metrics(rows: Sequence[ChoiceRow]) -> CategoryMetrics:
    """Metrics of one run on one category (all rows share run and category)."""
    first = rows[0]
    truth = [r.truth_key for r in rows]
    predicted = [r.predicted_key for r in rows]
    correct = sum(t == p for t, p in zip(truth, predicted))
    precision, recall, f1 = macro_precision_recall_f1(truth, predicted)
    low, high = bootstrap_accuracy_interval([(len(rows), correct)])
    return CategoryMetrics(
        run=first.run,
        model=first.model,
        category=first.category,
        n=len(rows),
        correct=correct,
        unanswered=sum(r.unanswered for r in rows),
        accuracy=100.0 * accuracy(truth, predicted),
        precision=100.0 * precision,
        recall=100.0 * recall,
        f1=100.0 * f1,
        ci_low=low,
        ci_high=high,
    )


def run_metrics(rows: Iterable[ChoiceRow]) -> list[RunMetrics]:
    """Per run (in first-seen order): category metrics and overall accuracy weighted by task count."""
    grouped: dict[str, dict[str, list[ChoiceRow]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        grouped[r.run][r.category].append(r)
    result = []
    for run, by_category in grouped.items():
        categories = {c: category_metrics(by_category[c]) for c in sorted(by_category)}
        n = sum(m.n for m in categories.values())
        correct = sum(m.correct for m in categories.values())
        low, high = bootstrap_accuracy_interval([(m.n, m.correct) for m in categories.values()])
        result.append(
            RunMetrics(
                run=run,
                model=next(iter(categories.values())).model,
                n=n,
                correct=correct,
                unanswered=sum(m.unanswered for m in categories.values()),
                accuracy=100.0 * correct / n,
                ci_low=low,
                ci_high=high,
                categories=categories,
                reference_accuracy=reference_weighted_accuracy(categories),
            )
        )
    return result


def reference_weighted_accuracy(categories: dict[str, CategoryMetrics]) -> float | None:
    """evaluate.py's "all": the accuracies of price, relevance, math, chat, summary and hallu weighted by the fixed
    REFERENCE_TASK_COUNTS (not by the tasks imported), other categories ignored; None when one of the six is missing."""
    if any(name not in categories for name in REFERENCE_TASK_COUNTS):
        return None
    total = sum(REFERENCE_TASK_COUNTS.values())
    return sum(categories[name].accuracy * weight for name, weight in REFERENCE_TASK_COUNTS.items()) / total


RUN_SORTS = ("run", "model", "n", "unanswered", "accuracy")
CATEGORY_SORTS = ("run", "n", "accuracy", "precision", "recall", "f1", "unanswered")


def run_metrics_sorted(runs: list[RunMetrics], sort: str) -> list[RunMetrics]:
    """Runs ordered by `sort` ("accuracy", "-accuracy", "cat:<category>", ...); unknown keys keep the order."""
    desc, field = sort.startswith("-"), sort.lstrip("-")
    if field.startswith("cat:"):
        category = field[4:]

        def value(m: RunMetrics):
            c = m.categories.get(category)
            return (c is not None, c.accuracy if c else 0.0)

    elif field in RUN_SORTS:

        def value(m: RunMetrics):
            return getattr(m, field)

    else:
        return runs
    return sorted(runs, key=value, reverse=desc)


def category_tables(runs: list[RunMetrics], sort: str) -> list[tuple[str, list[CategoryMetrics]]]:
    """Per category, the runs' metrics ordered by `sort` (a CategoryMetrics field, "-" for descending)."""
    desc, field = sort.startswith("-"), sort.lstrip("-")
    if field not in CATEGORY_SORTS:
        field, desc = "run", False
    categories = sorted({c for m in runs for c in m.categories})
    tables = []
    for category in categories:
        items = [m.categories[category] for m in runs if category in m.categories]
        tables.append((category, sorted(items, key=lambda c: getattr(c, field), reverse=desc)))
    return tables


def confusion_matrices(rows: Iterable[ChoiceRow]) -> list[ConfusionMatrix]:
    """One matrix per (run, category): true labels down, predicted labels across,
    and missing answers in a column of their own (they are scored as the default label)."""
    grouped: dict[tuple[str, str], list[ChoiceRow]] = defaultdict(list)
    for r in rows:
        grouped[(r.run, r.category)].append(r)
    matrices = []
    for (run, category), items in grouped.items():
        true_keys = sorted({r.truth_key for r in items}, key=label_sort_key)
        answered = {r.predicted_key for r in items if not r.unanswered}
        columns = [ConfusionColumn(k) for k in sorted(answered | set(true_keys), key=label_sort_key)]
        columns += [ConfusionColumn(k, True) for k in sorted({r.predicted_key for r in items if r.unanswered})]
        counts = Counter((r.truth_key, r.predicted_key, r.unanswered) for r in items)
        body = []
        for t in true_keys:
            total = sum(counts[(t, c.key, c.unanswered)] for c in columns)
            cells = [
                ConfusionCell(
                    true_key=t,
                    column=c,
                    count=counts[(t, c.key, c.unanswered)],
                    share=counts[(t, c.key, c.unanswered)] / total if total else 0.0,
                    diagonal=(c.key == t),
                )
                for c in columns
            ]
            body.append((t, cells, total))
        matrices.append(ConfusionMatrix(run=run, model=items[0].model, category=category, columns=columns, rows=body))
    return sorted(matrices, key=lambda m: (m.category, m.run))


def rows_matching(
    rows: Iterable[ChoiceRow],
    *,
    category: str | None = None,
    true_key: str | None = None,
    pred_key: str | None = None,
    unanswered: bool | None = None,
    correct: bool | None = None,
) -> list[ChoiceRow]:
    """The rows meeting every given condition (None leaves a condition out): a confusion
    cell is (category, true_key, pred_key, unanswered)."""
    return [
        r
        for r in rows
        if (category is None or r.category == category)
        and (true_key is None or r.truth_key == true_key)
        and (pred_key is None or r.predicted_key == pred_key)
        and (unanswered is None or r.unanswered == unanswered)
        and (correct is None or r.correct == correct)
    ]


def rule_type_rows(rows: Iterable[ChoiceRow], runs: Sequence[str]) -> list[RuleTypeRow]:
    """Accuracy per (category, guideline rule type) and run over the tasks citing a rule of that type.

    A task with several rules of one type counts once for it; a task counts for every
    type it cites. Ordered by category, then by the lowest accuracy across runs.
    """
    tally: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    tasks: dict[tuple[str, str], set[int]] = defaultdict(set)
    for r in rows:
        for rule_type in dict.fromkeys(r.rule_types):
            cell = tally[(r.category, rule_type)][r.run]
            cell[0] += 1
            cell[1] += r.correct
            tasks[(r.category, rule_type)].add(r.instance_id)
    result = []
    for (category, rule_type), per_run in tally.items():
        cells = []
        for run in runs:
            n, correct = per_run.get(run, (0, 0))
            cells.append((run, n, correct, 100.0 * correct / n if n else None))
        result.append(RuleTypeRow(category, rule_type, len(tasks[(category, rule_type)]), cells))
    worst = {id(r): min((c[3] for c in r.cells if c[3] is not None), default=101.0) for r in result}
    return sorted(result, key=lambda r: (r.category, worst[id(r)], r.rule_type))


# rows from what the selector read -------------------------------------------------------


def scored_answer(outcome: Any, *, view: str = EXACT) -> tuple[Any, Any, Any] | None:
    """(answer, ground truth, unanswered) of one Attempt.outcome as the GuideBench ingest writes it: the exact view
    compares {"answer", "ground_truth"} (the reference scorer's values), the normalised view
    {"normalised": {"answer", "ground_truth"}} (runs.scoring.choice.choice_answer_normalised). None without a ground
    truth (nothing to compare)."""
    if not isinstance(outcome, dict) or "ground_truth" not in outcome:
        return None
    source = (outcome.get("normalised") or {}) if view == NORMALISED else outcome
    return source.get("answer"), source.get("ground_truth"), outcome.get("unanswered")


def health_rows(rows: Iterable[ChoiceRow], model_of: Mapping[str, str]) -> Iterator[AttemptItem]:
    """Item health's rows (runs.metrics.item_health) of tasks: one per scored attempt, the task as the item, passed
    when the answer matches the ground truth as the reference scorer compares them, by the run's model (`model_of`:
    run label -> model name)."""
    for r in rows:
        yield AttemptItem(item_id=r.instance_id, model=model_of[r.run], passes=int(r.correct), judged=1)


def choice_row(attempt: Sequence, answer: Any, truth: Any, unanswered: Any, guidelines: Any = None) -> ChoiceRow:
    """One scored attempt: `attempt` is (run label, model name, model display name, category, instance id, external
    id, attempt id); rule types come from the task's Guidelines (none without them)."""
    label, model, display, category, instance_id, external_id, attempt_id = attempt
    return ChoiceRow(
        run=label,
        model=display or model,
        category=category,
        instance_id=instance_id,
        external_id=external_id,
        truth=truth,
        predicted=answer,
        unanswered=bool(unanswered),
        rule_types=_rule_types(guidelines),
        attempt_id=attempt_id,
    )


def _rule_types(guidelines: Any) -> tuple[str, ...]:
    if not isinstance(guidelines, list):
        return ()
    types = (g.get("type") for g in guidelines if isinstance(g, dict))
    return tuple(dict.fromkeys(str(t) for t in types if t not in (None, "")))


@dataclass(frozen=True)
class TaskAnswer:
    """One run's answer to one task, for the task viewer."""

    run: str
    model: str
    raw: Any
    answer: Any
    analysis: Any
    unanswered: bool
    unanswered_reason: str
    correct: bool
    normalised_answer: Any
    normalised_correct: bool | None
    cleaned_response: Any
    #: the attempt that gave the answer (a share link of the task page may open it)
    attempt_id: int | None = None

    @property
    def answer_key(self) -> str:
        return label_key(self.answer)

    @property
    def raw_text(self) -> str:
        """LLMAnswer as JSON text (it is usually an object)."""
        return self.raw if isinstance(self.raw, str) else json.dumps(self.raw, ensure_ascii=False)


def task_answers(attempts: Iterable[tuple], run_labels: Sequence[str]) -> list[TaskAnswer]:
    """Each run's answer to one task, in the order of `run_labels`: `attempts` is (attempt id, run label, model
    name, model display name, outcome) per attempt."""
    order = {label: i for i, label in enumerate(run_labels)}
    answers = []
    for attempt_id, label, model, display, outcome in attempts:
        outcome = outcome if isinstance(outcome, dict) else {}
        normalised = outcome.get("normalised") or {}
        answers.append(
            TaskAnswer(
                run=label,
                model=display or model,
                raw=outcome.get("raw"),
                answer=outcome.get("answer"),
                analysis=outcome.get("analysis"),
                unanswered=bool(outcome.get("unanswered")),
                unanswered_reason=str(outcome.get("unanswered_reason") or ""),
                correct=label_key(outcome.get("answer")) == label_key(outcome.get("ground_truth")),
                normalised_answer=normalised.get("answer"),
                normalised_correct=normalised.get("correct"),
                cleaned_response=outcome.get("cleaned_response"),
                attempt_id=attempt_id,
            )
        )
    return sorted(answers, key=lambda a: order[a.run])


@dataclass(frozen=True)
class TaskView:
    """A GuideBench task laid out for reading: rules, options split into lines, the ground truth."""

    instruction: str
    guidelines: list[dict[str, str]]
    context: str
    options: list[str]
    ground_truth_key: str
    analysis: str
    extra: dict[str, Any]


def choice_task_view(spec: dict[str, Any], category: str) -> TaskView:
    """The parts of a stored task (Instance.spec) the task viewer shows; unknown fields go to `extra`."""
    spec = spec if isinstance(spec, dict) else {}
    groundtruth = spec.get("Groundtruth") if isinstance(spec.get("Groundtruth"), dict) else {}
    guidelines = [
        {"type": str(g.get("type", "")), "rule_id": str(g.get("rule_id", "")), "rule_text": str(g.get("rule_text", ""))}
        for g in spec.get("Guidelines") or []
        if isinstance(g, dict)
    ]
    options = spec.get("MultipleOptions")
    if isinstance(options, list):
        lines = [str(o) for o in options]
    elif options:
        lines = [line for line in str(options).splitlines() if line.strip()]
    else:
        lines = []
    analysis = groundtruth.get("AnswerAnalysis", groundtruth.get("ReferenceAnalysis", ""))
    known = {"Instruction", "Guidelines", "Context", "MultipleOptions", "Groundtruth"}
    return TaskView(
        instruction=str(spec.get("Instruction", "")),
        guidelines=guidelines,
        context=str(spec.get("Context", "")),
        options=lines,
        ground_truth_key=label_key(choice_ground_truth(category, groundtruth)),
        analysis="" if analysis is None else str(analysis),
        extra={k: v for k, v in spec.items() if k not in known},
    )
