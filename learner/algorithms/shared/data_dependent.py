"""What Kukliansky & Shamir's (2015) learners share, for both geometries (``shared.geometry``):

- ``parse_q``: the data-point distribution q a user gives GAERR and GAELR (Algorithms 1 and 3).
- ``floored_moments`` and ``data_dependent_engine``: DDAERR's and DDAELR's (§3.1 and §4.1) draws, from the q that is
  optimal given the second moments; the engine is also phase 2 of the two-phased learners (``shared.two_phase``).

Per example they split the budget evenly between the data-point and the inner-product draws (§5), and draw the inner
product with p_j ∝ |w_j| sqrt(E x_j²) (§5's improved estimator). The theorems' step sizes are each algorithm's own
(its constructor).
"""

from __future__ import annotations

import numpy as np

from learner.algorithms.base import ParamError
from learner.algorithms.shared.attribute_efficient import AttributeEfficient, DataPointSampler, SampledGradient
from learner.algorithms.shared.prices import inner_product_weights
from learner.algorithms.shared.step_sizes import StepRule


def parse_q(algorithm_id: str, d: int, spec: str) -> np.ndarray | None:
    """The q a parameter string names (None: uniform)."""
    spec = str(spec).strip()
    if spec == "uniform":
        return None
    try:
        if spec.startswith("power:"):
            q = np.arange(1, d + 1, dtype=np.float64) ** float(spec.removeprefix("power:"))
        else:
            q = np.array([float(v) for v in spec.split(",")])
    except ValueError as exc:
        raise ParamError(f"{algorithm_id}: q must be 'uniform', 'power:<alpha>' or {d} numbers, got {spec!r}") from exc
    if q.shape != (d,) or not np.all(np.isfinite(q)) or np.any(q < 0) or not q.sum() > 0:
        raise ParamError(f"{algorithm_id}: q needs {d} finite non-negative weights with a positive sum")
    normalized: np.ndarray = q / q.sum()
    return normalized


def floored_moments(moments: np.ndarray, floor: float) -> np.ndarray:
    """(1 - floor) E[x²] + floor · mean E[x²]: keeps every q_i > 0 when floor > 0 (ε = 0: docs/papers.md)."""
    moments = np.maximum(np.asarray(moments, dtype=np.float64), 0.0)
    if not moments.sum() > 0:
        return np.ones_like(moments)
    floored: np.ndarray = (1.0 - floor) * moments + floor * moments.mean()
    return floored


def check_floor(algorithm_id: str, floor: float) -> float:
    if not 0.0 <= floor <= 1.0:
        raise ParamError(f"{algorithm_id}: floor must be in [0, 1], got {floor}")
    return floor


def data_dependent_engine(
    algorithm: AttributeEfficient, moments: np.ndarray, step: StepRule, start: np.ndarray | None = None
) -> SampledGradient:
    """The geometry's optimal q given ``moments`` (eq. (4) or Lemma 4.3) and p ∝ |w_j| sqrt(moments_j), each over the
    price for a cost-aware algorithm (its ``prices``, ``shared.prices``), w starting at ``start`` (0); the budget split
    and B are the algorithm's, resolved."""
    d = algorithm.problem.d
    prices = algorithm.prices.relative(algorithm.problem)
    x_draws, inner_draws = algorithm.split()
    assert algorithm.B is not None
    iterate = algorithm.geometry.iterate(d, algorithm.B, inner_product_weights(moments, prices), start)
    sampler = DataPointSampler(d, algorithm.geometry.data_point_weights(moments, prices))
    return SampledGradient(iterate, sampler, x_draws, inner_draws, step, algorithm.rng)
