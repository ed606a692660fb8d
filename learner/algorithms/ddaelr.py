"""DDAELR: Data-Dependent Attribute Efficient Lasso Regression — Kukliansky & Shamir (2015), §4.1.

GAELR (Algorithm 3) with the q that minimises the bound on ||E x̃²||_∞ given the second moments,
q_i = E x_i² / Σ_j E x_j² (Lemma 4.3). The moments are prior knowledge the runner fetches from the
oracle (recorded in its ledger) and passes as ``Problem.second_moments``.

Choices (the options of the paper's experiments, §5; see docs/papers.md):

- Inner product: p_j ∝ |w_j| sqrt(E x_j²) (§4's improved estimator, used in all experiments).
- Budget: ``problem.budget`` attributes split evenly (§5): ceil(budget/2) data-point draws, the rest
  for the inner product; ``x_draws`` overrides. i.i.d. draws, each distinct index paid for once.
- ``floor``: q and p use (1 - floor) E x² + floor · mean(E x²); default 0 (exact moments: an attribute
  with E x_i² = 0 is 0 in every training example).
- w_1 = 0 (z+ = z- = 1): there <w, x> = 0 exactly, so φ̃ = -y without inner-product draws.
- Scale (the bounds this theorem uses: E x_i², max |x_i|, max |y|, ||w*||_1). Theorem 4.6 assumes
  ||x||_∞ <= 1, |y| <= B, ||w*||_1 <= B. B defaults to the declared ||w*||_1 bound widened to
  max|y| / max|x_i|, and η to Theorem 4.6 for the data scaled into the unit L∞ ball:
  η' = (1/2B') sqrt(log 2d / (5 m (||E x'²||_1 / k + 1))), B' = max|x_i|·B, E x'² = E x² / max|x_i|²,
  k = data-point draws, and η = η' / max|x_i| on w (``AttributeEfficient``).
- The practical default (``defaults = "practical"``, recorded as ``eta = "adaptive"``): the theorem's η above is a
  worst case that barely moves w within one pass on real data; the default step is the same optimum with the
  realised gradients, η = sqrt(log 2d / Σ||g̃_s||_∞²), capped at the least-squares step and never below the
  theorem's η (``_step_sizes.ExponentiatedStep``); on real data, which declare no ||w*||_1, B is sqrt(d) times the
  stand-in ||w*||_2 (``AttributeEfficient.lasso_geometry``). ``defaults = "theory"`` takes the theorem's η and B.
"""

from __future__ import annotations

import numpy as np

from learner.algorithms._attribute_efficient import (
    B_DOC,
    LASSO_ETA_DOC,
    AttributeEfficient,
    DataPointSampler,
    SampledGradient,
    check_floor,
    floored_moments,
    lasso_iterate,
)
from learner.algorithms._prices import inner_product_weights, relative_prices
from learner.algorithms._step_sizes import StepRule
from learner.algorithms.ddaerr import FLOOR_DOC
from learner.algorithms.gaelr import gaelr_eta
from learner.algorithms.gaerr import KUKLIANSKY_SHAMIR, X_DRAWS_DOC


def lasso_engine(
    algorithm: AttributeEfficient, moments: np.ndarray, step: StepRule, start: np.ndarray | None = None
) -> SampledGradient:
    """GAELR with Lemma 4.3's q ∝ moments and p ∝ |w_j| sqrt(moments_j), over the price for a cost-aware algorithm
    (``_prices``: the lasso's q is cost-optimal as it is)."""
    d = algorithm.problem.d
    x_draws, inner_draws = algorithm.even_split()
    weights = inner_product_weights(moments, relative_prices(algorithm))
    iterate = lasso_iterate(d, float(algorithm.config["B"]), weights, start)
    return SampledGradient(iterate, DataPointSampler(d, moments), x_draws, inner_draws, step, algorithm.rng)


class DDAELR(AttributeEfficient):
    """Data-Dependent AELR: GAELR with q ∝ E x_i² from known second moments."""

    id = "ddaelr"
    name = "DDAELR (Data-Dependent Attribute Efficient Lasso Regression)"
    paper = KUKLIANSKY_SHAMIR
    algorithm = "Algorithm 3 with Lemma 4.3 (Section 4.1)"
    needs_second_moments = True
    params = {
        "B": (None, B_DOC),
        "eta": (None, LASSO_ETA_DOC + "Theorem 4.6's (1/2B')·sqrt(log 2d/(5m(||E x'²||_1/k + 1))) / max|x_i|, "
                "x' = x / max|x_i|, B' = max|x_i|·B"),
        "x_draws": (None, X_DRAWS_DOC),
        "floor": (0.0, FLOOR_DOC),
    }

    def build(self) -> SampledGradient:
        assert self.problem.second_moments is not None
        moments = floored_moments(self.problem.second_moments, check_floor(self))
        x_draws, _ = self.even_split()
        _, B_unit, X = self.lasso_geometry()
        spread = float(moments.sum()) / X**2
        step = self.lasso_step("eta", gaelr_eta(x_draws, self.problem.d, self.problem.n_examples, B_unit, spread) / X)
        return lasso_engine(self, moments, step)
