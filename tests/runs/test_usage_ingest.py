"""Where the tokens and the time went: each format's import stores what its harness logged, and nothing else."""

import json
from pathlib import Path

import pytest

from runs.ingest import IngestFailed, Options, Source, ingest
from runs.ingest.usage import tokens_of
from runs.models import Attempt
from runs.trajectory_view import stored_threads

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "octobench"
USAGE = ("input_tokens", "output_tokens", "total_tokens", "model_seconds", "wall_seconds", "model_calls", "tool_calls")


def load(format_name: str, *paths, **options):
    return ingest(format_name, [Source.of(p) for p in paths], Options(**options))


def usage_of(attempt: Attempt) -> dict:
    return {name: getattr(attempt, name) for name in USAGE}


def write(tmp_path: Path, name: str, records: list) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# the shapes usage objects come in -----------------------------------------------------------------
def test_it_counts_cached_anthropic_input_tokens_as_input():
    tokens = tokens_of(
        {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000}
    )
    assert (tokens.input, tokens.output, tokens.total) == (1110, 5, 1115)


def test_it_reads_openai_usage_as_mini_vela_documents_it():
    tokens = tokens_of({"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500})
    assert (tokens.input, tokens.output, tokens.total) == (1000, 500, 1500)


def test_it_takes_inspects_total_and_adds_its_cache_counts_to_input():
    tokens = tokens_of({"input_tokens": 7, "output_tokens": 3, "total_tokens": 40, "input_tokens_cache_read": 30})
    assert (tokens.input, tokens.output, tokens.total) == (37, 3, 40)


def test_it_finds_no_tokens_in_a_usage_without_counts():
    assert tokens_of({}) is None
    assert tokens_of({"input_tokens": "many", "output_tokens": 1}) is None
    assert tokens_of(None) is None


# OctoBench ----------------------------------------------------------------------------------------
@pytest.fixture
def octo_instances():
    load("octobench-instances", FIXTURES / "octobench" / "instances.jsonl")


def _raw_call(request_time: int, messages: list, reply: str, usage: dict | None, *, where: str = "response_body"):
    record = {
        "session_id": "oct-beta",
        "request_time": request_time,
        "request_body": {
            "model": "model-y",
            "system": "You are the main agent.",
            "tools": [{"name": "Bash"}],
            "messages": messages,
        },
        "response_body": {
            "content": [{"type": "tool_use", "id": f"t{request_time}", "name": "Bash", "input": {"command": reply}}]
        },
    }
    if usage is not None and where == "response_body":
        record["response_body"]["usage"] = usage
    elif usage is not None:
        record["usage"] = usage
    return record


def test_it_sums_a_raw_logs_calls_once_each(octo_instances, tmp_path):
    ask = [{"role": "user", "content": "Fix it"}]
    later = ask + [
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": "go on"},
    ]
    first = _raw_call(1_000, ask, "ls", {"input_tokens": 100, "output_tokens": 10, "cache_read_input_tokens": 50})
    path = write(
        tmp_path,
        "raw.jsonl",
        [
            first,
            {**first, "request_time": 1_003},  # the proxy logged the same call twice: counted once
            _raw_call(
                31_000,
                later,
                "pytest",
                {"prompt_tokens": 400, "completion_tokens": 20, "total_tokens": 420},
                where="top",
            ),
        ],
    )
    load("octobench-trajectories", path)
    attempt = Attempt.objects.get(instance__external_id="oct-beta")
    assert usage_of(attempt) == {
        "input_tokens": 150 + 400,
        "output_tokens": 30,
        "total_tokens": 160 + 420,
        "model_seconds": None,
        "wall_seconds": 30.0,
        "model_calls": 2,
        "tool_calls": 1,
    }


def test_a_raw_log_with_a_call_that_logged_no_usage_has_no_tokens(octo_instances, tmp_path):
    ask = [{"role": "user", "content": "Fix it"}]
    path = write(
        tmp_path,
        "raw.jsonl",
        [
            _raw_call(1_000, ask, "ls", {"input_tokens": 100, "output_tokens": 10}),
            _raw_call(2_000, ask + [{"role": "user", "content": "more"}], "pytest", None),
        ],
    )
    load("octobench-trajectories", path)
    figures = usage_of(Attempt.objects.get(instance__external_id="oct-beta"))
    assert figures["input_tokens"] is None and figures["total_tokens"] is None
    assert figures["model_calls"] == 2 and figures["wall_seconds"] == 1.0


def test_a_merged_trajectory_logs_only_its_tool_calls(octo_instances):
    load("octobench-trajectories", FIXTURES / "octobench" / "trajectory_merged.jsonl")
    for attempt in Attempt.objects.all():
        figures = usage_of(attempt)
        threads = stored_threads(attempt.id)
        expected = sum(len(m.get("tool_calls") or []) for t in threads for m in t["messages"])
        assert figures == {**dict.fromkeys(USAGE), "tool_calls": expected}
    assert any(a.tool_calls for a in Attempt.objects.all())


def test_reimporting_a_raw_log_changes_nothing(octo_instances):
    load("octobench-trajectories", FIXTURES / "octobench" / "trajectory_raw.jsonl")
    report = load("octobench-trajectories", FIXTURES / "octobench" / "trajectory_raw.jsonl")
    assert "nothing changed" in report.summary()


def test_the_real_raw_proxy_log_has_calls_and_time_but_no_tokens():
    """mini-vela's proxy log as it ships: `request_time` per call, no usage in `response_body`; every call
    is logged twice."""
    if not (SHARED / "trajectory_raw.jsonl").is_file():
        pytest.skip("../shared/data is absent")
    load("octobench-instances", SHARED / "instances.jsonl")
    load("octobench-trajectories", SHARED / "trajectory_raw.jsonl")
    records = [json.loads(line) for line in (SHARED / "trajectory_raw.jsonl").open()]
    attempt = Attempt.objects.get(instance__external_id=records[0]["session_id"])
    # each call is there twice, a few milliseconds apart, with the same request and response: the first counts
    firsts = records[::2]
    assert all(
        a["request_body"] == b["request_body"] and a["response_body"] == b["response_body"]
        for a, b in zip(records[::2], records[1::2])
    )
    assert attempt.input_tokens is None and attempt.output_tokens is None and attempt.total_tokens is None
    assert attempt.model_seconds is None
    assert attempt.wall_seconds == (firsts[-1]["request_time"] - firsts[0]["request_time"]) / 1000
    assert attempt.model_calls == len(firsts)
    calls = [b for r in records for b in r["response_body"]["content"] if b.get("type") == "tool_use"]
    assert attempt.tool_calls == len({b["id"] for b in calls})


def test_the_real_merged_trajectory_counts_its_tool_calls():
    if not (SHARED / "trajectory_merged.jsonl").is_file():
        pytest.skip("../shared/data is absent")
    load("octobench-instances", SHARED / "instances.jsonl")
    load("octobench-trajectories", SHARED / "trajectory_merged.jsonl")
    records = [json.loads(line) for line in (SHARED / "trajectory_merged.jsonl").open()]
    expected = sum(
        len(m.get("tool_calls") or []) for r in records for m in r["messages"] if m.get("role") == "assistant"
    )
    attempt = Attempt.objects.get()
    assert attempt.tool_calls == expected and attempt.total_tokens is None and attempt.wall_seconds is None


# Inspect AI ----------------------------------------------------------------------------------------
def _inspect_samples(path: Path) -> dict[tuple[str, int], dict]:
    doc = json.loads(path.read_text())
    return {(str(s["id"]), s["epoch"]): s for s in doc["samples"]}


def test_it_stores_inspects_model_usage_and_times():
    path = FIXTURES / "inspect" / "tiny_if.json"
    load("inspect", path, pass_threshold=0.5)
    samples = _inspect_samples(path)
    assert Attempt.objects.exists()
    for attempt in Attempt.objects.select_related("run", "instance"):
        sample = samples[(attempt.instance.external_id, attempt.run.repetition)]
        usage = list(sample["model_usage"].values())
        models = [e for e in sample["events"] if e["event"] == "model"]
        tools = [e for e in sample["events"] if e["event"] == "tool"]
        assert attempt.input_tokens == sum(
            u["input_tokens"] + (u.get("input_tokens_cache_read") or 0) + (u.get("input_tokens_cache_write") or 0)
            for u in usage
        )
        assert attempt.output_tokens == sum(u["output_tokens"] for u in usage)
        assert attempt.total_tokens == sum(u["total_tokens"] for u in usage)
        assert attempt.wall_seconds == pytest.approx(sample["total_time"])
        assert attempt.model_seconds == pytest.approx(sum(e["working_time"] for e in models))
        assert (attempt.model_calls, attempt.tool_calls) == (len(models), len(tools))
    assert any(a.tool_calls for a in Attempt.objects.all())


def test_an_eval_archive_gives_the_usage_its_json_twin_gives():
    """The two committed logs are two runs of one task on the mock model: the same tokens and calls, other times."""
    load("inspect", FIXTURES / "inspect" / "tiny_if.json", benchmark="from-json", pass_threshold=0.5)
    load("inspect", FIXTURES / "inspect" / "tiny_if.eval", benchmark="from-eval", pass_threshold=0.5)

    def figures(slug):
        return {
            (a.instance.external_id, a.run.repetition): usage_of(a)
            for a in Attempt.objects.filter(run__benchmark__slug=slug).select_related("run", "instance")
        }

    timed = ("model_seconds", "wall_seconds")
    from_json, from_eval = figures("from-json"), figures("from-eval")
    assert from_json.keys() == from_eval.keys()
    for key, usage in from_json.items():
        assert {k: v for k, v in usage.items() if k not in timed} == {
            k: v for k, v in from_eval[key].items() if k not in timed
        }
        assert all(usage[k] is not None and from_eval[key][k] is not None for k in timed)


def test_an_inspect_sample_without_usage_or_events_logs_nothing_but_its_tool_calls(tmp_path):
    doc = json.loads((FIXTURES / "inspect" / "tiny_if.json").read_text())
    for sample in doc["samples"]:
        for key in ("model_usage", "events", "total_time", "working_time"):
            sample.pop(key, None)
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(doc))
    load("inspect", path, pass_threshold=0.5)
    for attempt in Attempt.objects.prefetch_related("trajectory"):
        expected = sum(len(m.get("tool_calls") or []) for t in stored_threads(attempt.id) for m in t["messages"])
        assert usage_of(attempt) == {**dict.fromkeys(USAGE), "tool_calls": expected}


# lm-evaluation-harness: per-sample logs carry no tokens nor times -----------------------------------------------
def test_lm_eval_samples_log_no_tokens_or_time():
    folder = FIXTURES / "lm_eval" / "acme__tiny-instruct-1b"
    load("lm-eval", *sorted(folder.iterdir()))
    assert Attempt.objects.exists()
    for attempt in Attempt.objects.all():
        assert usage_of(attempt) == {**dict.fromkeys(USAGE), "tool_calls": 0}


# native ----------------------------------------------------------------------------------------------
def _native(tmp_path: Path, usage) -> Path:
    attempt = {
        "type": "attempt",
        "run": "r1",
        "instance": "i1",
        "response": "done",
        "threads": [
            {
                "messages": [
                    {"role": "user", "content": "go"},
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [{"id": "c1", "name": "bash"}, {"id": "c2", "name": "bash"}],
                    },
                ]
            }
        ],
    }
    if usage is not None:
        attempt["usage"] = usage
    return write(
        tmp_path,
        "study.jsonl",
        [
            {"type": "benchmark", "slug": "acme", "kind": "checklist"},
            {"type": "instance", "id": "i1", "items": [{"key": "a"}]},
            {"type": "run", "label": "r1", "model": "m"},
            attempt,
        ],
    )


