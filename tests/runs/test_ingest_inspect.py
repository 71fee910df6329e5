"""Inspect AI logs: real logs made by Inspect AI itself (its mockllm model on a task of our own,
tests/fixtures/inspect/make_logs.py), run here when inspect_ai is installed and committed beside it for
when it is not; both .eval and .json; verdicts, trajectories, events, re-import, bad logs, the CLI,
the upload API, the pages, and the leaderboard against Inspect's own reported metrics."""

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runs.ingest import IngestFailed, Options, Source, ingest, inspect_ai, native
from runs.models import Attempt, Benchmark, ChecklistItem, Instance, Job, JobState, Run, Verdict
from runs.trajectory_view import stored_threads

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "inspect"
LOGS = {"eval": FIXTURES / "tiny_if.eval", "json": FIXTURES / "tiny_if.json"}


def _ingest(path: Path, **options):
    return ingest("inspect", [Source.of(path)], Options(**options))


def _verdicts(slug: str) -> set[tuple]:
    return set(
        Verdict.objects.filter(attempt__run__benchmark__slug=slug).values_list(
            "attempt__instance__external_id", "attempt__run__repetition", "item__key", "judge__name", "result", "score"
        )
    )


def _attempt(slug: str, instance: str, epoch: int) -> Attempt:
    return Attempt.objects.select_related("trajectory").get(
        run__benchmark__slug=slug, instance__external_id=instance, run__repetition=epoch
    )


@pytest.mark.parametrize("kind", ["eval", "json"])
def test_a_log_becomes_one_run_per_epoch_with_every_scorer_a_judge(kind):
    report = _ingest(LOGS[kind], pass_threshold=0.5).as_dict()["by_kind"]
    assert report["runs"] == {"created": 2} and report["instances"] == {"created": 3}
    assert report["attempts"] == {"created": 6} and report["verdicts"] == {"created": 30}
    bench = Benchmark.objects.get()
    assert (bench.slug, bench.kind) == ("tiny_if", "checklist")
    assert "Inspect AI log" in bench.description
    assert sorted(Run.objects.values_list("label", "repetition")) == [
        ("mockllm/model epoch 1", 1),
        ("mockllm/model epoch 2", 2),
    ]
    run = Run.objects.get(repetition=1)
    assert run.settings["pass_threshold"] == 0.5 and run.settings["source"] == "Inspect AI log"
    assert run.settings["results"]["match"]["accuracy"] == pytest.approx(
        5 / 6
    )  # as Inspect recomputed it after the edit
    # a scalar value is a verdict on "answer"; the dict scorer gives one item per key
    assert sorted(ChecklistItem.objects.filter(instance__external_id="capital").values_list("key", flat=True)) == [
        "answer",
        "mentions_target",
        "one_line",
        "polite",
    ]
    verdicts = _verdicts("tiny_if")
    assert ("capital", 1, "answer", "match", "pass", 1.0) in verdicts
    assert ("3", 2, "answer", "match", "fail", 0.0) in verdicts
    assert ("3", 1, "polite", "checks", "pass", 0.5) in verdicts  # P passes at a threshold of 0.5
    brevity = Verdict.objects.select_related("attempt").get(
        attempt__instance__external_id="3", attempt__run__repetition=1, judge__name="brevity"
    )
    assert brevity.score == brevity.attempt.outcome["scores"]["brevity"]["value"] == 0.606  # 20 / 33 characters
    assert brevity.result == "pass" and brevity.reasoning == "33 characters"


@pytest.mark.parametrize("kind", ["eval", "json"])
def test_edits_keep_their_history_and_invalidated_samples_are_marked(kind):
    _ingest(LOGS[kind], pass_threshold=0.5)
    edited = _attempt("tiny_if", "3", 1)
    match = edited.outcome["scores"]["match"]
    assert match["value"] == "C" and [h["value"] for h in match["history"]] == ["I", "C"]
    assert match["history"][1]["provenance"]["author"] == "reviewer"
    verdict = Verdict.objects.get(attempt=edited, judge__name="match")
    assert verdict.result == "pass" and verdict.reasoning.startswith("edited by reviewer: green-ish counts.")
    assert _attempt("tiny_if", "sum", 2).outcome["invalidated"]["reason"] == "answer leaked in the prompt"
    assert _attempt("tiny_if", "sum", 1).outcome["invalidated"] is None


