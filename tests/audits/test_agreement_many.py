"""Krippendorff's alpha (nominal, with a bootstrap interval) and Gwet's AC1 for any
number of annotators per unit, units some annotators skipped included, per campaign and per stratum,
checked against the `krippendorff` package and hand-computed textbook figures."""

import math
import random

import krippendorff
import numpy as np
import pytest

from audits import services
from audits.agreement import alpha_interval, campaign_agreement, gwet_ac1, krippendorff_alpha
from audits.rubrics import rubric_for
from runs.models import Benchmark, BenchmarkKind, ChecklistItem, Instance

from .conftest import _user, client_for


def reference_alpha(units, labels):
    """The `krippendorff` package on an (annotator x unit) matrix, NaN where an annotator gave no value."""
    width = max(len(u) for u in units)
    code = {v: i for i, v in enumerate(labels)}
    data = np.full((width, len(units)), np.nan)
    for j, values in enumerate(units):
        for i, v in enumerate(values):
            data[i, j] = code[v]
    return krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")


def test_ac1_equals_the_hand_computed_two_rater_prevalence_example():
    # The kappa paradox table (Feinstein & Cicchetti 1990; Gwet 2008, section 2): of 100 items both raters
    # say "ok" on 80, A ok / B flawed on 10, A flawed / B ok on 5, both flawed on 5.
    units = [["ok", "ok"]] * 80 + [["ok", "flawed"]] * 10 + [["flawed", "ok"]] * 5 + [["flawed", "flawed"]] * 5
    # pa = 0.85; pi_ok = (90 + 85) / 200 = 0.875, pi_flawed = 0.125; pe = 2 * 0.875 * 0.125 / (2 - 1) = 0.21875
    # AC1 = (0.85 - 0.21875) / (1 - 0.21875) = 0.808; kappa is only (0.85 - 0.78) / 0.22 = 0.318
    assert gwet_ac1(units, ["ok", "flawed"]) == pytest.approx(0.63125 / 0.78125, abs=1e-12)


def test_ac1_equals_the_hand_computed_example_with_three_raters_and_a_missing_rating():
    # q = 3 categories; unit 3 was rated by two of the three raters only
    units = [["a", "a", "a"], ["a", "a", "b"], ["b", "c"], ["a", "c", "c"]]
    # pa: unit 1: 6/6, unit 2: 2/6, unit 3: 0/2, unit 4: 2/6 -> (1 + 1/3 + 0 + 1/3) / 4 = 5/12
    # pi_a = (1 + 2/3 + 0 + 1/3) / 4 = 1/2, pi_b = (0 + 1/3 + 1/2 + 0) / 4 = 5/24, pi_c = (0 + 0 + 1/2 + 2/3) / 4 = 7/24
    # pe = (1/2 * 1/2 + 5/24 * 19/24 + 7/24 * 17/24) / 2 = (144 + 95 + 119) / 576 / 2 = 358 / 1152
    pa, pe = 5 / 12, 358 / 1152
    assert gwet_ac1(units, ["a", "b", "c"]) == pytest.approx((pa - pe) / (1 - pe), abs=1e-12)
    assert gwet_ac1([["a"], ["b"]], ["a", "b"]) is None  # nobody rated a unit twice


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_alpha_equals_the_krippendorff_package_with_skipped_units(seed):
    rng = random.Random(seed)
    labels = ["ok", "ambiguous", "unfaithful"]
    units = []
    for _ in range(60):
        truth = rng.choice(labels)
        units.append(
            [truth if rng.random() < 0.7 else rng.choice(labels) for _ in range(rng.choice([1, 2, 3, 3, 4, 5]))]
        )
    assert krippendorff_alpha(units, labels) == pytest.approx(reference_alpha(units, labels), abs=1e-12)
    low, high = alpha_interval([u for u in units if len(u) > 1], labels)
    assert low < krippendorff_alpha(units, labels) < high and high - low < 0.6
    assert alpha_interval([u for u in units if len(u) > 1], labels) == (low, high)  # fixed seed


def test_alpha_is_undefined_with_one_value_only():
    assert krippendorff_alpha([["ok", "ok"], ["ok", "ok", "ok"]]) is None
    assert krippendorff_alpha([["ok"], ["bad"]]) is None


