"""lm-evaluation-harness per-sample logs: IFEval's strict and loose judges give ISR and CSR equal to the
harness's own reported prompt- and instruction-level accuracies (recomputed here with the harness's
formulas), other tasks' metrics become items; re-import, bad files, the leaderboard API.

lm-eval cannot run offline here (it needs a model), so the fixtures follow the harness's source:
tests/fixtures/lm_eval/make_fixtures.py says which parts."""

import json
import shutil
from pathlib import Path

import pytest
from django.urls import reverse

from runs.ingest import IngestFailed, Options, Source, ingest
from runs.models import Attempt, Benchmark, ChecklistItem, Instance, Run, Verdict
from runs.trajectory_view import stored_threads

pytestmark = pytest.mark.django_db

RUN_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "lm_eval" / "acme__tiny-instruct-1b"
STAMP = "2026-11-20T10-15-30.123456"
RESULTS = RUN_DIR / f"results_{STAMP}.json"
IFEVAL = RUN_DIR / f"samples_ifeval_{STAMP}.jsonl"
GSM8K = RUN_DIR / f"samples_gsm8k_{STAMP}.jsonl"


def _ingest(*paths: Path, **options):
    return ingest("lm-eval", [Source.of(p) for p in paths], Options(**options))


def _samples(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# the harness's own aggregations (lm_eval/api/metrics.py mean, lm_eval/tasks/ifeval/utils.py agg_inst_level_acc)
def mean(values):
    return sum(values) / len(values)


def agg_inst_level_acc(items):
    flat = [item for sublist in items for item in sublist]
    return sum(flat) / len(flat)


def test_the_reported_ifeval_numbers_follow_from_the_samples_by_the_harness_formulas():
    reported = json.loads(RESULTS.read_text())["results"]["ifeval"]
    samples = _samples(IFEVAL)
    for level in ("strict", "loose"):
        assert reported[f"prompt_level_{level}_acc,none"] == mean([s[f"prompt_level_{level}_acc"] for s in samples])
        assert reported[f"inst_level_{level}_acc,none"] == agg_inst_level_acc(
            [s[f"inst_level_{level}_acc"] for s in samples]
        )


def test_ifeval_isr_and_csr_are_the_harness_prompt_and_instruction_level_accuracies(reviewer_client):
    report = _ingest(IFEVAL, RESULTS).as_dict()["by_kind"]
    assert report["instances"] == {"created": 6} and report["attempts"] == {"created": 6}
    bench = Benchmark.objects.get()
    assert (bench.slug, bench.kind, bench.version) == ("lm-eval-ifeval", "checklist", "4.0")
    run = Run.objects.get()
    assert (run.label, run.model.name) == ("acme/tiny-instruct-1b", "acme/tiny-instruct-1b")
    assert run.settings["model_args"] == "pretrained=acme/tiny-instruct-1b,dtype=bfloat16"
    reported = json.loads(RESULTS.read_text())["results"]["ifeval"]
    body = reviewer_client.get(reverse("api:leaderboard", args=["lm-eval-ifeval"])).json()
    [row] = body["rows"]
    assert set(row["per_judge"]) == {"strict", "loose"}
    for judge in ("strict", "loose"):
        rates = row["per_judge"][judge]
        assert rates["isr"] == pytest.approx(100 * reported[f"prompt_level_{judge}_acc,none"])
        assert rates["csr"] == pytest.approx(100 * reported[f"inst_level_{judge}_acc,none"])
        assert rates["n_attempts"] == 6


def test_every_instruction_id_is_an_item_with_its_category_and_kwargs():
    _ingest(RESULTS, IFEVAL)  # the results file is read first whatever the order
    items = list(
        ChecklistItem.objects.filter(instance__external_id="0")
        .order_by("position")
        .values("key", "category", "check_type", "details")
    )
    assert [i["key"] for i in items] == [
        "punctuation:no_comma",
        "detectable_format:number_highlighted_sections",
        "length_constraints:number_words",
    ]
    assert items[2]["category"] == "length_constraints" and items[2]["details"] == {
        "kwargs": {"relation": "at least", "num_words": 300}
    }
    # an instruction id given twice in one prompt is two items
    assert list(
        ChecklistItem.objects.filter(instance__external_id="5").order_by("position").values_list("key", flat=True)
    ) == ["combination:two_responses", "punctuation:no_comma", "punctuation:no_comma#2"]
    strict = dict(
        Verdict.objects.filter(attempt__instance__external_id="3", judge__name="strict").values_list(
            "item__key", "result"
        )
    )
    loose = dict(
        Verdict.objects.filter(attempt__instance__external_id="3", judge__name="loose").values_list(
            "item__key", "result"
        )
    )
    assert strict == {"change_case:english_lowercase": "fail"} and loose == {"change_case:english_lowercase": "pass"}
    attempt = Attempt.objects.select_related("trajectory").get(instance__external_id="3")
    assert attempt.response == "Riddle: i have doors but no keys"
    assert [m["role"] for m in stored_threads(attempt.id)[0]["messages"]] == ["user", "assistant"]


def test_other_tasks_give_one_item_per_metric_and_filter_with_the_reported_rates():
    _ingest(RESULTS, GSM8K)
    reported = json.loads(RESULTS.read_text())["results"]["gsm8k"]
    assert sorted(ChecklistItem.objects.filter(instance__external_id="1").values_list("key", flat=True)) == [
        "exact_match,flexible-extract",
        "exact_match,strict-match",
    ]
    assert Attempt.objects.count() == 3  # one attempt per document, whatever the number of filters
    for flt in ("strict-match", "flexible-extract"):
        results = list(
            Verdict.objects.filter(item__key=f"exact_match,{flt}", judge__name="lm-eval").values_list(
                "result", flat=True
            )
        )
        assert len(results) == 3 and results.count("pass") / 3 == pytest.approx(reported[f"exact_match,{flt}"])


def test_importing_the_same_files_twice_changes_nothing():
    _ingest(RESULTS, IFEVAL, GSM8K)
    again = _ingest(RESULTS, IFEVAL, GSM8K)
    assert again.total("created") == again.total("updated") == 0 and again.total("unchanged") > 0


def test_a_truncated_samples_file_is_refused_at_its_line(tmp_path):
    cut = tmp_path / IFEVAL.name
    text = IFEVAL.read_text(encoding="utf-8")
    cut.write_text(text[: len(text) - 200], encoding="utf-8")
    with pytest.raises(IngestFailed) as failed:
        _ingest(RESULTS, cut)
    assert f"{cut.name}:6: not valid JSON" in str(failed.value) and "truncated" in str(failed.value)
    assert not Verdict.objects.exists() and not Benchmark.objects.exists()


def test_a_sample_whose_instruction_list_does_not_match_is_refused(tmp_path):
    bad = tmp_path / IFEVAL.name
    samples = _samples(IFEVAL)
    samples[2]["inst_level_loose_acc"] = [True]
    bad.write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    with pytest.raises(IngestFailed) as failed:
        _ingest(RESULTS, bad)
    assert f"{bad.name}:3: field 'inst_level_loose_acc' should be a list of 2 true/false values" in str(failed.value)
    assert not Benchmark.objects.exists()


def test_samples_need_their_harness_name_and_a_model(tmp_path):
    renamed = tmp_path / "ifeval.jsonl"
    shutil.copy(IFEVAL, renamed)
    with pytest.raises(IngestFailed, match="a samples file is named samples_<task>_<time>.jsonl"):
        _ingest(RESULTS, renamed)
    with pytest.raises(IngestFailed, match="no model: give the results file"):
        _ingest(IFEVAL)
    assert _ingest(IFEVAL, model="acme/other").total("created") > 0
    assert Run.objects.get().label == "acme/other"


def test_samples_of_a_task_the_results_file_does_not_have_are_refused(tmp_path):
    other = tmp_path / f"samples_mmlu_{STAMP}.jsonl"
    shutil.copy(GSM8K, other)
    with pytest.raises(IngestFailed, match="has no task 'mmlu': are the files of the same run"):
        _ingest(RESULTS, other)


def test_the_pages_say_where_it_came_from_and_show_the_harness_metrics(reviewer_client):
    _ingest(RESULTS, IFEVAL)
    assert "imported from lm-evaluation-harness samples" in reviewer_client.get(reverse("runs:home")).content.decode()
    attempt = Attempt.objects.get(instance__external_id="3")
    page = reviewer_client.get(reverse("runs:attempt", args=[attempt.id])).content.decode()
    assert "From the lm-evaluation-harness samples" in page
    assert "<code>inst_level_strict_acc</code> = <code>[false]</code>" in page
    assert set(ChecklistItem.objects.values_list("instance__primary_category", flat=True)) == {"ifeval"}


def test_the_checklist_pages_work_on_an_imported_task(reviewer_client):
    """Leaderboard by instruction category, judge sensitivity (strict against loose), compare, export."""
    _ingest(RESULTS, IFEVAL)
    slug = "lm-eval-ifeval"
    board = reviewer_client.get(reverse("runs:checklist-leaderboard", args=[slug]) + "?by=category")
    assert board.status_code == 200 and "punctuation" in board.content.decode()
    rows = reviewer_client.get(reverse("api:leaderboard", args=[slug]) + "?by=category&judge=strict").json()["rows"]
    punctuation = next(r for r in rows if r["group"] == "punctuation")
    # punctuation:no_comma in prompts 0, 1 and 5 (twice): all four pass under strict
    assert punctuation["csr"] == 100 and punctuation["n_instances"] == 3
    judges = reviewer_client.get(reverse("runs:checklist-judges", args=[slug]))
    assert judges.status_code == 200 and "strict" in judges.content.decode() and "loose" in judges.content.decode()
    assert reviewer_client.get(reverse("runs:checklist-compare", args=[slug])).status_code == 200
    reported = json.loads(RESULTS.read_text())["results"]["ifeval"]
    export = reviewer_client.get(reverse("runs:checklist-leaderboard", args=[slug]) + "?export=json").json()
    both = (reported["prompt_level_strict_acc,none"] + reported["prompt_level_loose_acc,none"]) / 2
    assert export["rows"][0]["isr"] == pytest.approx(100 * both)  # the row is the mean over the two judges


def test_a_doc_field_can_group_the_instances():
    _ingest(RESULTS, IFEVAL, category_field="key")
    assert Instance.objects.get(external_id="0").primary_category == "1000"