@pytest.mark.parametrize("kind", ["eval", "json"])
def test_messages_become_the_trajectory_and_events_keep_tokens_and_time(kind):
    _ingest(LOGS[kind], pass_threshold=0.5)
    attempt = _attempt("tiny_if", "capital", 1)
    [thread] = stored_threads(attempt.id)
    assert [t["name"] for t in thread["tools"]] == ["lookup"]
    roles = [m["role"] for m in thread["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    call = thread["messages"][1]["tool_calls"][0]
    assert call["name"] == "lookup" and call["arguments"] == {"city": "Paris"}
    assert (
        thread["messages"][2]["tool_call_id"] == call["id"]
        and thread["messages"][2]["content"] == "Paris is the capital of France."
    )
    assert attempt.response == "Paris" and attempt.assistant_turns == 2
    events = attempt.outcome["events"]
    models = [e for e in events if e["event"] == "model"]
    assert len(models) == 2 and all(e["input_tokens"] > 0 and e["output_tokens"] > 0 and "seconds" in e for e in models)
    assert sum(e["total_tokens"] for e in models) == attempt.outcome["model_usage"]["mockllm/model"]["total_tokens"]
    [tool] = [e for e in events if e["event"] == "tool"]
    assert tool["function"] == "lookup" and tool["result"] == "Paris is the capital of France."
    kinds = [e["event"] for e in events]
    assert kinds.index("span_begin") < kinds.index("model") < kinds.index("tool") < kinds.index("score")


def test_the_eval_and_json_logs_of_one_run_give_the_same_verdicts():
    _ingest(LOGS["eval"], pass_threshold=0.5, benchmark="from-eval")
    _ingest(LOGS["json"], pass_threshold=0.5, benchmark="from-json")
    assert _verdicts("from-eval") == _verdicts("from-json")


@pytest.mark.parametrize("kind", ["eval", "json"])
def test_importing_the_same_log_twice_changes_nothing(kind):
    _ingest(LOGS[kind], pass_threshold=0.5)
    again = _ingest(LOGS[kind], pass_threshold=0.5)
    assert again.total("created") == again.total("updated") == 0 and again.total("unchanged") == 60


def test_without_a_pass_threshold_a_numeric_scorer_is_a_measure_not_a_verdict():
    """brevity's values are numbers (1.0 on two samples, 0.606 on the third): every one of them is kept as
    Inspect reports it, none is a verdict; match and checks give verdicts as with a threshold."""
    _ingest(LOGS["eval"])
    assert not Verdict.objects.filter(judge__name="brevity").exists()
    assert Verdict.objects.filter(judge__name="match").count() == 6
    assert _attempt("tiny_if", "3", 1).outcome["measures"] == {"brevity": 0.606}
    assert _attempt("tiny_if", "capital", 1).outcome["measures"] == {"brevity": 1.0}
    assert Run.objects.get(repetition=1).settings["measures"] == ["brevity"]


def test_partial_credit_fails_above_a_threshold_of_one_half():
    _ingest(LOGS["json"], pass_threshold=0.6)
    assert (
        Verdict.objects.get(attempt__instance__external_id="3", attempt__run__repetition=1, item__key="polite").result
        == "fail"
    )
    assert Run.objects.filter(settings__pass_threshold=0.6).count() == 2


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("eval", "cut.eval: not a complete .eval archive"),  # the zip's directory is at its end
        ("json", "cut.json:"),  # the line where the document stops
    ],
)
def test_a_truncated_log_is_refused(tmp_path, kind, expected):
    cut = tmp_path / f"cut.{kind}"
    data = LOGS[kind].read_bytes()
    cut.write_bytes(data[: int(len(data) * 0.7)])
    with pytest.raises(IngestFailed) as failed:
        _ingest(cut, pass_threshold=0.5)
    assert expected in str(failed.value) and "truncated" in str(failed.value)
    assert not Benchmark.objects.exists()


def test_a_corrupt_sample_entry_is_refused_with_the_sample_named(tmp_path):
    bad = tmp_path / "bad.eval"
    data = bytearray(LOGS["eval"].read_bytes())
    with zipfile.ZipFile(LOGS["eval"]) as archive:
        info = archive.getinfo("samples/capital_epoch_1.json")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + info.compress_size // 2
    data[start : start + 16] = bytes(16)
    bad.write_bytes(bytes(data))
    with pytest.raises(IngestFailed) as failed:
        _ingest(bad, pass_threshold=0.5)
    assert "bad.eval:samples/capital_epoch_1.json: the entry is corrupt" in str(failed.value)
    assert not Benchmark.objects.exists() and not Attempt.objects.exists()


