"""Item health (runs.metrics.item_health, its selector, page, exports and API): the figures equal an independent
recomputation, the 2PL is fitted only with enough models, the flags follow their thresholds, and a blind
annotator is refused."""

import json

import numpy as np
import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from runs.metrics import item_health as metrics
from runs.models import AgentModel, Attempt, Benchmark, ChecklistItem, Instance, Judge, Run, Verdict
from runs.selectors import item_health as selectors
from runs.services import rollups_rebuild_for_attempts


def _items(n):
    return [
        metrics.ItemInfo(i, f"c{i}", i // 2, f"task-{i // 2}", "Skill.md" if i % 2 else "Tool", "x") for i in range(n)
    ]


def test_the_rows_read_as_a_stream_give_the_report_they_give_held():
    """Given the models, the per-attempt rows are read once as they come (a generator), never held: the report is
    the one they give as a list; a model named without any judged verdict is left out, as it is from the list."""
    rng = np.random.default_rng(5)
    rows = [
        metrics.AttemptItem(item, f"m{m}", int(k), 3)
        for m in range(metrics.FIT_MIN_MODELS + 4)
        for item in range(6)
        for k in [rng.integers(0, 4)]
        for _ in range(2)  # two attempts each
    ]
    held = metrics.item_health(rows, _items(6))
    streamed = metrics.item_health((r for r in rows), _items(6), models=["m-none", *held.models])
    assert streamed.models == held.models and held.fitted and streamed.fitted
    assert [vars(i) for i in streamed.items] == [vars(i) for i in held.items]


def test_it_equals_scipy_and_statsmodels_on_one_verdict_per_model_and_item():
    rng = np.random.default_rng(3)
    outcome = rng.integers(0, 2, size=(8, 5))
    rows = [metrics.AttemptItem(item, f"m{m}", int(outcome[m, item]), 1) for m in range(8) for item in range(5)]
    report = metrics.item_health(rows, _items(5))
    assert not report.fitted and report.models == [f"m{m}" for m in range(8)]
    for item, health in enumerate(report.items):
        k = int(outcome[:, item].sum())
        low, high = proportion_confint(k, 8, method="wilson")
        assert health.pass_rate == pytest.approx(k / 8)
        assert (health.pass_low, health.pass_high) == (pytest.approx(low), pytest.approx(high))
        rest = (outcome.sum(axis=1) - outcome[:, item]) / 4
        if 0 < k < 8:
            expected = stats.pointbiserialr(outcome[:, item], rest).statistic
            assert health.rest_correlation == pytest.approx(expected)
        assert health.models == 8 and health.verdicts == 8


def test_it_counts_judge_splits_over_attempts_judged_twice():
    rows = [metrics.AttemptItem(0, "a", 1, 2)] * 3 + [metrics.AttemptItem(0, "b", 2, 2)] * 7
    rows += [metrics.AttemptItem(0, "c", 1, 1)]  # judged once: not in the split rate
    health = metrics.item_health(rows, _items(1)).items[0]
    assert (health.split_attempts, health.judged_twice, health.split_rate) == (3, 10, 0.3)
    assert metrics.JUDGE_SPLIT in health.flags
    assert health.pass_rate == pytest.approx(18 / 21)


def test_it_raises_floor_ceiling_and_annotator_flags_at_their_thresholds():
    rows = [metrics.AttemptItem(0, f"m{m}", 0, 1) for m in range(20)]
    rows += [metrics.AttemptItem(1, f"m{m}", 1, 1) for m in range(20)]
    rows += [metrics.AttemptItem(2, f"m{m}", int(m < 19), 1) for m in range(20)]  # 95%: ceiling
    rows += [metrics.AttemptItem(3, f"m{m}", int(m < 18), 1) for m in range(20)]  # 90%: none
    audit = {3: metrics.AuditLabel("invalid", 0.5)}
    report = metrics.item_health(rows, _items(4), audit=audit, fit_min_models=100)
    assert [i.flags for i in report.items] == [["floor"], ["ceiling"], ["ceiling"], ["annotators"]]
    assert report.instances[1].flag_counts["ceiling"] == 1 and report.instances[1].flagged == 2
    assert metrics.filter_items(report.items, flags=["none"]) == []
    assert [i.key for i in metrics.filter_items(report.items, categories=["Skill.md"])] == ["c1", "c3"]


def test_it_fits_the_2pl_with_enough_models_and_flags_a_negative_discrimination():
    rng = np.random.default_rng(11)
    ability = rng.standard_normal(40)
    rows = []
    for m, theta in enumerate(ability):
        for item in range(12):
            sign = -1 if item == 0 else 1
            p = 1 / (1 + np.exp(-2.0 * sign * (theta - (item % 3 - 1) * 0.5)))
            rows.append(metrics.AttemptItem(item, f"m{m}", int(rng.binomial(4, p)), 4))
    few = metrics.item_health([r for r in rows if int(r.model[1:]) < 6], _items(12))
    assert not few.fitted and all(i.discrimination is None for i in few.items)
    report = metrics.item_health(rows, _items(12))
    assert report.fitted and report.fit_converged
    assert metrics.NEGATIVE_DISCRIMINATION in report.items[0].flags
    assert all(i.discrimination > 0.5 for i in report.items[1:])
    assert report.items[0].rest_correlation < 0 < min(i.rest_correlation for i in report.items[1:])


# the page, its exports and the API -----------------------------------------------------------------------------


def _study(models=4):
    """A checklist benchmark: 3 instances of 2 items, `models` models with one attempt each, 2 judges; the
    judges split on c1 of task-0 for every model."""
    bench = Benchmark.objects.create(slug="octo", name="Octo", kind="checklist")
    judges = [Judge.objects.create(name=j) for j in ("j1", "j2")]
    for n in range(3):
        inst = Instance.objects.create(benchmark=bench, external_id=f"task-{n}", content_hash="x")
        items = [
            ChecklistItem.objects.create(instance=inst, key=f"c{k}", position=k, category=f"cat{k}", content_hash="x")
            for k in range(2)
        ]
        for m in range(models):
            model = AgentModel.objects.get_or_create(name=f"model-{m}")[0]
            run = Run.objects.get_or_create(benchmark=bench, label=f"model-{m}-r1", defaults={"model": model})[0]
            attempt = Attempt.objects.create(run=run, instance=inst)
            for j, judge in enumerate(judges):
                for item in items:
                    passed = item.key == "c0" or (n == 0 and j == 0) or (n > 0 and m % 2 == 0)
                    Verdict.objects.create(attempt=attempt, item=item, judge=judge, result="pass" if passed else "fail")
    return bench


def _client(django_user_model, name, groups):
    user = django_user_model.objects.create_user(name, password="pw-1-x")
    for group in groups:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_it_shows_the_plain_statistics_when_too_few_models_answered(django_user_model):
    _study(models=6)
    client = _client(django_user_model, "rev", ["reviewer"])
    response = client.get(reverse("runs:checklist-item-health", args=["octo"]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "too uncertain" in body and "Discrimination</th>" not in body
    document = json.loads(client.get(reverse("runs:checklist-item-health", args=["octo"]) + "?export=json").content)
    items = {(r["instance"], r["key"]): r for r in next(t for t in document["tables"] if t["name"] == "items")["rows"]}
    assert len(items) == 6
    assert items[("task-0", "c1")]["split_rate"] == 100.0 and items[("task-0", "c1")]["flags"] == "judge-split"
    assert items[("task-0", "c0")]["pass_rate"] == 100.0 and items[("task-0", "c0")]["flags"] == "ceiling"
    assert items[("task-1", "c1")]["pass_rate"] == 50.0 and items[("task-1", "c1")]["difficulty"] is None


@pytest.mark.django_db
def test_it_filters_by_flag_in_the_page_the_fragment_and_the_api_alike(django_user_model):
    _study(models=6)
    client = _client(django_user_model, "rev", ["reviewer"])
    url = reverse("runs:checklist-item-health", args=["octo"]) + "?flag=judge-split"
    fragment = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert 'id="results"' in fragment and "<html" not in fragment
    api = client.get(reverse("api:item-health", args=["octo"]) + "?flag=judge-split").json()
    assert [(i["instance"], i["key"]) for i in api["items"]] == [("task-0", "c1")]
    assert api["irt_fitted"] is False and len(api["instances"]) == 3
    refused = client.get(reverse("api:item-health", args=["octo"]) + "?flag=nonsense")
    assert refused.status_code == 400 and "flag" in refused.json()


@pytest.mark.django_db
def test_it_refuses_blind_annotators_anonymous_visitors_and_another_kinds_route(django_user_model):
    _study(models=2)
    Benchmark.objects.create(slug="dlg", name="Dlg", kind="dialogue")
    Benchmark.objects.create(slug="mcq", name="Mcq", kind="choice")
    blind = _client(django_user_model, "ann", ["annotator"])
    assert blind.get(reverse("runs:checklist-item-health", args=["octo"])).status_code == 403
    assert blind.get(reverse("api:item-health", args=["octo"])).status_code == 403
    anonymous = Client().get(reverse("runs:checklist-item-health", args=["octo"]))
    assert anonymous.status_code == 302
    reviewer = _client(django_user_model, "rev", ["reviewer"])
    assert reviewer.get(reverse("runs:checklist-item-health", args=["dlg"])).status_code == 404
    assert reviewer.get(reverse("runs:dialogue-item-health", args=["dlg"])).status_code == 200
    assert reviewer.get(reverse("runs:choice-item-health", args=["octo"])).status_code == 404
    assert reviewer.get(reverse("runs:choice-item-health", args=["mcq"])).status_code == 200
    assert reviewer.get(reverse("api:item-health", args=["mcq"])).json()["unit"] == "task"


@pytest.mark.django_db
def test_it_reads_the_report_in_a_flat_number_of_queries(django_user_model, django_assert_max_num_queries):
    _study(models=6)
    client = _client(django_user_model, "rev", ["reviewer"])
    with django_assert_max_num_queries(12):
        assert client.get(reverse("runs:checklist-item-health", args=["octo"])).status_code == 200
    report = selectors.compute_report(Benchmark.objects.get(slug="octo").id)
    assert len(report.items) == 6 and len(report.models) == 6


@pytest.mark.django_db
def test_a_leaderboard_leaves_out_the_flagged_items_and_says_how_the_ranks_moved(django_user_model):
    bench = _study(models=6)
    rollups_rebuild_for_attempts(list(Attempt.objects.filter(run__benchmark=bench).values_list("id", flat=True)))
    client = _client(django_user_model, "rev", ["reviewer"])
    report = selectors.compute_report(bench.id)
    ceiling = {i.item_id for i in report.items if "ceiling" in i.flags}
    assert selectors.health_excluded_items(bench, "health:ceiling") == ceiling and len(ceiling) == 3
    flagged = {i.item_id for i in report.items if i.flags}
    assert selectors.health_excluded_items(bench, "health:any") == flagged
    body = client.get(reverse("api:leaderboard", args=["octo"]) + "?exclude=health:any").json()
    assert body["excluded_items"] == len(flagged)
    page = client.get(reverse("runs:checklist-leaderboard", args=["octo"]) + "?exclude=health:judge-split")
    text = page.content.decode()
    assert page.status_code == 200 and 'id="exclusion"' in text and "Kendall" in text
    assert reverse("runs:checklist-item-health", args=["octo"]) + "?flag=judge-split" in text


@pytest.mark.django_db
def test_every_kinds_item_health_page_styles_its_intervals_and_flag_counts(django_user_model):
    _study(models=2)
    Benchmark.objects.create(slug="dlg", name="Dlg", kind="dialogue")
    Benchmark.objects.create(slug="ih", name="Ih", kind="hierarchy")
    Benchmark.objects.create(slug="cf", name="Cf", kind="conflict")
    Benchmark.objects.create(slug="mcq", name="Mcq", kind="choice")
    reviewer = _client(django_user_model, "rev", ["reviewer"])
    for route, slug in (
        ("checklist", "octo"),
        ("dialogue", "dlg"),
        ("hierarchy", "ih"),
        ("conflict", "cf"),
        ("choice", "mcq"),
    ):
        page = reviewer.get(reverse(f"runs:{route}-item-health", args=[slug])).content.decode()
        # .ci puts an interval and an n on their own line under the figure (checklist.css): without it they ran on
        assert "css/checklist.css" in page, route
        assert 'class="tag"' not in page, route
