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
  (``shared.step_sizes.LeastSquaresStep``). ``defaults = "theory"`` takes the theorem's η.
"""

from __future__ import annotations

from typing import Literal

from learner.algorithms.base import Problem
from learner.algorithms.kukliansky_shamir_2015 import PAPER
from learner.algorithms.kukliansky_shamir_2015.gaerr import gaerr_eta
from learner.algorithms.shared.attribute_efficient import AttributeEfficient
from learner.algorithms.shared.data_dependent import (
    check_floor,
    data_dependent_engine,
    floored_moments,
)
from learner.algorithms.shared.geometry import L2_BALL


class DDAERR(AttributeEfficient):
    """Data-Dependent AERR: GAERR with q ∝ sqrt(E x_i²) from known second moments.

    Parameters
    ----------
    B
        radius of the constraint ball on w (the papers' B); default the declared ||w*|| bound, widened to max|y| /
        max||x|| so that the theorem's |y| <= B holds after scaling x into the unit ball
    eta
        step size η; default 'adaptive': averaged least squares' 1/(2R²), R² measured on the run's estimates, never
        below the theorem's η; theory: Theorem 3.5's 1/sqrt(m(||E x'²||_{1/2}/k + 1)) / max||x||_2², x' = x / max||x||_2
    x_draws
        data-point draws per example; default ceil(budget/2), the even split of §5 (the rest go to <w,x>)
    floor
        q and p use (1 - floor)·E x² + floor·mean(E x²), keeping every q_i > 0 when floor > 0
    """

    id = "ddaerr"
    name = "DDAERR (Data-Dependent Attribute Efficient Ridge Regression)"
    paper = PAPER
    algorithm = "Algorithm 1 with eq. (4) (Section 3.1)"
    geometry = L2_BALL
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
        theorem = gaerr_eta(x_draws, problem.n_examples, spread)
        self.eta, step = self.step_size("eta", eta, self.geometry.on_w(theorem, X))
        self.engine = data_dependent_engine(self, moments, step)
