"""`ingest FORMAT DIR --watch` (runs.ingest.watch): a log written in parts while the watcher looks shows its
figures as they land, a file caught half-written is tried again and never stored in part, a run being written
says so on the leaderboard, whose #results fragment polls while it does."""

import html
import json
import re
import shutil
import time
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from runs.ingest import Options, inspect_ai
from runs.ingest.watch import Watcher
from runs.models import Attempt, Run
from runs.selectors.run_status import run_statuses

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GRADED = FIXTURES / "inspect" / "wild" / "graded.eval"
STUDY = FIXTURES / "native" / "study.jsonl"


class Clock:
    """A clock the test moves: the watcher's settle time passes without sleeping."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _entries() -> dict[str, bytes]:
    with zipfile.ZipFile(GRADED) as archive:
        return {i.filename: inspect_ai._entry_bytes(archive, i, 1 << 24) for i in archive.infolist()}


def _write_in_progress(path: Path, samples: list[str]) -> None:
    """The .eval as inspect_ai has it while the evaluation runs: its start journal and the samples done so far,
    no header.json (written when the evaluation ends)."""
    entries = _entries()
    tmp = path.with_suffix(".part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_journal/start.json", entries["_journal/start.json"])
        for sample in samples:
            archive.writestr(f"samples/{sample}_epoch_1.json", entries[f"samples/{sample}_epoch_1.json"])
    tmp.replace(path)


def _leaderboard(client) -> str:
    return client.get(reverse("runs:checklist-leaderboard", args=["graded_qa"])).content.decode()


def _match_row(client) -> dict:
    [row] = client.get(reverse("api:leaderboard", args=["graded_qa"]) + "?judge=match").json()["rows"]
    return row


def test_an_inspect_log_written_in_parts_shows_its_figures_as_they_land(tmp_path, reviewer_client):
    logs = tmp_path / "logs"
    logs.mkdir()
    watcher = Watcher("inspect", [logs], Options(), clock=Clock())
    assert watcher.once() == []  # an empty log folder is watched, not refused

    log = logs / "graded.eval"
    _write_in_progress(log, ["sum", "grass"])
    [line] = watcher.once()
    assert line.startswith("graded.eval: created ")
    [status] = run_statuses(benchmark_id=Run.objects.get().benchmark_id)
    assert (status.status, status.done, status.planned) == ("started", 2, 4)
    page = _leaderboard(reviewer_client)
    assert "in progress: 2 samples so far</span> of 4 planned" in page
    assert 'hx-trigger="every 10s"' in page  # the #results fragment polls while the run is written
    first = _match_row(reviewer_client)
    attempt = reviewer_client.get(reverse("runs:attempt", args=[Attempt.objects.first().pk])).content.decode()
    assert ">run in progress</a>" in attempt  # the run's attempts say it too, linking the leaderboard's count
    assert watcher.once() == []  # nothing changed: nothing imported again

    # caught half-written: the bytes inspect_ai has flushed so far are no zip yet; nothing of it is stored
    _write_in_progress(log, ["sum", "grass", "sky"])
    whole = log.read_bytes()
    log.write_bytes(whole[: len(whole) // 2])
    [line] = watcher.once()
    assert "graded.eval: not stored yet, tried again when it changes" in line and "truncated" in line
    assert Attempt.objects.count() == 2 and watcher.once() == []  # not tried again until it changes
    log.write_bytes(whole)
    [line] = watcher.once()
    assert line.startswith("graded.eval: created ")
    assert Attempt.objects.count() == 3
    page = _leaderboard(reviewer_client)
    assert "in progress: 3 samples so far" in page
    # what the open page's #results asks for every 10 s: the fragment with the new figures, still polling
    polled = re.search(r'<section id="results" hx-get="([^"]+)" hx-trigger="every 10s"', page).group(1)
    fragment = reviewer_client.get(html.unescape(polled), HTTP_HX_REQUEST="true").content.decode()
    assert '<section id="results" hx-get=' in fragment
    assert "in progress: 3 samples so far" in fragment and "<html" not in fragment

    # the evaluation ends: inspect_ai writes the header; the same run, now finished, with Inspect's own figures
    shutil.copy(GRADED, log)
    [line] = watcher.once()
    assert line.startswith("graded.eval: ") and "updated" in line
    [run] = Run.objects.all()
    assert Attempt.objects.count() == 4 and run.settings["status"] == "success"
    assert run_statuses(benchmark_id=run.benchmark_id) == []
    page = _leaderboard(reviewer_client)
    assert "in progress" not in page and 'hx-trigger="every 10s"' not in page  # polling stops with the run
    fragment = reviewer_client.get(html.unescape(polled), HTTP_HX_REQUEST="true").content.decode()
    assert '<section id="results">' in fragment and "in progress" not in fragment  # the last poll ends it
    row = _match_row(reviewer_client)
    attempt = reviewer_client.get(reverse("runs:attempt", args=[Attempt.objects.first().pk])).content.decode()
    assert "run in progress" not in attempt
    assert row["isr"] == pytest.approx(100 * run.settings["results"]["match"]["accuracy"])
    assert row["isr"] != first["isr"] or row["n"] != first["n"]


def _study_lines() -> list[str]:
    return STUDY.read_text(encoding="utf-8").splitlines(keepends=True)


def test_an_appended_file_marks_its_run_in_progress_until_it_settles(tmp_path, reviewer_client):
    folder = tmp_path / "out"
    folder.mkdir()
    lines = _study_lines()
    runs_at = [i for i, line in enumerate(lines) if json.loads(line)["type"] == "run"]
    study = folder / "study.jsonl"
    clock = Clock()
    watcher = Watcher("native", [folder], Options(), clock=clock, settle=60)
    assert watcher.once() == []

    # the harness has written its first run's records and half of the next line
    cut = runs_at[1] if len(runs_at) > 1 else len(lines) - 2
    study.write_text("".join(lines[:cut]) + lines[cut][: len(lines[cut]) // 2], encoding="utf-8")
    [line] = watcher.once()
    assert line.startswith("study.jsonl: not stored yet") and not Run.objects.exists()

    study.write_text("".join(lines[:cut]), encoding="utf-8")
    clock.now += 5
    [line] = watcher.once()
    assert line.startswith("study.jsonl: created ") and line.endswith("in progress (1 run)")
    [run] = Run.objects.all()
    assert run.settings["status"] == "started" and run.settings["watched"] is True
    assert run.settings["temperature"] == 0  # the harness's own settings are kept beside the mark
    [status] = run_statuses(benchmark_id=run.benchmark_id)
    done = Attempt.objects.filter(run=run).count()
    assert status.in_progress and status.done == done
    assert (
        f"in progress: {done} sample{'s' if done != 1 else ''} so far"
        in reviewer_client.get(reverse("runs:checklist-leaderboard", args=[run.benchmark.slug])).content.decode()
    )

    study.write_text("".join(lines), encoding="utf-8")
    clock.now += 5
    [line] = watcher.once()
    assert line.startswith("study.jsonl: ") and "in progress" in line
    assert Run.objects.filter(settings__status="started").count() == Run.objects.count() >= 1

    clock.now += 61  # unchanged for the settle time: no longer in progress, the harness's settings as they were
    [line] = watcher.once()
    assert "no longer in progress" in line
    for run in Run.objects.all():
        assert "status" not in run.settings and "watched" not in run.settings
    assert run_statuses(benchmark_id=run.benchmark_id) == []


def test_a_file_there_when_the_watch_began_is_not_marked_and_stopping_takes_marks_off(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    lines = _study_lines()
    study = folder / "study.jsonl"
    study.write_text("".join(lines[:-1]), encoding="utf-8")
    clock = Clock()
    watcher = Watcher("native", [folder], Options(), clock=clock)
    said: list[str] = []
    watcher.run(0, said.append, steps=1)
    assert len(said) == 1 and said[0].startswith("study.jsonl: created ") and "in progress" not in said[0]
    assert not Run.objects.filter(settings__status="started").exists()

    study.write_text("".join(lines), encoding="utf-8")
    said.clear()
    for line in watcher.once():
        said.append(line)
    assert "in progress" in said[0] and Run.objects.filter(settings__status="started").exists()
    watcher.run(0, said.append, steps=1)  # a watch that stops leaves no run said to be in progress
    assert not Run.objects.filter(settings__status="started").exists()


def test_a_bad_file_is_said_once_and_listed_when_the_watch_stops(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "study.jsonl").write_text('{"type": "benchmark", "slug": "x"\n', encoding="utf-8")
    watcher = Watcher("native", [folder], Options(), clock=Clock())
    said: list[str] = []
    watcher.run(0, said.append, steps=3, sleep=lambda _s: None)
    assert said[0].startswith("study.jsonl: not stored yet, tried again when it changes: ")
    assert len(said) == 2 and said[1].endswith(f"study.jsonl: not stored ({said[0].split(': ', 2)[2]})")
    assert not Run.objects.exists()


def test_the_command_watches_until_ctrl_c_and_exits_cleanly(tmp_path, monkeypatch, capsys):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(GRADED, logs / "graded.eval")
    looks = []

    def sleep(seconds):
        looks.append(seconds)
        if len(looks) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", sleep)
    call_command("ingest", "inspect", str(logs), "--watch", "--interval", "0.5")  # returns: exit status 0
    out = capsys.readouterr()
    assert looks == [0.5, 0.5] and "stopped" in out.err
    [line] = out.out.splitlines()
    assert line.endswith("graded.eval: created " + line.split("graded.eval: created ", 1)[1])
    assert Attempt.objects.count() == 4
