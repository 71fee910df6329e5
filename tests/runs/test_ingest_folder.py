"""`manage.py ingest FORMAT FOLDER...`: a harness's results folder in one command, with model, run, judge and
repetition from the layout, the files and a manifest; all or nothing, or --per-file; one progress over it all."""

import io
import json
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.ingest import Options, Source, ingest, ingest_units
from runs.ingest.layout import Entry, LayoutError, Unit, entries_of, manifest_read, plan_import, wanted
from runs.models import AgentModel, Attempt, AttemptRollup, Benchmark, ChecklistItem, Judge, JudgeReport, Run, Verdict
from runs.services import rollups_rebuild_for_attempts
from runs.signals import benchmarks_written

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OCTO = FIXTURES / "octobench"
EVOLIF = FIXTURES / "evolif"
MANYIH = FIXTURES / "manyih"


def run_command(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("ingest", *args, "--no-progress", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def mini_vela_study(root: Path, models=("model-a", "model-b"), reps=(1, 2), judges=("judge-x", "judge-y")) -> Path:
    """mini-vela's layout: per model (and repetition) the merged trajectories and one scores file per judge."""
    for model in models:
        for rep in reps:
            folder = root / model / f"rep{rep}"
            folder.mkdir(parents=True)
            shutil.copy(OCTO / "trajectory_merged.jsonl", folder / "trajectories.jsonl")
            for judge in judges:
                shutil.copy(OCTO / "scores.json", folder / f"scores_{judge}.json")
    return root


@pytest.fixture
def octobench():
    ingest("octobench-instances", [Source.of(OCTO / "instances.jsonl")], Options())


def verdicts_in_fixture() -> int:
    data = json.loads((OCTO / "scores.json").read_text())
    return sum(
        len(g.get("checks", []))
        for r in data["results"]
        for g in (r.get("eval_result") or {}).values()
        if isinstance(g, dict)
    )


# the layout ---------------------------------------------------------------------------------
def test_a_mini_vela_folder_is_one_command_with_model_repetition_and_judge_from_the_layout(octobench, tmp_path):
    study = mini_vela_study(tmp_path / "study")

    run_command("octobench-trajectories", str(study))
    out, err = run_command("octobench-scores", str(study))

    assert "8 files in 8 groups" in err
    assert sorted(Run.objects.values_list("label", "model__name", "repetition")) == [
        ("model-a-r1", "model-a", 1),
        ("model-a-r2", "model-a", 2),
        ("model-b-r1", "model-b", 1),
        ("model-b-r2", "model-b", 2),
    ]
    assert set(Judge.objects.filter(verdicts__isnull=False).values_list("name", flat=True)) == {"judge-x", "judge-y"}
    per_run_and_judge = verdicts_in_fixture()
    assert Verdict.objects.count() == 4 * 2 * per_run_and_judge
    assert f"created {4 * 2 * per_run_and_judge}" in out.replace(",", "")
    # each scores file is remembered on its own run, under its path in the folder
    sources = Run.objects.get(label="model-b-r2").sources
    assert {s["name"] for s in sources} >= {
        "model-b/rep2/scores_judge-x.json",
        "model-b/rep2/scores_judge-y.json",
        "model-b/rep2/trajectories.jsonl",
    }
    assert not any(s["name"].startswith("model-a") for s in sources)


def test_evolif_output_dir_names_the_model_by_its_folder(tmp_path):
    ingest("evolif-dialogs", [Source.of(EVOLIF / "dialog_1.jsonl"), Source.of(EVOLIF / "dialog_2.jsonl")], Options())
    out_dir = tmp_path / "evaluation_wo_system"
    for model in ("acme-chat", "other-chat"):
        (out_dir / model).mkdir(parents=True)
        for name in ("eval_1.jsonl", "eval_2.jsonl"):
            shutil.copy(EVOLIF / name, out_dir / model / name)

    run_command("evolif-eval", str(out_dir))

    assert sorted(Run.objects.values_list("label", flat=True)) == ["acme-chat", "other-chat"]
    assert Attempt.objects.filter(run__label="other-chat").count() == 2
    # one model's own folder, given directly: the folder is the model (the harness writes <output_dir>/<model>/)
    (tmp_path / "third-chat").mkdir()
    shutil.copy(EVOLIF / "eval_1.jsonl", tmp_path / "third-chat" / "eval_1.jsonl")
    run_command("evolif-eval", str(tmp_path / "third-chat"))
    assert Run.objects.filter(label="third-chat", model__name="third-chat").exists()


def test_manyih_results_name_their_model_in_eval_config(tmp_path):
    ingest("manyih-data", [Source.of(MANYIH / "coding_small.json")], Options())
    folder = tmp_path / "results"
    folder.mkdir()
    config = json.loads((MANYIH / "results_small.json").read_text())
    for model in ("acme/coder-1", "acme/coder-2"):
        config["eval_config"]["model"] = model
        (folder / f"coding_small_{model.replace('/', '_')}.json").write_text(json.dumps(config))

    run_command("manyih-results", str(folder))

    assert sorted(Run.objects.values_list("model__name", flat=True)) == ["acme/coder-1", "acme/coder-2"]


def test_command_line_options_apply_to_every_file_and_win_over_the_layout(octobench, tmp_path):
    study = mini_vela_study(tmp_path / "study", models=("model-a",), reps=(1,), judges=("judge-x",))

    run_command("octobench-scores", str(study), "--model", "forced", "--judge", "j")

    assert list(Run.objects.values_list("label", "model__name")) == [("forced-r1", "forced")]  # the folder says rep1
    assert list(Judge.objects.filter(verdicts__isnull=False).distinct().values_list("name", flat=True)) == ["j"]


def test_a_file_named_directly_keeps_the_old_meaning(octobench, tmp_path):
    # no folder given: nothing comes from the folders above the file, so the format still asks for the model
    folder = tmp_path / "model-a"
    folder.mkdir()
    shutil.copy(OCTO / "scores.json", folder / "scores.json")
    with pytest.raises(CommandError, match="pass --model"):
        run_command("octobench-scores", str(folder / "scores.json"), "--judge", "j")


# the manifest -------------------------------------------------------------------------------
def test_a_manifest_says_what_the_layout_does_not(octobench, tmp_path):
    folder = tmp_path / "flat"
    folder.mkdir()
    shutil.copy(OCTO / "scores.json", folder / "a.json")
    shutil.copy(OCTO / "scores.json", folder / "b.json")
    (folder / "ifportal-import.json").write_text(
        json.dumps(
            {
                "files": [
                    {"path": "a.json", "model": "m1", "judge": "gpt-judge", "repetition": 2},
                    {"path": "*.json", "model": "m2", "judge": "other-judge", "run": "m2-special"},
                ]
            }
        )
    )

    run_command("octobench-scores", str(folder))

    assert sorted(Run.objects.values_list("label", "model__name", "repetition")) == [
        ("m1-r2", "m1", 2),
        ("m2-special", "m2", 1),
    ]
    assert Verdict.objects.filter(attempt__run__label="m1-r2", judge__name="gpt-judge").count() == verdicts_in_fixture()


@pytest.mark.parametrize(
    "manifest, message",
    [
        ("[]", "an object with a 'files' list"),
        ('{"files": [{"model": "m"}]}', "files[1] needs a 'path'"),
        ('{"files": [{"path": "a.json", "modle": "m"}]}', "unknown field(s) modle"),
        ('{"files": [{"path": "a.json", "repetition": 0}]}', "repetition should be a whole number"),
        ('{"files": [{"path": "a.json", "scaffold": "%s"}]}' % ("s" * 101), "scaffold should be a text of at most 100"),
        ('{"files": [{"path": "missing.json", "model": "m"}]}', "missing.json, which match no file"),
        ('{"files": [', "ifportal-import.json:1: not a valid JSON manifest"),
    ],
)
def test_a_wrong_manifest_is_refused_before_anything_is_read(octobench, tmp_path, manifest, message):
    folder = tmp_path / "flat"
    folder.mkdir()
    shutil.copy(OCTO / "scores.json", folder / "a.json")
    (folder / "ifportal-import.json").write_text(manifest)

    with pytest.raises(CommandError, match=None) as info:
        run_command("octobench-scores", str(folder), "--judge", "j")
    assert message in str(info.value)
    assert Run.objects.count() == 0


def test_a_model_folder_with_a_name_too_long_for_a_model_is_refused_before_anything_is_read(octobench, tmp_path):
    folder = tmp_path / "study" / ("m" * 199) / "rep2"  # the model fits; its run, "<model>-r2", does not
    folder.mkdir(parents=True)
    shutil.copy(OCTO / "scores.json", folder / "scores_j.json")

    with pytest.raises(CommandError) as info:
        run_command("octobench-scores", str(tmp_path / "study"))

    assert f"{'m' * 199}/rep2/scores_j.json: the run 'mmmm" in str(info.value)
    assert "is 202 characters long; a run name holds at most 200" in str(info.value)
    assert Run.objects.count() == 0


def test_a_folder_without_the_formats_files_or_a_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="no evolif-eval files in this folder .files named like eval_N.jsonl."):
        run_command("evolif-eval", str(tmp_path))
    with pytest.raises(CommandError, match="nope: no such file or folder"):
        run_command("evolif-eval", str(tmp_path / "nope"))


# all or nothing, per file, progress ---------------------------------------------------------
def broken_study(tmp_path: Path) -> Path:
    study = mini_vela_study(tmp_path / "study", models=("model-a", "model-b"), reps=(1,), judges=("judge-x",))
    bad = study / "model-b" / "rep1" / "scores_judge-x.json"
    bad.write_text(bad.read_text()[:-40])  # truncated
    return study


def test_all_or_nothing_stores_nothing_when_one_file_of_the_folder_is_bad(octobench, tmp_path):
    study = broken_study(tmp_path)

    with pytest.raises(CommandError) as info:
        run_command("octobench-scores", str(study))

    assert "model-b/rep1/scores_judge-x.json:" in str(info.value) and "nothing was stored" in str(info.value)
    assert "created" not in str(info.value)
    assert Verdict.objects.count() == 0 and Run.objects.count() == 0


def test_per_file_stores_the_good_files_and_names_the_bad_one(octobench, tmp_path):
    study = broken_study(tmp_path)

    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(
        CommandError, match="1 file.s. failed, nothing of them was stored: model-b/rep1/scores_judge-x.json"
    ):
        call_command("ingest", "octobench-scores", str(study), "--per-file", "--no-progress", stdout=out, stderr=err)

    assert "1 of 2 files stored" in out.getvalue()
    assert "model-b/rep1/scores_judge-x.json:" in err.getvalue()
    assert list(Run.objects.values_list("label", flat=True)) == ["model-a-r1"]
    assert Verdict.objects.count() == verdicts_in_fixture()


def test_one_progress_runs_over_every_file_of_the_import(octobench, tmp_path):
    study = mini_vela_study(tmp_path / "study", models=("model-a", "model-b"), reps=(1,), judges=("judge-x",))
    entries, _ = entries_of([study], "octobench-scores")
    units = plan_import("octobench-scores", entries, Options())
    total = sum(e.path.stat().st_size for e in entries)
    seen: list[tuple[int, int]] = []

    ingest_units("octobench-scores", units, progress=lambda done, of: seen.append((done, of)))

    assert len(units) == 2
    assert {of for _, of in seen} == {total}
    assert seen[-1] == (total, total)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def test_an_uploaded_manifest_matches_the_uploads_by_name(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"files": [{"path": "scores_a.json", "model": "m"}]}))
    manifest = manifest_read(path, folder=None)
    upload = tmp_path / "01-scores_a.json"
    upload.write_text("{}")

    units = plan_import(
        "octobench-scores", [Entry(upload, Path("scores_a.json"), root=tmp_path)], Options(), [manifest]
    )

    assert units[0].options.model == "m" and units[0].options.judge == "a"
    with pytest.raises(LayoutError):
        manifest_read(tmp_path / "absent.json")


