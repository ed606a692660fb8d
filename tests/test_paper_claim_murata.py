"""Murata & Suzuki (2018), Fig. 1: on the §6 synthetic design Hybrid reaches a far lower test MSE than the
attribute-efficient baseline at the same number of examples (here AELR, Hazan & Koren's lasso algorithm)."""

from __future__ import annotations

import numpy as np

from budgetlab.datasets import load_dataset
from budgetlab.models import Budget
from learner.oracle import LocalOracle
from learner.runner import run_algorithm

# The §6 design (x ~ N(0, I), θ* = +1 on 13 and -1 on 12 coordinates, N(0, 1) noise, s' = 50 attributes per
# example) with d = 200 instead of 500 and 4,000 training examples, so that 3 seeds of both learners run in
# a few seconds; at d = 500 Hybrid needs about 20,000 examples for the same gap.
DESIGN = {"d": 200, "n_train": 4000, "n_test": 1000}
ATTRIBUTES_PER_EXAMPLE = 50
SEEDS = range(3)
CHECKPOINTS = (2000, 4000)


def test_hybrid_reaches_lower_test_mse_than_aelr_at_equal_examples() -> None:
    mse: dict[str, dict[int, list[float]]] = {a: {c: [] for c in CHECKPOINTS} for a in ("hybrid", "aelr")}
    for seed in SEEDS:
        dataset = load_dataset("sparse-gaussian", DESIGN, seed)
        for algorithm, curves in mse.items():
            oracle = LocalOracle(dataset, budget=Budget(per_example=ATTRIBUTES_PER_EXAMPLE), seed=seed)
            result = run_algorithm(algorithm, oracle, seed=seed, eval_every=1000)
            assert result.status == "finished" and result.examples == DESIGN["n_train"]
            at = {p.examples: p.test_mse for p in result.curve}
            for checkpoint in CHECKPOINTS:
                curves[checkpoint].append(at[checkpoint])
    hybrid = {c: float(np.mean(v)) for c, v in mse["hybrid"].items()}
    aelr = {c: float(np.mean(v)) for c, v in mse["aelr"].items()}
    # The zero predictor's MSE is ||θ*||² + 1 = 26. Measured means: Hybrid 12.1 at 2,000 and 3.3 at 4,000 examples,
    # AELR 24.7 and 24.3. Margins: Hybrid below 60% of AELR at 2,000 examples and below 25% at 4,000.
    assert hybrid[2000] < 0.6 * aelr[2000], (hybrid, aelr)
    assert hybrid[4000] < 0.25 * aelr[4000], (hybrid, aelr)
    # And the gap is Hybrid learning, not AELR failing: it keeps improving between the checkpoints.
    assert hybrid[4000] < 0.5 * hybrid[2000], hybrid
