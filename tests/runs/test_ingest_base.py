"""The shared ingest machinery: streaming readers, problems, text cleaning, upserts."""

import hashlib
import json
import tracemalloc
from pathlib import Path

import pytest

from runs.ingest.base import (
    MAX_LISTED_PROBLEMS,
    Context,
    IngestFailed,
    Options,
    Problem,
    Source,
    clean,
    content_hash,
    iter_json_document,
    iter_jsonl,
    require,
)
from runs.models import AgentModel


def context() -> Context:
    return Context(Options())


def source(tmp_path: Path, name: str, data: str | bytes) -> Source:
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return Source.of(path)


def problems(ctx: Context) -> list[str]:
    return [str(p) for p in ctx._problems]


# clean --------------------------------------------------------------------------------
def test_it_replaces_lone_surrogates_and_nul_everywhere_in_a_record():
    record = {
        "k\u0000": ["a\ud800b", {"x": "\udfff\ud83d", "n": 3, "f": 1.5, "t": True, "z": None}],
        "ok": "中文 🙂 \u202e",
    }

    assert clean(record) == {
        "k\ufffd": ["a\ufffdb", {"x": "\ufffd\ufffd", "n": 3, "f": 1.5, "t": True, "z": None}],
        "ok": "中文 🙂 \u202e",
    }


def test_it_keeps_clean_text_as_the_same_object():
    text = "plain text, 中文, 🙂"

    assert clean(text) is text


def test_it_hashes_content_regardless_of_key_order():
    assert content_hash({"a": 1, "b": [1, "\ud800"]}) == content_hash({"b": [1, "\ud800"], "a": 1})
    assert content_hash({"a": 1}) != content_hash({"a": 2})


# problems -----------------------------------------------------------------------------
def test_it_names_file_and_line_in_a_problem():
    assert str(Problem("a.jsonl", 7, "bad")) == "a.jsonl:7: bad"
    assert str(Problem("a.jsonl", None, "the file is empty")) == "a.jsonl: the file is empty"


def test_it_lists_fifty_problems_and_counts_the_rest():
    ctx = context()
    for n in range(1, 61):
        ctx.problem("f.jsonl", n, "bad")

    with pytest.raises(IngestFailed) as info:
        ctx.raise_if_failed()

    assert MAX_LISTED_PROBLEMS == 50
    assert (info.value.total, len(info.value.problems)) == (60, 50)
    assert str(info.value).startswith("60 problem(s), nothing was stored (and 10 more):\nf.jsonl:1: bad\n")
    assert ctx.report.rejected == 60


def test_it_counts_a_record_with_several_problems_once_as_rejected():
    ctx = context()
    ctx.problem("f.jsonl", 3, "missing a")
    ctx.problem("f.jsonl", 3, "missing b")

    assert (ctx.problem_count, ctx.report.rejected) == (2, 1)


def test_it_does_not_fail_without_problems():
    ctx = context()

    ctx.raise_if_failed()

    assert not ctx.failed


def test_require_reports_each_missing_or_mistyped_field(tmp_path):
    ctx = context()
    src = Source.of(tmp_path / "f.jsonl")

    ok = require(ctx, src, 4, {"a": None, "b": "text"}, {"a": str, "b": (int, list), "c": dict})

    assert not ok
    assert problems(ctx) == [
        "f.jsonl:4: missing required field 'a'",
        "f.jsonl:4: field 'b' should be int or list, found a string",
        "f.jsonl:4: missing required field 'c'",
    ]


# iter_jsonl ---------------------------------------------------------------------------
def test_it_reads_jsonl_with_line_numbers_and_blank_lines_and_crlf(tmp_path):
    data = '{"a": 1}\r\n\n   \n{"a": "\\u0000"}\n{"a": 3}'
    src = source(tmp_path, "f.jsonl", data)
    ctx = context()

    rows = list(iter_jsonl(src, ctx))

    assert rows == [(1, {"a": 1}), (4, {"a": "\ufffd"}), (5, {"a": 3})]
    assert not ctx.failed
    assert ctx.source_hashes["f.jsonl"] == hashlib.sha256(data.encode()).hexdigest()


