"""The per-generation leaderboard summary (ModelBase) gives the rows scored from the rollups, for
every filter and grouping it answers; writers precompute it once their change committed, so the
first request after a change reads no rollup. Runs on SQLite and PostgreSQL."""

import math
import re
import runpy
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs import services
from runs.cache import cache_key, cache_scope, data_generation
from runs.metrics.checklist import (
    BASE_GROUPINGS,
    Filters,
    ModelBase,
    base_rows,
    judges_score_every_attempt,
    needs_facets,
    score_rows,
    without_facets,
)
from runs.models import Attempt, AttemptRollup, Instance, Run, Verdict
from runs.selectors.checklist import (
    attempt_cells,
    compute_tables,
    compute_ties,
    leaderboard_base,
    leaderboard_usage,
    model_base,
    model_rows_counted,
    rows_with_usage,
    usage_by_model,
)

build_study = runpy.run_path(str(Path(__file__).with_name("test_views_checklist.py")))["build_study"]


def _varied_study():
    """Three models, three judges, instances on two scaffolds (one without), two primary categories, an
    attempt empty under one judge, one empty under every judge, unscored and unrecognised results."""
    bench, attempts = build_study(n_instances=6, models=("alpha", "beta", "gamma"), judges=("j1", "j2", "j3"))
    instances = sorted({a.instance_id for a in attempts})
    Instance.objects.filter(id__in=instances[:2]).update(scaffold="droid")
    Instance.objects.filter(id=instances[2]).update(scaffold="", primary_category="SP")
    alpha = [a for a in attempts if a.run.model.name == "alpha"]
    beta = [a for a in attempts if a.run.model.name == "beta"]
    Verdict.objects.filter(attempt=alpha[0], judge__name="j1").update(result="na")
    Verdict.objects.filter(attempt=alpha[1]).update(result="na")
    Verdict.objects.filter(attempt__in=beta[:3], judge__name="j2", item__key="c0").update(result="fail")
    Verdict.objects.filter(attempt=beta[4], item__key="c1").update(result="na")
    services.rollups_rebuild_for_attempts([a.id for a in attempts])
    AttemptRollup.objects.filter(attempt=beta[5], judge__name="j3").update(unscored="failed")
    AttemptRollup.objects.filter(attempt=alpha[2], judge__name="j2").update(n_unrecognised=2)
    return bench, attempts


FILTERS = [
    Filters(),
    Filters(judges=["j1"]),
    Filters(judges=["j2", "j3"], runs=["alpha-r1", "beta-r1"]),
    Filters(scaffolds=["droid"]),
    Filters(scaffolds=["claudecode", ""]),
    Filters(primary_categories=["SP"]),
    Filters(models=["beta"]),
    Filters(primary_categories=["nothing"]),
]


