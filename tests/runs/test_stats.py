"""Shared statistics helpers: mean/std across judges, Kendall's tau, Wilson, bootstrap (percentile and expanded
percentile), Student's t quantile."""

import numpy as np
import pytest
from scipy import stats as scipy_stats

from runs.metrics.stats import (
    EXPANDED_PERCENTILE,
    PERCENTILE,
    bootstrap_interval,
    interval_tail,
    kendall_tau,
    mean_std,
    student_t_quantile,
    wilson_interval,
)


def test_it_reproduces_the_octobench_paper_judge_mean_and_std():
    isr, isr_std = mean_std([27.21, 31.26, 25.86])
    csr, csr_std = mean_std([86.87, 84.96, 85.08])
    assert round(isr, 2) == 28.11 and round(isr_std, 1) == 2.3
    assert round(csr, 2) == 85.64 and round(csr_std, 1) == 0.9


def test_it_uses_the_population_std_not_the_sample_std():
    assert mean_std([0.0, 2.0]) == (1.0, 1.0)


def test_it_returns_none_for_no_values_and_skips_missing_ones():
    assert mean_std([]) == (None, None)
    assert mean_std([None, 4.0]) == (4.0, 0.0)


def test_it_gives_kendall_tau_one_for_same_order_and_minus_one_for_reversed():
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0


def test_it_handles_ties_in_kendall_tau_b():
    # scipy.stats.kendalltau([1, 2, 2, 3], [1, 2, 3, 3]) == 0.8
    assert kendall_tau([1, 2, 2, 3], [1, 2, 3, 3]) == pytest.approx(0.8)
    assert kendall_tau([1], [1]) is None
    assert kendall_tau([1, 1], [2, 3]) is None


def test_it_computes_the_wilson_interval():
    low, high = wilson_interval(8, 10)
    assert round(low, 4) == 0.4902 and round(high, 4) == 0.9433
    assert wilson_interval(0, 0) is None


def test_it_bootstraps_a_mean_reproducibly_and_brackets_it():
    values = np.array([0, 1, 1, 0, 1, 1, 1, 0, 1, 1], dtype=float)

    def mean(weights):
        return weights @ values / weights.sum(axis=1)

    first = bootstrap_interval(len(values), mean)
    assert first == bootstrap_interval(len(values), mean)
    assert first[0] < 0.7 < first[1]
    assert 0.3 <= first[0] and first[1] <= 1.0
    assert bootstrap_interval(0, mean) is None


def test_the_expanded_percentile_tail_is_hesterbergs_and_equals_scipy():
    for n in (2, 3, 5, 50, 120, 500, 10_000):
        expected = scipy_stats.norm.cdf(-np.sqrt(n / (n - 1)) * scipy_stats.t.ppf(0.975, n - 1))
        assert interval_tail(n, 0.95, EXPANDED_PERCENTILE) == pytest.approx(expected, rel=1e-9, abs=1e-300)
        assert interval_tail(n, 0.95, EXPANDED_PERCENTILE) < interval_tail(n, 0.95, PERCENTILE) == pytest.approx(0.025)
    # by hand at n = 50: t_{0.975, 49} = 2.0096, sqrt(50 / 49) x 2.0096 = 2.0300, Phi(-2.0300) = 0.0212
    assert interval_tail(50, 0.95, EXPANDED_PERCENTILE) == pytest.approx(0.0212, abs=5e-5)
    assert interval_tail(1, 0.95, EXPANDED_PERCENTILE) == pytest.approx(0.025)
    with pytest.raises(ValueError):
        interval_tail(10, 0.95, "basic")


def test_the_student_t_quantile_equals_scipy():
    for df in (1, 2, 3, 7, 49, 199, 4999, 1e6):
        for p in (0.005, 0.025, 0.3, 0.5, 0.9, 0.975, 0.9995):
            assert student_t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-9, abs=1e-12)


def test_the_expanded_interval_reads_the_same_resamples_at_the_expanded_tails():
    values = np.random.default_rng(3).normal(size=40)
    drawn = []

    def mean(weights):
        drawn.append(weights)
        return weights @ values / weights.sum(axis=1)

    low, high = bootstrap_interval(len(values), mean, method=EXPANDED_PERCENTILE)
    tail = 100 * interval_tail(len(values), 0.95, EXPANDED_PERCENTILE)
    assert (low, high) == pytest.approx(tuple(np.percentile(mean(drawn[0]), [tail, 100 - tail])), abs=1e-12)
    plain = bootstrap_interval(len(values), mean)
    assert low < plain[0] and plain[1] < high
    # scipy's percentile bootstrap of the same mean (its own draws) agrees to the resampling noise
    reference = scipy_stats.bootstrap((values,), np.mean, method="percentile", n_resamples=1000, random_state=1)
    ci = reference.confidence_interval
    assert plain == pytest.approx((ci.low, ci.high), abs=0.08)