def test_it_reports_a_line_that_is_not_an_object(tmp_path):
    ctx = context()

    rows = list(iter_jsonl(source(tmp_path, "f.jsonl", '[1, 2]\n"text"\n{"ok": 1}\n'), ctx))

    assert rows == [(3, {"ok": 1})]
    assert problems(ctx) == [
        "f.jsonl:1: expected a JSON object, found a list",
        "f.jsonl:2: expected a JSON object, found a string",
    ]


def test_it_says_when_the_last_line_looks_truncated(tmp_path):
    ctx = context()

    list(iter_jsonl(source(tmp_path, "f.jsonl", '{"a": 1}\n{"a": "cut'), ctx))

    assert problems(ctx) == [
        "f.jsonl:2: not valid JSON: Unterminated string starting at column 7 (the last line looks truncated)"
    ]


def test_it_reports_an_empty_jsonl_file(tmp_path):
    ctx = context()

    assert list(iter_jsonl(source(tmp_path, "f.jsonl", ""), ctx)) == []
    assert problems(ctx) == ["f.jsonl: the file is empty"]


def test_it_reports_a_pretty_printed_document_once(tmp_path):
    ctx = context()

    list(iter_jsonl(source(tmp_path, "f.jsonl", json.dumps({"results": [{"a": 1}]}, indent=2)), ctx))

    assert len(problems(ctx)) == 1
    assert problems(ctx)[0].startswith("f.jsonl:1: this is one JSON document spread over many lines")


@pytest.mark.parametrize("reader", ["jsonl", "document"])
def test_every_escape_of_nul_or_a_surrogate_is_cleaned_and_nothing_else_changes(tmp_path, reader):
    records = [
        r'{"k\u0000": "a", "b": {"c": ["\uDFFF", 1]}}',  # a key, upper-case hex, nested
        r'{"a": "\ud83d\ude00 \uD800", "n": null}',  # a pair stays, a lone one goes
        r'{"a": "\\u0000 is how NUL is written", "b": "\u00e9"}',  # a literal backslash, a plain escape
    ]
    if reader == "jsonl":
        rows = [r for _, r in iter_jsonl(source(tmp_path, "f.jsonl", "\n".join(records)), Context(Options()))]
    else:
        text = '{"results": [' + ",\n".join(records) + '], "other": "\\u0000"}'
        rows = [
            r
            for _, _, r in iter_json_document(
                source(tmp_path, "f.json", text), Context(Options()), list_keys=("results",)
            )
        ]
    expected = [
        {"k\ufffd": "a", "b": {"c": ["\ufffd", 1]}},
        {"a": "\U0001f600 \ufffd", "n": None},
        {"a": "\\u0000 is how NUL is written", "b": "\u00e9"},
    ]
    assert rows == expected + ([] if reader == "jsonl" else ["\ufffd"])


# iter_json_document -------------------------------------------------------------------
def test_it_streams_a_top_level_list_with_the_line_of_each_element(tmp_path):
    src = source(tmp_path, "f.json", '[\n  {"a": 1},\n\n  {"a": "\\ud800"}\n]\n')
    ctx = context()

    assert list(iter_json_document(src, ctx)) == [(None, 2, {"a": 1}), (None, 4, {"a": "\ufffd"})]
    assert not ctx.failed


def test_it_streams_the_listed_keys_of_an_object_and_yields_other_keys_once(tmp_path):
    src = source(tmp_path, "f.json", '{"summary": {"n": 2},\n "results": [\n {"x": 1},\n {"x": 2}\n ], "empty": []}')
    ctx = context()

    rows = list(iter_json_document(src, ctx, list_keys=("results",)))

    assert rows == [("summary", 1, {"n": 2}), ("results", 3, {"x": 1}), ("results", 4, {"x": 2}), ("empty", 5, [])]
    assert not ctx.failed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "f.json: the file is empty"),
        ("   \n", "f.json: the file is empty"),
        ('{"results": [\n{"a": 1},\n{"a": ', "f.json:3: not valid JSON: Expecting value (the file looks truncated)"),
        ('{"a": 1}\n{"a": 2}\n', "f.json:2: extra data after the JSON document (is this a JSONL file?)"),
        ("\n\nhello", "f.json:3: expected a JSON object or list, found 'h'"),
        ('{"a": 1 "b": 2}', "f.json:1: expected ',' or '}', found '\"'"),
    ],
)
def test_it_reports_a_bad_document_with_its_line(tmp_path, text, expected):
    ctx = context()

    list(iter_json_document(source(tmp_path, "f.json", text), ctx, list_keys=("results",)))

    assert problems(ctx) == [expected]


