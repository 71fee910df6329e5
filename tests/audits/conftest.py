"""Audit actors (lead, annotator_a, annotator_b, outsider) and a tiny checklist benchmark whose
leaderboard flips when its "bad" items are excluded."""

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from audits import services
from runs.models import (
    AgentModel,
    Attempt,
    Benchmark,
    BenchmarkKind,
    ChecklistItem,
    Instance,
    Judge,
    Run,
    Verdict,
)
from runs.services import rollups_rebuild_for_attempts

OK = {"decidable": "yes", "grounded": "yes", "duplicate": "none", "overall": "ok"}
BAD = {"decidable": "no", "grounded": "yes", "duplicate": "none", "overall": "ambiguous"}


def _user(django_user_model, name, group=None, **extra):
    user = django_user_model.objects.create_user(name, password=f"pw-{name}-1", **extra)
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])  # transactional tests flush the data migration
    return user


@pytest.fixture
def lead(django_user_model):
    return _user(django_user_model, "lead", "lead")


@pytest.fixture
def annotator_a(django_user_model):
    return _user(django_user_model, "annotator_a", "annotator")


@pytest.fixture
def annotator_b(django_user_model):
    return _user(django_user_model, "annotator_b", "annotator")


@pytest.fixture
def annotator_c(django_user_model):
    return _user(django_user_model, "annotator_c", "annotator")


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def bench(db):
    """3 instances x items x (good), y (normal), z (conditional); model "alpha" fails every x, "beta" fails y twice.

    ISR before: beta 33.33 > alpha 0; with the x items excluded: alpha 100 > beta 33.33.
    """
    benchmark = Benchmark.objects.create(slug="octo-test", name="Octo test", kind=BenchmarkKind.CHECKLIST)
    judge = Judge.objects.create(name="judge-1")
    models = {name: AgentModel.objects.create(name=name) for name in ("alpha", "beta")}
    runs = {name: Run.objects.create(benchmark=benchmark, model=m, label=f"{name}-r1") for name, m in models.items()}
    items = {}
    attempts = []
    for n in range(1, 4):
        instance = Instance.objects.create(
            benchmark=benchmark,
            external_id=f"task-{n}",
            primary_category="code",
            spec={"system_prompt": "Be terse.", "user_query": f"Task {n}"},
            content_hash="h",
        )
        for pos, (key, desc, cat, cond) in enumerate(
            (
                ("x", "Check the output is nice", "User Query", False),
                ("y", "Check the assistant uses tabs for indentation", "System Prompt", False),
                ("z", "When a test fails, check the assistant reruns it", "System Prompt", True),
            )
        ):
            items[(n, key)] = ChecklistItem.objects.create(
                instance=instance,
                key=key,
                position=pos,
                category=cat,
                check_type="compliance",
                description=desc,
                conditional=cond,
                content_hash="h",
            )
        for name, run in runs.items():
            attempt = Attempt.objects.create(run=run, instance=instance, response=f"{name} answer {n}")
            attempts.append(attempt.id)
            for key in "xyz":
                result = "pass"
                if name == "alpha" and key == "x":
                    result = "fail"
                if name == "beta" and key == "y" and n < 3:
                    result = "fail"
                if key == "z" and n == 2:
                    result = "na"
                Verdict.objects.create(attempt=attempt, item=items[(n, key)], judge=judge, result=result)
    rollups_rebuild_for_attempts(attempts)
    return {"benchmark": benchmark, "items": items}


@pytest.fixture
def campaign(bench, lead):
    """A started campaign over all 9 items, stratified by source category, two annotators per unit."""
    c = services.campaign_create(
        name="pilot",
        subject="checklist_items",
        benchmarks=[bench["benchmark"]],
        strata=["category"],
        allocation="proportional",
        size=9,
        seed=11,
        user=lead,
    )
    return services.campaign_start(c)


def label_next(campaign, user, values):
    """Reserve the user's next unit and label it; returns the assignment."""
    assignment = services.assignment_next(campaign, user)
    assert assignment is not None
    services.label_submit(assignment, values)
    return assignment


def label_all(campaign, users, values):
    """Each user labels every unit they are given, in turn; `values(user, unit)` is what they say."""
    for user in users:
        while (assignment := services.assignment_next(campaign, user)) is not None:
            services.label_submit(assignment, values(user, assignment.unit))


def values_for(unit, bad_keys=("x",)):
    return BAD if unit.key.rsplit("/", 1)[-1] in bad_keys else OK


SATISFIED = {"satisfied": "satisfied"}
NOT_SATISFIED = {"satisfied": "not_satisfied"}
CANNOT_TELL = {"satisfied": "cannot_tell"}


@pytest.fixture
def verdict_bench(bench):
    """`bench` with a second judge, "lenient", that passes every item of every attempt (reasoning "LENIENT-REASON"),
    and a two-message trajectory per attempt ("Reading the file", then the model's answer)."""
    from runs.trajectory_store import trajectory_save

    lenient = Judge.objects.create(name="lenient")
    attempts = list(Attempt.objects.filter(run__benchmark=bench["benchmark"]).order_by("pk"))
    for attempt in attempts:
        for item in ChecklistItem.objects.filter(instance_id=attempt.instance_id):
            Verdict.objects.create(attempt=attempt, item=item, judge=lenient, result="pass", reasoning="LENIENT-REASON")
        trajectory_save(
            attempt_id=attempt.pk,
            threads=[
                {
                    "meta": {"thread": "main"},
                    "messages": [
                        {"role": "user", "content": f"Please do task {attempt.instance.external_id}"},
                        {"role": "assistant", "content": f"Reading the file, then {attempt.response}"},
                    ],
                }
            ],
        )
    Verdict.objects.filter(judge__name="judge-1").update(reasoning="JUDGE1-REASON")
    rollups_rebuild_for_attempts([a.pk for a in attempts])
    return {**bench, "attempts": attempts, "lenient": lenient}


@pytest.fixture
def verdict_campaign(verdict_bench, lead):
    """A started verdict campaign over every judged (attempt, item) pair, stratified by the judges' verdicts."""
    c = services.campaign_create(
        name="verdicts",
        subject="verdicts",
        benchmarks=[verdict_bench["benchmark"]],
        strata=["judges"],
        allocation="proportional",
        size=100,
        seed=5,
        user=lead,
    )
    return services.campaign_start(c)
