"""GuideBench ingest: category task lists and predictions scored as the reference scorer."""

import json
import shutil
from pathlib import Path

import pytest

from runs.ingest import IngestFailed, Options, Source, ingest
from runs.ingest.guidebench import category_from_name, task_external_id
from runs.models import Attempt, AttemptRollup, Benchmark, ChecklistItem, Instance, Judge, JudgeKind, Run, Verdict
from runs.scoring.choice import choice_task_scored

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "guidebench"
CATEGORIES = ("chat", "math", "price", "relevance")
pytestmark = pytest.mark.django_db


def _tasks(*names, **options):
    sources = [Source.of(FIXTURES / f"{n}_tasks.json") for n in names]
    return ingest("guidebench-tasks", sources, Options(**options))


def _predictions(*names, **options):
    options.setdefault("model", "model-a")
    sources = [Source.of(FIXTURES / "predictions" / f"{n}_tasks.json") for n in names]
    return ingest("guidebench-predictions", sources, Options(**options))


def _write(tmp_path: Path, name: str, text: str) -> Source:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return Source.of(path)


def _problems(excinfo) -> str:
    return "\n".join(str(p) for p in excinfo.value.problems)


def _load(name: str, predictions: bool = False) -> list:
    folder = FIXTURES / "predictions" if predictions else FIXTURES
    return json.loads((folder / f"{name}_tasks.json").read_text(encoding="utf-8"))


# file names ----------------------------------------------------------------------------
def test_it_takes_the_category_from_the_file_name():
    assert category_from_name("chat_tasks.json") == "chat"
    assert category_from_name("out/4o_answer/relevance_tasks.json") == "relevance"
    assert category_from_name("audit.json") == "audit"
    assert category_from_name("legal_v2_tasks.json") == "legal_v2"
    assert category_from_name("Chat_extra.json") == "Chat"
    assert category_from_name("_tasks.json") == ""


# tasks ---------------------------------------------------------------------------------
def test_it_ingests_every_task_with_one_answer_item():
    report = _tasks(*CATEGORIES)

    benchmark = Benchmark.objects.get(slug="guidebench")
    assert benchmark.kind == "choice"
    assert Instance.objects.filter(benchmark=benchmark).count() == 10
    assert ChecklistItem.objects.filter(instance__benchmark=benchmark, key="answer").count() == 10
    assert report.counts["instances"]["created"] == 10
    by_category = {c: Instance.objects.filter(primary_category=c).count() for c in CATEGORIES}
    assert by_category == {"chat": 3, "math": 2, "price": 3, "relevance": 2}
    task = _load("chat")[1]
    instance = Instance.objects.get(external_id=task_external_id("chat", task))
    assert instance.spec == task
    assert instance.external_id.startswith("chat-") and len(instance.external_id) == len("chat-") + 12
    item = instance.items.get()
    assert (item.category, item.check_type, item.details["ground_truth"], item.details["kind"]) == (
        "chat",
        "exact-match",
        "D",
        "option",
    )
    price_item = ChecklistItem.objects.filter(instance__primary_category="price").first()
    assert price_item.details["missing_counts_as"] == -1


def test_it_keeps_chinese_emoji_and_rtl_text_as_written():
    _tasks("chat")

    contexts = set(Instance.objects.values_list("spec__Context", flat=True))
    assert "[user] مرحبا، أريد استرداد طلبي [assistant] Sure, refunded right away." in contexts
    assert "【user】我想订个航班 🛫【assistant】好的，CA1234航班于上午10点起飞。" in contexts


def test_it_changes_nothing_on_a_second_import():
    _tasks(*CATEGORIES)
    report = _tasks(*CATEGORIES)

    assert report.total("created") == 0 and report.total("updated") == 0
    assert report.counts["instances"]["unchanged"] == 10
    assert Instance.objects.count() == 10 and ChecklistItem.objects.count() == 10


def test_it_accepts_any_prefix_as_a_category_and_scores_it_by_its_ground_truth(tmp_path):
    tasks = _load("chat")[:1] + _load("price")[:1]
    source = _write(tmp_path, "legal_tasks.json", json.dumps(tasks, ensure_ascii=False))

    ingest("guidebench-tasks", [source], Options())

    kinds = sorted(ChecklistItem.objects.filter(category="legal").values_list("details__kind", flat=True))
    assert kinds == ["answer", "option"]
    assert set(Instance.objects.values_list("primary_category", flat=True)) == {"legal"}


