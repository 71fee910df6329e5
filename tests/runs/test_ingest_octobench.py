"""OctoBench formats end to end: instances, merged and raw trajectories, scores; every bad input."""

import json
import shutil
import time
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from runs.categories import normalise_category
from runs.ingest import IngestFailed, Options, Source, ingest
from runs.models import (
    AgentModel,
    Attempt,
    AttemptRollup,
    Benchmark,
    ChecklistItem,
    GroupRollup,
    Instance,
    Judge,
    JudgeReport,
    Run,
    Trajectory,
    Verdict,
)
from runs.trajectory_view import stored_threads

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "octobench"
STORED = (
    Benchmark,
    Instance,
    ChecklistItem,
    AgentModel,
    Judge,
    Run,
    Attempt,
    Trajectory,
    Verdict,
    JudgeReport,
    AttemptRollup,
    GroupRollup,
)


def load(format_name: str, *paths, **options):
    """Ingest files as the CLI would, naming each source by its file name."""
    return ingest(format_name, [Source.of(p) for p in paths], Options(**options))


def stored() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in STORED}


def fails(format_name: str, *paths, **options) -> IngestFailed:
    """Ingest that must fail and store nothing; returns the failure."""
    before = stored()
    with pytest.raises(IngestFailed) as info:
        load(format_name, *paths, **options)
    assert stored() == before
    return info.value


def fixture(tmp_path: Path, name: str) -> Path:
    """A copy of a project fixture in tmp_path, so tests may edit it."""
    target = tmp_path / name
    shutil.copy(FIXTURES / name, target)
    return target


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def fixture_records(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line.strip()]


@pytest.fixture
def instances():
    load("octobench-instances", FIXTURES / "instances.jsonl")


# instances ----------------------------------------------------------------------------
def test_it_stores_instances_and_every_check_with_exact_counts():
    report = load("octobench-instances", FIXTURES / "instances.jsonl")

    assert Instance.objects.count() == 3
    assert ChecklistItem.objects.count() == 14
    assert report.counts["instances"]["created"] == 3
    assert report.counts["checklist items"]["created"] == 14
    benchmark = Benchmark.objects.get()
    assert (benchmark.slug, benchmark.kind) == ("octobench", "checklist")
    alpha = Instance.objects.get(external_id="oct-alpha")
    assert (alpha.primary_category, alpha.scaffold, alpha.scaffold_version) == (
        "Agents.md/Claude.md",
        "claudecode",
        "2.0.69",
    )
    assert Instance.objects.get(external_id="oct-beta").scaffold == "kilo-dev"
    assert alpha.spec["user_query"] == ["请解释 partition 函数 🙂"]


def test_it_normalises_categories_and_keeps_the_original_and_unknown_names(instances):
    pairs = set(ChecklistItem.objects.values_list("category", "category_original"))

    assert pairs == {
        ("System Prompt", "SP"),
        ("User Query", "User query"),
        ("Agents.md/Claude.md", "CLAUDE.md"),
        ("testing", "testing"),
        ("Tool Schema", "Tool schema"),
        ("System Prompt", "System Prompt"),
        ("User Query", "UQ"),
        ("Memory", "Memory bank (project)"),
        ("Skill.md", "skill"),
        ("System Reminder", "System reminder"),
        ("Agents.md/Claude.md", "Agents.md"),
        ("Mystery Source", "Mystery Source"),
    }
    # every check in the file is an item, unknown categories included
    expected = Counter(
        normalise_category(c)
        for r in fixture_records("instances.jsonl")
        for c, g in r["checklist"].items()
        for _ in g["checks"]
    )
    assert Counter(ChecklistItem.objects.values_list("category", flat=True)) == expected
    item = ChecklistItem.objects.get(instance__external_id="oct-alpha", key="TS-1")
    assert (item.check_type, item.conditional, item.position) == ("format", True, 6)


def test_it_reports_nothing_changed_on_a_second_import(instances):
    ids = set(ChecklistItem.objects.values_list("id", flat=True))

    report = load("octobench-instances", FIXTURES / "instances.jsonl")

    assert report.total("created") == 0 and report.total("updated") == 0
    assert report.counts["instances"]["unchanged"] == 3
    assert "nothing changed" in report.summary()
    assert set(ChecklistItem.objects.values_list("id", flat=True)) == ids


