"""Exploration, Exploitation and Hybrid (Algorithms 1-3) of Murata & Suzuki (2018)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.datasets.base import Dataset
from learner.algorithms import ParamError, Problem
from learner.algorithms.murata_suzuki_2018.exploitation import Exploitation
from learner.algorithms.murata_suzuki_2018.exploration import Exploration, block_gradient
from learner.algorithms.murata_suzuki_2018.hybrid import Hybrid
from learner.algorithms.shared.hard_thresholding import hard_threshold
from learner.oracle import LocalOracle
from learner.runner import run_algorithm

# 4.5 standard errors per coordinate: a false alarm over the ~10 coordinates tested has probability < 1e-4.
STANDARD_ERRORS = 4.5
SUPPORT = [3, 17, 30, 44]
THETA_STAR = [1.0, -1.0, 0.8, -0.6]


def gaussian_sparse(n_train: int = 4000, n_test: int = 1000, d: int = 60, noise: float = 0.5, seed: int = 0) -> Dataset:
    """x ~ N(0, I) and a 4-sparse θ*: the §6 design, scaled down."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_train + n_test, d))
    theta = np.zeros(d)
    theta[SUPPORT] = THETA_STAR
    y = X @ theta + noise * rng.standard_normal(n_train + n_test)
    return Dataset(name="gaussian-sparse", description="", task="regression", X=X, y=y,
                   train_rows=np.arange(n_train), test_rows=np.arange(n_train, n_train + n_test))


def observe(selected: list[int], x: np.ndarray) -> dict[int, float]:
    return {j: float(x[j]) for j in selected}


def test_block_gradient_is_unbiased_for_the_risk_gradient() -> None:
    # Correlated attributes (Σ_ij = 0.6^|i−j|) so that the unobserved coordinates matter: the estimate
    # must still average to ∇L(θ)|_J = 2 Σ_{J,:}(θ − θ*), since <θ, x> needs only supp(θ).
    d, n = 12, 20_000
    rng = np.random.default_rng(0)
    sigma = 0.6 ** np.abs(np.subtract.outer(np.arange(d), np.arange(d)))
    X = rng.multivariate_normal(np.zeros(d), sigma, size=n)
    theta_star = np.zeros(d)
    theta_star[[1, 5, 9]] = [1.0, -0.5, 0.8]
    y = X @ theta_star + 0.3 * rng.standard_normal(n)
    theta = np.zeros(d)
    theta[[1, 4]] = [0.4, 0.7]
    support, block = np.array([1, 4]), np.array([6, 7, 8, 9])
    samples = np.array([block_gradient(theta, support, block, observe([1, 4, 6, 7, 8, 9], X[i]), y[i])
                        for i in range(n)])
    exact = 2 * sigma[block] @ (theta - theta_star)
    standard_error = samples.std(axis=0, ddof=1) / np.sqrt(n)
    assert np.all(np.abs(samples.mean(axis=0) - exact) <= STANDARD_ERRORS * standard_error), (samples.mean(0), exact)


def test_blocks_concatenate_to_the_exact_gradient_at_a_fixed_example() -> None:
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(10), 0.7
    theta = np.zeros(10)
    theta[[2, 8]] = [0.5, -1.5]
    support = np.array([2, 8])
    full = {j: float(x[j]) for j in range(10)}
    blocks = [np.arange(a, min(a + 3, 10)) for a in range(0, 10, 3)]
    assembled = np.concatenate([block_gradient(theta, support, b, full, y) for b in blocks])
    np.testing.assert_allclose(assembled, 2 * (theta @ x - y) * x)


def test_hard_threshold_keeps_the_largest_magnitudes() -> None:
    theta = np.array([0.1, -3.0, 0.0, 2.0, -0.5, 1.0])
    np.testing.assert_array_equal(hard_threshold(theta, 2), [0, -3.0, 0, 2.0, 0, 0])
    np.testing.assert_array_equal(hard_threshold(theta, 6), theta)


