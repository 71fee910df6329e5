"""Choice-benchmark metrics equal scikit-learn's (METRICS.md section 5)."""

import os
import random
import subprocess
import sys

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

from runs.metrics.choice import (
    ChoiceRow,
    bootstrap_accuracy_interval,
    category_tables,
    confusion_matrices,
    label_key,
    macro_precision_recall_f1,
    rows_matching,
    rule_type_rows,
    run_metrics,
    run_metrics_sorted,
)
from runs.models import AgentModel, Attempt, Benchmark, Instance, Run
from runs.selectors.choice import choice_rows

#: the reference scorer's stand-in for a missing answer, per category
DEFAULTS = {"chat": "E", "math": "0", "price": -1, "relevance": "-1(No Result)"}
LABELS = {
    "chat": ["A", "B", "C", "D"],
    "math": ["170", "330", "0", "12.5"],
    "price": [0, 1],
    "relevance": ["0（不相关）", "1（弱相关）", "2（强相关）"],
}
#: answers a model gives that are never a true label
STRAYS = {"chat": ["F"], "math": ["171"], "price": [2], "relevance": ["2"]}


def generated_rows(seed: int, n: int = 60, run: str = "r1") -> list[ChoiceRow]:
    rng = random.Random(seed)
    rows = []
    for category, labels in LABELS.items():
        for i in range(n):
            truth = rng.choice(labels)
            roll = rng.random()
            if roll < 0.15:
                predicted, unanswered = DEFAULTS[category], True
            elif roll < 0.25:
                predicted, unanswered = rng.choice(STRAYS[category]), False
            elif roll < 0.65:
                predicted, unanswered = truth, False
            else:
                predicted, unanswered = rng.choice(labels), False
            rows.append(ChoiceRow(run, "m", category, i, f"{category}-{i}", truth, predicted, unanswered))
    return rows


def sklearn_scores(rows):
    truth = [r.truth for r in rows]
    predicted = [r.predicted for r in rows]
    # sklearn refuses a mix of numbers and text: compare as the reference does on one type
    if any(isinstance(v, str) for v in truth + predicted) and any(not isinstance(v, str) for v in truth + predicted):
        raise AssertionError("mixed label types in a generated category")
    kwargs = {"average": "macro", "zero_division": 0}
    return (
        100 * accuracy_score(truth, predicted),
        100 * precision_score(truth, predicted, **kwargs),
        100 * recall_score(truth, predicted, **kwargs),
        100 * f1_score(truth, predicted, **kwargs),
    )


@pytest.mark.parametrize("seed", range(8))
def test_it_equals_sklearn_per_category_with_missing_and_prediction_only_labels(seed):
    rows = generated_rows(seed)
    [metrics] = run_metrics(rows)
    for category in LABELS:
        mine = metrics.categories[category]
        subset = [r for r in rows if r.category == category]
        assert any(r.unanswered for r in subset)
        assert any(r.predicted in STRAYS[category] for r in subset)
        acc, precision, recall, f1 = sklearn_scores(subset)
        assert mine.accuracy == pytest.approx(acc, abs=1e-9)
        assert mine.precision == pytest.approx(precision, abs=1e-9)
        assert mine.recall == pytest.approx(recall, abs=1e-9)
        assert mine.f1 == pytest.approx(f1, abs=1e-9)
        assert mine.unanswered == sum(r.unanswered for r in subset)
        assert mine.n == len(subset)


def test_it_equals_sklearn_on_tiny_edge_cases():
    cases = [
        (["A"], ["B"]),
        (["A", "A"], ["A", "A"]),
        (["A", "B", "C"], ["E", "E", "E"]),
        (["A", "B"], ["B", "A"]),
        (["x", "y", "y", "z"], ["x", "q", "y", "w"]),
    ]
    for truth, predicted in cases:
        p, r, f = macro_precision_recall_f1(truth, predicted)
        kwargs = {"average": "macro", "zero_division": 0}
        assert p == pytest.approx(precision_score(truth, predicted, **kwargs))
        assert r == pytest.approx(recall_score(truth, predicted, **kwargs))
        assert f == pytest.approx(f1_score(truth, predicted, **kwargs))


def test_it_weights_overall_accuracy_by_task_count():
    rows = [ChoiceRow("r", "m", "a", i, f"a{i}", "A", "A" if i < 9 else "B") for i in range(10)]
    rows += [ChoiceRow("r", "m", "b", 100 + i, f"b{i}", "A", "B") for i in range(30)]
    [metrics] = run_metrics(rows)
    assert metrics.accuracy == pytest.approx(100 * 9 / 40)
    assert metrics.categories["a"].accuracy == pytest.approx(90.0)
    assert metrics.n == 40 and metrics.correct == 9