def test_it_updates_a_corrected_file_in_place(instances, tmp_path):
    alpha_pk = Instance.objects.get(external_id="oct-alpha").pk
    sp1_pk = ChecklistItem.objects.get(instance_id=alpha_pk, key="SP-1").pk
    records = fixture_records("instances.jsonl")
    alpha = records[0]
    alpha["checklist"]["SP"]["checks"][0]["description"] = "Answers in Chinese"
    alpha["checklist"]["testing"]["checks"] = [{"check_id": "T-2", "description": "Runs the new tests"}]
    path = write(tmp_path, "instances.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))

    report = load("octobench-instances", path)

    assert report.counts["instances"] == {"updated": 1, "unchanged": 2}
    assert report.counts["checklist items"]["created"] == 1
    assert report.counts["checklist items"]["removed"] == 1
    assert Instance.objects.get(external_id="oct-alpha").pk == alpha_pk
    sp1 = ChecklistItem.objects.get(instance_id=alpha_pk, key="SP-1")
    assert (sp1.pk, sp1.description) == (sp1_pk, "Answers in Chinese")
    assert set(ChecklistItem.objects.filter(instance_id=alpha_pk).values_list("key", flat=True)) == {
        "SP-1",
        "SP-2",
        "UQ-1",
        "MD-1",
        "T-2",
        "TS-1",
    }
    assert ChecklistItem.objects.count() == 14


# trajectories -------------------------------------------------------------------------
def test_it_merges_a_merged_trajectory_main_thread_first(instances):
    report = load("octobench-trajectories", FIXTURES / "trajectory_merged.jsonl")

    assert report.counts["trajectories"]["created"] == 1
    attempt = Attempt.objects.get()
    assert (attempt.run.label, attempt.run.model.name, attempt.instance.external_id) == (
        "model-x",
        "model-x",
        "oct-alpha",
    )
    threads = stored_threads(attempt.id)
    assert [t["meta"]["thread"] for t in threads] == ["main", "sub-agent 1"]
    main, sub = threads
    assert [t["name"] for t in main["tools"]] == ["Read", "Grep"]
    assert sub["tools"] == []
    assert [m["role"] for m in main["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert main["messages"][2]["reasoning"] == "Read the file first."
    assert main["messages"][4]["tool_calls"][1] == {
        "id": "call-g1",
        "name": "Grep",
        "arguments": {"pattern": "partition"},
    }
    assert attempt.trajectory.message_count == 11
    assert attempt.assistant_turns == 3
    assert attempt.response == "partition 把链表分成两部分。"
    _assert_every_result_follows_its_call(main["messages"])
    grep_result = main["messages"][5]
    assert (grep_result["tool_call_id"], grep_result["tool_name"]) == ("call-g1", "Grep")


def _assert_every_result_follows_its_call(messages: list[dict]) -> None:
    calls: dict[str, str] = {}
    results = 0
    for message in messages:
        for call in message.get("tool_calls", []):
            calls[call["id"]] = call["name"]
        if message["role"] == "tool":
            results += 1
            assert message["tool_call_id"] in calls, message
            assert message["tool_name"] == calls.pop(message["tool_call_id"])
    assert results > 0 and not calls


def test_it_merges_a_raw_proxy_log_into_threads(instances):
    report = load("octobench-trajectories", FIXTURES / "trajectory_raw.jsonl")

    assert report.counts["trajectories"]["created"] == 1
    attempt = Attempt.objects.get()
    assert (attempt.instance.external_id, attempt.run.model.name) == ("oct-beta", "model-y")
    threads = stored_threads(attempt.id)
    assert [t["meta"]["thread"] for t in threads] == ["main", "sub-agent 1"]
    main, sub = threads
    assert [t["name"] for t in main["tools"]] == ["Read", "Bash"]
    assert [m["role"] for m in main["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert [m["role"] for m in sub["messages"]] == ["system", "user", "assistant"]  # the duplicate call adds nothing
    assert [m.get("reasoning") for m in main["messages"] if m["role"] == "assistant"] == [
        "Look at the test first.",
        "Run it.",
        "Fixed f.",
    ]
    assert sub["messages"][2] == {"role": "assistant", "content": "tests/test_x.py", "reasoning": "ls tests"}
    _assert_every_result_follows_its_call(main["messages"])
    assert main["messages"][3]["content"] == "def test_x(): assert f() == 2"
    assert main["messages"][5]["is_error"] is True
    assert attempt.assistant_turns == 3
    assert attempt.response == "Done: f() now returns 2. 完成"


def test_it_stores_a_trajectory_once_on_re_import(instances):
    load("octobench-trajectories", FIXTURES / "trajectory_raw.jsonl")

    report = load("octobench-trajectories", FIXTURES / "trajectory_raw.jsonl")

    assert report.total("created") == 0 and report.total("updated") == 0
    assert "nothing changed" in report.summary()
    assert (Attempt.objects.count(), Trajectory.objects.count()) == (1, 1)


def test_it_replaces_a_trajectory_in_place_when_the_log_changes(instances, tmp_path):
    load("octobench-trajectories", FIXTURES / "trajectory_merged.jsonl")
    trajectory_pk = Trajectory.objects.get().pk
    lines = (
        (FIXTURES / "trajectory_merged.jsonl").read_text().replace("partition 把链表分成两部分。", "Corrected answer.")
    )

    report = load("octobench-trajectories", write(tmp_path, "trajectory_merged.jsonl", lines))

    assert report.counts["trajectories"] == {"updated": 1}
    assert Trajectory.objects.get().pk == trajectory_pk
    assert Attempt.objects.get().response == "Corrected answer."


# scores -------------------------------------------------------------------------------
def test_it_stores_one_verdict_per_scored_check_and_rolls_them_up(instances):
    report = load("octobench-scores", FIXTURES / "scores.json", model="model-x", judge="judge-a")

    assert report.counts["verdicts"]["created"] == 11
    # evaluate.py passes a check only when its result is exactly "success": "not_applicable" counts as failed
    assert Counter(Verdict.objects.values_list("result", flat=True)) == {"pass": 7, "fail": 4}
    alpha = AttemptRollup.objects.get(instance__external_id="oct-alpha")
    assert (alpha.n_items, alpha.n_applicable, alpha.n_passed, alpha.n_unrecognised) == (6, 6, 3, 1)
    beta = AttemptRollup.objects.get(instance__external_id="oct-beta")
    assert (beta.n_items, beta.n_applicable, beta.n_passed, beta.n_unrecognised) == (5, 5, 4, 1)
    memory = GroupRollup.objects.get(attempt=beta.attempt, dimension="category", value="Memory")
    assert (memory.n_applicable, memory.n_passed) == (1, 0)
    assert JudgeReport.objects.get(attempt=beta.attempt).unrecognised == {"MEM-1": "not_applicable"}
    verdict = Verdict.objects.get(item__key="SP-2", item__instance__external_id="oct-alpha")
    assert (verdict.result, verdict.reasoning, verdict.judge.name) == ("fail", "used 🙂", "judge-a")


def test_it_attaches_scores_to_the_attempt_of_the_trajectory(instances):
    load("octobench-trajectories", FIXTURES / "trajectory_merged.jsonl")
    load("octobench-scores", FIXTURES / "scores.json", model="model-x", judge="judge-a")

    assert Run.objects.count() == 1
    assert Attempt.objects.count() == 2  # oct-alpha (with trajectory) and oct-beta (verdicts only)
    assert Verdict.objects.filter(attempt__trajectory__isnull=False).count() == 6


def test_it_reports_nothing_changed_when_scores_are_imported_again(instances):
    load("octobench-scores", FIXTURES / "scores.json", model="model-x", judge="judge-a")
    rollups = list(AttemptRollup.objects.values_list("attempt_id", "judge_id", "n_items", "n_applicable", "n_passed"))

    report = load("octobench-scores", FIXTURES / "scores.json", model="model-x", judge="judge-a")

    assert report.counts["verdicts"] == {"unchanged": 11}
    assert "nothing changed" in report.summary()
    assert Verdict.objects.count() == 11
    assert (
        list(AttemptRollup.objects.values_list("attempt_id", "judge_id", "n_items", "n_applicable", "n_passed"))
        == rollups
    )


def test_it_updates_a_corrected_verdict_and_its_rollup(instances, tmp_path):
    load("octobench-scores", FIXTURES / "scores.json", model="model-x", judge="judge-a")
    verdict_pk = Verdict.objects.get(item__key="SP-2", item__instance__external_id="oct-alpha").pk
    text = (
        (FIXTURES / "scores.json")
        .read_text()
        .replace(
            '"result": "fail",\n              "reasoning": "used 🙂"',
            '"result": "success",\n              "reasoning": "no emoji"',
        )
    )
    assert "no emoji" in text

    report = load("octobench-scores", write(tmp_path, "scores.json", text), model="model-x", judge="judge-a")

    assert report.counts["verdicts"] == {"updated": 1, "unchanged": 10}
    verdict = Verdict.objects.get(pk=verdict_pk)
    assert (verdict.result, verdict.reasoning) == ("pass", "no emoji")
    alpha = AttemptRollup.objects.get(instance__external_id="oct-alpha")
    assert (alpha.n_applicable, alpha.n_passed) == (6, 4)


def test_it_keeps_judges_apart(instances):
    load("octobench-scores", FIXTURES / "scores.json", model="model-x", judge="judge-a")
    load("octobench-scores", FIXTURES / "scores.json", model="model-x", judge="judge-b")

    assert Verdict.objects.count() == 22
    assert AttemptRollup.objects.count() == 4


# bad input: a clear message naming file:line, and nothing stored ------------------------
def test_it_rejects_a_truncated_last_line(tmp_path):
    good = (FIXTURES / "instances.jsonl").read_text().splitlines()
    path = write(tmp_path, "instances.jsonl", good[0] + "\n" + good[1] + "\n" + good[2][: len(good[2]) // 2])

    failure = fails("octobench-instances", path)

    assert failure.total == 1
    assert str(failure.problems[0]).startswith("instances.jsonl:3: not valid JSON")
    assert "truncated" in str(failure)
    assert "nothing was stored" in str(failure)


def test_it_rejects_a_line_that_is_not_json(tmp_path):
    good = (FIXTURES / "instances.jsonl").read_text().splitlines()
    path = write(tmp_path, "instances.jsonl", good[0] + "\nthis is not json\n" + good[1] + "\n")

    failure = fails("octobench-instances", path)

    assert [str(p) for p in failure.problems] == ["instances.jsonl:2: not valid JSON: Expecting value at column 1"]


def test_it_rejects_a_record_missing_instance_id(tmp_path):
    records = fixture_records("instances.jsonl")
    del records[1]["instance_id"]
    path = write(tmp_path, "instances.jsonl", "".join(json.dumps(r) + "\n" for r in records))

    failure = fails("octobench-instances", path)

    assert [str(p) for p in failure.problems] == ["instances.jsonl:2: missing required field 'instance_id'"]


def test_it_rejects_a_check_type_that_is_not_short_text(tmp_path):
    # found by fuzzing on PostgreSQL: a dict check_type became its repr, too long for the column, and the
    # database refused the row half-way through the import
    records = fixture_records("instances.jsonl")
    records[2]["checklist"]["System reminder"]["checks"][0]["check_type"] = {"nested": ["x"] * 40}
    records[1]["checklist"]["UQ"]["checks"][0]["check_type"] = "c" * 101
    path = write(tmp_path, "instances.jsonl", "".join(json.dumps(r) + "\n" for r in records))

    failure = fails("octobench-instances", path)

    assert [str(p) for p in failure.problems] == [
        "instances.jsonl:2: check of category 'UQ': 'check_type' is 101 characters; at most 100 fit",
        "instances.jsonl:3: check 'SR-1' of category 'System reminder': 'check_type' should be text",
    ]
    assert stored()["ChecklistItem"] == 0 and stored()["Instance"] == 0


def test_any_text_too_long_for_its_column_is_refused_before_anything_is_written(tmp_path):
    records = fixture_records("instances.jsonl")
    records[0]["scaffold"] = {"name": "s" * 150, "version": "1"}  # no format check covers it: the net does
    path = write(tmp_path, "instances.jsonl", "".join(json.dumps(r) + "\n" for r in records))

    failure = fails("octobench-instances", path)

    assert len(failure.problems) == 1
    assert "scaffold is 150 characters long; at most 100 fit" in str(failure.problems[0])
    assert stored()["Instance"] == 0


def test_it_rejects_a_duplicate_instance(tmp_path):
    line = (FIXTURES / "instances.jsonl").read_text().splitlines()[0]

    failure = fails("octobench-instances", write(tmp_path, "instances.jsonl", f"{line}\n{line}\n"))

    assert (
        str(failure.problems[0]) == "instances.jsonl:2: instance 'oct-alpha' appears twice (first at instances.jsonl:1)"
    )


def test_it_keeps_a_check_the_instance_does_not_have_and_counts_it_as_evaluate_py_does(instances, tmp_path):
    # a judge may name a check the checklist lacks: evaluate.py counts it (here a success) all the same
    text = (FIXTURES / "scores.json").read_text().replace('"check_id": "UQ-2"', '"check_id": "UQ-99"')

    load("octobench-scores", write(tmp_path, "scores.json", text), model="model-x", judge="judge-a")

    beta = AttemptRollup.objects.get(instance__external_id="oct-beta")
    assert (beta.n_items, beta.n_applicable, beta.n_passed) == (4, 5, 4)
    report = JudgeReport.objects.get(attempt=beta.attempt)
    assert report.extra_checks == [
        {"check_id": "UQ-99", "category": "UQ", "result": "success", "reasoning": "", "why": "not in the checklist"}
    ]
    assert (report.n_applicable_extra, report.n_passed_extra) == (1, 1)


def test_it_rejects_scores_of_an_unknown_instance(instances, tmp_path):
    text = (FIXTURES / "scores.json").read_text().replace('"oct-beta"', '"oct-nowhere"')

    failure = fails("octobench-scores", write(tmp_path, "scores.json", text), model="model-x", judge="judge-a")

    assert [str(p) for p in failure.problems] == ["scores.json:60: unknown instance 'oct-nowhere'"]


def test_it_rejects_a_trajectory_of_an_unknown_instance(instances, tmp_path):
    text = (FIXTURES / "trajectory_raw.jsonl").read_text().replace('"oct-beta"', '"oct-nowhere"')

    failure = fails("octobench-trajectories", write(tmp_path, "trajectory_raw.jsonl", text))

    assert [str(p) for p in failure.problems] == [
        "trajectory_raw.jsonl:1: session 'oct-nowhere' is not an instance of benchmark 'octobench'"
    ]


@pytest.mark.parametrize(
    "fixture_name, model, message",
    [
        ("trajectory_raw.jsonl", {"name": "model-y"}, "field 'request_body.model' should be text (the model's name)"),
        ("trajectory_merged.jsonl", ["model-x"], "field 'meta.model' should be text (the model's name)"),
        (
            "trajectory_merged.jsonl",
            "m" * 201,
            "field 'meta.model' is 201 characters; a model's name holds at most 200",
        ),
    ],
)
def test_a_trajectory_whose_model_is_not_a_name_is_refused_at_its_line(
    instances, tmp_path, fixture_name, model, message
):
    records = fixture_records(fixture_name)
    for record in records:
        (record["request_body"] if "request_body" in record else record["meta"])["model"] = model
    path = write(tmp_path, fixture_name, "".join(json.dumps(r) + "\n" for r in records))

    failure = fails("octobench-trajectories", path)

    assert str(failure.problems[0]) == f"{fixture_name}:1: {message}"
    assert Run.objects.count() == 0


def test_it_rejects_results_before_their_benchmark_exists():
    failure = fails("octobench-scores", FIXTURES / "scores.json", model="model-x", judge="judge-a")

    assert "benchmark 'octobench' does not exist" in str(failure)


@pytest.mark.parametrize("format_name", ["octobench-instances", "octobench-trajectories", "octobench-scores"])
def test_it_rejects_an_empty_file(instances, tmp_path, format_name):
    path = write(tmp_path, "empty.jsonl", "")

    failure = fails(format_name, path, model="model-x", judge="judge-a")

    assert [str(p) for p in failure.problems] == ["empty.jsonl: the file is empty"]


def test_it_rejects_a_file_of_blank_lines(tmp_path):
    failure = fails("octobench-instances", write(tmp_path, "blank.jsonl", "\n\n  \n"))

    assert [str(p) for p in failure.problems] == ["blank.jsonl: the file holds no records"]


def test_it_rejects_scores_given_as_instances():
    failure = fails("octobench-instances", FIXTURES / "scores.json")

    assert [str(p) for p in failure.problems] == [
        "scores.json:1: this is one JSON document spread over many lines, not JSON Lines "
        "(one record per line): is the format right?"
    ]


def test_it_rejects_a_one_line_scores_document_given_as_instances(tmp_path):
    text = json.dumps(json.loads((FIXTURES / "scores.json").read_text())) + "\n"

    failure = fails("octobench-instances", write(tmp_path, "wrong.jsonl", text))

    assert [str(p) for p in failure.problems] == [
        "wrong.jsonl:1: this looks like an OctoBench scores file, not instances"
    ]


def test_it_rejects_instances_given_as_trajectories(instances):
    failure = fails("octobench-trajectories", FIXTURES / "instances.jsonl")

    assert (
        str(failure.problems[0]) == "instances.jsonl:1: this looks like an OctoBench instance, not a trajectory record"
    )
    assert failure.total == 3


def test_it_rejects_a_trajectory_given_as_instances():
    failure = fails("octobench-instances", FIXTURES / "trajectory_merged.jsonl")

    assert str(failure.problems[0]) == (
        "trajectory_merged.jsonl:1: this looks like a trajectory or scores record, not an OctoBench instance"
    )


def test_it_rejects_instances_given_as_scores(instances):
    failure = fails("octobench-scores", FIXTURES / "instances.jsonl", model="model-x", judge="judge-a")

    assert any(str(p).startswith("instances.jsonl:2: extra data after the JSON document") for p in failure.problems)


def test_it_lists_fifty_problems_and_counts_the_rest(tmp_path):
    path = write(tmp_path, "instances.jsonl", "".join(f"not json {n}\n" for n in range(80)))

    failure = fails("octobench-instances", path)

    assert failure.total == 80
    assert len(failure.problems) == 50
    assert str(failure.problems[-1]).startswith("instances.jsonl:50: ")
    assert "(and 30 more)" in str(failure)


def test_it_lists_every_problem_of_several_files_and_stores_none_of_them(tmp_path):
    good = fixture(tmp_path, "instances.jsonl")
    bad = write(tmp_path, "more.jsonl", '{"instance_id": "oct-delta"}\n')

    failure = fails("octobench-instances", good, bad)

    assert [str(p) for p in failure.problems] == ["more.jsonl:1: missing required field 'checklist'"]


def test_the_cli_names_file_and_line_and_stores_nothing(tmp_path):
    path = write(tmp_path, "instances.jsonl", "{}\n")

    with pytest.raises(CommandError) as info:
        call_command("ingest", "octobench-instances", str(path), "--no-progress")

    assert f"{path}:1: missing required field 'instance_id'" in str(info.value)
    assert Benchmark.objects.count() == 0


def test_the_cli_prints_the_counts(capsys):
    call_command("ingest", "octobench-instances", str(FIXTURES / "instances.jsonl"), "--no-progress")

    assert "created 18" in capsys.readouterr().out  # benchmark + 3 instances + 14 items


# any text ------------------------------------------------------------------------------
def test_it_stores_text_in_any_language_and_replaces_what_databases_reject(tmp_path):
    description = "中文 emoji 🧪👩🏽‍💻 RTL \u202eevil\u202c עברית العربية lone \ud800 nul \u0000 end"
    record = {
        "instance_id": "oct-unicode-\u202e",
        "user_query": ["\u0000", "\udfff\ud83d"],
        "category": "SP\u0000",
        "checklist": {
            "用户\u0000查询": {
                "description": "\ud800",
                "checks": [{"check_id": "U-1", "description": description, "check_type": "τύπος"}],
            }
        },
    }
    path = write(tmp_path, "instances.jsonl", json.dumps(record) + "\n")  # ASCII with \u escapes
    assert "\\ud800" in path.read_text() and "\\u0000" in path.read_text()

    load("octobench-instances", path)

    item = ChecklistItem.objects.get()
    assert item.description == description.replace("\ud800", "\ufffd").replace("\u0000", "\ufffd")
    assert item.category_original == "用户\ufffd查询"
    assert item.check_type == "τύπος"
    instance = Instance.objects.get()
    assert instance.external_id == "oct-unicode-\u202e"
    assert instance.spec["user_query"] == ["\ufffd", "\ufffd\ufffd"]
    assert instance.primary_category == "SP\ufffd"
    assert instance.spec["checklist_descriptions"] == {"用户\ufffd查询": "\ufffd"}


def test_it_rejects_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "instances.jsonl"
    path.write_bytes(b'{"instance_id": "\xff\xfe"}\n')

    failure = fails("octobench-instances", path)

    assert str(failure.problems[0]) == "instances.jsonl:1: not valid UTF-8 (byte 18 of the line)"


# a large file ---------------------------------------------------------------------------
@pytest.mark.slow
def test_it_streams_a_200_mb_raw_log_without_loading_it(instances, tmp_path):
    """A raw proxy log repeats the whole conversation in every call; only the longest call
    per thread is kept, so memory stays near the size of one line."""
    bulk = "x" * (256 * 1024)
    line_template = json.dumps(
        {
            "session_id": "oct-beta",
            "request_time": 0,
            "request_body": {
                "model": "model-big",
                "system": "main",
                "tools": [{"name": "Bash"}],
                "messages": [
                    {"role": "user", "content": "go"},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "tu", "name": "Bash", "input": {}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu", "content": bulk}]},
                ],
            },
            "response_body": {"content": [{"type": "text", "text": "done"}]},
        }
    )
    path = tmp_path / "big_raw.jsonl"
    with open(path, "w") as handle:
        for n in range(800):
            handle.write(line_template.replace('"request_time": 0', f'"request_time": {n}', 1) + "\n")
    size = path.stat().st_size
    assert size > 200 * 1024 * 1024

    started = time.monotonic()
    tracemalloc.start()
    try:
        report = load("octobench-trajectories", path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert report.counts["trajectories"]["created"] == 1
    assert peak < 16 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB for a {size / 2**20:.0f} MiB file"
    assert time.monotonic() - started < 60
    main = stored_threads(Trajectory.objects.get().attempt_id)[0]
    assert [m["role"] for m in main["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert len(main["messages"][3]["content"]) == len(bulk)


# the shared samples (skipped on a fresh clone) ----------------------------------------------
@pytest.mark.shared_data
def test_the_shared_instances_give_one_item_per_listed_check(shared_data):
    path = shared_data / "octobench" / "instances.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    n_checks = sum(len(group["checks"]) for r in records for group in r["checklist"].values())

    report = load("octobench-instances", path)

    assert Instance.objects.count() == len(records) == 48
    assert ChecklistItem.objects.count() == n_checks
    assert report.counts["checklist items"]["created"] == n_checks
    originals = {c for r in records for c in r["checklist"]}
    assert set(ChecklistItem.objects.values_list("category_original", flat=True)) == originals
    assert "testing" in set(ChecklistItem.objects.values_list("category", flat=True))


@pytest.mark.shared_data
def test_the_shared_trajectories_and_scores_ingest(shared_data):
    folder = shared_data / "octobench"
    load("octobench-instances", folder / "instances.jsonl")

    load("octobench-trajectories", folder / "trajectory_merged.jsonl", run="merged")
    load("octobench-trajectories", folder / "trajectory_raw.jsonl", run="raw")
    load("octobench-scores", folder / "scores.json", run="merged", model="claude-sonnet-4-5-20250929", judge="judge-1")

    merged = stored_threads(Trajectory.objects.get(attempt__run__label="merged").attempt_id)
    assert [t["meta"]["thread"] for t in merged] == ["main", "sub-agent 1"]
    assert merged[0]["tools"]
    raw = stored_threads(Trajectory.objects.get(attempt__run__label="raw").attempt_id)
    assert raw[0]["tools"] and raw[0]["meta"]["thread"] == "main"
    for trajectory in (merged, raw):
        _assert_every_result_follows_its_call(trajectory[0]["messages"])
    assert any(m.get("reasoning") for m in raw[0]["messages"])

    scores = json.loads((folder / "scores.json").read_text())
    for result in scores["results"]:
        checks = [c for g in result["eval_result"].values() for c in g["checks"]]
        rollup = AttemptRollup.objects.get(instance__external_id=result["instance_id"], judge__name="judge-1")
        assert rollup.run.label == "merged"
        assert rollup.n_items == len(checks)
        assert rollup.n_applicable == sum(c["result"] in ("success", "fail") for c in checks)
        assert rollup.n_passed == sum(c["result"] == "success" for c in checks)
        by_category = Counter()
        for category, group in result["eval_result"].items():
            by_category[normalise_category(category)] += sum(c["result"] == "success" for c in group["checks"])
        stored_rows = dict(
            GroupRollup.objects.filter(attempt=rollup.attempt, dimension="category").values_list("value", "n_passed")
        )
        assert stored_rows == dict(by_category)
