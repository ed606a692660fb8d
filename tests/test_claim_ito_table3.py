"""Ito et al. (2017), Table 3: (d, k1, k) = (10, 2, 4), T = 5,000, the mean regret R_T of 5 instances.

The setting has k' = k = 4: w* is 4-sparse and every learner observes 4 attributes a round. Algorithm 1 needs
k' >= k + 2, so it cannot be told the true k: it runs with k1 = 2 (its 2 largest weights plus 2 uniform draws)
and predicts from those 4 only. Algorithms 2 and 3 observe the 4 largest coordinates of their averaged estimate
w̄_s and estimate w* with Observe(w_s, 4, k1 = 2) on the square rounds t = s², as the preset ``ito-synthetic``
runs them. Regret against the best 4-sparse w with ||w|| <= 1.
"""

from __future__ import annotations

import pytest

from tests.test_alg_ito import table_regret

SEEDS = range(5)


@pytest.mark.xfail(strict=True, reason=(
    "Table 3 has A3 < A2 < A1 (17.19 < 20.59 < 26.88 ×10²). Measured mean R_T over instances 0-4: A1 32.6, A2 "
    "35.0, A3 36.7 (A2 and A3 with k1 = 0 on the square rounds, Theorem 6's constant: 32.7 and 35.0): a tie, "
    "A1 best. Algorithms 2 and 3 estimate w* only on the floor(sqrt(5000)) = 70 square rounds, from 4 of 10 "
    "attributes each; by T = 5,000 their block holds all 4 support attributes on 1-2 instances in 5 (then their "
    "last 1,000 rounds cost 0.1 against Algorithm 1's 5.5) and 3 of them on the others. Theorem 6's exponential "
    "term exp(-C²(T^(1/4) - 1) ...) says the same: T = 5,000 is far from its regime. The paper's reconstruction "
    "details are in its supplement, which we do not have (see docs/papers.md)."))
def test_table_3_algorithms_3_and_2_below_algorithm_1() -> None:
    a1 = table_regret("ito1", {"k": 2, "k1": 2}, 4, SEEDS).mean()
    a2 = table_regret("ito2", {"k1": 2}, 4, SEEDS).mean()
    a3 = table_regret("ito3", {"k1": 2}, 4, SEEDS).mean()
    assert a3 < a2 < a1, (a1, a2, a3)
