"""Hazan & Koren (2012): AERR (Alg. 1), AELR (Alg. 2) and AESVR (Alg. 4 with GenEst, Procedure 3).

Unbiasedness of the estimators through the algorithms' own sampling, the lazy O(k) iterates against
dense transcriptions of the pseudo-code, the per-example budget, and learning on a small regression.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.datasets.base import Dataset
from learner.algorithms import algorithms, get_algorithm
from learner.algorithms.base import PaidRow, ParamError, Problem
from learner.algorithms.hazan_koren_2012.aesvr import GenEstGradient
from learner.algorithms.shared import iterates
from learner.algorithms.shared.attribute_efficient import DataPointSampler, SampledGradient
from learner.algorithms.shared.estimators import smoothed_derivative, truncated_smoothed_derivative
from learner.algorithms.shared.iterates import LassoIterate, RidgeIterate
from learner.algorithms.shared.sumtree import RunningTotal, SumTree
from learner.oracle import LocalOracle
from learner.runner import run_algorithm

HK = ("aerr", "aelr", "aesvr")


def mean_and_standard_error(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return samples.mean(axis=0), samples.std(axis=0, ddof=1) / np.sqrt(len(samples))


def gradient_samples(engine: SampledGradient, x: np.ndarray, y: float, repeats: int) -> np.ndarray:
    """g̃ of ``repeats`` independent selections at a fixed (w, x, y), each seeing only what it selected."""
    out = np.zeros((repeats, x.shape[0]))
    for r in range(repeats):
        observed = {i: float(x[i]) for i in engine.select()}
        for i, g in engine.gradient(observed, y).items():
            out[r, i] = g
    return out


# --- unbiasedness ---------------------------------------------------------------------------------

# 4 standard errors per coordinate: with ~6-12 coordinates and a fixed seed a true estimator fails
# this with probability < 1e-3, while a biased one (e.g. a missing d/k or ||w||² factor) is off by
# many tens of standard errors at 20,000 repeats.
TOLERANCE_SE = 4.0


@pytest.mark.parametrize("algorithm_id", ["aerr", "aelr"])
def test_squared_loss_gradient_estimate_is_unbiased(algorithm_id: str) -> None:
    d, budget = 6, 3
    rng = np.random.default_rng(1)
    w = np.array([0.3, -0.2, 0.1, 0.05, -0.15, 0.1])  # ||w||_1 = 0.9 < B: representable by both iterates
    x, y = rng.uniform(-1, 1, d), 0.7
    algorithm = get_algorithm(algorithm_id)(Problem(d=d, k=budget, n_examples=100), seed=2)
    engine = algorithm.engine
    engine.iterate = RidgeIterate(d, 1.0, start=w) if algorithm_id == "aerr" else LassoIterate(d, 1.0, start=w)
    w_exact = engine.iterate.current()
    np.testing.assert_allclose(w_exact, w, atol=1e-12)
    mean, se = mean_and_standard_error(gradient_samples(engine, x, y, 20_000))
    exact = (w_exact @ x - y) * x
    assert np.all(np.abs(mean - exact) <= TOLERANCE_SE * se), (mean, exact, se)


def genest_engine(w: np.ndarray, genest_draws: int, N: int, seed: int) -> GenEstGradient:
    return GenEstGradient(RidgeIterate(w.shape[0], 1.0, start=w), DataPointSampler(w.shape[0]), 2, genest_draws, 0.1,
                          np.random.default_rng(seed), delta=0.2, epsilon=0.8, N=N)


def test_genest_is_unbiased_for_the_truncated_erf_series() -> None:
    """φ̃ (both GenEst calls) and g̃ = φ̃ x̃ of AESVR, with the grouped draws of Procedure 3 line 10 in play."""
    d = 12
    rng = np.random.default_rng(3)
    w = rng.uniform(-0.3, 0.3, d)
    x, y = rng.uniform(-0.3, 0.3, d), -0.4
    # N = 2: orders n > 2 log2 N = 2 average 2 draws per factor; 10 GenEst draws allow n <= 5.
    engine = genest_engine(w, genest_draws=10, N=2, seed=4)
    assert engine.n_max == 5
    residual = float(w @ x - y)
    target = truncated_smoothed_derivative(residual, 0.2, 0.8, engine.n_max)
    phis, grads = [], np.zeros((40_000, d))
    for r in range(40_000):
        observed = {i: float(x[i]) for i in engine.select()}
        phis.append(engine.phi(observed, y))
        for i, g in engine.gradient(observed, y).items():
            grads[r, i] = g
    phi_mean, phi_se = mean_and_standard_error(np.array(phis))
    assert abs(phi_mean - target) <= TOLERANCE_SE * phi_se, (phi_mean, target, phi_se)
    mean, se = mean_and_standard_error(grads)
    assert np.all(np.abs(mean - target * x) <= TOLERANCE_SE * se), (mean, target * x, se)


def test_truncated_series_approaches_the_smoothed_derivative() -> None:
    # For |(r ± δ)/ε| <= 1.5 the first omitted term after order 25 is below 4e-7: the cut series is f'_ε to 1e-6,
    # while a cut after order 3 is visibly off.
    for residual in (-1.0, -0.3, 0.4, 1.0):
        exact = smoothed_derivative(residual, 0.2, 0.8)
        assert abs(truncated_smoothed_derivative(residual, 0.2, 0.8, 25) - exact) < 1e-6
    assert abs(truncated_smoothed_derivative(1.0, 0.2, 0.8, 3) - smoothed_derivative(1.0, 0.2, 0.8)) > 0.05
    assert smoothed_derivative(0.0, 0.2, 0.8) == 0.0
    assert smoothed_derivative(5.0, 0.2, 0.8) == pytest.approx(1.0)


# --- lazy O(k) iterates against the dense pseudo-code ---------------------------------------------


def dense_aerr(X: np.ndarray, Y: np.ndarray, k: int, eta: float, B: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1 line by line in O(d), consuming the generator as the implementation does (k + 1 U[0,1) per
    example: k uniform indices, then the w²-weighted one, unused while w = 0)."""
    rng = np.random.default_rng(seed)
    d = X.shape[1]
    w, total = np.zeros(d), np.zeros(d)
    for x, y in zip(X, Y, strict=True):
        u = rng.random(k + 1)
        x_tilde = np.zeros(d)
        for i in np.minimum((u[:k] * d).astype(int), d - 1):
            x_tilde[i] += d * x[i] / k
        if np.any(w):
            j = int(np.searchsorted(np.cumsum(w**2), u[k] * np.sum(w**2), side="right"))
            phi = (w @ w) * x[j] / w[j] - y
        else:
            phi = -y
        total += w
        v = w - eta * phi * x_tilde
        w = v * B / max(np.linalg.norm(v), B)
    return total / len(X), w