def test_the_command_names_a_new_benchmark_and_refuses_a_name_in_use(tmp_path):
    from runs.models import Benchmark

    run_command("octobench-instances", str(OCTO / "instances.jsonl"))
    run_command(
        "octobench-instances", str(OCTO / "instances.jsonl"), "--benchmark", "octo-b", "--name", "OctoBench, team B"
    )
    run_command("octobench-instances", str(OCTO / "instances.jsonl"), "--benchmark", "octo-c")
    with pytest.raises(CommandError, match="benchmark 'octo-b' is already named 'OctoBench, team B'"):
        run_command(
            "octobench-instances", str(OCTO / "instances.jsonl"), "--benchmark", "octo-d", "--name", "octobench, TEAM b"
        )

    assert dict(Benchmark.objects.values_list("slug", "name")) == {
        "octobench": "OctoBench",
        "octo-b": "OctoBench, team B",
        "octo-c": "OctoBench (octo-c)",
    }


def test_guidebench_predictions_of_many_models_in_one_command(tmp_path):
    tasks = FIXTURES / "guidebench"
    run_command("guidebench-tasks", str(tasks / "math_tasks.json"), str(tasks / "price_tasks.json"))
    preds = tmp_path / "preds"
    for model in ("qwen-7b", "llama-8b"):
        (preds / model).mkdir(parents=True)
        for name in ("math_tasks.json", "price_tasks.json"):
            shutil.copy(tasks / "predictions" / name, preds / model / name)
    (preds / "notes.json").write_text("{}")  # not <category>_tasks.json: not read

    run_command("guidebench-predictions", str(preds))

    assert sorted(Run.objects.values_list("label", flat=True)) == ["llama-8b", "qwen-7b"]
    assert (
        Attempt.objects.filter(run__label="llama-8b").count()
        == Attempt.objects.filter(run__label="qwen-7b").count()
        > 0
    )


