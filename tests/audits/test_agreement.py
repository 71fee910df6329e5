import random

import pytest
from sklearn.metrics import cohen_kappa_score

from audits.agreement import (
    cohen_kappa,
    criterion_agreement,
    kappa_interval,
    krippendorff_alpha,
    observed_agreement,
    population_estimate,
    stratum_rates,
)
from runs.metrics.stats import wilson_interval


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_it_computes_kappa_equal_to_scikit_learn(seed):
    rng = random.Random(seed)
    a = [rng.choice(["ok", "ambiguous", "unfaithful"]) for _ in range(80)]
    b = [x if rng.random() < 0.7 else rng.choice(["ok", "ambiguous", "unfaithful"]) for x in a]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_it_gives_a_bootstrap_interval_around_kappa():
    rng = random.Random(4)
    a = [rng.choice("yn") for _ in range(100)]
    b = [x if rng.random() < 0.8 else rng.choice("yn") for x in a]
    low, high = kappa_interval(a, b)
    assert low < cohen_kappa(a, b) < high
    assert kappa_interval(a, b) == (low, high)  # fixed seed: reproducible


def test_kappa_is_undefined_when_everyone_used_one_category_and_without_units():
    assert cohen_kappa(["yes"] * 5, ["yes"] * 5) is None  # undefined: scikit-learn says NaN
    assert cohen_kappa([], []) is None
    assert observed_agreement(["a", "b"], ["a", "a"]) == 0.5


def test_it_computes_krippendorffs_alpha_for_nominal_data():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", nominal example without missing data:
    # identical labels give 1, and two raters reduce to a value near Cohen's kappa on enough units.
    assert krippendorff_alpha([["a", "a", "a"], ["b", "b", "b"]]) == 1.0
    rng = random.Random(9)
    a = [rng.choice("xyz") for _ in range(400)]
    b = [x if rng.random() < 0.6 else rng.choice("xyz") for x in a]
    alpha = krippendorff_alpha(list(zip(a, b)))
    assert alpha == pytest.approx(cohen_kappa(a, b), abs=0.01)
    # hand-computed: units (a,b), (a,a), (b,b): o(a,b)=o(b,a)=1, n=6, n_a=n_b=3 -> 1 - 2 / (2*3*3/5)
    assert krippendorff_alpha([["a", "b"], ["a", "a"], ["b", "b"]]) == pytest.approx(1 - 2 / (18 / 5))


def test_it_reports_alpha_and_ac1_for_two_annotators_as_well():
    two = criterion_agreement("c", ["yes", "no"], [["yes", "yes"], ["no", "yes"]])
    three = criterion_agreement("c", ["yes", "no"], [["yes", "yes", "no"], ["no", "no", "no"]])
    # two: o_yy = 2, o_yn = o_ny = 1, n = 4, n_yes = 3, n_no = 1 -> 1 - 3 * 2 / (16 - 10) = 0
    assert two.alpha == 0.0 and three.alpha is not None and (two.annotators, three.annotators) == (2, 3)
    assert two.confusion == [[1, 0], [1, 0]] and two.small


def test_it_matches_published_wilson_intervals():
    low, high = wilson_interval(5, 10)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    low, high = wilson_interval(0, 20)
    assert low == 0.0 and round(high, 4) == 0.1611


def test_it_reweights_strata_by_population_share():
    # stratum a: 1% of the population, all valid; stratum b: 99%, half valid; equal samples of 10
    outcomes = [("a", True)] * 10 + [("b", True)] * 5 + [("b", False)] * 5 + [("b", None)]
    rates = stratum_rates({"a": 10, "b": 990}, outcomes)
    est = population_estimate(rates)
    assert est.rate == pytest.approx(0.01 * 1.0 + 0.99 * 0.5)
    assert est.unweighted == pytest.approx(15 / 20)
    assert rates[1].decided == 10 and rates[1].sampled == 11
    assert rates[0].interval == wilson_interval(10, 10)
    assert est.interval[0] < est.rate < est.interval[1]
