"""The items judges split on, read from JudgeDisagreement, equal the grouping of the verdict table they replace."""

import importlib
import random
from collections import defaultdict
from types import SimpleNamespace

import pytest
from django.db import connection
from django.db.models import Count, Q

from runs.metrics.checklist import Filters
from runs.models import (
    AgentModel,
    Attempt,
    Benchmark,
    ChecklistItem,
    Instance,
    Judge,
    JudgeDisagreement,
    Run,
    Verdict,
    VerdictResult,
)
from runs.selectors import checklist as selectors
from runs.selectors.checklist import VIA_ATTEMPT, _filter
from runs.services import rollups_rebuild_for_attempts

pytestmark = pytest.mark.django_db

FILTERS = [
    Filters(),
    Filters(judges=["j0", "j1"]),
    Filters(judges=["j2"]),  # one judge never splits with itself
    Filters(judges=["j1", "nobody"]),
    Filters(judges=["nobody"]),
    Filters(runs=["r0", "r2"]),
    Filters(models=["m1"]),
    Filters(scaffolds=["claude-code"]),
    Filters(primary_categories=["memory", "format"]),
    Filters(runs=["r1"], judges=["j0", "j3"], scaffolds=["kilo"], primary_categories=["memory"]),
]


def reference(benchmark_id: int, filters: Filters, *, limit: int = 20) -> list[dict]:
    """The computation the page made before JudgeDisagreement: every verdict of the benchmark grouped by (attempt, item)."""
    qs = _filter(Verdict.objects.filter(attempt__run__benchmark_id=benchmark_id), filters, **VIA_ATTEMPT)
    qs = qs.exclude(result=VerdictResult.NOT_APPLICABLE)
    split = (
        qs.values("attempt_id", "item_id")
        .annotate(
            p=Count("id", filter=Q(result=VerdictResult.PASS)),
            f=Count("id", filter=Q(result=VerdictResult.FAIL)),
        )
        .filter(p__gt=0, f__gt=0)
        .order_by()
    )
    per_item: dict[int, int] = defaultdict(int)
    for row in split:
        per_item[row["item_id"]] += 1
    top = sorted(per_item.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    if not top:
        return []
    ids = [i for i, _ in top]
    judged = dict(
        qs.filter(item_id__in=ids)
        .values("item_id")
        .annotate(n=Count("attempt_id", distinct=True))
        .order_by()
        .values_list("item_id", "n")
    )
    info = {
        i["id"]: i
        for i in ChecklistItem.objects.filter(id__in=ids).values(
            "id", "key", "description", "category", "instance_id", "instance__external_id"
        )
    }
    return [
        {**info[i], "split": n, "judged": judged.get(i, 0), "rate": 100.0 * n / judged[i] if judged.get(i) else None}
        for i, n in top
    ]


def stored() -> set[tuple]:
    return {
        (
            d.attempt_id,
            d.item_id,
            d.benchmark_id,
            d.run_id,
            d.model_id,
            d.instance_id,
            tuple(sorted(d.passed_by)),
            tuple(sorted(d.failed_by)),
        )
        for d in JudgeDisagreement.objects.all()
    }


def make_benchmark(rng: random.Random, slug: str, judges: list[Judge]) -> Benchmark:
    """Random verdicts (pass, fail, N/A, some missing) of four judges over a few items, so per-item counts tie."""
    benchmark = Benchmark.objects.create(slug=slug, name=slug, kind="checklist")
    models_ = [AgentModel.objects.get_or_create(name=f"m{n}")[0] for n in range(2)]
    runs = [
        Run.objects.create(
            benchmark=benchmark, model=models_[n % 2], label=f"r{n}" if slug == "main" else f"{slug}-r{n}"
        )
        for n in range(3)
    ]
    verdicts = []
    for i in range(10):
        instance = Instance.objects.create(
            benchmark=benchmark,
            external_id=f"{slug}-i{i}",
            scaffold=rng.choice(["claude-code", "kilo", ""]),
            primary_category=rng.choice(["memory", "format", ""]),
        )
        items = ChecklistItem.objects.bulk_create(
            [
                ChecklistItem(
                    instance=instance,
                    key=f"k{k}",
                    position=k,
                    category=rng.choice(["Memory", "Format"]),
                    description=f"check {k}",
                )
                for k in range(rng.randint(1, 4))
            ]
        )
        for run in runs:
            attempt = Attempt.objects.create(run=run, instance=instance)
            for judge in judges:
                for item in items:
                    if rng.random() < 0.85:
                        verdicts.append(
                            Verdict(
                                attempt=attempt,
                                item=item,
                                judge=judge,
                                result=rng.choice(["pass", "pass", "fail", "na"]),
                            )
                        )
    Verdict.objects.bulk_create(verdicts)
    return benchmark


@pytest.fixture
def study():
    """Two benchmarks sharing judges and models (the second must not count in the first), rollups built."""
    rng = random.Random(20261125)
    judges = [Judge.objects.create(name=f"j{n}") for n in range(4)]
    main = make_benchmark(rng, "main", judges)
    make_benchmark(rng, "other", judges)
    rollups_rebuild_for_attempts(Attempt.objects.values_list("id", flat=True))
    return main


def test_it_equals_the_verdict_grouping_under_every_filter(study):
    for filters in FILTERS:
        for limit in (20, 3):
            assert selectors.judge_disagreements(study.id, filters, limit=limit) == reference(
                study.id, filters, limit=limit
            )


def test_the_study_has_ties_na_verdicts_and_splits_that_filters_change(study):
    everything = reference(study.id, Filters(), limit=100)
    splits = [d["split"] for d in everything]
    assert len(splits) > len(set(splits))  # items tied on their count: ordered by id
    assert any(d["judged"] > d["split"] for d in everything)
    assert Verdict.objects.filter(result="na").exists()
    assert reference(study.id, Filters(judges=["j0", "j1"])) != reference(study.id, Filters())
    assert reference(study.id, Filters(judges=["j2"])) == []
    assert reference(study.id, Filters(runs=["r0", "r2"])) != reference(study.id, Filters())


def test_it_follows_one_judges_changed_verdicts(study):
    """A rebuild of one judge's rollups still recomputes the splits with every judge."""
    j1 = Judge.objects.get(name="j1")
    Verdict.objects.filter(judge=j1, result="pass").update(result="fail")
    Verdict.objects.filter(judge=j1, result="na").update(result="pass")

    rollups_rebuild_for_attempts(Attempt.objects.values_list("id", flat=True), [j1.id])

    for filters in FILTERS:
        assert selectors.judge_disagreements(study.id, filters) == reference(study.id, filters)


def test_it_forgets_the_splits_of_removed_verdicts(study):
    attempt = JudgeDisagreement.objects.filter(benchmark=study).values_list("attempt_id", flat=True).first()
    Verdict.objects.filter(attempt_id=attempt, result="fail").delete()

    rollups_rebuild_for_attempts([attempt])

    assert not JudgeDisagreement.objects.filter(attempt_id=attempt).exists()
    assert selectors.judge_disagreements(study.id, Filters()) == reference(study.id, Filters())


def test_the_migrations_backfill_gives_the_rebuilds_rows(study):
    rebuilt = stored()
    JudgeDisagreement.objects.all().delete()
    migration = importlib.import_module("runs.migrations.0012_judge_disagreements")

    with connection.cursor() as cursor:  # what the migration reads of its schema editor
        migration.disagreements_backfill(None, SimpleNamespace(connection=connection, execute=cursor.execute))

    assert stored() == rebuilt
    assert len(rebuilt) > 0


def test_it_shows_on_the_judges_page_and_its_export(study, reviewer_client):
    expected = reference(study.id, Filters(judges=["j0", "j1"]))

    page = reviewer_client.get(f"/b/{study.slug}/judges/?judge=j0&judge=j1")
    data = reviewer_client.get(f"/b/{study.slug}/judges/?judge=j0&judge=j1&export=json").json()

    assert page.status_code == 200
    assert f'<td class="num">{expected[0]["split"]}</td>' in page.content.decode()
    split = next(t for t in data["tables"] if t["name"] == "disagreements")
    assert [(r["key"], r["instance"], r["split"]) for r in split["rows"]] == [
        (d["key"], d["instance__external_id"], d["split"]) for d in expected
    ]
