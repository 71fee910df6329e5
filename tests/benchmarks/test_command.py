"""`manage.py benchmark` end to end on a tiny study (PostgreSQL): the figures of its targets come out, the
COPY baselines are of the same rows, and nothing of the study is left behind."""

import io
import json
import os
import subprocess
import sys

import pytest
from django.core.management import call_command
from django.db import connection

from ifportal.benchmarks.study import child_pids, workers_ready_ms
from runs.models import Benchmark, SearchText, Verdict

from ..threads import worker_database_url

pytestmark = pytest.mark.django_db(transaction=True)


def test_benchmark_prints_every_ingest_figure_and_cleans_up(postgres, tmp_path, monkeypatch):
    # the large-trajectory ingest runs as a child process: it must reach this test database
    monkeypatch.setenv("DATABASE_URL", worker_database_url())
    study = tmp_path / "study"
    monkeypatch.setattr("ifportal.benchmarks.study.tmpdir", lambda: study)
    out = tmp_path / "figures.json"
    call_command(
        "benchmark",
        instances=4,
        items=3,
        models=2,
        repetitions=1,
        judges=2,
        trajectory_mb=1,
        long_trajectory_messages=400,
        long_trajectory_mb=1,
        skip_http=True,
        json=str(out),
        stdout=open(tmp_path / "stdout", "w"),
    )
    figures = json.loads(out.read_text())

    assert figures["size"]["verdicts"] == 4 * 3 * 2 * 1 * 2
    assert figures["ingest"]["verdicts"] == 48
    assert figures["ingest"]["verdicts_per_second"] > 0
    raw, like, table = (
        figures[k]
        for k in (
            "copy_rows_per_second",
            "copy_into_verdict_like_table_rows_per_second",
            "copy_into_verdict_table_rows_per_second",
        )
    )
    assert raw > 0 and like > 0 and table > 0
    # the rate as printed (whole verdicts/s): "seconds" is rounded to 0.01 s, too coarse for a 50 ms ingest
    rate = figures["ingest"]["verdicts_per_second"]
    assert figures["ingest_share_of_copy_into_verdict_table"] == pytest.approx(rate / table, rel=0.05, abs=1e-4)
    # the study again through `manage.py ingest` as a user runs it: two new processes over the harness's folder
    cli = figures["ingest_cli"]
    assert cli["verdicts"] == 48 and cli["commands"] == 2
    assert cli["seconds"] == pytest.approx(cli["instances_seconds"] + cli["scores_seconds"], abs=0.02)
    # printed as a whole number of verdicts/s (rounding alone is up to 0.5) from seconds rounded to 0.01 s
    assert cli["verdicts_per_second"] == pytest.approx(48 / cli["seconds"], rel=0.05, abs=0.6)
    assert figures["ingest_cli_share_of_copy_into_verdict_table"] == pytest.approx(
        cli["verdicts_per_second"] / table, rel=0.05, abs=1e-4
    )
    # the results folder's own command, its import as a user runs it
    assert cli["scores_command_verdicts_per_second"] == pytest.approx(48 / cli["scores_seconds"], rel=0.05, abs=0.6)
    assert figures["ingest_folder_share_of_copy_into_verdict_table"] == pytest.approx(
        cli["scores_command_verdicts_per_second"] / table, rel=0.05, abs=1e-4
    )
    # into a copy of the database as it was before the study (the COPY-fk baseline's table starts empty too),
    # dropped afterwards
    assert cli["database"] == "a copy of this one before the study"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_database WHERE datname = %s", [f"{connection.settings_dict['NAME']}_cli"]
        )
        assert cursor.fetchone()[0] == 0
    assert figures["ingest"]["files"] == 2 * 1 * 2
    assert figures["large_trajectory"]["peak_rss_mb"] > 0
    assert figures["notebook_leaderboard_seconds"] > 0
    # the transcript search was measured on what was imported: the large trajectory's tool calls hold /app/f7.py
    search = figures["search"]
    assert search["search_rows"] > 0 and search["all_queries"]["p95_ms"] > 0
    assert search["rare phrase in trajectories"]["hits_on_first_page"] >= 1
    assert search["phrase found nowhere"]["hits_on_first_page"] == 0
    # the long trajectory went through `manage.py ingest` (a child process) into rows a page reads a window of
    long = figures["long_trajectory"]
    assert long["import"]["messages"] == 400 and long["import"]["peak_rss_mb"] > 0
    assert long["import"]["target_peak_rss_mb"] == 400 and long["message_rows_mb"] > 0 and "http" not in long
    assert not Benchmark.objects.filter(slug="benchmark-long-trajectory").exists()
    # the study is gone (the files it generated too), and so are the COPY tables
    assert not study.exists()
    assert not Benchmark.objects.filter(slug__in=["benchmark-study", "benchmark-study-cli"]).exists()
    assert Verdict.objects.count() == 0 and SearchText.objects.count() == 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'bench_copy%%'")
        assert cursor.fetchone()[0] == 0


