"""Inspect AI logs as they come from the wild: made by Inspect AI itself with its mockllm model
(tests/fixtures/inspect/make_logs.py, `wild`), committed under tests/fixtures/inspect/wild/ and made again here
when inspect_ai is installed. Cached tokens as the writing release counted them, a log's status and samples
done, another evaluation of the same task and model, chunked samples read through inspect_ai, and numeric
scorers kept as Inspect reports them."""

import importlib
import json
import shutil
import statistics
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runs.ingest import IngestFailed, Options, Source, ingest, inspect_ai
from runs.ingest.usage import inspect_tokens, release_of
from runs.models import Attempt, Job, JobState, ReportedFigure, Run, Verdict
from runs.selectors.run_status import run_statuses

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "inspect"
WILD = FIXTURES / "wild"


def _ingest(name: str, **options):
    return ingest("inspect", [Source.of(WILD / f"{name}.eval")], Options(**options))


def _entries(name: str) -> dict[str, bytes]:
    """The archive's whole-JSON entries, decompressed as the import reads them (inspect_ai writes zstandard)."""
    with zipfile.ZipFile(WILD / f"{name}.eval") as archive:
        return {
            i.filename: inspect_ai._entry_bytes(archive, i, 1 << 24)
            for i in archive.infolist()
            if i.filename == "header.json" or (i.filename.startswith("samples/") and i.filename.count("/") == 1)
        }


def _header(name: str) -> dict:
    return json.loads(_entries(name)["header.json"])


def _samples(name: str) -> list[dict]:
    return [json.loads(data) for entry, data in _entries(name).items() if entry.startswith("samples/")]


# 1. cached tokens -----------------------------------------------------------------------------------
def test_cached_tokens_are_counted_once_in_a_log_written_before_0_3_184():
    """inspect_ai 0.3.150's OpenAI provider counted the 1,000 cached prompt tokens in input_tokens already
    (total = input + output): the portal does not add input_tokens_cache_read again."""
    _ingest("older")
    usage = {s["id"]: s["model_usage"]["mockllm/model"] for s in _samples("older")}
    assert all(u["input_tokens_cache_read"] == 1000 for u in usage.values())
    for attempt in Attempt.objects.select_related("instance"):
        logged = usage[attempt.instance.external_id]
        assert attempt.input_tokens == logged["input_tokens"] <= attempt.total_tokens == logged["total_tokens"]
        assert attempt.input_tokens + attempt.output_tokens == attempt.total_tokens


def test_a_release_from_0_3_184_on_counts_cached_tokens_apart():
    usage = {"input_tokens": 6, "output_tokens": 9, "total_tokens": 1015, "input_tokens_cache_read": 1000}
    assert inspect_tokens(usage, release_of("0.3.184")).input == 1006
    assert inspect_tokens(usage, release_of("0.3.285.dev4+g1a2b3c")).input == 1006
    # an older Anthropic log counted the cache in the total but not in input_tokens: added
    assert inspect_tokens(usage, release_of("0.3.150")).input == 1006
    # an older OpenAI log: input_tokens holds them
    older = {"input_tokens": 1006, "output_tokens": 9, "total_tokens": 1015, "input_tokens_cache_read": 1000}
    assert inspect_tokens(older, release_of("0.3.150")).input == 1006
    assert inspect_tokens(older, None).input == 1006  # no release named: as the counts say
    # counts that disagree never show more input than total
    assert inspect_tokens(older, release_of("0.3.200")).input == 1006
    assert release_of("0.3.150") == (0, 3, 150) and release_of(None) is None and release_of("dev") is None


