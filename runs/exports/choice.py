"""Choice pages (GuideBench) as data: accuracy and macro P/R/F1, confusion matrices, rule types, tasks."""

from __future__ import annotations

from runs.exports import yes_no
from runs.pages import Column, PageData, Table, page_builder

_CI = (
    Column("accuracy", "Accuracy %", "pct"),
    Column("ci_low", "95% CI low", "pct"),
    Column("ci_high", "95% CI high", "pct"),
)
_TIES = ("rank_low", "rank_high", "tie_group")


@page_builder(("overall", "Overall"), ("categories", "Per category"))
def metrics_page(context: dict) -> PageData:
    """Overall accuracy per run (and per category), and per category accuracy with macro precision, recall and F1."""
    categories = context.get("categories", [])
    overall = Table(
        "overall",
        "Overall",
        (
            Column("run", "Run"),
            Column("model", "Model"),
            Column("n", "Tasks", "int"),
            Column("unanswered", "No answer", "int"),
            *_CI,
            Column("reference_accuracy", 'evaluate.py "all" %', "pct"),
            *(Column(f"cat:{c}", f"{c} accuracy %", "pct") for c in categories),
            # last: columns added after scripts learnt the others' places (rank interval and tie group by accuracy)
            *(Column(k, k, "int") for k in _TIES),
        ),
        [
            {
                "run": m.run,
                "model": m.model,
                "n": m.n,
                "unanswered": m.unanswered,
                "accuracy": m.accuracy,
                "ci_low": m.ci_low,
                "ci_high": m.ci_high,
                "reference_accuracy": m.reference_accuracy,
                **{f"cat:{c}": cell and cell.accuracy for c, cell in zip(categories, cells)},
                **tie.fields(),
            }
            for m, cells, tie in context.get("overall", [])
        ],
    )
    per_category = Table(
        "categories",
        "Per category",
        (
            Column("category", "Category"),
            Column("run", "Run"),
            Column("model", "Model"),
            Column("n", "Tasks", "int"),
            *_CI,
            Column("precision", "Macro precision %", "pct"),
            Column("recall", "Macro recall %", "pct"),
            Column("f1", "Macro F1 %", "pct"),
            Column("unanswered", "No answer", "int"),
        ),
        [
            {
                "category": category,
                "run": c.run,
                "model": c.model,
                "n": c.n,
                "accuracy": c.accuracy,
                "ci_low": c.ci_low,
                "ci_high": c.ci_high,
                "precision": c.precision,
                "recall": c.recall,
                "f1": c.f1,
                "unanswered": c.unanswered,
            }
            for category, items in context.get("tables", [])
            for c in items
        ],
    )
    figures = [context["figure"]] if context.get("overall") and context.get("figure") else []
    return PageData("Answer accuracy and macro P/R/F1", [overall, per_category], figures, help_anchor="choice")


@page_builder(
    ("confusion", "Confusion matrices"),
    ("cell-tasks", "Tasks of the chosen cell"),
    links_attempts=True,
    per_item=("cell-tasks",),
)
def confusion_page(context: dict) -> PageData:
    """Every cell of the category's confusion matrices: run, true label, predicted label, count and share of its row;
    with a cell chosen, its tasks, each linking to the run's attempt."""
    table = Table(
        "confusion",
        f"Confusion matrices: {context.get('category', '')}",
        (
            Column("run", "Run"),
            Column("model", "Model"),
            Column("category", "Category"),
            Column("true", "True label"),
            Column("predicted", "Predicted label"),
            Column("count", "Tasks", "int"),
            Column("share", "Share of the true label %", "pct"),
        ),
        [
            {
                "run": m.run,
                "model": m.model,
                "category": m.category,
                "true": true_key,
                "predicted": f"no answer (scored as {cell.column.key})" if cell.column.unanswered else cell.column.key,
                "count": cell.count,
                "share": 100.0 * cell.share,
            }
            for m in context.get("matrices", [])
            for true_key, cells, _total in m.rows
            for cell in cells
        ],
    )
    state = context.get("state") or {}
    return PageData(
        "Confusion matrices",
        [
            table,
            _answers("cell-tasks", f"Tasks of {state.get('crun') or 'the chosen cell'}", context.get("cell") or []),
        ],
        help_anchor="choice",
    )


