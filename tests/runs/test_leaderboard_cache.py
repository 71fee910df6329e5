"""The leaderboard cache: tables are served from the cache until a write that changes them
commits, and then never again (ingest, rollup rebuild, admin deletion); nothing computed
inside a rolled-back transaction is cached. Runs on SQLite and PostgreSQL."""

import importlib.util
import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from ifportal.settings import cache_url_beside
from runs import cache as runs_cache
from runs.ingest import Options, Source, ingest
from runs.metrics.checklist import Filters
from runs.models import Attempt, Benchmark, ChecklistItem, Run, Verdict
from runs.selectors.checklist import compute_tables, leaderboard_tables
from runs.services import rollups_rebuild_for_attempts

NATIVE = Path(__file__).resolve().parents[1] / "fixtures" / "native" / "study.jsonl"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_study = _load("_ifportal_views_checklist", Path(__file__).with_name("test_views_checklist.py")).build_study


def state(**changes):
    return {"filters": Filters(), "by": "model", "sort": "-isr", "ci": False, "exclude": "none", **changes}


def numbers(tables):
    return [(r.model, r.group, r.n_attempts, round(r.isr, 4), round(r.csr, 4)) for r in tables.rows]


def generation(benchmark) -> int:
    return Benchmark.objects.values_list("data_generation", flat=True).get(pk=benchmark.pk)


@pytest.mark.django_db
def test_a_warm_leaderboard_costs_one_query_and_gives_the_same_tables(django_capture_on_commit_callbacks):
    bench, _ = build_study()
    for by in ("model", "category", "judge"):
        with django_capture_on_commit_callbacks(execute=True):
            cold = leaderboard_tables(bench, state(by=by))
        with CaptureQueriesContext(connection) as queries:
            warm = leaderboard_tables(bench, state(by=by))
        assert len(queries) == 1 and "data_generation" in queries[0]["sql"]
        assert numbers(warm) == numbers(cold) == numbers(compute_tables(bench.id, state(by=by)))
        assert warm.groups == cold.groups and warm.figure == cold.figure


@pytest.mark.django_db
def test_each_state_has_its_own_entry(django_capture_on_commit_callbacks):
    bench, _ = build_study()
    with django_capture_on_commit_callbacks(execute=True):
        best_first = leaderboard_tables(bench, state())
        worst_first = leaderboard_tables(bench, state(sort="isr"))
        one_judge = leaderboard_tables(bench, state(filters=Filters(judges=["j1"])))
    assert [r.model for r in best_first.rows] == ["beta", "alpha"]
    assert [r.model for r in worst_first.rows] == ["alpha", "beta"]
    assert all(list(r.per_judge) == ["j1"] for r in one_judge.rows)
    assert leaderboard_tables(bench, state(sort="isr")).rows[0].model == "alpha"


