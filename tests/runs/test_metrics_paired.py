"""Paired differences, McNemar and permutation tests, Holm, tie groups and rank intervals (runs.metrics.paired),
against scipy and statsmodels."""

import time

import numpy as np
import pytest
from scipy import stats as scipy_stats
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from runs.metrics import paired
from runs.metrics.checklist import Cell, score_row, with_bootstrap
from runs.metrics.stats import bootstrap_interval, bootstrap_weights


def _binary(outcomes):
    """One judge, one pass/fail outcome per instance."""
    outcomes = np.asarray(outcomes, dtype=float)
    return outcomes[:, None], np.ones((len(outcomes), 1))


def _counts(rng, n, judges, attempts, rate):
    """Successes out of `attempts` per instance and judge."""
    return rng.binomial(attempts, rate, size=(n, judges)).astype(float), np.full((n, judges), float(attempts))


@pytest.mark.parametrize("b,c", [(0, 0), (0, 1), (3, 3), (5, 12), (12, 5), (40, 61), (200, 230), (1, 30), (700, 640)])
def test_mcnemar_exact_equals_statsmodels_and_scipy(b, c):
    expected = mcnemar([[10, b], [c, 7]], exact=True).pvalue
    assert paired.mcnemar_exact(b, c) == pytest.approx(expected, abs=1e-9)
    if b + c:
        assert paired.mcnemar_exact(b, c) == pytest.approx(binomtest(b, b + c, 0.5).pvalue, abs=1e-9)


def test_holm_equals_statsmodels():
    rng = np.random.default_rng(7)
    for size in (1, 2, 5, 30):
        pvalues = rng.random(size) ** 3
        pvalues[0] = pvalues[-1]  # a tie
        assert paired.holm(pvalues) == pytest.approx(multipletests(pvalues, method="holm")[1].tolist(), abs=1e-12)


def test_holm_leaves_undefined_p_out():
    adjusted = paired.holm([0.01, float("nan"), 0.04])
    assert adjusted[0] == pytest.approx(0.02) and np.isnan(adjusted[1]) and adjusted[2] == pytest.approx(0.04)


def test_pass_fail_outcomes_take_mcnemar_with_the_discordant_counts():
    a = _binary([1, 1, 1, 0, 0, 1, 0, 1, 1, 0])
    b = _binary([1, 0, 0, 1, 1, 1, 1, 1, 1, 1])
    result = paired.paired_difference(a, b)
    assert (result.test, result.b_count, result.c_count) == ("McNemar exact", 2, 4)
    assert result.p == pytest.approx(mcnemar([[4, 2], [4, 0]], exact=True).pvalue, abs=1e-9)
    assert (result.a, result.b, result.diff, result.n_instances) == (60.0, 80.0, 20.0, 10)
    assert result.resampled == "instances (with their repetitions, judges and items)"


def test_repetitions_or_several_judges_take_the_permutation_test():
    rng = np.random.default_rng(3)
    repeated = paired.paired_difference(_counts(rng, 80, 1, 3, 0.5), _counts(rng, 80, 1, 3, 0.6))
    judged = paired.paired_difference(_counts(rng, 80, 2, 1, 0.5), _counts(rng, 80, 2, 1, 0.6))
    for result in (repeated, judged):
        assert result.test == "paired permutation" and result.b_count is None
        assert 1 / (1 + paired.PERMUTATIONS) <= result.p <= 1


def test_one_judges_column_of_several_takes_mcnemar():
    rng = np.random.default_rng(4)
    a, b = _counts(rng, 60, 2, 1, 0.5), _counts(rng, 60, 2, 1, 0.6)
    column = paired.paired_difference((a[0][:, :1], a[1][:, :1]), (b[0][:, :1], b[1][:, :1]))
    assert column.test == "McNemar exact"


