"""Shared machinery of Ito et al. (2017), "Efficient Sublinear-Regret Algorithms for Online Sparse Linear
Regression with Limited Observation" (NIPS 2017), §4.

- ``observe``: the procedure Observe(w, k', k1) — the k1 largest |w_i| (the set U_t) plus k' - k1 attributes
  drawn uniformly without replacement from the rest (V_t). The paper does not say how ties in |w_i| are broken
  (every |w_i| ties at w_1 = 0); we break them uniformly at random with the algorithm's rng. The estimator below
  is unbiased conditionally on U_t, so any tie rule keeps it unbiased.
- ``estimate_gradient``: the unbiased estimator (6), ĝ_t = 2 X_t w_t - 2 y_t z_t with X_t = (x_i x_j / p_ij) and
  z_t = (x_i / p_i) on S_t, using the exact inclusion probabilities of Observe given U_t (Observation 1 only states
  the lower bound C_{d,k',k1} on them).
- ``dual_averaging``: the closed form (5) of w_t = argmin_{||w|| <= r} <ĥ, w> + λ/2 ||w||², with an optional l1 term
  τ||w||_1 (Algorithm 3, Xiao's l1-RDA), whose minimiser is the soft-thresholded ĥ scaled into the ball.
- ``LambdaSchedule``: the sequence λ_t. Theorem 2's λ_t = 8 sqrt(t / C_{d,k',k1}) is Lemma 4's optimum
  2 sqrt(t G) for the worst-case bound G = 16 / C on E||ĝ_t||² (||x|| <= 1, |y| <= 1). On any instance whose
  features do not fill the unit ball that bound is loose by orders of magnitude (about 7,000x for
  ``online-sparse`` with (d, k, k') = (10, 2, 4): E||ĝ_t||² ~ 0.1 against 16 / C = 720), and the iterate
  w_t = -ĥ_{t-1} / λ_t stays near 0 for all T = 5,000 rounds: Algorithm 1, greedy and uniform then all predict
  about 0 and their regrets are equal, far from Table 2. The default (``lambda_rule=adaptive``) is therefore
  the same optimum with the realised gradients, λ_t = 2 sqrt(sum_{s<t} ||ĝ_s||²) (AdaGrad-style dual
  averaging); by Jensen E[sqrt(sum ||ĝ_s||²)] <= sqrt(16 T / C), so Theorem 2's bound still holds up to the
  one-round lag of the sum. ``lambda_rule=theorem`` restores Theorem 2's schedule, and ``lambda_scale`` fixes
  λ_t = lambda_scale sqrt(t).
- Scale (the bounds the theorems use: max ||x||_2, max |y|, ||w*||_2, declared by the oracle). The paper assumes
  ||x|| <= 1, |y| <= 1 and ||w*|| <= 1. The ball of the iterates (``radius``) defaults to the declared ||w*||_2
  bound widened to max|y| / max||x||_2; on x' = x / max||x||_2 the theorem's λ'_t is λ'_t max||x||_2² on w
  (w = -ĥ / λ, and ĥ carries two factors of x), so ``lambda_rule=theorem`` multiplies Theorem 2's schedule by
  max||x||_2². The adaptive rule needs no scale: it measures the gradients themselves.
- ``DualAveragingLearner``: Algorithm 1's loop (w_t by (5), S_t by Observe, prediction w_t' D_t x_t, ĝ_t by (6))
  with the number k1 of surely-observed attributes left to the subclass: Algorithm 1 itself and the greedy and
  uniform baselines of §6 differ only in it.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

import numpy as np

from learner.algorithms.base import Algorithm, DataScale, Observed, ParamError, Problem

# Theorem 2 sets λ_t = 8 sqrt(t / C_{d,k',k1}); Lemma 4 with G_t <= 16/C is what makes 8 the optimal constant.
THEOREM_LAMBDA_FACTOR = 8.0
# Lemma 4's sum_t G_t / λ_t + λ_{T+1} / 2 is smallest for λ_t = 2 sqrt(sum_{s<=t} G_s).
ADAPTIVE_LAMBDA_FACTOR = 2.0
ADAPTIVE: Final = "adaptive"
LAMBDA_RULES = (ADAPTIVE, "theorem")


@dataclass(frozen=True)
class ObservePlan:
    """One draw of Observe(w, k', k1): the attributes of ``surely`` (U_t, a mask over [d]) are observed surely,
    ``n_random`` more are drawn uniformly without replacement from the rest; ``selected`` = S_t = U_t ∪ V_t.
    ``single`` and ``double`` are Prob[i ∈ S_t] and Prob[i, j ∈ S_t] for attributes i ≠ j outside U_t."""

    surely: np.ndarray
    n_random: int
    selected: np.ndarray
    single: float = field(init=False)
    double: float = field(init=False)

    def __post_init__(self) -> None:
        rest = self.d - int(self.surely.sum())
        m = self.n_random
        # Set once here, not on each use: the estimate (6) reads them twice a round.
        object.__setattr__(self, "single", m / rest if rest else 1.0)
        object.__setattr__(self, "double", m * (m - 1) / (rest * (rest - 1)) if rest > 1 else 1.0)

    @property
    def d(self) -> int:
        return len(self.surely)

    def inclusion(self, attributes: np.ndarray) -> np.ndarray:
        """p_i = Prob[i ∈ S_t] given U_t."""
        return np.where(self.surely[attributes], 1.0, self.single)

    def pair_inclusion(self, attributes: np.ndarray, inclusion: np.ndarray | None = None) -> np.ndarray:
        """p_ij = Prob[i, j ∈ S_t] given U_t (p_ii = p_i on the diagonal: ``inclusion``, if given, is p_i)."""
        single, double = self.single, self.double
        random_part = (~self.surely[attributes]).astype(np.int64)
        pairs: np.ndarray = np.array([1.0, single, double])[random_part[:, None] + random_part[None, :]]
        # np.fill_diagonal's own assignment, without its checks
        pairs.flat[:: len(attributes) + 1] = self.inclusion(attributes) if inclusion is None else inclusion
        return pairs


def largest(w: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of the ``count`` largest |w_i|, ties broken uniformly at random."""
    shuffled = rng.permutation(len(w))
    order = shuffled[np.argsort(-np.abs(w[shuffled]), kind="stable")]
    return np.sort(order[:count])


def observe(w: np.ndarray, k_prime: int, k1: int, rng: np.random.Generator) -> ObservePlan:
    """Observe(w, k', k1) of §4: U_t = the k1 largest |w_i|, V_t = k' - k1 uniform draws from [d] \\ U_t."""
    surely = np.zeros(len(w), dtype=bool)
    top = largest(w, k1, rng)
    surely[top] = True
    rest = np.flatnonzero(~surely)
    n_random = min(k_prime - k1, len(rest))
    drawn = rng.choice(rest, size=n_random, replace=False)
    # U_t and V_t are disjoint: S_t in increasing order is their sorted union.
    selected = np.sort(np.concatenate((top, drawn))) if n_random else top
    return ObservePlan(surely=surely, n_random=n_random, selected=selected)


def pair_constant(d: int, k_prime: int, k1: int) -> float:
    """C_{d,k',k1} = (k' - k1)(k' - k1 - 1) / (d(d - 1)), Observation 1's lower bound on every p_ij."""
    return (k_prime - k1) * (k_prime - k1 - 1) / (d * (d - 1)) if d > 1 else 1.0


def estimate_gradient(w: np.ndarray, observed: Observed, y: float, plan: ObservePlan) -> np.ndarray:
    """ĝ_t of (6): an unbiased estimate of ∇(w'x - y)² = 2x(x'w - y) from the attributes S_t of ``plan``."""
    attributes = np.fromiter(observed.keys(), dtype=np.int64, count=len(observed))
    x = np.fromiter(observed.values(), dtype=np.float64, count=len(observed))
    inclusion = plan.inclusion(attributes)
    X = x[:, None] * x[None, :] / plan.pair_inclusion(attributes, inclusion)  # np.outer's own product
    g = np.zeros(plan.d)
    g[attributes] = 2.0 * (X @ w[attributes]) - 2.0 * y * x / inclusion
    return g


def dual_averaging(h: np.ndarray, lam: float, radius: float, l1: float = 0.0) -> np.ndarray:
    """argmin_{||w|| <= radius} <h, w> + l1 ||w||_1 + lam/2 ||w||² = -u / max(lam, ||u|| / radius), u = soft(h, l1)."""
    u = np.sign(h) * np.maximum(np.abs(h) - l1, 0.0) if l1 > 0 else h
    scale = max(lam, math.sqrt(float(u @ u)) / radius)  # np.linalg.norm's own sqrt(u·u), without its checks
    # u = 0 (no gradient yet, or all of it thresholded away) has the minimiser 0 whatever λ is, λ = 0 included.
    return -u / scale if scale > 0 else np.zeros_like(h)


class LambdaSchedule:
    """λ_t of the dual averaging: ``scale`` sqrt(t) if a scale is fixed, else 2 sqrt(sum of the recorded ||g||²)."""

    def __init__(self, scale: float | None) -> None:
        self.scale = scale
        self._energy = 0.0

    def record(self, g: np.ndarray) -> None:
        self._energy += float(g @ g)

    def at(self, t: int) -> float:
        if self.scale is not None:
            return self.scale * math.sqrt(t)
        return ADAPTIVE_LAMBDA_FACTOR * math.sqrt(self._energy)


def lambda_schedule(algorithm_id: str, rule: str, fixed: float | Literal["adaptive"] | None, theorem_scale: float,
                    name: str = "lambda_scale") -> tuple[LambdaSchedule, float | Literal["adaptive"]]:
    """The schedule the rule (``lambda_rule``) and the fixed factor (the parameter ``name``) ask for, and the factor in
    effect: ``theorem_scale`` is the theorem's, ``ADAPTIVE`` the adaptive rule's, which has none."""
    if rule not in LAMBDA_RULES:
        raise ParamError(f"{algorithm_id}: lambda_rule must be one of {', '.join(LAMBDA_RULES)}, got {rule!r}")
    if fixed is None:
        fixed = ADAPTIVE if rule == ADAPTIVE else theorem_scale
    if fixed == ADAPTIVE:
        return LambdaSchedule(None), ADAPTIVE
    if float(fixed) <= 0:
        raise ParamError(f"{algorithm_id}: {name} must be positive, got {fixed}")
    return LambdaSchedule(float(fixed)), float(fixed)


def ball_radius(algorithm_id: str, scale: DataScale, given: float | None) -> float:
    """The ``radius`` parameter, or the declared scale's L2 ball (see the module docstring)."""
    radius = scale.radius2(given)
    if radius <= 0:
        raise ParamError(f"{algorithm_id}: radius must be positive")
    return radius


class DualAveragingLearner(Algorithm):
    """Algorithm 1's loop; subclasses choose k1, the number of largest-weight attributes observed surely.

    Parameters
    ----------
    k
        sparsity k of the comparator (default k' - 2, the largest Algorithm 1 supports)
    lambda_rule
        adaptive: λ_t = 2 sqrt(sum_{s<t} ||ĝ_s||²) (Lemma 4's optimum with the realised gradients); theorem: Theorem 2's
        8 sqrt(t / C_{d,k',k1})
    lambda_scale
        fix λ_t = lambda_scale * sqrt(t) instead (overrides lambda_rule); 'adaptive' asks for the adaptive rule, and is
        what a run under it records
    radius
        the iterates stay in ||w|| <= radius; default the declared ||w*||_2 bound, at least max|y| / max||x||_2 (the
        paper's ||w*|| <= 1 for ||x|| <= 1, |y| <= 1)
    """

    protocol = "online"
    needs_scale = True
    min_budget = 2  # estimator (6) needs every pair of attributes observable together

    def __init__(self, problem: Problem, seed: int = 0, *, k: int | None = None,
                 lambda_rule: Literal["adaptive", "theorem"] = "adaptive",
                 lambda_scale: float | Literal["adaptive"] | None = None, radius: float | None = None) -> None:
        super().__init__(problem, seed)
        d, self.k_prime = problem.d, problem.budget
        self.k = self.k_prime - 2 if k is None else k
        if self.k < 0:
            raise ParamError(f"{self.id}: the sparsity k must be >= 0, got {self.k}")
        self.k1 = self.top_count()
        if not 0 <= self.k1 <= self.k_prime:
            raise ParamError(f"{self.id}: k1 must be in 0..{self.k_prime}, got {self.k1}")
        x_sq = problem.scale.max_norm2**2
        self.lambda_rule = lambda_rule
        self.lambdas, self.lambda_scale = lambda_schedule(
            self.id, lambda_rule, lambda_scale,
            THEOREM_LAMBDA_FACTOR / math.sqrt(pair_constant(d, self.k_prime, self.lambda_k1())) * x_sq)
        self.radius = ball_radius(self.id, problem.scale, radius)
        self._h = np.zeros(d)  # ĥ_{t-1}, the sum of the gradient estimates so far
        self._t = 1
        self._w = np.zeros(d)
        self._plan: ObservePlan | None = None

    @abstractmethod
    def top_count(self) -> int:
        """k1: how many of the largest |w_i| Observe takes surely (the other k' - k1 are uniform)."""

    def lambda_k1(self) -> int:
        """The k1 of Theorem 2's λ_t (``lambda_rule=theorem``): Algorithm 1's own choice k1 = k, so the baselines
        learn at its pace."""
        return min(self.k, self.k_prime - 2)

    def _iterate(self, t: int) -> np.ndarray:
        return dual_averaging(self._h, self.lambdas.at(t), self.radius)

    def select(self) -> Sequence[int]:
        self._w = self._iterate(self._t)
        self._plan = observe(self._w, self.k_prime, self.k1, self.rng)
        selected: list[int] = self._plan.selected.tolist()
        return selected

    def update(self, observed: Observed, y: float) -> None:
        if self._plan is None:
            raise RuntimeError("update() before select()")
        g = estimate_gradient(self._w, observed, y, self._plan)
        self._h += g
        self.lambdas.record(g)
        self._t += 1
        self._plan = None

    def current_weights(self) -> np.ndarray:
        return self._w

    @property
    def weights(self) -> np.ndarray:
        """w_{t+1}: the dual-averaging iterate from every gradient estimate so far."""
        return self._iterate(self._t)
