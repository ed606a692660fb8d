"""Two-Phased DDAERR and DDAELR — Kukliansky & Shamir (2015), Algorithms 2 and 4.

Without prior knowledge of the second moments: phase 1 (the first m_1 examples) estimates them,
A[i] = mean of the observed x_i², then phase 2 (the next m_2) runs DDAERR / DDAELR with A in place of
E x², and the output is phase 2's average iterate.

Choices (the paper's experiments, §5; see docs/papers.md):

- m_1 = m/10 and m_2 = 9m/10 of the run's m examples (``phase1`` sets the fraction).
- Phase 1 runs AERR / AELR (Hazan & Koren Algorithms 1 / 2, budget - 1 uniform draws and one
  w-weighted draw, their theoretical η for m_1 examples unless ``eta1`` is given), and phase 2 starts
  from its average iterate. Every value observed in phase 1 feeds A, each distinct attribute of an
  example once: which attributes are drawn depends only on past examples, so each per-attribute mean
  of x_i² stays unbiased, and it uses the whole budget instead of the k + 1 uniform draws of line 5.
- ε = 0, as in the experiments (the q_i of line 12 use A itself, not A + 13ε/6), with a floor (docs/papers.md):
  q and p use (1 - floor) A + floor · mean(A), ``floor`` = 0.01 by default, so an attribute phase 1
  never saw keeps q_i > 0 and can still be learnt (with floor = 0 it could not).
- Phase 2 is DDAERR / DDAELR as in ddaerr.py / ddaelr.py: p_j ∝ |w_j| sqrt(A_j), the budget split
  evenly (``x_draws`` overrides), i.i.d. draws with replacement.
- η (phase 2) defaults to the theorems with ε = 0: Theorem 3.12's max(sqrt(k/(6 d m_2)),
  sqrt(k/(m_2 (2||2A||_{1/2} + k)))) for ridge and Theorem 4.7's sqrt(k log 2d / (20 B² m_2 (8||A||_1 + k)))
  for lasso, k = the data-point draws, A floored as above.
- Scale (the bounds these theorems use: max ||x||_2 for ridge, max |x_i| for lasso, max |y|, ||w*||). They
  assume ||x|| <= 1, |y| <= B, ||w*|| <= B: B defaults to the declared ||w*|| bound widened to
  max|y| / max||x||, and both phases' η are the theorems' for the data scaled into the unit ball (A scaled
  with it), divided by max||x||_2² (ridge, OGD) or max|x_i| (lasso, EG) on w, as in ``AttributeEfficient``.
- The practical default (``defaults = "practical"``, recorded as ``eta = eta1 = "adaptive"``): both phases' η
  are their theorems' worst cases, which barely move w within one pass on real data; the default steps are the
  rules of ``_step_sizes`` (ridge: averaged least squares' η = 1/(2R²); lasso: the adaptive EG step, capped), fed
  with each phase's own estimates and never below that phase's theoretical η; each rule starts afresh in phase 2,
  whose sampler differs. ``defaults = "theory"`` takes the theorems' η.
"""

from __future__ import annotations

import math
from abc import abstractmethod

import numpy as np

from learner.algorithms._attribute_efficient import (
    B_DOC,
    AttributeEfficient,
    DataPointSampler,
    SampledGradient,
    Spec,
)
from learner.algorithms._data_dependent import (
    FLOOR_DOC,
    KUKLIANSKY_SHAMIR,
    X_DRAWS_DOC,
    check_floor,
    data_dependent_engine,
    floored_moments,
)
from learner.algorithms._geometry import L1_BALL, L2_BALL, Geometry
from learner.algorithms._prices import data_point_spread, relative_prices
from learner.algorithms._step_sizes import ADAPTIVE, StepRule
from learner.algorithms.aelr import aelr_eta
from learner.algorithms.aerr import aerr_eta
from learner.algorithms.base import Observed, ParamError


def two_phase_params(geometry: Geometry, theorem: str) -> Spec:
    """The parameters of the two-phased learner on the ``geometry``'s ball, ``theorem`` its phase-2 η."""
    return {
        "B": (None, B_DOC),
        "eta": (None, "phase-2 " + geometry.eta_doc + theorem),
        "eta1": (None, "phase-1 step size; default 'adaptive': the rule of phase 2's step, on phase 1's estimates; "
                 "theory: the AERR/AELR theorem's η for m_1 examples"),
        "x_draws": (None, X_DRAWS_DOC),
        "floor": (0.01, FLOOR_DOC),
        "phase1": (0.1, "share m_1/m of the examples spent estimating the moments (the experiments' 1/10)"),
    }