def test_the_permutation_p_equals_a_direct_loop_over_the_same_swaps():
    rng = np.random.default_rng(5)
    a, b = _counts(rng, 40, 2, 3, 0.5), _counts(rng, 40, 2, 3, 0.58)
    result = paired.paired_difference(a, b, permutations=2000, seed=11)
    swaps = np.random.default_rng(11).random((2000, 40)) < 0.5

    def fig(num, den):
        return np.mean(num.sum(axis=0) / den.sum(axis=0)) * 100

    observed = fig(*b) - fig(*a)
    extreme = 0
    for swap in swaps:
        s = swap[:, None]
        a_num, b_num = np.where(s, b[0], a[0]), np.where(s, a[0], b[0])
        a_den, b_den = np.where(s, b[1], a[1]), np.where(s, a[1], b[1])
        extreme += abs(fig(b_num, b_den) - fig(a_num, a_den)) >= abs(observed) - 1e-9
    assert result.p == pytest.approx((1 + extreme) / 2001, abs=1e-12)
    assert result.diff == pytest.approx(observed, abs=1e-9)


def test_the_interval_is_a_paired_bootstrap_over_shared_instances_and_reproducible():
    rng = np.random.default_rng(6)
    a, b = _counts(rng, 120, 2, 2, 0.4), _counts(rng, 120, 2, 2, 0.5)
    first, again = paired.paired_difference(a, b), paired.paired_difference(a, b)
    assert first == again
    other_seed = paired.paired_difference(a, b, seed=1)
    assert (other_seed.low, other_seed.high) != (first.low, first.high)
    weights = bootstrap_weights(120)
    diffs = paired.judge_figure(weights @ b[0], weights @ b[1]) - paired.judge_figure(weights @ a[0], weights @ a[1])
    tail = 100 * scipy_stats.norm.cdf(-np.sqrt(120 / 119) * scipy_stats.t.ppf(0.975, 119))
    low, high = np.percentile(diffs, [tail, 100 - tail])
    assert (first.low, first.high) == pytest.approx((low, high), abs=1e-9)
    assert first.low < first.diff < first.high
    plain = np.percentile(diffs, [2.5, 97.5])
    assert first.low < plain[0] and plain[1] < first.high


def test_only_instances_and_judges_both_sides_cover_count():
    a_num = np.array([[1.0, 1.0], [0.0, 1.0], [1.0, 0.0], [0.0, 0.0]])
    a_den = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    b_num = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    b_den = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    result = paired.paired_difference((a_num, a_den), (b_num, b_den))
    # instances 0 and 1 are shared, judge 0 alone has data on both sides there
    assert result.n_instances == 2 and result.test == "McNemar exact"
    assert (result.a, result.b, result.b_count, result.c_count) == (50.0, 100.0, 0, 1)
    assert paired.paired_difference((a_num[3:], a_den[3:]), (b_num[3:], b_den[3:])).n_instances == 0


def test_figure_interval_equals_the_leaderboards_bootstrap_interval():
    rng = np.random.default_rng(8)
    cells, judges = [], ("j1", "j2")
    for attempt in range(90):
        instance = attempt % 30
        for judge in judges:
            applicable = int(rng.integers(0, 6))
            cells.append(Cell(attempt, instance, "m", "r", judge, applicable, int(rng.integers(0, applicable + 1))))
    row = with_bootstrap(score_row("m", None, cells), cells)
    isr = np.zeros((30, 2)), np.zeros((30, 2))
    csr = np.zeros((30, 2)), np.zeros((30, 2))
    for c in cells:
        if c.n_applicable:
            at = (c.instance_id, judges.index(c.judge))
            isr[0][at] += c.success
            isr[1][at] += 1
            csr[0][at] += c.n_passed
            csr[1][at] += c.n_applicable
    assert paired.figure(isr) == pytest.approx(row.isr, abs=1e-9)
    assert paired.figure(csr) == pytest.approx(row.csr, abs=1e-9)
    assert paired.figure_interval(isr) == pytest.approx(row.isr_ci, abs=1e-9)
    assert paired.figure_interval(csr) == pytest.approx(row.csr_ci, abs=1e-9)


def test_bootstrap_weights_are_bootstrap_intervals_draws():
    seen = []
    bootstrap_interval(37, lambda weights: seen.append(weights) or np.zeros(len(weights)), resamples=50, seed=9)
    assert np.array_equal(seen[0], bootstrap_weights(37, resamples=50, seed=9))


