"""Screening — budgetlab's own, not any paper's: sure independence screening, then least squares on the survivors.

Fan & Lv (2008, "Sure independence screening for ultrahigh dimensional feature space", JRSS B 70(5)) rank the
attributes by their marginal correlation with the label and fit on the top few. Under a local budget of k
attributes per example that takes two phases over the run's m examples:

1. Screening, the first ``screen`` · m examples: k distinct attributes drawn uniformly at random per example (each
   attribute is then seen about screen · m · k / d times), from which the marginal covariance cov(x_j, y) and the
   variance var(x_j) of every attribute are estimated. The survivors S are the s attributes of largest
   cov(x_j, y)² / var(x_j), the share of the label's variance each explains on its own.
2. Fit, the other examples: all of S observed on every example (s ≤ k), and least squares with an intercept on
   them, exactly, from the running normal equations (with a ridge of ``lam`` times their mean diagonal, so that
   an attribute constant on the rows seen so far does not make them singular).

Why it is here: the papers' learners estimate a dense gradient from k of d attributes, and when d/k is large and
the examples few their estimates are too noisy to leave the zero predictor by much (on
``make_regression(1000, 50, n_informative=5)`` with 5 attributes a row, AERR's test R² is about 0.2 and no paper's
learner reaches 0.5 on every seed; docs/internals/figures.md). When w* is sparse, or a few attributes carry most of
the signal, a screen finds them from the same k attributes a row, and the fit then sees them all: the estimator's
default. When the signal is spread over many attributes (MNIST's pixels) a screen of k ≪ d keeps little of it,
and the papers' learners are the ones to use.

Choices (ours, measured on the problem above, seeds 0-9; docs/guide/algorithms.md):

- The split: least squares on s + 1 unknowns, all observed, is within a few percent of its limit after a few
  times s + 1 rows (its excess error is about σ² (s + 1) / rows), while the screen's estimates improve only as
  1/√rows. So the fit gets ``FIT_ROWS_PER_UNKNOWN`` · (s + 1) rows (120 at k = 5) and the screen the rest, but
  never less than half the run. On the problem above (750 rows, seeds 0-9) that screens 630 rows and the test R²
  is 0.86-0.96; a screen of half the run (0.5) missed the strongest attribute on seed 0 (R² 0.33; minimum 0.33,
  0.61 at 0.7). ``screen`` sets the share directly.
- ``s`` = k: the fit observes exactly the survivors, so least squares on them is exact (no estimated
  gradient), and the predictor is k-sparse: a test-time budget of k attributes predicts with it exactly.
- Until the fit has more rows than unknowns (s + 1), the predictor is the constant mean label: the screen's
  marginal slopes are no predictor (an attribute seen twice with a tiny variance gets any slope), so the learning
  curve stays at the zero predictor during the screen and leaves it when the fit starts.
- Measured with ``budgetlab run --local`` (seed 0; normalised test MSE): ``mnist-3v5`` at 57 attributes 0.33
  (AERR 0.78, DDAERR 0.54), ``digits-1v7`` at 8 0.14 (AERR 0.52), but ``powerlaw`` at 5 0.89 (AERR 0.77): its w*
  spreads over all d = 500 attributes, and 5 of them carry little of it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from learner.algorithms.base import Algorithm, Observed, ParamError, Problem
from learner.algorithms.shared.lookahead import Ahead, window

FAN_LV = "budgetlab's own, after Fan & Lv 2008"
FIT_ROWS_PER_UNKNOWN = 20  # rows of the fit per unknown of its least squares (the module docstring)


class Screening(Algorithm):
    """Screen the attributes by marginal correlation on uniform draws, then least squares on the top s, all observed.

    Parameters
    ----------
    screen
        share of the run's examples that screen (k uniform attributes each), the rest fit; default all but 20 (s + 1)
        rows, at least half
    s
        survivors kept and observed on every example after the screen, s <= k; default k
    lam
        ridge of the fit, as a share of the mean diagonal of its normal equations
    """

    id = "screening"
    name = "Screening (sure independence screening, then least squares on the survivors)"
    paper = FAN_LV
    algorithm = "screen, then fit"
    protocol = "batch"
    budget_kind = "local"
    min_budget = 1

    def __init__(self, problem: Problem, seed: int = 0, *, screen: float | None = None, s: int | None = None,
                 lam: float = 1e-3) -> None:
        super().__init__(problem, seed)
        d, k = problem.d, problem.budget
        s = k if s is None else s
        if not 1 <= s <= min(k, d):
            raise ParamError(f"s must satisfy 1 <= s <= k = {min(k, d)} (the survivors are all observed), got {s}")
        m = max(problem.n_examples, 1)
        screen = max(0.5, 1.0 - FIT_ROWS_PER_UNKNOWN * (s + 1) / m) if screen is None else screen
        if not 0.0 < screen < 1.0:
            raise ParamError(f"screen must be a share of the run strictly between 0 and 1, got {screen}")
        if not lam >= 0.0:
            raise ParamError(f"lam must be a non-negative number, got {lam}")
        self.screen = screen
        self.d, self.k, self.s, self.lam = d, min(k, d), s, lam
        self.screen_rows = max(1, round(screen * problem.n_examples))
        # Screening sums per attribute: rows that saw it, Σ x_j, Σ x_j², Σ x_j y; and of the labels, over every row.
        self.count = np.zeros(d)
        self.sum_x = np.zeros(d)
        self.sum_xx = np.zeros(d)
        self.sum_xy = np.zeros(d)
        self.rows = 0
        self.sum_y = 0.0
        self.survivors: np.ndarray | None = None
        self._drawn: np.ndarray = np.empty(0, dtype=int)
        self._ahead: Ahead[np.ndarray] = Ahead()
        # The fit's normal equations over [x_S, 1].
        self.gram = np.zeros((s + 1, s + 1))
        self.moment = np.zeros(s + 1)
        self.fitted_rows = 0

    @property
    def screening(self) -> bool:
        return self.survivors is None

    def _draw(self) -> np.ndarray:
        return self.rng.choice(self.d, size=self.k, replace=False)

    def select(self) -> Sequence[int]:
        if self.screening:
            self._drawn = self._draw()
            drawn: list[int] = self._drawn.tolist()
            return drawn
        assert self.survivors is not None
        survivors: list[int] = self.survivors.tolist()
        return survivors

    def select_ahead(self, limit: int) -> list[Sequence[int]]:
        # The screen's uniform draws (from a generator nothing else draws from) until its last row, after which the
        # survivors are chosen from what it saw; then the survivors, on every row.
        if self.screening:
            drawn = self._ahead.keep([self._draw() for _ in range(window(limit, self.screen_rows - self.rows))])
            return [chosen.tolist() for chosen in drawn]
        assert self.survivors is not None
        return [self.survivors.tolist() for _ in range(window(limit, None))]

    def update(self, observed: Observed, y: float) -> None:
        if self.screening:
            drawn = self._drawn = self._ahead.take(self._drawn)
            x = np.array([observed[j] for j in drawn.tolist()])
            self.count[drawn] += 1
            self.sum_x[drawn] += x
            self.sum_xx[drawn] += x * x
            self.sum_xy[drawn] += x * y
            self.rows += 1
            self.sum_y += y
            if self.rows >= self.screen_rows:
                self.survivors = np.sort(self._ranked()[: self.s])
            return
        assert self.survivors is not None
        row = np.array([*(observed[j] for j in self.survivors.tolist()), 1.0])
        self.gram += np.outer(row, row)
        self.moment += row * y
        self.fitted_rows += 1

    def _marginals(self) -> tuple[np.ndarray, np.ndarray]:
        """cov(x_j, y) and var(x_j) of every attribute over the screening rows that saw it (0 where none did)."""
        seen = np.maximum(self.count, 1.0)
        mean_x = self.sum_x / seen
        mean_y = self.sum_y / max(self.rows, 1)
        cov = self.sum_xy / seen - mean_x * mean_y
        var = self.sum_xx / seen - mean_x**2
        unseen = self.count == 0
        cov[unseen], var[unseen] = 0.0, 0.0
        return cov, var

    def _ranked(self) -> np.ndarray:
        """The attributes by decreasing cov(x_j, y)² / var(x_j) (constant attributes last)."""
        cov, var = self._marginals()
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(var > 1e-12, cov**2 / var, -1.0)
        return np.argsort(-score, kind="stable")

    def _refresh(self) -> tuple[np.ndarray, float]:
        mean_y = self.sum_y / max(self.rows, 1)
        if self.screening or self.fitted_rows <= self.s + 1:
            return np.zeros(self.d), mean_y
        assert self.survivors is not None
        ridge = self.lam * float(np.trace(self.gram[:-1, :-1])) / self.s * np.eye(self.s + 1)
        ridge[-1, -1] = 0.0  # the intercept is not shrunk
        solution = np.linalg.lstsq(self.gram + ridge, self.moment, rcond=None)[0]
        w = np.zeros(self.d)
        w[self.survivors] = solution[:-1]
        return w, float(solution[-1])

    @property
    def weights(self) -> np.ndarray:
        # The intercept comes with the fit: reading the weights sets ``bias`` (the runner reads them first).
        w, self.bias = self._refresh()
        return w
