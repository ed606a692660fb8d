"""What the Hazan & Koren and Kukliansky & Shamir learners share: per example, draw k data-point
indices from q and a few inner-product indices from p(w), pay for the distinct ones, and take an
OGD (ridge) or EG (lasso) step along the estimated gradient φ̃ · x̃.

``SampledGradient`` is that loop on top of an iterate from ``_iterates``; ``AttributeEfficient`` is the
``Algorithm`` shell every public class of the family fills in with its geometry (``_geometry``: the ridge or the
lasso twin), sampling choices and step size; ``HazanKoren`` is AERR and AELR, the twins with uniform draws.
Randomness: per example, one batch of U[0,1) numbers from the algorithm's generator, the data-point
draws first, then the inner-product draws (drawn even when w = 0 and not needed, so the stream of
numbers does not depend on the data).
"""

from __future__ import annotations

import bisect
import math
from abc import abstractmethod
from typing import ClassVar

import numpy as np

from budgetlab.contract.base import ParamValue
from learner.algorithms._estimators import squared_loss_gradient
from learner.algorithms._geometry import Geometry
from learner.algorithms._iterates import ScaledIterate
from learner.algorithms._step_sizes import (
    ADAPTIVE,
    AtLeast,
    ExponentiatedStep,
    FixedStep,
    LeastSquaresStep,
    StepRule,
)
from learner.algorithms.base import Algorithm, Observed, ParamError, Problem, around

HAZAN_KOREN = "Hazan & Koren 2012, Linear Regression with Limited Observation"
B_DOC = ("radius of the constraint ball on w (the papers' B); default the declared ||w*|| bound, widened to "
         "max|y| / max||x|| so that the theorem's |y| <= B holds after scaling x into the unit ball")
Spec = dict[str, tuple[ParamValue | None, str]]


def ball_params(geometry: Geometry, theorem: str) -> Spec:
    """The parameters B and η of a learner on the ``geometry``'s ball, ``theorem`` saying what the theorem's η is."""
    return {"B": (None, B_DOC), "eta": (None, geometry.eta_doc + theorem)}


class DataPointSampler:
    """Draws i ~ q for x̃: uniform (q_i = 1/d, H&K) or any fixed distribution (K&S), by bisection."""

    def __init__(self, d: int, q: np.ndarray | None = None) -> None:
        self.d = d
        self.q = None if q is None else np.asarray(q, dtype=np.float64) / float(np.sum(q))
        if self.q is not None:
            self._cumulative = np.cumsum(self.q).tolist()
            with np.errstate(divide="ignore"):
                self._inverse = (1.0 / self.q).tolist()

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


