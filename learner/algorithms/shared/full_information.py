"""The full-information references of the papers' experiments, each pair written once for its two geometries.

- ``OfflineReference``: offline ridge (``ridge.py``) and offline lasso (``lasso.py``), refitted on every example seen;
  the penalty (α||w||² or α||w||_1) is the class's: how it chooses α and fits.
- ``OnlineReference``: online ridge by OGD on the L2 ball (``ogd_ridge.py``) and online lasso by EG± on the L1 ball
  (``eg_lasso.py``), averaged; the geometry is the class's: the norm of x its bound uses, the step, its iterate.

Both observe every attribute of every example (``require_full_budget``, ``EveryAttribute``), so both choose ahead.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import ClassVar, Literal

import numpy as np

from learner.algorithms.base import Algorithm, Observed, ParamError, Problem
from learner.algorithms.shared.label_bound import RUNNING, LabelBound, given_or_running
from learner.algorithms.shared.lookahead import window
from learner.algorithms.shared.row_buffer import RowBuffer, dense_row
from learner.algorithms.shared.step_sizes import ADAPTIVE, ExponentiatedStep, LeastSquaresStep

FULL_INFORMATION = "full-information reference (Cesa-Bianchi et al. 2011 §7; Kukliansky & Shamir 2015 §5)"
# Cross-validation needs at least this many examples; before that the fit is the zero predictor.
MIN_CV_EXAMPLES = 3


def require_full_budget(problem: Problem, algorithm_id: str) -> None:
    if problem.budget < problem.d:
        raise ParamError(
            f"{algorithm_id} is a full-information reference: it needs all d={problem.d} attributes per example, "
            f"the budget allows {problem.budget}"
        )


class EveryAttribute(Algorithm):
    """The choice of a full-information learner: every attribute of every example, known ahead of any of them."""

    def select(self) -> Sequence[int]:
        return range(self.problem.d)

    def select_ahead(self, limit: int) -> list[Sequence[int]]:
        return [range(self.problem.d)] * window(limit, None)


class CrossValidationSchedule:
    """When to choose α again: first at ``MIN_CV_EXAMPLES`` examples, then each time their number doubles."""

    def __init__(self) -> None:
        self.alpha: float | None = None
        self._tuned_at = 0

    def due(self, n: int) -> bool:
        return n >= MIN_CV_EXAMPLES and (self.alpha is None or n >= 2 * self._tuned_at)

    def chose(self, alpha: float, n: int) -> None:
        self.alpha, self._tuned_at = float(alpha), n


class GramStatistics:
    """XᵀX and Xᵀy of the rows of a ``RowBuffer``, brought up to date over the rows added since the last call:
    a refit then costs a d x d solve, not a pass over every row seen."""

    def __init__(self, d: int) -> None:
        self.gram = np.zeros((d, d))
        self.xy = np.zeros(d)
        self.n = 0

    def update(self, rows: RowBuffer) -> None:
        X, y = rows.X[self.n:], rows.y[self.n:]
        self.gram += X.T @ X
        self.xy += X.T @ y
        self.n = rows.n


class OfflineReference(EveryAttribute):
    """A penalised least-squares fit on every example seen, with all attributes, α cross-validated on the schedule of
    ``CrossValidationSchedule`` or fixed; the fit is redone lazily, when ``weights`` is read after new examples."""

    paper = FULL_INFORMATION
    protocol = "batch"
    budget_kind = "full"
    takes_paid_row = True  # its row read in order (``dense_row``), never by key
    # Whether α = 0 (least squares) is a fit of this penalty; the refusal of a smaller α says this.
    zero_alpha: ClassVar[bool]
    alpha_refusal: ClassVar[str]

    def __init__(self, problem: Problem, seed: int = 0, *, alpha: float | None = None) -> None:
        super().__init__(problem, seed)
        require_full_budget(problem, self.id)
        if alpha is not None and (alpha < 0 or (alpha == 0 and not self.zero_alpha)):
            raise ParamError(f"{self.alpha_refusal}, got {alpha}")
        # α given, or the last one cross-validation chose (None before the first choice)
        self.alpha = alpha
        self.cross_validates = alpha is None
        self.schedule = CrossValidationSchedule()
        self.rows = RowBuffer(problem.d)
        self.stats = GramStatistics(problem.d)
        self._w = np.zeros(problem.d)
        self._fitted_at = 0

    @abstractmethod
    def cross_validated_alpha(self) -> float:
        """α chosen by cross-validation on ``rows`` (``stats`` up to date with them)."""

    @abstractmethod
    def fit(self, alpha: float) -> np.ndarray:
        """The penalised fit with α on ``rows`` (``stats`` up to date with them; ``_w`` the previous fit)."""

    def update(self, observed: Observed, y: float) -> None:
        self.rows.append(dense_row(observed, self.problem.d), y)

    @property
    def weights(self) -> np.ndarray:
        if self.rows.n != self._fitted_at:
            n = self.rows.n
            self.stats.update(self.rows)
            if self.cross_validates and self.schedule.due(n):
                self.schedule.chose(self.cross_validated_alpha(), n)
                self.alpha = self.schedule.alpha
            if self.alpha is not None:
                self._w = self.fit(self.alpha)
            self._fitted_at = n
        return self._w.copy()


class OnlineReference(EveryAttribute):
    """Online gradient steps on the squared loss (<w, x> − y)², gradient 2(<w, x> − y)x, with every attribute: B the
    given radius or the running max |y|, η a given constant, the practical rule of the geometry (``"adaptive"``) or
    the theorem's step for the bounds seen so far (``"running"``, G = 2(B·X + Y)·X with X the largest norm of x and
    Y of |y|); ``weights`` is the average of the iterates w_1..w_t (online-to-batch), online predictions use w_t."""

    paper = FULL_INFORMATION
    protocol = "batch"
    budget_kind = "full"
    takes_paid_row = True  # its row read in order (``dense_row``), never by key

    def __init__(self, problem: Problem, seed: int = 0, *, radius: float | Literal["running"] | None = None,
                 eta: float | Literal["adaptive", "running"] | None = None) -> None:
        super().__init__(problem, seed)
        require_full_budget(problem, self.id)
        given = given_or_running(radius)
        self.bound = LabelBound(given)
        self.radius: float | Literal["running"] = RUNNING if given is None else given
        self.rule: LeastSquaresStep | ExponentiatedStep | None = None
        self.eta: float | Literal["adaptive", "running"]
        if eta == ADAPTIVE or (eta is None and not problem.theory):
            self.rule, self.fixed_eta = self.practical_rule(), None
            self.eta = ADAPTIVE
        else:
            self.fixed_eta = given_or_running(eta)
            self.eta = RUNNING if self.fixed_eta is None else self.fixed_eta
        if self.fixed_eta is not None and self.fixed_eta <= 0:
            raise ParamError(f"eta must be positive, got {self.fixed_eta}")
        self.horizon = max(problem.n_examples, 1)
        self.w_bar = np.zeros(problem.d)
        self.t = 0
        self.x_max = 0.0
        self.y_max = 0.0

    @abstractmethod
    def practical_rule(self) -> LeastSquaresStep | ExponentiatedStep:
        """The step rule of ``shared.step_sizes`` fed with the exact x or gradient (``"adaptive"``)."""

    @abstractmethod
    def norm(self, x: np.ndarray) -> float:
        """The norm of x the theorem's bound G uses."""

    @abstractmethod
    def theorem_step(self, G: float) -> float:
        """The theorem's η for the gradient bound G and the run's horizon."""

    @abstractmethod
    def move(self, w: np.ndarray, x: np.ndarray, y: float) -> None:
        """One step from the iterate w on the example (x, y), feeding ``rule`` first when there is one."""

    @abstractmethod
    def current_weights(self) -> np.ndarray: ...

    def step_size(self) -> float:
        if self.fixed_eta is not None:
            return self.fixed_eta
        if self.rule is not None:
            return self.rule.last
        G = 2.0 * (self.bound.value * self.x_max + self.y_max) * self.x_max
        return self.theorem_step(G) if G > 0 else 0.0

    def update(self, observed: Observed, y: float) -> None:
        x = dense_row(observed, self.problem.d)
        w = self.current_weights()
        self.t += 1
        self.w_bar += (w - self.w_bar) / self.t
        self.bound.see(y)
        self.x_max = max(self.x_max, self.norm(x))
        self.y_max = max(self.y_max, abs(y))
        self.move(w, x, y)

    @property
    def weights(self) -> np.ndarray:
        return self.w_bar.copy()
