"""GAELR: General Attribute Efficient Lasso Regression — Kukliansky & Shamir (2015), Algorithm 3.

AELR (Hazan & Koren, Algorithm 2) with the data-point indices drawn from a given distribution q:
x̃ = (1/k) Σ_r x[i_r] / q[i_r] e_{i_r}, φ̃ = (w_j / p_j) x[j] - y, clipped EG± on the L1 ball, output the
average iterate. With q uniform, one inner-product draw and p ∝ |w| it samples exactly as AELR.

Choices (the paper's options as its experiments used them, §5; see docs/papers.md):

- ``q``: ``uniform`` (default), ``power:<alpha>`` (q_i ∝ i^alpha, i = 1..d; Lemma 4.3's optimum
  q ∝ E x_i² is ``power:<alpha>`` itself on ``powerlaw`` data) or d comma-separated non-negative weights.
- ``inner``: ``moments`` (default) draws p_j ∝ |w_j| sqrt(E x_j²) (§5's improved inner product
  estimation) with the moments q implies (q ∝ E x², so sqrt(E x_j²) ∝ sqrt(q_j)); ``pseudo-code``
  draws p_j ∝ |w_j| as line 9 does.
- Budget: ``problem.budget`` attributes per example split evenly (§5): ceil(budget/2) data-point draws,
  the rest averaged into φ̃; ``x_draws`` overrides. Draws i.i.d. with replacement.
- w_1 = 0 (z+ = z- = 1) leaves p undefined: there <w, x> = 0 exactly and no inner draw is made.
- Scale (the bounds this theorem uses: max |x_i|, max |y|, ||w*||_1). Theorem 4.1 assumes ||x||_∞ <= 1,
  |y| <= B, ||w*||_1 <= B. B defaults to the declared ||w*||_1 bound widened to max|y| / max|x_i|, and η to
  Theorem 4.1 with Lemma 4.5's G for the data scaled into the unit L∞ ball: η' = (1/2B') sqrt(log 2d /
  (5 m (S/k + 1))), B' = max|x_i|·B, S = max_i E x'_i² / q_i <= max_i 1/q_i, and η = η' / max|x_i| on w.
- The practical default (``defaults = "practical"``, recorded as ``eta = "adaptive"``): the theorem's η above is a
  worst case that barely moves w within one pass on real data; the default step is the same optimum with the
  realised gradients, η = sqrt(log 2d / Σ||g̃_s||_∞²), capped at the least-squares step and never below the
  theorem's η (``_step_sizes.ExponentiatedStep``); on real data, which declare no ||w*||_1, B is sqrt(d) times the
  stand-in ||w*||_2 (``_geometry.L1Ball.radius``). ``defaults = "theory"`` takes the theorem's η and B.
"""

from __future__ import annotations

import math

from learner.algorithms._data_dependent import GivenSampling, given_q_params
from learner.algorithms._geometry import L1_BALL


def gaelr_eta(x_draws: int, d: int, m: int, B: float, spread: float) -> float:
    """Theorem 4.1 with η = sqrt(log 2d / (5 m G²)) and Lemma 4.5's G² = 4B² (S/k + 1)."""
    return math.sqrt(math.log(2 * d) / (5 * max(m, 1) * (spread / x_draws + 1.0))) / (2 * B)


class GAELR(GivenSampling):
    """General Attribute Efficient Lasso Regression: AELR with data-point draws from a given q."""

    id = "gaelr"
    name = "GAELR (General Attribute Efficient Lasso Regression)"
    algorithm = "Algorithm 3"
    geometry = L1_BALL
    params = given_q_params(L1_BALL, "Theorem 4.1 with Lemma 4.5: (1/2B')·sqrt(log 2d/(5m(max_i(1/q_i)/k + 1))) "
                            "/ max|x_i|, B' = max|x_i|·B")

    def theorem_eta(self, x_draws: int, B_unit: float, spread: float) -> float:
        return gaelr_eta(x_draws, self.problem.d, self.problem.n_examples, B_unit, spread)
