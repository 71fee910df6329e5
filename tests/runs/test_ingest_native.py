"""The native JSONL format: benchmark, instance, run, attempt and verdict records."""

import json
from pathlib import Path

import pytest

from runs.ingest import IngestFailed, Options, Source, ingest, native
from runs.models import (
    Attempt,
    AttemptRollup,
    Benchmark,
    ChecklistItem,
    GroupRollup,
    Instance,
    Judge,
    Run,
    Trajectory,
    Verdict,
)
from runs.trajectory_view import stored_threads

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "native" / "study.jsonl"
pytestmark = pytest.mark.django_db


def _records() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def _write(tmp_path: Path, records: list, name: str = "study.jsonl") -> Source:
    path = tmp_path / name
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Source.of(path)


def _ingest(*sources, **options):
    return ingest("native", list(sources) or [Source.of(FIXTURE)], Options(**options))


def _fails(source: Source, **options) -> str:
    with pytest.raises(IngestFailed) as excinfo:
        ingest("native", [source], Options(**options))
    return "\n".join(str(p) for p in excinfo.value.problems)


def _nothing_stored() -> bool:
    return not (
        Benchmark.objects.exists() or Instance.objects.exists() or Run.objects.exists() or Verdict.objects.exists()
    )


# the happy path ------------------------------------------------------------------------
def test_it_ingests_a_whole_study():
    report = _ingest()

    benchmark = Benchmark.objects.get(slug="acme-agent-if")
    assert (benchmark.kind, benchmark.name, benchmark.version) == ("checklist", "Acme agent IF", "2025.1")
    assert Instance.objects.filter(benchmark=benchmark).count() == 2
    assert ChecklistItem.objects.count() == 6
    assert Run.objects.get().settings == {"temperature": 0, "max_turns": 40}
    assert Attempt.objects.count() == 2 and Trajectory.objects.count() == 2
    assert Verdict.objects.count() == 12
    assert dict(Judge.objects.values_list("name", "kind")) == {"gpt-4.1": "llm", "alice": "human"}
    assert report.counts["verdicts"]["created"] == 12
    assert AttemptRollup.objects.count() == 4
    rollup = AttemptRollup.objects.get(judge__name="gpt-4.1", instance__external_id="repo-fix-001")
    assert (rollup.n_items, rollup.n_applicable, rollup.n_passed) == (3, 2, 2)
    assert GroupRollup.objects.filter(dimension="category", value="Memory").count() == 2


def test_it_normalises_categories_and_keeps_the_original_spelling():
    _ingest()

    item = ChecklistItem.objects.get(instance__external_id="repo-fix-001", key="md-1")
    assert (item.category, item.category_original, item.conditional, item.details) == (
        "Agents.md/Claude.md",
        "AGENTS.md",
        True,
        {"source_line": 12},
    )
    assert ChecklistItem.objects.get(instance__external_id="多语言-002", key="mem-1").category == "Memory"


def test_it_stores_threads_in_the_normalised_shape():
    _ingest()

    attempt = Attempt.objects.get(instance__external_id="repo-fix-001")
    threads = stored_threads(attempt.id)
    assert threads[0]["meta"] == {"session_id": "s-1", "thread": "main"}
    assert threads[0]["messages"][2]["tool_calls"][0] == {
        "id": "call_1",
        "name": "bash",
        "arguments": {"command": "pytest -q"},
    }
    assert attempt.assistant_turns == 2 and attempt.trajectory.message_count == 5
    assert attempt.outcome == {"tests_passed": True}
    verdict = Verdict.objects.get(attempt=attempt, item__key="sp-1", judge__name="gpt-4.1")
    assert (verdict.score, verdict.evidence) == (1.0, {"message": 4})