def test_it_gives_identical_copies_of_a_task_their_own_ids(tmp_path):
    task = _load("math")[0]
    source = _write(tmp_path, "math_tasks.json", json.dumps([task, task], ensure_ascii=False))

    ingest("guidebench-tasks", [source], Options())

    ids = sorted(Instance.objects.values_list("external_id", flat=True))
    assert ids == [task_external_id("math", task), task_external_id("math", task) + "~2"]


def test_it_keeps_a_corrected_task_as_a_new_instance_and_reports_the_old_one(tmp_path):
    _tasks("math")
    tasks = _load("math")
    tasks[1]["Groundtruth"]["ReferenceAnswer"] = "521"
    source = _write(tmp_path, "math_tasks.json", json.dumps(tasks, ensure_ascii=False))

    report = ingest("guidebench-tasks", [source], Options())

    assert report.counts["instances"] == {"unchanged": 1, "created": 1, "kept (not in this file)": 1}
    assert Instance.objects.filter(primary_category="math").count() == 3


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("chat_tasks.json", "", "chat_tasks.json: the file is empty"),
        ("chat_tasks.json", "[]", "chat_tasks.json: the file holds no tasks"),
        ("chat_tasks.json", '[{"Instruction": "x", "Guidelines": [], "Con', "chat_tasks.json:1: not valid JSON"),
        ("chat_tasks.json", "this is not json", "chat_tasks.json:1: expected a JSON object or list"),
        ("chat_tasks.json", '[\n  "a string"\n]', "chat_tasks.json:2: a task should be a JSON object"),
        ("_tasks.json", "[]", "_tasks.json: the file name names no category"),
        (
            "chat_tasks.json",
            '{"config": {}, "data": []}',
            "chat_tasks.json:1: expected a JSON list of tasks, found an object",
        ),
    ],
)
def test_it_rejects_a_bad_tasks_file(tmp_path, name, text, expected):
    source = _write(tmp_path, name, text)

    with pytest.raises(IngestFailed) as excinfo:
        ingest("guidebench-tasks", [source], Options())

    assert expected in _problems(excinfo)
    assert Instance.objects.count() == 0 and Benchmark.objects.count() == 0


def test_it_rejects_a_truncated_file_and_stores_none_of_it(tmp_path):
    text = (FIXTURES / "chat_tasks.json").read_text(encoding="utf-8")
    source = _write(tmp_path, "chat_tasks.json", text[: len(text) - 40])

    with pytest.raises(IngestFailed) as excinfo:
        ingest("guidebench-tasks", [source], Options())

    assert "truncated" in _problems(excinfo)
    assert Instance.objects.count() == 0


def test_it_names_each_missing_field_with_its_line(tmp_path):
    tasks = _load("chat")
    del tasks[1]["Context"]
    tasks[2]["Groundtruth"] = {"AnswerAnalysis": "no answer"}
    source = _write(tmp_path, "chat_tasks.json", json.dumps(tasks, ensure_ascii=False, indent=2))
    lines = source.path.read_text(encoding="utf-8").splitlines()
    starts = [n for n, line in enumerate(lines, 1) if line == "  {"]

    with pytest.raises(IngestFailed) as excinfo:
        ingest("guidebench-tasks", [source], Options())

    problems = _problems(excinfo)
    assert f"chat_tasks.json:{starts[1]}: missing required field 'Context'" in problems
    assert f"chat_tasks.json:{starts[2]}: missing required field 'Groundtruth.OptimalOption'" in problems
    assert Instance.objects.count() == 0


def test_it_rejects_a_field_of_the_wrong_type(tmp_path):
    tasks = _load("price")
    tasks[0]["Guidelines"] = "rule_1: something"
    source = _write(tmp_path, "price_tasks.json", json.dumps(tasks, ensure_ascii=False))

    with pytest.raises(IngestFailed) as excinfo:
        ingest("guidebench-tasks", [source], Options())

    assert "field 'Guidelines' should be list, found a string" in _problems(excinfo)


def test_it_rejects_an_octobench_instances_file_given_as_tasks(tmp_path):
    line = {"instance_id": "t1", "user_query": ["fix it"], "checklist": {"SP": {"checks": []}}}
    source = _write(tmp_path, "instances.jsonl", json.dumps(line) + "\n" + json.dumps(line) + "\n")

    with pytest.raises(IngestFailed) as excinfo:
        ingest("guidebench-tasks", [source], Options())

    assert "instances.jsonl:1: expected a JSON list of tasks, found an object (this looks like OctoBench" in _problems(
        excinfo
    )


