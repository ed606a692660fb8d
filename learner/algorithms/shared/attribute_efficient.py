"""What the Hazan & Koren and Kukliansky & Shamir learners share: per example, draw k data-point
indices from q and a few inner-product indices from p(w), pay for the distinct ones, and take an
OGD (ridge) or EG (lasso) step along the estimated gradient φ̃ · x̃.

``SampledGradient`` is that loop on top of an iterate from ``shared.iterates``; ``AttributeEfficient`` is the
``Algorithm`` shell every public class of the family is, each one's constructor making its engine from its
parameters, its geometry (``shared.geometry``: the ridge or the lasso twin), its sampling and its step size.
Randomness: per example, one batch of U[0,1) numbers from the algorithm's generator, the data-point
draws first, then the inner-product draws (drawn even when w = 0 and not needed, so the stream of
numbers does not depend on the data).
"""

from __future__ import annotations

import bisect
import math
from typing import ClassVar, Literal, Protocol

import numpy as np

from learner.algorithms.base import Algorithm, Observed, PaidRow, ParamError, around
from learner.algorithms.shared.estimators import (
    COUNTED_UP_TO,
    distinct_draws,
    mean_products,
    squared_loss_gradient,
    sum_counted,
    sum_draws,
)
from learner.algorithms.shared.geometry import Geometry
from learner.algorithms.shared.iterates import ScaledIterate
from learner.algorithms.shared.prices import COST_BLIND, Prices
from learner.algorithms.shared.step_sizes import (
    ADAPTIVE,
    AtLeast,
    ExponentiatedStep,
    FixedStep,
    LeastSquaresStep,
    StepRule,
)

# Draws per example from which drawing them with NumPy costs less than one at a time (measured: 10 to 30 draws, a
# few us either way; 3 draws, a loop 1.5 us against 5)
VECTORISED_FROM = 10


