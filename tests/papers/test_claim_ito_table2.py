"""Ito et al. (2017), Table 2: (d, k, k') = (10, 2, 4), T = 5,000, the mean regret R_T of 5 instances.

The paper's row, in R_T (Table 2 prints R_T / 10²: 1.53, 2.38, 3.60, 25.73, 33.28), is A1 153 < A2 238 < A3 360 <
U 2,573 < G 3,328; its text says "Algorithm 1 achieves smallest regrets in the setting of (d, k, k')". Algorithm 1,
greedy and uniform run with their defaults (Algorithm 1: k = k' - 2 = 2, k1 = k), Algorithms 2 and 3 with k1 = k = 2
as §6 sets it ("We set k1 = k in the setting of (d, k, k')") and as the preset ``ito-synthetic`` runs them. These
instances sit inside the unit ball as §2 states (E||x||² = 1/4), so every R_T here is 30 to 80 times smaller than
the paper's (the preset also runs the paper's scale, ``scale = "unit-variance"``); the claims checked are orderings.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.ito_runs import LongRun, instance_regret, table_regret

SEEDS = range(5)


@pytest.fixture(scope="module")
def regrets(ito_long_run: LongRun) -> dict[str, float]:
    """Mean R_T per learner. A1, G and U are the 5,000-round runs the Ito tests share (tests/ito_runs.py)."""
    mean = {label: float(np.mean([instance_regret(ito_long_run(algorithm, seed, 2), seed, 2) for seed in SEEDS]))
            for label, algorithm in (("A1", "ito1"), ("G", "greedy"), ("U", "uniform"))}
    for label, algorithm in (("A2", "ito2"), ("A3", "ito3")):
        mean[label] = float(table_regret(algorithm, {"k1": 2}, 2, SEEDS).mean())
    return mean


def test_table_2_algorithm_1_best_and_algorithms_2_3_below_both_baselines(regrets: dict[str, float]) -> None:
    """What the text and the table's cells support: A1 below A2 and A3, both below greedy and uniform. Measured mean
    R_T: A1 5.3, A2 19.7, A3 18.1, G 42.4, U 57.6. Asserted with margins well outside the instance-to-instance
    spread of the means: A1 below a half of A2's and A3's; A2 and A3 below 0.7 of greedy's and uniform's."""
    assert regrets["A1"] < 0.5 * min(regrets["A2"], regrets["A3"]), regrets
    assert max(regrets["A2"], regrets["A3"]) < 0.7 * min(regrets["G"], regrets["U"]), regrets


@pytest.mark.xfail(strict=True, reason=(
    "Table 2's full row of cells A1 < A2 < A3 < U < G (R_T 153 < 238 < 360 < 2,573 < 3,328) does not hold in two "
    "places, both near ties or reversed: A3 (R_T 18.1) is below A2 (19.7), and greedy (42.4) is below uniform (57.6). "
    "The text claims neither. Our greedy breaks the ties of w_1 = 0 at random "
    "and on 1 instance in 5 starts on the support (regret 0.8); the paper's instance generator and greedy's "
    "tie rule are in its supplement, which we do not have. Algorithm 3 is Algorithm 2 with an l1 term that the "
    "2-sparse w* of this row does not need."))
def test_table_2_full_row_order(regrets: dict[str, float]) -> None:
    order = ["A1", "A2", "A3", "U", "G"]
    assert [regrets[label] for label in order] == sorted(regrets.values()), regrets
