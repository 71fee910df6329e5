"""Two-parameter logistic item response model (2PL) with models as respondents and items as questions.

P(model m passes item i) = 1 / (1 + exp(-a_i * (theta_m - b_i))), difficulty b_i, discrimination a_i;
the abilities theta are standard normal. Data are binomial counts per (model, item): passes among the verdicts on
the item over the model's attempts and judges (a cell with no verdict carries no information).

The fit is marginal maximum likelihood by EM over a fine grid of abilities (Bock and Aitkin, 1981), with
a normal prior on each discrimination and each difficulty as the regularisation (a maximum a posteriori fit; the
M-step is one Fisher scoring step per item). Standard errors come from each item's information matrix at the
fit (the EM's complete-data information plus the prior's, which understates the variance a little); abilities are
posterior means (EAP) with posterior standard deviations. numpy only; docs/metrics.md, "Item health".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: the ability grid: evenly spaced points on [-GRID_LIMIT, GRID_LIMIT] weighted by the N(0, 1) density. A model
#: answers hundreds or thousands of items, so its posterior is narrow (a standard deviation of 0.05 to 0.2):
#: Gauss-Hermite's few points would put it on a single node and bias the discriminations (by about 25% in
#: simulation); a grid 0.1 apart does not
GRID_POINTS = 81
GRID_LIMIT = 4.0
#: the regularising priors: discrimination ~ N(1, 1) (negative values allowed: an item stronger models fail more
#: often keeps its sign, and one of discrimination 0 can come out near 0, which a lognormal prior as in BILOG-MG
#: would prevent; docs/metrics.md, "Item health"), difficulty ~ N(0, 2^2) (an item every model passes, or none, keeps a finite difficulty,
#: and so does one whose discrimination is near 0, where b alone is not identified)
DISCRIMINATION_PRIOR = (1.0, 1.0)
DIFFICULTY_PRIOR_SD = 2.0
MAX_ITERATIONS = 300
#: the EM stops when no item's discrimination or difficulty moves by more than this in an iteration (a tenth
#: or less of their standard errors with 100 models)
TOLERANCE = 1e-2
#: or when the marginal log-likelihood moves by less than this share in an iteration (a few items of nearly flat
#: likelihood, a discrimination near 0, can creep for hundreds of iterations without changing the fit)
LIKELIHOOD_TOLERANCE = 1e-7
#: the largest Newton step per parameter in one M-step (keeps a nearly flat item from jumping)
MAX_STEP = 1.0
#: how often a step that lowers an item's posterior is halved
STEP_HALVINGS = 6


@dataclass(frozen=True)
class IrtFit:
    """A 2PL fit: per item discrimination, difficulty and their standard errors; per model ability (EAP) and its
    posterior standard deviation; whether the EM converged and in how many iterations."""

    discrimination: np.ndarray
    difficulty: np.ndarray
    discrimination_se: np.ndarray
    difficulty_se: np.ndarray
    ability: np.ndarray
    ability_sd: np.ndarray
    iterations: int
    converged: bool
    log_likelihood: float


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _log_sigmoid(z: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -z)


def fit_2pl(
    successes: np.ndarray,
    trials: np.ndarray,
    *,
    grid_points: int = GRID_POINTS,
    max_iterations: int = MAX_ITERATIONS,
    tolerance: float = TOLERANCE,
    likelihood_tolerance: float = LIKELIHOOD_TOLERANCE,
) -> IrtFit:
    """Fit the 2PL to (models x items) matrices of passes and verdicts by regularised marginal maximum likelihood.

    Raises ValueError when the shapes differ, a count is negative or passes exceed verdicts."""
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    if k.shape != n.shape or k.ndim != 2:
        raise ValueError(f"successes {k.shape} and trials {n.shape} must be matrices of one shape (models x items)")
    if (k < 0).any() or (k > n).any():
        raise ValueError("every count must satisfy 0 <= passes <= verdicts")
    nodes = np.linspace(-GRID_LIMIT, GRID_LIMIT, grid_points)
    log_weights = -0.5 * nodes**2 - np.log(np.exp(-0.5 * nodes**2).sum())
    misses = n - k
    a = np.full(k.shape[1], DISCRIMINATION_PRIOR[0])
    b = np.clip(-np.log((k.sum(axis=0) + 0.5) / (misses.sum(axis=0) + 0.5)), -3.0, 3.0)
    converged = False
    iterations = 0
    previous = -np.inf
    for iteration in range(1, max_iterations + 1):
        iterations = iteration
        posterior, log_likelihood = _posterior(k, n, a, b, nodes, log_weights)
        a_new, b_new = _m_step(a, b, nodes, posterior.T @ k, posterior.T @ n)
        change = max(np.abs(a_new - a).max(initial=0.0), np.abs(b_new - b).max(initial=0.0))
        a, b = a_new, b_new
        if change < tolerance or abs(log_likelihood - previous) < likelihood_tolerance * abs(log_likelihood):
            converged = True
            break
        previous = log_likelihood
    posterior, log_likelihood = _posterior(k, n, a, b, nodes, log_weights)
    i_aa, i_ab, i_bb = _information(a, b, nodes, posterior.T @ n)
    det = i_aa * i_bb - i_ab**2
    ability = posterior @ nodes
    return IrtFit(
        discrimination=a,
        difficulty=b,
        discrimination_se=np.sqrt(i_bb / det),
        difficulty_se=np.sqrt(i_aa / det),
        ability=ability,
        ability_sd=np.sqrt(np.maximum(posterior @ nodes**2 - ability**2, 0.0)),
        iterations=iterations,
        converged=converged,
        log_likelihood=log_likelihood,
    )


def _posterior(k, n, a, b, nodes, log_weights) -> tuple[np.ndarray, float]:
    """Each model's posterior over the ability grid (models x grid) and the marginal log-likelihood.

    k log s(z) + (n - k) log s(-z) = k z + n log s(-z), and k z is linear in the grid's ability, so only the
    second term needs a (models x items) by (items x grid) product."""
    z = a * (nodes[:, None] - b)  # (grid x items)
    ka = k @ a
    log_lik = np.outer(ka, nodes) - (k @ (a * b))[:, None] + n @ _log_sigmoid(-z).T + log_weights
    top = log_lik.max(axis=1, keepdims=True)
    joint = np.exp(log_lik - top)
    total = joint.sum(axis=1, keepdims=True)
    return joint / total, float((np.log(total) + top).sum())


def _m_step(a, b, nodes, expected_passes, expected_trials):
    """One Fisher scoring step per item on the expected complete-data log posterior (a logistic regression of
    the expected passes on the grid's abilities, with the priors), halved while it lowers that posterior: with
    a discrimination near 0 a full step can overshoot and oscillate."""
    spread = nodes[:, None] - b
    resid = expected_passes - expected_trials * _sigmoid(a * spread)
    grad_a = (resid * spread).sum(axis=0) - (a - DISCRIMINATION_PRIOR[0]) / DISCRIMINATION_PRIOR[1] ** 2
    grad_b = -a * resid.sum(axis=0) - b / DIFFICULTY_PRIOR_SD**2
    i_aa, i_ab, i_bb = _information(a, b, nodes, expected_trials)
    det = i_aa * i_bb - i_ab**2
    step_a = np.clip((i_bb * grad_a - i_ab * grad_b) / det, -MAX_STEP, MAX_STEP)
    step_b = np.clip((i_aa * grad_b - i_ab * grad_a) / det, -MAX_STEP, MAX_STEP)
    before = _objective(a, b, nodes, expected_passes, expected_trials)
    for _ in range(STEP_HALVINGS):
        worse = _objective(a + step_a, b + step_b, nodes, expected_passes, expected_trials) < before
        if not worse.any():
            break
        step_a = np.where(worse, step_a / 2, step_a)
        step_b = np.where(worse, step_b / 2, step_b)
    return a + step_a, b + step_b


def _objective(a, b, nodes, expected_passes, expected_trials):
    """Each item's expected complete-data log posterior."""
    z = a * (nodes[:, None] - b)
    log_lik = (expected_passes * z + expected_trials * _log_sigmoid(-z)).sum(axis=0)
    prior = ((a - DISCRIMINATION_PRIOR[0]) / DISCRIMINATION_PRIOR[1]) ** 2 + (b / DIFFICULTY_PRIOR_SD) ** 2
    return log_lik - 0.5 * prior


def _information(a, b, nodes, expected_trials):
    """Each item's expected information for (discrimination, difficulty), the priors' included: (aa, ab, bb)."""
    spread = nodes[:, None] - b
    p = _sigmoid(a * spread)
    w = expected_trials * p * (1.0 - p)
    i_aa = (w * spread**2).sum(axis=0) + 1.0 / DISCRIMINATION_PRIOR[1] ** 2
    i_ab = -a * (w * spread).sum(axis=0)
    i_bb = a**2 * w.sum(axis=0) + 1.0 / DIFFICULTY_PRIOR_SD**2
    return i_aa, i_ab, i_bb


@dataclass(frozen=True)
class Simulated:
    """Simulated 2PL data with the parameters that made them."""

    ability: np.ndarray
    discrimination: np.ndarray
    difficulty: np.ndarray
    successes: np.ndarray
    trials: np.ndarray


#: the simulation's discriminations: lognormal with this sigma of their logarithm (and a median of 1)
SIMULATED_LOG_DISCRIMINATION_SD = 0.4


def simulate_2pl(*, models: int, items: int, attempts: int = 1, seed: int = 0) -> Simulated:
    """Binomial counts from a 2PL with known parameters: ability and difficulty ~ N(0, 1), discrimination
    ~ lognormal(0, 0.4) (about 0.5 to 2.2), `attempts` verdicts per (model, item)."""
    rng = np.random.default_rng(seed)
    ability = rng.standard_normal(models)
    difficulty = rng.standard_normal(items)
    discrimination = rng.lognormal(0.0, SIMULATED_LOG_DISCRIMINATION_SD, items)
    p = _sigmoid(discrimination * (ability[:, None] - difficulty))
    trials = np.full((models, items), attempts)
    successes = rng.binomial(trials, p)
    return Simulated(ability, discrimination, difficulty, successes, trials)


def recovery(fit: IrtFit, truth: Simulated) -> dict[str, float]:
    """Pearson correlations between the fitted and the true parameters."""
    return {
        "difficulty": float(np.corrcoef(fit.difficulty, truth.difficulty)[0, 1]),
        "discrimination": float(np.corrcoef(fit.discrimination, truth.discrimination)[0, 1]),
        "ability": float(np.corrcoef(fit.ability, truth.ability)[0, 1]),
    }


def discrimination_ceiling(truth: Simulated, *, chunk: int = 1000) -> float:
    """The Pearson correlation with the true discriminations of their posterior means given the counts, the true
    abilities and the simulation's own distributions (lognormal(0, 0.4) discrimination, N(0, 1) difficulty).

    The posterior mean is the function of the data most correlated with the truth, and it is given more than a
    fit has (the abilities and the distributions), so no estimator's discrimination recovery on this simulated
    data set can be expected to exceed this figure. Computed per item on a grid of 41 log discriminations by 61
    difficulties, each within 4 standard deviations."""
    sd = SIMULATED_LOG_DISCRIMINATION_SD
    log_a = np.linspace(-4 * sd, 4 * sd, 41)
    b = np.linspace(-4.0, 4.0, 61)
    a_cells = np.repeat(np.exp(log_a), b.size)
    log_prior = (-0.5 * (log_a[:, None] / sd) ** 2 - 0.5 * b[None, :] ** 2).reshape(-1, 1)
    z = a_cells[:, None] * (truth.ability[None, :] - np.tile(b, log_a.size)[:, None])  # (cells x models)
    log_pass, log_fail = _log_sigmoid(z), _log_sigmoid(-z)
    k = truth.successes.astype(float)
    n = truth.trials.astype(float)
    means = np.empty(k.shape[1])
    for start in range(0, k.shape[1], chunk):
        part = slice(start, start + chunk)
        log_post = log_pass @ k[:, part] + log_fail @ (n - k)[:, part] + log_prior
        weights = np.exp(log_post - log_post.max(axis=0))
        means[part] = a_cells @ weights / weights.sum(axis=0)
    return float(np.corrcoef(means, truth.discrimination)[0, 1])