def test_the_10m_options_ingest_in_batches_and_report_size_and_the_first_and_last_batch(
    postgres, tmp_path, monkeypatch
):
    """`make benchmark-10m`'s options on a tiny study: whole models per batch, the first batch into an empty
    benchmark and the last at full size side by side, COPY on a sample, no CLI load, size per million verdicts."""
    monkeypatch.setenv("DATABASE_URL", worker_database_url())
    monkeypatch.setattr("ifportal.benchmarks.study.tmpdir", lambda: tmp_path / "study")
    out = tmp_path / "figures.json"
    call_command(
        "benchmark",
        instances=4,
        items=3,
        models=5,
        repetitions=1,
        judges=2,
        trajectory_mb=1,
        skip_http=True,
        skip_cli=True,
        ingest_batch_verdicts=50,
        copy_rows=30,
        ingest_pairs=2,
        json=str(out),
        stdout=open(tmp_path / "stdout", "w"),
    )
    figures = json.loads(out.read_text())
    ingest = figures["ingest"]
    per_model = 4 * 3 * 1 * 2
    assert ingest["verdicts"] == 5 * per_model == sum(b["verdicts"] for b in ingest["batches"])
    assert [b["models"] for b in ingest["batches"]] == [3, 2]  # ceil(50 / 24) = 3 whole models a batch
    assert ingest["first_batch"]["verdicts_in_benchmark_before"] == 0
    assert ingest["last_batch"]["verdicts_in_benchmark_before"] == 3 * per_model
    assert ingest["first_batch"]["verdicts_per_second"] > 0 and ingest["last_batch"]["verdicts_per_second"] > 0
    # where each batch's time went: this process's CPU, the server's WAL and checkpoints (the database
    # backend's CPU where the server runs on this machine, as in CI)
    for batch in ingest["batches"]:
        assert 0 < batch["python_cpu_seconds"] <= batch["seconds"] + 0.1 and batch["wal_mb"] > 0
        assert batch["checkpoints"] >= 0
        assert batch["database_cpu_seconds"] is None or 0 <= batch["database_cpu_seconds"] <= batch["seconds"] + 0.1
    assert figures["ingest_cli"] is None and figures["copy_rows_per_second"] > 0
    size = figures["database_size"]
    assert size["verdicts_mb_per_million_verdicts"] > 0
    assert size["database_mb_per_million_verdicts"] >= size["verdicts_mb_per_million_verdicts"]
    assert not Benchmark.objects.filter(slug="benchmark-study").exists()
    # the same batch of ten new models into copies of the study after its first batch (3 models) and whole (5),
    # alternating: small then big, big then small; the copies and the first batch's database are gone
    pairs = figures["ingest_pairs"]["pairs"]
    assert len(pairs) == 2
    for pair in pairs:
        assert (pair["small"]["verdicts_in_benchmark_before"], pair["big"]["verdicts_in_benchmark_before"]) == (
            3 * per_model,
            5 * per_model,
        )
        assert pair["small"]["verdicts"] == pair["big"]["verdicts"] == 10 * per_model
        assert pair["big_against_small"] == pytest.approx(
            pair["big"]["verdicts_per_second"] / pair["small"]["verdicts_per_second"] - 1, abs=1e-4
        )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_database WHERE datname LIKE %s", [connection.settings_dict["NAME"] + "_%"]
        )
        assert cursor.fetchone()[0] == 0
    assert Verdict.objects.count() == 0


def test_the_search_corpus_option_grows_the_corpus_and_measures_its_searches(postgres, tmp_path, monkeypatch):
    """`make benchmark-search`'s option on a tiny study: the corpus is generated into the study's attempts,
    every corpus query is timed next to the study's own, the needles counted, and all of it removed after."""
    monkeypatch.setenv("DATABASE_URL", worker_database_url())
    monkeypatch.setattr("ifportal.benchmarks.study.tmpdir", lambda: tmp_path / "study")
    out = tmp_path / "figures.json"
    call_command(
        "benchmark",
        instances=4,
        items=3,
        models=2,
        repetitions=1,
        judges=2,
        trajectory_mb=1,
        skip_http=True,
        skip_cli=True,
        skip_long_trajectory=True,
        search_corpus_mb=0.2,
        json=str(out),
        stdout=open(tmp_path / "stdout", "w"),
    )
    figures = json.loads(out.read_text())
    corpus = figures["search_corpus"]
    # 8 attempts, 5 with a trajectory already (the large file's 4 of model-0, the 5 MB one of model-1): 3 get one
    assert corpus["attempts"] == 3 and 0.15 <= corpus["text_mb"] <= 0.25
    assert corpus["needle_rows"]["git push --force"] == 1 and corpus["needle_rows"]["quokka_ledger_overflow"] == 3
    assert corpus["index_rebuilt"] == ["search_text_trgm"] and corpus["sizes_mb"]["search_text_trgm"] > 0
    search = figures["search"]
    assert search["corpus: git push --force (0.1% of trajectories)"]["hits_on_first_page"] == 1
    assert search["corpus: rare token in 5 rows"]["hits_on_first_page"] == 3
    assert search["phrase found nowhere"]["hits_on_first_page"] == 0
    assert search["corpus: phrase found nowhere"]["hits_on_first_page"] == 0
    assert search["search_text_mb"] >= corpus["text_mb"]
    assert not Benchmark.objects.filter(slug="benchmark-study").exists() and SearchText.objects.count() == 0