def test_a_native_attempt_gives_its_usage(tmp_path):
    load(
        "native",
        _native(
            tmp_path,
            {
                "input_tokens": 12,
                "output_tokens": 3,
                "total_tokens": 15,
                "model_seconds": 1.5,
                "wall_seconds": 4,
                "model_calls": 2,
            },
        ),
    )
    assert usage_of(Attempt.objects.get()) == {
        "input_tokens": 12,
        "output_tokens": 3,
        "total_tokens": 15,
        "model_seconds": 1.5,
        "wall_seconds": 4.0,
        "model_calls": 2,
        "tool_calls": 2,
    }


def test_a_native_attempt_without_usage_logs_only_its_tool_calls(tmp_path):
    load("native", _native(tmp_path, None))
    assert usage_of(Attempt.objects.get()) == {**dict.fromkeys(USAGE), "tool_calls": 2}


@pytest.mark.parametrize(
    "usage, reason",
    [
        ({"input_tokens": -1}, "field 'usage.input_tokens' should be a whole number of 0 or more"),
        ({"wall_seconds": "3s"}, "field 'usage.wall_seconds' should be a number of seconds, 0 or more"),
        ({"tool_calls": 2**31}, "field 'usage.tool_calls' should be a whole number from 0 to 2,147,483,647"),
        ({"cost": 1}, "unknown field(s) 'usage.cost'"),
    ],
)
def test_it_refuses_a_native_usage_it_cannot_store(tmp_path, usage, reason):
    with pytest.raises(IngestFailed) as info:
        load("native", _native(tmp_path, usage))
    assert any(reason in str(p) for p in info.value.problems), info.value.problems
    assert not Attempt.objects.exists()
