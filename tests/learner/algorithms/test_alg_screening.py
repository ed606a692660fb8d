"""Screening (budgetlab's own): a uniform screen of the attributes, then least squares on the survivors."""

from __future__ import annotations

import numpy as np
import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.datasets.base import Dataset
from learner.algorithms import ParamError, Problem
from learner.algorithms.beyond_the_papers.screening import FIT_ROWS_PER_UNKNOWN, Screening
from learner.oracle import LocalOracle
from learner.runner import run_algorithm

SUPPORT = [2, 11, 25, 37]
WEIGHTS = [3.0, -2.0, 1.5, 1.0]


def sparse(n_train: int = 2000, d: int = 40, seed: int = 0, intercept: float = 0.0) -> Dataset:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_train + 500, d)) + 0.5  # attributes off zero: the fit's intercept matters
    w = np.zeros(d)
    w[SUPPORT] = WEIGHTS
    y = X @ w + intercept + 0.1 * rng.standard_normal(n_train + 500)
    return Dataset(name="sparse", description="", task="regression", X=X, y=y,
                   train_rows=np.arange(n_train), test_rows=np.arange(n_train, n_train + 500))


def test_screens_uniformly_then_observes_exactly_the_survivors() -> None:
    problem = Problem(d=40, k=4, n_examples=1000)
    algorithm = Screening(problem, seed=0)
    assert algorithm.screen_rows == 1000 - FIT_ROWS_PER_UNKNOWN * 5  # all but 20 (s + 1) rows screen
    rng = np.random.default_rng(1)
    counts = np.zeros(40)
    for _ in range(algorithm.screen_rows):
        chosen = algorithm.select()
        assert len(chosen) == len(set(chosen)) == 4  # k distinct attributes, never more
        counts[chosen] += 1
        x = rng.standard_normal(40)
        algorithm.update({j: float(x[j]) for j in chosen}, float(3 * x[7] - 2 * x[30]))
    # uniform: each attribute about 880 · 4 / 40 = 88 times (binomial sd ≈ 9; 5 sd either side)
    assert counts.min() > 88 - 45 and counts.max() < 88 + 45
    survivors = algorithm.select()
    assert len(survivors) == 4 and {7, 30} <= set(survivors)
    for _ in range(10):
        assert algorithm.select() == survivors  # the fit observes the survivors, every row
        x = rng.standard_normal(40)
        algorithm.update({j: float(x[j]) for j in survivors}, float(3 * x[7] - 2 * x[30]))
    w = algorithm.weights
    np.testing.assert_allclose(w[[7, 30]], [3.0, -2.0], atol=1e-2)  # exact least squares on noiseless rows
    assert np.count_nonzero(w) <= 4


def test_learns_the_sparse_predictor_through_the_oracle_within_the_budget() -> None:
    # Every seed finds the support (each attribute is seen about 1,880 · 4 / 40 = 188 times by the screen, where the
    # weakest true covariance is 10 standard errors from zero) and the fit on it is then exact up to the noise.
    for seed in range(3):
        oracle = LocalOracle(sparse(seed=seed, intercept=2.0), budget=Budget(per_example=4), seed=seed)
        result = run_algorithm("screening", oracle, seed=seed)
        assert result.status == "finished"
        w = np.asarray(result.weights)
        assert set(np.flatnonzero(w)) == set(SUPPORT)
        np.testing.assert_allclose(w[SUPPORT], WEIGHTS, atol=0.05)
        assert result.bias == pytest.approx(2.0, abs=0.05)
        assert result.final is not None and result.final.normalized_mse < 0.01
        assert result.attributes <= 4 * result.examples


def test_the_curve_stays_at_the_mean_during_the_screen() -> None:
    oracle = LocalOracle(sparse(), budget=Budget(per_example=4), seed=0)
    result = run_algorithm("screening", oracle, seed=0, eval_every=200)
    screen_rows = result.resolved_params["screen"] * 2000
    during = [p.normalized_mse for p in result.curve if p.examples < screen_rows]
    after = [p.normalized_mse for p in result.curve if p.examples > screen_rows + 50]
    assert during and after
    # the mean label: var(y) / E[y²] = 16.25 / 19.3 of the zero predictor's error here
    assert min(during) > 0.75 and max(after) < 0.01


@pytest.mark.parametrize(("params", "message"), [({"screen": 1.0}, "screen"), ({"screen": 0.0}, "screen"),
                                                  ({"s": 5}, "s must"), ({"s": 0}, "s must"), ({"lam": -1}, "lam")])
def test_refuses_parameters_out_of_range(params: dict, message: str) -> None:
    with pytest.raises(ParamError, match=message):
        Screening(Problem(d=40, k=4, n_examples=100), **params)
