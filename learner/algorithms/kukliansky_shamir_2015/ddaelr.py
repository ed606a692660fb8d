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
  theorem's η (``shared.step_sizes.ExponentiatedStep``); on real data, which declare no ||w*||_1, B is sqrt(d) times the
  stand-in ||w*||_2 (``shared.geometry.L1Ball.radius``). ``defaults = "theory"`` takes the theorem's η and B.
"""

from __future__ import annotations

from typing import Literal

from learner.algorithms.base import Problem
from learner.algorithms.kukliansky_shamir_2015 import PAPER
from learner.algorithms.kukliansky_shamir_2015.gaelr import gaelr_eta
from learner.algorithms.shared.attribute_efficient import AttributeEfficient
from learner.algorithms.shared.data_dependent import (
    check_floor,
    data_dependent_engine,
    floored_moments,
)
from learner.algorithms.shared.geometry import L1_BALL


class DDAELR(AttributeEfficient):
    """Data-Dependent AELR: GAELR with q ∝ E x_i² from known second moments.

    Parameters
    ----------
    B
        radius of the constraint ball on w (the papers' B); default the declared ||w*|| bound, widened to max|y| /
        max||x|| so that the theorem's |y| <= B holds after scaling x into the unit ball
    eta
        step size η; default 'adaptive': sqrt(log 2d / Σ||g̃||_∞²) on the run's gradients, capped, never below the
        theorem's η; theory: Theorem 4.6's (1/2B')·sqrt(log 2d/(5m(||E x'²||_1/k + 1))) / max|x_i|, x' = x / max|x_i|,
        B' = max|x_i|·B
    x_draws
        data-point draws per example; default ceil(budget/2), the even split of §5 (the rest go to <w,x>)
    floor
        q and p use (1 - floor)·E x² + floor·mean(E x²), keeping every q_i > 0 when floor > 0
    """

    id = "ddaelr"
    name = "DDAELR (Data-Dependent Attribute Efficient Lasso Regression)"
    paper = PAPER
    algorithm = "Algorithm 3 with Lemma 4.3 (Section 4.1)"
    geometry = L1_BALL
    needs_second_moments = True

    def __init__(self, problem: Problem, seed: int = 0, *, B: float | None = None,
                 eta: float | Literal["adaptive"] | None = None, x_draws: int | None = None,
                 floor: float = 0.0) -> None:
        super().__init__(problem, seed)
        self.B, self.x_draws = B, x_draws
        assert problem.second_moments is not None
        self.floor = check_floor(self.id, floor)
        moments = floored_moments(problem.second_moments, self.floor)
        x_draws, _ = self.split()
        _, B_unit, X = self.ball()
        spread = self.geometry.spread(moments, self.prices.relative(problem)) / X**2
        theorem = gaelr_eta(x_draws, problem.d, problem.n_examples, B_unit, spread)
        self.eta, step = self.step_size("eta", eta, self.geometry.on_w(theorem, X))
        self.engine = data_dependent_engine(self, moments, step)