def _leaderboard(rng, rates, n=300, judges=1, attempts=1):
    difficulty = rng.normal(0, 1.0, n)
    sides = {}
    for name, rate in rates.items():
        logit = np.log(rate / (1 - rate)) + difficulty
        p = np.repeat((1 / (1 + np.exp(-logit)))[:, None], judges, axis=1)
        sides[name] = rng.binomial(attempts, p).astype(float), np.full((n, judges), float(attempts))
    return sides


def test_a_clear_leader_is_alone_in_group_one():
    sides = _leaderboard(np.random.default_rng(10), {"best": 0.8, "b": 0.45, "c": 0.44, "d": 0.2})
    groups = paired.tie_groups(sides)
    assert groups["best"] == 1 and groups["b"] == groups["c"] == 2 and groups["d"] == 3


def test_equal_models_are_one_group_with_ties_ordered_by_name():
    side = _leaderboard(np.random.default_rng(11), {"x": 0.5}, judges=2, attempts=3)["x"]
    groups = paired.tie_groups({"zeta": side, "alpha": side, "mid": side})
    assert groups == {"zeta": 1, "alpha": 1, "mid": 1}
    assert paired.rank_intervals({"zeta": side, "alpha": side}) == {"zeta": (1, 1), "alpha": (1, 1)}


def test_a_pairs_p_is_the_same_alone_and_inside_tie_groups():
    rng = np.random.default_rng(12)
    sides = _leaderboard(rng, {"a": 0.6, "b": 0.57, "c": 0.5}, judges=2, attempts=2)
    alone = paired.paired_difference(sides["a"], sides["b"]).p
    tests = paired._PairTests(*paired._stacked(sides), paired.PERMUTATIONS, paired.BOOTSTRAP_SEED)
    assert tests.pvalues(0, [1, 2], paired.PERMUTATIONS)[0][0] == alone


def test_a_model_lacking_instances_is_compared_on_those_it_has():
    rng = np.random.default_rng(13)
    sides = _leaderboard(rng, {"a": 0.7, "b": 0.3}, n=200)
    num, den = sides["b"]
    num[100:], den[100:] = 0, 0
    result = paired.paired_difference(sides["a"], sides["b"])
    assert result.n_instances == 100
    assert paired.tie_groups(sides) == {"a": 1, "b": 2}
    assert paired.tie_groups({**sides, "empty": (num * 0, den * 0)})["empty"] is None


def test_rank_intervals_share_the_best_rank_on_ties_and_widen_with_noise():
    rng = np.random.default_rng(14)
    sides = _leaderboard(rng, {"top": 0.9, "n1": 0.5, "n2": 0.5, "low": 0.1})
    intervals = paired.rank_intervals(sides)
    assert intervals["top"] == (1, 1) and intervals["low"] == (4, 4)
    assert intervals["n1"][0] == 2 and intervals["n1"][1] == 3
    assert paired.ranks_of(np.array([5.0, 7.0, 7.0, np.nan])).tolist()[:3] == [3.0, 1.0, 1.0]
    assert paired.rank_intervals(sides) == intervals


def test_a_hundred_models_on_500_instances_group_and_rank_in_well_under_a_second():
    rng = np.random.default_rng(15)
    rates = {f"m{k:03d}": 0.3 + 0.4 * k / 100 for k in range(100)}
    sides = _leaderboard(rng, rates, n=500, judges=3, attempts=3)
    start = time.perf_counter()
    groups = paired.tie_groups(sides)
    intervals = paired.rank_intervals(sides)
    elapsed = time.perf_counter() - start
    assert len(groups) == len(intervals) == 100 and max(groups.values()) > 1
    assert elapsed < 3.0  # about 0.5 s alone on one core; the bound leaves room for a busy machine


# Tie groups under Holm's correction over every pair of the models not yet grouped --------------------------------


def test_holm_rejects_is_holm_over_the_whole_family_with_untested_comparisons_last():
    rng = np.random.default_rng(20)
    for _ in range(30):
        tested = rng.integers(1, 8)
        family = tested + rng.integers(0, 20)
        pvalues = (rng.random(tested) ** 3 * 0.05).tolist()
        whole = pvalues + [1.0] * (family - tested)
        expected = multipletests(whole, alpha=0.05, method="holm")[0][:tested].tolist()
        assert paired.holm_rejects(pvalues, family) == expected
    assert paired.holm_rejects([0.001, None, float("nan")], 3) == [True, False, False]
    with pytest.raises(ValueError):
        paired.holm_rejects([0.01, 0.02], 1)


