"""Ito et al. (2017), §6 baseline (i), "greedy": observe the k' largest |w_ti|, w_t computed as in Algorithm 1.

It is Algorithm 1 with Observe(w_t, k', k') — no uniform extras. The paper says no more; our reading:
- w_t is Algorithm 1's dual-averaging iterate (5) with Algorithm 1's rule for λ_t (by default adaptive,
  2 sqrt(sum_{s<t} ||ĝ_s||²); with ``lambda_rule=theorem`` Theorem 2's 8 sqrt(t / C_{d,k',k1}) with
  k1 = min(k, k' - 2)), so greedy, uniform and Algorithm 1 differ only in S_t.
- The gradient estimate is (6) with the inclusion probabilities of this deterministic choice (all 1): the gradient
  of (w'D_t x_t - y_t)², which leaves never-observed coordinates at 0. This is what makes greedy a baseline: after
  the first rounds it keeps observing the attributes it happened to start with (ties at w_1 = 0 are broken at
  random), and has linear regret whenever they miss the support of w*.
- Prediction ŷ_t = w_t' D_t x_t; ``weights`` is w_{t+1}.
"""

from __future__ import annotations

from learner.algorithms.ito_2017 import PAPER
from learner.algorithms.shared.dual_averaging import DualAveragingLearner


class Greedy(DualAveragingLearner):
    """Observe the k' largest |w_i| of Algorithm 1's dual-averaging iterate; no exploration."""

    id = "greedy"
    name = "Greedy (Ito et al. baseline)"
    paper = PAPER
    algorithm = "§6 baseline (i)"

    def top_count(self) -> int:
        return self.k_prime
