"""Ito et al. (2017), Algorithm 1: online sparse regression with k' >= k + 2 observed attributes (§4).

Per round t: w_t = argmin_{||w|| <= 1} <ĥ_{t-1}, w> + λ_t/2 ||w||² (dual averaging (5) over the sum ĥ_{t-1} of
the gradient estimates), observe S_t = Observe(w_t, k', k1) — the k1 largest |w_ti| plus k' - k1 uniform others —,
predict ŷ_t = w_t' D_t x_t, then add the unbiased estimate ĝ_t of (6) to ĥ. The budget problem.budget is k'.

Choices the paper leaves open (see ``shared.dual_averaging`` for the shared ones):
- k (the comparator's sparsity) is a parameter, default k' - 2, the largest sparsity Theorem 2 covers; k1 defaults
  to k, as in §6 ("We set k1 = k in the setting of (d, k, k')"). Any 0 <= k1 <= k' - 2 is accepted, which covers
  Table 3's setting where k1 is smaller than the true sparsity.
- λ_t: by default 2 sqrt(sum_{s<t} ||ĝ_s||²), Lemma 4's optimum with the realised gradient estimates in place of Theorem
  2's worst-case bound, because Theorem 2's λ_t = 8 sqrt(t / C_{d,k',k1}), C_{d,k',k1} = (k' - k1)(k' - k1 - 1) / (d(d -
  1)), is so large on data inside the unit ball that w_t never leaves 0 within the paper's T = 5,000 (see
  ``shared.dual_averaging``); ``lambda_rule=theorem`` restores it and ``lambda_scale`` fixes λ_t = lambda_scale sqrt(t).
  The iterates stay in the unit ball (``radius``) of Assumption (1).
- ``weights`` is w_{t+1}, the iterate from all estimates so far; the paper outputs no average.
"""

from __future__ import annotations

from typing import Literal

from learner.algorithms.base import ParamError, Problem
from learner.algorithms.ito_2017 import PAPER
from learner.algorithms.shared.dual_averaging import DualAveragingLearner


class Ito1(DualAveragingLearner):
    """Dual averaging with Observe(w, k', k1): the k1 largest weights plus k' - k1 uniform attributes.

    Parameters
    ----------
    k1
        how many largest |w_i| are observed surely, at most k' - 2 (default k, as in §6)
    """

    id = "ito1"
    name = "Ito et al. Algorithm 1"
    paper = PAPER
    algorithm = "Algorithm 1"

    def __init__(self, problem: Problem, seed: int = 0, *, k: int | None = None,
                 lambda_rule: Literal["adaptive", "theorem"] = "adaptive",
                 lambda_scale: float | Literal["adaptive"] | None = None, radius: float | None = None,
                 k1: int | None = None) -> None:
        self._k1_given = k1  # resolved by ``top_count`` once the sparsity k is (it defaults to k)
        super().__init__(problem, seed, k=k, lambda_rule=lambda_rule, lambda_scale=lambda_scale, radius=radius)

    def top_count(self) -> int:
        k1 = self.k if self._k1_given is None else self._k1_given
        if not 0 <= k1 <= self.k_prime - 2:
            raise ParamError(
                f"ito1 needs 0 <= k1 <= k' - 2 = {self.k_prime - 2} (Algorithm 1 observes two uniform extras), got "
                f"k1={k1}; lower k or k1, or raise the per-example budget k'"
            )
        return k1

    def lambda_k1(self) -> int:
        return self.k1
