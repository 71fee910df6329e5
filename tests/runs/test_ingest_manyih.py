"""ManyIH ingest: the coding dataset (manyih-data) and the evaluator's results (manyih-results)."""

import json
import re
from pathlib import Path

import pytest

from runs.ingest import IngestFailed, Options, Source, ingest
from runs.models import Attempt, AttemptRollup, ChecklistItem, Instance, Judge, JudgeKind, Run, Verdict

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "manyih"
DATA = FIXTURES / "coding_small.json"
RESULTS = FIXTURES / "results_small.json"


def load(path):
    return json.loads(Path(path).read_text())


def write_json(path, doc):
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False))
    return path


def data(*paths, **options):
    return ingest("manyih-data", [Source.of(p) for p in paths or (DATA,)], Options(**options))


def results(*paths, model="acme/coder-1", **options):
    return ingest("manyih-results", [Source.of(p) for p in paths or (RESULTS,)], Options(model=model, **options))


def failure(fmt, paths, **options):
    with pytest.raises(IngestFailed) as caught:
        ingest(fmt, [Source.of(p) for p in paths], Options(**options))
    return str(caught.value)


def line_of(path, needle, occurrence=1):
    """1-based line of the n-th line containing `needle`."""
    hits = [n for n, line in enumerate(Path(path).read_text().splitlines(), 1) if needle in line]
    return hits[occurrence - 1]


def object_line(path, needle, occurrence=1):
    """1-based line where the JSON object holding the n-th `needle` line opens."""
    lines = Path(path).read_text().splitlines()
    n = line_of(path, needle, occurrence)
    while lines[n - 1].strip() != "{":
        n -= 1
    return n


# dataset ------------------------------------------------------------------------------
def test_it_stores_one_instance_per_sample_and_one_item_per_instruction():
    report = data()
    assert Instance.objects.count() == report.counts["instances"]["created"] == 3
    assert ChecklistItem.objects.count() == report.counts["checklist items"]["created"] == 11
    sample = Instance.objects.get(external_id="0")
    assert sample.benchmark.slug == "manyih-coding" and sample.benchmark.kind == "hierarchy"
    assert "instructions" not in sample.spec and sample.spec["interface"] == "ordinal"
    assert sample.spec["task_id"] == 901 and sample.spec["test_code"] == "assert f(1) == 1"


def test_it_resolves_each_instruction_on_ingest():
    data()
    items = {i.key: i for i in ChecklistItem.objects.filter(instance__external_id="0")}
    quotes = items["1"]
    assert (quotes.position, quotes.privilege, quotes.group, quotes.check_type) == (1, 50, "quotes", "strings")
    assert quotes.description == "Use single quotes for all string literals."
    assert quotes.details == {
        "style_id": "quotes_single",
        "conflicts_with": [2],
        "rank": 2,
        "active": False,
        "suppressed_by": [2],
        "conflict_group": 1,
    }
    # 3 and 4 tie at privilege 30: the later one in the prompt (4) wins
    assert items["4"].details["active"] and not items["3"].details["active"]
    assert items["3"].details["suppressed_by"] == [4] and items["3"].details["rank"] == 3
    assert items["5"].details == {
        "style_id": "types_none",
        "conflicts_with": [],
        "rank": 4,
        "active": True,
        "suppressed_by": [],
        "conflict_group": None,
    }
    chain = {i.key: i.details["active"] for i in ChecklistItem.objects.filter(instance__external_id="1")}
    assert chain == {"1": True, "2": False, "3": True, "4": True}


def test_it_creates_nothing_when_the_same_dataset_is_ingested_again():
    data()
    report = data()
    assert report.total("created") == 0 and report.total("updated") == 0
    assert report.counts["checklist items"]["unchanged"] == 11


def test_it_updates_a_corrected_sample_in_place(tmp_path):
    data()
    doc = load(DATA)
    sample = doc["data"][2]
    sample["instructions"][0]["description"] = "Ensure every function has a docstring."
    sample["prompt"] = sample["prompt"].replace(
        "Ensure each function has a docstring.", "Ensure every function has a docstring."
    )
    before = ChecklistItem.objects.get(instance__external_id="2", key="1").id
    report = data(write_json(tmp_path / "coding_small.json", doc))
    assert report.counts["instances"]["updated"] == 1 and report.counts["checklist items"]["updated"] == 1
    item = ChecklistItem.objects.get(instance__external_id="2", key="1")
    assert item.id == before and item.description == "Ensure every function has a docstring."


