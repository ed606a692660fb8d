"""Step sizes of the importance-sampled learners: the theorems' constant, or a rule fed by the paid-for estimates.

The theorems of Hazan & Koren and Kukliansky & Shamir fix η from worst-case bounds (||x|| <= 1, |y| <= B, a
gradient bound G over every possible example) and the horizon m. On real data those bounds are loose by orders of
magnitude, and the theoretical η barely moves w within one pass (issue 20: normalised test MSE 0.93-0.99 on
``mnist-3v5``). The practical defaults (``defaults = "practical"``) measure instead, from nothing but the
estimates the algorithm computed from the attributes it paid for:

- ``LeastSquaresStep`` (OGD on the L2 ball, the ridge learners): the constant step of averaged least-mean-squares,
  η = 1/(4R²) with R² = E||x̃||² (Bach & Moulines 2013, "Non-strongly-convex smooth stochastic approximation with
  convergence rate O(1/n)": averaged SGD on the squared loss with η <= 1/(4R²) reaches O(1/n) excess risk without
  strong convexity and without knowing m). R² is the running mean of ||x̃_s||² over the examples so far: x̃ is the
  unbiased estimate the gradient g̃ = φ̃ x̃ is built on, so R² accounts for the inflation d/k of a sampled x. The
  output stays the average iterate, as the papers' is. ``scale`` multiplies η (AESVR's smoothed loss has slope
  erf'(0)/ε = 2/(√π ε) where the squared loss has 1, so its step is √π ε / 2 times larger).
- ``ExponentiatedStep`` (EG± on the L1 ball, the lasso learners): the adaptive step of exponentiated gradient,
  η_t = sqrt(log 2d / Σ_{s<=t} ||g̃_s||_∞²) (the optimum of the EG bound B(log 2d / η + η Σ||g̃||_∞²) that the
  theorems evaluate with a worst-case G, here with the realised gradients; AdaGrad-style, cf. Orabona's "A Modern
  Introduction to Online Learning", §7). Theorem 3.4's rate holds for it in expectation by Jensen's inequality,
  E sqrt(Σ||g̃||_∞²) <= sqrt(m G²), as for the Ito et al. λ_t of ``_ito``.

``FixedStep`` is a constant η: the theorem's (``defaults = "theory"``) or the user's. A rule's value changes as
the run goes, so ``config`` records its name, ``ADAPTIVE``, which the algorithms accept back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

ADAPTIVE = "adaptive"
# Bach & Moulines' constant: η = 1/(4R²).
LMS_FACTOR = 0.25


class FixedStep:
    """A constant η."""

    def __init__(self, eta: float) -> None:
        self.eta = eta
        self.last = eta

    def next(self, x_tilde: Mapping[int, float], gradient: Mapping[int, float]) -> float:
        return self.eta


class LeastSquaresStep:
    """η_t = scale / (4 R²_t), R²_t the mean of ||x̃_s||² over s <= t (0 until some x̃ is non-zero)."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale
        self._sum = 0.0
        self._count = 0
        self.last = 0.0  # the latest η (what a constant step to try would start from)

    def next(self, x_tilde: Mapping[int, float], gradient: Mapping[int, float]) -> float:
        self._count += 1
        self._sum += sum(v * v for v in x_tilde.values())
        self.last = self.scale * LMS_FACTOR * self._count / self._sum if self._sum > 0 else 0.0
        return self.last


class ExponentiatedStep:
    """η_t = sqrt(log 2d / Σ_{s<=t} ||g̃_s||_∞²) (0 until some gradient is non-zero)."""

    def __init__(self, d: int) -> None:
        self._log = math.log(2 * d)
        self._energy = 0.0
        self.last = 0.0

    def next(self, x_tilde: Mapping[int, float], gradient: Mapping[int, float]) -> float:
        self._energy += max((abs(g) for g in gradient.values()), default=0.0) ** 2
        self.last = math.sqrt(self._log / self._energy) if self._energy > 0 else 0.0
        return self.last


StepRule = FixedStep | LeastSquaresStep | ExponentiatedStep
