"""The iterates w_t of the importance-sampled learners, updated in time independent of d.

Each example changes the direction of w in at most k coordinates, but the math also rescales all
of w (the L2 projection of OGD, the normaliser of EG) and averages all iterates. Both iterates keep
w = scale · y with y changed in the touched coordinates only:

- ``RidgeIterate`` (H&K Alg. 1, K&S Alg. 1): y = v, and projecting onto ||w||_2 <= B only changes scale.
- ``LassoIterate`` (H&K Alg. 2, K&S Alg. 3): y = z+ - z-, scale = B / (||z+||_1 + ||z-||_1), and the
  multiplicative update touches z± only where the clipped gradient is non-zero.

The running sum Σ_t w_t is kept lazily as acc + u + C·y, with C the sum of the scales so far: when
y_i moves by Δ, u_i -= C·Δ. That sum is folded into ``acc`` (O(d), rare) before C/scale grows large
enough for u and C·y to cancel badly, and y is renormalised before its entries over- or underflow.

A sum tree holds the sampling weights of the inner-product draw (p_j ∝ |y_j|^power · c_j, so the
scale cancels); the norms the geometry needs (Σ y_j² for ridge, Σ z± for lasso) are running totals,
or the sum tree itself when p ∝ y².
"""

from __future__ import annotations

import math

import numpy as np

from learner.algorithms.shared.sumtree import RunningTotal, SumTree

# Fold the lazy sum once C/scale exceeds this: u and C·y are then at most ~1e6 |w| and cancel to
# well within 1e-9 relative error.
FLUSH_RATIO = 1e6
# Renormalise y once its scale leaves this range, long before y_j^2 or z± can overflow.
SCALE_LIMIT = 1e50