@pytest.mark.django_db
def test_excluded_items_are_part_of_the_key(django_capture_on_commit_callbacks):
    bench, _ = build_study()
    c1 = set(ChecklistItem.objects.filter(instance__benchmark=bench, key="c1").values_list("id", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        every_item = leaderboard_tables(bench, state())
        without_c1 = leaderboard_tables(bench, state(exclude="x"), excluded_items=c1)
    alpha = {
        t: next(r for r in tables.rows if r.model == "alpha")
        for t, tables in (("all", every_item), ("no c1", without_c1))
    }
    assert round(alpha["all"].isr, 2) == 66.67 and alpha["no c1"].isr == 100.0
    assert round(next(r for r in leaderboard_tables(bench, state()).rows if r.model == "alpha").isr, 2) == 66.67


@pytest.mark.django_db
def test_a_rollup_rebuild_bumps_the_generation_and_the_next_read_sees_new_numbers(django_capture_on_commit_callbacks):
    bench, attempts = build_study()
    with django_capture_on_commit_callbacks(execute=True):
        before = leaderboard_tables(bench, state())
    alpha = [a.id for a in attempts if a.run.model.name == "alpha"]
    Verdict.objects.filter(attempt_id__in=alpha).update(result="pass")
    assert numbers(leaderboard_tables(bench, state())) == numbers(before)  # rollups not rebuilt yet: same numbers
    generation_before = generation(bench)
    rollups_rebuild_for_attempts(alpha)
    assert generation(bench) == generation_before + 1
    after = leaderboard_tables(bench, state())
    assert numbers(after) != numbers(before) and numbers(after) == numbers(compute_tables(bench.id, state()))
    assert all(r.isr == 100.0 for r in after.rows)


@pytest.mark.django_db
def test_nothing_computed_in_a_rolled_back_transaction_is_cached(django_capture_on_commit_callbacks):
    bench, attempts = build_study()

    class Undo(Exception):
        pass

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with pytest.raises(Undo), transaction.atomic():
            Verdict.objects.filter(attempt__run__model__name="beta").update(result="fail")
            rollups_rebuild_for_attempts([a.id for a in attempts])
            assert all(r.model == "alpha" for r in leaderboard_tables(bench, state()).rows[:1])
            raise Undo
    assert callbacks == []
    assert numbers(leaderboard_tables(bench, state())) == numbers(compute_tables(bench.id, state()))
    assert leaderboard_tables(bench, state()).rows[0].model == "beta"


def _native_records():
    return [json.loads(line) for line in NATIVE.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(tmp_path, records, name="study.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    return Source.of(path)


@pytest.mark.django_db(transaction=True)
def test_the_page_changes_when_an_ingest_adds_and_corrects_verdicts(tmp_path):
    """Real commits (no test transaction): the page caches, an ingest commits, the page shows the new rows."""
    ingest("native", [Source.of(NATIVE)], Options())
    bench = Benchmark.objects.get(slug="acme-agent-if")
    user = get_user_model().objects.create_user("cache-reader", password="pw-cache-reader-1")
    client = Client()
    client.force_login(user)
    url = reverse("runs:checklist-leaderboard", args=[bench.slug])
    client.get(url)
    with CaptureQueriesContext(connection) as queries:
        first = client.get(url).content.decode()
    assert not any("runs_attemptrollup" in q["sql"] and "n_applicable" in q["sql"] for q in queries), (
        "second read not cached"
    )
    warm = leaderboard_tables(bench, state())

    records = _native_records()
    for r in records:
        if r["type"] == "verdict":
            r["result"] = "pass"
    records.append({"type": "run", "label": "model-y-r1", "model": "model-y"})
    records.append({"type": "attempt", "run": "model-y-r1", "instance": "repo-fix-001", "response": "done"})
    records.append(
        {
            "type": "verdict",
            "run": "model-y-r1",
            "instance": "repo-fix-001",
            "item": "sp-1",
            "judge": "alice",
            "result": "fail",
        }
    )
    ingest("native", [_write(tmp_path, records)], Options())

    fresh = leaderboard_tables(bench, state())
    assert numbers(fresh) == numbers(compute_tables(bench.id, state())) != numbers(warm)
    assert {r.model for r in fresh.rows} == {"model-x", "model-y"}
    second = client.get(url).content.decode()
    assert "model-y" in second and "model-y" not in first


@pytest.mark.django_db(transaction=True)
def test_an_unchanged_ingest_keeps_the_cache_and_a_deleted_run_leaves_the_leaderboard():
    ingest("native", [Source.of(NATIVE)], Options())
    bench = Benchmark.objects.get(slug="acme-agent-if")
    leaderboard_tables(bench, state())
    kept = generation(bench)
    ingest("native", [Source.of(NATIVE)], Options())
    assert generation(bench) == kept

    admin = get_user_model().objects.create_superuser("cache-admin", password="pw-cache-admin-1")
    client = Client()
    client.force_login(admin)
    run = Run.objects.get(label="model-x-r1")
    response = client.post(reverse("admin:runs_run_delete", args=[run.pk]), {"post": "yes"})
    assert response.status_code == 302
    assert generation(bench) > kept
    assert leaderboard_tables(bench, state()).rows == [] and not Attempt.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_admin_edit_of_a_verdict_rebuilds_rollups_and_shows():
    ingest("native", [Source.of(NATIVE)], Options())
    bench = Benchmark.objects.get(slug="acme-agent-if")
    before = leaderboard_tables(bench, state())
    verdict = Verdict.objects.filter(result="fail").select_related("judge").first()
    admin = get_user_model().objects.create_superuser("cache-admin", password="pw-cache-admin-1")
    client = Client()
    client.force_login(admin)
    response = client.post(
        reverse("admin:runs_verdict_change", args=[verdict.pk]),
        {
            "attempt": verdict.attempt_id,
            "item": verdict.item_id,
            "judge": verdict.judge_id,
            "result": "pass",
            "reasoning": verdict.reasoning,
            "score": "" if verdict.score is None else verdict.score,
            "evidence": json.dumps(verdict.evidence),
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    after = leaderboard_tables(bench, state())
    assert numbers(after) == numbers(compute_tables(bench.id, state())) != numbers(before)


@pytest.mark.parametrize(
    ("broker", "cache"),
    [
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/1"),
        ("redis://:pw@redis-host:6380", "redis://:pw@redis-host:6380/1"),
        ("rediss://h:6379/4?ssl_cert_reqs=none", "rediss://h:6379/5?ssl_cert_reqs=none"),
        ("redis://h/15", "redis://h/14"),
        ("amqp://guest@h//", ""),
        ("", ""),
    ],
)
def test_the_cache_sits_next_to_the_broker_in_its_own_database(broker, cache):
    assert cache_url_beside(broker) == cache


def test_the_code_version_covers_every_template_and_module_rendered_into_the_cache(tmp_path, monkeypatch):
    """A deploy that changes any template or runs module changes the version, so no older fragment is read."""
    before = runs_cache._code_version()
    template = (
        Path(runs_cache.__file__).resolve().parent.parent / "templates" / "runs" / "partials" / "_rank_change.html"
    )
    original = template.read_bytes()
    try:
        template.write_bytes(original + b"\n")
        assert runs_cache._code_version() != before
    finally:
        template.write_bytes(original)
    assert runs_cache._code_version() == before