class DataPointSampler:
    """Draws i ~ q for x̃: uniform (q_i = 1/d, H&K) or any fixed distribution (K&S), by bisection."""

    def __init__(self, d: int, q: np.ndarray | None = None) -> None:
        self.d = d
        self.q = None if q is None else np.asarray(q, dtype=np.float64) / float(np.sum(q))
        if self.q is not None:
            self._cumulative_array = np.cumsum(self.q)
            self._cumulative = self._cumulative_array.tolist()
            with np.errstate(divide="ignore"):
                self._inverse_array = 1.0 / self.q
            self._inverse = self._inverse_array.tolist()

    def probabilities(self) -> np.ndarray:
        return np.full(self.d, 1.0 / self.d) if self.q is None else self.q

    def draw(self, uniform: float) -> tuple[int, float]:
        """An index i ~ q and its weight 1/q_i; an index with q_i = 0 is never returned."""
        if self.q is None:
            return min(int(uniform * self.d), self.d - 1), float(self.d)
        cumulative = self._cumulative
        i = min(bisect.bisect_right(cumulative, uniform * cumulative[-1]), self.d - 1)
        while self._inverse[i] == math.inf:  # rounding at the very top can land past the last positive q
            i -= 1
        return i, self._inverse[i]

    def draw_many(self, uniforms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``draw`` of each of ``uniforms``: the indices and their weights 1/q_i, as arrays, at once from
        ``VECTORISED_FROM`` draws on (below, a loop costs less than NumPy's calls). The same indices: int() truncates
        as astype does (min(u·d, d - 1) truncated is min(int(u·d), d - 1)), and bisect_right finds what
        searchsorted's right side finds."""
        d = self.d
        if len(uniforms) < VECTORISED_FROM:
            drawn = [self.draw(u) for u in uniforms.tolist()]
            return (np.array([i for i, _ in drawn], dtype=np.intp),
                    np.array([inverse for _, inverse in drawn], dtype=np.float64))
        if self.q is None:
            return np.minimum(uniforms * d, d - 1).astype(np.intp), np.full(len(uniforms), float(d))
        cumulative = self._cumulative_array
        found = np.minimum(cumulative.searchsorted(uniforms * cumulative[-1], side="right"), d - 1)
        inverse = self._inverse_array[found]
        if not np.isfinite(inverse).all():
            found = np.array([self.draw(u)[0] for u in uniforms.tolist()], dtype=np.int64)
            inverse = self._inverse_array[found]
        return found, inverse


# Examples whose data-point draws a learner with many draws makes at once (``DrawBlock``): NumPy's calls on a block cost
# a few us, against a few us each example
BLOCK = 64


class DrawBlock:
    """The data-point draws of a block of examples, made at once from one batch of uniforms per example (row): each
    row's distinct attributes in the order of their first draw (``distinct``, the rows' one after the other, an index
    array, and ``listed``, ints; row t's from ``bounds[t]`` to ``bounds[t + 1]``), their weights 1/q_i (``weights``)
    and counts of draws (``counts``), whether none was drawn more than ``COUNTED_UP_TO`` times (``counted``: x̃ is
    then ``sum_counted``'s, else ``sum_draws``'s), each draw's index among its row's (``slots``) and weight
    (``inverse``), and each row's uniforms for the inner-product draws (``inner``)."""

    def __init__(self, sampler: DataPointSampler, uniforms: np.ndarray, x_draws: int) -> None:
        rows = uniforms.shape[0]
        drawn, inverse = sampler.draw_many(uniforms[:, :x_draws].ravel())
        self.inverse = inverse.reshape(rows, x_draws)
        found = distinct_draws(drawn.reshape(rows, x_draws), sampler.d)
        self.distinct, self.slots = found.attributes, found.slots
        self.weights, self.counts = inverse[found.firsts], found.counts.astype(np.float64)
        self.listed: list[int] = self.distinct.tolist()
        self.bounds: list[int] = [0, *found.ends.tolist()]
        self.counted: list[bool] = (np.maximum.reduceat(found.counts, self.bounds[:-1]) <= COUNTED_UP_TO).tolist()
        self.inner: list[list[float]] = uniforms[:, x_draws:].tolist()
        self.rows = rows
        self.next = 0


def with_draws(listed: list[int], draws: list[int]) -> tuple[list[int], list[int]]:
    """``listed`` (distinct attributes) then those of ``draws`` not in it yet, in order (what ``dict.fromkeys(listed +
    draws)`` lists), and each draw's index in that list."""
    if not draws:
        return listed, []
    if len(draws) == 1:  # H&K's one inner-product draw: a scan of the list costs less than a dict
        j = draws[0]
        if j in listed:
            return listed, [listed.index(j)]
        return [*listed, j], [len(listed)]
    index = dict(zip(listed, range(len(listed)), strict=True))
    slots = [index.setdefault(j, len(index)) for j in draws]
    return (listed if len(index) == len(listed) else list(index)), slots


class SampledGradient:
    """One learner of the family: select() draws the indices, update() builds g̃ and steps the iterate.

    ``step`` is a constant η or a rule of ``shared.step_sizes`` fed, per example, with x̃ and g̃. From
    ``VECTORISED_FROM`` data-point draws on, the draws of ``BLOCK`` examples are made at once (``DrawBlock``), from
    the numbers the generator would give one example at a time, so never past ``horizon`` examples when it is set
    (a phase of ``shared.two_phase``, after which another engine draws from the same generator).
    """

    def __init__(
        self,
        iterate: ScaledIterate,
        sampler: DataPointSampler,
        x_draws: int,
        inner_draws: int,
        step: float | StepRule,
        rng: np.random.Generator,
    ) -> None:
        self.iterate = iterate
        self.sampler = sampler
        self.x_draws = x_draws
        self.inner_draws = inner_draws
        self.step = FixedStep(step) if isinstance(step, int | float) else step
        self.rng = rng
        self.horizon: int | None = None
        self._drawn_rows = 0
        self._block: DrawBlock | None = None
        self._distinct = np.empty(0, dtype=np.intp)  # the block's row's distinct draws, in the order first drawn
        self._span = (0, 0)  # where they are in the block's
        self._selected: list[int] = []  # what select() chose
        self._inner_slots: list[int] = []  # each inner-product draw's index in it
        self._x: list[int] = []
        self._inv_q: list[float] = []
        self._inner: list[int] = []
        self._ratios: list[float] = []

    def select(self) -> list[int]:
        if self.x_draws < VECTORISED_FROM:
            return self._select_one_by_one(self.rng.random(self.x_draws + self.inner_draws).tolist())
        block = self._block
        if block is None or block.next == block.rows:
            rows = BLOCK if self.horizon is None else max(1, min(BLOCK, self.horizon - self._drawn_rows))
            block = self._block = DrawBlock(self.sampler, self.rng.random((rows, self.x_draws + self.inner_draws)),
                                            self.x_draws)
            self._drawn_rows += rows
        t = block.next
        block.next = t + 1
        iterate = self.iterate
        if iterate.is_zero:
            self._inner, self._ratios = [], []
        else:
            self._inner, self._ratios = iterate.sample_many(block.inner[t])
        start, end = self._span = block.bounds[t], block.bounds[t + 1]
        self._distinct = block.distinct[start:end]
        # x's attributes first, then the inner product's new ones: what dict.fromkeys(x + inner) orders
        self._selected, self._inner_slots = with_draws(block.listed[start:end], self._inner)
        return self._selected

    def _select_one_by_one(self, uniforms: list[float]) -> list[int]:
        """``select`` for a few draws, one at a time (the same draws: ``draw_many`` and ``sample_many`` are ``draw`` and
        ``sample`` of each): NumPy's calls would cost more than they save."""
        self._block = None
        self._x, self._inv_q = [], []
        for u in uniforms[: self.x_draws]:
            i, inv_q = self.sampler.draw(u)
            self._x.append(i)
            self._inv_q.append(inv_q)
        self._inner, self._ratios = [], []
        if not self.iterate.is_zero:
            for u in uniforms[self.x_draws :]:
                j, ratio = self.iterate.sample(u)
                self._inner.append(j)
                self._ratios.append(ratio)
        return list(dict.fromkeys(self._x + self._inner))

    def estimates(self, observed: Observed, y: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the attributes of x̃, x̃, g̃) for the draws of the last select() (``shared.estimators.squared_loss_gradient``:
        arrays, x̃'s attributes in the order of their first draw)."""
        block = self._block
        if block is None:
            if isinstance(observed, PaidRow):  # read by key: as the dict a step's values would otherwise come in
                observed = dict(zip(observed.attributes, observed.attribute_values, strict=True))
            return squared_loss_gradient(self._x, self._inv_q, self._inner, self._ratios, observed, y)
        if isinstance(observed, PaidRow) and observed.attributes == self._selected:
            values = observed.attribute_values  # in select()'s order: no dict made, no lookup
        else:
            values = list(map(observed.__getitem__, self._selected))
        t = block.next - 1
        start, end = self._span
        if block.counted[t]:
            x_tilde = sum_counted(np.array(values[: end - start], dtype=np.float64), block.weights[start:end],
                                  block.counts[start:end], self.x_draws)
        else:
            slots = block.slots[t]
            x_tilde = sum_draws(np.array(values, dtype=np.float64).take(slots), block.inverse[t], slots)
        phi = mean_products(self._ratios, values, self._inner_slots) - y
        return self._distinct, x_tilde, phi * x_tilde

    def gradient(self, observed: Observed, y: float) -> dict[int, float]:
        """g̃ as {attribute: value}."""
        at, _, gradient = self.estimates(observed, y)
        return dict(zip(at.tolist(), gradient.tolist(), strict=True))

    def update(self, observed: Observed, y: float) -> None:
        at, x_tilde, gradient = self.estimates(observed, y)
        self.iterate.step(at, gradient, self.step.next(x_tilde, gradient, self.label_slope * y))

    # φ̃ at w = 0 is this times -y (the squared loss: 1); the step rules compare g̃ with y in φ̃'s units
    label_slope = 1.0


class Engine(Protocol):
    """What the shell runs: a ``SampledGradient``, or an engine that reads as one (``shared.two_phase.TwoPhases``)."""

    @property
    def iterate(self) -> ScaledIterate: ...

    @property
    def step(self) -> StepRule: ...

    def select(self) -> list[int]: ...

    def update(self, observed: Observed, y: float) -> None: ...


class AttributeEfficient(Algorithm):
    """The shell of every learner of the family: select/update/weights run its ``engine`` (a ``SampledGradient``, or an
    engine that reads as one), which its constructor makes; the parts that differ between learners are composed, not
    inherited: the ``geometry`` (``shared.geometry``: the ridge or the lasso twin's ball, step and draws), the
    ``prices`` strategy (``shared.prices``: the papers' cost-blind draws, or the session's prices for a cost-aware
    learner) and the step-size rule (``shared.step_sizes``: the theorem's η, or the practical rule).

    The theorems are stated for ||x|| <= 1 (ridge: the L2 norm, lasso: the L∞ norm) and |y| <= B, ||w*|| <= B.
    Scaling the data into that setting (x' = x / X, w' = X w, X the declared max ||x||) turns a ball of radius
    B on w into one of radius X·B on w', so the theorem's B is B' = X·B (at least max|y| by the choice of B),
    and its step size η' on w' is η'/X² on w for OGD and η'/X for EG (whose step multiplies a gradient that
    scales with x). ``ball`` resolves B and returns B, B' and X from the declared ``Problem.scale`` for the class's
    ``geometry``; ``split`` resolves the budget's split ``x_draws``, and ``step_size`` a step size: each parameter's
    attribute then holds the value in effect.
    """

    # The ball, step and sampling of the ridge or the lasso twin (``shared.geometry``).
    geometry: ClassVar[Geometry]
    # Whether the draws weigh attributes by their prices (``shared.prices``); a priced learner declares needs_costs.
    prices: ClassVar[Prices] = COST_BLIND
    budget_kind = "local"
    min_budget = 2
    needs_scale = True
    engine: Engine
    B: float | None
    x_draws: int | None

    def select(self) -> list[int]:
        return self.engine.select()

    def update(self, observed: Observed, y: float) -> None:
        self.engine.update(observed, y)

    @property
    def weights(self) -> np.ndarray:
        return self.engine.iterate.average()

    def current_weights(self) -> np.ndarray:
        return self.engine.iterate.current()

    def tuning_hint(self) -> dict[str, list[float]] | None:
        return {"eta": around(self.engine.step.last)} if self.engine.step.last > 0 else None

    # --- parameters -----------------------------------------------------------------------------

    def positive(self, name: str, value: float | None, theoretical: float) -> float:
        """``value`` if given, else the theoretical value: a positive finite number (``name`` says which)."""
        value = theoretical if value is None else float(value)
        if not value > 0 or not math.isfinite(value):
            raise ParamError(f"{self.id}: {name} must be a positive number, got {value}")
        return value

    def ball(self) -> tuple[float, float, float]:
        """(B, B' = X·B, X): the ball on w of the ``geometry`` and the theorems' B in the normalised setting; ``B``
        resolved (given, or the geometry's default for the declared scale)."""
        X = self.geometry.max_norm(self.problem.scale)
        self.B = self.positive("B", self.B, self.geometry.radius(self.problem))
        return self.B, X * self.B, X

    def step_size(self, name: str, value: float | str | None, theoretical: float,
                  practical: LeastSquaresStep | ExponentiatedStep | None = None
                  ) -> tuple[float | Literal["adaptive"], StepRule]:
        """The step size ``name`` on w (B resolved first), as the value in effect and its rule: a given number, the
        rule ``ADAPTIVE`` (given, or by default: the ``geometry``'s practical rule, or ``practical``, never below the
        theorem's η), or with ``defaults = "theory"`` the theorem's η, ``theoretical``."""
        if value == ADAPTIVE or (value is None and not self.problem.theory):
            assert self.B is not None
            rule = practical if practical is not None else self.geometry.practical(self.problem, self.B)
            return ADAPTIVE, AtLeast(rule, theoretical)
        eta = self.positive(name, None if value is None else float(value), theoretical)
        return eta, FixedStep(eta)

    def split(self) -> tuple[int, int]:
        """(data-point draws, inner-product draws): the K&S §5 even split, x̃ getting the odd one, or ``x_draws``
        (resolved)."""
        budget = self.problem.budget
        x_draws = math.ceil(budget / 2) if self.x_draws is None else int(self.x_draws)
        if not 1 <= x_draws <= budget - 1:
            raise ParamError(f"{self.id}: x_draws must be in 1..{budget - 1} (the budget is {budget}), got {x_draws}")
        self.x_draws = x_draws
        return x_draws, budget - x_draws

    def uniform_engine(self, k: int, step: StepRule) -> SampledGradient:
        """Hazan & Koren's draws (AERR, AELR, and phase 1 of the two-phased learners): k uniform data-point draws and
        one from p(w) per example, on the ``geometry``'s ball of radius B (resolved)."""
        assert self.B is not None
        d = self.problem.d
        return SampledGradient(self.geometry.iterate(d, self.B), DataPointSampler(d), k, 1, step, self.rng)