def test_an_entry_larger_than_the_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(inspect_ai, "MAX_SAMPLE_BYTES", 1000)
    with pytest.raises(IngestFailed) as failed:
        _ingest(LOGS["eval"], pass_threshold=0.5)
    assert "tiny_if.eval:samples/capital_epoch_1.json: the entry is " in str(failed.value)
    assert "bytes uncompressed; at most 1,000 are read per entry" in str(failed.value)
    assert not Benchmark.objects.exists()


def test_an_unknown_log_version_is_refused_clearly(tmp_path):
    newer = tmp_path / "newer.json"
    log = json.loads(LOGS["json"].read_text(encoding="utf-8"))
    log["version"] = 3
    newer.write_text(json.dumps(log), encoding="utf-8")
    with pytest.raises(IngestFailed) as failed:
        _ingest(newer, pass_threshold=0.5)
    assert (
        "newer.json: log format version 3 is not one this portal reads itself (it reads version 2), "
        "and inspect_ai 0.3.285 could not read it either (ValueError: Unable to read log file: newer.json)"
    ) in str(failed.value)


def test_the_leaderboard_api_gives_inspects_own_accuracy(reviewer_client):
    _ingest(LOGS["eval"], pass_threshold=0.5)
    body = reviewer_client.get(reverse("api:leaderboard", args=["tiny_if"]) + "?judge=match").json()
    [row] = body["rows"]
    reported = Run.objects.get(repetition=1).settings["results"]["match"]["accuracy"]
    # match judges one item per attempt: ISR = CSR = Inspect's accuracy (epochs pooled, as Inspect's mean reducer)
    assert row["isr"] == pytest.approx(100 * reported) == pytest.approx(row["csr"])


def test_the_cli_takes_a_pass_threshold(capsys):
    call_command("ingest", "inspect", str(LOGS["eval"]), "--pass-threshold", "0.5", "--no-progress")
    assert "verdicts: created 30" in capsys.readouterr().out
    # without it, brevity's numbers are measures: match and checks give the verdicts, P fails
    call_command("ingest", "inspect", str(LOGS["json"]), "--benchmark", "other", "--no-progress")
    assert "verdicts: created 24" in capsys.readouterr().out


def test_the_upload_api_takes_an_eval_log(editor, django_capture_on_commit_callbacks):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=editor).key}")
    upload = SimpleUploadedFile("tiny_if.eval", LOGS["eval"].read_bytes())
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/ingest/", {"format": "inspect", "files": [upload], "pass_threshold": "0.5"}, format="multipart"
        )
    assert response.status_code == 202, response.content
    job = Job.objects.get()
    assert job.state == JobState.SUCCEEDED and job.params["options"]["pass_threshold"] == 0.5
    assert Verdict.objects.count() == 30


def test_a_zip_named_json_is_still_refused_as_an_upload(editor_client):
    upload = SimpleUploadedFile("tiny_if.json", LOGS["eval"].read_bytes())
    response = editor_client.post(reverse("runs:import"), {"format": "inspect", "files": [upload]})
    assert response.status_code == 400 and "zip file" in response.content.decode()


def test_the_pages_say_where_it_came_from_and_show_the_events(reviewer_client):
    _ingest(LOGS["eval"], pass_threshold=0.5)
    home = reviewer_client.get(reverse("runs:home")).content.decode()
    assert "imported from Inspect AI logs" in home
    page = reviewer_client.get(reverse("runs:attempt", args=[_attempt("tiny_if", "capital", 1).id])).content.decode()
    assert "From the Inspect AI log" in page and "passes at <strong>0.5</strong> or more" in page
    assert "2 model calls:" in page and "1 tool call in" in page and "<code>lookup</code>" in page
    # a dict value as JSON (PostgreSQL's jsonb keeps its keys in an order of its own)
    assert "<code>{&quot;" in page and "&quot;mentions_target&quot;: &quot;C&quot;" in page
    assert "<code>span_end</code>" not in page and '<td class="depth-3"><code>tool</code>' in page
    invalid = reviewer_client.get(reverse("runs:attempt", args=[_attempt("tiny_if", "sum", 2).id])).content.decode()
    assert "<strong>invalidated</strong> by reviewer: answer leaked in the prompt" in invalid
    edited = reviewer_client.get(reverse("runs:attempt", args=[_attempt("tiny_if", "3", 1).id])).content.decode()
    assert "reviewer set <code>C</code>: green-ish counts" in edited


