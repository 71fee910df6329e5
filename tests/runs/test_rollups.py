"""Rollups equal a recomputation from verdicts, and rebuilding is idempotent."""

import random
from collections import defaultdict
from pathlib import Path

import pytest

from runs.ingest import Options, Source, ingest
from runs.jobs import job_create, job_execute
from runs.models import (
    AgentModel,
    Attempt,
    AttemptRollup,
    Benchmark,
    ChecklistItem,
    GroupRollup,
    Instance,
    Judge,
    JudgeDisagreement,
    Run,
    Verdict,
    VerdictResult,
)
from runs.services import rollups_rebuild_for_attempts

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "octobench"
DIMENSIONS = {"category": "category", "check_type": "check_type", "group": "group", "turn": "turn"}


def recompute() -> tuple[set[tuple], set[tuple]]:
    """(attempt rollups, group rollups) counted in Python from the verdict table; an attempt rollup's items that
    passed and failed as sets of ids."""
    attempts = defaultdict(lambda: [0, 0, 0, set(), set()])
    groups = defaultdict(lambda: [0, 0])
    for v in Verdict.objects.select_related("item", "attempt__run"):
        applicable = v.result != VerdictResult.NOT_APPLICABLE
        passed = v.result == VerdictResult.PASS
        facets = (
            v.attempt_id,
            v.judge_id,
            v.attempt.run.benchmark_id,
            v.attempt.run_id,
            v.attempt.run.model_id,
            v.attempt.instance_id,
        )
        row = attempts[facets]
        row[0] += 1
        row[1] += applicable
        row[2] += passed
        if v.result in (VerdictResult.PASS, VerdictResult.FAIL):
            row[3 if passed else 4].add(v.item_id)
        for dimension, field in DIMENSIONS.items():
            value = getattr(v.item, field)
            if value is None or value == "":
                continue
            g = groups[
                (v.attempt_id, v.judge_id, v.attempt.run.benchmark_id, v.attempt.run.model_id, dimension, str(value))
            ]
            g[0] += applicable
            g[1] += passed
    return (
        {(*k, *v[:3], frozenset(v[3]), frozenset(v[4])) for k, v in attempts.items()},
        {(*k, *v) for k, v in groups.items()},
    )


def stored() -> tuple[set[tuple], set[tuple]]:
    def ids(listed: str) -> frozenset[int]:
        return frozenset(int(item) for item in listed.split(",")) if listed else frozenset()

    a = {
        (*row[:-2], ids(row[-2]), ids(row[-1]))
        for row in AttemptRollup.objects.values_list(
            "attempt_id",
            "judge_id",
            "benchmark_id",
            "run_id",
            "model_id",
            "instance_id",
            "n_items",
            "n_applicable",
            "n_passed",
            "passed_items",
            "failed_items",
        )
    }
    g = set(
        GroupRollup.objects.values_list(
            "attempt_id", "judge_id", "benchmark_id", "model_id", "dimension", "value", "n_applicable", "n_passed"
        )
    )
    return a, g


@pytest.fixture
def scored():
    """The project fixtures scored by two judges for one model."""
    ingest("octobench-instances", [Source.of(FIXTURES / "instances.jsonl")], Options())
    for judge in ("judge-a", "judge-b"):
        ingest("octobench-scores", [Source.of(FIXTURES / "scores.json")], Options(model="model-x", judge=judge))


@pytest.fixture
def random_study():
    """Random verdicts (fixed seed) over items with every facet, including turns and groups."""
    rng = random.Random(20240611)
    benchmark = Benchmark.objects.create(slug="synthetic", name="Synthetic", kind="dialogue")
    judges = [Judge.objects.create(name=f"j{n}") for n in range(3)]
    runs = [
        Run.objects.create(benchmark=benchmark, model=AgentModel.objects.create(name=f"m{n}"), label=f"r{n}")
        for n in range(2)
    ]
    verdicts = []
    for i in range(12):
        instance = Instance.objects.create(benchmark=benchmark, external_id=f"i{i}")
        items = ChecklistItem.objects.bulk_create(
            [
                ChecklistItem(
                    instance=instance,
                    key=f"k{k}",
                    position=k,
                    category=rng.choice(["System Prompt", "Memory", "odd"]),
                    check_type=rng.choice(["", "format", "process"]),
                    group=rng.choice(["", "length", "case"]),
                    turn=rng.choice([None, 1, 2, 3]),
                )
                for k in range(rng.randint(1, 8))
            ]
        )
        for run in runs:
            attempt = Attempt.objects.create(run=run, instance=instance)
            for judge in judges:
                for item in items:
                    if rng.random() < 0.9:
                        verdicts.append(
                            Verdict(
                                attempt=attempt,
                                item=item,
                                judge=judge,
                                result=rng.choice(["pass", "pass", "fail", "na"]),
                            )
                        )
    Verdict.objects.bulk_create(verdicts)
    return list(Attempt.objects.values_list("id", flat=True))


