"""Step sizes of the importance-sampled learners: the theorems' constant, or a rule fed by the paid-for estimates.

Why. The theorems of Hazan & Koren and Kukliansky & Shamir fix η before the first example, as the minimiser of an
online-gradient regret bound: η = 2B/(G√m) for OGD on the L2 ball (AERR's sqrt(k/(2dm)) / max||x||², GAERR's and
DDAERR's 1/sqrt(m(S/k + 1)) / max||x||²), η = sqrt(log 2d / (5m G²)) for EG± on the L1 ball (AELR, GAELR, DDAELR).
G bounds every gradient estimate ||g̃|| over every example the theorem allows (||x|| <= 1, |y| <= B, w anywhere in
the ball), and m is the horizon. On real data these bounds are loose by orders of magnitude, and η shrinks as 1/√m:
the theoretical η barely moves w within one pass (issue 20: normalised test MSE 0.93-0.99 on ``mnist-3v5``). The
practical defaults (``defaults = "practical"``, recorded as ``"adaptive"``) keep each theorem's algorithm and its
gradient estimates, and replace the worst-case G by what the run measures on the estimates it computed from the
attributes it paid for (and the free labels); ``defaults = "theory"`` keeps the theorems' constants (``FixedStep``).

The rules, and how each relates to its theorem's constant:

- ``LeastSquaresStep`` (OGD on the L2 ball: AERR, GAERR, DDAERR, the two-phased DDAERR, AESVR). The constant step
  of averaged least-mean-squares, η = c/R², c = ``LMS_FACTOR`` = 1/2 (Bach & Moulines 2013, "Non-strongly-convex
  smooth stochastic approximation with convergence rate O(1/n)": averaged SGD on the squared loss with a constant
  η <= 1/(4R²) reaches O(1/n) excess risk without strong convexity and without knowing m; plain LMS is stable up to
  2/R²). Where the theorem's η·G² = 2BG/√m goes to 0 with the horizon, here η·R² stays 1/2: the step is set by the
  curvature the estimates show, not by m. R² is measured as the run goes: the larger of the mean of ||x̃_s||² (x̃
  the unbiased estimate g̃ = φ̃ x̃ is built on, so R² carries the d/k inflation of a sampled x, as G² does in
  Lemma 3.4) and Σ||g̃_s||² / Σ y_s², the gradients' second moment in units of the labels', which grows with the
  noise of the inner-product estimate φ̃ as ||w|| grows (where a constant 1/(2E||x̃||²) let that noise grow with w
  and diverge). The output stays the average iterate, as the papers' is. ``scale`` multiplies η: AESVR's smoothed
  loss has slope erf'(0)/ε = 2/(√π ε) where the squared loss has 1, so its step is √π ε / 2 times larger;
  ogd-ridge, whose gradient is 2(<w, x> - y)x, takes half.
- ``ExponentiatedStep`` (EG± on the L1 ball: AELR, GAELR, DDAELR, the two-phased DDAELR, eg-lasso). The same optimum as
  the theorems', η = sqrt(log 2d / Σ_{s<=t} ||g̃_s||_∞²), with the realised gradients in place of m G² (AdaGrad-style,
  cf. Orabona, "A Modern Introduction to Online Learning", §7). Theorem 3.4's rate holds for it in expectation by
  Jensen's inequality, E sqrt(Σ||g̃||_∞²) <= sqrt(m G²), as for the Ito et al. λ_t of ``shared.dual_averaging``. It is
  capped where EG's first steps would exceed the least-squares step: at EG's start (z⁺ = z⁻ = 1) a step moves w_i by
  about -(B η / d) g̃_i, so η <= (d/B) · c/R². Without the cap the first steps on a wide ball (B = ||w*||_1 = 500 on
  ``powerlaw``) throw w far past w*, and the run ends above the zero predictor.
- ``AtLeast``: every practical rule is floored at its theorem's η (a practical step is never slower than the
  theory's), and answers the theorem's η during its first ``WARMUP`` examples, before its running means are
  trusted.

The other practical defaults are written where they apply: AER's λ (``cesa_bianchi_2011.aer``: Theorem 12's optimum with
the measured gradient norm), the L1 radius on real data (``shared.geometry.L1Ball.radius``: sqrt(d) times the stand-in
||w*||_2), ogd-ridge's and eg-lasso's steps (``references.ogd_ridge``, ``references.eg_lasso``, the rules above with
exact gradients) and the Murata & Suzuki mini-batch (``murata_suzuki_2018.exploration``: sized to the run).

A rule's value changes as the run goes, so the step size's attribute (a run's resolved parameters) holds its name,
``ADAPTIVE``, which the algorithms accept back (their step sizes' type is ``float | Literal["adaptive"] | None``);
``last`` is its latest η (what the near-zero diagnosis proposes to tune around).
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np

ADAPTIVE: Final = "adaptive"
# x̃ or g̃ of no attribute (a rule fed with the other only)
NO_VALUES: Final = np.empty(0)
# η = 1/(2R²): within least-mean-squares' stability limit 2/R², and twice Bach & Moulines' 1/(4R²), which their proof
# needs but which measured slower on every dataset of benchmarks/defaults_sweep.py (AERR on mnist-3v5 with 57
# attributes: normalised test MSE 0.80 against 0.76 over seeds 0-2; on a Gaussian design, R² 0.72 against 0.75).
LMS_FACTOR = 0.5
# Examples a running mean of ||x̃||² needs before it is trusted: a sampled x̃ is heavy-tailed (x_i / q_i), and a
# mean over the first few examples of a new sampler (the second phase of the two-phased learners) ran 10x above
# the theorem's η. Until then the rules answer 0, i.e. the theorem's η (``AtLeast``).
WARMUP = 10


def sum_of_squares(values: np.ndarray) -> float:
    """Σ v², left to right from 0, as the loop over a dict's values it replaces: Python's sum of the squares (3.11's,
    without compensation), or NumPy's running sum's last (its sum pairs, and a square is never -0.0, so 0 + v² is
    v²)."""
    if not values.size:
        return 0.0
    last: float = np.add.accumulate(values * values).item(-1)
    return last


class FixedStep:
    """A constant η."""

    def __init__(self, eta: float) -> None:
        self.eta = eta
        self.last = eta

    def next(self, x_tilde: np.ndarray, gradient: np.ndarray, y: float = 0.0) -> float:
        return self.eta


class LeastSquaresStep:
    """η_t = scale · LMS_FACTOR / R²_t, R²_t = max(mean ||x̃_s||², Σ||g̃_s||² / Σ y_s²) over s <= t (0 until some x̃ is
    non-zero, and during the first ``warmup`` examples).

    The second term is the gradient's second moment in units of the labels': at w = 0, g̃ = -y x̃ and it is about
    E||x̃||²; as w grows, the inner-product estimate φ̃ gets noisier (its variance grows with ||w||²), and this term
    shrinks the step with it, where a constant 1/(2E||x̃||²) let the noise grow with w and diverge. ``y`` is given in
    φ̃'s units (``SampledGradient.label_slope``); with ``noise_aware`` False only E||x̃||² counts."""

    def __init__(self, scale: float = 1.0, warmup: int = WARMUP, noise_aware: bool = True) -> None:
        self.scale = scale
        self.warmup = warmup
        self.noise_aware = noise_aware
        self._sum = 0.0
        self._gradients = 0.0
        self._labels = 0.0
        self.count = 0
        self.last = 0.0  # the latest η (what a constant step to try would start from)

    def next(self, x_tilde: np.ndarray, gradient: np.ndarray, y: float = 0.0) -> float:
        self.count += 1
        self._sum += sum_of_squares(x_tilde)
        r2 = self._sum / self.count
        if self.noise_aware:
            self._gradients += sum_of_squares(gradient)
            self._labels += y * y
            if self._labels > 0:
                r2 = max(r2, self._gradients / self._labels)
        ready = r2 > 0 and self.count > self.warmup
        self.last = self.scale * LMS_FACTOR / r2 if ready else 0.0
        return self.last


