"""Ito et al. (2017), §6 baseline (ii), "uniform random": observe k' attributes chosen uniformly at random.

It is Algorithm 1 with Observe(w_t, k', 0). The paper says no more; our reading:
- w_t is Algorithm 1's dual-averaging iterate (5), updated with the unbiased estimate (6) under uniform sampling
  (p_i = k'/d, p_ij = k'(k'-1)/(d(d-1))), with Algorithm 1's rule for λ_t (by default adaptive,
  2 sqrt(sum_{s<t} ||ĝ_s||²); with ``lambda_rule=theorem`` Theorem 2's 8 sqrt(t / C_{d,k',k1}) with
  k1 = min(k, k' - 2)), so greedy, uniform and Algorithm 1 differ only in S_t.
- Prediction ŷ_t = w_t' D_t x_t: w_t may converge to w*, but the prediction sees a random k' of its d coordinates,
  hence linear regret when k' < d.
"""

from __future__ import annotations

from learner.algorithms.ito_2017 import PAPER
from learner.algorithms.shared.dual_averaging import DualAveragingLearner


class Uniform(DualAveragingLearner):
    """Observe k' uniformly random attributes; learn w by Algorithm 1's dual averaging."""

    id = "uniform"
    name = "Uniform random (Ito et al. baseline)"
    paper = PAPER
    algorithm = "§6 baseline (ii)"

    def top_count(self) -> int:
        return 0