def test_it_keeps_the_number_one_and_the_text_one_apart_as_the_reference_does():
    assert label_key(1) != label_key("1")
    assert label_key(1) == label_key(1.0)
    assert label_key("A") == "A"
    assert label_key("") == '""'
    assert label_key("null") != label_key(None)
    row = ChoiceRow("r", "m", "price", 1, "p1", 1, "1")
    assert not row.correct
    assert ChoiceRow("r", "m", "price", 1, "p1", 1, 1).correct


def test_it_gives_a_fixed_bootstrap_interval_around_the_accuracy():
    first = bootstrap_accuracy_interval([(100, 70)])
    assert first == bootstrap_accuracy_interval([(100, 70)])
    low, high = first
    assert low < 70 < high
    # the normal approximation of a 95% interval of 70% on 100 tasks is about +-9 points
    assert 60 <= low <= 63 and 77 <= high <= 80
    assert bootstrap_accuracy_interval([(10, 10)]) == (100.0, 100.0)
    assert bootstrap_accuracy_interval([(10, 0)]) == (0.0, 0.0)
    assert bootstrap_accuracy_interval([]) == (0.0, 0.0)


def test_it_matches_a_plain_resampling_bootstrap():
    correct = np.array([1] * 45 + [0] * 35)
    rng = np.random.default_rng(7)
    means = [100 * rng.choice(correct, size=correct.size).mean() for _ in range(20000)]
    expected = np.percentile(means, [2.5, 97.5])
    low, high = bootstrap_accuracy_interval([(80, 45)], resamples=20000)
    assert low == pytest.approx(expected[0], abs=1.0)
    assert high == pytest.approx(expected[1], abs=1.0)


def test_it_resamples_overall_accuracy_within_categories():
    low, high = bootstrap_accuracy_interval([(50, 50), (50, 0)])
    # every resample keeps 50 right and 50 wrong: no spread at all
    assert (low, high) == (50.0, 50.0)


def test_it_puts_missing_answers_in_a_column_of_their_own():
    rows = [
        ChoiceRow("r", "m", "chat", 1, "c1", "A", "A"),
        ChoiceRow("r", "m", "chat", 2, "c2", "A", "E", unanswered=True),
        ChoiceRow("r", "m", "chat", 3, "c3", "B", "E"),
        ChoiceRow("r", "m", "chat", 4, "c4", "B", "A"),
    ]
    [matrix] = confusion_matrices(rows)
    assert [(c.key, c.unanswered) for c in matrix.columns] == [("A", False), ("B", False), ("E", False), ("E", True)]
    counts = {t: [c.count for c in cells] for t, cells, _ in matrix.rows}
    assert counts == {"A": [1, 0, 0, 1], "B": [1, 0, 1, 0]}
    assert [c.diagonal for c in matrix.rows[0][1]] == [True, False, False, False]
    assert [r.instance_id for r in rows_matching(rows, true_key="A", pred_key="E", unanswered=True)] == [2]
    assert [r.instance_id for r in rows_matching(rows, true_key="B", pred_key="E", unanswered=False)] == [3]
    assert [r.instance_id for r in rows_matching(rows, category="chat", correct=False)] == [2, 3, 4]
    assert rows_matching(rows, category="math") == []


def test_it_breaks_accuracy_down_by_rule_type_counting_a_task_once_per_type():
    rows = [
        ChoiceRow("r1", "m", "hallu", 1, "h1", "A", "A", rule_types=("fact", "logic")),
        ChoiceRow("r1", "m", "hallu", 2, "h2", "A", "B", rule_types=("fact",)),
        ChoiceRow("r2", "m2", "hallu", 1, "h1", "A", "B", rule_types=("fact", "logic")),
    ]
    table = rule_type_rows(rows, ["r1", "r2"])
    by_type = {r.rule_type: r for r in table}
    assert by_type["fact"].n_tasks == 2
    assert by_type["fact"].cells == [("r1", 2, 1, 50.0), ("r2", 1, 0, 0.0)]
    assert by_type["logic"].cells == [("r1", 1, 1, 100.0), ("r2", 1, 0, 0.0)]
    # the weakest type (lowest accuracy in any run) comes first; both reach 0 here, then by name
    assert [r.rule_type for r in table] == ["fact", "logic"]


def test_it_sorts_runs_and_category_tables():
    rows = generated_rows(1, run="a") + generated_rows(2, run="b") + generated_rows(3, run="c")
    runs = run_metrics(rows)
    ordered = run_metrics_sorted(runs, "-accuracy")
    assert [m.accuracy for m in ordered] == sorted((m.accuracy for m in runs), reverse=True)
    by_chat = run_metrics_sorted(runs, "cat:chat")
    assert [m.categories["chat"].accuracy for m in by_chat] == sorted(m.categories["chat"].accuracy for m in runs)
    tables = dict(category_tables(runs, "-f1"))
    assert [c.f1 for c in tables["math"]] == sorted((c.f1 for c in tables["math"]), reverse=True)
    assert run_metrics_sorted(runs, "nonsense") == runs