def _same(a, b) -> bool:
    """Rows equal field by field; floats to 1e-9 (macro CSR's sum of rates is added in another order)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if hasattr(a, "__dict__") and type(a) is type(b):
        return _same(a.__dict__, b.__dict__)
    return a == b


@pytest.mark.django_db
def test_the_base_gives_the_rows_of_the_rollups_for_every_filter_and_grouping():
    bench, _ = _varied_study()
    base = model_base(bench.id)
    for filters in FILTERS:
        for by in BASE_GROUPINGS:
            expected = score_rows(attempt_cells(bench.id, filters, by=by))
            assert _same(base_rows(base, filters, by=by), expected), (filters, by)
        assert _same(base_rows(base, filters), model_rows_counted(bench.id, filters)), filters
    rows = {r.model: r for r in base_rows(base, Filters())}
    assert rows["alpha"].n_empty == 1 and rows["alpha"].per_judge["j1"].n_empty == 2
    assert rows["beta"].per_judge["j3"].unscored == {"failed": 1} and rows["alpha"].n_unrecognised == 2
    assert {r.group for r in base_rows(base, Filters(), by="scaffold")} == {"droid", "claudecode", "(none)"}


@pytest.mark.django_db
def test_a_base_without_facets_answers_every_state_that_needs_none_and_refuses_the_others():
    bench, _ = _varied_study()
    base = model_base(bench.id)
    lean = without_facets(base)
    assert lean.cells is None and lean.merged == base.merged
    for filters in FILTERS:
        for by in BASE_GROUPINGS:
            if needs_facets(filters, by):
                with pytest.raises(ValueError, match="facet"):
                    base_rows(lean, filters, by=by)
            else:
                assert _same(base_rows(lean, filters, by=by), base_rows(base, filters, by=by)), (filters, by)
    assert needs_facets(Filters(scaffolds=["droid"])) and needs_facets(Filters(), "primary_category")
    assert not needs_facets(Filters(judges=["j1"], runs=["alpha-r1"]), "judge")


@pytest.mark.django_db
def test_the_usage_a_judges_filter_keeps_is_the_same_read_from_the_base_as_from_the_rollups():
    bench, attempts = _varied_study()
    for n, attempt in enumerate(attempts):
        Attempt.objects.filter(pk=attempt.pk).update(total_tokens=100 * (n + 1), tool_calls=n % 3 or None)
    gamma = [a for a in attempts if a.run.model.name == "gamma"]
    AttemptRollup.objects.filter(attempt=gamma[0], judge__name__in=["j1", "j2"]).delete()  # scored by j3 only
    AttemptRollup.objects.filter(attempt=gamma[1]).delete()  # scored by no judge
    base = model_base(bench.id)
    for filters in [*FILTERS, Filters(judges=["j1", "j2"]), Filters(judges=["j3"], models=["gamma"])]:
        assert usage_by_model(bench.id, filters, base=base) == usage_by_model(bench.id, filters), filters
    assert usage_by_model(bench.id, Filters(judges=["j1"]), base=base)["gamma"].n_attempts == len(gamma) - 2
    assert usage_by_model(bench.id, Filters(judges=["j3"]), base=base)["gamma"].n_attempts == len(gamma) - 1


@pytest.mark.django_db
def test_judges_that_scored_every_attempt_read_the_usage_of_no_judges_filter():
    """A judges filter that keeps every attempt reads the usage entry of no judges filter (warmed by writers)
    instead of every attempt's figures; one that leaves an attempt out, or a run no judge scored, does not."""
    bench, attempts = _varied_study()
    for n, attempt in enumerate(attempts):
        Attempt.objects.filter(pk=attempt.pk).update(total_tokens=100 * (n + 1))
    base = model_base(bench.id)
    assert base.n_instances == 6 and base.n_runs == len(base.runs) == 3
    assert all(judges_score_every_attempt(base, [j]) for j in ("j1", "j2", "j3"))
    with cache_scope(None):
        unfiltered = leaderboard_usage(bench.id, Filters(), base)
        with CaptureQueriesContext(connection) as queries:
            assert leaderboard_usage(bench.id, Filters(judges=["j2"]), base) == unfiltered
        assert not any("runs_attempt" in q["sql"] for q in queries.captured_queries)
    assert usage_by_model(bench.id, Filters(judges=["j2"])) == unfiltered  # the same figures, computed

    gamma = [a for a in attempts if a.run.model.name == "gamma"]
    AttemptRollup.objects.filter(attempt=gamma[0], judge__name="j1").delete()
    base = model_base(bench.id)
    assert not judges_score_every_attempt(base, ["j1"]) and judges_score_every_attempt(base, ["j1", "j2"])
    with cache_scope(None):
        assert leaderboard_usage(bench.id, Filters(judges=["j1"]), base)["gamma"].n_attempts == len(gamma) - 1
    AttemptRollup.objects.filter(run__model__name="gamma").delete()  # a run no judge scored
    assert not judges_score_every_attempt(model_base(bench.id), ["j1", "j2", "j3"])


@pytest.mark.django_db
def test_the_tables_of_a_state_the_base_answers_equal_those_scored_without_it():
    bench, _ = _varied_study()
    for by in ("model", "scaffold", "judge"):
        state = {"filters": Filters(judges=["j1", "j3"]), "by": by, "sort": "-csr", "ci": False, "exclude": "none"}
        tables = compute_tables(bench.id, state)
        rows = score_rows(attempt_cells(bench.id, state["filters"], by=by))
        expected = rows_with_usage(model_rows_counted(bench.id, state["filters"]), bench.id, state["filters"])
        ties = compute_ties(bench.id, state["filters"], "csr")  # ranked by CSR, as sorted
        for row in expected:  # and the runs they pool, and their rank intervals and tie groups
            row.runs = tuple(sorted(Run.objects.filter(model__name=row.model).values_list("label", flat=True)))
            row.rank_interval, row.tie_group = ties.ranks[row.model], ties.groups[row.model]
        assert _same(tables.overall, sorted(expected, key=lambda r: -r.csr))
        if by != "model":
            assert _same(sorted(tables.rows, key=lambda r: (r.model, r.group)), rows)