# Inspect AI itself --------------------------------------------------------------------------
def test_logs_made_by_inspect_ai_now_import_as_the_committed_ones_do(tmp_path):
    pytest.importorskip("inspect_ai")
    shutil.copy(FIXTURES / "make_logs.py", tmp_path / "make_logs.py")
    done = subprocess.run(
        [sys.executable, "make_logs.py", "logs"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "INSPECT_LOG_DIR": "logs",
            "NO_PROXY": "*",
            "INSPECT_DISPLAY": "none",
        },
    )
    assert done.returncode == 0, done.stderr[-2000:]
    made = {p.suffix: p for p in (tmp_path / "logs").iterdir() if p.is_file()}
    assert set(made) == {".eval", ".json"}
    committed = {}
    for kind, path in made.items():
        _ingest(path, pass_threshold=0.5, benchmark=f"now{kind.replace('.', '-')}")
        _ingest(LOGS[kind.lstrip(".")], pass_threshold=0.5, benchmark=f"committed{kind.replace('.', '-')}")
        committed[kind] = _verdicts(f"committed{kind.replace('.', '-')}")
        assert _verdicts(f"now{kind.replace('.', '-')}") == committed[kind]
    assert Attempt.objects.filter(run__benchmark__slug="now-eval", trajectory__isnull=False).count() == 6
    [sub_agent] = (tmp_path / "logs" / "sub_agent").iterdir()
    _ingest(sub_agent, benchmark="now-sub-agent")
    threads = stored_threads(Attempt.objects.get(run__benchmark__slug="now-sub-agent").id)
    assert [t["meta"]["thread"] for t in threads] == ["main", "sub-agent researcher"]


@st.composite
def _damaged(draw, original: bytes) -> bytes:
    """The archive with a few bytes changed, inserted, deleted, or its end cut off."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data) - 1))
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        if kind == "flip":
            data[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=20))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 50))]
        else:
            del data[at:]
        if not data:
            break
    return bytes(data)


def test_a_damaged_eval_log_imports_whole_or_fails_cleanly(tmp_path):
    """Whatever bytes are damaged, the import stores everything or nothing, and every problem names the file."""
    original = LOGS["eval"].read_bytes()

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(data=_damaged(original))
    def run(data):
        path = tmp_path / "damaged.eval"
        path.write_bytes(data)
        try:
            _ingest(path, pass_threshold=0.5)
        except IngestFailed as failed:
            assert failed.problems and all(str(p).startswith("damaged.eval:") for p in failed.problems), failed
            assert not Benchmark.objects.filter(slug="tiny_if").exists()
        else:
            Benchmark.objects.all().delete()

    run()


def test_logs_of_two_tasks_in_one_benchmark_must_not_share_sample_ids(tmp_path):
    other = tmp_path / "other.json"
    log = json.loads(LOGS["json"].read_text(encoding="utf-8"))
    log["eval"]["task"] = "other_task"
    for sample in log["samples"]:
        sample["input"] = "Something else entirely"
    other.write_text(json.dumps(log), encoding="utf-8")
    with pytest.raises(IngestFailed) as failed:
        ingest("inspect", [Source.of(LOGS["json"]), Source.of(other)], Options(pass_threshold=0.5, benchmark="mixed"))
    assert "another input, target or metadata than the sample 'capital' of an earlier log" in str(failed.value)
    # logs of two models on the same task in one import share the instances
    second = tmp_path / "second_model.json"
    log = json.loads(LOGS["json"].read_text(encoding="utf-8"))
    log["eval"]["model"] = "mockllm/second"
    second.write_text(json.dumps(log), encoding="utf-8")
    report = ingest("inspect", [Source.of(LOGS["eval"]), Source.of(second)], Options(pass_threshold=0.5))
    assert report.as_dict()["by_kind"]["instances"] == {"created": 3} and report.as_dict()["by_kind"]["runs"] == {
        "created": 4
    }
    assert set(Instance.objects.values_list("primary_category", flat=True)) == {"tiny_if"}
    # the same model's log twice in one import is two runs of one label: refused
    with pytest.raises(IngestFailed, match="run 'mockllm/model epoch 1' is defined twice"):
        ingest(
            "inspect",
            [Source.of(LOGS["eval"]), Source.of(LOGS["eval"])],
            Options(pass_threshold=0.5, benchmark="twice"),
        )


def test_eval_batches_are_bounded_by_their_uncompressed_size(monkeypatch):
    """A .eval entry is compressed some 10-25 times: batches count what the samples hold, not what was read
    from disk (counted by what was read, a batch of 2,000 records of 1 MB samples holds about 790 MB)."""
    with zipfile.ZipFile(LOGS["eval"]) as archive:
        sizes = [i.file_size for i in archive.infolist() if i.filename.startswith("samples/")]
    monkeypatch.setattr(native, "BATCH_BYTES", max(sizes) + 1)  # about two samples per batch
    flushes = []
    flush = native._NativeIngest.flush
    monkeypatch.setattr(native._NativeIngest, "flush", lambda self, defined: (flushes.append(1), flush(self, defined)))
    _ingest(LOGS["eval"], pass_threshold=0.5)
    assert len(flushes) >= len(sizes) // 2 and Verdict.objects.count() == 30


def test_attachments_are_put_back_where_the_log_refers_to_them(tmp_path):
    """inspect_ai moves long text into the sample's attachments and leaves attachment://<hash> in its place."""
    log = json.loads(LOGS["json"].read_text(encoding="utf-8"))
    sample = next(s for s in log["samples"] if s["id"] == "capital" and s["epoch"] == 1)
    long = "Paris is the capital of France. " * 20
    sample["attachments"] = {"abc123": long}
    sample["messages"][2]["content"] = "attachment://abc123"
    next(e for e in sample["events"] if e["event"] == "tool")["result"] = "attachment://abc123"
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps(log), encoding="utf-8")
    _ingest(moved, pass_threshold=0.5)
    attempt = _attempt("tiny_if", "capital", 1)
    assert stored_threads(attempt.id)[0]["messages"][2]["content"] == long
    [tool] = [e for e in attempt.outcome["events"] if e["event"] == "tool"]
    assert tool["result"] == long[:300] + "…"


