"""AESVR: Attribute Efficient Support-Vector Regression — Hazan & Koren (2012), Algorithm 4 with Procedure 3.

AERR (Algorithm 1: OGD on the L2 ball of radius B, averaged iterates) on the erf-smoothed δ-insensitive
loss f_ε(r) = (ε/2)ρ((r-δ)/ε) + (ε/2)ρ((r+δ)/ε) - δ, r = <w,x> - y, whose derivative is
f'_ε(r) = ½[erf((r-δ)/ε) + erf((r+δ)/ε)]. Per example: k uniform draws give x̃ (Alg. 1 lines 3-7),
GenEst (Procedure 3) estimates f'_ε(r) from w²-weighted draws, g̃ = φ̃ · x̃.
GenEst draws an order n with Pr[n] = 2^-(n+1) and multiplies n independent estimates
θ̃_r = (<w,x>~_r - y ∓ δ)/ε of the scaled residual, weighting the product by a_n / Pr[n] (a_n the
Taylor coefficients of erf, eq. (7)).

Choices the paper leaves open:

- Budget. The paper bounds the attributes per example only in expectation (k + 6); here the local budget
  is a hard cap: ``x_draws`` uniform draws for x̃ and the rest, ``budget - x_draws``, for GenEst. The order
  n is drawn conditioned on needing no more than those draws (n·group size <= budget - x_draws) and
  weighted by that conditional probability, so φ̃ is unbiased for erf's Taylor series cut after the largest
  order n_max that fits, not for erf itself. Below order 3 only the linear term a_1 is left, and there
  ½[(r-δ)/ε + (r+δ)/ε] = r/ε: δ cancels and AESVR is AERR on a rescaled residual. So GenEst needs at least
  3 draws, and by default it gets ``max(3, budget - ⌈budget/2⌉)`` (the even split of Kukliansky & Shamir §5
  when the budget is 6 or more; at the experiments' budget of 5, 2 for x̃ and 3 for GenEst): n_max >= 3.
  A configuration whose n_max is below 3 (a budget under 4, or ``x_draws`` leaving GenEst fewer than 3
  draws) is refused with a parameter error saying δ would have no effect. Every further two draws add one
  odd order. Draws are i.i.d. with replacement and a repeated index is paid for once.
- The two GenEst calls of line 2 (for y⁺ and y⁻) share the order n and the draws: each call stays
  unbiased (the θ̃_r are independent across r) and the pair costs the attributes of one.
- Even orders have a_n = 0, so φ̃ = 0 and g̃ = 0 exactly: nothing is observed for such an example
  (x̃ is not needed either), though it still counts as an iterate of the average. Procedure 3's
  Pr[n] is kept as printed, so more than half of the examples (Pr[n = 0] >= 1/2) make no step.
- GenEst's scale: Procedure 3 assumes ||x||_2 <= 1, ||w||_2 <= B_G and |y| <= B_G; AESVR feeds it
  x/ε and (y ± δ)/ε, i.e. B_G = (B' + δ)/ε with B' the theorem's B for data in the unit ball (below), so
  N = ⌈4 B_G²⌉ draws are averaged per factor once n > 2 log2 N (line 3).
- Scale (the bounds this theorem uses: max ||x||_2, max |y|, ||w*||_2). Theorem 4.4 assumes ||x||_2 <= 1 and
  |y|, ||w*||_2 <= B. B defaults to the declared ||w*||_2 bound widened to max|y| / max||x||_2; the analysis
  runs on x' = x / max||x||_2, where the bound is B' = max||x||_2·B (``AttributeEfficient``). δ and ε are in
  the units of y (the residual <w, x> - y is the same before and after scaling): 0 <= δ <= B' as the paper
  requires, δ defaults to 0.1·max|y|, and the step size η' is divided by max||x||_2² on w.
- w_1 = 0 as in AERR: <w,x> = 0 exactly, so θ̃_r = (-y ∓ δ)/ε needs no draws until w moves.
- ε (the accuracy of the smoothing, Claim 4.2) defaults to B': the theorem trades it against a factor
  exp(O(log²(B'/ε))); B'/ε = 1 keeps the factors θ̃ of order one, where the few Taylor orders a small
  budget affords approximate erf.
- η: the theorem only says "properly tuned". With ``defaults = "theory"`` it is Theorem 3.1's η = 2B/(G√m) with the
  second-moment bound of Theorem 4.4's proof made explicit for the capped estimator:
  G² = E[φ̃²] · E||x̃||², E||x̃||² <= (d + k - 1)/k for ||x||_2 <= 1, and
  E[φ̃²] <= Σ_{n <= n_max} a_n² Θ^{2n} / Pr[n | n <= n_max], Θ² = (B'² + (2B' + δ)²)/ε² bounding E[θ̃_r²].
  That bound grows like exp(log² n_max), so the theoretical η barely moves w on a run of a few
  thousand examples. The practical default (recorded as ``eta = "adaptive"``) is averaged least squares' step
  (``shared.step_sizes.LeastSquaresStep``, η = 1/(2R²) with R² measured on the run's x̃ and g̃, g̃ compared with y in
  φ̃'s units), times √π ε / 2: f'_ε has slope 2/(√π ε) at 0 where the squared loss has 1; never below the
  theorem's η. Or pass ``eta`` as the paper's experiments tuned theirs (by cross-validation).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from learner.algorithms.base import Observed, ParamError, Problem
from learner.algorithms.hazan_koren_2012 import PAPER
from learner.algorithms.shared.attribute_efficient import (
    AttributeEfficient,
    DataPointSampler,
    SampledGradient,
)
from learner.algorithms.shared.estimators import (
    erf_coefficient,
    estimate_x,
    genest_group_size,
    genest_max_order,
    genest_order,
    genest_phi,
)
from learner.algorithms.shared.geometry import L2_BALL
from learner.algorithms.shared.iterates import RidgeIterate
from learner.algorithms.shared.step_sizes import NO_VALUES, LeastSquaresStep, StepRule

# Below order 3 GenEst keeps only erf's linear term, in which δ cancels (see the module docstring).
MIN_GENEST_ORDER = 3


def genest_sample_size(B: float, delta: float, epsilon: float) -> int:
    """Procedure 3's N = ⌈4 B_G²⌉ for GenEst's inputs x/ε, (y ± δ)/ε: B_G = (B + δ)/ε."""
    return max(1, math.ceil(4 * ((B + delta) / epsilon) ** 2))


def genest_second_moment(n_max: int, theta_sq: float) -> float:
    """Bound on E[φ̃²] when n is drawn from Pr[n] = 2^-(n+1) conditioned on n <= n_max and E[θ̃²] <= theta_sq."""
    mass = 1.0 - 0.5 ** (n_max + 1)
    return sum(erf_coefficient(n) ** 2 * theta_sq**n * mass / 0.5 ** (n + 1) for n in range(n_max + 1))


def aesvr_eta(d: int, k: int, m: int, B: float, delta: float, epsilon: float, n_max: int) -> float:
    """η = 2B/(G√m) (proof of Theorem 3.1) with G² = E[φ̃²]·E||x̃||² bounded as in Theorem 4.4's proof."""
    theta_sq = (B**2 + (2 * B + delta) ** 2) / epsilon**2
    G_sq = genest_second_moment(n_max, theta_sq) * (d + k - 1) / k
    return 2 * B / math.sqrt(G_sq * max(m, 1))