def test_it_refuses_a_benchmark_of_another_kind():
    Benchmark.objects.create(slug="octobench", name="OctoBench", kind="checklist")

    with pytest.raises(IngestFailed) as excinfo:
        _tasks("chat", benchmark="octobench")

    assert "benchmark 'octobench' is a checklist benchmark" in _problems(excinfo)


# predictions ---------------------------------------------------------------------------
def test_it_scores_predictions_as_the_reference_scorer():
    _tasks(*CATEGORIES)
    report = _predictions(*CATEGORIES)

    run = Run.objects.get(label="model-a")
    judge = Judge.objects.get(name="exact-match")
    assert judge.kind == JudgeKind.CHECKER
    assert report.counts["attempts"]["created"] == 10
    assert report.counts["verdicts"]["created"] == 10

    def outcome(category, n):
        task = _load(category, predictions=True)[n]
        return Attempt.objects.get(run=run, instance__external_id=task_external_id(category, task)).outcome

    assert (
        outcome("chat", 2)["answer"],
        outcome("chat", 2)["unanswered"],
        outcome("chat", 2)["unanswered_reason"],
    ) == ("E", True, "unparsable")
    assert outcome("chat", 2)["cleaned_response"] == "I think the answer is D"
    assert outcome("chat", 1)["analysis"] == "不应告知价格 🤔"
    assert (outcome("chat", 1)["answer"], outcome("chat", 1)["correct"]) == ("C", False)
    assert (
        outcome("price", 1)["answer"],
        outcome("price", 1)["correct"],
        outcome("price", 1)["normalised"]["correct"],
    ) == ("0", False, True)
    assert (outcome("price", 2)["answer"], outcome("price", 2)["unanswered_reason"]) == (-1, "empty")
    assert (outcome("math", 0)["correct"], outcome("math", 0)["normalised"]["correct"]) == (False, True)
    assert (outcome("relevance", 1)["answer"], outcome("relevance", 1)["unanswered"]) == ("-1(No Result)", True)
    assert outcome("relevance", 1)["ground_truth"] == "0（不相关）"
    passed = sorted(Verdict.objects.filter(result="pass").values_list("attempt__instance__primary_category", flat=True))
    assert passed == ["chat", "math", "price", "relevance"]
    assert Verdict.objects.filter(judge=judge).count() == 10
    assert AttemptRollup.objects.filter(run=run).count() == 10
    assert AttemptRollup.objects.filter(run=run, n_passed=1).count() == 4


def test_it_stores_the_raw_answer_as_the_response():
    _tasks("price")
    _predictions("price")

    responses = set(Attempt.objects.values_list("response", flat=True))
    assert '{"CandidateAnswer": 1, "CandidateAnalysis": "同品"}' in responses


def test_it_agrees_with_the_pure_scorer_on_every_fixture_task():
    _tasks(*CATEGORIES)
    _predictions(*CATEGORIES)

    for category in CATEGORIES:
        for task in _load(category, predictions=True):
            attempt = Attempt.objects.get(instance__external_id=task_external_id(category, task))
            scored = choice_task_scored(category, task)
            assert attempt.outcome["answer"] == scored.answer
            assert attempt.verdicts.get().result == ("pass" if scored.correct else "fail")


def test_it_changes_nothing_when_predictions_are_imported_twice():
    _tasks(*CATEGORIES)
    _predictions(*CATEGORIES)
    report = _predictions(*CATEGORIES)

    assert report.total("created") == 0 and report.total("updated") == 0
    assert Attempt.objects.count() == 10 and Verdict.objects.count() == 10


def test_it_updates_a_corrected_prediction_in_place(tmp_path):
    _tasks("chat")
    _predictions("chat")
    tasks = _load("chat", predictions=True)
    tasks[1]["LLMAnswer"] = {"OptimalOption": "A", "AnswerAnalysis": "改正了"}
    folder = tmp_path / "fixed"
    folder.mkdir()
    source = _write(folder, "chat_tasks.json", json.dumps(tasks, ensure_ascii=False))

    report = ingest("guidebench-predictions", [source], Options(model="model-a"))

    assert report.counts["attempts"] == {"updated": 1, "unchanged": 2}
    assert report.counts["verdicts"] == {"updated": 1, "unchanged": 2}
    assert Attempt.objects.count() == 3
    assert Verdict.objects.filter(result="pass").count() == 2
    assert AttemptRollup.objects.filter(n_passed=1).count() == 2