# 5. status ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("cancelled", "the evaluation's status is 'cancelled'; 2 of 4 samples were logged"),
        ("error", "the evaluation's status is 'error' (RuntimeError: the model server went away); 2 of 4 samples"),
    ],
)
def test_a_stopped_evaluation_says_its_status_and_samples_done(name, said, reviewer_client):
    report = _ingest(name)
    assert any(said in note for note in report.notes)
    [status] = run_statuses(benchmark_id=Run.objects.get().benchmark_id)
    assert (status.status, status.done, status.planned, status.scored) == (name, 2, 4, True)
    page = reviewer_client.get(reverse("runs:checklist-leaderboard", args=["graded_qa"])).content.decode()
    assert f'<span class="flag status-{name}">{name}</span>' in page and "2 of 4 samples done" in page
    [shown] = reviewer_client.get(reverse("api:leaderboard", args=["graded_qa"])).json()["runs_incomplete"]
    assert (shown["label"], shown["status"], shown["done"], shown["planned"], shown["scored"]) == (
        "mockllm/model",
        name,
        2,
        4,
        True,
    )


def test_a_log_without_scores_says_so_and_shows_not_scored(reviewer_client):
    report = _ingest("unscored")
    assert any("the log holds no scores (it was written before `inspect score`?)" in n for n in report.notes)
    assert not Verdict.objects.exists() and Attempt.objects.count() == 4
    [status] = run_statuses(benchmark_id=Run.objects.get().benchmark_id)
    assert (status.status, status.done, status.planned, status.scored) == ("success", 4, 4, False)
    page = reviewer_client.get(reverse("runs:checklist-leaderboard", args=["graded_qa"])).content.decode()
    assert "not scored" in page


def test_a_finished_scored_log_is_not_listed_as_incomplete(reviewer_client):
    report = _ingest("graded", pass_threshold=0.5)
    assert report.notes == []
    assert run_statuses(benchmark_id=Run.objects.get().benchmark_id) == []
    [status] = run_statuses(benchmark_id=Run.objects.get().benchmark_id, incomplete_only=False)
    assert (status.status, status.done, status.planned, status.scored) == ("success", 4, 4, True)
    page = reviewer_client.get(reverse("runs:checklist-leaderboard", args=["graded_qa"])).content.decode()
    assert 'id="run-status"' not in page


def test_an_upload_says_the_status_on_its_job_page(editor, editor_client, django_capture_on_commit_callbacks):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=editor).key}")
    upload = SimpleUploadedFile("cancelled.eval", (WILD / "cancelled.eval").read_bytes())
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/ingest/", {"format": "inspect", "files": [upload]}, format="multipart")
    assert response.status_code == 202, response.content
    job = Job.objects.get()
    assert job.state == JobState.SUCCEEDED
    page = editor_client.get(reverse("runs:job", args=[job.id])).content.decode()
    assert "<li>cancelled.eval: the evaluation&#x27;s status is &#x27;cancelled&#x27;; 2 of 4 samples" in page


def test_the_cli_prints_the_status_in_its_summary(capsys):
    call_command("ingest", "inspect", str(WILD / "cancelled.eval"), "--no-progress")
    assert "the evaluation's status is 'cancelled'" in capsys.readouterr().out


# 7. another evaluation --------------------------------------------------------------------------------
def test_another_evaluation_of_the_same_task_and_model_is_another_run():
    first, again = _header("graded")["eval"]["eval_id"], _header("graded_again")["eval"]["eval_id"]
    assert first != again
    _ingest("graded")
    _ingest("graded_again")
    runs = dict(Run.objects.values_list("label", "settings__eval_id"))
    assert runs == {"mockllm/model": first, f"mockllm/model (eval {again})": again}
    assert Attempt.objects.count() == 8  # nothing overwritten
    # a corrected copy of the same evaluation updates its run in place
    assert _ingest("graded").total("created") == 0 and Run.objects.count() == 2


def test_another_evaluation_under_a_named_run_is_refused_naming_run():
    _ingest("graded", run="baseline")
    with pytest.raises(IngestFailed) as failed:
        _ingest("graded_again", run="baseline")
    message = str(failed.value)
    assert "the run 'baseline' holds another evaluation of graded_qa" in message and "--run" in message
    assert Attempt.objects.count() == 4
    with pytest.raises(CommandError, match="give another --run LABEL"):
        call_command("ingest", "inspect", str(WILD / "graded_again.eval"), "--run", "baseline", "--no-progress")


