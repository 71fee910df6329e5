"""Every writer of a benchmark takes its advisory lock before reading its rows (PostgreSQL only).

Native imports look their benchmark up themselves; re-score (EvolIF) and re-check (ManyIH
style) read a run's attempts and verdicts before writing. Each test holds the benchmark's
lock in another transaction that changes the rows, and checks that the writer waited and
then worked from what that transaction committed.
"""

import importlib.util
import threading
import time
from pathlib import Path

import pytest
from django.db import transaction

from runs import services
from runs.ingest import IngestFailed, Options, Source, ingest
from runs.metrics.hierarchy import CHECKER_JUDGE as STYLE_CHECKER
from runs.models import Attempt, Benchmark, Run, Verdict
from runs.recheck import EVOLIF_CHECKER, recheck_run

from ..threads import in_thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("postgres")]
TESTS = Path(__file__).resolve().parents[1]
NATIVE = TESTS / "fixtures" / "native" / "study.jsonl"
MANYIH = TESTS / "fixtures" / "manyih"


class Holder:
    """Another transaction that takes the benchmark's lock, changes rows, and commits when released."""

    def __init__(self, benchmark_id: int, change=lambda: None):
        self.holding, self.release = threading.Event(), threading.Event()

        def hold():
            with transaction.atomic():
                services.benchmarks_lock([benchmark_id])
                change()
                self.holding.set()
                assert self.release.wait(30)

        self.thread, _, self.errors = in_thread(hold)
        assert self.holding.wait(10)

    def finish(self):
        self.release.set()
        self.thread.join(30)
        assert not self.thread.is_alive() and self.errors == []


def _waits_then_finishes(holder, writers, seconds=1.0):
    time.sleep(seconds)
    assert all(t.is_alive() for t, _, _ in writers), "a writer went ahead while another held the benchmark's lock"
    holder.finish()
    for thread, _, errors in writers:
        thread.join(60)
        assert not thread.is_alive()
        assert errors == [], errors


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_native_imports_of_the_same_file_wait_for_the_lock_and_the_second_finds_it_unchanged():
    bench = Benchmark.objects.create(
        slug="acme-agent-if",
        name="Acme agent IF",
        kind="checklist",
        version="2025.1",
        description="Checklist-scored agent tasks from the Acme harness",
    )
    holder = Holder(bench.id)
    writers = [in_thread(ingest, "native", [Source.of(NATIVE)], Options()) for _ in range(2)]
    _waits_then_finishes(holder, writers)
    verdicts = sorted((dict(r.counts["verdicts"]) for _, [r], _ in writers), key=str)
    assert verdicts == [{"created": 12}, {"unchanged": 12}]
    assert Verdict.objects.count() == 12 and Run.objects.count() == 1


def test_a_native_import_naming_a_stored_benchmark_waits_for_its_lock(tmp_path):
    bench = Benchmark.objects.create(slug="acme-agent-if", name="Acme agent IF", kind="checklist")
    body = [line for line in NATIVE.read_text(encoding="utf-8").splitlines() if '"type": "benchmark"' not in line]
    source = tmp_path / "records.jsonl"
    source.write_text("\n".join(body) + "\n", encoding="utf-8")
    holder = Holder(bench.id)
    writers = [in_thread(ingest, "native", [Source.of(source)], Options(benchmark="acme-agent-if")) for _ in range(2)]
    _waits_then_finishes(holder, writers)
    assert sorted((dict(r.counts["verdicts"]) for _, [r], _ in writers), key=str) == [
        {"created": 12},
        {"unchanged": 12},
    ]


def test_a_dialogue_recheck_waits_for_the_lock_and_scores_the_attempts_committed_before_it():
    build_run = _load("_ifportal_rescore_tests", TESTS / "runs" / "test_recheck_dialogue.py").build_run
    run, attempt, _ = build_run()
    other = build_run(label="m2")[1]  # another run of the same benchmark, left alone

    holder = Holder(run.benchmark_id, lambda: Attempt.objects.filter(pk=attempt.pk).delete())
    writer = in_thread(lambda: recheck_run(run=run))
    _waits_then_finishes(holder, [writer])
    [report] = writer[1]
    assert report.attempts == 0  # the attempt deleted before the rescore got the lock is not scored
    assert not Verdict.objects.filter(judge__name=EVOLIF_CHECKER).exists()
    assert Attempt.objects.filter(pk=other.pk).exists()


def test_a_style_recheck_waits_for_the_lock_and_checks_the_attempts_committed_before_it():
    ingest("manyih-data", [Source.of(MANYIH / "coding_small.json")], Options())
    ingest("manyih-results", [Source.of(MANYIH / "results_small.json")], Options(model="acme/coder-1"))
    run = Run.objects.select_related("benchmark").get()
    attempts = list(Attempt.objects.filter(run=run).order_by("id").values_list("id", flat=True))
    assert len(attempts) >= 2
    deleted = attempts[0]

    holder = Holder(run.benchmark_id, lambda: Attempt.objects.filter(pk=deleted).delete())
    writer = in_thread(lambda: recheck_run(run=run))
    _waits_then_finishes(holder, [writer])
    [report] = writer[1]
    assert report.attempts == len(attempts) - 1
    checked = set(Verdict.objects.filter(judge__name=STYLE_CHECKER).values_list("attempt_id", flat=True))
    assert deleted not in checked and checked <= set(attempts[1:]) and checked


def test_a_failed_native_import_behind_the_lock_stores_nothing():
    bench = Benchmark.objects.create(slug="acme-agent-if", name="Acme agent IF", kind="dialogue")
    holder = Holder(bench.id)
    writer = in_thread(ingest, "native", [Source.of(NATIVE)], Options())
    time.sleep(1.0)
    assert writer[0].is_alive()
    holder.finish()
    writer[0].join(60)
    assert len(writer[2]) == 1 and isinstance(writer[2][0], IngestFailed)
    assert "stored as a dialogue benchmark" in str(writer[2][0])
    assert not Run.objects.exists()
