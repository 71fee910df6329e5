"""lm-evaluation-harness output as real runs write it: a results file without its samples, NaN and Infinity
(Python's json), corpus-level metrics (F1) and lower-is-better ones (MAE), multiple-choice (loglikelihood)
samples. The fixtures follow the harness's writer: tests/fixtures/lm_eval_wild/make_fixtures.py."""

import io
import json
import math
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from sklearn.metrics import f1_score

from runs.ingest import IngestFailed, Options, Source, ingest
from runs.metrics.reported import Choice, finite_mean, picked
from runs.models import Attempt, Benchmark, ChecklistItem, ReportedFigure, Run, Verdict

pytestmark = pytest.mark.django_db

RUN_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "lm_eval_wild" / "acme__tiny-base-1b"
STAMP = "2026-11-21T08-00-00.000001"
RESULTS = RUN_DIR / f"results_{STAMP}.json"
ARC = RUN_DIR / f"samples_arc_easy_{STAMP}.jsonl"
MRPC = RUN_DIR / f"samples_mrpc_{STAMP}.jsonl"
PRICES = RUN_DIR / f"samples_price_regression_{STAMP}.jsonl"


def _ingest(*paths: Path, **options):
    return ingest("lm-eval", [Source.of(p) for p in paths], Options(**options))


