"""OctoBench results evaluate.py writes when something went wrong, from the project's own fixture
(tests/fixtures/octobench/scores_errors.json, in evaluate.py's exact shapes): stored as what they are,
counted as evaluate.py counts them, and shown in plain words on the leaderboard and the attempt page."""

import csv
import io
import json
from pathlib import Path

import pytest
from django.urls import reverse

from runs.ingest import Options, Source, ingest
from runs.metrics import checklist as metrics
from runs.metrics.checklist import Filters
from runs.models import (
    Attempt,
    AttemptRollup,
    Benchmark,
    ChecklistItem,
    GroupRollup,
    JudgeReport,
    ReportStatus,
    Verdict,
)
from runs.selectors import checklist as selectors
from runs.views.checklist import REPLY_PAGE

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "octobench"
SUMMARY = json.loads((FIXTURES / "scores_errors.json").read_text(encoding="utf-8"))["summary"]


def load(path: Path, judge: str = "judge-e", **options):
    return ingest("octobench-scores", [Source.of(path)], Options(model="model-x", judge=judge, **options))


@pytest.fixture
def errors():
    ingest("octobench-instances", [Source.of(FIXTURES / "instances.jsonl")], Options())
    return load(FIXTURES / "scores_errors.json")


def attempt_of(external_id: str) -> Attempt:
    return Attempt.objects.get(instance__external_id=external_id)


def test_it_keeps_an_unscored_instance_with_the_judges_reply_and_no_verdicts(errors):
    alpha = JudgeReport.objects.get(attempt=attempt_of("oct-alpha"))
    assert alpha.status == ReportStatus.REPLY_NOT_JSON
    assert alpha.error == "Expecting value: line 1 column 1 (char 0)"
    assert alpha.raw_reply.startswith("Here is my evaluation of the checklist.\n<script>")
    assert (alpha.reward, alpha.binary_reward) == (0.0, 0)
    beta = JudgeReport.objects.get(attempt=attempt_of("oct-beta"))
    assert beta.status == ReportStatus.FAILED and "upstream overloaded" in beta.error
    assert (beta.reward, beta.binary_reward, beta.raw_reply) == (0.0, None, "")
    assert not Verdict.objects.filter(attempt__instance__external_id__in=["oct-alpha", "oct-beta"]).exists()
    assert errors.counts["judge reports"] == {"created": 3}


def test_it_counts_an_unscored_instance_as_every_check_failed(errors):
    # evaluate.py gives it reward 0: as many failed checks as its checklist has (6 for oct-alpha, 5 for oct-beta)
    rollups = {r.instance.external_id: r for r in AttemptRollup.objects.select_related("instance")}
    assert [
        (rollups[i].n_items, rollups[i].n_applicable, rollups[i].n_passed, rollups[i].unscored)
        for i in ("oct-alpha", "oct-beta")
    ] == [(0, 6, 0, "not_json"), (0, 5, 0, "failed")]


def test_it_passes_a_check_only_when_its_result_is_exactly_success(errors):
    gamma = attempt_of("oct-gamma")
    results = dict(Verdict.objects.filter(attempt=gamma).values_list("item__key", "result"))
    assert results == {"SR-1": "fail", "AG-1": "pass", "X-1": "fail"}  # "Success", "success", "SUCCESS"
    assert JudgeReport.objects.get(attempt=gamma).unrecognised == {"SR-1": "Success", "X-1": "SUCCESS"}
    rollup = AttemptRollup.objects.get(attempt=gamma)
    assert (rollup.n_applicable, rollup.n_passed, rollup.n_unrecognised) == (3, 1, 2)


def test_its_figures_are_the_ones_evaluate_py_wrote_for_the_file(errors):
    (row,) = selectors.leaderboard_rows(Benchmark.objects.get().id, Filters())
    judge = row.per_judge["judge-e"]
    assert judge.n_attempts == SUMMARY["total"] == 3
    assert judge.n_success == SUMMARY["pass_count"] == 0
    assert round(judge.macro_csr / 100, 3) == SUMMARY["avg_reward"]  # 0.111: (0 + 0 + 1/3) / 3
    assert judge.macro_csr == pytest.approx(100 / 9)
    assert judge.csr == pytest.approx(100 * 1 / 14)  # pooled: 1 passed of 6 + 5 + 3 counted checks
    assert judge.n_attempts - judge.unscored[ReportStatus.FAILED] == SUMMARY["success_count"]
    assert (row.n_unscored, row.n_unrecognised) == (2, 2)