# An example GenEst's order makes free (a_n = 0): no attribute drawn, g̃ = 0
NO_DRAWS = np.empty(0, dtype=np.intp)


class GenEstGradient(SampledGradient):
    """AERR's loop with φ̃ from GenEst: per example an order n, then n groups of w²-weighted draws."""

    def __init__(
        self,
        iterate: RidgeIterate,
        sampler: DataPointSampler,
        x_draws: int,
        genest_draws: int,
        step: float | StepRule,
        rng: np.random.Generator,
        *,
        delta: float,
        epsilon: float,
        N: int,
    ) -> None:
        super().__init__(iterate, sampler, x_draws, genest_draws, step, rng)
        self.label_slope = 2.0 / (math.sqrt(math.pi) * epsilon)  # f'_ε(-y) ≈ -(2/√π) y/ε for small y/ε
        self.delta = delta
        self.epsilon = epsilon
        self.N = N
        self.n_max = genest_max_order(genest_draws, N)
        self._n, self._p_n = 0, 1.0
        self._groups: list[list[int]] = []
        self._group_ratios: list[list[float]] = []

    def select(self) -> list[int]:
        # One batch per example whatever is used of it, so the stream of numbers does not depend on the data.
        uniforms = self.rng.random(self.x_draws + 1 + self.inner_draws).tolist()
        self._n, self._p_n = genest_order(uniforms[self.x_draws], self.n_max)
        self._groups, self._group_ratios = [], []
        if erf_coefficient(self._n) == 0.0:
            self._x, self._inv_q = [], []
            return []
        drawn, inverse = self.sampler.draw_many(np.array(uniforms[: self.x_draws]))
        self._x, self._inv_q = drawn.tolist(), inverse.tolist()
        size = 0 if self.iterate.is_zero else genest_group_size(self._n, self.N)
        inner = iter(uniforms[self.x_draws + 1 :])
        for _ in range(self._n):
            draws = [self.iterate.sample(next(inner)) for _ in range(size)]
            self._groups.append([j for j, _ in draws])
            self._group_ratios.append([ratio for _, ratio in draws])
        return list(dict.fromkeys(self._x + [j for group in self._groups for j in group]))

    def phi(self, observed: Observed, y: float) -> float:
        """φ̃ of Algorithm 4 line 2 for the order and draws of the last select()."""
        return genest_phi(self._n, self._p_n, self._groups, self._group_ratios, observed, y, self.delta, self.epsilon)

    def estimates(self, observed: Observed, y: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self._x:
            return NO_DRAWS, NO_VALUES, NO_VALUES
        phi = self.phi(observed, y)
        at, x_tilde = estimate_x(self._x, self._inv_q, observed)
        return at, x_tilde, phi * x_tilde


class AESVR(AttributeEfficient):
    """Attribute Efficient SVR: AERR on the erf-smoothed δ-insensitive loss with GenEst estimates of f'.

    Parameters
    ----------
    B
        radius of the constraint ball on w (the papers' B); default the declared ||w*|| bound, widened to max|y| /
        max||x|| so that the theorem's |y| <= B holds after scaling x into the unit ball
    delta
        δ of the δ-insensitive loss |r|_δ = max(|r| - δ, 0) in units of y, 0 <= δ <= B'; default 0.1·max|y|
    epsilon
        smoothing accuracy ε of f_ε (Claim 4.2), in units of y; default B' = max||x||_2·B
    eta
        step size η; default 'adaptive': averaged least squares' 1/(2R²), R² measured on the run's estimates, never
        below the theorem's η; theory: 2B'/(G√m) / max||x||_2² with Theorem 4.4's bound on G for the capped GenEst
    x_draws
        uniform draws for x̃; the rest of the budget goes to GenEst, which needs at least 3; default min(⌈budget/2⌉,
        budget - 3)
    """

    id = "aesvr"
    name = "AESVR (Attribute Efficient Support-Vector Regression)"
    paper = PAPER
    algorithm = "Algorithm 4"
    geometry = L2_BALL
    min_budget = 1 + MIN_GENEST_ORDER

    def __init__(self, problem: Problem, seed: int = 0, *, B: float | None = None, delta: float | None = None,
                 epsilon: float | None = None, eta: float | Literal["adaptive"] | None = None,
                 x_draws: int | None = None) -> None:
        super().__init__(problem, seed)
        self.B = B
        d = problem.d
        B, B_unit, X = self.ball()
        self.delta = 0.1 * problem.scale.max_label if delta is None else delta
        if not 0.0 <= self.delta <= B_unit:
            raise ParamError(f"{self.id}: delta must be in [0, B'] = [0, {B_unit:g}], got {self.delta}")
        self.epsilon = self.positive("epsilon", epsilon, B_unit)
        self.x_draws = (min(math.ceil(problem.budget / 2), problem.budget - MIN_GENEST_ORDER) if x_draws is None
                        else x_draws)
        x_draws, genest_draws = self.split()
        N = genest_sample_size(B_unit, self.delta, self.epsilon)
        n_max = genest_max_order(genest_draws, N)
        if n_max < MIN_GENEST_ORDER:
            raise ParamError(
                f"{self.id}: with {genest_draws} GenEst draws (budget {problem.budget} - x_draws {x_draws}) and "
                f"N = {N}, GenEst's order is capped at {n_max}, where only erf's linear term is left and δ cancels: "
                f"delta can have no effect. Give GenEst draws for order {MIN_GENEST_ORDER} (lower x_draws or raise "
                "the per-example budget)")
        # f'_ε has slope erf'(0)/ε = 2/(√π ε) at 0 where the squared loss's φ has 1: the practical step is √π ε/2 times
        # the least-squares one (``shared.step_sizes``)
        theorem = aesvr_eta(d, x_draws, problem.n_examples, B_unit, self.delta, self.epsilon, n_max) / X**2
        self.eta, step = self.step_size("eta", eta, theorem, LeastSquaresStep(math.sqrt(math.pi) * self.epsilon / 2))
        self.engine = GenEstGradient(
            RidgeIterate(d, B), DataPointSampler(d), x_draws, genest_draws, step, self.rng,
            delta=self.delta, epsilon=self.epsilon, N=N,
        )