# 8. chunked samples, format versions ----------------------------------------------------------------------
def _stored() -> set[tuple]:
    return set(
        Verdict.objects.values_list("attempt__instance__external_id", "item__key", "judge__name", "result", "score")
    )


def test_a_log_version_inspect_ai_reads_is_read_through_it(tmp_path):
    """A version-1 log (inspect_ai reads it, upgrading it to version 2) imports as its version-2 copy does."""
    pytest.importorskip("inspect_ai")
    log = json.loads((FIXTURES / "tiny_if.json").read_text(encoding="utf-8"))
    log["version"] = 1
    (tmp_path / "v1.json").write_text(json.dumps(log), encoding="utf-8")
    ingest("inspect", [Source.of(tmp_path / "v1.json")], Options(benchmark="v1", pass_threshold=0.5))
    v1 = _stored()
    Verdict.objects.all().delete()
    ingest("inspect", [Source.of(FIXTURES / "tiny_if.json")], Options(benchmark="v2", pass_threshold=0.5))
    assert v1 == _stored() and Verdict.objects.count() == 30
    assert Run.objects.filter(benchmark__slug="v1", settings__log_version=2).count() == 2


def test_chunked_samples_are_read_through_inspect_ai_or_refused_clearly():
    """inspect_ai's converter writes each sample as a shell and sequences (samples/<id>_epoch_<n>/...): the
    portal reads them through inspect_ai when the installed release can (0.3.285 writes them but its
    readers do not find them), else refuses the log saying so; never a chunk taken for a sample."""
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log_sample

    with zipfile.ZipFile(WILD / "chunked.eval") as archive:
        assert "samples/cap_epoch_1/sample.json" in archive.namelist()
    try:
        read_eval_log_sample(str(WILD / "chunked.eval"), id="cap", epoch=1)
    except IndexError:
        with pytest.raises(IngestFailed) as failed:
            _ingest("chunked")
        assert (
            "chunked.eval: its samples are in inspect_ai's chunked shape (samples/<id>_epoch_<n>/sample.json and "
            "sequences), and inspect_ai 0.3.285 read none of the 4 samples the log lists either"
        ) in str(failed.value)
        return
    _ingest("chunked", benchmark="chunked")
    chunked = _stored()
    Verdict.objects.all().delete()
    _ingest("graded", benchmark="monolith")
    assert chunked == _stored() and len(chunked) == 8


def test_without_inspect_ai_a_log_it_must_read_is_refused_clearly(monkeypatch):
    real = importlib.import_module

    def without(name, *args):
        if name.startswith("inspect_ai"):
            raise ImportError(name)
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without)
    with pytest.raises(IngestFailed) as failed:
        _ingest("chunked")
    message = str(failed.value)
    assert "chunked.eval: its samples are in inspect_ai's chunked shape" in message
    assert "the optional inspect_ai package, which is not installed here" in message


# 9. numeric scorers -----------------------------------------------------------------------------------
def test_a_numeric_scorer_beside_a_pass_fail_one_is_kept_as_inspect_reports_it(reviewer_client):
    report = _ingest("graded")
    assert not report.rejected
    header = _header("graded")
    reported = {s["name"]: {k: m["value"] for k, m in s["metrics"].items()} for s in header["results"]["scores"]}
    # pass/fail scorers (match, graded's exact) are verdicts; the numbers are measures
    assert set(Verdict.objects.values_list("judge__name", "item__key").distinct()) == {
        ("match", "answer"),
        ("graded", "exact"),
    }
    figures = {f.name: f for f in ReportedFigure.objects.all()}
    assert set(figures) == {"length_ratio", "graded/overlap"}
    for name, inspect_name in (("length_ratio", "length_ratio"), ("graded/overlap", "overlap")):
        figure = figures[name]
        assert (figure.value, figure.stderr) == (
            pytest.approx(reported[inspect_name]["mean"]),
            pytest.approx(reported[inspect_name]["stderr"]),
        )
        assert (figure.aggregation, figure.per_sample, figure.samples, figure.source) == (
            "mean",
            "values",
            4,
            "Inspect AI log",
        )
        values = [a.outcome["measures"][name] for a in Attempt.objects.all()]
        assert figure.sample_mean == pytest.approx(statistics.mean(values)) == pytest.approx(figure.value)
        # Inspect's stderr is the sample standard deviation over the square root of n
        assert figure.stderr == pytest.approx(statistics.stdev(values) / len(values) ** 0.5)
    page = reviewer_client.get(reverse("runs:checklist-leaderboard", args=["graded_qa"])).content.decode()
    assert "<code>length_ratio</code>" in page and f"{reported['length_ratio']['mean']:.4f}" in page
    attempt = Attempt.objects.get(instance__external_id="sky")
    shown = reviewer_client.get(reverse("runs:attempt", args=[attempt.id])).content.decode()
    assert f"<code>length_ratio</code> = <code>{attempt.outcome['measures']['length_ratio']}</code>" in shown