def test_it_uses_the_judge_and_run_given():
    _tasks("math")
    _predictions("math", judge="strict", run="model-a-r2")

    assert Run.objects.get(label="model-a-r2").model.name == "model-a"
    assert Verdict.objects.filter(judge__name="strict").count() == 2


def test_it_adds_to_an_existing_run_without_model():
    _tasks("math", "price")
    _predictions("math", run="r1")
    _predictions("price", run="r1", model=None)

    assert Attempt.objects.filter(run__label="r1").count() == 5


def test_it_needs_a_model_or_an_existing_run():
    _tasks("math")

    with pytest.raises(IngestFailed) as excinfo:
        _predictions("math", model=None)
    assert "pass --model NAME" in _problems(excinfo)

    with pytest.raises(IngestFailed) as excinfo:
        _predictions("math", model=None, run="nope")
    assert "run 'nope' does not exist yet" in _problems(excinfo)


def test_it_needs_the_benchmark_first():
    with pytest.raises(IngestFailed) as excinfo:
        _predictions("math")

    assert "benchmark 'guidebench' does not exist" in _problems(excinfo)


def test_it_names_the_file_and_line_of_a_prediction_for_an_unknown_task(tmp_path):
    _tasks("math")
    tasks = _load("math", predictions=True)
    tasks[1]["Context"] += "（改过）"
    source = _write(tmp_path, "math_tasks.json", json.dumps(tasks, ensure_ascii=False, indent=2))
    line = [n for n, text in enumerate(source.path.read_text(encoding="utf-8").splitlines(), 1) if text == "  {"][1]

    with pytest.raises(IngestFailed) as excinfo:
        ingest("guidebench-predictions", [source], Options(model="model-a"))

    assert f"math_tasks.json:{line}: task 'math-" in _problems(excinfo)
    assert "was never ingested" in _problems(excinfo)
    assert Attempt.objects.count() == 0 and Run.objects.count() == 0


def test_it_does_not_match_a_task_of_another_category(tmp_path):
    _tasks("math")
    folder = tmp_path / "p"
    folder.mkdir()
    shutil.copy(FIXTURES / "predictions" / "math_tasks.json", folder / "price_tasks.json")

    with pytest.raises(IngestFailed) as excinfo:
        ingest("guidebench-predictions", [Source.of(folder / "price_tasks.json")], Options(model="m"))

    assert "task 'price-" in _problems(excinfo)


def test_it_rejects_a_tasks_file_given_as_predictions():
    _tasks("chat")

    with pytest.raises(IngestFailed) as excinfo:
        ingest("guidebench-predictions", [Source.of(FIXTURES / "chat_tasks.json")], Options(model="m"))

    assert "no task has an 'LLMAnswer': this is a tasks file" in _problems(excinfo)
    assert Attempt.objects.count() == 0


def test_it_rejects_a_task_predicted_twice():
    _tasks("chat")
    source = Source.of(FIXTURES / "predictions" / "chat_tasks.json")

    with pytest.raises(IngestFailed) as excinfo:
        ingest("guidebench-predictions", [source, source], Options(model="m"))

    assert "is predicted twice" in _problems(excinfo)


def test_it_records_a_task_without_llmanswer_as_unanswered(tmp_path):
    _tasks("chat")
    tasks = _load("chat", predictions=True)
    del tasks[0]["LLMAnswer"]
    tasks[2]["LLMAnswer"] = None
    source = _write(tmp_path, "chat_tasks.json", json.dumps(tasks, ensure_ascii=False))

    ingest("guidebench-predictions", [source], Options(model="m"))

    reasons = sorted(Attempt.objects.values_list("outcome__unanswered_reason", flat=True))
    assert reasons == ["", "missing", "missing"]
    assert set(Attempt.objects.values_list("outcome__answer", flat=True)) == {"E", "C"}


# the shared samples --------------------------------------------------------------------
SHARED = ("chat", "hallu", "math", "price", "relevance", "summary")


@pytest.mark.shared_data
def test_it_ingests_all_six_shared_category_files(shared_data):
    sources = [Source.of(shared_data / "guidebench" / f"{c}_tasks.json") for c in SHARED]

    report = ingest("guidebench-tasks", sources, Options())

    assert report.counts["instances"]["created"] == 180
    counts = {c: Instance.objects.filter(primary_category=c).count() for c in SHARED}
    assert counts == dict.fromkeys(SHARED, 30)
    assert ChecklistItem.objects.count() == 180