def test_the_counted_rows_and_the_cells_agree_with_unscored_attempts(errors):
    bench = Benchmark.objects.get()
    counted = selectors.model_rows_counted(bench.id, Filters())
    cells = metrics.score_rows(selectors.attempt_cells(bench.id, Filters()))
    for a, b in zip(counted, cells, strict=True):
        assert a.macro_csr == pytest.approx(b.macro_csr)
        assert {j: (s.unscored, s.n_unrecognised, s.n_attempts) for j, s in a.per_judge.items()} == {
            j: (s.unscored, s.n_unrecognised, s.n_attempts) for j, s in b.per_judge.items()
        }


def test_an_exclusion_policy_still_counts_unscored_attempts(errors):
    bench = Benchmark.objects.get()
    some_item = Verdict.objects.filter(attempt=attempt_of("oct-gamma"), item__key="AG-1").values_list(
        "item_id", flat=True
    )
    (row,) = selectors.leaderboard_rows(bench.id, Filters(), excluded_items=list(some_item))
    judge = row.per_judge["judge-e"]
    assert judge.n_attempts == 3 and judge.unscored == {"not_json": 1, "failed": 1}
    assert judge.macro_csr == 0  # oct-gamma's only passed check is left out


def test_an_exclusion_policy_leaves_items_out_of_an_unscored_attempt_too(errors):
    bench = Benchmark.objects.get()
    sp_items = list(
        ChecklistItem.objects.filter(instance__external_id="oct-alpha", key__startswith="SP-").values_list(
            "id", flat=True
        )
    )
    (row,) = selectors.leaderboard_rows(bench.id, Filters(), excluded_items=sp_items)
    assert row.per_judge["judge-e"].csr == pytest.approx(100 * 1 / 12)  # oct-alpha counts 4 failed checks, not 6
    cells = selectors.leaderboard_rows(bench.id, Filters(), by="category", excluded_items=sp_items)
    system_prompt = next(c for c in cells if c.group == "System Prompt")
    assert system_prompt.per_judge["judge-e"].n_attempts == 1  # oct-beta only: oct-alpha's SP items are left out
    assert (system_prompt.per_judge["judge-e"].n_applicable, system_prompt.per_judge["judge-e"].n_passed) == (1, 0)


@pytest.mark.parametrize("by", ["model", "category", "check_type", "judge", "scaffold"])
def test_the_verdict_path_counts_judge_reports_as_the_rollups_do(errors, by):
    bench = Benchmark.objects.get()

    def figures(rows):
        return [
            (
                r.model,
                r.group,
                r.isr,
                r.csr,
                r.macro_csr,
                r.n_attempts,
                r.n_empty,
                {j: (s.unscored, s.n_unrecognised) for j, s in r.per_judge.items()},
            )
            for r in rows
        ]

    from_rollups = selectors.leaderboard_rows(bench.id, Filters(), by=by, bootstrap=by == "model")
    from_verdicts = selectors.leaderboard_rows(bench.id, Filters(), by=by, excluded_items=[-1])  # leaves nothing out
    assert figures(from_verdicts) == figures(from_rollups)


def test_a_result_unscored_on_reimport_drops_the_judges_old_verdicts(tmp_path):
    ingest("octobench-instances", [Source.of(FIXTURES / "instances.jsonl")], Options())
    load(FIXTURES / "scores.json")
    assert Verdict.objects.filter(attempt__instance__external_id="oct-alpha").count() == 6
    document = json.loads((FIXTURES / "scores.json").read_text())
    document["results"][0] = {"instance_id": "oct-alpha", "success": False, "error": "Connection error.", "reward": 0.0}
    (tmp_path / "scores.json").write_text(json.dumps(document))

    report = load(tmp_path / "scores.json")

    assert report.counts["verdicts"]["removed"] == 6
    rollup = AttemptRollup.objects.get(attempt__instance__external_id="oct-alpha")
    assert (rollup.n_items, rollup.n_applicable, rollup.n_passed, rollup.unscored) == (0, 6, 0, "failed")