def test_two_folders_in_one_command_name_their_files_by_folder(octobench, tmp_path):
    a = mini_vela_study(tmp_path / "a", models=("model-a",), reps=(1,), judges=("judge-x",))
    b = mini_vela_study(tmp_path / "b", models=("model-b",), reps=(1,), judges=("judge-x",))

    run_command("octobench-scores", str(a), str(b))

    names = {s["name"] for run in Run.objects.all() for s in run.sources}
    assert names == {f"{a}/model-a/rep1/scores_judge-x.json", f"{b}/model-b/rep1/scores_judge-x.json"}


def test_an_inspect_log_folder_index_is_not_taken_for_a_log():
    """inspect_ai writes logs.json (its index of the folder's logs) beside the logs; a folder walk reads only logs."""
    assert not wanted("inspect", "logs.json")
    assert wanted("inspect", "2026-01-01T00-00-00_task_abc.eval")
    assert wanted("inspect", "2026-01-01T00-00-00_task_abc.json")
    assert wanted("octobench-scores", "logs.json")


def test_a_folder_reads_its_benchmark_and_item_index_once_and_warms_its_pages_once(
    octobench, tmp_path, django_capture_on_commit_callbacks
):
    """Eight scores files in one ingest: the benchmark and its checklist items are read once, not once a file, each
    run, model and judge is looked up once (not once a file: four runs of two models, by two judges), the attempts
    of a run it created are not looked for, the judge reasoning is listed for search in one statement, and the
    committed change is announced once (one warm-up of the leaderboards), with the rollups of every judge as a
    rebuild of each judge alone gives them."""
    study = mini_vela_study(tmp_path / "study")
    entries, _ = entries_of([study], "octobench-scores")
    sent = []
    benchmarks_written.connect(receiver := lambda **kw: sent.append(kw["benchmark_ids"]), weak=False)
    try:
        with CaptureQueriesContext(connection) as queries, django_capture_on_commit_callbacks(execute=True):
            ingest_units("octobench-scores", plan_import("octobench-scores", entries, Options()))
    finally:
        benchmarks_written.disconnect(receiver)
    statements = [q["sql"] for q in queries.captured_queries]
    item_table, benchmark_table = ChecklistItem._meta.db_table, Benchmark._meta.db_table
    index = f'SELECT "{item_table}"."instance_id" AS "instance_id", "{item_table}"."key" AS "key", "{item_table}"."id"'
    assert sum(s.startswith(index) for s in statements) == 1
    assert sum(f'WHERE "{benchmark_table}"."slug" = ' in s for s in statements) == 1
    run_table, judge_table, model_table = Run._meta.db_table, Judge._meta.db_table, AgentModel._meta.db_table
    assert (
        sum(
            s.startswith("SELECT") and f'FROM "{run_table}" ' in s and f'"{run_table}"."label" = ' in s
            for s in statements
        )
        == 4
    )
    for table in (judge_table, model_table):  # a new name: the look-up, then get_or_create's own
        assert sum(f'FROM "{table}" WHERE "{table}"."name" = ' in s for s in statements) == 2 * 2, table
    attempt_table = Attempt._meta.db_table
    looked_for = [s for s in statements if s.startswith(f'SELECT "{attempt_table}"."instance_id"')]
    assert not looked_for  # the runs are new: no attempt of theirs to look for
    assert len(sent) == 1
    assert Verdict.objects.count() == 8 * verdicts_in_fixture()
    attempts = list(Attempt.objects.values_list("id", flat=True))
    before = set(AttemptRollup.objects.values_list("attempt_id", "judge_id", "n_applicable", "n_passed"))
    for judge in Judge.objects.all():
        rollups_rebuild_for_attempts(attempts, [judge.id])
    assert set(AttemptRollup.objects.values_list("attempt_id", "judge_id", "n_applicable", "n_passed")) == before


def test_a_scores_file_given_twice_in_one_ingest_is_stored_once(octobench, tmp_path):
    """The second copy of a run's judge's scores in the same ingest finds the verdicts and the judge reports the
    first wrote (the attempts it created are not taken as unjudged), so it stores nothing twice."""
    copy = tmp_path / "again.json"
    shutil.copy(OCTO / "scores.json", copy)
    options = Options(model="model-a", judge="judge-x")
    report = ingest_units(
        "octobench-scores", [Unit(options, [Source.of(OCTO / "scores.json")]), Unit(options, [Source.of(copy)])]
    )
    assert Verdict.objects.count() == verdicts_in_fixture()
    assert report.total("unchanged") >= verdicts_in_fixture()
    assert JudgeReport.objects.count() == Attempt.objects.count()
