"""Hostile records: what a record decodes to is bounded in every format the portal reads
(runs.ingest.decode), so a few kilobytes of upload cannot take gigabytes, and a record past a
bound is a `file:line` (or `file:entry`) problem that stores nothing, on the CLI and through an upload."""

import json
import os
import struct
import subprocess
import sys
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest
import zstandard
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from ifportal.benchmarks.study import manage_py, peak_rss_of_command
from runs.ingest import IngestFailed, Options, Source, ingest
from runs.ingest.decode import MAX_DEPTH, MAX_VALUES
from runs.models import Benchmark, Instance, Job

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
#: the peak memory an import may reach whatever its input (the ingest's target, measured on the CLI)
PEAK_RSS_MB = 400
#: `[],` repeated: one empty list (about 80 bytes once decoded) per 3 bytes of text
BRACKETS_PAST_BOUND = "[" + ",".join(["[]"] * (MAX_VALUES // 2 + 10)) + "]"
DEEP = "[" * 100_000 + "]" * 100_000
DIGITS = "1" * 5_401


def _zstd_eval(entries: dict[str, bytes]) -> bytes:
    """A zip whose entries are zstandard-compressed (method 93), as inspect_ai writes `.eval` logs."""
    out, central = bytearray(), bytearray()
    for name, data in entries.items():
        encoded, packed, crc = name.encode(), zstandard.ZstdCompressor().compress(data), zlib.crc32(data)
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 63, 0, 93, 0, 0, crc, len(packed), len(data), len(encoded), 0)
        out += encoded + packed
        central += (
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                63,
                63,
                0,
                93,
                0,
                0,
                crc,
                len(packed),
                len(data),
                len(encoded),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + encoded
        )
    start = len(out)
    out += central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central), start, 0)
    return bytes(out)


def _fixture_eval_entries() -> dict[str, bytes]:
    """The entries of the fixture `.eval` log, uncompressed."""
    entries = {}
    with zipfile.ZipFile(FIXTURES / "inspect" / "tiny_if.eval") as archive:
        for info in archive.infolist():
            archive.fp.seek(info.header_offset)
            local = archive.fp.read(30)
            archive.fp.seek(
                info.header_offset
                + 30
                + int.from_bytes(local[26:28], "little")
                + int.from_bytes(local[28:30], "little")
            )
            entries[info.filename] = (
                zstandard.ZstdDecompressor().stream_reader(archive.fp.read(info.compress_size)).read(info.file_size)
            )
    return entries


def hostile_eval(junk: str) -> tuple[bytes, str]:
    """The fixture log with `junk` (JSON text) in its first sample's metadata; (the file, that entry's name)."""
    entries = _fixture_eval_entries()
    name = next(n for n in entries if n.startswith("samples/"))
    sample = json.loads(entries[name])
    sample["metadata"]["junk"] = "JUNK"
    entries[name] = json.dumps(sample).replace('"JUNK"', junk).encode()
    return _zstd_eval(entries), name


def hostile_inspect_json(junk: str) -> str:
    log = json.loads((FIXTURES / "inspect" / "tiny_if.json").read_text())
    log["samples"][0]["metadata"]["junk"] = "JUNK"
    return json.dumps(log).replace('"JUNK"', junk)


def _line(junk: str) -> str:
    return '{"type": "benchmark", "slug": "hostile-b", "kind": "checklist", "junk": ' + junk + "}\n"


#: format -> (file name, its text with the JSON text `junk` in its first record, where the problem is reported)
FILES = {
    "native": ("study.jsonl", _line, "study.jsonl:1"),
    "octobench-instances": ("instances.jsonl", _line, "instances.jsonl:1"),
    "evolif-dialogs": ("dialog_1.jsonl", _line, "dialog_1.jsonl:1"),
    "lm-eval": ("samples_ifeval_2024-01-01T00-00-00.jsonl", _line, "samples_ifeval_2024-01-01T00-00-00.jsonl:1"),
    "manyih-data": (
        "coding.json",
        lambda junk: '{"config": {},\n"data": [{"id": 0, "junk": ' + junk + "}]}",
        "coding.json:2",
    ),
    "guidebench-tasks": (
        "chat_tasks.json",
        lambda junk: '[\n{"Instruction": "x", "junk": ' + junk + "}]",
        "chat_tasks.json:2",
    ),
    "inspect": ("log.json", hostile_inspect_json, "log.json:1"),
}


def _fails(format_name: str, path: Path) -> IngestFailed:
    with pytest.raises(IngestFailed) as failed:
        ingest(format_name, [Source.of(path)], Options(model="m" if format_name == "lm-eval" else None))
    return failed.value


@pytest.mark.django_db
@pytest.mark.parametrize("format_name", [*FILES, "inspect.eval"])
@pytest.mark.parametrize(
    ("junk", "reason"),
    [
        (BRACKETS_PAST_BOUND, f"the record holds more than {MAX_VALUES:,} JSON values"),
        (DEEP, f"the JSON is nested too deeply (more than {MAX_DEPTH} levels)"),
        (DIGITS, f"the JSON has a number of more than {sys.get_int_max_str_digits():,} digits"),
    ],
    ids=["values", "depth", "digits"],
)
def test_a_record_past_a_bound_is_a_problem_of_its_file_and_entry(tmp_path, format_name, junk, reason):
    if format_name == "inspect.eval":
        data, entry = hostile_eval(junk)
        path, where, format_name = tmp_path / "log.eval", f"log.eval:{entry}", "inspect"
        path.write_bytes(data)
    else:
        name, text, where = FILES[format_name]
        path = tmp_path / name
        path.write_text(text(junk))

    failure = _fails(format_name, path)

    found = [str(p) for p in failure.problems if str(p).startswith(where + ":") and reason in str(p)]
    assert found, [str(p) for p in failure.problems]
    assert not Benchmark.objects.exists() and not Instance.objects.exists()