def _exact_permutation_p(a, b):
    """The exact paired permutation p by enumerating every swap of A and B over the instances (a direct loop)."""
    (a_num, a_den), (b_num, b_den) = a, b
    n = len(a_num)

    def diff(an, ad, bn, bd):
        return float(
            paired.judge_figure(bn.sum(axis=0), bd.sum(axis=0)) - paired.judge_figure(an.sum(axis=0), ad.sum(axis=0))
        )

    observed = abs(diff(a_num, a_den, b_num, b_den))
    extreme = 0
    for mask in range(2**n):
        swap = np.array([(mask >> i) & 1 for i in range(n)], dtype=bool)[:, None]
        an, ad = np.where(swap, b_num, a_num), np.where(swap, b_den, a_den)
        bn, bd = np.where(swap, a_num, b_num), np.where(swap, a_den, b_den)
        extreme += abs(diff(an, ad, bn, bd)) >= observed - 1e-9
    return extreme / 2**n


@pytest.mark.parametrize("seed", range(6))
def test_chernoffs_bound_holds_the_exact_permutation_p_and_is_below_hoeffdings(seed):
    rng = np.random.default_rng(seed)
    a, b = _counts(rng, 12, 2, 3, 0.35), _counts(rng, 12, 2, 3, 0.7)
    stacked = [x[:, None, :] for x in (*a, *b)]
    (bound,) = paired._chernoff_bounds(*stacked)
    exact = _exact_permutation_p(a, b)
    assert exact <= bound + 1e-12
    # Hoeffding's bound from the instances' terms written out: the judge mean of 200 (b - a) / (A's + B's sums)
    terms = (200 * (b[0] - a[0]) / (a[1].sum(axis=0) + b[1].sum(axis=0))).mean(axis=1)
    observed = abs(terms.sum()) - 1e-9
    assert bound <= min(1.0, 2 * np.exp(-(observed**2) / (2 * (terms**2).sum()))) + 1e-12


@pytest.mark.parametrize("seed", range(6))
def test_a_lattice_pairs_p_is_the_exact_permutation_p(seed):
    rng = np.random.default_rng(100 + seed)
    judges = 1 + seed % 3
    a, b = _counts(rng, 12, judges, 3, 0.4), _counts(rng, 12, judges, 3, 0.6)
    (p,) = paired._lattice_pvalues(*(x[:, None, :] for x in (*a, *b)))
    assert p == pytest.approx(_exact_permutation_p(a, b), abs=1e-12)


def test_a_pair_off_the_lattice_has_no_exact_p():
    rng = np.random.default_rng(110)
    a, b = _counts(rng, 12, 2, 3, 0.4), _counts(rng, 12, 2, 3, 0.6)
    uneven = a[0], a[1].copy()
    uneven[1][0, 0] = 2  # one denominator differs from B's
    uneven[0][0, 0] = min(uneven[0][0, 0], 2)
    fractional = a[0] + 0.5, a[1]
    for side in (uneven, fractional):
        (p,) = paired._lattice_pvalues(*(x[:, None, :] for x in (*side, *b)))
        assert np.isnan(p)