def test_a_metadata_field_groups_the_leaderboard(reviewer_client):
    _ingest(LOGS["eval"], pass_threshold=0.5, category_field="topic")
    assert dict(Instance.objects.values_list("external_id", "primary_category")) == {
        "capital": "geography",
        "sum": "math",
        "3": "nature",
    }
    rows = reviewer_client.get(
        reverse("api:leaderboard", args=["tiny_if"]) + "?by=primary_category&judge=match"
    ).json()["rows"]
    # match on "3": I in epoch 1 edited to C, I in epoch 2
    assert {r["group"]: r["isr"] for r in rows} == {"geography": 100, "math": 100, "nature": 50}


def test_a_log_written_without_samples_is_refused_with_the_reason(tmp_path):
    header_only = tmp_path / "header_only.json"
    log = json.loads(LOGS["json"].read_text(encoding="utf-8"))
    log["samples"] = None
    header_only.write_text(json.dumps(log), encoding="utf-8")
    with pytest.raises(
        IngestFailed,
        match=r"header_only.json: the log holds no samples \(status: success\): "
        "was it written with log_samples off",
    ):
        _ingest(header_only, pass_threshold=0.5)


def test_a_sub_agent_gets_a_thread_of_its_own():
    """tests/fixtures/inspect/sub_agent.json: the main model calls a sub-agent as a tool (make_logs.py's sub_agent)."""
    _ingest(FIXTURES / "sub_agent.json")
    attempt = Attempt.objects.select_related("trajectory").get()
    main, sub = stored_threads(attempt.id)
    assert main["meta"]["thread"] == "main" and [m["role"] for m in main["messages"]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert main["messages"][2]["content"] == "The research says Paris."
    assert sub["meta"]["thread"] == "sub-agent researcher"
    assert [(m["role"], m["content"]) for m in sub["messages"]] == [
        ("user", "capital of France?"),
        ("assistant", "The research says Paris."),
    ]
    spans = [e for e in attempt.outcome["events"] if e["event"] == "span_begin"]
    assert ("agent", "researcher") in {(e.get("type"), e.get("name")) for e in spans}
    assert Verdict.objects.get().result == "pass"


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


def test_damaged_events_and_messages_import_whole_or_fail_cleanly(tmp_path):
    """The sub-agent threads read spans, model events and the pooled inputs: any value of any type in them
    (found this way: a message id that was a list) leaves the import whole or failed, never crashed."""
    log = json.loads((FIXTURES / "sub_agent.json").read_text(encoding="utf-8"))
    sample = log["samples"][0]
    places = [
        (part, n, key) for part in ("events", "messages") for n, record in enumerate(sample[part]) for key in record
    ]
    places += [("events_data", "messages", n) for n in range(len(sample["events_data"]["messages"]))]

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(place=st.sampled_from(places), value=_JSON)
    def run(place, value):
        damaged = json.loads(json.dumps(log))
        damaged["samples"][0][place[0]][place[1]][place[2]] = value
        path = tmp_path / "damaged.json"
        path.write_text(json.dumps(damaged), encoding="utf-8")
        try:
            _ingest(path, pass_threshold=0.5)
        except IngestFailed as failed:
            assert all(str(p).startswith("damaged.json:") for p in failed.problems), failed
        Benchmark.objects.all().delete()

    run()