def test_it_reads_a_scalar_interface_dataset(tmp_path):
    doc = load(DATA)
    doc["config"]["hierarchy_format"] = "scalar"
    for sample in doc["data"]:
        privileges = iter(i["privilege"] for i in sample["instructions"])
        sample["prompt"] = re.sub(
            r"\[\[Privilege \d+\]\](.*?)\[\[/Privilege\]\]",
            lambda m, privileges=privileges: f"[[z={next(privileges)}]]{m.group(1)}[[/z]]",
            sample["prompt"],
        )
    data(write_json(tmp_path / "coding_scalar.json", doc))
    assert Instance.objects.get(external_id="0").spec["interface"] == "scalar"
    active = dict(ChecklistItem.objects.filter(instance__external_id="0").values_list("key", "details__active"))
    assert active == {"1": False, "2": True, "3": False, "4": True, "5": True}


def _bad_data(tmp_path, change):
    doc = load(DATA)
    change(doc)
    return write_json(tmp_path / "coding_small.json", doc)


@pytest.mark.parametrize(
    "change, needle, reason",
    [
        (lambda d: d["data"][1].pop("id"), '"task_id": 902', "missing required field 'id'"),
        (
            lambda d: d["data"][1]["instructions"][0].update(conflicts_with=[2, 42]),
            '"task_id": 902',
            "conflicts with unknown instruction(s) [42]",
        ),
        (
            lambda d: d["data"][1]["metadata"]["expected_styles"].update(indent=["indent_2"]),
            '"task_id": 902',
            "differs from the privilege resolution",
        ),
        (
            lambda d: d["data"][1].update(prompt=d["data"][1]["prompt"].replace("[[Privilege 1]]", "[[Privilege 3]]")),
            '"task_id": 902',
            "is tagged ordinal 3 in the prompt",
        ),
        (
            lambda d: d["data"][1].update(
                prompt=d["data"][1]["prompt"].replace("Indent with tabs.", "Indent with spaces.")
            ),
            '"task_id": 902',
            "are not among the privilege tags",
        ),
        (lambda d: d["data"].append(dict(d["data"][0])), '"task_id": 901', "appears twice"),
        # found by fuzzing on PostgreSQL: a list category became its repr, too long for the column
        (
            lambda d: d["data"][1]["instructions"][0].update(category=[None, 1.5, "x" * 90]),
            '"task_id": 902',
            "instruction 1: 'category' should be text",
        ),
        (
            lambda d: d["data"][1]["instructions"][0].update(style_key="k" * 101),
            '"task_id": 902',
            "instruction 1: 'style_key' is 101 characters; at most 100 fit",
        ),
    ],
    ids=[
        "missing-id",
        "unknown-conflict",
        "expected-styles-disagree",
        "wrong-tag-value",
        "untagged-instruction",
        "duplicate-sample",
        "category-not-text",
        "style-key-too-long",
    ],
)
def test_it_rejects_a_bad_sample_and_stores_nothing(tmp_path, change, needle, reason):
    bad = _bad_data(tmp_path, change)
    message = failure("manyih-data", [bad])
    line = object_line(bad, needle, 2 if reason == "appears twice" else 1)
    assert f"{bad.name}:{line}:" in message and reason in message
    assert Instance.objects.count() == 0 and ChecklistItem.objects.count() == 0


