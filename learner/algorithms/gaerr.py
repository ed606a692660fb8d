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
  (``_step_sizes.LeastSquaresStep``). ``defaults = "theory"`` takes the theorem's η.
"""

from __future__ import annotations

import math

import numpy as np

from learner.algorithms._attribute_efficient import (
    B_DOC,
    RIDGE_ETA_DOC,
    AttributeEfficient,
    DataPointSampler,
    SampledGradient,
    ridge_iterate,
)
from learner.algorithms.base import Algorithm, ParamError

KUKLIANSKY_SHAMIR = "Kukliansky & Shamir 2015, Attribute Efficient Linear Regression with Data-Dependent Sampling"

Q_DOC = "data-point sampling distribution q: 'uniform', 'power:<alpha>' (q_i ∝ i^alpha) or d comma-separated weights"
INNER_DOC = "inner-product draws: 'moments' (p ∝ |w_j|·sqrt(E x_j²) with the moments q implies) or 'pseudo-code'"
X_DRAWS_DOC = "data-point draws per example; default ceil(budget/2), the even split of §5 (the rest go to <w,x>)"


def parse_q(algorithm: Algorithm, spec: str) -> np.ndarray | None:
    """The q a parameter string names (None: uniform)."""
    d = algorithm.problem.d
    spec = str(spec).strip()
    if spec == "uniform":
        return None
    try:
        if spec.startswith("power:"):
            q = np.arange(1, d + 1, dtype=np.float64) ** float(spec.removeprefix("power:"))
        else:
            q = np.array([float(v) for v in spec.split(",")])
    except ValueError as exc:
        raise ParamError(f"{algorithm.id}: q must be 'uniform', 'power:<alpha>' or {d} numbers, got {spec!r}") from exc
    if q.shape != (d,) or not np.all(np.isfinite(q)) or np.any(q < 0) or not q.sum() > 0:
        raise ParamError(f"{algorithm.id}: q needs {d} finite non-negative weights with a positive sum")
    return q / q.sum()


def inner_choice(algorithm: Algorithm) -> str:
    inner = str(algorithm.config["inner"])
    if inner not in ("moments", "pseudo-code"):
        raise ParamError(f"{algorithm.id}: inner must be 'moments' or 'pseudo-code', got {inner!r}")
    return inner


def gaerr_eta(x_draws: int, m: int, spread: float) -> float:
    """Theorem 3.1 with η = 2B/(G sqrt(m)) and Lemma 3.4's G² = 4B² (S/k + 1): η = 1/sqrt(m (S/k + 1))."""
    return 1.0 / math.sqrt(max(m, 1) * (spread / x_draws + 1.0))


class GAERR(AttributeEfficient):
    """General Attribute Efficient Ridge Regression: AERR with data-point draws from a given q."""

    id = "gaerr"
    name = "GAERR (General Attribute Efficient Ridge Regression)"
    paper = KUKLIANSKY_SHAMIR
    algorithm = "Algorithm 1"
    params = {
        "B": (None, B_DOC),
        "eta": (None, RIDGE_ETA_DOC + "Theorem 3.1 with Lemma 3.4: 1/sqrt(m(max_i(1/q_i)/k + 1)) / max||x||_2²"),
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
        B, _, X = self.ridge_geometry()
        smallest = probabilities[probabilities > 0].min()
        step = self.ridge_step("eta", gaerr_eta(x_draws, self.problem.n_examples, 1.0 / smallest) / X**2)
        # eq. (4): q ∝ sqrt(E x²), so q itself is the sqrt(E x_j²) the improved inner product weighs by
        c = probabilities if inner_choice(self) == "moments" else None
        return SampledGradient(ridge_iterate(d, B, c), sampler, x_draws, inner_draws, step, self.rng)
