"""Dialogue pages: happy path, anonymous, htmx fragment, refused patience, viewer escaping, bounded queries."""

import pytest
from django.urls import reverse

from runs.jobs import job_execute
from runs.models import Benchmark, Job, JobState, Verdict
from runs.recheck import EVOLIF_CHECKER as CHECKER_JUDGE
from runs.recheck import recheck_run
from runs.trajectory_store import trajectory_save
from runs.trajectory_view import stored_threads

from .test_recheck_dialogue import build_run

pytestmark = pytest.mark.django_db

PAGES = [
    "runs:dialogue-metrics",
    "runs:dialogue-survival",
    "runs:dialogue-groups",
    "runs:dialogue-list",
    "runs:dialogue-rescore",
]


@pytest.fixture
def world():
    run, attempt, items = build_run()
    return run, attempt


@pytest.mark.parametrize("name", PAGES)
def test_it_sends_anonymous_visitors_to_login(client, world, name):
    response = client.get(reverse(name, args=["evolif"]))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_it_sends_anonymous_visitors_of_the_viewer_to_login(client, world):
    response = client.get(reverse("runs:dialogue-viewer", args=["evolif", world[1].id]))
    assert response.status_code == 302


@pytest.mark.parametrize("name", PAGES)
def test_it_renders_every_page(reviewer_client, world, name):
    response = reviewer_client.get(reverse(name, args=["evolif"]))
    assert response.status_code == 200
    assert b'href="/help/metrics/#dialogue' in response.content  # the page's own section
    if name == "runs:dialogue-metrics":
        assert b'href="/help/metrics/#dialogue-rec"' in response.content  # and why its two REC differ


def test_it_shows_the_metrics_of_the_logged_judge(reviewer_client, world):
    response = reviewer_client.get(reverse("runs:dialogue-metrics", args=["evolif"]))
    row = response.context["rows"][0]
    # logged: turn 1 pass, turn 2 fails reader_age, turn 3 fails forbidden
    assert row.label == "model-one" and row.metrics.dialogues == 1 and row.metrics.turns == 3
    assert row.metrics.isr == pytest.approx(100 / 3)
    assert "33.33" in response.content.decode()


def test_it_refuses_a_patience_above_the_recorded_one(reviewer_client, world):
    response = reviewer_client.get(reverse("runs:dialogue-metrics", args=["evolif"]), {"patience": 5})
    body = response.content.decode()
    assert "Patience 5 is higher than the patience 3" in body
    assert response.context["patience"] == 3


def test_it_resimulates_a_lower_patience(reviewer_client, world):
    response = reviewer_client.get(reverse("runs:dialogue-survival", args=["evolif"]), {"patience": 1})
    assert response.context["refused"] is None
    # patience 1 ends the dialogue at its first failed turn (turn 2)
    assert [d.length for d in response.context["dialogues"]] == [2]
    [line] = [trace for trace in response.context["figure"]["data"] if trace.get("showlegend", True)]
    assert line["y"] == [100.0, 100.0]


def test_the_survival_page_shows_bands_and_log_rank_tests(reviewer_client, evolif_logged):
    """Each model's line over a band of its colour, and a log-rank test for two models, in the page and its export."""
    from runs.ingest import Options, Source, ingest

    from ..conftest import FIXTURES

    logs = FIXTURES / "evolif"
    ingest("evolif-eval", [Source.of(logs / "eval_1.jsonl")], Options(model="bravo", run="bravo-r1"))
    url = reverse("runs:dialogue-survival", args=[evolif_logged])
    response = reviewer_client.get(url)
    figure, bands = response.context["figure"], response.context["bands"]
    assert set(bands) == {"acme", "bravo"}
    for label in bands:
        lower, upper, line = [t for t in figure["data"] if t.get("legendgroup") == label]
        assert (lower["fill"], upper["fill"]) == ("none", "tonexty")
        assert line["line"]["color"] == lower["line"]["color"] and line["y"] == [
            round(p.percent, 2) for p in bands[label]
        ]
        assert all(lo <= y <= up for lo, y, up in zip(lower["y"], line["y"], upper["y"]))
    [test] = response.context["log_rank"]
    assert (test.first, test.second, test.n_first, test.n_second) == ("acme", "bravo", 2, 1)
    body = response.content.decode()
    assert "Log-rank tests" in body and "#dialogue-survival-km" in body
    export = reviewer_client.get(url, {"export": "json"}).json()
    tables = {t["name"]: t for t in export["tables"]}
    assert len(tables["log-rank"]["rows"]) == 1
    assert len(tables["survival-band"]["rows"]) == sum(len(b) for b in bands.values())