def test_it_refuses_what_evaluate_py_cannot_write(tmp_path):
    ingest("octobench-instances", [Source.of(FIXTURES / "instances.jsonl")], Options())
    bad = {
        "results": [
            {"instance_id": "oct-alpha", "success": True, "reward": 1.0},
            {"instance_id": "oct-beta", "success": True, "eval_result": [1, 2]},
        ]
    }
    (tmp_path / "scores.json").write_text(json.dumps(bad, indent=1))
    with pytest.raises(Exception) as info:
        load(tmp_path / "scores.json")
    assert [str(p) for p in info.value.problems] == [
        "scores.json:3: a result with success true has no 'eval_result'",
        "scores.json:8: 'eval_result' should be an object (evaluate.py writes no other shape)",
    ]
    assert not JudgeReport.objects.exists()


# pages, API, exports --------------------------------------------------------------------
def test_the_leaderboard_says_what_it_counted_and_shows_macro_csr(errors, reviewer_client):
    html = reviewer_client.get(reverse("runs:checklist-leaderboard", args=["octobench"])).content.decode()
    assert "Macro CSR %" in html and "11.11" in html  # evaluate.py's avg_reward 0.111
    assert (
        "2 judge results scored nothing (the judge API call failed: 1; the judge&#x27;s reply was not JSON: 1)" in html
    )
    assert "2 verdicts carried a result string the reference scorer does not recognise" in html
    assert "<code>avg_reward</code>" in html


def test_the_api_and_exports_carry_macro_csr_and_the_counts(errors, reviewer_client):
    body = reviewer_client.get(reverse("api:leaderboard", args=["octobench"])).json()
    (row,) = body["rows"]
    assert row["macro_csr"] == pytest.approx(100 / 9) and row["n_unscored"] == 2 and row["n_unrecognised"] == 2
    assert row["per_judge"]["judge-e"]["unscored"] == {"failed": 1, "not_json": 1}
    export = reverse("runs:checklist-leaderboard", args=["octobench"])
    assert reviewer_client.get(export + "?export=json").json()["rows"] == body["rows"]
    (line,) = csv.DictReader(io.StringIO(reviewer_client.get(export + "?export=csv").content.decode()))
    assert line["macro_csr"] == line["judge-e macro_csr"] == "11.11"  # as the page shows it; the JSON keeps 100 / 9
    assert (line["n_unscored"], line["n_unrecognised"]) == ("2", "2")


def test_the_attempt_page_says_in_plain_words_what_went_wrong(errors, reviewer_client):
    html = reviewer_client.get(reverse("runs:attempt", args=[attempt_of("oct-alpha").id])).content.decode()
    assert "Not scored: the judge&#x27;s reply was not JSON." in html
    assert "&lt;script&gt;alert(&quot;judge&quot;)&lt;/script&gt;" in html and "<script>alert" not in html
    assert "Counted as 6 failed checks (reward 0)" in html and "reward 0.0 · binary reward 0" in html
    html = reviewer_client.get(reverse("runs:attempt", args=[attempt_of("oct-beta").id])).content.decode()
    assert "Not scored: the judge API call failed." in html and "upstream overloaded" in html
    html = reviewer_client.get(reverse("runs:attempt", args=[attempt_of("oct-gamma").id])).content.decode()
    assert "(wrote &quot;Success&quot;, which evaluate.py does not recognise)" in html
    assert "reward 0.333 · binary reward 0" in html