def test_a_pass_threshold_still_turns_a_numeric_scorer_into_verdicts():
    _ingest("graded", pass_threshold=0.5)
    assert not ReportedFigure.objects.exists()
    ratio = {
        v.attempt.instance.external_id: (v.result, v.score)
        for v in Verdict.objects.select_related("attempt__instance").filter(judge__name="length_ratio")
    }
    measured = {s["id"]: s["scores"]["length_ratio"]["value"] for s in _samples("graded")}
    assert ratio == {k: ("pass" if v >= 0.5 else "fail", v) for k, v in measured.items()}


# Inspect AI itself --------------------------------------------------------------------------------------
def test_logs_made_by_inspect_ai_now_import_as_the_committed_ones_do(tmp_path):
    pytest.importorskip("inspect_ai")
    shutil.copy(FIXTURES / "make_logs.py", tmp_path / "make_logs.py")
    done = subprocess.run(
        [sys.executable, "make_logs.py", "logs", "wild"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_PROXY": "*", "INSPECT_DISPLAY": "none"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    made = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert made == sorted(p.name for p in WILD.iterdir())
    for name in ("graded", "older"):
        ingest("inspect", [Source.of(tmp_path / "logs" / f"{name}.eval")], Options(benchmark=f"now-{name}"))
        _ingest(name, benchmark=f"committed-{name}")
        now, committed = (
            set(
                Verdict.objects.filter(attempt__run__benchmark__slug=f"{when}-{name}").values_list(
                    "attempt__instance__external_id", "item__key", "judge__name", "result"
                )
            )
            for when in ("now", "committed")
        )
        assert now == committed
        tokens = {
            when: set(
                Attempt.objects.filter(run__benchmark__slug=f"{when}-{name}").values_list(
                    "instance__external_id", "input_tokens", "total_tokens"
                )
            )
            for when in ("now", "committed")
        }
        assert tokens["now"] == tokens["committed"]


def test_a_eval_logs_measures_are_found_from_its_summaries_without_reading_its_samples(monkeypatch):
    read = []
    entry_bytes = inspect_ai._entry_bytes
    monkeypatch.setattr(
        inspect_ai,
        "_entry_bytes",
        lambda archive, info, limit: (read.append(info.filename), entry_bytes(archive, info, limit))[1],
    )
    options = Options()
    found = inspect_ai.measured_scores(Source.of(WILD / "graded.eval"), inspect_ai.read_eval, options)
    assert found == ({("length_ratio", "answer"), ("graded", "overlap")}, True)
    assert not [name for name in read if name.startswith("samples/")]
    # a log whose summaries do not cover every sample (one being written) is read sample by sample
    monkeypatch.setattr(inspect_ai, "_SUMMARIES", inspect_ai.re.compile("^_journal/summaries/(1)-none.json$"))
    monkeypatch.setattr(inspect_ai, "SUMMARIES_JSON", "none.json")
    read.clear()
    partial = WILD.parent / "tiny_if.eval"
    assert inspect_ai.measured_scores(Source.of(partial), inspect_ai.read_eval, options)[0] == {("brevity", "answer")}
    assert len([name for name in read if name.startswith("samples/")]) == 6