def test_it_answers_htmx_with_the_results_fragment_only(reviewer_client, world):
    response = reviewer_client.get(reverse("runs:dialogue-metrics", args=["evolif"]), HTTP_HX_REQUEST="true")
    body = response.content.decode()
    # no filter form; the results carry the frame's page tools (exports, Share form) for the new state
    assert 'id="results"' in body and "<html" not in body and 'class="toolbar filters' not in body
    assert 'class="toolbar page-tools"' in body


def test_it_drills_down_to_the_turns_where_a_group_failed(reviewer_client, world):
    response = reviewer_client.get(reverse("runs:dialogue-groups", args=["evolif"]), {"group": "forbidden"})
    assert [f["item__turn"] for f in response.context["failures"]] == [3]
    assert "#turn-3" in response.content.decode()
    assert "forbidden" in response.context["groups"]


def test_it_shows_a_dialogue_turn_by_turn_with_escaped_output(reviewer_client, world):
    run, attempt = world
    threads = stored_threads(attempt.id)
    threads[0]["messages"][1]["content"] = "Zebra <script>alert(1)</script>"
    trajectory_save(attempt_id=attempt.id, threads=threads)
    response = reviewer_client.get(reverse("runs:dialogue-viewer", args=["evolif", attempt.id]))
    body = response.content.decode()
    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    turns = response.context["turns"]
    assert [t.topic_event for t in turns] == ["start", "same", "new"]
    assert [c.change for c in turns[1].constraints] == ["kept", "added"]
    assert [c.change for c in turns[2].constraints] == ["added"] and turns[2].is_end
    assert 'id="turn-3"' in body


def test_it_404s_for_another_kind_of_benchmark(reviewer_client, world):
    Benchmark.objects.create(slug="octo", name="Octo", kind="checklist")
    assert reviewer_client.get(reverse("runs:dialogue-metrics", args=["octo"])).status_code == 404
    assert reviewer_client.get(reverse("runs:dialogue-viewer", args=["octo", world[1].id])).status_code == 404


def test_it_starts_a_rescore_job_and_shows_the_agreement(editor_client, world):
    run, _ = world
    response = editor_client.post(
        reverse("runs:dialogue-rescore-start", args=["evolif"]), {"run": [run.label], "confirm": "1"}
    )
    job = Job.objects.get()
    assert response.status_code == 302 and str(job.id) in response["Location"]
    if job.state == JobState.QUEUED:  # on_commit does not fire inside the test transaction
        job_execute(job.id)
    assert Verdict.objects.filter(judge__name=CHECKER_JUDGE).count() == 4
    page = editor_client.get(reverse("runs:dialogue-rescore", args=["evolif"]))
    groups = {a.group: a for a in page.context["agreement"]}
    assert groups["startwith"].agree == 1 and groups["startwith"].pairs == 2
    assert [d["item__turn"] for d in page.context["disagreements"]] == [2]
    html = page.content.decode()  # the one re-check template, with the dialogue kind's head, start form and links
    assert "Deterministic re-check" in html and "<code>evolif-checker</code>" in html
    assert f'action="{reverse("runs:dialogue-rescore-start", args=["evolif"])}"' in html
    assert (
        f"{reverse('runs:dialogue-viewer', args=['evolif', page.context['disagreements'][0]['attempt_id']])}#turn-2"
        in html
    )
    assert "Checker's reason" not in html and "manage.py recheck --benchmark evolif" in html


def test_it_refuses_get_on_the_rescore_start(editor_client, world):
    assert editor_client.get(reverse("runs:dialogue-rescore-start", args=["evolif"])).status_code == 405


def test_it_keeps_query_counts_flat_as_runs_grow(reviewer_client, world, django_assert_max_num_queries):
    run, _ = world
    recheck_run(run=run)
    url = reverse("runs:dialogue-metrics", args=["evolif"])
    for name in PAGES:
        reviewer_client.get(reverse(name, args=["evolif"]))  # warm caches (session, content types)
    # 2 fewer than before the user cache: the session's user and roles come from it (ifportal.auth)
    with django_assert_max_num_queries(9) as one:
        reviewer_client.get(url)
    for i in range(2, 5):
        build_run(label=f"m{i}", model=f"model-{i}")
    with django_assert_max_num_queries(len(one.captured_queries)):
        response = reviewer_client.get(url)
    assert len(response.context["rows"]) == 4
    for name in ["runs:dialogue-survival", "runs:dialogue-groups", "runs:dialogue-rescore"]:
        with django_assert_max_num_queries(11):
            reviewer_client.get(reverse(name, args=["evolif"]))