def _generated_predictions(shared_data: Path, folder: Path) -> list[Source]:
    """Predictions for the shared tasks: every third wrong, every seventh unanswered."""
    wrong = {"option": "D", "price": 0, "math": "1", "relevance": "0（不相关）"}
    sources = []
    for category in SHARED:
        tasks = json.loads((shared_data / "guidebench" / f"{category}_tasks.json").read_text(encoding="utf-8"))
        for n, task in enumerate(tasks):
            truth = task["Groundtruth"]
            if "OptimalOption" in truth:
                answer = {
                    "OptimalOption": wrong["option"] if n % 3 == 0 else truth["OptimalOption"],
                    "AnswerAnalysis": "…",
                }
            else:
                answer = {
                    "CandidateAnswer": wrong[category] if n % 3 == 0 else truth["ReferenceAnswer"],
                    "CandidateAnalysis": "…",
                }
            task["LLMAnswer"] = {} if n % 7 == 0 else answer
        path = folder / f"{category}_tasks.json"
        path.write_text(json.dumps(tasks, ensure_ascii=False, indent=2), encoding="utf-8")
        sources.append(Source.of(path))
    return sources


@pytest.mark.shared_data
def test_it_ingests_generated_predictions_for_the_shared_tasks(shared_data, tmp_path):
    ingest("guidebench-tasks", [Source.of(shared_data / "guidebench" / f"{c}_tasks.json") for c in SHARED], Options())
    sources = _generated_predictions(shared_data, tmp_path)

    report = ingest("guidebench-predictions", sources, Options(model="generated"))

    assert report.counts["attempts"]["created"] == 180
    assert report.counts["verdicts"]["created"] == 180
    assert Attempt.objects.filter(outcome__unanswered=True).count() == 6 * 5
    expected = 0
    for source in sources:
        category = source.name.split("_")[0]
        for task in json.loads(source.path.read_text(encoding="utf-8")):
            expected += choice_task_scored(category, task).correct
    assert Verdict.objects.filter(result="pass").count() == expected


# files as generate_resp.py writes them ------------------------------------------------------
def test_it_keeps_the_odd_records_generate_resp_writes_as_unanswered():
    _tasks("chat", "price")
    sources = [Source.of(FIXTURES / "generated" / f"{c}_tasks.json") for c in ("chat", "price")]
    ingest("guidebench-predictions", sources, Options(model="model-a"))
    outcomes = {
        (
            a.instance.primary_category,
            a.instance.spec["Groundtruth"].get("AnswerAnalysis") or a.instance.spec["Groundtruth"]["ReferenceAnalysis"],
        ): a.outcome
        for a in Attempt.objects.select_related("instance")
    }
    failed = outcomes[("chat", "客服按规则介绍了航班信息。")]
    assert (failed["raw"], failed["cleaned_response"], failed["answer"], failed["unanswered_reason"]) == (
        {},
        "",
        "E",
        "unparsable",
    )
    number = outcomes[("chat", "Wrong language and no age check.")]
    assert (number["answer"], number["unanswered_reason"]) == ("E", "unparsable")
    null = outcomes[("price", "产地不同可忽略。")]
    assert (null["answer"], null["unanswered_reason"], null["correct"]) == (-1, "missing", False)
    bare = outcomes[("price", "容量不同。")]
    assert (bare["raw"], bare["cleaned_response"], bare["answer"], bare["unanswered_reason"]) == (
        1,
        "1",
        -1,
        "unparsable",
    )
    assert outcomes[("price", "颜色相同。")]["correct"] is True


def test_it_explains_a_file_generate_resp_wrote_twice(tmp_path):
    _tasks("chat")
    text = (FIXTURES / "generated" / "chat_tasks.json").read_text(encoding="utf-8")
    source = _write(tmp_path, "chat_tasks.json", text + text)  # generate_resp.py appends on a second run

    with pytest.raises(IngestFailed) as excinfo:
        ingest("guidebench-predictions", [source], Options(model="model-a"))

    line = text.count("\n") + 1
    assert f"chat_tasks.json:{line}: extra data after the JSON document" in _problems(excinfo)
    assert "generate_resp.py appends its list to an existing file on every run" in _problems(excinfo)
    assert Attempt.objects.count() == 0
