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
  theorem's η (``shared.step_sizes.ExponentiatedStep``); on real data, which declare no ||w*||_1, B is sqrt(d) times the
  stand-in ||w*||_2 (``shared.geometry.L1Ball.radius``). ``defaults = "theory"`` takes the theorem's η and B.
"""

from __future__ import annotations

import math
from typing import Literal

from learner.algorithms.base import Problem
from learner.algorithms.kukliansky_shamir_2015 import PAPER
from learner.algorithms.shared.attribute_efficient import AttributeEfficient, DataPointSampler, SampledGradient
from learner.algorithms.shared.data_dependent import parse_q
from learner.algorithms.shared.geometry import L1_BALL


def gaelr_eta(x_draws: int, d: int, m: int, B: float, spread: float) -> float:
    """Theorem 4.1 with η = sqrt(log 2d / (5 m G²)) and Lemma 4.5's G² = 4B² (S/k + 1)."""
    return math.sqrt(math.log(2 * d) / (5 * max(m, 1) * (spread / x_draws + 1.0))) / (2 * B)


class GAELR(AttributeEfficient):
    """General Attribute Efficient Lasso Regression: AELR with data-point draws from a given q.

    Parameters
    ----------
    B
        radius of the constraint ball on w (the papers' B); default the declared ||w*|| bound, widened to max|y| /
        max||x|| so that the theorem's |y| <= B holds after scaling x into the unit ball
    eta
        step size η; default 'adaptive': sqrt(log 2d / Σ||g̃||_∞²) on the run's gradients, capped, never below the
        theorem's η; theory: Theorem 4.1 with Lemma 4.5: (1/2B')·sqrt(log 2d/(5m(max_i(1/q_i)/k + 1))) / max|x_i|, B' =
        max|x_i|·B
    q
        data-point sampling distribution q: 'uniform', 'power:<alpha>' (q_i ∝ i^alpha) or d comma-separated weights
    inner
        inner-product draws: 'moments' (p ∝ |w_j|·sqrt(E x_j²) with the moments q implies) or 'pseudo-code'
    x_draws
        data-point draws per example; default ceil(budget/2), the even split of §5 (the rest go to <w,x>)
    """

    id = "gaelr"
    name = "GAELR (General Attribute Efficient Lasso Regression)"
    paper = PAPER
    algorithm = "Algorithm 3"
    geometry = L1_BALL

    def __init__(self, problem: Problem, seed: int = 0, *, B: float | None = None,
                 eta: float | Literal["adaptive"] | None = None, q: str = "uniform",
                 inner: Literal["moments", "pseudo-code"] = "moments", x_draws: int | None = None) -> None:
        super().__init__(problem, seed)
        self.B, self.q, self.inner, self.x_draws = B, q, inner, x_draws
        d = problem.d
        given = parse_q(self.id, d, q)
        x_draws, inner_draws = self.split()
        sampler = DataPointSampler(d, given)
        probabilities = sampler.probabilities()
        B, B_unit, X = self.ball()
        spread = 1.0 / probabilities[probabilities > 0].min()
        theorem = gaelr_eta(x_draws, problem.d, problem.n_examples, B_unit, spread)
        self.eta, step = self.step_size("eta", eta, self.geometry.on_w(theorem, X))
        # q is taken for the geometry's optimum given the moments, so it implies the sqrt(E x_j²) p weighs by
        c = self.geometry.moment_roots(probabilities) if inner == "moments" else None
        self.engine = SampledGradient(self.geometry.iterate(d, B, c), sampler, x_draws, inner_draws, step,
                                      self.rng)