# the logs EvolIF's eval.py wrote (tests/fixtures/evolif/harness, see test_evolif_reference.py) ---------
@pytest.fixture
def harness_run():
    from .test_ingest_evolif import harness

    harness("pass1")
    return Benchmark.objects.get(slug="evolif")


def test_it_shows_score_py_figures_beside_the_portals_where_they_differ(reviewer_client, harness_run):
    response = reviewer_client.get(reverse("runs:dialogue-metrics", args=["evolif"]))
    row = response.context["rows"][0]
    # dialog_4's log is empty: score.py's Robustness is nan (0/0); its Recovery divides by 0 for dialog_2 (inf)
    assert set(row.reference_differs) == {"rob", "rec"}
    body = response.content.decode()
    assert "REC, score.py" in body and "score.py: nan" in body and ">inf<" in body
    assert "1 / 1 / <span" in body and "2 stopped early" in body


def test_the_viewer_shows_the_llm_judges_score_and_rationale(reviewer_client, harness_run):
    from runs.models import Attempt

    two = Attempt.objects.get(instance__external_id="dialog_2")
    body = reviewer_client.get(reverse("runs:dialogue-viewer", args=["evolif", two.id])).content.decode()
    assert "judge score 4" in body and "the fake judge read marker 4" in body
    three = Attempt.objects.get(instance__external_id="dialog_3")
    body = reviewer_client.get(reverse("runs:dialogue-viewer", args=["evolif", three.id])).content.decode()
    assert "stopped early by the harness" in body and "the LLM judge gave no score" in body
    four = Attempt.objects.get(instance__external_id="dialog_4")
    body = reviewer_client.get(reverse("runs:dialogue-viewer", args=["evolif", four.id])).content.decode()
    assert "the log is empty" in body and "This attempt has no turns" in body and "Turn 1<" not in body


def test_the_export_carries_score_py_figures_beside_the_portals(client, reviewer_client, harness_run):
    import csv
    import io
    import json

    from .test_evolif_reference import HARNESS, parse_printout

    printed = parse_printout((HARNESS / "score_pass1.txt").read_text())
    url = reverse("runs:dialogue-metrics", args=["evolif"])
    rows = list(csv.DictReader(io.StringIO(reviewer_client.get(url, {"export": "csv"}).content.decode())))
    assert len(rows) == 1 and rows[0]["Model"] == "fake-model"
    assert rows[0]["ROB % (score.py)"] == "nan" and rows[0]["REC % (score.py)"] == "inf"
    assert float(rows[0]["CSR % (score.py)"]) == pytest.approx(100 * printed["csr"], abs=0.005)
    assert rows[0]["CSR % (score.py)"] == rows[0]["CSR %"]
    assert rows[0]["Stopped early"] == "2"
    document = json.loads(reviewer_client.get(url, {"export": "json"}).content)
    row = document["tables"][0]["rows"][0]
    assert row["score_py_act_acc"] == pytest.approx(printed["act_acc"]) and document["facts"]["patience"] == 3
    assert row["score_py_rob"] == "nan"  # JSON has no NaN: the text score.py prints
    assert reviewer_client.get(url, {"export": "xml"}).status_code == 400
    assert client.get(url, {"export": "csv"}).status_code == 302  # login first, as for the page


def test_the_checker_rescores_stopped_and_empty_logs(reviewer_client, harness_run):
    from runs.models import Run

    report = recheck_run(run=Run.objects.get(label="fake-model"))
    assert report.attempts == 4
    # the case constraints of the played turns: dialog_1 turns 1-6, dialog_2 turn 4, dialog_3 turns 1-3, dialog_4 none
    assert Verdict.objects.filter(judge__name=CHECKER_JUDGE, item__group="case").count() == 6 + 1 + 3
    body = reviewer_client.get(
        reverse("runs:dialogue-metrics", args=["evolif"]), {"judge": CHECKER_JUDGE}
    ).content.decode()
    assert "REC, score.py" in body
