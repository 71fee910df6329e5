"""Trajectories stored as message rows: the document comes back as imported, pages read one window,
jumps land on the window holding the message, and the migration splits documents stored before."""

import json

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.ingest.base import content_hash
from runs.models import Trajectory, TrajectoryMessage
from runs.trajectory_store import document_digest, trajectory_save, units_of
from runs.trajectory_view import PAGE, attempt_threads, stored_threads, thread_page

from .test_views_checklist import build_study

pytestmark = pytest.mark.django_db


def threads_of(n_pairs: int) -> list[dict]:
    """A main thread of tool calls and their results, with odd shapes mixed in, and a sub-agent."""
    messages = [
        {"role": "system", "content": "You are an agent.", "extra": {"kept": [1, 2]}},
        {"role": "user", "content": ["a", "list"]},  # not text: kept in `rest`
        {"role": "assistant", "content": "", "reasoning": "é thinking \u2028"},
    ]
    for k in range(n_pairs):
        messages += [
            {
                "role": "assistant",
                "content": f"step {k}",
                "tool_calls": [{"id": f"c{k}", "name": "Read", "arguments": {"path": f"/f{k}"}}],
            },
            {"role": "tool", "tool_call_id": f"c{k}", "tool_name": "Read", "content": f"body {k}", "is_error": k == 1},
        ]
    return [
        {"meta": {"thread": "main"}, "tools": [{"name": "Read"}], "messages": messages},
        {"meta": {"thread": "sub-agent 1"}, "tools": [], "messages": [{"role": "user", "content": "sub task"}]},
    ]


def test_it_gives_back_the_threads_as_imported_with_the_documents_hash_and_size():
    _, attempts = build_study(n_instances=1)
    threads = threads_of(5)
    trajectory = trajectory_save(attempt_id=attempts[0].id, threads=threads)
    assert stored_threads(attempts[0].id) == threads
    assert trajectory.content_hash == content_hash(threads)
    assert trajectory.size_bytes == len(json.dumps(threads, ensure_ascii=False).encode("utf-8"))
    assert document_digest(threads) == (content_hash(threads), trajectory.size_bytes)
    assert [(t.name, t.message_count, t.unit_count) for t in attempt_threads(attempts[0].id)] == [
        ("main", 13, 8),
        ("sub-agent 1", 1, 1),
    ]
    assert "messages" not in Trajectory.objects.get().threads[0]


def test_it_folds_each_tool_result_into_its_calls_unit_and_counts_assistant_turns():
    messages = threads_of(2)[0]["messages"]
    assert units_of(messages) == ([0, 1, 2, 3, 3, 4, 4], [None, None, 1, 2, None, 3, None])


def test_it_replaces_the_rows_when_a_trajectory_is_saved_again():
    _, attempts = build_study(n_instances=1)
    trajectory_save(attempt_id=attempts[0].id, threads=threads_of(50))
    trajectory_save(attempt_id=attempts[0].id, threads=threads_of(3))
    assert TrajectoryMessage.objects.filter(attempt_id=attempts[0].id).count() == 9 + 1
    assert stored_threads(attempts[0].id) == threads_of(3)


def test_a_window_reads_the_same_queries_and_rows_however_long_the_thread(reviewer_client):
    _, attempts = build_study(n_instances=2)
    trajectory_save(attempt_id=attempts[0].id, threads=threads_of(30))
    trajectory_save(attempt_id=attempts[1].id, threads=threads_of(3000))
    counts = []
    for attempt in attempts[:2]:
        with CaptureQueriesContext(connection) as queries:
            assert reviewer_client.get(reverse("runs:attempt", args=[attempt.id]) + "?at=45").status_code == 200
        counts.append(len(queries))
        windows = [q["sql"] for q in queries.captured_queries if "runs_trajectorymessage" in q["sql"]]
        assert len(windows) == 2  # the unit of message 45, then its window
    assert counts[0] == counts[1]
    long = thread_page(attempt_threads(attempts[1].id), at=4001)
    assert long["page"].number == (3 + 1999) // PAGE + 1 and long["at"] == 4001  # message 4001 opens unit 2002
    assert 4001 in [i for u in long["page"] for i in u["indices"]] and len(long["page"].object_list) == PAGE


def test_the_page_marks_the_message_it_was_opened_at_and_links_the_windows_around_it(reviewer_client):
    _, attempts = build_study(n_instances=1)
    trajectory_save(attempt_id=attempts[0].id, threads=threads_of(300))
    url = reverse("runs:attempt", args=[attempts[0].id])
    body = reviewer_client.get(url + "?thread=0&at=402").content.decode()  # the result of the call at 401
    assert 'class="result at" id="m-0-402"' in body and "step 199<" in body
    assert "603 messages in this thread, 303 entries with tool results under their calls; entries 201–240 shown" in body
    assert "Load the previous 40 messages" in body and "Load the next 40 messages" in body
    above = reviewer_client.get(
        url + "?thread=0&page=4", HTTP_HX_REQUEST="true", HTTP_X_WINDOW="above"
    ).content.decode()
    assert "Load the previous 40 messages" in above and "Load the next" not in above and "<html" not in above
    below = reviewer_client.get(url + "?thread=0&page=6", HTTP_HX_REQUEST="true").content.decode()
    assert "Load the previous" not in below and "Load the next 40 messages" in below
    found = reviewer_client.get(url + "?q=%2Ff12%22").content.decode()  # a tool call's arguments, as stored JSON
    assert "step 12<" in found and "step 13<" not in found


def test_it_migrates_documents_stored_before_into_rows(transactional_db):
    executor = MigrationExecutor(connection)
    executor.migrate([("runs", "0009_benchmark_searchable")])
    old = executor.loader.project_state([("runs", "0009_benchmark_searchable")]).apps
    bench = old.get_model("runs", "Benchmark").objects.create(slug="b", name="b", kind="checklist")
    instance = old.get_model("runs", "Instance").objects.create(benchmark=bench, external_id="i", content_hash="x")
    run = old.get_model("runs", "Run").objects.create(
        benchmark=bench, label="r", model=old.get_model("runs", "AgentModel").objects.create(name="m")
    )
    attempt = old.get_model("runs", "Attempt").objects.create(run=run, instance=instance)
    threads = threads_of(4)
    old.get_model("runs", "Trajectory").objects.create(
        attempt=attempt, threads=threads, message_count=12, size_bytes=1, content_hash="h"
    )
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert stored_threads(attempt.id) == threads
    assert [t.unit_count for t in attempt_threads(attempt.id)] == [7, 1]
    assert thread_page(attempt_threads(attempt.id), at=10)["page"].object_list[-1]["indices"] == [9, 10]