def test_a_long_reply_is_cut_on_the_page_and_served_escaped_in_parts(reviewer_client, tmp_path):
    ingest("octobench-instances", [Source.of(FIXTURES / "instances.jsonl")], Options())
    reply = "<i>x</i>" + "y" * (REPLY_PAGE + 10)
    document = {
        "results": [
            {
                "instance_id": "oct-alpha",
                "success": True,
                "reward": 0.0,
                "binary_reward": 0,
                "eval_result": {"error": "Extra data", "raw_response": reply},
                "detailed_results": {},
            }
        ]
    }
    (tmp_path / "scores.json").write_text(json.dumps(document))
    load(tmp_path / "scores.json")
    attempt = attempt_of("oct-alpha")

    html = reviewer_client.get(reverse("runs:attempt", args=[attempt.id])).content.decode()
    assert f"(first 2000 of {len(reply)} characters)" in html and "… show the whole reply" in html
    url = reverse("runs:attempt-judge-reply", args=[attempt.id])
    judge = JudgeReport.objects.get().judge_id
    first = reviewer_client.get(f"{url}?judge={judge}").content.decode()
    assert first.startswith('<pre class="msg-text">&lt;i&gt;x&lt;/i&gt;yyy') and "Part 1 of 2" in first
    second = reviewer_client.get(f"{url}?judge={judge}&part=2").content.decode()
    assert second == '<pre class="msg-text">' + reply[REPLY_PAGE:] + "</pre>"
    assert reviewer_client.get(f"{url}?judge=999").status_code == 404


def test_the_matrix_by_source_counts_an_unscored_attempts_items_failed(errors):
    rows = {
        (r.dimension, r.value): (r.n_applicable, r.n_passed)
        for r in GroupRollup.objects.filter(attempt=attempt_of("oct-alpha"))
    }
    assert rows[("category", "System Prompt")] == (2, 0) and rows[("check_type", "process")] == (2, 0)
    assert sum(n for (dimension, _), (n, _) in rows.items() if dimension == "category") == 6
    cells = selectors.leaderboard_rows(Benchmark.objects.get().id, Filters(), by="category")
    system_prompt = next(c for c in cells if c.group == "System Prompt")
    assert system_prompt.per_judge["judge-e"].n_attempts == 2  # oct-alpha (unscored) and oct-beta (failed call)


def test_a_scores_file_of_many_results_imports_in_batches(tmp_path):
    # more results than one write batch (and than the COPY threshold on PostgreSQL), a third of them unscored
    n = 450
    instances = "".join(
        json.dumps({"instance_id": f"b{i}", "checklist": {"SP": {"checks": [{"check_id": "a"}, {"check_id": "b"}]}}})
        + "\n"
        for i in range(n)
    )
    (tmp_path / "instances.jsonl").write_text(instances)
    ingest("octobench-instances", [Source.of(tmp_path / "instances.jsonl")], Options())
    results = []
    for i in range(n):
        if i % 3 == 0:
            results.append({"instance_id": f"b{i}", "success": False, "error": "Connection error.", "reward": 0.0})
        else:
            word = "Success" if i % 3 == 1 else "success"
            results.append(
                {
                    "instance_id": f"b{i}",
                    "success": True,
                    "reward": 0.5 if i % 3 == 1 else 1.0,
                    "binary_reward": int(i % 3 == 2),
                    "eval_result": {
                        "SP": {"checks": [{"check_id": "a", "result": "success"}, {"check_id": "b", "result": word}]}
                    },
                }
            )
    (tmp_path / "scores.json").write_text(json.dumps({"results": results}))

    load(tmp_path / "scores.json")

    (row,) = selectors.leaderboard_rows(Benchmark.objects.get().id, Filters())
    judge = row.per_judge["judge-e"]
    assert (judge.n_attempts, judge.n_success, judge.unscored, judge.n_unrecognised) == (
        n,
        n // 3,
        {"failed": n // 3},
        n // 3,
    )
    assert judge.macro_csr == pytest.approx(100 * (0.5 + 1.0) / 3)
    assert JudgeReport.objects.filter(unrecognised={"b": "Success"}).count() == n // 3


def test_the_drill_down_says_which_attempts_a_judge_did_not_score(errors, reviewer_client):
    html = reviewer_client.get(
        reverse("runs:checklist-attempts", args=["octobench"]) + "?model=model-x"
    ).content.decode()
    assert "Not scored by judge-e: the judge&#x27;s reply was not JSON (every check counted failed)" in html
    assert "Not scored by judge-e: the judge API call failed" in html
    assert "all passed" not in html


def test_the_drill_down_of_a_source_says_it_too(errors, reviewer_client):
    html = reviewer_client.get(
        reverse("runs:checklist-attempts", args=["octobench"]) + "?model=model-x&by=category&group=System+Prompt"
    ).content.decode()
    assert "Not scored by judge-e: the judge&#x27;s reply was not JSON" in html and "all passed" not in html
