"""Hybrid — Murata & Suzuki (2018), Algorithm 3: stages of Exploration followed by Exploitation.

Stage k runs T⁻_k updates of Exploration (Algorithm 1) from θ̃_{k−1}, then T_k updates of Exploitation
(Algorithm 2) on the support Exploration found, giving θ̃_k. Exploration keeps finding the support;
Exploitation, which observes only that support, converges much faster once it is right.

Choices the paper leaves open (see docs/papers.md; the paper gives no hyper-parameters):

- K is unbounded: stages follow one another until the stream ends.
- T⁻_k = 3, as Theorem 4.4 sets it.
- T_k = T̃ = ⌈log(d/(s'−s) ∨ 1) / log(1/(1−α̌))⌉ (Theorem 4.4, with its Θ(κ_s²) factor taken as 1),
  at least 1 so that every stage exploits; α̌ = Θ(1/κ_s) is a parameter, 1/2 by default.
- Mini-batches grow geometrically per stage (docs/papers.md): B⁻_{t,k} = B_{t,k} = ⌈B·(1/(1−α̌))^{k−1}⌉, the
  1/(1−α̌)^k growth of Theorem 4.4's B_k; B counts examples per block per Exploration update and
  examples per Exploitation update; it defaults to Exploration's (sized to the run, m / (4 d') in 10..100; with
  ``defaults = "theory"`` the working value 100), with η = 0.2 / max_i E[x_i²] (docs/papers.md, scaled as in
  ``exploration.py``) and s = round(0.6 s').
- ``weights`` is the latest iterate, of whichever phase is running.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from learner.algorithms.base import Algorithm, Observed, ParamError, Problem
from learner.algorithms.murata_suzuki_2018 import PAPER
from learner.algorithms.murata_suzuki_2018.exploitation import ExploitationPhase
from learner.algorithms.murata_suzuki_2018.exploration import Exploration, murata_hint


class Hybrid(Algorithm):
    """Alternating Exploration (support search) and Exploitation (descent on the support), growing batches.

    Parameters
    ----------
    eta
        constant step size η of both phases (Θ(1/L_s)); default 0.2 / max_i E[x_i²] as Exploration
    s
        sparsity s of the iterate, s < k; default round(0.6 k) (30 at k = 50)
    batch
        first stage's mini-batch B: examples per block (Exploration) / per update (Exploitation); default Exploration's
    alpha
        linear rate α̌ = Θ(1/κ_s): batches grow by 1/(1−α̌) per stage; sets T̃
    exploration_updates
        Exploration updates per stage, T⁻_k (Theorem 4.4: 3)
    exploitation_updates
        Exploitation updates per stage; default T̃ = ⌈log(d/(k−s) ∨ 1)/log(1/(1−α̌))⌉
    """

    id = "hybrid"
    name = "Hybrid (Exploration then Exploitation, per stage)"
    paper = PAPER
    algorithm = "Algorithm 3"
    protocol = "batch"
    budget_kind = "local"
    min_budget = 2
    needs_scale = True

    def __init__(self, problem: Problem, seed: int = 0, *, eta: float | None = None, s: int | None = None,
                 batch: int | None = None, alpha: float = 0.5, exploration_updates: int = 3,
                 exploitation_updates: int | None = None) -> None:
        super().__init__(problem, seed)
        self.exploration = Exploration(problem, seed, eta=eta, s=s, batch=batch)
        self.exploitation = ExploitationPhase(problem.d, self.exploration.eta, self.exploration.batch)
        self.eta, self.s, self.batch = self.exploration.eta, self.exploration.s, self.exploration.batch
        if not 0 < alpha < 1:
            raise ParamError(f"alpha must be in (0, 1), got {alpha}")
        self.alpha = alpha
        self.growth = 1.0 / (1.0 - alpha)
        self.exploration_updates = exploration_updates
        width = problem.budget - self.exploration.s
        t_tilde = math.ceil(math.log(max(problem.d / width, 1.0)) / math.log(self.growth))
        self.exploitation_updates = max(1, t_tilde) if exploitation_updates is None else exploitation_updates
        if self.exploration_updates < 1 or self.exploitation_updates < 1:
            raise ParamError("each stage needs at least one Exploration and one Exploitation update")
        self.base_batch = self.exploration.batch
        self.stage = 0
        self._begin_stage(np.zeros(problem.d))

    def _begin_stage(self, theta: np.ndarray) -> None:
        self.stage += 1
        batch = math.ceil(self.base_batch * self.growth ** (self.stage - 1))
        self.exploration.batch = batch
        self.exploitation.batch = batch
        self.exploration.start(theta)
        self._explored = self.exploration.updates
        self._exploited = self.exploitation.updates
        self.exploring = True

    def select(self) -> Sequence[int]:
        phase = self.exploration if self.exploring else self.exploitation
        return list(phase.select())

    def select_ahead(self, limit: int) -> list[Sequence[int]]:
        # Exploration's choices up to the end of its mini-batch (its last may end the phase); Exploitation's support
        # until the stage's last update, after which the next stage explores.
        if self.exploring:
            return self.exploration.select_ahead(limit)
        phase = self.exploitation
        updates_left = self.exploitation_updates - (phase.updates - self._exploited)
        return phase.select_ahead(limit, phase.examples_until(updates_left))

    def update(self, observed: Observed, y: float) -> None:
        if self.exploring:
            self.exploration.update(observed, y)
            if self.exploration.updates - self._explored == self.exploration_updates:
                self.exploitation.start(self.exploration.theta)
                self.exploring = False
            return
        self.exploitation.update(observed, y)
        if self.exploitation.updates - self._exploited == self.exploitation_updates:
            self._begin_stage(self.exploitation.theta)

    @property
    def weights(self) -> np.ndarray:
        phase = self.exploration if self.exploring else self.exploitation
        return phase.theta.copy()

    def tuning_hint(self) -> dict[str, list[float]] | None:
        return murata_hint(self.exploration.updates, self.exploration.eta, self.base_batch)