@pytest.mark.django_db
def test_the_base_is_a_few_cells_per_run_and_judge_not_one_per_attempt():
    bench, attempts = build_study(n_instances=12, models=("alpha", "beta"), judges=("j1", "j2"))
    base = model_base(bench.id)
    assert len(base.merged) == 2 * 2 and len(base.cells) == 2 * 2  # one scaffold, one primary category
    assert AttemptRollup.objects.filter(benchmark=bench).count() == 12 * 2 * 2


@pytest.mark.django_db(transaction=True)
def test_a_writer_precomputes_the_base_and_the_first_request_after_it_reads_no_rollup(django_user_model):
    bench, attempts = _varied_study()
    Verdict.objects.filter(attempt=attempts[0]).update(result="fail")
    with transaction.atomic():
        services.rollups_rebuild_for_attempts([attempts[0].id])  # a writer outside jobs
    from django.core.cache import cache

    assert isinstance(cache.get(cache_key(bench.id, data_generation(bench.id), "base")), ModelBase)
    client = Client()
    client.force_login(django_user_model.objects.create_user("base-reader"))
    url = reverse("runs:checklist-leaderboard", args=[bench.slug])
    for query in (
        "",
        "?judge=j2&sort=csr",
        "?by=scaffold",
    ):  # the default page (warmed) and states derived from the base
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url + query).status_code == 200
        tables = {t for q in queries for t in re.findall(r'FROM "(\w+)"', q["sql"])}
        assert "runs_attemptrollup" not in tables and "runs_verdict" not in tables, (query, tables)
    fresh = leaderboard_base(bench.id)
    assert _same(base_rows(fresh, Filters()), model_rows_counted(bench.id, Filters()))
    assert fresh.models and {r.model for r in base_rows(fresh, Filters())} == {"alpha", "beta", "gamma"}


@pytest.mark.django_db
def test_a_scope_reads_the_generation_once_and_reuses_what_it_computed():
    from runs.cache import cache_scope, cached

    bench, _ = build_study()
    calls = []
    with cache_scope(None), CaptureQueriesContext(connection) as queries:
        for _ in range(3):  # inside a transaction nothing is stored before commit: the scope keeps it
            assert cached(bench.id, "part", lambda: calls.append(1) or "value", kind=str) == "value"
    assert len(queries) == 1 and "data_generation" in queries[0]["sql"] and calls == [1]
    with CaptureQueriesContext(connection) as queries:  # outside a scope: read every time
        cached(bench.id, "part", lambda: "value", kind=str)
        cached(bench.id, "part", lambda: "value", kind=str)
    assert len(queries) == 2


@pytest.mark.django_db
def test_a_reader_past_their_budget_still_leaves_the_summary_and_default_page_for_the_next(
    settings, django_capture_on_commit_callbacks
):
    from django.core.cache import cache

    from runs.cache import cache_scope, cached

    settings.IFPORTAL_CACHE_ENTRIES_PER_USER = 1
    bench, _ = build_study()
    generation = data_generation(bench.id)
    with cache_scope("user:1"), django_capture_on_commit_callbacks(execute=True):
        cached(bench.id, "first", lambda: "kept", kind=str)
        cached(bench.id, "second", lambda: "over the budget", kind=str)
        leaderboard_base(bench.id)
    assert cache.get(cache_key(bench.id, generation, "first")) == "kept"
    assert cache.get(cache_key(bench.id, generation, "second")) is None
    assert isinstance(cache.get(cache_key(bench.id, generation, "base")), ModelBase)
    # the page as first opened is shared too (one per generation); any other state is charged
    from runs.selectors.checklist import LeaderboardTables, leaderboard_tables, state_digest

    default = {"filters": Filters(), "by": "model", "sort": "-isr", "ci": False, "exclude": "none"}
    other = default | {"sort": "csr"}
    with cache_scope("user:1"), django_capture_on_commit_callbacks(execute=True):
        leaderboard_tables(bench, default)
        leaderboard_tables(bench, other)
    assert isinstance(cache.get(cache_key(bench.id, generation, state_digest(default, None))), LeaderboardTables)
    assert cache.get(cache_key(bench.id, generation, state_digest(other, None))) is None