@pytest.mark.django_db
def test_a_line_longer_than_a_record_may_be_is_refused_and_the_next_one_read(tmp_path):
    from runs.ingest.decode import MAX_RECORD_BYTES

    path = tmp_path / "study.jsonl"
    path.write_text(_line('"' + "x" * MAX_RECORD_BYTES + '"') + '{"type": "nonsense"}\n')

    failure = _fails("native", path)

    assert [str(p) for p in failure.problems][:2] == [
        f"study.jsonl:1: the line is longer than {MAX_RECORD_BYTES >> 20} MiB; at most {MAX_RECORD_BYTES >> 20} MiB "
        "are read per record",
        "study.jsonl:2: field 'type' should be one of benchmark, instance, run, attempt, verdict, found \"nonsense\"",
    ]


@pytest.mark.django_db
def test_text_that_would_widen_past_the_bound_is_refused_before_it_is_decoded(tmp_path):
    """One character beyond U+FFFF makes Python hold every character of a text in 4 bytes."""
    from runs.ingest.decode import MAX_RECORD_BYTES

    path = tmp_path / "study.jsonl"
    filler = "x" * (MAX_RECORD_BYTES // 4 + 1000)
    path.write_text(_line('"' + filler + '\U0001f600"'), encoding="utf-8")

    failure = _fails("native", path)

    assert "study.jsonl:1: the record takes" in str(failure.problems[0])
    assert "beyond U+FFFF 4" in str(failure.problems[0])


@pytest.mark.django_db
def test_an_escape_that_widens_a_long_string_counts_for_the_string(tmp_path):
    from runs.ingest.decode import MAX_RECORD_BYTES

    path = tmp_path / "study.jsonl"
    path.write_text(_line('"' + "x" * (MAX_RECORD_BYTES // 4 + 1000) + '\\ud83d\\ude00"'), encoding="ascii")

    failure = _fails("native", path)

    assert "study.jsonl:1: the record takes" in str(failure.problems[0])


def test_an_upload_of_a_few_kilobytes_that_inflates_to_millions_of_values_is_refused_in_bounded_memory(
    editor, django_capture_on_commit_callbacks
):
    """The attack: a 2.6 KB `.eval` whose one zstd entry is 16 MB of `[],[],...` took a web worker to 1.57 GB and
    was stored. The import runs in the web process on the embedded default: it must refuse it, cheaply."""
    data, entry = hostile_eval("[" + ",".join(["[]"] * ((16 << 20) // 3)) + "]")
    assert len(data) < 64 * 1024
    client = APIClient()
    client.force_authenticate(editor)

    tracemalloc.start()
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                "/api/ingest/",
                {"format": "inspect", "files": [SimpleUploadedFile("log.eval", data)], "pass_threshold": "0.5"},
                format="multipart",
            )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert response.status_code == 202
    job = Job.objects.get()
    assert job.state == "failed"
    assert (
        f"log.eval:{entry}: the entry: the record holds more than {MAX_VALUES:,} JSON values"
        in json.dumps(job.errors) + job.message
    )
    assert not Benchmark.objects.exists()
    # the entry's 16 MB of text and its copy as a string; decoded, it would be over 400 MB of lists
    assert peak < 100 * 2**20, f"peak {peak / 2**20:.0f} MiB"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["native", "inspect.eval", "inspect.json"])
def test_the_cli_refuses_a_hostile_file_under_the_memory_target(tmp_path, kind):
    """`manage.py ingest` in a child process of its own (its own database): peak RSS under PEAK_RSS_MB."""
    junk = "[" + ",".join(["[]"] * ((16 << 20) // 3)) + "]"  # 16 MB of `[],`: 5.6 million lists
    if kind == "native":
        path = tmp_path / "study.jsonl"
        path.write_text(_line(junk))
        args = ["native", str(path)]
    elif kind == "inspect.eval":
        path = tmp_path / "log.eval"
        path.write_bytes(hostile_eval(junk)[0])
        args = ["inspect", str(path), "--pass-threshold", "0.5"]
    else:
        path = tmp_path / "log.json"
        path.write_text(hostile_inspect_json(junk))
        args = ["inspect", str(path), "--pass-threshold", "0.5"]
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'cli.sqlite3'}"}
    subprocess.run(manage_py("migrate", "-v", "0"), env=env, check=True)

    seconds, peak, status, out = peak_rss_of_command(manage_py("ingest", *args, "--no-progress"), env)

    assert status != 0 and "Traceback" not in out
    assert f"more than {MAX_VALUES:,} JSON values" in out and "nothing was stored" in out
    assert peak < PEAK_RSS_MB * 2**20, f"peak {peak / 2**20:.0f} MB in {seconds:.1f} s"


@pytest.mark.slow
def test_the_cli_says_which_line_is_nested_too_deeply_or_has_too_many_digits(tmp_path):
    path = tmp_path / "study.jsonl"
    path.write_text(_line(DEEP) + _line(DIGITS))
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'cli.sqlite3'}"}
    subprocess.run(manage_py("migrate", "-v", "0"), env=env, check=True)

    result = subprocess.run(
        manage_py("ingest", "native", str(path), "--no-progress"), env=env, capture_output=True, text=True
    )

    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"study.jsonl:1: the JSON is nested too deeply (more than {MAX_DEPTH} levels)" in result.stderr
    assert "study.jsonl:2: the JSON has a number of more than" in result.stderr
