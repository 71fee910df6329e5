"""runs.bulk.copies_behind: an ingest's verdicts go in on a thread of their own while it reads the next file.

What it must keep: every statement of the caller's sees the rows of a COPY submitted before it (it waits),
a COPY that fails fails the caller's transaction with the COPY's own error, raised in the caller's thread,
and nothing of it is stored; the verdicts' foreign keys are checked with the COPY, not at the commit.
"""

from __future__ import annotations

import sys
import threading

import pytest
from django.db import IntegrityError, connection, transaction

from runs.bulk import COPY_BEHIND_SWITCH_INTERVAL, _switching_often, bulk_insert_rows, copies_behind
from runs.models import AgentModel, Attempt, Benchmark, ChecklistItem, Instance, Judge, Run, Verdict

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def keys():
    benchmark = Benchmark.objects.create(slug="b", name="B")
    instance = Instance.objects.create(benchmark=benchmark, external_id="i1")
    items = [ChecklistItem.objects.create(instance=instance, key=f"c{n}", description="d") for n in range(30)]
    run = Run.objects.create(benchmark=benchmark, model=AgentModel.objects.create(name="m"), label="r")
    attempt = Attempt.objects.create(run=run, instance=instance)
    return attempt, items, Judge.objects.create(name="j")


def rows_of(attempt_id: int, items, judge) -> list[dict]:
    return [
        {
            "attempt_id": attempt_id,
            "item_id": item.id,
            "judge_id": judge.id,
            "result": "pass",
            "reasoning": "理由 \t tab\nline \\ backslash",
            "score": None,
            "evidence": None,
        }
        for item in items
    ]


def test_a_statement_after_a_copy_behind_sees_its_rows(postgres, keys):
    attempt, items, judge = keys
    with transaction.atomic():
        with copies_behind(Verdict) as behind:
            assert behind is not None
            bulk_insert_rows(Verdict, rows_of(attempt.id, items, judge), behind=behind)
            # the ORM's statement waits for the COPY under way: the rows are there
            assert Verdict.objects.filter(attempt=attempt).count() == len(items)
            bulk_insert_rows(Verdict, rows_of(attempt.id, items[:0], judge), behind=behind)
    stored = Verdict.objects.get(attempt=attempt, item=items[0])
    assert stored.reasoning == "理由 \t tab\nline \\ backslash"


def test_a_failed_copy_behind_raises_in_the_callers_thread_and_stores_nothing(postgres, keys):
    attempt, items, judge = keys
    missing = attempt.id + 1000
    with pytest.raises(IntegrityError, match="foreign key"):
        with transaction.atomic():
            with copies_behind(Verdict) as behind:
                bulk_insert_rows(Verdict, rows_of(attempt.id, items, judge), behind=behind)
                bulk_insert_rows(Verdict, rows_of(missing, items, judge), behind=behind)
                # checked with the COPY (the key is IMMEDIATE inside the block), so it fails before the commit
                Verdict.objects.count()
            pytest.fail("the failed COPY was not raised before the block ended")  # pragma: no cover
    assert not Verdict.objects.exists()


def test_an_error_in_the_block_is_the_one_raised_and_the_copy_is_done_before_the_rollback(postgres, keys):
    attempt, items, judge = keys
    with pytest.raises(ValueError, match="the block's own") as raised:
        with transaction.atomic():
            with copies_behind(Verdict) as behind:
                bulk_insert_rows(Verdict, rows_of(attempt.id + 1000, items, judge), behind=behind)
                raise ValueError("the block's own")
    assert any("COPY behind it failed" in note for note in raised.value.__notes__)
    assert not Verdict.objects.exists()
    # the connection is usable: nothing was left running on it
    assert Verdict.objects.count() == 0


def test_the_keys_are_deferred_again_after_the_block(postgres, keys):
    attempt, items, judge = keys
    stored_before_the_commit = False
    with pytest.raises(IntegrityError):
        with transaction.atomic():
            with copies_behind(Verdict):
                pass
            # after the block a missing key is found at the commit, as Django makes the keys, not at the COPY
            bulk_insert_rows(Verdict, rows_of(attempt.id + 1000, items, judge))
            stored_before_the_commit = Verdict.objects.count() == len(items)
    assert stored_before_the_commit


def test_the_block_waits_for_the_last_copy(postgres, keys):
    attempt, items, judge = keys
    with transaction.atomic():
        with copies_behind(Verdict) as behind:
            bulk_insert_rows(Verdict, rows_of(attempt.id, items, judge), behind=behind)
        with connection.cursor() as cursor:  # a raw statement outside the block: nothing left to wait for
            cursor.execute(f"SELECT count(*) FROM {Verdict._meta.db_table}")
            assert cursor.fetchone()[0] == len(items)


def test_elsewhere_there_is_no_thread(keys):
    if connection.vendor == "postgresql":
        pytest.skip("the SQLite case")
    attempt, items, judge = keys
    with transaction.atomic(), copies_behind(Verdict) as behind:
        assert behind is None
        bulk_insert_rows(Verdict, rows_of(attempt.id, items, judge), behind=behind)
    assert Verdict.objects.count() == len(items)


@pytest.fixture
def switch_interval():
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.004)
    yield 0.004
    sys.setswitchinterval(before)


def test_the_copy_thread_gets_the_interpreter_back_soon_inside_the_block_only(postgres, keys, switch_interval):
    attempt, items, judge = keys
    with transaction.atomic(), copies_behind(Verdict) as behind:
        assert sys.getswitchinterval() == pytest.approx(COPY_BEHIND_SWITCH_INTERVAL)
        bulk_insert_rows(Verdict, rows_of(attempt.id, items, judge), behind=behind)
    assert sys.getswitchinterval() == pytest.approx(switch_interval)
    with pytest.raises(RuntimeError), transaction.atomic(), copies_behind(Verdict):
        raise RuntimeError("the block failed")
    assert sys.getswitchinterval() == pytest.approx(switch_interval)


def test_overlapping_blocks_of_two_threads_give_the_interval_back_when_the_last_ends(switch_interval):
    entered, leave = threading.Event(), threading.Event()

    def other_import() -> None:
        with _switching_often():
            entered.set()
            leave.wait(5)

    thread = threading.Thread(target=other_import)
    with _switching_often():
        thread.start()
        assert entered.wait(5)
    # this block ended first; the other thread's is still open
    assert sys.getswitchinterval() == pytest.approx(COPY_BEHIND_SWITCH_INTERVAL)
    leave.set()
    thread.join(5)
    assert sys.getswitchinterval() == pytest.approx(switch_interval)