def test_it_rejects_a_truncated_dataset(tmp_path):
    text = DATA.read_text()
    bad = tmp_path / "coding_small.json"
    bad.write_text(text[: len(text) // 2])
    message = failure("manyih-data", [bad])
    assert re.search(rf"{bad.name}:\d+: not valid JSON", message)
    assert Instance.objects.count() == 0


def test_it_rejects_a_line_that_is_not_json(tmp_path):
    lines = DATA.read_text().splitlines()
    at = line_of(DATA, '"task_id": 902')
    lines.insert(at, "    this is not json,")
    bad = tmp_path / "coding_small.json"
    bad.write_text("\n".join(lines))
    message = failure("manyih-data", [bad])
    assert f"{bad.name}:{at + 1}: not valid JSON" in message
    assert Instance.objects.count() == 0


def test_it_rejects_an_empty_dataset_and_a_results_file_given_as_one(tmp_path):
    empty = tmp_path / "coding.json"
    empty.write_text("")
    assert f"{empty.name}: the file is empty" in failure("manyih-data", [empty])
    message = failure("manyih-data", [RESULTS])
    at = line_of(RESULTS, '"results"')
    assert f"results_small.json:{at}: this looks like a ManyIH results file" in message
    assert Instance.objects.count() == 0


# results ------------------------------------------------------------------------------
def test_it_stores_attempts_and_verdicts_on_active_instructions():
    data()
    report = results()
    run = Run.objects.get(label="acme/coder-1")
    assert run.settings == load(RESULTS)["eval_config"]
    assert report.counts["attempts"]["created"] == 3
    assert Verdict.objects.count() == report.counts["verdicts"]["created"] == 11
    judge = Judge.objects.get(name="manyih-log")
    assert judge.kind == JudgeKind.LOGGED
    zero = Attempt.objects.get(instance__external_id="0")
    assert zero.response.startswith("```python") and zero.outcome == {
        "test_passed": True,
        "style_passed": True,
        "overall_passed": True,
        "test_result": "passed",
        "status": "scored",
    }
    verdicts = dict(Verdict.objects.filter(attempt=zero).values_list("item__key", "result"))
    assert verdicts == {"1": "na", "2": "pass", "3": "na", "4": "pass", "5": "pass"}
    one = Attempt.objects.get(instance__external_id="1")
    by_key = {v.item.key: v for v in Verdict.objects.filter(attempt=one).select_related("item")}
    assert {k: v.result for k, v in by_key.items()} == {"1": "fail", "2": "na", "3": "fail", "4": "pass"}
    assert (
        by_key["1"].reasoning.startswith("line 2 indented") and by_key["2"].reasoning == "suppressed by instruction 1"
    )
    rollup = AttemptRollup.objects.get(attempt=one, judge=judge)
    assert (rollup.n_items, rollup.n_applicable, rollup.n_passed) == (4, 3, 1)


def test_it_fails_the_active_instructions_of_a_result_the_harness_could_not_get():
    data()
    results()
    attempt = Attempt.objects.get(instance__external_id="2")
    assert attempt.response == "" and attempt.outcome["error"] == "API timeout after 3 retries"
    assert attempt.outcome["overall_passed"] is False
    verdicts = {v.item.key: v for v in Verdict.objects.filter(attempt=attempt).select_related("item")}
    assert verdicts["2"].result == "fail" and "API timeout" in verdicts["2"].reasoning
    assert verdicts["1"].result == "na"


def test_it_creates_nothing_when_the_same_results_are_ingested_again():
    data()
    results()
    report = results()
    assert report.total("created") == 0 and report.total("updated") == 0


def test_it_updates_a_corrected_result_in_place(tmp_path):
    data()
    results()
    doc = load(RESULTS)
    doc["results"][0]["evaluation"]["each_style_passed"]["indent"] = True
    doc["eval_config"]["temperature"] = 0.7
    verdict_id = Verdict.objects.get(attempt__instance__external_id="1", item__key="1").id
    report = results(write_json(tmp_path / "results_small.json", doc))
    assert report.counts["verdicts"]["updated"] == 2 and report.counts["runs"]["updated"] == 1
    verdict = Verdict.objects.get(attempt__instance__external_id="1", item__key="1")
    assert verdict.id == verdict_id and verdict.result == "pass"
    assert Run.objects.get().settings["temperature"] == 0.7


def test_it_uses_the_judge_and_run_given():
    data()
    results(judge="style-checker-v2", run="coder-1-rep2", repetition=2)
    run = Run.objects.get(label="coder-1-rep2")
    assert run.repetition == 2 and run.model.name == "acme/coder-1"
    assert set(Verdict.objects.values_list("judge__name", flat=True)) == {"style-checker-v2"}
    again = ingest("manyih-results", [Source.of(RESULTS)], Options(run="coder-1-rep2", judge="style-checker-v2"))
    assert again.total("created") == 0 and again.total("updated") == 0


def _bad_results(tmp_path, change):
    doc = load(RESULTS)
    change(doc)
    return write_json(tmp_path / "results_small.json", doc)


@pytest.mark.parametrize(
    "change, needle, reason",
    [
        (lambda d: d["results"][1].update(id=77), '"task_id": 901', "unknown sample id '77'"),
        (lambda d: d["results"][1].pop("id"), '"task_id": 901', "missing required field 'id'"),
        (
            lambda d: d["results"][1]["evaluation"]["each_style_passed"].update(indent=True),
            '"task_id": 901',
            "style key 'indent' is not a style group of this sample",
        ),
        (
            lambda d: d["results"][1]["evaluation"]["each_style_passed"].pop("license"),
            '"task_id": 901',
            "no result for style group(s) license",
        ),
        (
            lambda d: d["results"][1]["evaluation"]["each_style_passed"].update(quotes="maybe"),
            '"task_id": 901',
            "is not true or false",
        ),
        (lambda d: d["results"][1]["evaluation"].pop("test_passed"), '"task_id": 901', "evaluation.test_passed"),
        (lambda d: d["results"][1].update(id=1), '"task_id": 901', "has two results"),
    ],
    ids=[
        "unknown-sample",
        "missing-id",
        "unknown-style-key",
        "missing-style-group",
        "non-boolean",
        "missing-flag",
        "duplicate",
    ],
)
def test_it_rejects_a_bad_result_and_stores_nothing(tmp_path, change, needle, reason):
    data()
    bad = _bad_results(tmp_path, change)
    message = failure("manyih-results", [bad], model="acme/coder-1")
    line = object_line(bad, needle)
    assert f"{bad.name}:{line}:" in message and reason in message
    assert Attempt.objects.count() == 0 and Verdict.objects.count() == 0 and Run.objects.count() == 0


def test_it_rejects_truncated_or_unreadable_results(tmp_path):
    data()
    text = RESULTS.read_text()
    bad = tmp_path / "results_small.json"
    bad.write_text(text[: len(text) - 200])
    assert re.search(rf"{bad.name}:\d+: not valid JSON", failure("manyih-results", [bad], model="m"))
    lines = text.splitlines()
    at = line_of(RESULTS, '"task_id": 901')
    lines.insert(at, "garbage here")
    bad.write_text("\n".join(lines))
    assert f"{bad.name}:{at + 1}: not valid JSON" in failure("manyih-results", [bad], model="m")
    bad.write_text("")
    assert f"{bad.name}: the file is empty" in failure("manyih-results", [bad], model="m")
    assert Attempt.objects.count() == 0 and Run.objects.count() == 0


def test_it_rejects_the_dataset_given_as_results_and_a_missing_model():
    data()
    message = failure("manyih-results", [DATA], model="m")
    at = line_of(DATA, '"data"')
    assert f"coding_small.json:{at}: this looks like the ManyIH dataset" in message
    assert "pass --model" in failure("manyih-results", [RESULTS])
    assert Run.objects.count() == 0


def test_it_needs_the_dataset_before_the_results():
    assert "benchmark 'manyih-coding' does not exist" in failure("manyih-results", [RESULTS], model="m")


# the released data --------------------------------------------------------------------
def test_it_ingests_the_released_coding_data(shared_data):
    path = shared_data / "manyih" / "coding.json"
    if not path.is_file():
        pytest.skip("manyih/coding.json is absent")
    samples = load(path)["data"]
    n_instructions = sum(len(s["instructions"]) for s in samples)
    n_active = sum(len(v) for s in samples for v in s["metadata"]["expected_styles"].values())
    report = data(path)
    assert report.counts["instances"]["created"] == len(samples) == 100
    assert ChecklistItem.objects.count() == report.counts["checklist items"]["created"] == n_instructions == 1200
    assert ChecklistItem.objects.filter(details__active=True).count() == n_active == 600
    assert set(Instance.objects.values_list("spec__interface", flat=True)) == {"ordinal"}
    # every item's position is its order in the prompt, which is the list order in this file
    first = samples[0]
    positions = dict(
        ChecklistItem.objects.filter(instance__external_id=str(first["id"])).values_list("key", "position")
    )
    assert positions == {str(i["id"]): n for n, i in enumerate(first["instructions"], 1)}
    assert data(path).total("created") == 0


def test_it_ingests_generated_results_for_the_released_data(shared_data, tmp_path):
    path = shared_data / "manyih" / "coding.json"
    if not path.is_file():
        pytest.skip("manyih/coding.json is absent")
    samples = load(path)["data"][:10]
    data(path)
    out = {"eval_config": {"model": "gen/model", "temperature": 0.0}, "stats": {"total": 10}, "results": []}
    for n, s in enumerate(reversed(samples)):  # the evaluator writes in completion order
        styles = s["metadata"]["expected_styles"]
        each = {g: (n + k) % 2 == 0 for k, g in enumerate(styles)}
        out["results"].append(
            {
                "id": s["id"],
                "task_id": s["task_id"],
                "response": "def f(): pass",
                "evaluation": {
                    "test_passed": True,
                    "style_passed": all(each.values()),
                    "overall_passed": all(each.values()),
                    "each_style_passed": each,
                    "test_result": "passed",
                },
                "expected_styles": styles,
            }
        )
    results(write_json(tmp_path / "results.json", out), model="gen/model")
    active = sum(len(v) for s in samples for v in s["metadata"]["expected_styles"].values())
    assert Verdict.objects.exclude(result="na").count() == active
    assert Verdict.objects.filter(result="na").count() == sum(len(s["instructions"]) for s in samples) - active


# every record the evaluator writes (results_evaluator.json: written by ManyIH's own evaluator on a fake model) -
EVALUATOR = FIXTURES / "results_evaluator.json"


def test_it_stores_each_record_the_evaluator_writes_as_what_it_is():
    data()
    report = results(EVALUATOR)
    assert report.counts["attempts"]["created"] == 3
    by_sample = {a.instance.external_id: a for a in Attempt.objects.select_related("instance")}
    untokenisable, empty, scored = by_sample["0"], by_sample["1"], by_sample["2"]
    assert untokenisable.outcome == {
        "test_passed": False,
        "style_passed": False,
        "overall_passed": False,
        "test_result": None,
        "status": "error",
        "error": "unindent does not match any outer indentation level (<tokenize>, line 3)",
    }
    assert untokenisable.response == ""
    assert empty.outcome == {
        "test_passed": False,
        "style_passed": False,
        "overall_passed": False,
        "test_result": None,
        "status": "no_code",
        "code_extracted": False,
        "error": "No code found in response",
        "assertion_pass_rate": 0.0,
        "passed_assertions": 0,
        "total_assertions": 0,
        "style_satisfaction_rate": 0.0,
    }
    assert scored.outcome == {
        "test_passed": True,
        "style_passed": True,
        "overall_passed": True,
        "test_result": "passed",
        "status": "scored",
        "code_extracted": True,
        "extracted_code": "def f(x):\n    return x",
        "assertion_pass_rate": 1.0,
        "passed_assertions": 1,
        "total_assertions": 1,
        "style_satisfaction_rate": 1.0,
    }
    reasons = {
        (v.attempt.instance.external_id, v.item.key): (v.result, v.reasoning)
        for v in Verdict.objects.select_related("attempt__instance", "item")
    }
    assert reasons[("1", "1")] == (
        "fail",
        "the response had no code block; the evaluator counts the sample as failed (No code found in response)",
    )
    assert reasons[("0", "2")][0] == "fail" and reasons[("0", "2")][1].startswith(
        "the evaluator recorded an error and counts the sample as failed: unindent does not match"
    )
    assert reasons[("0", "1")][0] == "na" and reasons[("2", "2")] == ("pass", "doc_none: No docstrings")


@pytest.mark.parametrize(
    "change, reason",
    [
        (
            lambda r: r["evaluation"].update(each_style_passed={"indent": True}),
            "each_style_passed is not written beside code_extracted: false",
        ),
        (lambda r: r["evaluation"].update(total_assertions=-1), "evaluation.total_assertions = -1 is not a count"),
        (lambda r: r["evaluation"].update(passed_assertions=2), "passed_assertions 2 exceeds total_assertions 0"),
        (lambda r: r["evaluation"].update(assertion_pass_rate=1.5), "assertion_pass_rate = 1.5 is not a rate"),
        (lambda r: r["evaluation"].update(code_extracted=True), "evaluation has no 'each_style_passed', no top-level"),
    ],
    ids=["styles-beside-no-code", "negative-count", "passed-over-total", "rate-over-one", "no-shape"],
)
def test_it_rejects_an_evaluator_record_that_contradicts_itself(tmp_path, change, reason):
    data()
    doc = load(EVALUATOR)
    change(next(r for r in doc["results"] if r["id"] == 1))
    bad = write_json(tmp_path / "results_evaluator.json", doc)
    message = failure("manyih-results", [bad], model="acme/coder-1")
    assert reason in message and f"{bad.name}:" in message
    assert Attempt.objects.count() == 0
