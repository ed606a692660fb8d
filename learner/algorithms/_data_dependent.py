"""What Kukliansky & Shamir's (2015) twins share, each family written once for both geometries (``_geometry``):

- ``GivenSampling``: GAERR and GAELR (Algorithms 1 and 3), data-point draws from a q the user gives.
- ``DataDependent``: DDAERR and DDAELR (§3.1 and §4.1), the q that is optimal given known second moments; its engine
  (``data_dependent_engine``) is also phase 2 of the two-phased learners (``two_phase``).

Per example both split the budget evenly between the data-point and the inner-product draws (§5), and draw the inner
product with p_j ∝ |w_j| sqrt(E x_j²) (§5's improved estimator). The theorems' step sizes are the algorithms' own
(``theorem_eta`` in each file).
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from learner.algorithms._attribute_efficient import (
    AttributeEfficient,
    DataPointSampler,
    SampledGradient,
    Spec,
    ball_params,
)
from learner.algorithms._geometry import Geometry
from learner.algorithms._prices import inner_product_weights, relative_prices
from learner.algorithms._step_sizes import StepRule
from learner.algorithms.base import Algorithm, ParamError

KUKLIANSKY_SHAMIR = "Kukliansky & Shamir 2015, Attribute Efficient Linear Regression with Data-Dependent Sampling"

Q_DOC = "data-point sampling distribution q: 'uniform', 'power:<alpha>' (q_i ∝ i^alpha) or d comma-separated weights"
INNER_DOC = "inner-product draws: 'moments' (p ∝ |w_j|·sqrt(E x_j²) with the moments q implies) or 'pseudo-code'"
X_DRAWS_DOC = "data-point draws per example; default ceil(budget/2), the even split of §5 (the rest go to <w,x>)"
FLOOR_DOC = "q and p use (1 - floor)·E x² + floor·mean(E x²), keeping every q_i > 0 when floor > 0"


def given_q_params(geometry: Geometry, theorem: str) -> Spec:
    """GAERR's and GAELR's parameters (``ball_params``)."""
    return {**ball_params(geometry, theorem), "q": ("uniform", Q_DOC), "inner": ("moments", INNER_DOC),
            "x_draws": (None, X_DRAWS_DOC)}


def data_dependent_params(geometry: Geometry, theorem: str) -> Spec:
    """DDAERR's and DDAELR's parameters (``ball_params``)."""
    return {**ball_params(geometry, theorem), "x_draws": (None, X_DRAWS_DOC), "floor": (0.0, FLOOR_DOC)}


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


def floored_moments(moments: np.ndarray, floor: float) -> np.ndarray:
    """(1 - floor) E[x²] + floor · mean E[x²]: keeps every q_i > 0 when floor > 0 (ε = 0: docs/papers.md)."""
    moments = np.maximum(np.asarray(moments, dtype=np.float64), 0.0)
    if not moments.sum() > 0:
        return np.ones_like(moments)
    return (1.0 - floor) * moments + floor * moments.mean()


def check_floor(algorithm: Algorithm) -> float:
    floor = float(algorithm.config["floor"])
    if not 0.0 <= floor <= 1.0:
        raise ParamError(f"{algorithm.id}: floor must be in [0, 1], got {floor}")
    return floor


class GivenSampling(AttributeEfficient):
    """GAERR / GAELR: data-point draws from the q of the ``q`` parameter, the inner product from p(w)."""

    paper = KUKLIANSKY_SHAMIR

    @abstractmethod
    def theorem_eta(self, x_draws: int, B_unit: float, spread: float) -> float:
        """The theorem's η for the data scaled into the unit ball, S = ``spread`` bounded by max_i 1/q_i."""

    def build(self) -> SampledGradient:
        d = self.problem.d
        q = parse_q(self, str(self.config["q"]))
        x_draws, inner_draws = self.even_split()
        sampler = DataPointSampler(d, q)
        probabilities = sampler.probabilities()
        B, B_unit, X = self.ball()
        spread = 1.0 / probabilities[probabilities > 0].min()
        step = self.step_rule("eta", self.geometry.on_w(self.theorem_eta(x_draws, B_unit, spread), X))
        # q is taken for the geometry's optimum given the moments, so it implies the sqrt(E x_j²) p weighs by
        c = self.geometry.moment_roots(probabilities) if inner_choice(self) == "moments" else None
        return SampledGradient(self.geometry.iterate(d, B, c), sampler, x_draws, inner_draws, step, self.rng)


def data_dependent_engine(
    algorithm: AttributeEfficient, moments: np.ndarray, step: StepRule, start: np.ndarray | None = None
) -> SampledGradient:
    """The geometry's optimal q given ``moments`` (eq. (4) or Lemma 4.3) and p ∝ |w_j| sqrt(moments_j), each over the
    price for a cost-aware algorithm (``_prices``), w starting at ``start`` (0)."""
    d = algorithm.problem.d
    prices = relative_prices(algorithm)
    x_draws, inner_draws = algorithm.even_split()
    iterate = algorithm.geometry.iterate(d, float(algorithm.config["B"]), inner_product_weights(moments, prices), start)
    sampler = DataPointSampler(d, algorithm.geometry.data_point_weights(moments, prices))
    return SampledGradient(iterate, sampler, x_draws, inner_draws, step, algorithm.rng)


class DataDependent(AttributeEfficient):
    """DDAERR / DDAELR: the optimal q given the second moments, which the runner fetches from the oracle (recorded in
    its ledger) and passes as ``Problem.second_moments``."""

    paper = KUKLIANSKY_SHAMIR
    needs_second_moments = True

    @abstractmethod
    def theorem_eta(self, x_draws: int, B_unit: float, spread: float) -> float:
        """The theorem's η for the data scaled into the unit ball, S = ``spread`` of the moments scaled with it."""

    def build(self) -> SampledGradient:
        assert self.problem.second_moments is not None
        moments = floored_moments(self.problem.second_moments, check_floor(self))
        x_draws, _ = self.even_split()
        _, B_unit, X = self.ball()
        spread = self.geometry.spread(moments, relative_prices(self)) / X**2
        step = self.step_rule("eta", self.geometry.on_w(self.theorem_eta(x_draws, B_unit, spread), X))
        return data_dependent_engine(self, moments, step)