class SampledGradient:
    """One learner of the family: select() draws the indices, update() builds g̃ and steps the iterate.

    ``step`` is a constant η or a rule of ``_step_sizes`` fed, per example, with x̃ and g̃.
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
        self._x: list[int] = []
        self._inv_q: list[float] = []
        self._inner: list[int] = []
        self._ratios: list[float] = []

    def select(self) -> list[int]:
        uniforms = self.rng.random(self.x_draws + self.inner_draws).tolist()
        self._draw_data_point(uniforms[: self.x_draws])
        self._inner, self._ratios = [], []
        if not self.iterate.is_zero:
            for u in uniforms[self.x_draws :]:
                j, ratio = self.iterate.sample(u)
                self._inner.append(j)
                self._ratios.append(ratio)
        return list(dict.fromkeys(self._x + self._inner))

    def _draw_data_point(self, uniforms: list[float]) -> None:
        sampler = self.sampler
        if sampler.q is None:
            # ``DataPointSampler.draw`` for uniform q, inlined: AELR draws 49 indices an example at s' = 50.
            d = sampler.d
            self._x = [min(int(u * d), d - 1) for u in uniforms]
            self._inv_q = [float(d)] * len(uniforms)
            return
        self._x, self._inv_q = [], []
        for u in uniforms:
            i, inv_q = sampler.draw(u)
            self._x.append(i)
            self._inv_q.append(inv_q)

    def estimates(self, observed: Observed, y: float) -> tuple[dict[int, float], dict[int, float]]:
        """(x̃, g̃) for the draws of the last select() (``_estimators.squared_loss_gradient``)."""
        return squared_loss_gradient(self._x, self._inv_q, self._inner, self._ratios, observed, y)

    def gradient(self, observed: Observed, y: float) -> dict[int, float]:
        return self.estimates(observed, y)[1]

    def update(self, observed: Observed, y: float) -> None:
        x_tilde, gradient = self.estimates(observed, y)
        self.iterate.step(gradient, self.step.next(x_tilde, gradient, self.label_slope * y))

    # φ̃ at w = 0 is this times -y (the squared loss: 1); the step rules compare g̃ with y in φ̃'s units
    label_slope = 1.0


class AttributeEfficient(Algorithm):
    """Algorithm shell over a ``SampledGradient`` engine built by ``build``.

    The theorems are stated for ||x|| <= 1 (ridge: the L2 norm, lasso: the L∞ norm) and |y| <= B, ||w*|| <= B.
    Scaling the data into that setting (x' = x / X, w' = X w, X the declared max ||x||) turns a ball of radius
    B on w into one of radius X·B on w', so the theorem's B is B' = X·B (at least max|y| by the choice of B),
    and its step size η' on w' is η'/X² on w for OGD and η'/X for EG (whose step multiplies a gradient that
    scales with x). ``ball`` returns B, B' and X from the declared ``Problem.scale`` for the class's ``geometry``.
    """

    # The ball, step and sampling of the ridge or the lasso twin (``_geometry``).
    geometry: ClassVar[Geometry]
    budget_kind = "local"
    min_budget = 2
    needs_scale = True
    # The step sizes' practical default is a rule (``_step_sizes``), recorded and accepted back by its name.
    rules: ClassVar[dict[str, str | tuple[str, ...]]] = {"eta": ADAPTIVE}

    def __init__(self, problem: Problem, seed: int = 0, **params) -> None:
        super().__init__(problem, seed, **params)
        self.engine = self.build()

    @abstractmethod
    def build(self) -> SampledGradient:
        """Resolve the parameters (writing the values in effect back to ``config``) and make the engine."""

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

    # --- parameter helpers ----------------------------------------------------------------------

    def resolve(self, name: str, theoretical: float) -> float:
        """The parameter if given, else the theoretical value; recorded in ``config`` either way."""
        value = self.config[name]
        value = theoretical if value is None else float(value)
        if not value > 0 or not math.isfinite(value):
            raise ParamError(f"{self.id}: {name} must be a positive number, got {value}")
        self.config[name] = value
        return value

    def ball(self) -> tuple[float, float, float]:
        """(B, B' = X·B, X): the ball on w of the ``geometry`` and the theorems' B in the normalised setting."""
        X = self.geometry.max_norm(self.problem.scale)
        B = self.resolve("B", self.geometry.radius(self.problem))
        return B, X * B, X

    def step_rule(self, name: str, theoretical: float, practical: LeastSquaresStep | ExponentiatedStep | None = None
             ) -> StepRule:
        """The step size ``name`` on w (B resolved first): a given number, the rule ``ADAPTIVE`` (given, or by default:
        the ``geometry``'s practical rule, or ``practical``, never below the theorem's η), or with
        ``defaults = "theory"`` the theorem's η, ``theoretical``."""
        value = self.config[name]
        if value == ADAPTIVE or (value is None and not self.problem.theory):
            self.config[name] = ADAPTIVE
            rule = practical if practical is not None else self.geometry.practical(self.problem,
                                                                                    float(self.config["B"]))
            return AtLeast(rule, theoretical)
        return FixedStep(self.resolve(name, theoretical))

    def even_split(self, name: str = "x_draws") -> tuple[int, int]:
        """(data-point draws, inner-product draws): the K&S §5 even split, x̃ getting the odd one."""
        budget = self.problem.budget
        value = self.config[name]
        x_draws = math.ceil(budget / 2) if value is None else int(value)
        if not 1 <= x_draws <= budget - 1:
            raise ParamError(f"{self.id}: {name} must be in 1..{budget - 1} (the budget is {budget}), got {x_draws}")
        self.config[name] = x_draws
        return x_draws, budget - x_draws


class HazanKoren(AttributeEfficient):
    """AERR and AELR (Hazan & Koren, Algorithms 1 and 2): k = budget - 1 uniform data-point draws and one draw from
    p(w) per example, the theorem's η from ``theorem_eta``."""

    paper = HAZAN_KOREN

    @abstractmethod
    def theorem_eta(self, k: int, B_unit: float) -> float:
        """The theorem's η for the data scaled into the unit ball, k uniform draws, B' = ``B_unit``."""

    def build(self) -> SampledGradient:
        d, k = self.problem.d, self.problem.budget - 1
        B, B_unit, X = self.ball()
        step = self.step_rule("eta", self.geometry.on_w(self.theorem_eta(k, B_unit), X))
        return SampledGradient(self.geometry.iterate(d, B), DataPointSampler(d), k, 1, step, self.rng)