def _samples(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _results() -> dict:
    return json.loads(RESULTS.read_text(encoding="utf-8"))


# 2. a results file without its samples files ------------------------------------------------------------
def test_a_results_file_alone_names_the_missing_samples_files_and_stores_nothing():
    with pytest.raises(IngestFailed) as failed:
        _ingest(RESULTS)
    message = str(failed.value)
    assert "no samples file was given" in message and "3 task(s) whose samples files are missing" in message
    for task in ("arc_easy", "mrpc", "price_regression"):
        assert f"samples_{task}_{STAMP}.jsonl" in message
    assert not Benchmark.objects.exists() and not Run.objects.exists()


def test_the_command_exits_non_zero_on_a_results_file_alone_and_never_says_already_stored():
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("ingest", "lm-eval", str(RESULTS), "--no-progress", stdout=out, stderr=err)
    assert f"samples_arc_easy_{STAMP}.jsonl" in str(failed.value)
    assert "already stored" not in out.getvalue() + err.getvalue() + str(failed.value)


# 3. NaN and Infinity ------------------------------------------------------------------------------------
def test_the_fixture_has_infinity_and_nan_where_python_json_writes_them():
    text = RESULTS.read_text(encoding="utf-8")
    assert '"mae,none": Infinity' in text and '"mae_stderr,none": NaN' in text
    assert '"mae": Infinity' in PRICES.read_text(encoding="utf-8")


def test_infinity_and_nan_are_kept_as_written_and_left_out_of_the_mean_with_a_count():
    report = _ingest(RESULTS, PRICES)
    figure = ReportedFigure.objects.get(name="mae,none")
    assert (figure.value, figure.value_text, figure.stderr, figure.stderr_text) == (None, "Infinity", None, "NaN")
    assert (figure.direction, figure.aggregation, figure.per_sample) == ("lower", "mean", "values")
    errors = [s["mae"] for s in _samples(PRICES)]
    finite = [e for e in errors if math.isfinite(e)]
    assert (figure.samples, figure.left_out) == (3, 1)
    assert figure.sample_mean == pytest.approx(sum(finite) / len(finite))
    assert math.isinf(sum(errors) / len(errors))  # the harness's own mean, which the figure keeps as its word
    # no per-sample item for a number with no pass/fail, and no --pass-threshold asked for
    assert not ChecklistItem.objects.exists() and not Verdict.objects.exists()
    assert Attempt.objects.get(instance__external_id="2").outcome["metrics"] == {"mae": "Infinity", "closeness": 0.0}
    [note] = report.notes
    assert note.startswith("price_regression: kept as reported by the harness: mae,none = Infinity")
    assert "1 non-finite per-sample value(s) left out of the mean" in note
    assert note in report.summary()


def test_a_metric_whose_first_values_are_0_and_1_is_read_by_all_of_them():
    """closeness is 1.0 on the first document and 1/3 on the next: a number with no pass/fail, not a verdict."""
    assert [s["closeness"] for s in _samples(PRICES)][:2] == [1.0, 1 / 3]
    report = _ingest(RESULTS, PRICES)
    figure = ReportedFigure.objects.get(name="closeness,none")
    assert (figure.per_sample, figure.direction, figure.samples, figure.left_out) == ("values", "higher", 4, 0)
    assert figure.sample_mean == pytest.approx(figure.value)  # no non-finite value: the harness's mean
    assert "closeness,none = " in report.summary()


def test_a_lower_is_better_metric_with_a_threshold_passes_at_it_or_below():
    _ingest(RESULTS, PRICES, pass_threshold=1.0)
    results = dict(Verdict.objects.filter(item__key="mae").values_list("attempt__instance__external_id", "result"))
    # absolute errors 0, 2, Infinity, 1
    assert results == {"0": "pass", "1": "fail", "2": "fail", "3": "pass"}
    assert Verdict.objects.get(item__key="mae", attempt__instance__external_id="2").score is None
    # a higher-is-better one passes at the threshold or above: closeness 1, 1/3, 0, 1/2
    closeness = dict(
        Verdict.objects.filter(item__key="closeness").values_list("attempt__instance__external_id", "result")
    )
    assert closeness == {"0": "pass", "1": "fail", "2": "fail", "3": "fail"}
    assert ReportedFigure.objects.get(name="mae,none").per_sample == "verdicts"


def test_a_refused_results_file_is_named_as_refused_not_as_missing_at_its_real_column(tmp_path):
    bad = tmp_path / RESULTS.name
    lines = RESULTS.read_text(encoding="utf-8").splitlines()
    at = next(n for n, line in enumerate(lines) if '"acc,none"' in line)
    lines[at] = lines[at].replace(": ", ": nan", 1)  # not a word Python's json writes
    bad.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(IngestFailed) as failed:
        _ingest(bad, ARC)
    message = str(failed.value)
    column = lines[at].index("nan") + 1
    assert f"{bad.name}:{at + 1}: not valid JSON" in message and f"column {column}" in message
    assert f"the results file {bad.name} given with it was refused" in message
    assert "give the results file beside the samples" not in message


def test_a_strict_reader_names_the_column_of_a_nan(tmp_path):
    """A format whose writer never writes NaN refuses it where it is, not at column 1."""
    line = '{"type": "benchmark", "slug": "x", "name": "X NaN", "kind": "checklist", "version": NaN}'
    path = tmp_path / "native.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(IngestFailed) as failed:
        ingest("native", [Source.of(path)], Options())
    assert f"native.jsonl:1: not valid JSON: NaN is not a JSON value at column {line.rindex('NaN') + 1}" in str(
        failed.value
    )


# 4. corpus-level metrics ---------------------------------------------------------------------------------
def test_a_corpus_level_metric_is_the_harness_figure_with_no_items():
    report = _ingest(RESULTS, MRPC)
    pairs = [s["f1"] for s in _samples(MRPC)]
    expected = f1_score([gold for gold, _ in pairs], [pred for _, pred in pairs])
    f1 = ReportedFigure.objects.get(name="f1,none")
    assert f1.value == pytest.approx(expected) and f1.value == _results()["results"]["mrpc"]["f1,none"]
    assert (f1.stderr, f1.stderr_text, f1.per_sample, f1.aggregation, f1.direction) == (None, "N/A", "", "f1", "higher")
    assert f1.source == "lm-evaluation-harness"
    # acc is scored per sample; f1 has no item (no verdict could be given to one)
    assert set(ChecklistItem.objects.values_list("key", flat=True)) == {"acc"}
    assert ReportedFigure.objects.get(name="acc,none").per_sample == "verdicts"
    assert not Verdict.objects.filter(item__key="f1").exists()
    assert any("mrpc: kept as reported by the harness: f1,none = " in n for n in report.notes)
    assert "computed over the whole task" in report.summary()


def test_the_leaderboard_shows_the_reported_figures_as_reported_by_the_harness(reviewer_client):
    _ingest(RESULTS, MRPC)
    page = reviewer_client.get(reverse("runs:checklist-leaderboard", args=["lm-eval-mrpc"])).content.decode()
    assert "Reported by the harness" in page and "<code>f1,none</code>" in page
    assert f"{_results()['results']['mrpc']['f1,none']:.4f}" in page and "whole task only" in page
    assert "<code>N/A</code>" in page


def test_the_leaderboard_shows_infinity_as_written(reviewer_client):
    _ingest(RESULTS, PRICES)
    page = reviewer_client.get(reverse("runs:checklist-leaderboard", args=["lm-eval-price_regression"]))
    text = page.content.decode()
    assert page.status_code == 200 and "<code>Infinity</code>" in text and "<code>NaN</code>" in text
    assert "lower is better" in text and "1 non-finite left out" in text
    # no verdict to rank by: the page points at the harness's figures and draws no empty chart
    assert 'href="#reported-figures">below</a>' in text and 'data-plotly="leaderboard-figure"' not in text


def test_the_api_and_the_exports_carry_the_reported_figures(reviewer_client):
    _ingest(RESULTS, PRICES)
    body = reviewer_client.get(reverse("api:leaderboard", args=["lm-eval-price_regression"])).json()
    assert body["rows"] == []
    figure = next(f for f in body["reported"] if f["name"] == "mae,none")
    assert figure["name"] == "mae,none" and (figure["value"], figure["value_text"]) == (None, "Infinity")
    assert (figure["stderr_text"], figure["samples"], figure["left_out"]) == ("NaN", 3, 1)
    url = reverse("runs:checklist-leaderboard", args=["lm-eval-price_regression"])
    tables = {t["name"]: t for t in reviewer_client.get(url + "?export=json").json()["tables"]}
    [row] = [r for r in tables["reported"]["rows"] if r["name"] == "mae,none"]
    assert (row["name"], row["value_text"], row["direction"], row["per_sample"]) == (
        "mae,none",
        "Infinity",
        "lower",
        "values",
    )
    csv = reviewer_client.get(url + "?export=csv&table=reported").content.decode()
    assert "mae,none" in csv and "Infinity" in csv


# 6. multiple-choice samples --------------------------------------------------------------------------------
def test_a_multiple_choice_attempt_keeps_its_choices_the_pick_and_the_target():
    _ingest(RESULTS, ARC)
    samples = _samples(ARC)
    for sample in samples:
        attempt = Attempt.objects.get(instance__external_id=str(sample["doc_id"]))
        outcome = attempt.outcome
        lls = [float(r[0][0]) for r in sample["resps"]]
        assert [c["loglikelihood"] for c in outcome["choices"]] == lls
        assert [c["text"] for c in outcome["choices"]] == sample["doc"]["choices"]["text"]
        assert outcome["target_index"] == int(sample["target"])
        # the harness's acc and acc_norm follow from the picks
        assert sample["acc"] == float(outcome["picked"] == outcome["target_index"])
        assert sample["acc_norm"] == float(outcome["picked_norm"] == outcome["target_index"])
        assert attempt.response == outcome["choices"][outcome["picked"]]["text"] != ""
    reported = _results()["results"]["arc_easy"]
    passed = Verdict.objects.filter(item__key="acc", result="pass").count()
    assert passed / len(samples) == pytest.approx(reported["acc,none"])


def test_the_attempt_page_shows_the_choices_with_their_log_likelihoods(reviewer_client):
    _ingest(RESULTS, ARC)
    attempt = Attempt.objects.get(instance__external_id="1")
    page = reviewer_client.get(reverse("runs:attempt", args=[attempt.id])).content.decode()
    page = page[page.index('id="choices"') : page.index("</section>", page.index('id="choices"'))]
    assert "a thermometer" in page and "-2.6000" in page
    row = page[page.index(">salt<") : page.index("</tr>", page.index(">salt<"))]
    assert "<strong>picked</strong>" in row and "target" not in row
    row = page[page.index(">a thermometer<") : page.index("</tr>", page.index(">a thermometer<"))]
    assert "picked by length" in row and ">target<" in row


def test_picked_is_numpy_argmax_first_of_equals():
    choices = [Choice("ab", -1.0, None), Choice("abcd", -1.0, None), Choice("a", -3.0, None)]
    assert picked(choices) == 0
    assert picked(choices, per_character=True) == 1  # -0.25 per character
    assert picked([Choice("a", None, None)]) is None


def test_finite_mean_leaves_out_nan_and_infinities():
    got = finite_mean([1.0, math.inf, 2.0, math.nan, -math.inf, True, "x"])
    assert (got.mean, got.n, got.left_out) == (pytest.approx(4 / 3), 3, 3)
    assert finite_mean([math.nan]).mean is None


# the whole run ----------------------------------------------------------------------------------------------
def test_the_whole_folder_imports_and_again_changes_nothing():
    first = _ingest(RESULTS, ARC, MRPC, PRICES)
    assert first.counts["reported figures"] == {"created": 6}
    assert ReportedFigure.objects.count() == 6
    again = _ingest(RESULTS, ARC, MRPC, PRICES)
    assert again.total("created") == again.total("updated") == 0
    assert again.counts["reported figures"] == {"unchanged": 6}
