"""Two-Phased DDAERR — Kukliansky & Shamir (2015), Algorithm 2.

Without prior knowledge of the second moments: phase 1 (the first m_1 examples) estimates them,
A[i] = mean of the observed x_i², then phase 2 (the next m_2) runs DDAERR with A in place of
E x², and the output is phase 2's average iterate. Its lasso twin is ``ddaelr_2phase.py`` (Algorithm 4).

Choices (the paper's experiments, §5; see docs/papers.md):

- m_1 = m/10 and m_2 = 9m/10 of the run's m examples (``phase1`` sets the fraction).
- Phase 1 runs AERR (Hazan & Koren Algorithm 1, budget - 1 uniform draws and one
  w-weighted draw, its theoretical η for m_1 examples unless ``eta1`` is given), and phase 2 starts
  from its average iterate. Every value observed in phase 1 feeds A, each distinct attribute of an
  example once: which attributes are drawn depends only on past examples, so each per-attribute mean
  of x_i² stays unbiased, and it uses the whole budget instead of the k + 1 uniform draws of line 5
  (``learner/algorithms/shared/two_phase.py``: the two phases as one engine).
- ε = 0, as in the experiments (the q_i of line 12 use A itself, not A + 13ε/6), with a floor (docs/papers.md):
  q and p use (1 - floor) A + floor · mean(A), ``floor`` = 0.01 by default, so an attribute phase 1
  never saw keeps q_i > 0 and can still be learnt (with floor = 0 it could not).
- Phase 2 is DDAERR as in ``ddaerr.py``: p_j ∝ |w_j| sqrt(A_j), the budget split
  evenly (``x_draws`` overrides), i.i.d. draws with replacement.
- η (phase 2) defaults to the theorem with ε = 0: Theorem 3.12's max(sqrt(k/(6 d m_2)),
  sqrt(k/(m_2 (2||2A||_{1/2} + k)))), k = the data-point draws, A floored as above.
- Scale (the bounds this theorem uses: max ||x||_2, max |y|, ||w*||). It
  assumes ||x|| <= 1, |y| <= B, ||w*|| <= B: B defaults to the declared ||w*|| bound widened to
  max|y| / max||x||, and both phases' η are the theorems' for the data scaled into the unit ball (A scaled
  with it), divided by max||x||_2² (OGD) on w, as in ``AttributeEfficient``.
- The practical default (``defaults = "practical"``, recorded as ``eta = eta1 = "adaptive"``): both phases' η
  are their theorems' worst cases, which barely move w within one pass on real data; the default steps are the
  rule of ``shared.step_sizes`` (averaged least squares' η = 1/(2R²)), fed
  with each phase's own estimates and never below that phase's theoretical η; each rule starts afresh in phase 2,
  whose sampler differs. ``defaults = "theory"`` takes the theorems' η.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from learner.algorithms.base import Problem
from learner.algorithms.hazan_koren_2012.aerr import aerr_eta
from learner.algorithms.kukliansky_shamir_2015 import PAPER
from learner.algorithms.shared.attribute_efficient import AttributeEfficient, SampledGradient
from learner.algorithms.shared.data_dependent import check_floor, data_dependent_engine, floored_moments
from learner.algorithms.shared.geometry import L2_BALL
from learner.algorithms.shared.prices import data_point_spread
from learner.algorithms.shared.two_phase import TwoPhases, phase_lengths


class TwoPhasedDDAERR(AttributeEfficient):
    """Two-Phased DDAERR: AERR on m/10 examples while estimating E x², then DDAERR with the estimates.

    Parameters
    ----------
    B
        radius of the constraint ball on w (the papers' B); default the declared ||w*|| bound, widened to max|y| /
        max||x|| so that the theorem's |y| <= B holds after scaling x into the unit ball
    eta
        phase-2 step size η; default 'adaptive': averaged least squares' 1/(2R²), R² measured on the run's estimates,
        never below the theorem's η; theory: Theorem 3.12 with ε = 0: max(sqrt(k/(6dm₂)), sqrt(k/(m₂(2||2A||_{1/2} +
        k))))
    eta1
        phase-1 step size; default 'adaptive': the rule of phase 2's step, on phase 1's estimates; theory: the AERR/AELR
        theorem's η for m_1 examples
    x_draws
        data-point draws per example; default ceil(budget/2), the even split of §5 (the rest go to <w,x>)
    floor
        q and p use (1 - floor)·E x² + floor·mean(E x²), keeping every q_i > 0 when floor > 0
    phase1
        share m_1/m of the examples spent estimating the moments (the experiments' 1/10)
    """

    id = "ddaerr-2phase"
    name = "Two-Phased DDAERR"
    paper = PAPER
    algorithm = "Algorithm 2"
    geometry = L2_BALL

    def __init__(self, problem: Problem, seed: int = 0, *, B: float | None = None,
                 eta: float | Literal["adaptive"] | None = None, eta1: float | Literal["adaptive"] | None = None,
                 x_draws: int | None = None, floor: float = 0.01, phase1: float = 0.1) -> None:
        super().__init__(problem, seed)
        self.B, self.eta, self.eta1, self.x_draws = B, eta, eta1, x_draws
        self.phase1 = phase1
        self.m1, self.m2 = phase_lengths(self.id, phase1, problem.n_examples)
        self.floor = check_floor(self.id, floor)
        self.split()
        _, self.B_unit, self.X = self.ball()
        k = problem.budget - 1
        first = None
        if self.m1:
            self.eta1, step = self.step_size("eta1", eta1, aerr_eta(k, problem.d, self.m1) / self.X**2)
            first = self.uniform_engine(k, step)
        self.engine = TwoPhases(problem.d, self.m1, first, self.second_phase)

    def second_phase(self, estimates: np.ndarray, start: np.ndarray | None) -> SampledGradient:
        """DDAERR with A in place of E x² (floored), from ``start``; η: Theorem 3.12's with ε = 0."""
        moments = floored_moments(estimates, self.floor)
        x_draws = self.split()[0]
        scaled = moments / self.X**2
        worst = math.sqrt(x_draws / (6 * self.problem.d * self.m2))
        spread = data_point_spread(2 * scaled, self.prices.relative(self.problem))
        theorem = max(worst, math.sqrt(x_draws / (self.m2 * (2 * spread + x_draws)))) / self.X**2
        self.eta, step = self.step_size("eta", self.eta, theorem)
        return data_dependent_engine(self, moments, step, start)
