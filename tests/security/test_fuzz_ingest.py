"""Property: random and mutated files through every ingest format either import or end in
IngestFailed with file:line reasons and nothing stored; no other exception ever escapes.

Mutations start from the fixture of each format (so they reach deep into the format's
checks): byte edits (flip, insert, delete, truncate, duplicate or drop a line) and JSON
edits (any value replaced by JSON of another type). Definitions the result formats refer
to are imported first, so a mutated results file is checked against real instances.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runs.ingest import FORMATS, IngestFailed, Options, Source, ingest
from runs.models import AgentModel, Attempt, Benchmark, ChecklistItem, Instance, Judge, Run, Trajectory, Verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXAMPLES = 25  # per format and strategy; the suite stays fast, CI runs see new examples each time

#: format -> (fixture file, options, definitions to import first as (format, file))
CASES = {
    "octobench-instances": ("octobench/instances.jsonl", {}, []),
    "octobench-trajectories": (
        "octobench/trajectory_merged.jsonl",
        {},
        [("octobench-instances", "octobench/instances.jsonl")],
    ),
    "octobench-scores": (
        "octobench/scores.json",
        {"model": "model-x", "judge": "judge-a"},
        [("octobench-instances", "octobench/instances.jsonl")],
    ),
    "evolif-dialogs": ("evolif/dialog_1.jsonl", {}, []),
    "evolif-eval": ("evolif/eval_1.jsonl", {"model": "model-x"}, [("evolif-dialogs", "evolif/dialog_1.jsonl")]),
    "manyih-data": ("manyih/coding_small.json", {}, []),
    "manyih-results": (
        "manyih/results_small.json",
        {"model": "model-x"},
        [("manyih-data", "manyih/coding_small.json")],
    ),
    "guidebench-tasks": ("guidebench/chat_tasks.json", {}, []),
    "guidebench-predictions": (
        "guidebench/predictions/chat_tasks.json",
        {"model": "model-x"},
        [("guidebench-tasks", "guidebench/chat_tasks.json")],
    ),
    "native": ("native/study.jsonl", {}, []),
    # the .json log (JSON mutations reach into it); the .eval archive is fuzzed in tests/runs/test_ingest_inspect.py
    "inspect": ("inspect/tiny_if.json", {"pass_threshold": 0.5}, []),
    "lm-eval": (
        "lm_eval/acme__tiny-instruct-1b/samples_ifeval_2026-11-20T10-15-30.123456.jsonl",
        {"model": "model-x"},
        [],
    ),
}
TABLES = (Benchmark, Instance, ChecklistItem, AgentModel, Run, Attempt, Trajectory, Judge, Verdict)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=8,
)


def test_it_covers_every_ingest_format():
    assert set(CASES) == set(FORMATS)


def _counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in TABLES}


def _paths(value, path=()):
    """Every path to a value inside a JSON document."""
    yield path
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _paths(inner, (*path, index))


def _replace(document, path, new):
    if not path:
        return new
    target = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return document


@st.composite
def json_mutation(draw, original: bytes) -> bytes:
    """The fixture with one value (in one line, for JSON Lines) replaced by JSON of any type."""
    text = original.decode("utf-8")
    if original.rstrip().endswith(b"}") and b"\n{" in original:  # JSON Lines
        lines = text.splitlines()
        index = draw(st.integers(0, len(lines) - 1))
        record = json.loads(lines[index])
        path = draw(st.sampled_from(list(_paths(record))))
        lines[index] = json.dumps(_replace(record, path, draw(json_values)))
        return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    document = json.loads(text)
    path = draw(st.sampled_from(list(_paths(document))))
    return json.dumps(_replace(document, path, draw(json_values))).encode("utf-8", "surrogatepass")


@st.composite
def byte_mutation(draw, original: bytes) -> bytes:
    """The fixture with a few byte- or line-level edits."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "dup-line", "drop-line"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[at:at] = draw(
                st.binary(min_size=1, max_size=20)
                | st.sampled_from(
                    [b"\x00", b"\xff\xfe", b"\\ud800", b'"', b"{", b"]", b"\n", b"\xed\xa0\x80", b"1e999999"]
                )
            )
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 50))]
        elif kind == "truncate":
            del data[at:]
        else:
            lines = bytes(data).split(b"\n")
            n = draw(st.integers(0, len(lines) - 1))
            lines[n : n + 1] = [lines[n], lines[n]] if kind == "dup-line" else []
            data = bytearray(b"\n".join(lines))
    return bytes(data)


