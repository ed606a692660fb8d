"""Exploration — Murata & Suzuki (2018), Algorithm 1: iterative hard thresholding with block-wise gradients.

The iterate θ is kept s-sparse by hard thresholding, so <θ, x> needs only the s attributes of
supp(θ). The other s' − s attributes of each example go to a fixed block J_i of the partition of [d]
into d' = ⌈d/(s'−s)⌉ consecutive blocks; example by example the blocks take turns, and after B examples
per block (d'·B examples) the concatenated block gradients g form an unbiased estimate of ∇L(θ) and

    θ ← H_s(θ − η g).

Choices the paper leaves open (see docs/papers.md; the paper gives no hyper-parameters):

- s' is the per-example budget k. s defaults to round(0.6 s') (30 at s' = 50, the working value on the §6
  design, docs/papers.md), clipped to 1 ≤ s < s'.
- η = 0.2 / max_i E[x_i²]. B (examples per block per update) is constant, as in Theorem 4.1. The working value
  of docs/papers.md is B = 100 (smaller batches diverge on the §6 design: hard thresholding keeps the noisiest
  coordinates), and ``defaults = "theory"`` keeps it. But one update then needs d'·100 examples: 25,000 at
  d = 500 and a budget of 5, so a run of a few thousand examples never updates and stays at θ = 0. The practical
  default sizes B to the run: B = m / (4 d'), at least 10 and at most 100 (``practical_batch``), so that the m
  examples make about 4 updates where 10 examples per block allow it (below 10 the batches diverged on every
  dataset we tried), and the working 100 where the run is long enough for 4 updates of it (on the §6 design at
  d = 200 and m = 4,000, a batch of 40 for 10 updates left Exploration at a mean test MSE of 11.6 over seeds 0-3,
  against 4.0 with 100).
- Scale (the bound this theorem uses: the smoothness L_s of the loss on s-sparse vectors, which scales with
  E[x_i²], declared by the oracle as max_i E[x_i²]). Theorem 4.1 asks η = Θ(1/L_s); the working value
  0.2 is for the §6 design, x ~ N(0, I) (E[x_i²] = 1), so the default is 0.2 / max_i E[x_i²]: the same
  step on that design, and the same step relative to L_s on data of any scale.
- The loss is the paper's squared loss ℓ_y(a) = (a − y)², so ℓ'_y(a) = 2(a − y).
- θ_0 = 0, and ``weights`` is the latest iterate θ_t (the algorithm returns θ_T).
- Blocks are J_i = [(s'−s)(i−1)+1, (s'−s)i ∧ d] as in the paper; examples are assigned to them in
  turn, which for an i.i.d. stream is the paper's "sample (x_i^(b), y_i^(b)) for i ∈ [d'], b ∈ [B_t]".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from learner.algorithms.base import Algorithm, Observed, ParamError, Problem, around
from learner.algorithms.murata_suzuki_2018 import PAPER
from learner.algorithms.shared.hard_thresholding import hard_threshold, support
from learner.algorithms.shared.lookahead import window

SPARSITY_SHARE = 0.6
WORKING_ETA = 0.2  # η that works on the §6 design, where E[x_i²] = 1 (docs/papers.md)
WORKING_BATCH = 100  # B that works there (docs/papers.md): the theory defaults' batch
# The practical batch: about this many updates over the run, with batches of MIN_BATCH..WORKING_BATCH examples.
TARGET_UPDATES = 4
MIN_BATCH = 10
BATCH_DOC = ("mini-batch B_t: examples per block per update (d' = ⌈d/(k−s)⌉ blocks); default m/(4 d') in 10..100, "
             "about 4 updates over the run's m examples; theory: the working value 100")


def default_sparsity(budget: int) -> int:
    """s = round(0.6 s'), the working s ≈ 30 at s' = 50, kept in 1 ≤ s < s'."""
    return min(max(1, round(SPARSITY_SHARE * budget)), budget - 1)


def resolve_sparsity(value: int | None, budget: int) -> int:
    s = default_sparsity(budget) if value is None else value
    if not 1 <= s < budget:
        raise ParamError(f"the sparsity s must satisfy 1 <= s < s' = {budget} (the per-example budget), got {s}")
    return s


def practical_batch(problem: Problem, blocks: int) -> int:
    """B = m / (TARGET_UPDATES · d'), clipped to MIN_BATCH..WORKING_BATCH (see the module docstring)."""
    return min(WORKING_BATCH, max(MIN_BATCH, problem.n_examples // (TARGET_UPDATES * blocks)))


def resolve_batch(value: int | None, problem: Problem, blocks: int) -> int:
    if value is not None:
        return value
    return WORKING_BATCH if problem.theory else practical_batch(problem, blocks)


def resolve_eta(value: float | None, problem: Problem) -> float:
    """η as given, else the working 0.2 at E[x_i²] = 1 scaled to the declared max_i E[x_i²] (η = Θ(1/L_s))."""
    return WORKING_ETA / problem.scale.max_second_moment if value is None else value


def block_gradient(
    theta: np.ndarray, support_: np.ndarray, block: np.ndarray, observed: Observed, y: float
) -> np.ndarray:
    """ℓ'_y(θ|_S' x|_S) x|_J for S = supp(θ): one example's unbiased estimate of ∇L(θ)|_J (Algorithm 1).

    Unbiased because θ is supported on S, so θ|_S' x|_S = <θ, x> exactly.
    """
    on_support = support_.tolist()
    values = np.fromiter(map(observed.__getitem__, on_support), dtype=np.float64, count=len(on_support))
    # the products elementwise, then Python's sum of them one at a time, in order (NumPy's sums add in another)
    prediction = sum((theta[support_] * values).tolist())
    x_block = np.array([observed[j] for j in block.tolist()])
    gradient: np.ndarray = 2.0 * (prediction - y) * x_block
    return gradient


class Exploration(Algorithm):
    """Stochastic iterative hard thresholding with an unbiased block-wise mini-batch gradient.

    Parameters
    ----------
    eta
        constant step size η (Theorem 4.1: Θ(1/L_s)); default the working value 0.2 divided by max_i E[x_i²]
    s
        sparsity s of the iterate, s < s' = k; default round(0.6 k) (30 at k = 50)
    batch
        mini-batch B_t: examples per block per update (d' = ⌈d/(k−s)⌉ blocks); default m/(4 d') in 10..100, about 4
        updates over the run's m examples; theory: the working value 100
    """

    id = "exploration"
    name = "Exploration (hard-thresholded SGD, block-wise gradient)"
    paper = PAPER
    algorithm = "Algorithm 1"
    protocol = "batch"
    budget_kind = "local"
    min_budget = 2
    needs_scale = True

    def __init__(self, problem: Problem, seed: int = 0, *, eta: float | None = None, s: int | None = None,
                 batch: int | None = None) -> None:
        super().__init__(problem, seed)
        d, budget = problem.d, problem.budget
        self.eta = resolve_eta(eta, problem)
        self.s = resolve_sparsity(s, budget)
        width = budget - self.s
        self.blocks = [np.arange(start, min(start + width, d)) for start in range(0, d, width)]
        self.batch = resolve_batch(batch, problem, len(self.blocks))
        if self.eta <= 0 or self.batch < 1:
            raise ParamError("eta must be positive and batch at least 1")
        self.updates = 0
        self.start(np.zeros(d))

    def start(self, theta0: np.ndarray) -> None:
        """Begin from θ_0 = H_s(θ0), with an empty mini-batch (Hybrid restarts Exploration this way)."""
        self.theta = hard_threshold(np.asarray(theta0, dtype=float), self.s)
        self.support = support(self.theta)
        self._gradient_sum = np.zeros(self.problem.d)
        self._seen = 0

    @property
    def _block(self) -> np.ndarray:
        return self.blocks[self._seen % len(self.blocks)]

    def select(self) -> Sequence[int]:
        # np.union1d's sorted distinct indices, without its NumPy calls
        return sorted({*self.support.tolist(), *self._block.tolist()})

    @property
    def left(self) -> int:
        """The examples until the mini-batch is complete: until then the support stays, and each example's block is
        its turn's, so the choices are known ahead."""
        return len(self.blocks) * self.batch - self._seen

    def select_ahead(self, limit: int) -> list[Sequence[int]]:
        on_support, blocks = self.support.tolist(), self.blocks
        return [sorted({*on_support, *blocks[seen % len(blocks)].tolist()})
                for seen in range(self._seen, self._seen + window(limit, self.left))]

    def update(self, observed: Observed, y: float) -> None:
        block = self._block
        self._gradient_sum[block] += block_gradient(self.theta, self.support, block, observed, y)
        self._seen += 1
        if self._seen == len(self.blocks) * self.batch:
            self.step()

    def step(self) -> None:
        """θ_t = H_s(θ_{t−1} − η g_t) with g_t the mean block gradients of the completed mini-batch."""
        self.start(self.theta - self.eta * self._gradient_sum / self.batch)
        self.updates += 1

    @property
    def weights(self) -> np.ndarray:
        return self.theta.copy()

    def tuning_hint(self) -> dict[str, list[float]] | None:
        return murata_hint(self.updates, self.eta, self.batch)


def murata_hint(updates: int, eta: float, batch: int) -> dict[str, list[float]]:
    """No update made: smaller batches to try; else the step size."""
    return {"batch": [max(1, batch // 10), max(1, batch // 3), batch]} if updates == 0 else {"eta": around(eta)}
