"""Judge accuracy and prediction-powered calibration (runs.metrics.judge_accuracy, runs.metrics.calibration) against
scikit-learn and a direct numpy implementation of the formulas on fixtures."""

import math
import random

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, recall_score

from runs.metrics import calibration
from runs.metrics.judge_accuracy import AuditedPair, accuracy, judge_accuracy, kappa, sensitivity, specificity


def _fixture(seed=3, n=120, weighted=False):
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        stratum = ("a", "b", "c")[i % 3]
        human = rng.random() < 0.6
        judge = human if rng.random() < 0.8 else not human
        w = {"a": 1.0, "b": 4.0, "c": 2.5}[stratum] if weighted else 1.0
        pairs.append(AuditedPair(stratum, w, human, judge, category=("X", "Y")[i % 2], model=("m1", "m2")[i % 4 // 2]))
    return pairs


@pytest.mark.parametrize("weighted", [False, True])
def test_point_figures_equal_scikit_learn(weighted):
    pairs = _fixture(weighted=weighted)
    h = [int(p.human) for p in pairs]
    j = [int(p.judge) for p in pairs]
    w = [p.weight for p in pairs] if weighted else None
    assert accuracy(pairs).value == pytest.approx(accuracy_score(h, j, sample_weight=w))
    assert sensitivity(pairs).value == pytest.approx(recall_score(h, j, pos_label=1, sample_weight=w))
    assert specificity(pairs).value == pytest.approx(recall_score(h, j, pos_label=0, sample_weight=w))
    assert kappa(pairs).value == pytest.approx(cohen_kappa_score(h, j, sample_weight=w))


def test_undecided_pairs_count_in_no_figure_and_domains_equal_scikit_learn_on_their_pairs():
    pairs = _fixture() + [AuditedPair("a", 1.0, None, True), AuditedPair("b", 1.0, True, None)]
    rows = judge_accuracy({"J": pairs})
    overall = rows["overall"][0]
    assert overall.n == 120
    x = [p for p in pairs if p.category == "X" and p.human is not None and p.judge is not None]
    row = next(r for r in rows["category"] if r.group == "X")
    assert row.n == len(x)
    assert row.accuracy.value == pytest.approx(accuracy_score([p.human for p in x], [p.judge for p in x]))
    assert row.kappa.value == pytest.approx(cohen_kappa_score([p.human for p in x], [p.judge for p in x]))
    assert row.disagreements == sum(p.human != p.judge for p in x)


def test_the_accuracy_interval_is_the_stratified_linearised_one():
    pairs = _fixture(weighted=True)
    est = accuracy(pairs)
    w = np.array([p.weight for p in pairs])
    y = np.array([float(p.human == p.judge) for p in pairs])
    strata = np.array([p.stratum for p in pairs])
    r = (w * y).sum() / w.sum()
    z = w * (y - r) / w.sum()
    var = 0.0
    for s in set(strata):
        zs = z[strata == s]
        var += len(zs) / (len(zs) - 1) * ((zs - zs.mean()) ** 2).sum()
    assert est.se == pytest.approx(math.sqrt(var))
    assert (est.low, est.high) == pytest.approx(
        (r - 1.959963984540054 * math.sqrt(var), r + 1.959963984540054 * math.sqrt(var))
    )


def test_the_kappa_interval_covers_the_truth_in_repeated_samples():
    rng = random.Random(1)
    covered = 0
    for _ in range(200):
        pairs = []
        for _ in range(300):
            h = rng.random() < 0.5
            pairs.append(AuditedPair("s", 1.0, h, h if rng.random() < 0.85 else not h))
        k = kappa(pairs)
        covered += k.low <= 0.7 <= k.high  # p_o = 0.85, p_e = 0.5: kappa 0.7
    assert covered >= 180


def test_calibrated_csr_equals_a_direct_numpy_implementation():
    pairs = _fixture(weighted=True)
    attempts = [(8, 2), (10, 0), (5, 5), (9, 1)]
    row = calibration.calibrate("m1", "J", attempts, pairs)
    w = np.array([p.weight if p.model == "m1" else 0.0 for p in pairs])
    h = np.array([float(p.human) for p in pairs])
    j = np.array([float(p.judge) for p in pairs])
    strata = np.array([p.stratum for p in pairs])
    n_pass, n = 32, 40
    r = n_pass / n
    rect = (w * (h - j)).sum() / w.sum()
    z = w * ((h - j) - rect) / w.sum()
    var_rect = sum(
        len(z[strata == s]) / (len(z[strata == s]) - 1) * ((z[strata == s] - z[strata == s].mean()) ** 2).sum()
        for s in set(strata)
    )
    se = math.sqrt(r * (1 - r) / n + var_rect)
    assert row.raw_csr == pytest.approx(r) and row.rectifier == pytest.approx(rect)
    assert row.csr.value == pytest.approx(r + rect) and row.csr.se == pytest.approx(se)
    assert row.raw_isr == pytest.approx(1 / 4)
    q1 = (w * h * j).sum() / (w * j).sum()
    q0 = (w * h * (1 - j)).sum() / (w * (1 - j)).sum()
    assert row.isr.value == pytest.approx(np.mean([q1**a * q0**b for a, b in attempts]))


def test_rankings_are_compared_per_judge():
    def est(v):
        return calibration.Estimate(v, 0.0, v, v, 10)

    rows = [
        calibration.Calibrated("a", "J", 0.5, 0.9, est(0.6), est(0.5), -0.3, 10, 5, 10),
        calibration.Calibrated("b", "J", 0.5, 0.7, est(0.7), est(0.5), 0.0, 10, 5, 10),
        calibration.Calibrated("c", "J", 0.5, 0.5, est(0.5), est(0.5), 0.0, 10, 5, 10),
    ]
    (cmp,) = calibration.compare_rankings(rows)
    assert cmp.raw_ranks == {"a": 1, "b": 2, "c": 3} and cmp.calibrated_ranks == {"b": 1, "a": 2, "c": 3}
    assert cmp.swaps == [("a", "b")] and cmp.tau == pytest.approx(1 / 3)