@pytest.fixture
def items_bench(db):
    """40 checklist items in 4 instances, half "System Prompt", half "User Query"."""
    benchmark = Benchmark.objects.create(slug="many", name="Many", kind=BenchmarkKind.CHECKLIST)
    for n in range(4):
        instance = Instance.objects.create(benchmark=benchmark, external_id=f"t{n}", spec={}, content_hash="h")
        for k in range(10):
            ChecklistItem.objects.create(
                instance=instance,
                key=f"i{k}",
                position=k,
                content_hash="h",
                category="System Prompt" if k % 2 else "User Query",
                check_type="compliance",
                description=f"item {n}-{k}",
            )
    return benchmark


def _play(campaign, annotators, rng):
    """Each annotator works through the queue, labelling most units and skipping about one in five."""
    rubric = rubric_for(campaign.subject)
    truth = {}
    for user in annotators:
        skipped = []
        while (assignment := services.assignment_next(campaign, user, skip=skipped)) is not None:
            if rng.random() < 0.2:
                skipped.append(assignment.pk)
                continue
            base = truth.setdefault(assignment.unit_id, {c.name: rng.choice(c.values[:2]) for c in rubric.criteria})
            services.label_submit(
                assignment,
                {c.name: base[c.name] if rng.random() < 0.75 else rng.choice(c.values) for c in rubric.criteria},
            )


@pytest.mark.django_db
@pytest.mark.parametrize("n_annotators", [2, 3, 5])
def test_campaign_alpha_equals_the_krippendorff_package_per_campaign_and_per_stratum(
    items_bench, lead, django_user_model, n_annotators
):
    people = [_user(django_user_model, f"ann{i}", "annotator") for i in range(n_annotators)]
    campaign = services.campaign_start(
        services.campaign_create(
            name=f"c{n_annotators}",
            subject="checklist_items",
            benchmarks=[items_bench],
            strata=["category"],
            allocation="proportional",
            size=30,
            seed=n_annotators,
            annotators_per_unit=n_annotators,
            user=lead,
        )
    )
    _play(campaign, people, random.Random(n_annotators))
    rubric = rubric_for(campaign.subject)
    rows = {}
    for unit in campaign.units.all():
        rows[unit.pk] = (
            unit.stratum,
            list(unit.assignments.filter(label__isnull=False).order_by("slot").values_list("label__values", flat=True)),
        )
    counts = [len(v) for _, v in rows.values()]
    assert max(counts) == n_annotators and min(counts) < n_annotators  # some annotators skipped some units
    figures = campaign_agreement(campaign)
    for crit in figures.criteria:
        c = rubric.criterion(crit.criterion)
        units = [[v[c.name] for v in values] for _, values in rows.values() if values]
        expected = reference_alpha([u for u in units if len(u) > 1], crit.labels)
        assert crit.alpha == pytest.approx(expected, abs=1e-12), crit.criterion
        assert crit.alpha_ci[0] <= crit.alpha <= crit.alpha_ci[1]
        assert crit.ac1 == pytest.approx(gwet_ac1(units, c.values), abs=1e-12)
        for stratum, per in figures.per_stratum.items():
            sub = [[v[c.name] for v in values] for s, values in rows.values() if values and s == stratum]
            got = next(x for x in per if x.criterion == c.name)
            if sum(len(u) > 1 for u in sub) and len({v for u in sub if len(u) > 1 for v in u}) > 1:
                assert got.alpha == pytest.approx(
                    reference_alpha([u for u in sub if len(u) > 1], got.labels), abs=1e-12
                )
            else:
                assert got.alpha is None
    # the page and the API carry them
    body = client_for(lead).get(f"/api/audits/campaigns/{campaign.pk}/agreement/").json()
    first = figures.criteria[0]
    assert body["criteria"][first.criterion]["alpha"] == pytest.approx(first.alpha)
    assert body["criteria"][first.criterion]["alpha_ci"] == pytest.approx(list(first.alpha_ci))
    assert body["criteria"][first.criterion]["ac1"] == pytest.approx(first.ac1)
    assert set(body["per_stratum"]) == {"System Prompt", "User Query"}
    per = figures.per_stratum["User Query"][0]
    assert body["per_stratum"]["User Query"][per.criterion]["ac1"] == pytest.approx(per.ac1)
    page = client_for(lead).get(f"/audits/{campaign.pk}/agreement/").content.decode()
    assert "Krippendorff's α" in page and "Gwet's AC1" in page
    assert f"{first.ac1:.3f}" in page and f"{first.alpha:.3f}" in page
    assert not math.isnan(first.alpha)