def test_a_step_refines_a_permutation_p_below_what_its_first_draws_can_give():
    """60 instances whose denominators differ between the models (so Hoeffding's bound is only first-order and, for
    this difference, above the threshold, and the pair is off the lattice of _lattice_pvalues): a family of 2,000 comparisons needs 40,000 permutations; the refined p is
    the share of a direct count over the first draws and _more_swaps' further ones."""
    rng = np.random.default_rng(30)
    n = 60
    a_den = rng.integers(1, 4, size=(n, 1)).astype(float)
    b_den = rng.integers(1, 4, size=(n, 1)).astype(float)
    a = rng.binomial(a_den.astype(int), 0.35).astype(float), a_den
    b = rng.binomial(b_den.astype(int), 0.66).astype(float), b_den
    tests = paired._PairTests(*paired._stacked({"a": a, "b": b}), paired.PERMUTATIONS, paired.BOOTSTRAP_SEED)
    first = tests.pvalues(0, [1], paired.PERMUTATIONS)[0][0]
    family, alpha = 2000, 0.05
    (bound,) = paired._chernoff_bounds(*(x[:, None, :] for x in (*a, *b)))
    assert first == 1 / (1 + paired.PERMUTATIONS) and bound > alpha / family
    (refined,) = tests.step_pvalues(0, [1], paired.PERMUTATIONS, family, alpha)

    swaps = np.vstack(
        [paired._swaps(n, paired.PERMUTATIONS, paired.BOOTSTRAP_SEED)]
        + list(paired._more_swaps(n, 40000 - paired.PERMUTATIONS, paired.BOOTSTRAP_SEED))
    )
    assert len(swaps) == 40000
    figure = lambda num, den: 100 * num.sum() / den.sum()  # noqa: E731
    observed = abs(figure(*b) - figure(*a))
    s = swaps.astype(bool)[:, :, None]
    an, ad = (np.where(s, b[k][None], a[k][None]) for k in (0, 1))
    bn, bd = (np.where(s, a[k][None], b[k][None]) for k in (0, 1))
    permuted = 100 * bn.sum(axis=(1, 2)) / bd.sum(axis=(1, 2)) - 100 * an.sum(axis=(1, 2)) / ad.sum(axis=(1, 2))
    extreme = int((np.abs(permuted) >= observed - 1e-9).sum())
    assert refined == pytest.approx((1 + extreme) / (1 + 40000), abs=1e-12)
    assert refined < first


def test_four_equal_models_are_split_no_more_often_than_two():
    """Choosing the best of several equal models as the leader makes its differences from the others look larger;
    Holm's correction over every pair keeps the false splits of four equal models within those of one pair's test."""
    rng = np.random.default_rng(40)
    splits = 0
    studies = 150
    for _ in range(studies):
        sides = {name: _counts(rng, 80, 2, 2, 0.5) for name in "abcd"}
        splits += len(set(paired.tie_groups(sides).values())) > 1
    assert splits / studies <= 0.08


def test_the_sign_flip_count_of_equal_denominators_equals_the_swapped_sums():
    rng = np.random.default_rng(41)
    a, b = _counts(rng, 150, 3, 2, 0.4), _counts(rng, 150, 3, 2, 0.47)
    sides = [x[:, None, :] for x in (*a, *b)]
    counter = paired._DrawCounter(sides)
    assert counter.linear.tolist() == [True]
    swaps = paired._swaps(150, paired.PERMUTATIONS, paired.BOOTSTRAP_SEED)
    delta = [sides[2] - sides[0], sides[3] - sides[1]]
    moved = [(swaps @ d.reshape(150, -1)).reshape(len(swaps), 1, 3) for d in delta]
    expected = paired._permutation_counts(*sides, *moved)
    extreme, defined = counter(np.packbits(swaps > 0.5, axis=1), np.arange(1))
    assert extreme.tolist() == expected[0].tolist() and defined.tolist() == expected[1].tolist()


def test_a_step_on_counts_alike_everywhere_equals_the_masked_path():
    """Every model with the same denominators on every instance and judge takes its sign-flip terms and lattice
    steps from per-model arrays (_PairTests.uniform); the p of each pair equal those of the masked path."""
    rng = np.random.default_rng(50)
    rates = {f"m{k:02d}": 0.5 + 0.004 * k for k in range(30)}
    sides = _leaderboard(rng, rates, n=120, judges=3, attempts=3)
    tests = paired._PairTests(*paired._stacked(sides), paired.PERMUTATIONS, paired.BOOTSTRAP_SEED)
    assert tests.uniform and tests.steps is not None
    family = 30 * 29 // 2
    fast = tests.step_pvalues(29, list(range(29)), paired.PERMUTATIONS, family, 0.05)
    tests.uniform = False
    masked = tests.step_pvalues(29, list(range(29)), paired.PERMUTATIONS, family, 0.05)
    assert fast == pytest.approx(masked, rel=1e-9)
    assert paired.holm_rejects(fast, family) == paired.holm_rejects(masked, family)
    assert any(paired.holm_rejects(fast, family)) and not all(paired.holm_rejects(fast, family))
