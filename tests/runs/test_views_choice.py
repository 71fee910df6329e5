"""Choice-benchmark pages: metrics, confusion, rule types, tasks, task viewer."""

import csv
import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.models import AgentModel, Attempt, Benchmark, Instance, Run

pytestmark = pytest.mark.django_db

TASKS = [  # (category, truth, rule types)
    ("chat", "A", ["booking"]),
    ("chat", "B", ["booking", "change"]),
    ("chat", "C", ["change"]),
    ("price", 1, ["origin"]),
    ("price", 0, ["shape"]),
]
ANSWERS = {  # run -> answers in task order; None = no LLMAnswer
    "alpha": ["A", "B", None, 1, "0"],
    "beta": ["A", "B", "C", None, 0],
}
DEFAULTS = {"chat": "E", "price": -1}


def make_study(n_extra_runs: int = 0) -> Benchmark:
    benchmark = Benchmark.objects.create(slug="guidebench", name="GuideBench", kind="choice")
    instances = []
    for i, (category, truth, types) in enumerate(TASKS):
        key = "OptimalOption" if category == "chat" else "ReferenceAnswer"
        spec = {
            "Instruction": f"Judge task {i}",
            "Guidelines": [
                {"type": t, "rule_id": f"rule_{i}{j}", "rule_text": f"<i>rule</i> {t}"} for j, t in enumerate(types)
            ],
            "Context": f"context <script>alert({i})</script>",
            "Groundtruth": {key: truth, "AnswerAnalysis": f"because {i}"},
        }
        if category == "chat":
            spec["MultipleOptions"] = "A. yes\nB. no\nC. maybe"
        instances.append(
            Instance.objects.create(
                benchmark=benchmark,
                external_id=f"{category}-{i:012d}",
                primary_category=category,
                content_hash=str(i),
                spec=spec,
            )
        )
    runs = dict(ANSWERS)
    for k in range(n_extra_runs):
        runs[f"extra-{k}"] = ANSWERS["alpha"]
    for label, answers in runs.items():
        run = Run.objects.create(
            benchmark=benchmark, model=AgentModel.objects.get_or_create(name=f"m-{label}")[0], label=label
        )
        for instance, answer, (category, truth, _) in zip(instances, answers, TASKS):
            scored = DEFAULTS[category] if answer is None else answer
            outcome = {
                "answer": scored,
                "raw": None if answer is None else {"x": answer},
                "analysis": f"<b>{label}</b> says",
                "unanswered": answer is None,
                "unanswered_reason": "missing" if answer is None else "",
                "ground_truth": truth,
                "correct": scored == truth,
                "normalised": {
                    "answer": None if answer is None else str(answer),
                    "ground_truth": str(truth),
                    "correct": answer is not None and str(answer) == str(truth),
                },
            }
            Attempt.objects.create(run=run, instance=instance, outcome=outcome)
    return benchmark


def url(name, **kwargs):
    return reverse(f"runs:{name}", kwargs={"slug": "guidebench", **kwargs})


def test_it_shows_accuracy_macro_scores_and_unanswered_per_run(reviewer_client):
    make_study()
    response = reviewer_client.get(url("choice-metrics"))
    assert response.status_code == 200
    html = response.content.decode()
    # alpha: chat 2/3, price 1/2 (the text "0" is not the number 0); overall 3/5
    assert "60.00%" in html and "66.67%" in html and "50.00%" in html
    assert 'data-plotly="fig-accuracy" data-figure="{' in html
    assert "How is this computed" in html
    # evaluate.py's own "all" needs its six categories; this study has two, so the column is blank and explained
    assert "evaluate.py “all”" in html and "needs all six of price, relevance, math, chat, summary and hallu" in html
    overall = response.context["overall"]
    assert [(m.run, m.accuracy, m.unanswered) for m, _, _ in overall] == [("beta", 80.0, 1), ("alpha", 60.0, 1)]