def dense_aelr(X: np.ndarray, Y: np.ndarray, k: int, eta: float, B: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 2 line by line in O(d), with the same use of the generator."""
    rng = np.random.default_rng(seed)
    d = X.shape[1]
    z_plus, z_minus, total = np.ones(d), np.ones(d), np.zeros(d)
    for x, y in zip(X, Y, strict=True):
        w = (z_plus - z_minus) * B / (z_plus.sum() + z_minus.sum())
        u = rng.random(k + 1)
        x_tilde = np.zeros(d)
        for i in np.minimum((u[:k] * d).astype(int), d - 1):
            x_tilde[i] += d * x[i] / k
        if np.any(w):
            j = int(np.searchsorted(np.cumsum(np.abs(w)), u[k] * np.sum(np.abs(w)), side="right"))
            phi = np.abs(w).sum() * np.sign(w[j]) * x[j] - y
        else:
            phi = -y
        total += w
        g_bar = np.clip(phi * x_tilde, -1 / eta, 1 / eta)
        z_plus = z_plus * np.exp(-eta * g_bar)
        z_minus = z_minus * np.exp(eta * g_bar)
    return total / len(X), (z_plus - z_minus) * B / (z_plus.sum() + z_minus.sum())


def drive(algorithm, X: np.ndarray, Y: np.ndarray) -> None:
    for x, y in zip(X, Y, strict=True):
        algorithm.update({i: float(x[i]) for i in algorithm.select()}, float(y))


@pytest.mark.parametrize("limits", [None, (2.0, 5.0)], ids=["default", "tight-flush-and-renormalise"])
@pytest.mark.parametrize(("algorithm_id", "dense", "eta", "B"), [("aerr", dense_aerr, 0.3, 0.8),
                                                                  ("aelr", dense_aelr, 0.4, 2.0)])
def test_lazy_iterates_equal_the_dense_pseudo_code(monkeypatch, limits, algorithm_id, dense, eta, B) -> None:
    # Tight limits fold the lazy average and renormalise y every few steps, exercising those paths too.
    if limits is not None:
        monkeypatch.setattr(iterates, "FLUSH_RATIO", limits[0])
        monkeypatch.setattr(iterates, "SCALE_LIMIT", limits[1])
    rng = np.random.default_rng(5)
    d, k, m = 10, 3, 400
    X = rng.standard_normal((m, d))
    Y = X[:, :3] @ np.array([0.5, -0.4, 0.3]) + 0.1 * rng.standard_normal(m)
    algorithm = get_algorithm(algorithm_id)(Problem(d=d, k=k + 1, n_examples=m), seed=6, eta=eta, B=B)
    drive(algorithm, X, Y)
    average, last = dense(X, Y, k, eta, B, seed=6)
    np.testing.assert_allclose(algorithm.current_weights(), last, rtol=0, atol=1e-9)
    np.testing.assert_allclose(algorithm.weights, average, rtol=0, atol=1e-9)
    # The run must have moved far from w_1 = 0 and hit the constraint, or the comparison proves little.
    norm = np.linalg.norm(last) if algorithm_id == "aerr" else np.abs(last).sum()
    assert norm > 0.5 * B


def test_running_total_tracks_the_exact_sum_of_changing_weights() -> None:
    # Weights spanning 12 orders of magnitude changed 50,000 times (5 exact resyncs of 10,000): the compensated
    # total must stay within 1e-12 relative of math.fsum and agree with a sum tree over the same weights.
    rng = np.random.default_rng(13)
    weights = 10.0 ** rng.uniform(-6, 6, 10_000)
    total, tree = RunningTotal(weights), SumTree(weights)
    for i, w in zip(rng.integers(0, 10_000, 50_000).tolist(), (10.0 ** rng.uniform(-6, 6, 50_000)).tolist(),
                    strict=True):
        weights[i] = w
        total.set(i, w)
        tree.set(i, w)
    exact = math.fsum(weights.tolist())
    assert abs(total.total - exact) <= 1e-12 * exact
    assert abs(tree.total - exact) <= 1e-12 * exact


def test_a_step_s_moves_set_at_once_give_the_tree_they_give_one_by_one() -> None:
    # The iterates set a step's k sampling weights at once (SumTree.set_many); the tree, every node of it, must be
    # the one that setting them one by one gives, bit for bit, or the inner-product draws change.
    rng = np.random.default_rng(14)
    one_by_one, at_once = SumTree(rng.random(500)), SumTree(np.zeros(500))
    at_once.rebuild(np.array(one_by_one.nodes()[one_by_one.size : one_by_one.size + 500]))
    for _ in range(200):
        moved = dict(zip(rng.choice(500, 47, replace=False).tolist(), rng.random(47).tolist(), strict=True))
        for i, w in moved.items():
            one_by_one.set(i, w)
        at_once.set_many(moved)
        assert at_once.nodes() == one_by_one.nodes()


# --- budget ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("algorithm_id", HK)
# (100, 57): the papers' 57 attributes; AESVR's 28 GenEst draws then reach order 5 with groups of N = 5 draws.
@pytest.mark.parametrize(("d", "budget"), [(12, 2), (12, 3), (12, 5), (12, 12), (100, 57)])
def test_select_stays_within_the_budget_and_update_needs_only_what_was_selected(algorithm_id, d, budget) -> None:
    if algorithm_id == "aesvr" and budget < 4:
        pytest.skip("AESVR needs 4 attributes (test_aesvr_refuses_a_budget_where_delta_has_no_effect)")
    rng = np.random.default_rng(7)
    X = rng.standard_normal((300, d)) / np.sqrt(d)
    algorithm = get_algorithm(algorithm_id)(Problem(d=d, k=budget, n_examples=300), seed=8, eta=0.5)
    sizes = []
    for x in X:
        selected = list(algorithm.select())
        assert len(selected) == len(set(selected)) <= budget
        assert all(isinstance(i, int) and 0 <= i < d for i in selected)
        sizes.append(len(selected))
        # Only the paid-for values: reading any other attribute would raise KeyError.
        algorithm.update({i: float(x[i]) for i in selected}, float(x[:2].sum()))
    assert np.all(np.isfinite(algorithm.weights)) and np.any(algorithm.weights != 0)
    assert max(sizes) >= min(budget, 2)  # the budget is used, not just respected


@pytest.mark.parametrize(("d", "budget"), [(12, 5), (100, 57)])  # x̃'s draws one at a time, and a block's at once
def test_aerr_learns_from_a_paid_row_what_it_learns_from_a_dict(d, budget) -> None:
    # AERR takes its values as a PaidRow (read in select()'s order, no dict made): the same weights, bit for bit,
    # as from the dict of the same values, and as from a PaidRow in another order (read by key).
    rng = np.random.default_rng(9)
    X = rng.standard_normal((200, d)) * (rng.random((200, d)) < 0.7)  # zeros: coordinates a step does not move
    runs = [get_algorithm("aerr")(Problem(d=d, k=budget, n_examples=200), seed=3) for _ in range(3)]
    assert runs[0].takes_paid_row
    for x in X:
        selected = [list(algorithm.select()) for algorithm in runs]
        assert selected[0] == selected[1] == selected[2]
        values = [float(x[i]) for i in selected[0]]
        y = float(x[:2].sum())
        runs[0].update(PaidRow(selected[0], values), y)
        runs[1].update(dict(zip(selected[0], values, strict=True)), y)
        runs[2].update(PaidRow(selected[0][::-1], values[::-1]), y)
    assert runs[0].weights.tobytes() == runs[1].weights.tobytes() == runs[2].weights.tobytes()
    assert np.any(runs[0].weights != 0)


@pytest.mark.parametrize("params", [{"delta": 1.5}, {"delta": -0.1}, {"epsilon": 0}, {"x_draws": 5}, {"x_draws": 0},
                                    {"x_draws": 4}])
def test_aesvr_rejects_parameters_outside_the_papers_ranges(params) -> None:
    # 0 <= δ <= B, ε > 0, and both x̃ and GenEst need at least one of the 5 attributes.
    with pytest.raises(ParamError):
        get_algorithm("aesvr")(Problem(d=12, k=5, n_examples=100), **params)


def test_aesvr_default_split_lets_genest_reach_order_3_and_delta_matter() -> None:
    # Budget 5, the experiments' k + 1: 2 draws for x̃, 3 for GenEst, so orders 1 and 3 occur and δ matters.
    algorithm = get_algorithm("aesvr")(Problem(d=12, k=5, n_examples=100))
    assert algorithm.x_draws == 2 and algorithm.engine.n_max >= 3
    # δ changes the order-3 term: the same draws with δ = 0 and δ = 0.5 give different φ̃.
    rng = np.random.default_rng(0)
    w, x, y = rng.uniform(-0.2, 0.2, 12), rng.uniform(-0.3, 0.3, 12), 0.4
    phis = {}
    for delta in (0.0, 0.5):
        engine = GenEstGradient(RidgeIterate(12, 1.0, start=w), DataPointSampler(12), 2, 3, 0.1,
                                np.random.default_rng(5), delta=delta, epsilon=1.0, N=5)
        draws = []
        while len(draws) < 200:
            selected = engine.select()
            if engine._n == 3:
                draws.append(engine.phi({i: float(x[i]) for i in selected}, y))
        phis[delta] = np.array(draws)
    assert np.max(np.abs(phis[0.0] - phis[0.5])) > 1e-3


@pytest.mark.parametrize(("budget", "params"), [(3, {}), (5, {"x_draws": 3}), (12, {"x_draws": 10})])
def test_aesvr_refuses_a_budget_where_delta_has_no_effect(budget, params) -> None:
    # Fewer than 3 GenEst draws cap the order at 2, where only erf's linear term is left and δ cancels.
    with pytest.raises(ParamError, match="no effect|at least 4"):
        get_algorithm("aesvr")(Problem(d=12, k=budget, n_examples=100), **params)


@pytest.mark.parametrize("algorithm_id", HK)
def test_runs_through_a_budgeted_local_oracle(algorithm_id) -> None:
    oracle = LocalOracle(ridge_design(n_train=600, n_test=100), budget=Budget(per_example=5), seed=0)
    result = run_algorithm(algorithm_id, oracle, seed=3, max_examples=600)
    assert result.status == "finished", result.message
    assert result.examples == 600
    assert result.attributes <= 5 * 600
    assert algorithm_id in algorithms()


# --- learning -------------------------------------------------------------------------------------


def dataset(X: np.ndarray, w_star: np.ndarray, n_train: int, rng: np.random.Generator) -> Dataset:
    y = X @ w_star + 0.05 * rng.standard_normal(X.shape[0])
    return Dataset(name="hk-regression", description="", task="regression", X=X, y=y,
                   train_rows=np.arange(n_train), test_rows=np.arange(n_train, X.shape[0]))


def ridge_design(n_train: int = 3000, n_test: int = 500, d: int = 20) -> Dataset:
    """Theorem 3.1's setting: ||x||_2 <= 1 (rows outside the unit ball projected onto it, E||x||_2² ≈ 0.7),
    ||w*||_2 = 0.62 <= B = 1, |y| < 1; the signal sits on 3 attributes."""
    rng = np.random.default_rng(11)
    scale = np.full(d, 0.1)
    scale[:3] = 0.5
    w_star = np.zeros(d)
    w_star[:3] = [0.5, -0.3, 0.2]
    X = rng.standard_normal((n_train + n_test, d)) * scale
    return dataset(X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None], w_star, n_train, rng)


def lasso_design(n_train: int = 4000, n_test: int = 500, d: int = 10) -> Dataset:
    """Theorem 3.4's setting: x ∈ {±1}^d (||x||_∞ = 1), ||w*||_1 = 1 <= B = 1."""
    rng = np.random.default_rng(12)
    w_star = np.zeros(d)
    w_star[:3] = [0.5, -0.3, 0.2]
    return dataset(rng.choice([-1.0, 1.0], size=(n_train + n_test, d)), w_star, n_train, rng)


# Each algorithm in its theorem's setting with 5 attributes per example, with the theorems' constants and with the
# practical defaults. Observed normalised test MSE over seeds 0-1, theory: AERR 0.13-0.14 and AELR 0.33-0.35, well
# below half of the zero predictor's (which scores 1), a margin no non-learning run reaches; AESVR's GenEst reaches
# order 3 (2 + 3 draws), whose variance bound makes Theorem 4.4's η small, and 2/3 of its examples make no step: it
# reaches 0.70 on both seeds, so it is held to 0.85 (a run that does not learn stays at 1). Practical: AERR
# 0.06-0.12, AELR 0.05-0.06, AESVR 0.17-0.22, all held to 0.5.
LEARNING_MARGIN = {("aerr", "theory"): 0.5, ("aelr", "theory"): 0.5, ("aesvr", "theory"): 0.85,
                   ("aerr", "practical"): 0.5, ("aelr", "practical"): 0.5, ("aesvr", "practical"): 0.5}
@pytest.mark.parametrize(("algorithm_id", "design"), [("aerr", ridge_design), ("aelr", lasso_design),
                                                      ("aesvr", ridge_design)])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("defaults", ["theory", "practical"])
def test_learns_a_small_regression_in_its_theorems_setting(algorithm_id, design, seed, defaults) -> None:
    data = design()
    zero_mse = float(np.mean(data.y[data.test_rows] ** 2))
    oracle = LocalOracle(data, budget=Budget(per_example=5), seed=0)
    result = run_algorithm(algorithm_id, oracle, seed=seed, defaults=defaults)
    assert result.status == "finished", result.message
    assert result.final.test_mse < LEARNING_MARGIN[algorithm_id, defaults] * zero_mse, (result.final.test_mse,
                                                                                          zero_mse)