class ExponentiatedStep:
    """η_t = sqrt(log 2d / Σ_{s<=t} ||g̃_s||_∞²), at most (d / B) · LMS_FACTOR / R²_t (0 until some gradient is
    non-zero).

    The cap: at EG's start (z⁺ = z⁻ = 1) a step moves w_i by about -(B η / d) g̃_i, a gradient step of size B η / d,
    which must not exceed the least-squares step (``LeastSquaresStep``). Without it the first
    steps on a wide ball (B = ||w*||_1 = 500 on ``powerlaw``) throw w far past w* and it ends above the zero
    predictor. ``radius`` = None: no cap (full information, where g is exact)."""

    def __init__(self, d: int, radius: float | None = None) -> None:
        self._log = math.log(2 * d)
        self._energy = 0.0
        self._cap = None if radius is None else LeastSquaresStep(d / radius)
        self.last = 0.0

    def next(self, x_tilde: np.ndarray, gradient: np.ndarray, y: float = 0.0) -> float:
        self._energy += max(map(abs, gradient.tolist()), default=0.0) ** 2
        self.last = math.sqrt(self._log / self._energy) if self._energy > 0 else 0.0
        if self._cap is not None:
            # 0 (the theorem's η, ``AtLeast``) until the cap's mean of ||x̃||² is trusted
            self.last = min(self.last, self._cap.next(x_tilde, gradient, y))
        return self.last


class AtLeast:
    """A rule's η, never below ``floor`` (the theorem's η: a practical step is never slower than the theory's)."""

    def __init__(self, rule: LeastSquaresStep | ExponentiatedStep, floor: float) -> None:
        self.rule = rule
        self.floor = floor
        self.last = 0.0

    def next(self, x_tilde: np.ndarray, gradient: np.ndarray, y: float = 0.0) -> float:
        self.last = max(self.rule.next(x_tilde, gradient, y), self.floor)
        return self.last


StepRule = FixedStep | LeastSquaresStep | ExponentiatedStep | AtLeast