def test_the_http_figures_include_every_html_page_and_the_long_trajectory_in_chromium(postgres, tmp_path, monkeypatch):
    """The pages a reader opens (not the JSON APIs) are opened in Chromium while the measured server runs, the
    long trajectory's attempt page too; each with numeric first paint figures, the leaderboard's chart drawn,
    and no console error."""
    from ifportal.benchmarks.browser import CHROMIUM

    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is absent: install Debian's chromium (apt-get install chromium) to run browser tests")
    pytest.importorskip("playwright.sync_api")
    monkeypatch.setenv("DATABASE_URL", worker_database_url())  # the web server's workers read this test database
    monkeypatch.setattr("ifportal.benchmarks.study.tmpdir", lambda: tmp_path / "study")
    out = tmp_path / "figures.json"
    call_command(
        "benchmark",
        instances=4,
        items=3,
        models=2,
        repetitions=1,
        judges=2,
        trajectory_mb=1,
        long_trajectory_messages=400,
        long_trajectory_mb=1,
        skip_cli=True,
        requests=2,
        clients=2,
        load_seconds=0.5,
        chromium_samples=2,
        json=str(out),
        stdout=io.StringIO(),
        stderr=(said := io.StringIO()),
    )
    figures = json.loads(out.read_text())
    chromium = figures["http"]["chromium"]

    assert isinstance(chromium, dict), chromium
    labels = list(chromium["pages"])  # the pages timed over HTTP, by the same labels, but the JSON APIs
    assert labels[:2] == ["leaderboard", "drill-down"] and labels[-2:] == ["search page", "compare two models (page)"]
    assert [label.split(" (")[0] for label in labels[2:4]] == ["attempt", "attempt"] and len(labels) == 6
    assert all(figures["http"][label]["path"] == chromium["pages"][label]["path"] for label in labels)
    for api in ("search API", "compare two models (API)"):
        assert api in figures["http"] and api not in labels
    assert figures["http"]["compare, pairs nobody asked"]["pairs"] == 0  # two models: the warm pair is all there is
    long = figures["long_trajectory"]["http"]["chromium"]["pages"]["long trajectory, attempt page"]
    for page in [*chromium["pages"].values(), long]:
        assert page["statuses"] == [200] and page["console_errors"] == 0, page["errors"]
        assert 0 < page["first_paint"]["median_ms"] <= page["first_paint"]["p95_ms"] and page["not_painted"] == 0
    assert (
        chromium["pages"]["leaderboard"]["charts"] == 1
        and chromium["pages"]["leaderboard"]["charts_drawn"]["p95_ms"] > 0
    )
    first = figures["long_trajectory"]["http"]["first_paint"]
    assert first["worker_boot_ms"] > 0 and first["cold_ms"] > 0  # the first request waited for no boot
    found = figures["long_trajectory"]["http"]["find in thread"]  # "Find in this thread", by the search index
    assert found["statuses"] == [200] and found["p95_ms"] > 0 and found["target_p95_ms"] == 300
    printed = said.getvalue()
    assert "leaderboard in Chromium (cold cache): first paint median " in printed
    assert "long trajectory, attempt page first paint: the worker booted in " in printed
    assert "long trajectory, attempt page in Chromium (cold cache): first paint median " in printed


def test_a_worker_is_ready_once_its_cpu_time_stops_growing():
    """Timed requests go to workers that have booted (ifportal.benchmarks.study.workers_ready_ms, which WebServer waits
    for): a process that computes for about 0.8 s and then waits is ready after about 0.8 s, not before."""
    busy = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nend = time.process_time() + 0.8\nwhile time.process_time() < end: pass\ntime.sleep(30)",
        ]
    )
    try:
        [ready] = workers_ready_ms([busy.pid], settle=0.1)
        assert 700 <= ready < 5000 and busy.poll() is None
    finally:
        busy.kill()
        busy.wait()


def test_the_benchmark_finds_a_process_s_children_and_only_them():
    """gunicorn's workers are found by their parent (ifportal.benchmarks.study.child_pids): a child of this
    test process is listed for it, and not for the child itself."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in child_pids(os.getpid())
        assert child_pids(child.pid) == []
    finally:
        child.kill()
        child.wait()
