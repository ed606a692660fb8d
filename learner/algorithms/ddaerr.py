"""DDAERR: Data-Dependent Attribute Efficient Ridge Regression — Kukliansky & Shamir (2015), §3.1.

GAERR (Algorithm 1) with the q that minimises the variance bound of x̃ given the second moments,
q_i = sqrt(E x_i²) / Σ_j sqrt(E x_j²) (eq. (4)). The moments are prior knowledge: the runner fetches
them from the oracle (which records that reveal in its ledger) and passes ``Problem.second_moments``.

Choices (the options of the paper's experiments, §5; see docs/papers.md):

- Inner product: p_j ∝ |w_j| sqrt(E x_j²) (the improved estimator of §3/§5, all the experiments
  used), φ̃ = mean over the draws of (w_j / p_j) x[j] - y.
- Budget: ``problem.budget`` = k + 1 attributes split evenly (§5): ceil(budget/2) draws for x̃, the rest
  for the inner product (5 -> 3 + 2, 57 -> 29 + 28); ``x_draws`` overrides. i.i.d. draws with
  replacement, each distinct index paid for once.
- ``floor``: q and p use (1 - floor) E x² + floor · mean(E x²). Default 0: with the exact moments an
  attribute with E x_i² = 0 is 0 in every training example, so never drawing it loses nothing.
- w_1 = 0: there <w, x> = 0 exactly, so φ̃ = -y without inner-product draws.
- Scale (the bounds this theorem uses: E x_i², max ||x||_2, max |y|, ||w*||_2). Theorem 3.5 assumes
  ||x||_2 <= 1, |y| <= B, ||w*||_2 <= B. B defaults to the declared ||w*||_2 bound widened to
  max|y| / max||x||_2, and η to Theorem 3.5 for the data scaled into the unit ball:
  η' = 1 / sqrt(m (||E x'²||_{1/2} / k + 1)) with E x'² = E x² / max||x||_2², ||v||_{1/2} = (Σ sqrt v_i)²,
  k = the data-point draws, and η = η' / max||x||_2² on w (``AttributeEfficient``).
- The practical default (``defaults = "practical"``, recorded as ``eta = "adaptive"``): the theorem's η above is a
  worst case that barely moves w within one pass on real data; the default step is averaged least squares',
  η = 1/(2R²) with R² measured on the run's own estimates x̃ and g̃, never below the theorem's η
  (``_step_sizes.LeastSquaresStep``). ``defaults = "theory"`` takes the theorem's η.
"""

from __future__ import annotations

from learner.algorithms._data_dependent import DataDependent, data_dependent_params
from learner.algorithms._geometry import L2_BALL
from learner.algorithms.gaerr import gaerr_eta


class DDAERR(DataDependent):
    """Data-Dependent AERR: GAERR with q ∝ sqrt(E x_i²) from known second moments."""

    id = "ddaerr"
    name = "DDAERR (Data-Dependent Attribute Efficient Ridge Regression)"
    algorithm = "Algorithm 1 with eq. (4) (Section 3.1)"
    geometry = L2_BALL
    params = data_dependent_params(L2_BALL, "Theorem 3.5's 1/sqrt(m(||E x'²||_{1/2}/k + 1)) / max||x||_2², "
                                   "x' = x / max||x||_2")

    def theorem_eta(self, x_draws: int, B_unit: float, spread: float) -> float:
        return gaerr_eta(x_draws, self.problem.n_examples, spread)