def test_it_keeps_chinese_emoji_and_rtl_text():
    _ingest()

    instance = Instance.objects.get(external_id="多语言-002")
    assert instance.spec["user_query"] == ["Translate the greeting: مرحبا بالعالم"]
    assert Attempt.objects.get(instance=instance).response == "你好，世界 🌍"


def test_it_changes_nothing_on_a_second_import():
    _ingest()
    report = _ingest()

    assert report.total("created") == 0 and report.total("updated") == 0
    assert report.counts["verdicts"]["unchanged"] == 12
    assert Verdict.objects.count() == 12 and Instance.objects.count() == 2 and Run.objects.count() == 1


def test_it_updates_a_corrected_file_in_place(tmp_path):
    _ingest()
    records = _records()
    records[1]["items"][0]["description"] = "No emoji anywhere, code comments included"
    records[1]["items"] = records[1]["items"][:2] + [{"key": "uq-2", "category": "UQ", "description": "Adds a test"}]
    records = [r for r in records if not (r["type"] == "verdict" and r["item"] == "md-1")]
    verdict = next(r for r in records if r["type"] == "verdict" and r["judge"] == "alice" and r["item"] == "uq-1")
    verdict["result"] = "pass"
    records[4]["response"] = "Fixed the off-by-one."

    Verdict.objects.filter(item__key="md-1").delete()
    report = _ingest(_write(tmp_path, records))

    assert report.counts["checklist items"] == {"updated": 1, "unchanged": 4, "created": 1, "removed": 1}
    assert report.counts["verdicts"]["updated"] == 1
    assert report.counts["attempts"]["updated"] == 1
    assert set(ChecklistItem.objects.filter(instance__external_id="repo-fix-001").values_list("key", flat=True)) == {
        "sp-1",
        "uq-1",
        "uq-2",
    }
    assert Instance.objects.count() == 2 and Attempt.objects.count() == 2
    rollup = AttemptRollup.objects.get(judge__name="alice", instance__external_id="repo-fix-001")
    assert (rollup.n_applicable, rollup.n_passed) == (2, 2)


def test_it_refuses_to_remove_an_item_that_has_verdicts(tmp_path):
    _ingest()
    records = _records()
    records[1]["items"] = records[1]["items"][:2]

    problems = _fails(_write(tmp_path, records[:2]))

    assert "study.jsonl:2: items md-1 have verdicts and cannot be removed" in problems
    assert ChecklistItem.objects.count() == 6


def test_it_resolves_references_to_what_is_already_stored(tmp_path):
    records = _records()
    _ingest(_write(tmp_path, records[:4], "definitions.jsonl"))
    report = _ingest(_write(tmp_path, records[4:], "results.jsonl"), benchmark="acme-agent-if")

    assert report.counts["verdicts"]["created"] == 12
    assert Attempt.objects.count() == 2


def test_it_reads_several_files_in_one_command(tmp_path):
    records = _records()
    first = _write(tmp_path, records[:4], "definitions.jsonl")
    second = _write(tmp_path, [records[0]] + records[4:], "results.jsonl")

    _ingest(first, second)

    assert Verdict.objects.count() == 12


def test_it_creates_an_empty_attempt_for_verdicts_without_one(tmp_path):
    records = [r for r in _records() if r["type"] != "attempt"]

    _ingest(_write(tmp_path, records))

    assert Attempt.objects.count() == 2 and Trajectory.objects.count() == 0
    assert Verdict.objects.count() == 12


def test_it_uses_the_judge_option_when_verdicts_name_none(tmp_path):
    records = [r for r in _records() if r["type"] != "verdict" or r["judge"] == "alice"]
    for r in records:
        if r["type"] == "verdict":
            del r["judge"], r["judge_kind"]

    _ingest(_write(tmp_path, records), judge="reviewer-bob")

    assert Verdict.objects.filter(judge__name="reviewer-bob").count() == 6
    assert Judge.objects.get(name="reviewer-bob").kind == "llm"