class TwoPhase(AttributeEfficient):
    """Phase 1: AERR/AELR while estimating E x²; phase 2: the data-dependent learner from there."""

    paper = KUKLIANSKY_SHAMIR
    rules = {"eta": ADAPTIVE, "eta1": ADAPTIVE}

    def build(self) -> SampledGradient:
        share = float(self.config["phase1"])
        if not 0.0 <= share < 1.0:
            raise ParamError(f"{self.id}: phase1 must be in [0, 1), got {share}")
        check_floor(self)
        self.even_split()
        self.B, self.B_unit, self.X = self.ball()
        m = self.problem.n_examples
        self.m1 = round(share * m)
        self.m2 = max(m - self.m1, 1)
        self.counts = np.zeros(self.problem.d)
        self.square_sums = np.zeros(self.problem.d)
        self.seen = 0
        self.phase = 1
        if self.m1 == 0:
            return self.second_phase(None)
        d, k = self.problem.d, self.problem.budget - 1
        sampler = DataPointSampler(d)
        return SampledGradient(self.geometry.iterate(d, self.B), sampler, k, 1, self.first_step(k), self.rng)

    def update(self, observed: Observed, y: float) -> None:
        if self.phase == 1:
            for i, value in observed.items():
                self.counts[i] += 1
                self.square_sums[i] += value * value
        self.engine.update(observed, y)
        self.seen += 1
        if self.phase == 1 and self.seen == self.m1:
            self.engine = self.second_phase(self.engine.iterate.average())

    def moment_estimates(self) -> np.ndarray:
        """A[i] = square_sums[i] / counts[i] (Algorithm 2/4 line 8), 0 for attributes never observed."""
        return np.divide(self.square_sums, self.counts, out=np.zeros_like(self.square_sums), where=self.counts > 0)

    def second_phase(self, start: np.ndarray | None) -> SampledGradient:
        self.phase = 2
        moments = floored_moments(self.moment_estimates(), float(self.config["floor"]))
        x_draws = int(self.config["x_draws"])
        return data_dependent_engine(self, moments, self.second_step(moments, x_draws), start)

    @abstractmethod
    def first_step(self, k: int) -> StepRule:
        """Phase 1's step (``eta1``): the AERR/AELR theorem's η for m_1 examples, or the practical rule."""

    @abstractmethod
    def second_step(self, moments: np.ndarray, x_draws: int) -> StepRule:
        """Phase 2's step (``eta``): the theorem's η with the estimated moments, or the practical rule."""


class TwoPhasedDDAERR(TwoPhase):
    """Two-Phased DDAERR: AERR on m/10 examples while estimating E x², then DDAERR with the estimates."""

    id = "ddaerr-2phase"
    name = "Two-Phased DDAERR"
    algorithm = "Algorithm 2"
    geometry = L2_BALL
    params = two_phase_params(L2_BALL, "Theorem 3.12 with ε = 0: max(sqrt(k/(6dm₂)), sqrt(k/(m₂(2||2A||_{1/2} + k))))")

    def first_step(self, k: int) -> StepRule:
        return self.step_rule("eta1", aerr_eta(k, self.problem.d, self.m1) / self.X**2)

    def second_step(self, moments: np.ndarray, x_draws: int) -> StepRule:
        scaled = moments / self.X**2
        worst = math.sqrt(x_draws / (6 * self.problem.d * self.m2))
        spread = data_point_spread(2 * scaled, relative_prices(self))
        return self.step_rule("eta", max(worst, math.sqrt(x_draws / (self.m2 * (2 * spread + x_draws)))) / self.X**2)


class TwoPhasedDDAELR(TwoPhase):
    """Two-Phased DDAELR: AELR on m/10 examples while estimating E x², then DDAELR with the estimates."""

    id = "ddaelr-2phase"
    name = "Two-Phased DDAELR"
    algorithm = "Algorithm 4"
    geometry = L1_BALL
    params = two_phase_params(L1_BALL, "Theorem 4.7 with ε = 0: sqrt(k log 2d/(20B²m₂(8||A||_1 + k)))")

    def first_step(self, k: int) -> StepRule:
        return self.step_rule("eta1", aelr_eta(k, self.problem.d, self.m1, self.B_unit) / self.X)

    def second_step(self, moments: np.ndarray, x_draws: int) -> StepRule:
        d, B, spread = self.problem.d, self.B_unit, float(moments.sum()) / self.X**2
        return self.step_rule(
            "eta", math.sqrt(x_draws * math.log(2 * d) / (20 * B**2 * self.m2 * (8 * spread + x_draws))) / self.X)