def _answers(name: str, title: str, rows) -> Table:
    """Answers (ChoiceRow) as a table, each task linking to the attempt that answered it."""
    return Table(
        name,
        title,
        (
            Column("task", "Task", link="attempt_id"),
            Column("category", "Category"),
            Column("run", "Run"),
            Column("model", "Model"),
            Column("truth", "Ground truth"),
            Column("predicted", "Answer"),
            Column("unanswered", "No answer"),
            Column("correct", "Correct"),
        ),
        [
            {
                "task": r.external_id,
                "attempt_id": r.attempt_id,
                "category": r.category,
                "run": r.run,
                "model": r.model,
                "truth": r.truth_key,
                "predicted": r.predicted_key,
                "unanswered": yes_no(r.unanswered),
                "correct": yes_no(r.correct),
            }
            for r in rows
        ],
    )


@page_builder(("rule-types", "Rule types"))
def rules_page(context: dict) -> PageData:
    """Accuracy per guideline rule type and run."""
    runs = context.get("runs", [])
    columns = (
        Column("rule_type", "Rule type"),
        Column("category", "Category"),
        Column("n_tasks", "Tasks", "int"),
        *(
            c
            for run in runs
            for c in (
                Column(f"{run}:accuracy", f"{run} accuracy %", "pct"),
                Column(f"{run}:correct", f"{run} correct", "int"),
            )
        ),
    )
    rows = []
    for r in context.get("table", []):
        row = {"rule_type": r.rule_type, "category": r.category, "n_tasks": r.n_tasks}
        for run, _n, correct, accuracy in r.cells:
            row |= {f"{run}:accuracy": accuracy, f"{run}:correct": correct}
        rows.append(row)
    figures = [context["figure"]] if context.get("figure") else []
    return PageData(
        "Accuracy by guideline rule type",
        [Table("rule-types", "Rule types", columns, rows)],
        figures,
        help_anchor="choice",
    )


@page_builder(("tasks", "Tasks"), links_attempts=True, per_item=("tasks",))
def tasks_page(context: dict) -> PageData:
    """Every answer matching the page's filters (all pages of the list), each linking to its attempt."""
    return PageData("Tasks", [_answers("tasks", "Tasks", context.get("rows", []))], help_anchor="choice")


@page_builder(("answers", "Answers"), links_attempts=True, per_item=("answers",))
def task_page(context: dict) -> PageData:
    """One task's answer by each selected run, as the task page lists them, with the ground truth; each answer links
    to the attempt that gave it."""
    task, instance = context["task"], context["instance"]
    answers = Table(
        "answers",
        "Answers",
        (
            Column("run", "Run", link="attempt_id"),
            Column("model", "Model"),
            Column("answer", "Answer"),
            Column("correct", "Correct"),
            Column("unanswered", "No answer"),
            Column("unanswered_reason", "Why no answer"),
            Column("normalised_answer", "Normalised answer"),
            Column("normalised_correct", "Correct when normalised"),
            Column("analysis", "The model's analysis"),
            Column("raw", "Raw response"),
        ),
        [
            {
                "attempt_id": a.attempt_id,
                "run": a.run,
                "model": a.model,
                "answer": a.answer_key,
                "correct": yes_no(a.correct),
                "unanswered": yes_no(a.unanswered),
                "unanswered_reason": a.unanswered_reason,
                "normalised_answer": "" if a.normalised_answer is None else str(a.normalised_answer),
                "normalised_correct": yes_no(a.normalised_correct),
                "analysis": "" if a.analysis is None else str(a.analysis),
                "raw": a.raw_text,
            }
            for a in context["answers"]
        ],
    )
    return PageData(
        f"Task {instance.external_id}",
        [answers],
        help_anchor="choice",
        facts={
            "task": instance.external_id,
            "category": instance.primary_category,
            "ground_truth": task.ground_truth_key,
        },
    )