def test_it_sorts_in_the_url_and_serves_the_tables_fragment_to_htmx(editor_client):
    make_study()
    response = editor_client.get(
        url("choice-metrics") + "?sort=run&dsort=f1", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="tables"
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="tables">')
    assert "<html" not in html
    overall = html[: html.index("Per category")]
    assert overall.index(">alpha</a>") < overall.index(">beta</a>")  # by name, where accuracy puts beta first
    assert 'aria-current="true">Run ↑</a>' in overall and 'href="?sort=-run&amp;dsort=f1"' in overall
    # the toolbar sits in the page head, outside the swapped tables: it comes out of band with the new state, so
    # Export and Share do not keep the sort from before the click
    toolbar = html.split('id="page-tools" hx-swap-oob="true"')[1]
    assert (
        "?sort=run&amp;dsort=f1&amp;export=csv&amp;table=" in toolbar
        and 'value="/b/guidebench/choice/?sort=run&amp;dsort=f1"' in toolbar
    )


def test_it_limits_the_page_to_the_runs_in_the_url(reviewer_client):
    make_study()
    response = reviewer_client.get(url("choice-metrics") + "?run=alpha&run=nonexistent")
    assert [m.run for m, _, _ in response.context["overall"]] == ["alpha"]
    assert response.context["keep"] == "run=alpha"


def test_it_switches_to_the_normalised_view_and_says_so(reviewer_client):
    make_study()
    response = reviewer_client.get(url("choice-metrics") + "?view=normalised&run=alpha")
    [(alpha, _, _)] = response.context["overall"]
    assert alpha.accuracy == 80.0  # "0" equals 0 once normalised; the missing answer stays wrong
    assert "Normalised view" in response.content.decode()


def test_it_redirects_anonymous_visitors_to_login(client):
    make_study()
    for name, kwargs in [
        ("choice-metrics", {}),
        ("choice-confusion", {}),
        ("choice-rules", {}),
        ("choice-tasks", {}),
        ("choice-task", {"external_id": "chat-000000000000"}),
    ]:
        response = client.get(url(name, **kwargs))
        assert response.status_code == 302 and "/login/" in response["Location"]


def test_it_answers_404_for_another_kind_of_benchmark(reviewer_client):
    Benchmark.objects.create(slug="octo", name="Octo", kind="checklist")
    assert reviewer_client.get(reverse("runs:choice-metrics", kwargs={"slug": "octo"})).status_code == 404


def test_it_draws_confusion_matrices_with_a_no_answer_column_and_lists_a_cell(reviewer_client):
    make_study()
    response = reviewer_client.get(url("choice-confusion") + "?category=chat")
    matrices = {m.run: m for m in response.context["matrices"]}
    assert [(c.key, c.unanswered) for c in matrices["alpha"].columns] == [
        ("A", False),
        ("B", False),
        ("C", False),
        ("E", True),
    ]
    cell = reviewer_client.get(
        url("choice-confusion") + "?category=chat&crun=alpha&true=C&pred=E&missing=true",
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="cell-tasks",
    )
    html = cell.content.decode()
    assert html.lstrip().startswith('<div id="cell-tasks">')
    assert "chat-000000000002" in html and "chat-000000000000" not in html


def test_it_breaks_accuracy_down_by_rule_type(reviewer_client):
    make_study()
    response = reviewer_client.get(url("choice-rules"))
    rows = {(r.category, r.rule_type): r for r in response.context["table"]}
    assert rows[("chat", "booking")].cells == [("alpha", 2, 2, 100.0), ("beta", 2, 2, 100.0)]
    assert rows[("chat", "change")].cells == [("alpha", 2, 1, 50.0), ("beta", 2, 2, 100.0)]
    assert 'data-plotly="fig-rules"' in response.content.decode()
    only_price = reviewer_client.get(url("choice-rules") + "?category=price")
    assert {r.category for r in only_price.context["table"]} == {"price"}


def test_it_lists_wrong_answers_and_serves_the_list_fragment(reviewer_client):
    make_study()
    response = reviewer_client.get(url("choice-tasks") + "?outcome=wrong&run=alpha")
    assert [(r.external_id, r.unanswered) for r in response.context["page"]] == [
        ("chat-000000000002", True),
        ("price-000000000004", False),
    ]
    fragment = reviewer_client.get(
        url("choice-tasks") + "?category=price", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="task-list"
    )
    assert fragment.content.decode().lstrip().startswith('<div id="task-list">')
    assert "4 answers." in fragment.content.decode()


def test_the_task_list_export_says_yes_and_no_as_the_task_page_does(reviewer_client):
    make_study()
    rows = list(
        csv.DictReader(io.StringIO(reviewer_client.get(url("choice-tasks") + "?run=alpha&export=csv").content.decode()))
    )
    assert [(r["Task"], r["No answer"], r["Correct"]) for r in rows] == [
        ("chat-000000000000", "no", "yes"),
        ("chat-000000000001", "no", "yes"),
        ("chat-000000000002", "yes", "no"),
        ("price-000000000003", "no", "yes"),
        ("price-000000000004", "no", "no"),
    ]


def test_it_shows_a_task_with_every_answer_escaped_and_wrong_ones_marked(reviewer_client):
    make_study()
    response = reviewer_client.get(url("choice-task", external_id="chat-000000000002"))
    html = response.content.decode()
    assert response.status_code == 200
    assert "<script>alert" not in html and "&lt;script&gt;alert(2)&lt;/script&gt;" in html
    assert "&lt;b&gt;alpha&lt;/b&gt; says" in html and "&lt;i&gt;rule&lt;/i&gt; change" in html
    assert "C. maybe" in html and "because 2" in html
    answers = {a.run: a for a in response.context["answers"]}
    assert (answers["alpha"].correct, answers["alpha"].unanswered) == (False, True)
    assert answers["beta"].correct
    assert html.count("✗ wrong") == 1 and html.count("✓ right") == 1
    assert reviewer_client.get(url("choice-task", external_id="nope")).status_code == 404


@pytest.mark.parametrize("name", ["choice-metrics", "choice-confusion", "choice-rules", "choice-tasks"])
def test_it_keeps_a_fixed_number_of_queries_whatever_the_number_of_runs(reviewer_client, name):
    make_study(n_extra_runs=1)
    reviewer_client.get(url(name))  # warm the session
    with CaptureQueriesContext(connection) as small:
        reviewer_client.get(url(name))
    for k in range(1, 6):
        label = f"more-{k}"
        run = Run.objects.create(
            benchmark=Benchmark.objects.get(), model=AgentModel.objects.create(name=label), label=label
        )
        for attempt in Attempt.objects.filter(run__label="alpha"):
            Attempt.objects.create(run=run, instance_id=attempt.instance_id, outcome=attempt.outcome)
    with CaptureQueriesContext(connection) as large:
        reviewer_client.get(url(name))
    assert len(large) == len(small) <= 5  # 2 fewer since the session's user and roles are cached (ifportal.auth)


def test_it_keeps_a_fixed_number_of_queries_on_the_task_viewer(reviewer_client):
    make_study(n_extra_runs=6)
    with CaptureQueriesContext(connection) as queries:
        response = reviewer_client.get(url("choice-task", external_id="chat-000000000000"))
    assert len(response.context["answers"]) == 8
    assert len(queries) <= 5  # the user and roles warm too (the reviewer_client fixture)


@pytest.mark.shared_data
def test_it_renders_every_view_on_the_sample_tasks_with_generated_predictions(reviewer_client, shared_data, tmp_path):
    import json
    import random

    from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

    from runs.ingest import Options, Source, ingest
    from runs.metrics.choice import label_key
    from runs.scoring.choice import choice_task_scored

    files = sorted((shared_data / "guidebench").glob("*_tasks.json"))
    ingest("guidebench-tasks", [Source.of(f) for f in files], Options())
    rng = random.Random(6)
    expected = {}
    predicted_files = []
    for f in files:
        category = f.name.split("_")[0]
        tasks = json.loads(f.read_text(encoding="utf-8"))
        for task in tasks:
            gt = task["Groundtruth"]
            roll = rng.random()
            if roll < 0.1:
                continue  # no LLMAnswer: scored as the reference's default
            if "OptimalOption" in gt:
                task["LLMAnswer"] = {"OptimalOption": gt["OptimalOption"] if roll < 0.6 else rng.choice("ABCDF")}
            else:
                answer = gt["ReferenceAnswer"] if roll < 0.6 else rng.choice(["0", 1, "2", "x"])
                task["LLMAnswer"] = {"CandidateAnswer": answer}
        scored = [choice_task_scored(category, t) for t in tasks]
        t = [label_key(s.ground_truth) for s in scored]
        p = [label_key(s.answer) for s in scored]
        kwargs = {"average": "macro", "zero_division": 0}
        expected[category] = (
            100 * accuracy_score(t, p),
            100 * precision_score(t, p, **kwargs),
            100 * recall_score(t, p, **kwargs),
            100 * f1_score(t, p, **kwargs),
        )
        path = tmp_path / f.name
        path.write_text(json.dumps(tasks, ensure_ascii=False), encoding="utf-8")
        predicted_files.append(Source.of(path))
    ingest("guidebench-predictions", predicted_files, Options(model="generated"))

    response = reviewer_client.get(url("choice-metrics"))
    assert response.status_code == 200
    [(metrics, _, _)] = response.context["overall"]
    for category, (acc, precision, recall, f1) in expected.items():
        cell = metrics.categories[category]
        assert (cell.accuracy, cell.precision, cell.recall, cell.f1) == pytest.approx((acc, precision, recall, f1))
    for name in ("choice-confusion", "choice-rules", "choice-tasks"):
        assert reviewer_client.get(url(name)).status_code == 200
    assert {category: items[0].n for category, items in response.context["tables"]} == dict.fromkeys(expected, 30)
    first = Instance.objects.filter(benchmark__slug="guidebench").first()
    assert reviewer_client.get(url("choice-task", external_id=first.external_id)).status_code == 200


def test_an_empty_benchmark_offers_the_import_page_only_to_those_who_may_import(
    editor_client, reviewer_client, django_user_model
):
    """The choice and dialogue pages of a benchmark with no results linked to the import page, which answers a blind
    annotator and a read-only reviewer 403 (pages they may open otherwise)."""
    from django.contrib.auth.models import Group
    from django.test import Client

    Benchmark.objects.create(slug="empty-choice", name="Empty", kind="choice")
    Benchmark.objects.create(slug="empty-dialogue", name="Empty dialogues", kind="dialogue")
    annotator = django_user_model.objects.create_user("ann", password="pw-ann-123456")
    annotator.groups.add(Group.objects.get_or_create(name="annotator")[0])
    blind = Client()
    blind.force_login(annotator)
    pages = [
        reverse("runs:choice-metrics", args=["empty-choice"]),
        reverse("runs:dialogue-metrics", args=["empty-dialogue"]),
    ]
    import_link = f'href="{reverse("runs:import")}"'
    assert blind.get(reverse("runs:import")).status_code == 403
    for page in pages:
        seen = blind.get(page)
        assert seen.status_code == 200 and import_link not in seen.content.decode(), page
    assert reviewer_client.get(reverse("runs:import")).status_code == 403
    assert all(import_link not in reviewer_client.get(page).content.decode() for page in pages)
    assert editor_client.get(reverse("runs:import")).status_code == 200  # the empty states' own links, not the menu's
    assert f"{import_link}>Import files</a>" in editor_client.get(pages[0]).content.decode()
    assert f"{import_link}>Import</a> EvolIF" in editor_client.get(pages[1]).content.decode()