def test_it_equals_a_recomputation_after_ingest(scored):
    expected_attempts, expected_groups = recompute()

    assert stored() == (expected_attempts, expected_groups)
    assert len(expected_attempts) == 4  # 2 instances x 2 judges


def test_it_equals_a_recomputation_of_random_verdicts(random_study):
    n = rollups_rebuild_for_attempts(random_study)

    expected = recompute()
    assert stored() == expected
    assert n == len(expected[0])
    assert {row[4] for row in expected[1]} == {"category", "check_type", "group", "turn"}


def test_rebuilding_twice_gives_the_same_rows(random_study):
    rollups_rebuild_for_attempts(random_study)
    first = stored()

    rollups_rebuild_for_attempts(random_study)
    rollups_rebuild_for_attempts(reversed(random_study))

    assert stored() == first
    assert AttemptRollup.objects.count() == len(first[0])
    assert GroupRollup.objects.count() == len(first[1])


def test_it_follows_changed_and_removed_verdicts(random_study):
    rollups_rebuild_for_attempts(random_study)
    changed = Verdict.objects.filter(result="fail").first()
    changed.result = "pass"
    changed.save()
    emptied = Attempt.objects.exclude(pk=changed.attempt_id).first()
    emptied.verdicts.all().delete()

    rollups_rebuild_for_attempts([changed.attempt_id, emptied.pk])

    assert stored() == recompute()
    assert not AttemptRollup.objects.filter(attempt=emptied).exists()


def test_it_rebuilds_only_the_attempts_it_is_given(random_study):
    rollups_rebuild_for_attempts(random_study[:1])

    assert set(AttemptRollup.objects.values_list("attempt_id", flat=True)) == {random_study[0]}


def test_it_rebuilds_only_the_judges_it_is_given(random_study):
    rollups_rebuild_for_attempts(random_study)
    j0, j1, j2 = Judge.objects.order_by("name")
    Verdict.objects.filter(judge=j1).update(result="fail")
    Verdict.objects.filter(judge=j2).update(result="pass")
    before = stored()

    rollups_rebuild_for_attempts(random_study, [j1.id])

    now, expected = stored(), recompute()
    for kind in (0, 1):
        of_judge = lambda rows, j: {r for r in rows if r[1] == j.id}  # noqa: E731
        assert of_judge(now[kind], j1) == of_judge(expected[kind], j1)  # rebuilt
        assert of_judge(now[kind], j0) == of_judge(before[kind], j0) == of_judge(expected[kind], j0)
        assert of_judge(now[kind], j2) == of_judge(before[kind], j2) != of_judge(expected[kind], j2)  # left alone


def test_a_second_judges_scores_leave_the_first_judges_rollups_right(scored):
    judge_a = Judge.objects.get(name="judge-a")
    first = {r for r in stored()[0] if r[1] == judge_a.id}

    ingest("octobench-scores", [Source.of(FIXTURES / "scores.json")], Options(model="model-x", judge="judge-c"))

    assert stored() == recompute()
    assert {r for r in stored()[0] if r[1] == judge_a.id} == first
    assert len(stored()[0]) == 6  # 2 instances x 3 judges


def test_the_rollup_job_rebuilds_every_attempt(random_study):
    job = job_create(kind="rollups", params={})

    job_execute(job.id)

    job.refresh_from_db()
    assert job.state == "succeeded", job.errors
    assert stored() == recompute()


def test_deleting_attempts_deletes_their_rollups_and_splits(random_study):
    """The rollup tables' attempt keys are not checked by the database (every row is built from verdicts or
    reports whose key is): deleting an attempt, or the run holding it, still leaves none of its rows behind."""
    rollups_rebuild_for_attempts(random_study)
    assert JudgeDisagreement.objects.exists()
    tables = (AttemptRollup, GroupRollup, JudgeDisagreement)
    gone = Attempt.objects.filter(pk__in=JudgeDisagreement.objects.values("attempt_id")).first().pk
    assert all(table.objects.filter(attempt_id=gone).exists() for table in tables)
    Attempt.objects.get(pk=gone).delete()
    assert not any(table.objects.filter(attempt_id=gone).exists() for table in tables)
    run = Run.objects.exclude(attempts=None).first()
    attempts = list(run.attempts.values_list("pk", flat=True))
    assert all(table.objects.filter(attempt_id__in=attempts).exists() for table in tables)
    run.delete()
    assert not any(table.objects.filter(attempt_id__in=attempts).exists() for table in tables)
    assert stored() == recompute()  # the rest as they were
