"""GAERR: General Attribute Efficient Ridge Regression — Kukliansky & Shamir (2015), Algorithm 1.

AERR (Hazan & Koren, Algorithm 1) with the data-point indices drawn from a given distribution q:
x̃ = (1/k) Σ_r x[i_r] / q[i_r] e_{i_r} (eq. (1)), φ̃ = (w_j / p_j) x[j] - y (eq. (5)), OGD on the L2 ball,
output the average iterate. With q uniform, one inner-product draw and p ∝ w² it samples exactly as AERR.

Choices (the paper's options as its experiments used them, §5; see docs/papers.md):

- ``q`` (the parameter of Algorithm 1): ``uniform`` (default: nothing is known about the attributes, so
  nothing favours one), ``power:<alpha>`` for q_i ∝ i^alpha (i = 1..d, e.g. the optimal q ∝ sqrt(E x_i²)
  of the ``powerlaw`` data, where E x_i² ∝ i^alpha, is ``power:<alpha/2>``), or d comma-separated
  non-negative weights. An attribute with q_i = 0 is never drawn, so x̃ is unbiased only if it is 0.
- ``inner``: ``moments`` (default) draws the inner-product indices with p_j ∝ |w_j| sqrt(E x_j²), the
  "improved inner product estimation" of the experiments, with the second moments the q implies
  (q_i ∝ sqrt(E x_i²) is eq. (4)'s optimum, so sqrt(E x_j²) ∝ q_j); ``pseudo-code`` draws p_j ∝ w_j².
- Budget: k + 1 = ``problem.budget`` attributes per example, split evenly between x̃ and the inner
  product (§5): ceil(budget/2) data-point draws, the rest averaged into φ̃ (5 -> 3 + 2, 57 -> 29 + 28).
  ``x_draws`` overrides the split. Draws are i.i.d. with replacement, repeated indices paid for once.
- w_1 = 0 instead of an arbitrary w_1 ≠ 0: <w, x> = 0 exactly there, so φ̃ = -y without draws.
- Scale (the bounds this theorem uses: max ||x||_2, max |y|, ||w*||_2). Theorem 3.1 assumes ||x||_2 <= 1,
  |y| <= B, ||w*||_2 <= B. B defaults to the declared ||w*||_2 bound widened to max|y| / max||x||_2, and η to
  Theorem 3.1 with Lemma 3.4's G for the data scaled into the unit ball: η' = 1 / sqrt(m (S / k + 1)),
  S = E||x̃'_{t,r}||² = Σ_i E x'_i² / q_i bounded by max_i 1/q_i (GAERR knows no moments), k = the data-point
  draws, and η = η' / max||x||_2² on w (``AttributeEfficient``).
- The practical default (``defaults = "practical"``, recorded as ``eta = "adaptive"``): the theorem's η above is a
  worst case that barely moves w within one pass on real data; the default step is averaged least squares',
  η = 1/(2R²) with R² measured on the run's own estimates x̃ and g̃, never below the theorem's η
  (``shared.step_sizes.LeastSquaresStep``). ``defaults = "theory"`` takes the theorem's η.
"""

from __future__ import annotations

import math
from typing import Literal

from learner.algorithms.base import Problem
from learner.algorithms.kukliansky_shamir_2015 import PAPER
from learner.algorithms.shared.attribute_efficient import AttributeEfficient, DataPointSampler, SampledGradient
from learner.algorithms.shared.data_dependent import parse_q
from learner.algorithms.shared.geometry import L2_BALL


def gaerr_eta(x_draws: int, m: int, spread: float) -> float:
    """Theorem 3.1 with η = 2B/(G sqrt(m)) and Lemma 3.4's G² = 4B² (S/k + 1): η = 1/sqrt(m (S/k + 1))."""
    return 1.0 / math.sqrt(max(m, 1) * (spread / x_draws + 1.0))


class GAERR(AttributeEfficient):
    """General Attribute Efficient Ridge Regression: AERR with data-point draws from a given q.

    Parameters
    ----------
    B
        radius of the constraint ball on w (the papers' B); default the declared ||w*|| bound, widened to max|y| /
        max||x|| so that the theorem's |y| <= B holds after scaling x into the unit ball
    eta
        step size η; default 'adaptive': averaged least squares' 1/(2R²), R² measured on the run's estimates, never
        below the theorem's η; theory: Theorem 3.1 with Lemma 3.4: 1/sqrt(m(max_i(1/q_i)/k + 1)) / max||x||_2²
    q
        data-point sampling distribution q: 'uniform', 'power:<alpha>' (q_i ∝ i^alpha) or d comma-separated weights
    inner
        inner-product draws: 'moments' (p ∝ |w_j|·sqrt(E x_j²) with the moments q implies) or 'pseudo-code'
    x_draws
        data-point draws per example; default ceil(budget/2), the even split of §5 (the rest go to <w,x>)
    """

    id = "gaerr"
    name = "GAERR (General Attribute Efficient Ridge Regression)"
    paper = PAPER
    algorithm = "Algorithm 1"
    geometry = L2_BALL

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
        theorem = gaerr_eta(x_draws, problem.n_examples, spread)
        self.eta, step = self.step_size("eta", eta, self.geometry.on_w(theorem, X))
        # q is taken for the geometry's optimum given the moments, so it implies the sqrt(E x_j²) p weighs by
        c = self.geometry.moment_roots(probabilities) if inner == "moments" else None
        self.engine = SampledGradient(self.geometry.iterate(d, B, c), sampler, x_draws, inner_draws, step,
                                      self.rng)
