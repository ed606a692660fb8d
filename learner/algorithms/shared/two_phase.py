"""The two phases of Kukliansky & Shamir's (2015) two-phased learners (Algorithms 2 and 4: ``ddaerr-2phase``,
``ddaelr-2phase`` and their cost-aware variants), as an engine the learner runs: phase 1's engine on the first m_1
examples while A[i] averages the observed x_i², then phase 2's, which the learner makes from A (its constructor and
``second_phase``: the choices are in their docstrings).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from learner.algorithms.base import Observed, ParamError
from learner.algorithms.shared.attribute_efficient import DataPointSampler, SampledGradient
from learner.algorithms.shared.iterates import ScaledIterate
from learner.algorithms.shared.step_sizes import StepRule


def phase_lengths(algorithm_id: str, share: float, m: int) -> tuple[int, int]:
    """(m_1, m_2): the examples of each phase, m_1 = ``share`` · m of the run's m (at least 1 in phase 2)."""
    if not 0.0 <= share < 1.0:
        raise ParamError(f"{algorithm_id}: phase1 must be in [0, 1), got {share}")
    m1 = round(share * m)
    return m1, max(m - m1, 1)


class TwoPhases:
    """The engine of a two-phased learner, which reads as the engine of the phase it is in (``iterate``, ``step``,
    ``sampler``): ``first`` on the first m_1 examples, while A[i] counts the squares of every value observed (each
    distinct attribute of an example once), then the engine ``second`` makes from A and phase 1's average iterate
    (immediately, from A = 0, when m_1 = 0)."""

    def __init__(self, d: int, m1: int, first: SampledGradient | None,
                 second: Callable[[np.ndarray, np.ndarray | None], SampledGradient]) -> None:
        self.m1 = m1
        self.second = second
        self.counts = np.zeros(d)
        self.square_sums = np.zeros(d)
        self.seen = 0
        self.phase = 1
        if first is None or m1 == 0:
            self.phase = 2
            first = second(self.moment_estimates(), None)
        else:
            first.horizon = m1  # its draws take no number of the generator phase 2 draws from
        self.current = first

    @property
    def iterate(self) -> ScaledIterate:
        return self.current.iterate

    @property
    def step(self) -> StepRule:
        return self.current.step

    @property
    def sampler(self) -> DataPointSampler:
        return self.current.sampler

    def select(self) -> list[int]:
        return self.current.select()

    def update(self, observed: Observed, y: float) -> None:
        if self.phase == 1:  # each attribute once: an example's are distinct
            at = np.fromiter(observed.keys(), dtype=np.int64, count=len(observed))
            values = np.fromiter(observed.values(), dtype=np.float64, count=len(observed))
            self.counts[at] += 1
            self.square_sums[at] += values * values
        self.current.update(observed, y)
        self.seen += 1
        if self.phase == 1 and self.seen == self.m1:
            self.phase = 2
            self.current = self.second(self.moment_estimates(), self.current.iterate.average())

    def moment_estimates(self) -> np.ndarray:
        """A[i] = square_sums[i] / counts[i] (Algorithm 2/4 line 8), 0 for attributes never observed."""
        return np.divide(self.square_sums, self.counts, out=np.zeros_like(self.square_sums), where=self.counts > 0)
