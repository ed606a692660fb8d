"""The two geometries of the ridge/lasso twins of Hazan & Koren (2012) and Kukliansky & Shamir (2015).

Each of their learners comes as twins, ridge and lasso (AERR/AELR, GAERR/GAELR, DDAERR/DDAELR and the two-phased pair):
the same draws and gradient estimate g̃ = φ̃ x̃, and a different geometry. The papers write each twin out in full; here
each learner's constructor is given one of the two values below, which hold all that differs, and builds its engine from
the family's parts (``shared.attribute_efficient``, ``shared.data_dependent``, ``shared.two_phase``):

=============================================  ==============================  ==================================
                                               ``L2_BALL`` (ridge)             ``L1_BALL`` (lasso)
=============================================  ==============================  ==================================
the ball w lives in, radius B                  ||w||_2 <= B                    ||w||_1 <= B
the step (``shared.iterates``)                       OGD, then projection            EG± (exponentiated gradient)
the norm of x the theorems bound, X            max ||x||_2                     max |x_i|
B's default                                    declared ||w*||_2, widened      declared ||w*||_1, widened
η on w from a theorem's η' on x / X            η' / X²                         η' / X
the practical step (``shared.step_sizes``)           ``LeastSquaresStep``            ``ExponentiatedStep``
inner-product draw, H&K                        p ∝ w²                          p ∝ |w|
data-point q from E x² (K&S, priced)           sqrt(E x² / c), eq. (4)         E x², Lemma 4.3
S in the K&S step sizes                        Σ E x² / q                      ||E x²||_1
sqrt(E x²) a given q implies (K&S §5)          q                               sqrt(q)
=============================================  ==============================  ==================================

The papers' reasons for each row are in the algorithms' docstrings; the priced rows are ``shared.prices``' derivation.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from learner.algorithms.base import DataScale, Problem
from learner.algorithms.shared.iterates import LassoIterate, RidgeIterate, ScaledIterate
from learner.algorithms.shared.prices import data_point_spread, ridge_data_point_weights
from learner.algorithms.shared.step_sizes import ExponentiatedStep, LeastSquaresStep


class Geometry(ABC):
    """What the ridge and the lasso twin of a learner do differently (the table above)."""

    name: ClassVar[str]

    @abstractmethod
    def max_norm(self, scale: DataScale) -> float:
        """X: the bound on x that the theorems normalise to 1."""

    @abstractmethod
    def radius(self, problem: Problem) -> float:
        """B's default: the declared bound on ||w*||, widened so that |y| <= B after scaling x into the unit ball."""

    @abstractmethod
    def on_w(self, eta_unit: float, X: float) -> float:
        """A theorem's η for the data scaled into the unit ball, as a step on w."""

    @abstractmethod
    def practical(self, problem: Problem, B: float) -> LeastSquaresStep | ExponentiatedStep:
        """The practical step rule (``shared.step_sizes``), B the resolved radius."""

    @abstractmethod
    def iterate(self, d: int, B: float, c: np.ndarray | None = None,
                start: np.ndarray | None = None) -> ScaledIterate:
        """w on the ball of radius B from ``start`` (0), drawn for the inner product with p ∝ w^power (H&K), or with
        p ∝ |w_j| c_j (K&S §5) when c is given."""

    @abstractmethod
    def data_point_weights(self, moments: np.ndarray, prices: np.ndarray | None) -> np.ndarray:
        """The data-point q (up to a factor) that minimises the theorem's bound given E x² (and the prices)."""

    @abstractmethod
    def spread(self, moments: np.ndarray, prices: np.ndarray | None) -> float:
        """S of the theorem's step size at that q."""

    @abstractmethod
    def moment_roots(self, q: np.ndarray) -> np.ndarray:
        """sqrt(E x_j²) up to a factor, as a given q implies it when q is this geometry's optimum."""


class L2Ball(Geometry):
    name = "ridge"

    def max_norm(self, scale: DataScale) -> float:
        return scale.max_norm2

    def radius(self, problem: Problem) -> float:
        return problem.scale.radius2()

    def on_w(self, eta_unit: float, X: float) -> float:
        return eta_unit / X**2

    def practical(self, problem: Problem, B: float) -> LeastSquaresStep:
        return LeastSquaresStep()

    def iterate(self, d: int, B: float, c: np.ndarray | None = None, start: np.ndarray | None = None) -> RidgeIterate:
        return RidgeIterate(d, B, power=2 if c is None else 1, c=c, start=start)

    def data_point_weights(self, moments: np.ndarray, prices: np.ndarray | None) -> np.ndarray:
        return ridge_data_point_weights(moments, prices)

    def spread(self, moments: np.ndarray, prices: np.ndarray | None) -> float:
        return data_point_spread(moments, prices)

    def moment_roots(self, q: np.ndarray) -> np.ndarray:
        return q


class L1Ball(Geometry):
    name = "lasso"

    def max_norm(self, scale: DataScale) -> float:
        return scale.max_abs

    def radius(self, problem: Problem) -> float:
        """Real data declare no ||w*||_1, only the stand-in for ||w*||_2 (``DataScale``), which the theorems' default
        uses for both norms. That L1 ball binds on real data (the cross-validated lasso has ||w||_1 = 8.4 on
        ``mnist-3v5``, the stand-in 2.95); the practical default is the smallest L1 ball holding the stand-in's L2
        ball, sqrt(d) times the stand-in. A synthetic design's declared ||w*||_1 is kept."""
        widen = 1.0 if problem.theory or problem.scale.generated else math.sqrt(problem.d)
        return widen * problem.scale.radius1()

    def on_w(self, eta_unit: float, X: float) -> float:
        return eta_unit / X

    def practical(self, problem: Problem, B: float) -> ExponentiatedStep:
        return ExponentiatedStep(problem.d, B)

    def iterate(self, d: int, B: float, c: np.ndarray | None = None, start: np.ndarray | None = None) -> LassoIterate:
        return LassoIterate(d, B, power=1, c=c, start=start)

    def data_point_weights(self, moments: np.ndarray, prices: np.ndarray | None) -> np.ndarray:
        return moments  # cost-optimal as it is (``shared.prices``)

    def spread(self, moments: np.ndarray, prices: np.ndarray | None) -> float:
        return float(moments.sum())

    def moment_roots(self, q: np.ndarray) -> np.ndarray:
        roots: np.ndarray = np.sqrt(q)
        return roots


L2_BALL = L2Ball()
L1_BALL = L1Ball()