def test_it_hashes_a_document_even_when_stopping_early(tmp_path):
    data = '{"a": 1}\n{"b": 2}\n'
    ctx = context()

    list(iter_json_document(source(tmp_path, "f.json", data), ctx))

    assert ctx.source_hashes["f.json"] == hashlib.sha256(data.encode()).hexdigest()


@pytest.mark.slow
def test_it_streams_a_large_document_in_bounded_memory(tmp_path):
    element = json.dumps({"instance_id": "i", "reasoning": "理由" * 20000})  # ~120 kB
    path = tmp_path / "big.json"
    with open(path, "w") as handle:
        handle.write('{"summary": {"total": 1000},\n"results": [\n')
        handle.write(",\n".join(element for _ in range(1000)))
        handle.write("\n]}\n")
    size = path.stat().st_size
    ctx = context()

    tracemalloc.start()
    try:
        n = sum(1 for key, _, _ in iter_json_document(Source.of(path), ctx, list_keys=("results",)) if key == "results")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert n == 1000 and not ctx.failed
    assert size > 100 * 1024 * 1024
    assert peak < 24 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB for a {size / 2**20:.0f} MiB document"


@pytest.mark.parametrize("reader", ["jsonl", "document"])
def test_records_count_as_held_until_written_only_when_the_format_keeps_them(tmp_path, monkeypatch, reader):
    """A consumer that keeps nothing streams a file of any size; a format that keeps what it reads until it
    writes is refused once what it holds would pass MAX_HELD_BYTES (here a quarter of the file)."""
    records = [{"instance_id": str(n), "text": "x" * 1000} for n in range(20)]
    if reader == "jsonl":
        path = source(tmp_path, "r.jsonl", "".join(json.dumps(r) + "\n" for r in records)).path
    else:
        path = source(tmp_path, "r.json", json.dumps({"results": records})).path
    monkeypatch.setattr("runs.ingest.base.MAX_HELD_BYTES", path.stat().st_size // 4)

    def read(ctx: Context, keep: bool) -> list:
        if reader == "jsonl":
            return [r for _, r in iter_jsonl(Source.of(path), ctx, keep=keep)]
        return [v for _, _, v in iter_json_document(Source.of(path), ctx, list_keys=("results",), keep=keep)]

    streamed, streaming = read(ctx := context(), False), ctx
    kept, keeping = read(ctx := context(), True), ctx

    assert streamed == records and not streaming.failed
    assert 0 < len(kept) < len(records) // 2 and keeping.failed
    assert "the records read and not yet stored would take more than" in problems(keeping)[0]


# upsert -------------------------------------------------------------------------------
@pytest.mark.django_db
def test_it_counts_created_updated_and_unchanged_rows():
    ctx = context()
    ctx.upsert(
        AgentModel,
        [{"name": "a", "display_name": "x"}, {"name": "b", "display_name": "x"}],
        key=("name",),
        compare=("display_name",),
        kind="models",
    )

    ids = ctx.upsert(
        AgentModel,
        [{"name": "a", "display_name": "x"}, {"name": "b", "display_name": "y"}, {"name": "c", "display_name": "z"}],
        key=("name",),
        compare=("display_name",),
        kind="models",
    )

    assert dict(ctx.report.counts["models"]) == {"created": 3, "updated": 1, "unchanged": 1}
    assert set(ids) == {("a",), ("b",), ("c",)}
    assert dict(AgentModel.objects.values_list("name", "display_name")) == {"a": "x", "b": "y", "c": "z"}


@pytest.mark.django_db
def test_it_writes_nothing_once_a_problem_was_reported():
    ctx = context()
    ctx.problem("f.jsonl", 1, "bad")

    ctx.upsert(
        AgentModel, [{"name": "a", "display_name": "x"}], key=("name",), compare=("display_name",), kind="models"
    )

    assert AgentModel.objects.count() == 0
    assert ctx.report.counts["models"]["created"] == 1  # still counted, so the report says what would have been stored


def test_the_report_says_when_nothing_changed():
    ctx = context()
    ctx.report.add("verdicts", "unchanged", 4)

    assert ctx.report.summary().startswith("created 0, updated 0, unchanged 4, rejected 0 (nothing changed")
    assert ctx.report.as_dict()["by_kind"] == {"verdicts": {"unchanged": 4}}
