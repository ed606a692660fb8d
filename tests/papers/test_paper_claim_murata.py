"""Murata & Suzuki (2018), Fig. 1: on the §6 synthetic design Hybrid reaches a lower test MSE than Exploration,
and both are far below the attribute-efficient baseline AELR (Hazan & Koren's lasso algorithm) given an L1 ball
that contains θ* (B >= ||θ*||_1 = 25, the bound the dataset declares)."""

from __future__ import annotations

import numpy as np
import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.datasets import load_dataset
from learner.oracle import LocalOracle
from learner.runner import build_algorithm, run_algorithm

# The §6 design (x ~ N(0, I), θ* = +1 on 13 and -1 on 12 coordinates, N(0, 1) noise, s' = 50 attributes per
# example) with d = 200 instead of 500 and 4,000 training examples, so that 4 seeds of the three learners run in
# a few seconds; at d = 500 Hybrid needs about 20,000 examples for the same gap.
PROBLEM = {"d": 200, "n_train": 4000, "n_test": 1000}
ATTRIBUTES_PER_EXAMPLE = 50
SEEDS = range(4)
ALGORITHMS = ("hybrid", "exploration", "aelr")


@pytest.fixture(scope="module")
def final_mse() -> dict[str, np.ndarray]:
    out: dict[str, list[float]] = {a: [] for a in ALGORITHMS}
    for seed in SEEDS:
        dataset = load_dataset("sparse-gaussian", PROBLEM, seed)
        for algorithm in ALGORITHMS:
            oracle = LocalOracle(dataset, budget=Budget(per_example=ATTRIBUTES_PER_EXAMPLE), seed=seed)
            # the paper's setting, as the murata-synthetic preset runs it: the theorems' constants and the working
            # batch of 100 (the practical defaults give AELR a step that moves w: 19-21 here)
            result = run_algorithm(algorithm, oracle, seed=seed, eval_every=PROBLEM["n_train"], defaults="theory")
            assert result.status == "finished" and result.examples == PROBLEM["n_train"]
            out[algorithm].append(result.final.test_mse)
    return {a: np.array(v) for a, v in out.items()}


def test_aelr_defaults_to_a_ball_that_contains_theta_star() -> None:
    dataset = load_dataset("sparse-gaussian", PROBLEM, 0)
    oracle = LocalOracle(dataset, budget=Budget(per_example=ATTRIBUTES_PER_EXAMPLE), seed=0)
    aelr = build_algorithm("aelr", oracle, params={}, seed=0, max_examples=PROBLEM["n_train"])
    assert aelr.B == pytest.approx(np.abs(dataset.true_weights).sum()) == pytest.approx(25.0)


def test_hybrid_is_below_exploration_and_both_far_below_aelr(final_mse: dict[str, np.ndarray]) -> None:
    # The zero predictor's MSE is ||θ*||² + 1 = 26. Measured at 4,000 examples over seeds 0-3: Hybrid 1.2-6.4 (mean
    # 3.4), Exploration 2.7-6.0 (mean 4.0), AELR 25.2-26.3 (its theoretical step for B = 25 barely moves
    # w in one pass). Asserted: Hybrid's mean below 90% of Exploration's, both below 30% of AELR's.
    hybrid, exploration, aelr = (float(final_mse[a].mean()) for a in ALGORITHMS)
    assert hybrid < 0.9 * exploration, final_mse
    assert exploration < 0.3 * aelr, final_mse
