"""GAELR: General Attribute Efficient Lasso Regression — Kukliansky & Shamir (2015), Algorithm 3.

AELR (Hazan & Koren, Algorithm 2) with the data-point indices drawn from a given distribution q:
x̃ = (1/k) Σ_r x[i_r] / q[i_r] e_{i_r}, φ̃ = (w_j / p_j) x[j] - y, clipped EG± on the L1 ball, output the
average iterate. With q uniform, one inner-product draw and p ∝ |w| it samples exactly as AELR.

Choices (the paper's options as its experiments used them, §5; see shared/papers/ERRATA.md):

- ``q``: ``uniform`` (default), ``power:<alpha>`` (q_i ∝ i^alpha, i = 1..d; Lemma 4.3's optimum
  q ∝ E x_i² is ``power:<alpha>`` itself on ``powerlaw`` data) or d comma-separated non-negative weights.
- ``inner``: ``moments`` (default) draws p_j ∝ |w_j| sqrt(E x_j²) (§5's improved inner product
  estimation) with the moments q implies (q ∝ E x², so sqrt(E x_j²) ∝ sqrt(q_j)); ``pseudo-code``
  draws p_j ∝ |w_j| as line 9 does.
- Budget: ``problem.budget`` attributes per example split evenly (§5): ceil(budget/2) data-point draws,
  the rest averaged into φ̃; ``x_draws`` overrides. Draws i.i.d. with replacement.
- w_1 = 0 (z+ = z- = 1) leaves p undefined: there <w, x> = 0 exactly and no inner draw is made.
- η defaults to Theorem 4.1 with Lemma 4.5's G: η = (1/2B) sqrt(log 2d / (5 m (S/k + 1))),
  S = ||E x̃²_{t,r}||_∞ = max_i E x_i² / q_i <= max_i 1/q_i when only ||x||_∞ <= 1 is known.
- B defaults to 1 (labels ±1 in the experiments; the theorem assumes |y| <= B).
"""

from __future__ import annotations

import math

import numpy as np

from learner.algorithms._attribute_efficient import (
    B_DOC,
    AttributeEfficient,
    DataPointSampler,
    SampledGradient,
    lasso_iterate,
)
from learner.algorithms.gaerr import INNER_DOC, KUKLIANSKY_SHAMIR, Q_DOC, X_DRAWS_DOC, inner_choice, parse_q


def gaelr_eta(x_draws: int, d: int, m: int, B: float, spread: float) -> float:
    """Theorem 4.1 with η = sqrt(log 2d / (5 m G²)) and Lemma 4.5's G² = 4B² (S/k + 1)."""
    return math.sqrt(math.log(2 * d) / (5 * max(m, 1) * (spread / x_draws + 1.0))) / (2 * B)


class GAELR(AttributeEfficient):
    """General Attribute Efficient Lasso Regression: AELR with data-point draws from a given q."""

    id = "gaelr"
    name = "GAELR (General Attribute Efficient Lasso Regression)"
    paper = KUKLIANSKY_SHAMIR
    algorithm = "Algorithm 3"
    params = {
        "B": (1.0, B_DOC),
        "eta": (None, "step size η; default Theorem 4.1 with Lemma 4.5: (1/2B)·sqrt(log 2d/(5m(max_i(1/q_i)/k + 1)))"),
        "q": ("uniform", Q_DOC),
        "inner": ("moments", INNER_DOC),
        "x_draws": (None, X_DRAWS_DOC),
    }

    def build(self) -> SampledGradient:
        d = self.problem.d
        q = parse_q(self, str(self.config["q"]))
        x_draws, inner_draws = self.even_split()
        sampler = DataPointSampler(d, q)
        probabilities = sampler.probabilities()
        B = self.resolve("B", 1.0)
        spread = 1.0 / probabilities[probabilities > 0].min()
        eta = self.resolve("eta", gaelr_eta(x_draws, d, self.problem.n_examples, B, spread))
        c = np.sqrt(probabilities) if inner_choice(self) == "moments" else None
        return SampledGradient(lasso_iterate(d, B, c), sampler, x_draws, inner_draws, eta, self.rng)