def test_it_lets_the_benchmark_option_override_the_slug():
    _ingest(benchmark="acme-copy")

    assert list(Benchmark.objects.values_list("slug", flat=True)) == ["acme-copy"]


def test_it_streams_in_batches(tmp_path, monkeypatch):
    monkeypatch.setattr(native, "BATCH", 3)

    _ingest()

    assert Verdict.objects.count() == 12 and AttemptRollup.objects.count() == 4


# bad input -----------------------------------------------------------------------------
def test_it_rejects_an_empty_file(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")

    assert "empty.jsonl: the file is empty" in _fails(Source.of(path))


def test_it_rejects_a_truncated_last_line_and_stores_nothing(tmp_path):
    text = FIXTURE.read_text(encoding="utf-8").rstrip("\n")
    path = tmp_path / "study.jsonl"
    path.write_text(text[:-25], encoding="utf-8")

    problems = _fails(Source.of(path))

    assert "study.jsonl:18: not valid JSON" in problems and "(the last line looks truncated)" in problems
    assert _nothing_stored()


def test_it_rejects_a_line_that_is_not_json(tmp_path):
    records = _records()
    records.insert(3, "run: model-x")

    problems = _fails(_write(tmp_path, records))

    assert "study.jsonl:4: not valid JSON" in problems
    assert _nothing_stored()


@pytest.mark.parametrize(
    ("index", "change", "expected"),
    [
        (0, {"kind": None}, "study.jsonl:1: missing required field 'kind'"),
        (0, {"kind": "survey"}, "study.jsonl:1: field 'kind' should be one of checklist"),
        (0, {"slug": "acme agent"}, "study.jsonl:1: slug 'acme agent' may hold only"),
        (0, {"nmae": "typo"}, "study.jsonl:1: unknown field(s) 'nmae'"),
        (1, {"id": 17}, "study.jsonl:2: field 'id' should be a string, found an integer"),
        (1, {"items": None}, "study.jsonl:2: missing required field 'items'"),
        (1, {"spec": "prompt"}, "study.jsonl:2: field 'spec' should be an object, found a string"),
        (3, {"repetition": "1"}, "study.jsonl:4: field 'repetition' should be an integer, found a string"),
        (3, {"repetition": True}, "study.jsonl:4: field 'repetition' should be an integer, found a boolean"),
        (3, {"model": ""}, "study.jsonl:4: field 'model' is empty"),
        (4, {"outcome": [1]}, "study.jsonl:5: field 'outcome' should be an object, found a list"),
        (4, {"assistant_turns": 10**12}, "study.jsonl:5: field 'assistant_turns' is out of range"),
        (6, {"result": "success"}, "study.jsonl:7: field 'result' should be pass, fail or na"),
        (6, {"score": "high"}, "study.jsonl:7: field 'score' should be a number, found a string"),
        (6, {"judge_kind": "oracle"}, "study.jsonl:7: field 'judge_kind' should be one of llm"),
        (6, {"judge_kind": "human"}, "study.jsonl:7: judge 'gpt-4.1' is a llm judge, not human"),
        (
            5,
            {"type": "attempts"},
            "study.jsonl:6: field 'type' should be one of benchmark, instance, run, attempt, verdict",
        ),
    ],
)
def test_it_validates_every_field_strictly(tmp_path, index, change, expected):
    records = _records()
    records[index].update(change)
    if change.get("judge_kind") == "human":  # the first verdict makes gpt-4.1 an llm judge; change the second
        records[index]["judge_kind"] = "llm"
        records[index + 1]["judge_kind"] = "human"
        expected = expected.replace(":7:", ":8:")

    problems = _fails(_write(tmp_path, [{k: v for k, v in r.items() if v is not None} for r in records]))

    assert expected in problems
    assert _nothing_stored()


def test_it_validates_items_and_threads_with_their_path(tmp_path):
    records = _records()
    records[1]["items"][1]["conditional"] = "yes"
    records[2]["items"][2]["key"] = "sp-1"
    records[4]["threads"][0]["messages"][2]["tool_calls"][0].pop("name")
    records[5]["threads"][0]["messages"][1]["role"] = 7

    problems = _fails(_write(tmp_path, records))

    assert "study.jsonl:2: field 'items[1].conditional' should be true or false, found a string" in problems
    assert "study.jsonl:3: item key 'sp-1' appears twice" in problems
    assert "study.jsonl:5: missing required field 'threads[0].messages[2].tool_calls[0].name'" in problems
    assert "study.jsonl:6: field 'threads[0].messages[1].role' should be a string, found an integer" in problems


@pytest.mark.parametrize(
    ("index", "change", "expected"),
    [
        (4, {"run": "model-y"}, "study.jsonl:5: unknown run 'model-y'"),
        (
            4,
            {"instance": "repo-fix-999"},
            "study.jsonl:5: unknown instance 'repo-fix-999' of benchmark 'acme-agent-if'",
        ),
        (6, {"instance": "nope"}, "study.jsonl:7: unknown instance 'nope'"),
        (6, {"item": "zz-9"}, "study.jsonl:7: unknown item 'zz-9' of instance 'repo-fix-001'"),
        (6, {"item": "mem-1"}, "study.jsonl:7: unknown item 'mem-1' of instance 'repo-fix-001'"),
    ],
)
def test_it_rejects_unknown_references_with_file_and_line(tmp_path, index, change, expected):
    records = _records()
    records[index].update(change)

    assert expected in _fails(_write(tmp_path, records))
    assert _nothing_stored()


def test_it_rejects_a_reference_to_a_later_line(tmp_path):
    records = _records()
    records[3], records[4] = records[4], records[3]

    assert "study.jsonl:4: unknown run 'model-x-r1': define it with a run record on an earlier line" in _fails(
        _write(tmp_path, records)
    )


def _failure(source: Source) -> IngestFailed:
    with pytest.raises(IngestFailed) as excinfo:
        ingest("native", [source], Options())
    return excinfo.value


@pytest.mark.parametrize(
    ("bad_run", "cause"),
    [
        ({"model": 5}, "refused at line 4"),  # refused, its label known
        ({"label": 7}, "which no earlier line defines (line 4, refused above, may have been its record)"),
        ({"type": "rn"}, "which no earlier line defines (line 4, refused above, may have been its record)"),
        (
            '{"type": "run", "label": "model-x-r1", "model": ',
            "which no earlier line defines (line 4, refused above, may have been its record)",
        ),  # not JSON
    ],
)
def test_it_reports_a_refused_run_once_and_summarises_the_lines_that_refer_to_it(tmp_path, bad_run, cause):
    records = _records()
    records[3] = bad_run if isinstance(bad_run, str) else {**records[3], **bad_run}
    followers = len(records) - 4  # the run's attempts and verdicts

    failed = _failure(_write(tmp_path, records))

    listed = [str(p) for p in failed.problems]
    assert len(listed) == 2 and listed[0].startswith("study.jsonl:4: ")
    assert listed[1] == f"study.jsonl: {followers} more lines refer to run 'model-x-r1', {cause}"
    assert failed.total == 2 and failed.report.rejected == 1 + followers
    assert _nothing_stored()


def test_it_lists_the_first_reference_to_a_run_no_line_defines_and_counts_the_others(tmp_path):
    records = _records()
    del records[3]

    listed = [str(p) for p in _failure(_write(tmp_path, records)).problems]

    assert listed == [
        "study.jsonl:4: unknown run 'model-x-r1': define it with a run record on an earlier line",
        f"study.jsonl: {len(records) - 4} more lines refer to run 'model-x-r1', which no earlier line defines",
    ]


def test_it_names_the_file_of_a_run_refused_in_another_file(tmp_path):
    records = _records()
    records[3]["model"] = 5
    first = _write(tmp_path, records[:4], name="runs.jsonl")
    second = _write(tmp_path, [records[0], *records[4:]], name="results.jsonl")

    with pytest.raises(IngestFailed) as excinfo:
        ingest("native", [first, second], Options())

    assert f"results.jsonl: {len(records) - 4} more lines refer to run 'model-x-r1', refused at runs.jsonl:4" in [
        str(p) for p in excinfo.value.problems
    ]


def test_it_rejects_duplicates_within_a_command(tmp_path):
    records = _records()
    records.insert(3, records[1])
    records.append(records[-1])

    problems = _fails(_write(tmp_path, records))

    assert "study.jsonl:4: instance 'repo-fix-001' is defined twice (first at study.jsonl:2)" in problems
    assert "study.jsonl:20: verdict of judge 'alice' on item 'mem-1'" in problems


def test_it_needs_a_benchmark_first(tmp_path):
    records = _records()

    assert "study.jsonl:1: no benchmark: start the file with a benchmark record" in _fails(
        _write(tmp_path, records[1:])
    )
    assert "study.jsonl:1: benchmark 'ghost' does not exist" in _fails(_write(tmp_path, records[1:]), benchmark="ghost")
    moved = records[1:3] + records[:1] + records[3:]
    assert "study.jsonl:3: a benchmark record must be the first record" in _fails(_write(tmp_path, moved))


def test_it_refuses_to_change_the_kind_of_a_stored_benchmark(tmp_path):
    Benchmark.objects.create(slug="acme-agent-if", name="Acme", kind="dialogue")

    assert "benchmark 'acme-agent-if' is stored as a dialogue benchmark, not checklist" in _fails(Source.of(FIXTURE))


def test_it_refuses_a_run_of_another_model(tmp_path):
    _ingest()
    records = _records()
    records[3]["model"] = "model-z"

    assert "study.jsonl:4: run 'model-x-r1' belongs to model 'model-x', not 'model-z'" in _fails(
        _write(tmp_path, records)
    )


def test_it_names_the_right_format_for_an_octobench_file(tmp_path):
    line = {"instance_id": "t1", "user_query": ["fix it"], "checklist": {"SP": {"checks": []}}}

    problems = _fails(_write(tmp_path, [line], "instances.jsonl"))

    assert "instances.jsonl:1: missing required field 'type' (this looks like an OctoBench instance" in problems


def test_it_rejects_a_guidebench_json_file(tmp_path):
    path = tmp_path / "chat_tasks.json"
    path.write_text(json.dumps([{"Instruction": "x"}], indent=2), encoding="utf-8")

    assert "chat_tasks.json:1: this is one JSON document spread over many lines, not JSON Lines" in _fails(
        Source.of(path)
    )


def test_a_second_slug_may_not_take_a_stored_benchmarks_name_and_the_name_option_names_it():
    _ingest(Source.of(FIXTURE))
    # the same file under another slug would show a second "Acme agent IF"
    problems = _fails(Source.of(FIXTURE), benchmark="acme-copy")
    assert "study.jsonl:1: benchmark 'acme-agent-if' is already named 'Acme agent IF'" in problems
    assert not Benchmark.objects.filter(slug="acme-copy").exists()

    _ingest(Source.of(FIXTURE), benchmark="acme-copy", name="Acme agent IF (copy)")
    assert Benchmark.objects.get(slug="acme-copy").name == "Acme agent IF (copy)"


def test_a_failure_that_waits_for_another_import_says_a_retry_may_fix_it(tmp_path):
    records = _records()
    waiting = _write(tmp_path, [records[0], *records[3:]], name="results.jsonl")  # instances not imported yet
    assert _failure(waiting).retry_may_fix
    records[3]["model"] = 5  # a refused run: the file itself is wrong
    assert not _failure(_write(tmp_path, records)).retry_may_fix