def _check(format_name: str, data: bytes, tmp_path: Path) -> None:
    name, options, _ = CASES[format_name]
    path = tmp_path / Path(name).name
    path.write_bytes(data)
    before = _counts()
    try:
        ingest(format_name, [Source.of(path)], Options(**options))
    except IngestFailed as failed:
        assert _counts() == before, "a failed ingest stored rows"
        assert failed.problems, "IngestFailed without a problem"
        n_lines = data.count(b"\n") + 1
        for problem in failed.problems:
            assert problem.file == path.name, str(problem)
            assert problem.reason.strip(), str(problem)
            assert problem.line is None or 1 <= problem.line <= n_lines, str(problem)
            assert str(problem).startswith(f"{path.name}:"), str(problem)


def _definitions(format_name: str) -> None:
    for definition_format, name in CASES[format_name][2]:
        ingest(definition_format, [Source.of(FIXTURES / name)], Options())


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=False,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("format_name", sorted(CASES))
def test_it_fails_cleanly_on_random_bytes(db, tmp_path, format_name):
    _definitions(format_name)

    @FUZZ
    @given(data=st.binary(max_size=2000) | st.text(max_size=500).map(lambda t: t.encode("utf-8", "surrogatepass")))
    def run(data):
        before = _counts()
        _check(format_name, data, tmp_path)
        if data.strip():  # random bytes are no valid study (an empty file may be a no-op import)
            assert _counts() == before

    run()


@pytest.mark.parametrize("format_name", sorted(CASES))
def test_it_fails_cleanly_or_imports_on_mutated_files(db, tmp_path, format_name):
    _definitions(format_name)
    original = (FIXTURES / CASES[format_name][0]).read_bytes()

    @FUZZ
    @given(data=st.one_of(byte_mutation(original), json_mutation(original)))
    def run(data):
        _check(format_name, data, tmp_path)

    run()


@pytest.mark.parametrize("format_name", sorted(CASES))
def test_it_fails_cleanly_on_a_10_mb_line(db, tmp_path, format_name):
    _definitions(format_name)
    huge = b'{"x": "' + b"A" * (10 * 1024 * 1024) + b'"'  # one unterminated 10 MB line

    _check(format_name, huge, tmp_path)
    _check(format_name, huge + b"}\n", tmp_path)


def _fixture_json(name: str):
    return json.loads((FIXTURES / name).read_text())


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999999"])
def test_it_refuses_numbers_no_json_column_takes(db, tmp_path, value):
    """Found by the fuzzing: Python reads NaN/Infinity, then the database refused the row (IntegrityError)."""
    line = json.loads((FIXTURES / "octobench/instances.jsonl").read_text().splitlines()[0])
    text = json.dumps(line).replace('"instance_id"', f'"extra": {value}, "instance_id"', 1)
    path = tmp_path / "instances.jsonl"
    path.write_text(text + "\n")

    with pytest.raises(IngestFailed, match=r"instances.jsonl:1: not valid JSON"):
        ingest("octobench-instances", [Source.of(path)], Options())
    assert Instance.objects.count() == 0


@pytest.mark.parametrize(
    ("field", "value"), [("id", [1]), ("conflicts_with", [[2]]), ("style_key", {"a": 1}), ("style_id", None)]
)
def test_it_refuses_manyih_ids_that_are_not_ids(db, tmp_path, field, value):
    """Found by the fuzzing: a list or object as an instruction id crashed with TypeError (unhashable)."""
    data = _fixture_json("manyih/coding_small.json")
    data["data"][0]["instructions"][0][field] = value
    path = tmp_path / "coding_small.json"
    path.write_text(json.dumps(data))

    with pytest.raises(IngestFailed, match="coding_small.json:"):
        ingest("manyih-data", [Source.of(path)], Options())
    assert Instance.objects.count() == 0


@pytest.mark.parametrize(("n", "value"), [(1, 2**31), (1, 10**30), (4, -(2**31) - 1)])
def test_it_refuses_a_manyih_privilege_no_integer_column_takes(db, tmp_path, n, value):
    """Found by the fuzzing: a privilege beyond 32 bits reached the integer column (PostgreSQL: integer out of range).
    The highest (lowest) privilege of the first sample made higher (lower) keeps the prompt's ordinal tags right."""
    data = _fixture_json("manyih/coding_small.json")
    data["data"][0]["instructions"][n]["privilege"] = value
    path = tmp_path / "coding_small.json"
    path.write_text(json.dumps(data))

    with pytest.raises(IngestFailed, match=r"coding_small.json:\d+: .*privilege .* out of range"):
        ingest("manyih-data", [Source.of(path)], Options())
    assert Instance.objects.count() == 0 and ChecklistItem.objects.count() == 0


