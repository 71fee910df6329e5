"""Shared statistics helpers: mean/std across judges, Kendall's tau, Wilson, bootstrap."""

import numpy as np
import pytest

from runs.metrics.stats import bootstrap_interval, kendall_tau, mean_std, wilson_interval


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