@pytest.mark.django_db
def test_it_reads_rows_keeping_label_types_and_rule_types():
    benchmark = Benchmark.objects.create(slug="guidebench", name="GuideBench", kind="choice")
    model = AgentModel.objects.create(name="model-x")
    run = Run.objects.create(benchmark=benchmark, model=model, label="x-run")
    other = Run.objects.create(benchmark=benchmark, model=model, label="other")
    answers = [(1, "1", False), ("170", 170, False), ("A", "E", True)]
    for i, (truth, answer, unanswered) in enumerate(answers):
        instance = Instance.objects.create(
            benchmark=benchmark,
            external_id=f"t-{i}",
            primary_category="price",
            content_hash="h",
            spec={"Guidelines": [{"type": "shape"}, {"type": "shape"}, {"type": "origin"}]},
        )
        outcome = {"answer": answer, "ground_truth": truth, "unanswered": unanswered, "raw": None}
        Attempt.objects.create(run=run, instance=instance, outcome=outcome)
        Attempt.objects.create(run=other, instance=instance, outcome={})
    rows = choice_rows(benchmark.id, ["x-run", "other"], with_rules=True)
    assert [(r.truth, r.predicted, r.unanswered) for r in rows] == answers
    assert [r.correct for r in rows] == [False, False, False]
    assert rows[0].rule_types == ("shape", "origin")
    assert {r.run for r in rows} == {"x-run"}


@pytest.mark.django_db
def test_it_reads_the_normalised_view_from_the_lenient_comparison():
    benchmark = Benchmark.objects.create(slug="guidebench", name="GuideBench", kind="choice")
    run = Run.objects.create(benchmark=benchmark, model=AgentModel.objects.create(name="m"), label="r")
    instance = Instance.objects.create(
        benchmark=benchmark, external_id="relevance-1", primary_category="relevance", content_hash="h", spec={}
    )
    outcome = {
        "answer": "2",
        "ground_truth": "2（强相关）",
        "unanswered": False,
        "normalised": {"answer": "2", "ground_truth": "2", "correct": True},
    }
    Attempt.objects.create(run=run, instance=instance, outcome=outcome)
    [exact] = run_metrics(choice_rows(benchmark.id, ["r"]))
    [lenient] = run_metrics(choice_rows(benchmark.id, ["r"], view="normalised"))
    assert (exact.accuracy, lenient.accuracy) == (0.0, 100.0)


def test_the_reference_overall_weights_its_six_categories_by_the_full_benchmark_counts():
    """evaluate.py's "all": fixed weights 442/192/52/180/58/118, audit ignored, whatever the files hold."""
    correct = {"price": 3, "relevance": 1, "math": 0, "chat": 2, "summary": 4, "hallu": 1, "audit": 4}
    rows = [
        ChoiceRow("r", "m", c, 10 * n + i, f"{c}{i}", "A", "A" if i < k else "B")
        for n, (c, k) in enumerate(correct.items())
        for i in range(4)
    ]
    [result] = run_metrics(rows)
    accuracies = {c: 100 * k / 4 for c, k in correct.items()}
    weights = {"price": 442, "relevance": 192, "math": 52, "chat": 180, "summary": 58, "hallu": 118}
    assert result.reference_accuracy == pytest.approx(sum(accuracies[c] * w for c, w in weights.items()) / 1042)
    assert result.accuracy == pytest.approx(100 * 15 / 28)
    [partial] = run_metrics([r for r in rows if r.category != "math"])
    assert partial.reference_accuracy is None


#: five labels whose per-label recalls sum to three different floats depending on their order
TRUTH = "AEABDEADADEDCCDDEDAADAAAAEBEECECECDBEBAE"
PREDICTED = "CBAACDCCAEDDDCCCDBEEBACAEBEDCAEADBDBDBAB"


def test_the_macro_mean_rounds_alike_in_every_process():
    """The labels are summed sorted, as scikit-learn does, not in a set's order, which changes with the hash seed
    from one process to the next (it moved the last digit of an export between two workers)."""
    script = (
        f"TRUTH, PREDICTED = {TRUTH!r}, {PREDICTED!r}; from runs.metrics.choice import macro_precision_recall_f1 as m; "
        "print(repr(m(list(TRUTH), list(PREDICTED))))"
    )
    answers = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout
        for seed in range(12)
    }
    assert len(answers) == 1
    truth, predicted = list(TRUTH), list(PREDICTED)
    kwargs = {"average": "macro", "zero_division": 0}
    assert answers.pop().strip() == repr(
        (
            precision_score(truth, predicted, **kwargs),
            recall_score(truth, predicted, **kwargs),
            f1_score(truth, predicted, **kwargs),
        )
    )