def test_exploration_step_is_hard_thresholded_sgd_on_the_block_gradients() -> None:
    dataset = gaussian_sparse(n_train=200)
    problem = Problem(d=10, k=5, n_examples=200)
    exploration = Exploration(problem, eta=0.3, s=2, batch=3)
    theta0 = np.array([0.0, 0.9, 0.0, 0.0, -0.4, 0.0, 0.0, 0.2, 0.0, 0.0])
    exploration.start(theta0)
    np.testing.assert_array_equal(exploration.theta, hard_threshold(theta0, 2))
    assert [b.tolist() for b in exploration.blocks] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    gradient = np.zeros(10)
    X, y = dataset.X[:, :10], dataset.y
    for i in range(4 * 3):
        selected = exploration.select()
        block = exploration.blocks[i % 4]
        assert set(selected) == {1, 4} | set(block.tolist())
        assert len(selected) <= problem.budget
        theta = exploration.theta
        gradient[block] += 2 * (theta @ X[i] - y[i]) * X[i, block] / 3
        exploration.update(observe(selected, X[i]), float(y[i]))
    assert exploration.updates == 1
    np.testing.assert_allclose(exploration.theta, hard_threshold(hard_threshold(theta0, 2) - 0.3 * gradient, 2))
    assert np.count_nonzero(exploration.theta) <= 2


def test_sparsity_defaults_and_limits() -> None:
    assert Exploration(Problem(d=500, k=50, n_examples=10)).s == 30
    assert Exploration(Problem(d=500, k=2, n_examples=10)).s == 1
    with pytest.raises(ParamError):
        Exploration(Problem(d=500, k=50, n_examples=10), s=50)


def test_exploitation_observes_only_the_support_found_by_its_warmup() -> None:
    dataset = gaussian_sparse(n_train=3000)
    problem = Problem(d=dataset.d, k=12, n_examples=3000)
    exploitation = Exploitation(problem, batch=20, warmup=2)
    warmup_examples = len(exploitation.exploration.blocks) * 20 * 2
    for i in range(3000):
        selected = exploitation.select()
        if i >= warmup_examples:
            assert selected == exploitation.exploitation.support.tolist()
            assert len(selected) <= exploitation.exploration.s
        exploitation.update(observe(selected, dataset.X[i]), float(dataset.y[i]))
    assert not exploitation.warming_up
    support = set(np.flatnonzero(exploitation.weights).tolist())
    assert support <= set(exploitation.exploitation.support.tolist())


def test_hybrid_stages_follow_theorem_4_4_with_growing_batches() -> None:
    dataset = gaussian_sparse(n_train=6000)
    problem = Problem(d=dataset.d, k=12, n_examples=6000)
    hybrid = Hybrid(problem, batch=10)
    # s = round(0.6·12) = 7, so d/(k−s) = 12 and T̃ = ⌈log 12 / log 2⌉ = 4 with α̌ = 1/2.
    assert hybrid.exploitation_updates == math.ceil(math.log(12) / math.log(2)) == 4
    blocks = len(hybrid.exploration.blocks)
    stage_lengths = [3 * blocks * 10 * 2**j + 4 * 10 * 2**j for j in range(3)]
    boundaries = np.cumsum(stage_lengths)
    for i in range(int(boundaries[-1])):
        stage = 1 + int(np.searchsorted(boundaries, i, side="right"))
        assert hybrid.stage == stage
        assert hybrid.exploration.batch == 10 * 2 ** (stage - 1)
        exploring = (i - (boundaries[stage - 2] if stage > 1 else 0)) < 3 * blocks * 10 * 2 ** (stage - 1)
        assert hybrid.exploring == exploring
        hybrid.update(observe(hybrid.select(), dataset.X[i]), float(dataset.y[i]))


@pytest.mark.parametrize("algorithm_id", ["exploration", "exploitation", "hybrid"])
def test_learns_a_sparse_target_within_the_local_budget(algorithm_id: str) -> None:
    # Noise alone leaves a normalised MSE of 0.25/3.25 ≈ 0.08; the zero predictor scores 1.
    dataset = gaussian_sparse(n_train=4000)
    oracle = LocalOracle(dataset, budget=Budget(per_example=12), seed=0)
    result = run_algorithm(algorithm_id, oracle, params={"batch": 40}, seed=0)
    assert result.status == "finished", result.message
    assert result.examples == 4000 and oracle.attributes <= 4000 * 12
    assert result.final is not None and result.final.normalized_mse < 0.2
    assert set(np.flatnonzero(result.weights).tolist()) >= set(SUPPORT)
