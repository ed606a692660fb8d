"""Ito et al. (2017), Table 3: (d, k1, k) = (10, 2, 4), T = 5,000, the mean regret R_T of 5 instances (R_T itself;
the table prints R_T / 10²).

The setting has k' = k = 4: w* is 4-sparse and every learner observes 4 attributes a round. Algorithm 1 needs
k' >= k + 2, so it cannot be told the true k: it runs with k1 = 2 (its 2 largest weights plus 2 uniform draws)
and predicts from those 4 only. Algorithms 2 and 3 observe the 4 largest coordinates of their averaged estimate
w̄_s and estimate w* with Observe(w_s, 4, k1 = 2) on the square rounds t = s², as the preset ``ito-synthetic``
runs them. Regret against the best 4-sparse w with ||w|| <= 1.
"""

from __future__ import annotations

import pytest

from tests.ito_runs import table_regret

SEEDS = range(5)


@pytest.mark.xfail(strict=True, reason=(
    "Section 6: 'Algorithms 2 and 3 are better than Algorithm 1 in the setting of (d, k1, k)'; Table 3's R_T (printed "
    "as R_T / 10²: 17.19, 20.59, 26.88) is A3 1,719 < A2 2,059 < A1 2,688. Measured mean R_T over instances 0-4: A1 "
    "32.6, A2 35.0, A3 36.7, a tie (over instances 0-9 in ito-synthetic's unit-ball run: A2 - A1 = -0.8 ± 2.9, "
    "A3 - A1 = 2.3 ± 3.2, paired, ± one standard error; at the paper's scale 66 ± 188 and 33 ± 152). The regime: "
    "Algorithms 2 and 3 estimate w* only on the floor(sqrt(5000)) = 70 square rounds, from 4 of 10 attributes each; "
    "by T = 5,000 their block holds all 4 support attributes on 1-2 instances in 5 (then their last 1,000 rounds "
    "cost 0.1 against Algorithm 1's 5.5) and 3 of them on the others. Theorem 6's term exp(-C²(T^(1/4) - 1)...) is "
    "about 1 at T = 5,000, so its bound is still linear in T. The details of Algorithm 2 are in the paper's "
    "supplement, which we do not have (see docs/papers.md)."))
def test_table_3_algorithms_2_and_3_below_algorithm_1() -> None:
    a1 = table_regret("ito1", {"k": 2, "k1": 2}, 4, SEEDS)
    a2 = table_regret("ito2", {"k1": 2}, 4, SEEDS)
    a3 = table_regret("ito3", {"k1": 2}, 4, SEEDS)
    assert a2.mean() < a1.mean() and a3.mean() < a1.mean(), (a1, a2, a3)