def test_it_refuses_an_octobench_check_id_that_is_a_list(db, tmp_path):
    """Found by the fuzzing: a list as check_id crashed with TypeError (unhashable)."""
    line = json.loads((FIXTURES / "octobench/instances.jsonl").read_text().splitlines()[0])
    group = next(g for g in line["checklist"].values() if isinstance(g, dict) and g.get("checks"))
    group["checks"][0]["check_id"] = ["a"]
    path = tmp_path / "instances.jsonl"
    path.write_text(json.dumps(line) + "\n")

    with pytest.raises(IngestFailed, match=r"instances.jsonl:1: check 1 of category .* has no 'check_id'"):
        ingest("octobench-instances", [Source.of(path)], Options())


@pytest.mark.parametrize(("field", "value"), [("tool_calls", True), ("tools", 1.5), ("meta", 3)])
def test_it_reads_octobench_threads_with_odd_shapes_without_crashing(db, tmp_path, field, value):
    """Found by the fuzzing: a tool_calls that is not a list, tools or meta of the wrong type raised TypeError."""
    _definitions("octobench-trajectories")
    record = json.loads((FIXTURES / "octobench/trajectory_merged.jsonl").read_text().splitlines()[0])
    if field == "tool_calls":
        next(m for m in record["messages"] if m.get("role") == "assistant")["tool_calls"] = value
    else:
        record[field] = value
    path = tmp_path / "trajectory_merged.jsonl"
    path.write_text(json.dumps(record) + "\n")

    _check("octobench-trajectories", path.read_bytes(), tmp_path)


def _with_deep_value(original: bytes, depth: int) -> bytes:
    """The fixture with `depth` nested lists added to its first record (first line, or first list element)."""
    deep = "[" * depth + "]" * depth
    text = original.decode("utf-8")
    if original.rstrip().endswith(b"}") and b"\n{" in original:  # JSON Lines
        lines = text.splitlines()
        record = json.loads(lines[0])
        record["x_deep"] = "__DEEP__"
        lines[0] = json.dumps(record)
        return ("\n".join(lines) + "\n").replace('"__DEEP__"', deep).encode("utf-8")
    document = json.loads(text)
    records = (
        document
        if isinstance(document, list)
        else next(v for v in document.values() if isinstance(v, list) and v and isinstance(v[0], dict))
    )
    records[0]["x_deep"] = "__DEEP__"
    return json.dumps(document, indent=1).replace('"__DEEP__"', deep).encode("utf-8")


@pytest.mark.parametrize("depth", [300, 100_000])
@pytest.mark.parametrize("format_name", sorted(CASES))
def test_deeply_nested_json_is_a_file_line_problem(db, tmp_path, format_name, depth):
    """300 levels parse but go past MAX_DEPTH; 100,000 stop Python's parser (RecursionError, a traceback before)."""
    _definitions(format_name)
    data = _with_deep_value((FIXTURES / CASES[format_name][0]).read_bytes(), depth)
    path = tmp_path / Path(CASES[format_name][0]).name
    path.write_bytes(data)
    before = _counts()

    with pytest.raises(IngestFailed) as failed:
        ingest(format_name, [Source.of(path)], Options(**CASES[format_name][1]))

    assert any(p.line and p.reason.startswith("the JSON is nested too deeply") for p in failed.value.problems), [
        str(p) for p in failed.value.problems
    ]
    _check(format_name, data, tmp_path)
    assert _counts() == before


@pytest.mark.parametrize("format_name", ["native", "octobench-scores"])
def test_a_file_of_junk_lists_its_first_problems_counts_them_and_stops_reading(db, tmp_path, format_name):
    from runs.ingest.base import MAX_LISTED_PROBLEMS, MAX_PROBLEMS_PER_FILE

    _definitions(format_name)
    lines = 200_000  # more than one read chunk of a JSON document
    if format_name == "native":
        data = b"".join(b"junk %d\n" % n for n in range(lines))
    else:
        data = b'{"results": [' + b"".join(b'{"x": %d},\n' % n for n in range(lines)) + b"1]}"
    path = tmp_path / ("junk.jsonl" if format_name == "native" else "junk.json")
    path.write_bytes(data)
    seen: list[tuple[int, int]] = []

    with pytest.raises(IngestFailed) as failed:
        ingest(
            format_name,
            [Source.of(path)],
            Options(**CASES[format_name][1]),
            progress=lambda done, total: seen.append((done, total)),
        )

    exc = failed.value
    assert len(exc.problems) == MAX_LISTED_PROBLEMS
    # every problem up to the limit is counted, then one says the rest was not read
    assert MAX_PROBLEMS_PER_FILE + 1 <= exc.total <= MAX_PROBLEMS_PER_FILE + 10
    assert seen[-1][0] == seen[-1][1] == len(data)  # the progress still ends at the whole file