class ScaledIterate:
    """w = scale · y with a lazy running sum of the iterates and a sampling tree for p_j ∝ |w_j|^power c_j."""

    def __init__(self, y: np.ndarray, scale: float, power: int, c: np.ndarray | None) -> None:
        self.d = int(y.shape[0])
        self.y = np.array(y, dtype=np.float64)
        self.scale = float(scale)
        self.power = power
        self.c = None if c is None else np.asarray(c, dtype=np.float64)
        self._c_list = None if self.c is None else self.c.tolist()
        self.tree = SumTree(self._sampling_weights())
        self._powers = np.full(self.d, float(power))
        self._u = np.zeros(self.d)
        self._acc = np.zeros(self.d)
        self._C = 0.0
        self.count = 0

    def _sampling_weights(self) -> np.ndarray:
        weights = np.abs(self.y) ** self.power
        return weights if self.c is None else weights * self.c

    # --- the output -------------------------------------------------------------------------------

    def current(self) -> np.ndarray:
        return self.scale * self.y

    def average(self) -> np.ndarray:
        """(1/T) Σ_{t<=T} w_t over the iterates used so far; w_1 before any step."""
        if self.count == 0:
            return self.current()
        return (self._acc + self._u + self._C * self.y) / self.count

    # --- the inner-product draw -------------------------------------------------------------------

    @property
    def is_zero(self) -> bool:
        """w = 0: <w, x> is exactly 0 and p is undefined, so no inner-product draw is needed."""
        return self.tree.total <= 0.0

    def sample(self, uniform: float) -> tuple[int, float]:
        """A draw j ~ p (p_j ∝ |w_j|^power c_j) and its weight w_j / p_j."""
        tree = self.tree
        total = tree.total
        j = tree.find(uniform * total)  # tree.sample(uniform), its total read once
        y_j: float = self.y.item(j)
        c_j = 1.0 if self._c_list is None else self._c_list[j]
        return j, self.scale * total * y_j / (abs(y_j) ** self.power * c_j)

    def sample_many(self, uniforms: list[float]) -> tuple[list[int], list[float]]:
        """``sample`` of each of ``uniforms``: the draws and their weights (the same floats, in the same order)."""
        if len(uniforms) < 2:  # one draw (AERR's): NumPy's indexing would cost more than it saves
            if not uniforms:
                return [], []
            j, ratio = self.sample(uniforms[0])
            return [j], [ratio]
        tree = self.tree
        total = tree.total
        drawn = [tree.find(u * total) for u in uniforms]
        values: list[float] = self.y[drawn].tolist()
        power, c, factor = self.power, self._c_list, self.scale * total
        if c is None:
            return drawn, [factor * v / abs(v) ** power for v in values]
        return drawn, [factor * v / (abs(v) ** power * c[j]) for j, v in zip(drawn, values, strict=True)]

    # --- lazy bookkeeping the geometries build on ------------------------------------------------

    def _advance(self) -> None:
        """Add the current iterate w_t to the running sum (called once per example, before it moves)."""
        self.count += 1
        self._C += self.scale

    def _move(self, at: np.ndarray, old: np.ndarray, new: np.ndarray) -> None:
        """Set y at the distinct coordinates ``at`` (an index array; ``old``: y there) to ``new``, keeping the running
        sum and the sampling tree right. Each element goes through the operations a coordinate-at-a-time loop gives it
        (the same IEEE results), and each node of the tree above the moved leaves is recomputed once
        (``SumTree.set_array``: the same tree whatever the order)."""
        self._u[at] -= self._C * (new - old)
        self.y[at] = new
        # |v| ** power as Python's float power computes it (the C library's pow): np.power with an array of exponents
        # calls it per element, where a scalar exponent 2 would square, which differs in the last bit (0.08 % of them);
        # pow(v, 1) is v
        weights = np.abs(new)
        if self.power != 1:
            np.power(weights, self._powers[: len(at)], out=weights)
        self.tree.set_array(at, weights if self.c is None else weights * self.c[at])

    def _flush(self) -> None:
        self._acc += self._u + self._C * self.y
        self._u.fill(0.0)
        self._C = 0.0

    def _maintain(self) -> None:
        if self._C > FLUSH_RATIO * self.scale:
            self._flush()

    def step(self, at: np.ndarray, gradient: np.ndarray, eta: float) -> None:
        """One step of the geometry's update (ridge or lasso) with a sparse gradient estimate: its values ``gradient``
        at the distinct coordinates ``at``."""
        raise NotImplementedError

    @staticmethod
    def moving(at: np.ndarray, gradient: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The coordinates a step moves (a non-zero gradient) and their gradient, in the order given."""
        # Their indices, not a mask (indexing by a mask, and gradient.all(), cost a few times more: 0.9 us against 2.5)
        nonzero = gradient.nonzero()[0]
        if len(nonzero) == len(gradient):
            return at, gradient
        return at[nonzero], gradient[nonzero]


class RidgeIterate(ScaledIterate):
    """Online gradient descent on the L2 ball of radius B (w_1 given, 0 by default)."""

    def __init__(self, d: int, B: float, power: int = 2, c: np.ndarray | None = None, start: np.ndarray | None = None):
        y = np.zeros(d) if start is None else np.asarray(start, dtype=np.float64)
        super().__init__(y, 1.0, power, c)
        self.B = B
        # p ∝ w² already sums y²; other sampling weights need their own running Σ y² for ||w||_2.
        self._norm = self.tree if power == 2 and c is None else RunningTotal(self.y**2)

    def step(self, at: np.ndarray, gradient: np.ndarray, eta: float) -> None:
        """v = w - η g̃, then w = v · B / max(||v||_2, B) (H&K Alg. 1 lines 11-12)."""
        self._advance()
        shift = eta / self.scale
        at, gradient = self.moving(at, gradient)
        if at.size:
            old = self.y[at]
            new = old - shift * gradient
            self._move(at, old, new)
            if isinstance(self._norm, RunningTotal):  # its own Σ y² (the tree holds another weight): set in order
                self._norm.set_many(at.tolist(), (new * new).tolist())
        norm = self.scale * math.sqrt(self._norm.total)
        if norm > self.B:
            self.scale *= self.B / norm
        self._maintain()
        if not 1.0 / SCALE_LIMIT < self.scale < SCALE_LIMIT:
            self._renormalise()

    def _renormalise(self) -> None:
        self._flush()
        self.y *= self.scale
        self.scale = 1.0
        self.tree.rebuild(self._sampling_weights())
        if self._norm is not self.tree:
            self._norm.rebuild(self.y**2)


class LassoIterate(ScaledIterate):
    """Exponentiated gradient ± on the L1 ball of radius B: w = B (z+ - z-) / (||z+||_1 + ||z-||_1).

    Starts at z+ = z- = 1 (w = 0), or at a given w_1 with ||w_1||_1 <= B written as
    z± = max(±w_1, 0) + c with c > 0 spreading the remaining mass, so no coordinate is stuck at 0.
    """

    def __init__(self, d: int, B: float, power: int = 1, c: np.ndarray | None = None, start: np.ndarray | None = None):
        if start is None:
            z_plus, z_minus = np.ones(d), np.ones(d)
        else:
            start = np.asarray(start, dtype=np.float64)
            spare = max(B - float(np.abs(start).sum()), 1e-6 * B) / (2 * d)
            z_plus = np.maximum(start, 0.0) + spare
            z_minus = np.maximum(-start, 0.0) + spare
        self.z_plus, self.z_minus = z_plus, z_minus
        self._mass = RunningTotal(z_plus + z_minus)
        self.B = B
        super().__init__(z_plus - z_minus, B / self._mass.total, power, c)

    def step(self, at: np.ndarray, gradient: np.ndarray, eta: float) -> None:
        """ḡ = clip(g̃, 1/η); z+ *= exp(-η ḡ), z- *= exp(η ḡ) (H&K Alg. 2 lines 12-16), then renormalise w."""
        self._advance()
        limit = 1.0 / eta if eta > 0 else math.inf  # η = 0: an adaptive step before any non-zero gradient
        at, gradient = self.moving(at, gradient)
        if at.size:
            # math.exp per coordinate, as before: NumPy's vectorised exp may round differently in the last bit.
            factors = np.array([math.exp(-eta * max(-limit, min(limit, g))) for g in gradient.tolist()])
            zp = self.z_plus[at] * factors
            zm = self.z_minus[at] / factors
            self.z_plus[at] = zp
            self.z_minus[at] = zm
            self._mass.set_many(at.tolist(), (zp + zm).tolist())
            self._move(at, self.y[at], zp - zm)
        total = self._mass.total
        self.scale = self.B / total
        self._maintain()
        if not 1.0 / SCALE_LIMIT < total < SCALE_LIMIT:
            self._renormalise(total)

    def _renormalise(self, total: float) -> None:
        """Divide z± by their total (w is invariant), so they stay far from overflow and underflow."""
        self._flush()
        self.z_plus /= total
        self.z_minus /= total
        self.y = self.z_plus - self.z_minus
        self._mass.rebuild(self.z_plus + self.z_minus)
        self.tree.rebuild(self._sampling_weights())
        self.scale = self.B / self._mass.total
