"""The 2PL fit (runs.metrics.irt): it recovers known parameters, and it is the maximum of the marginal log
posterior that scipy finds on its own."""

import numpy as np
import pytest
from scipy.integrate import dblquad
from scipy.optimize import minimize
from scipy.special import log_expit, logsumexp

from runs.metrics import irt


def test_it_recovers_known_parameters_from_simulated_data():
    truth = irt.simulate_2pl(models=60, items=400, attempts=3, seed=7)
    fit = irt.fit_2pl(truth.successes, truth.trials)
    found = irt.recovery(fit, truth)
    assert fit.converged
    assert found["difficulty"] >= 0.9
    assert found["discrimination"] >= 0.75
    assert found["ability"] >= 0.98


def _log_posterior(params, k, n, nodes, log_weights):
    items = k.shape[1]
    a, b = params[:items], params[items:]
    z = a * (nodes[:, None] - b)
    per_model = k @ log_expit(z).T + (n - k) @ log_expit(-z).T + log_weights
    prior = ((a - irt.DISCRIMINATION_PRIOR[0]) / irt.DISCRIMINATION_PRIOR[1]) ** 2 + (b / irt.DIFFICULTY_PRIOR_SD) ** 2
    return logsumexp(per_model, axis=1).sum() - 0.5 * prior.sum()


def test_it_is_the_maximum_of_the_marginal_posterior_scipy_finds():
    truth = irt.simulate_2pl(models=12, items=5, attempts=2, seed=3)
    fit = irt.fit_2pl(truth.successes, truth.trials, tolerance=1e-9, likelihood_tolerance=0, max_iterations=5000)
    nodes = np.linspace(-irt.GRID_LIMIT, irt.GRID_LIMIT, irt.GRID_POINTS)
    log_weights = -0.5 * nodes**2 - logsumexp(-0.5 * nodes**2)
    k, n = truth.successes.astype(float), truth.trials.astype(float)
    start = np.r_[np.ones(5), np.zeros(5)]
    best = minimize(
        lambda p: -_log_posterior(p, k, n, nodes, log_weights), start, method="BFGS", options={"gtol": 1e-8}
    )
    assert fit.converged
    np.testing.assert_allclose(fit.discrimination, best.x[:5], atol=2e-3)
    np.testing.assert_allclose(fit.difficulty, best.x[5:], atol=2e-3)


def test_it_keeps_a_negative_discrimination_and_finite_extremes():
    rng = np.random.default_rng(5)
    ability = rng.standard_normal(80)
    p = 1 / (1 + np.exp(-np.c_[1.5 * ability, -1.5 * ability]))
    trials = np.full((80, 4), 4)
    successes = np.c_[rng.binomial(4, p), np.full(80, 4), np.zeros(80, dtype=int)]
    fit = irt.fit_2pl(successes, trials)
    assert fit.discrimination[0] > 0.8
    assert fit.discrimination[1] < -0.8
    assert np.isfinite(fit.difficulty).all() and np.isfinite(fit.difficulty_se).all()
    assert fit.difficulty[2] < -1 and fit.difficulty[3] > 1  # every model passes item 2, none item 3


def test_it_refuses_counts_that_do_not_add_up():
    with pytest.raises(ValueError, match="passes <= verdicts"):
        irt.fit_2pl(np.array([[3]]), np.array([[2]]))
    with pytest.raises(ValueError, match="one shape"):
        irt.fit_2pl(np.zeros((2, 3)), np.zeros((3, 2)))


def test_the_discrimination_ceiling_is_the_posterior_means_correlation_quadrature_finds():
    truth = irt.simulate_2pl(models=15, items=8, attempts=2, seed=4)
    sd = irt.SIMULATED_LOG_DISCRIMINATION_SD
    k, n = truth.successes.astype(float), truth.trials.astype(float)

    def density(b, log_a, item, power):
        z = np.exp(log_a) * (truth.ability - b)
        log_lik = k[:, item] @ log_expit(z) + (n - k)[:, item] @ log_expit(-z)
        return np.exp(log_a * power + log_lik - 0.5 * (log_a / sd) ** 2 - 0.5 * b**2)

    means = []
    for item in range(8):
        mass = dblquad(density, -6 * sd, 6 * sd, -6, 6, args=(item, 0))[0]
        means.append(dblquad(density, -6 * sd, 6 * sd, -6, 6, args=(item, 1))[0] / mass)
    expected = np.corrcoef(means, truth.discrimination)[0, 1]
    assert irt.discrimination_ceiling(truth) == pytest.approx(expected, abs=5e-3)


def test_the_fit_does_not_beat_the_discrimination_ceiling():
    for attempts in (1, 3):
        truth = irt.simulate_2pl(models=60, items=400, attempts=attempts, seed=8)
        found = irt.recovery(irt.fit_2pl(truth.successes, truth.trials), truth)["discrimination"]
        ceiling = irt.discrimination_ceiling(truth)
        assert ceiling - 0.05 < found < ceiling + 0.01
