"""Baseline: Lasso on an estimated loss — Cesa-Bianchi, Shalev-Shwartz, Shamir (2011), Fig. 1.

Each example contributes unbiased-ish estimates of xx', x and y² from k uniformly chosen attributes;
the output minimises the estimated training loss w'Āw − w'v̄ + ȳ over the L1 ball of radius B.

Choices the paper leaves open or gets wrong (see docs/papers.md):

- Sign. Fig. 1 (and Lemma 10) print the estimated loss as w'Āw + w'v̄ + ȳ; with v̄ = mean(2 y v) the
  squared loss expands to w'Āw − w'v̄ + ȳ. Both variants below use the corrected sign.
- Diagonal. Fig. 1 splits the k chosen attributes C into halves I, J and fills only the I×J entries
  (weight 2(d/k)² each way), so Ā has no diagonal and E[A] = d/(d−1)·(xx' − diag(x²)), not xx' as
  Lemma 8 says; the objective is indefinite. ``estimate="printed"`` (the default) keeps that
  construction: it is the Baseline of the paper's Fig. 4 and table, the algorithm whose estimate the
  paper's analysis calls much worse than AER's. ``estimate="unbiased"`` gives E[A] = xx': diagonal
  (d/k)·x_c² for c ∈ C and every pair of C off the diagonal with weight d(d−1)/(k(k−1)), so the
  objective estimate is unbiased for the loss of every fixed w (a stronger Baseline than the paper's).
- k must be even in the paper; an odd budget uses its largest even part.
- The minimiser over the L1 ball is found by projected gradient descent (step 1/(2 max|eig Ā|), warm
  started from the previous solution), which also reaches a stationary point of the indefinite printed
  objective. It is recomputed lazily when ``weights`` is read after new examples.
- Scale (the bounds this theorem uses: max |x_i|, max |y|, ||w*||_1, declared by the oracle). Theorem 6
  assumes ||x||_∞ <= 1 and |y| <= B, and compares with ||w||_1 <= B: B defaults to the declared ||w*||_1
  bound widened to max|y| / max|x_i|, the ball of the theorem for the data scaled into the unit L∞ ball.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from learner.algorithms.base import Algorithm, Observed, ParamError, Problem
from learner.algorithms.cesa_bianchi_2011 import PAPER
from learner.algorithms.shared.l1_projection import project_l1_ball
from learner.algorithms.shared.lookahead import Ahead, window

SOLVER_ITERATIONS = 2000
SOLVER_TOLERANCE = 1e-9


def largest_magnitude_eigenvalue(A: np.ndarray) -> float:
    """max |λ| of the symmetric ``A``, from its principal submatrix on the attributes whose row is not all zero.

    The others (attributes never seen non-zero, e.g. an image's border pixels) add only zero eigenvalues, so the
    value is the same up to rounding (within 3e-15 relative of the whole matrix's on MNIST and Fashion-MNIST runs,
    2026-11-29), and a fit of Baseline on the 900-image MNIST subset decomposes 12-200 rows instead of 784: the
    whole matrix's eigenvalues were three quarters of a run's time. When no row is zero the submatrix is ``A``
    itself, the same computation bit for bit.
    """
    seen = np.flatnonzero(np.any(A != 0, axis=0))
    if seen.size == 0:
        return 0.0
    block = A if seen.size == A.shape[0] else A[np.ix_(seen, seen)]
    return float(np.max(np.abs(np.linalg.eigvalsh(block))))


class AERBaseline(Algorithm):
    """Baseline of Cesa-Bianchi et al.: minimise an estimated squared loss over the L1 ball.

    Parameters
    ----------
    radius
        L1 radius B of the constraint; default the declared ||w*||_1 bound, at least max|y| / max|x_i| (Theorem 6: |y| ≤
        B)
    estimate
        'printed': Fig. 1's I×J construction, no diagonal (the paper's Baseline); 'unbiased': E[A] = xx'
    """

    id = "aer-baseline"
    name = "Baseline (Lasso on an estimated loss)"
    paper = PAPER
    algorithm = "Fig. 1"
    protocol = "batch"
    budget_kind = "local"
    min_budget = 2
    needs_scale = True

    def __init__(self, problem: Problem, seed: int = 0, *, radius: float | None = None,
                 estimate: Literal["printed", "unbiased"] = "printed") -> None:
        super().__init__(problem, seed)
        self.estimate = estimate
        d = problem.d
        self.k = problem.budget - problem.budget % 2
        self.radius = problem.scale.radius1(radius)
        if self.radius <= 0:
            raise ParamError(f"radius must be positive, got {self.radius}")
        self.A_sum = np.zeros((d, d))
        self.v_sum = np.zeros(d)
        self.y2_sum = 0.0
        self.m = 0
        self._chosen = np.empty(0, dtype=np.int64)
        self._ahead: Ahead[np.ndarray] = Ahead()
        self._w = np.zeros(d)
        self._fitted_at = 0

    def _draw(self) -> np.ndarray:
        # A random order of C also provides Fig. 1's random split: I = first half, J = second half.
        return self.rng.choice(self.problem.d, size=self.k, replace=False)

    def select(self) -> Sequence[int]:
        self._chosen = self._draw()
        return sorted(self._chosen.tolist())

    def select_ahead(self, limit: int) -> list[Sequence[int]]:
        # Uniform draws, from a generator nothing else draws from: the same numbers whenever they are drawn.
        drawn = self._ahead.keep([self._draw() for _ in range(window(limit, None))])
        return [sorted(chosen.tolist()) for chosen in drawn]

    def example_estimates(self, observed: Observed) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(C, A restricted to C×C, v restricted to C) for the current draw."""
        d, k = self.problem.d, self.k
        C = self._chosen
        x = np.array([observed[c] for c in C.tolist()])
        v = (d / k) * x
        if self.estimate == "printed":
            half = k // 2
            block = np.zeros((k, k))
            cross = 2 * (d / k) ** 2 * np.outer(x[:half], x[half:])
            block[:half, half:] = cross
            block[half:, :half] = cross.T
        else:
            block = d * (d - 1) / (k * (k - 1)) * np.outer(x, x)
            np.fill_diagonal(block, (d / k) * x**2)
        return C, block, v

    def loss_estimate(self, observed: Observed, y: float, w: np.ndarray) -> float:
        """One example's estimate w'Aw − 2y w'v + y² of (w'x − y)² (unbiased for ``estimate='unbiased'``)."""
        C, block, v = self.example_estimates(observed)
        wc = w[C]
        return float(wc @ block @ wc - 2 * y * (wc @ v) + y**2)

    def update(self, observed: Observed, y: float) -> None:
        self._chosen = self._ahead.take(self._chosen)
        C, block, v = self.example_estimates(observed)
        self.A_sum[np.ix_(C, C)] += block
        self.v_sum[C] += 2 * y * v
        self.y2_sum += y**2
        self.m += 1

    def objective(self, w: np.ndarray) -> float:
        """The estimated training loss L̃_S(w) = w'Āw − w'v̄ + ȳ (sign corrected)."""
        m = max(self.m, 1)
        return float(w @ self.A_sum @ w - w @ self.v_sum + self.y2_sum) / m

    def _fit(self) -> np.ndarray:
        A = self.A_sum / self.m
        v = self.v_sum / self.m
        curvature = 2 * largest_magnitude_eigenvalue(A)
        # a zero Ā leaves a linear objective, which any step size walks to the best vertex
        step = 1.0 / curvature if curvature > 0 else 1.0
        w = self._w
        twice = 2 * A  # the gradient's 2Ā, formed once (``2 * A @ w`` is (2 * A) @ w: the same products)
        for _ in range(SOLVER_ITERATIONS):
            nxt = project_l1_ball(w - step * (twice @ w - v), self.radius)
            if np.max(np.abs(nxt - w)) <= SOLVER_TOLERANCE * max(1.0, np.max(np.abs(nxt))):
                return nxt
            w = nxt
        return w

    @property
    def weights(self) -> np.ndarray:
        if self.m and self._fitted_at != self.m:
            self._w = self._fit()
            self._fitted_at = self.m
        return self._w.copy()
